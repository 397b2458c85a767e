"""An exact in-memory set of request keys."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from typing_extensions import Self


class MemorySeenSet:
    """Exact membership: no false positives, about 70 bytes a key in memory.

    >>> seen = MemorySeenSet(key_size=2)
    >>> seen.add(b"ab"), seen.add(b"ab")
    (True, False)
    """

    kind = "memory"

    def __init__(self, key_size: int = 16) -> None:
        self.key_size = key_size
        self._keys: set[bytes] = set()

    def add(self, key: bytes) -> bool:
        keys = self._keys
        if key in keys:
            return False
        keys.add(key)
        return True

    def discard(self, key: bytes) -> bool:
        """Forget *key*; return whether it was there."""
        if key not in self._keys:
            return False
        self._keys.remove(key)
        return True

    def __contains__(self, key: bytes) -> bool:
        return key in self._keys

    def __len__(self) -> int:
        return len(self._keys)

    def stats(self) -> dict[str, float]:
        return {"entries": len(self._keys)}

    def params(self) -> dict[str, Any]:
        return {"key_size": self.key_size}

    def journal_record(self, key: bytes) -> bytes:
        return key

    def replay(self, record: bytes) -> None:
        if len(record) != self.key_size:
            raise ValueError(f"a record of {len(record)} bytes where keys have {self.key_size}")
        self.add(record)

    def to_bytes(self) -> bytes:
        return b"".join(sorted(self._keys))

    @classmethod
    def from_bytes(cls, params: dict[str, Any], payload: bytes) -> Self:
        seen = cls(key_size=int(params["key_size"]))
        size = seen.key_size
        if len(payload) % size:
            raise ValueError(f"payload of {len(payload)} bytes is not a whole number of keys")
        seen._keys = {payload[i : i + size] for i in range(0, len(payload), size)}
        return seen
