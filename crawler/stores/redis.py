"""Seen-URL stores in Redis, shared by every worker of a crawl.

* :class:`RedisSetSeenStore`: an exact Redis set of the binary request keys,
  at the key scrapy-redis uses for its dupefilter (``<spider>:dupefilter``).
* :class:`RedisBloomSeenStore`: a partitioned Bloom filter on Redis bitmaps,
  about 2 bytes a key at a 0.001 false-positive rate, split over several
  string keys when it outgrows one.

Both answer "was this key new?" in one atomic round trip, so workers racing
on the same request agree that exactly one of them saw it first. ``close()``
never deletes shared data; ``clear()`` does, and only when asked.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from crawler.stores.bloom import HASHING, TIGHTENING, _double_hashing

if TYPE_CHECKING:
    from collections.abc import Mapping

    from crawler.redis_access import RedisConnection

#: Bits in one Redis string of a Bloom filter; a string holds at most 2**32.
DEFAULT_SHARD_BITS = 2**31

#: KEYS[1] entry count, KEYS[2..] shards. ARGV: (shard index into KEYS, bit
#: offset) pairs. Sets every bit and counts the key unless all were set;
#: returns 1 for a new key, 0 for a seen one.
_BLOOM_ADD = """
local pairs_count = #ARGV / 2
for i = 1, pairs_count do
  if redis.call('GETBIT', KEYS[tonumber(ARGV[2 * i - 1])], ARGV[2 * i]) == 0 then
    for j = i, pairs_count do
      redis.call('SETBIT', KEYS[tonumber(ARGV[2 * j - 1])], ARGV[2 * j], 1)
    end
    redis.call('INCR', KEYS[1])
    return 1
  end
end
return 0
"""

#: Same KEYS and ARGV as :data:`_BLOOM_ADD`; returns 1 when every bit is set.
_BLOOM_CONTAINS = """
for i = 1, #ARGV / 2 do
  if redis.call('GETBIT', KEYS[tonumber(ARGV[2 * i - 1])], ARGV[2 * i]) == 0 then
    return 0
  end
end
return 1
"""

#: KEYS: shards. ARGV: the size in bits of each. Creates a missing shard at
#: its full size at once (a bitmap grown bit by bit over-allocates).
_BLOOM_ALLOCATE = """
for i = 1, #KEYS do
  if redis.call('EXISTS', KEYS[i]) == 0 then
    redis.call('SETBIT', KEYS[i], tonumber(ARGV[i]) - 1, 0)
  end
end
"""


class RedisSetSeenStore:
    """An exact seen-URL store: one Redis set of 16-byte keys at *base*.

    * ``add`` is one ``SADD``: ``True`` for exactly one caller per key, however
      many workers race on it;
    * the layout is scrapy-redis's (a set at ``<spider>:dupefilter``), with the
      rules signature at ``{base}:signature``; a set found without a signature
      (written by scrapy-redis) is refused by :meth:`open`.
    """

    kind = "redis-set"

    def __init__(self, connection: RedisConnection, base: str) -> None:
        self.connection = connection
        self.base = base
        self.key = base
        self.signature_key = f"{{{base}}}:signature"

    def open(self, signature: Mapping[str, Any]) -> None:
        """Ping, then claim or check the rules signature of the shared set."""
        self.connection.open()
        self.connection.check_signature(self.signature_key, signature, data_key=self.key)

    def add(self, key: bytes) -> bool:
        return bool(self.connection.call(self.connection.client.sadd, self.key, key))

    def __contains__(self, key: bytes) -> bool:
        return bool(self.connection.call(self.connection.client.sismember, self.key, key))

    def discard(self, key: bytes) -> bool:
        """Forget *key* (one ``SREM``); return whether it was there."""
        return bool(self.connection.call(self.connection.client.srem, self.key, key))

    def __len__(self) -> int:
        return int(self.connection.call(self.connection.client.scard, self.key))

    def stats(self) -> dict[str, float]:
        return {"entries": len(self)}

    def params(self) -> dict[str, Any]:
        return {"backend": self.kind}

    def close(self) -> None:
        """Nothing to release: the shared set stays, the connection is the caller's."""

    def clear(self) -> None:
        """Delete the set and its signature."""
        self.connection.call(self.connection.client.delete, self.key, self.signature_key)


class RedisBloomSeenStore:
    """A Bloom filter for *capacity* keys at *error_rate*, on Redis bitmaps.

    * sized like pybloom-live's partitioned filter for ``p = error_rate *
      TIGHTENING`` (as :class:`~crawler.stores.bloom.BloomSeenSet`'s first
      filter), so the rate at capacity stays under *error_rate*:
      ``ceil(log2(1/p))`` slices of ``ceil(capacity * |ln p| / (slices * ln(2)**2))``
      bits, bit positions taken from the key digest as ``BloomSeenSet`` takes them;
    * ``add`` checks and sets all the key's bits in one Lua call: of racing
      workers exactly one gets ``True``; a new key whose bits are all set
      already (probability at most *error_rate* at capacity) gets ``False``;
    * the bits are spread over strings of *shard_bits* bits, ``{base}:bloom:0``,
      ``{base}:bloom:1``..., all with the hash tag ``{base}`` so they live in
      one Redis Cluster slot; the entry count is at ``{base}:count``.

    The filter does not grow: past *capacity* its false-positive rate rises
    (see ``false_positive_rate`` in :meth:`stats`).
    """

    kind = "redis-bloom"

    def __init__(
        self,
        connection: RedisConnection,
        base: str,
        capacity: int,
        error_rate: float,
        *,
        shard_bits: int = DEFAULT_SHARD_BITS,
    ) -> None:
        if capacity < 1:
            raise ValueError(f"Bloom capacity must be at least 1, got {capacity!r}")
        if not 0 < error_rate < 1:
            raise ValueError(f"Bloom error rate must be between 0 and 1, got {error_rate!r}")
        if not 0 < shard_bits <= 2**32:
            raise ValueError(f"Bloom shard size must be 1 to 2**32 bits, got {shard_bits!r}")
        self.connection = connection
        self.base = base
        self.capacity = capacity
        self.error_rate = error_rate
        self.shard_bits = shard_bits
        # pybloom-live's sizing puts the rate *at* error_rate at capacity; sized
        # for TIGHTENING times it, as BloomSeenSet's first filter, it stays under.
        sizing_rate = error_rate * TIGHTENING
        self.num_slices = math.ceil(math.log2(1 / sizing_rate))
        self.bits_per_slice = math.ceil(
            capacity * abs(math.log(sizing_rate)) / (self.num_slices * math.log(2) ** 2)
        )
        self.num_bits = self.num_slices * self.bits_per_slice
        self.num_shards = math.ceil(self.num_bits / shard_bits)
        self.shard_keys = [f"{{{base}}}:bloom:{shard}" for shard in range(self.num_shards)]
        self.count_key = f"{{{base}}}:count"
        self.signature_key = f"{{{base}}}:signature"
        self._positions = _double_hashing(self.num_slices, self.bits_per_slice)

    def open(self, signature: Mapping[str, Any]) -> None:
        """Ping, claim or check the rules signature, and create missing shards."""
        self.connection.open()
        self.connection.check_signature(self.signature_key, signature, data_key=self.count_key)
        last_shard_bits = self.num_bits - (self.num_shards - 1) * self.shard_bits
        sizes = [self.shard_bits] * (self.num_shards - 1) + [last_shard_bits]
        self.connection.call(
            self.connection.script(_BLOOM_ALLOCATE), keys=self.shard_keys, args=sizes
        )

    def _keys_and_args(self, key: bytes) -> tuple[list[str], list[int]]:
        keys = [self.count_key]
        key_index: dict[int, int] = {}
        args: list[int] = []
        for slice_number, position in enumerate(self._positions(key)):
            shard, offset = divmod(slice_number * self.bits_per_slice + position, self.shard_bits)
            if shard not in key_index:
                keys.append(self.shard_keys[shard])
                key_index[shard] = len(keys)  # Lua indexes KEYS from 1
            args += (key_index[shard], offset)
        return keys, args

    def add(self, key: bytes) -> bool:
        keys, args = self._keys_and_args(key)
        return bool(self.connection.call(self.connection.script(_BLOOM_ADD), keys=keys, args=args))

    def __contains__(self, key: bytes) -> bool:
        keys, args = self._keys_and_args(key)
        script = self.connection.script(_BLOOM_CONTAINS)
        return bool(self.connection.call(script, keys=keys, args=args))

    def __len__(self) -> int:
        return int(self.connection.call(self.connection.client.get, self.count_key) or 0)

    def false_positive_rate(self, entries: int) -> float:
        """Estimated probability that a new key is reported as seen after *entries* keys."""
        return float((1.0 - math.exp(-entries / self.bits_per_slice)) ** self.num_slices)

    def stats(self) -> dict[str, float]:
        entries = len(self)
        return {
            "entries": entries,
            "fill_ratio": round(entries / self.capacity, 6),
            "false_positive_rate": float(f"{self.false_positive_rate(entries):.3g}"),
            "bytes": math.ceil(self.num_bits / 8),
            "shards": self.num_shards,
        }

    def params(self) -> dict[str, Any]:
        return {
            "backend": self.kind,
            "capacity": self.capacity,
            "error_rate": self.error_rate,
            "hashing": HASHING,
            "shard_bits": self.shard_bits,
        }

    def close(self) -> None:
        """Nothing to release: the shared filter stays, the connection is the caller's."""

    def clear(self) -> None:
        """Delete the filter's shards, its count and its signature."""
        self.connection.call(
            self.connection.client.delete, *self.shard_keys, self.count_key, self.signature_key
        )
