"""A seen set that forgets keys after a time to live (``DEDUP_URL_TTL``)."""

from __future__ import annotations

import copy
import struct
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Callable

    from crawler.url.generations import Generations
    from crawler.url.stores import SeenSet

_GENERATION = struct.Struct(">q")
_PAYLOAD_HEADER = struct.Struct(">qQ")  # generation, size of its payload


class GenerationalSeenSet:
    """One inner seen set per time slice (see :mod:`crawler.url.generations`).

    * :meth:`add` answers "seen" when any live generation holds the key, and
      otherwise records it in the current generation;
    * generations that are no longer live are dropped whole, as time passes;
    * each generation is a new set from *new_set* (so with a Bloom filter,
      ``DEDUP_URL_CAPACITY`` is the capacity of one generation);
    * journal records carry the generation, so a replay puts each key back in
      the slice it was recorded in, and drops those that have expired since.
    """

    def __init__(self, new_set: Callable[[], SeenSet], generations: Generations) -> None:
        self._new_set = new_set
        self.generations = generations
        probe = new_set()
        self.kind = probe.kind
        self._inner_params = probe.params()
        self._inner_is_approximate = "false_positive_rate" in probe.stats()
        # restores a slice without building an empty one first (from_bytes is a classmethod)
        self._inner_class: Any = type(probe)
        self._by_generation: dict[int, SeenSet] = {}
        self._newest = generations.current()

    def _live_sets(self) -> list[SeenSet]:
        self._drop_expired()
        return [self._by_generation[number] for number in sorted(self._by_generation, reverse=True)]

    def _drop_expired(self) -> None:
        current = self.generations.current()
        if current == self._newest:
            return
        self._newest = current
        for number in [n for n in self._by_generation if not self.generations.is_live(n)]:
            del self._by_generation[number]

    def _generation_set(self, number: int) -> SeenSet:
        seen = self._by_generation.get(number)
        if seen is None:
            seen = self._by_generation[number] = self._new_set()
        return seen

    def add(self, key: bytes) -> bool:
        if any(key in seen for seen in self._live_sets()):
            return False
        return self._generation_set(self.generations.current()).add(key)

    def discard(self, key: bytes) -> bool:
        """Forget *key* in every live generation (exact inner sets only)."""
        removed = False
        for seen in self._live_sets():
            discard = getattr(seen, "discard", None)
            if discard is None:
                raise TypeError(f"a {self.kind} store cannot forget a key")
            removed = bool(discard(key)) or removed
        return removed

    def __contains__(self, key: bytes) -> bool:
        return any(key in seen for seen in self._live_sets())

    def __len__(self) -> int:
        return sum(len(seen) for seen in self._live_sets())

    def journal_record(self, key: bytes) -> bytes:
        """The journal record of a key :meth:`add` just recorded."""
        return key + _GENERATION.pack(self.generations.current())

    def replay(self, record: bytes) -> None:
        if len(record) <= _GENERATION.size:
            raise ValueError(f"a record of {len(record)} bytes has no key and generation")
        key, generation = record[: -_GENERATION.size], _GENERATION.unpack(record[-8:])[0]
        if self.generations.is_live(generation):
            self._generation_set(generation).replay(key)

    def generation_stats(self) -> list[dict[str, float]]:
        """Each live generation, newest first: number, age in seconds, entries."""
        self._drop_expired()
        return [
            {
                "generation": number,
                "age_seconds": round(self.generations.age(number), 3),
                "entries": len(self._by_generation[number]),
            }
            for number in sorted(self._by_generation, reverse=True)
        ]

    def stats(self) -> dict[str, float]:
        live = self._live_sets()
        stats: dict[str, float] = {"entries": sum(len(seen) for seen in live)}
        inner = [seen.stats() for seen in live]
        if self._inner_is_approximate:
            stats["fill_ratio"] = max((figures["fill_ratio"] for figures in inner), default=0.0)
            none_collide = 1.0
            for figures in inner:
                none_collide *= 1.0 - figures["false_positive_rate"]
            stats["false_positive_rate"] = float(f"{1.0 - none_collide:.3g}")
        stats["generations"] = len(live)
        return stats

    def params(self) -> dict[str, Any]:
        return {
            **self._inner_params,
            "ttl": self.generations.ttl,
            "ttl_generations": self.generations.count,
        }

    def to_bytes(self) -> bytes:
        parts: list[bytes] = []
        for number, seen in sorted(self._by_generation.items()):
            if self.generations.is_live(number):
                payload = seen.to_bytes()
                parts += (_PAYLOAD_HEADER.pack(number, len(payload)), payload)
        return b"".join(parts)

    def from_bytes(self, params: dict[str, Any], payload: bytes) -> GenerationalSeenSet:
        """A set like this one holding *payload*'s live generations."""
        restored = copy.copy(self)  # not __init__: it builds a whole inner set to probe
        restored._by_generation = {}
        inner_params = {
            name: value for name, value in params.items() if name not in ("ttl", "ttl_generations")
        }
        view, offset = memoryview(payload), 0
        while offset < len(view):
            if offset + _PAYLOAD_HEADER.size > len(view):
                raise ValueError("truncated generation header")
            number, size = _PAYLOAD_HEADER.unpack_from(view, offset)
            offset += _PAYLOAD_HEADER.size
            if offset + size > len(view):
                raise ValueError(f"generation {number} announces {size} bytes, fewer remain")
            if self.generations.is_live(number):
                inner_payload = bytes(view[offset : offset + size])
                restored._by_generation[number] = self._inner_class.from_bytes(
                    inner_params, inner_payload
                )
            offset += size
        return restored
