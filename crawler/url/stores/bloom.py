"""A Bloom filter of request keys that grows past its capacity (pybloom-live)."""

from __future__ import annotations

import io
import math
from typing import TYPE_CHECKING, Any

from pybloom_live import BloomFilter

if TYPE_CHECKING:
    from collections.abc import Callable

    from typing_extensions import Self

#: Each filter added past capacity holds twice as many keys as the one before...
GROWTH = 2
#: ...at half its false-positive rate, so the rates of all filters, summed,
#: stay below the configured error rate however far the filter grows.
TIGHTENING = 0.5


#: How bit positions are derived from a key; part of the persisted parameters.
HASHING = "key-digest-enhanced-double-hashing-v1"


def double_hashing(num_slices: int, bits_per_slice: int) -> Callable[[bytes], list[int]]:
    """A pybloom-live ``make_hashes`` for keys that are already uniform digests.

    Request keys are 16-byte BLAKE2b digests: hashing them again (pybloom-live
    runs SHA-384 over each key) only costs time. The key's two 64-bit halves
    give each slice its position by enhanced double hashing (Dillinger and
    Manolios, 2004), measured here at the false-positive rate of independent
    hashes.
    """
    slices = range(num_slices)

    def make_hashes(key: bytes) -> list[int]:
        position = int.from_bytes(key[:8], "little")
        step = int.from_bytes(key[8:16], "little")
        positions = []
        for i in slices:
            positions.append(position % bits_per_slice)
            position += step
            step += i
        return positions

    return make_hashes


def _new_filter(capacity: int, error_rate: float) -> BloomFilter:
    bloom = BloomFilter(capacity, error_rate)
    _use_double_hashing(bloom)
    return bloom


def _use_double_hashing(bloom: BloomFilter) -> None:
    bloom.make_hashes = double_hashing(bloom.num_slices, bloom.bits_per_slice)


def _filter_false_positive_rate(bloom: BloomFilter) -> float:
    # pybloom-live partitions its bits into one slice per hash function; a
    # lookup of an absent key is a false positive when all its slice bits are set.
    slice_fill = 1.0 - math.exp(-bloom.count / bloom.bits_per_slice)
    return float(slice_fill**bloom.num_slices)


class BloomSeenSet:
    """A scalable Bloom filter: ``add`` of a new key returns ``True``, of a
    seen key ``False``, and of a new key that collides with seen ones
    (probability at most *error_rate*) ``False``: a false positive.

    It starts as one pybloom-live :class:`BloomFilter` for *capacity* keys at
    ``error_rate * TIGHTENING``; past capacity it adds filters
    (:data:`GROWTH` times larger, :data:`TIGHTENING` times stricter), so the
    overall false-positive rate stays under *error_rate*, at the cost of
    memory and speed. :attr:`grown` tells when that happened.

    >>> seen = BloomSeenSet(capacity=1000, error_rate=0.001)
    >>> seen.add(b"key"), seen.add(b"key")
    (True, False)
    """

    kind = "bloom"

    def __init__(self, capacity: int, error_rate: float) -> None:
        if capacity < 1:
            raise ValueError(f"Bloom capacity must be at least 1, got {capacity!r}")
        if not 0 < error_rate < 1:
            raise ValueError(f"Bloom error rate must be between 0 and 1, got {error_rate!r}")
        self.capacity = capacity
        self.error_rate = error_rate
        self._filters: list[BloomFilter] = [_new_filter(capacity, error_rate * TIGHTENING)]

    @property
    def grown(self) -> bool:
        """Whether more keys than *capacity* were added."""
        return len(self._filters) > 1

    def add(self, key: bytes) -> bool:
        current = self._filters[-1]
        for older in self._filters[:-1]:
            if key in older:
                return False
        if current.count >= current.capacity:
            if key in current:
                return False
            current = _new_filter(current.capacity * GROWTH, current.error_rate * TIGHTENING)
            self._filters.append(current)
        return not current.add(key)

    def __contains__(self, key: bytes) -> bool:
        return any(key in bloom for bloom in self._filters)

    def __len__(self) -> int:
        return sum(bloom.count for bloom in self._filters)

    @property
    def fill_ratio(self) -> float:
        """Keys added as a share of the configured capacity (may exceed 1)."""
        return len(self) / self.capacity

    @property
    def false_positive_rate(self) -> float:
        """Estimated probability that a new key is reported as seen, now."""
        miss_all = 1.0
        for bloom in self._filters:
            miss_all *= 1.0 - _filter_false_positive_rate(bloom)
        return 1.0 - miss_all

    @property
    def size_in_bytes(self) -> int:
        return sum(bloom.num_bits // 8 for bloom in self._filters)

    def stats(self) -> dict[str, float]:
        return {
            "entries": len(self),
            "fill_ratio": round(self.fill_ratio, 6),
            "false_positive_rate": float(f"{self.false_positive_rate:.3g}"),
            "filters": len(self._filters),
            "bytes": self.size_in_bytes,
        }

    def params(self) -> dict[str, Any]:
        return {"capacity": self.capacity, "error_rate": self.error_rate, "hashing": HASHING}

    def journal_record(self, key: bytes) -> bytes:
        return key

    def replay(self, record: bytes) -> None:
        self.add(record)

    def to_bytes(self) -> bytes:
        out = io.BytesIO()
        out.write(len(self._filters).to_bytes(4, "big"))
        for bloom in self._filters:
            blob = io.BytesIO()
            bloom.tofile(blob)
            out.write(len(blob.getbuffer()).to_bytes(8, "big"))
            out.write(blob.getbuffer())
        return out.getvalue()

    @classmethod
    def from_bytes(cls, params: dict[str, Any], payload: bytes) -> Self:
        if params.get("hashing") != HASHING:
            raise ValueError(f"Bloom filter hashed with {params.get('hashing')!r}, not {HASHING!r}")
        seen = cls(int(params["capacity"]), float(params["error_rate"]))
        data = io.BytesIO(payload)
        count = int.from_bytes(data.read(4), "big")
        filters = []
        for _ in range(count):
            size = int.from_bytes(data.read(8), "big")
            bloom = BloomFilter.fromfile(io.BytesIO(data.read(size)))
            _use_double_hashing(bloom)
            filters.append(bloom)
        if not filters or data.read(1):
            raise ValueError("Bloom payload does not hold the filters its header announces")
        seen._filters = filters
        return seen
