"""Seen-URL stores in Redis, shared by every worker of a crawl.

* :class:`RedisSetSeenStore`: an exact Redis set of the binary request keys,
  at the key scrapy-redis uses for its dupefilter (``<spider>:dupefilter``).
* :class:`RedisBloomSeenStore`: a partitioned Bloom filter on Redis bitmaps,
  about 2 bytes a key at a 0.001 false-positive rate, split over several
  string keys when it outgrows one.

Both answer "was this key new?" in one atomic round trip, so workers racing
on the same request agree that exactly one of them saw it first; ``add_then``
runs a :class:`LuaTail` in the same call when the key was seen (the recrawl
records' claim of a due page, kept in the store's slot). ``close()`` never
deletes shared data; ``clear()`` does, and only when asked.
"""

from __future__ import annotations

import math
import time
from typing import TYPE_CHECKING, Any

from crawler.url.stores.bloom import HASHING, TIGHTENING, double_hashing
from crawler.url.stores.redis_add_then import SET_ADD, LuaTail, add_then

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from crawler.redis.connection import RedisConnection
    from crawler.url.generations import Generations

#: Bits in one Redis string of a Bloom filter; a string holds at most 2**32.
DEFAULT_SHARD_BITS = 2**31

#: New keys a worker adds to a Bloom filter's shared entry count at once, or
#: after :data:`COUNT_INTERVAL` seconds, whichever comes first.
COUNT_BATCH = 1000
COUNT_INTERVAL = 1.0

#: KEYS: shards. ARGV: the size in bits of each. Creates a missing shard at
#: its full size at once (a bitmap grown bit by bit over-allocates).
_BLOOM_ALLOCATE = """
for i = 1, #KEYS do
  if redis.call('EXISTS', KEYS[i]) == 0 then
    redis.call('SETBIT', KEYS[i], tonumber(ARGV[i]) - 1, 0)
  end
end
"""

_BLOOM_POSITIONS = """
local position, step = tonumber(ARGV[1]), tonumber(ARGV[2])
local slices, slice_bits = tonumber(ARGV[3]), tonumber(ARGV[4])
local shard_bits, shards = tonumber(ARGV[5]), tonumber(ARGV[6])
local per_generation = shards + 1
local generations = #KEYS / per_generation
local shard_of, offset_of = {}, {}
for i = 1, slices do
  local bit = (i - 1) * slice_bits + position
  local shard = math.floor(bit / shard_bits)
  shard_of[i] = shard + 2
  offset_of[i] = bit - shard * shard_bits
  position = (position + step) % slice_bits
  step = (step + i - 1) % slice_bits
end
local function first_unset(generation, from)
  local first_key = generation * per_generation
  for i = from, slices do
    if redis.call('GETBIT', KEYS[first_key + shard_of[i]], offset_of[i]) == 0 then
      return i
    end
  end
  return 0
end
local function held_by_older_generation()
  for generation = 1, generations - 1 do
    if first_unset(generation, 1) == 0 then
      return true
    end
  end
  return false
end
"""

#: KEYS: for each live generation, newest first, its entry count then its
#: shards. ARGV: the key digest's two halves reduced modulo the slice size,
#: slices, slice size, shard size, shards, size of the last shard, seconds
#: to keep a new generation (0: forever). Bit positions are computed here, as
#: :func:`~crawler.url.stores.bloom.double_hashing` computes them, so a call
#: carries two numbers instead of a position per slice. Returns 1 for a new
#: key (its bits set in the newest generation, created at full size on its
#: first key), 0 for a seen one.
_BLOOM_ADD = (
    _BLOOM_POSITIONS
    + """
local unset = first_unset(0, 1)
if unset == 0 or held_by_older_generation() then
  return 0
end
if redis.call('INCR', KEYS[1]) == 1 then
  local expire = tonumber(ARGV[8])
  for j = 2, per_generation do
    local size = j == per_generation and tonumber(ARGV[7]) or shard_bits
    if redis.call('EXISTS', KEYS[j]) == 0 then
      redis.call('SETBIT', KEYS[j], size - 1, 0)
    end
    if expire > 0 then
      redis.call('EXPIRE', KEYS[j], expire)
    end
  end
  if expire > 0 then
    redis.call('EXPIRE', KEYS[1], expire)
  end
end
for i = unset, slices do
  redis.call('SETBIT', KEYS[shard_of[i]], offset_of[i], 1)
end
return 1
"""
)

#: Same KEYS and ARGV as :data:`_BLOOM_ADD`; returns 1 when a live generation holds the key.
_BLOOM_CONTAINS = (
    _BLOOM_POSITIONS
    + """
if first_unset(0, 1) == 0 or held_by_older_generation() then
  return 1
end
return 0
"""
)

#: KEYS: the live generations' sets, newest first. ARGV: the key, seconds to
#: keep a new generation. Returns 1 for a new key, 0 for a seen one.
_SET_ADD_WITH_TTL = """
for i = 1, #KEYS do
  if redis.call('SISMEMBER', KEYS[i], ARGV[1]) == 1 then
    return 0
  end
end
redis.call('SADD', KEYS[1], ARGV[1])
if redis.call('TTL', KEYS[1]) == -1 then
  redis.call('EXPIRE', KEYS[1], ARGV[2])
end
return 1
"""


_SET_ONE_BIT = b"$3\r\nSET\r\n$2\r\nu1\r\n$%d\r\n%d\r\n$1\r\n1\r\n"


def bitfield_set_command(key: bytes, offsets: Sequence[int]) -> bytes:
    """``BITFIELD key SET u1 <offset> 1 ...`` encoded in RESP, for
    :meth:`~crawler.redis.connection.RedisConnection.execute_packed`."""
    head = b"*%d\r\n$8\r\nBITFIELD\r\n$%d\r\n%s\r\n" % (2 + 4 * len(offsets), len(key), key)
    return head + b"".join(_SET_ONE_BIT % (len(str(offset)), offset) for offset in offsets)


def _bitfield_set_arguments(offsets: Sequence[int]) -> list[Any]:
    return [part for offset in offsets for part in ("SET", "u1", offset, 1)]


def hash_tag(base: str) -> str:
    """*base* as a Redis Cluster hash tag: keys ``<tag>:<suffix>`` share *base*'s slot.

    A *base* that has a tag already (``{crawl}:spider``) is kept as it is; one
    with braces that do not make a tag could not share its slot, and is refused.
    """
    opening = base.find("{")
    if opening != -1 and base.find("}", opening + 1) > opening + 1:
        return base
    if "{" in base or "}" in base:
        raise ValueError(
            f"Redis key {base!r} has braces that are not a hash tag; use a tag such as "
            "'{crawl}:%(spider)s:dupefilter', or no braces"
        )
    return f"{{{base}}}"


class RedisSetSeenStore:
    """An exact seen-URL store: Redis sets of 16-byte keys.

    * without a time to live, one set at *base*, scrapy-redis's layout
      (``<spider>:dupefilter``), and ``add`` is one ``SADD``;
    * with *generations* (``DEDUP_URL_TTL``), one set per time slice at
      ``{base}:gen:<n>``, expiring on its own, and ``add`` is one Lua call;
    * either way ``add`` is ``True`` for exactly one caller per key, however
      many workers race on it. The rules signature is at ``{base}:signature``;
      a set found without one (written by scrapy-redis) is refused by :meth:`open`.
    """

    kind = "redis-set"

    def __init__(
        self,
        connection: RedisConnection,
        base: str,
        *,
        generations: Generations | None = None,
        key_setting: str = "DEDUP_REDIS_KEY",
    ) -> None:
        self.connection = connection
        self.base = base
        self.generations = generations
        #: the setting that names *base*, for errors
        self.key_setting = key_setting
        self.tag = hash_tag(base)
        self.key = base if generations is None else f"{self.tag}:gen"
        self.signature_key = f"{self.tag}:signature"

    def _generation_keys(self) -> list[str]:
        assert self.generations is not None
        return [f"{self.key}:{number}" for number in self.generations.live()]

    def data_keys(self) -> list[str]:
        """The keys holding entries now (the live generations' with a time to live)."""
        return [self.key] if self.generations is None else self._generation_keys()

    def open(self, signature: Mapping[str, Any]) -> None:
        """Ping, then claim or check the rules signature of the shared set, while Redis
        fails for less than its fault budget (:meth:`RedisConnection.opening`)."""
        self.connection.opening(
            lambda: self._open(signature),
            what=f"the shared store {self.base!r} ({self.key_setting})",
        )

    def _open(self, signature: Mapping[str, Any]) -> None:
        self.connection.open()
        data_key = self.key if self.generations is None else self._generation_keys()[0]
        self.connection.check_signature(
            self.signature_key, signature, data_key=data_key, key_setting=self.key_setting
        )

    def add(self, key: bytes) -> bool:
        if self.generations is None:
            return bool(self.connection.call(self.connection.client.sadd, self.key, key))
        script = self.connection.script(_SET_ADD_WITH_TTL)
        keys = self._generation_keys()
        args = [key, self.generations.expire_seconds]
        return bool(self.connection.call(script, keys=keys, args=args))

    @property
    def bases(self) -> list[str]:
        """The base key of each shard: this store's alone."""
        return [self.base]

    def add_then(self, key: bytes, tail: LuaTail) -> tuple[bool, Any]:
        """:meth:`add`, and *tail* when *key* was seen, in one atomic call
        (:func:`add_then`); *tail*'s keys are in :attr:`tag`'s slot."""
        if self.generations is None:
            return add_then(self.connection, (SET_ADD, [self.key], [key]), tail)
        args = [key, self.generations.expire_seconds]
        return add_then(self.connection, (_SET_ADD_WITH_TTL, self._generation_keys(), args), tail)

    def __contains__(self, key: bytes) -> bool:
        client = self.connection.client
        return any(self.connection.call(client.sismember, name, key) for name in self.data_keys())

    def discard(self, key: bytes) -> bool:
        """Forget *key* (one ``SREM`` a live generation); return whether it was there."""
        client = self.connection.client
        removed = [self.connection.call(client.srem, name, key) for name in self.data_keys()]
        return any(removed)

    def __len__(self) -> int:
        client = self.connection.client
        return sum(int(self.connection.call(client.scard, name)) for name in self.data_keys())

    def generation_stats(self) -> list[dict[str, float]]:
        """Each live generation holding entries, newest first: number, age, entries."""
        if self.generations is None:
            return []
        client = self.connection.client
        found = []
        for number in self.generations.live():
            entries = int(self.connection.call(client.scard, f"{self.key}:{number}"))
            if entries:
                age = round(self.generations.age(number), 3)
                found.append({"generation": number, "age_seconds": age, "entries": entries})
        return found

    def stats(self) -> dict[str, float]:
        if self.generations is None:
            return {"entries": len(self)}
        generations = self.generation_stats()
        return {
            "entries": sum(generation["entries"] for generation in generations),
            "generations": len(generations),
        }

    def params(self) -> dict[str, Any]:
        return {"backend": self.kind, **_ttl_params(self.generations)}

    def close(self) -> None:
        """Nothing to release: the shared set stays, the connection is the caller's."""

    def clear(self) -> None:
        """Delete the sets and the signature."""
        timed = _matching_keys(self.connection, f"{_glob_escape(self.tag)}:gen:*")
        self.connection.call(self.connection.client.delete, self.base, *timed, self.signature_key)


class RedisBloomSeenStore:
    """A Bloom filter for *capacity* keys at *error_rate*, on Redis bitmaps.

    * sized like pybloom-live's partitioned filter for ``p = error_rate *
      TIGHTENING`` (as :class:`~crawler.url.stores.bloom.BloomSeenSet`'s first
      filter), so the rate at capacity stays under *error_rate*:
      ``ceil(log2(1/p))`` slices of ``ceil(capacity * |ln p| / (slices * ln(2)**2))``
      bits, bit positions taken from the key digest as ``BloomSeenSet`` takes them;
    * ``add`` sets all the key's bits in one ``BITFIELD`` command, which
      returns their previous values: the key was new when one was unset. Of
      racing workers exactly one gets ``True``; a new key whose bits are all
      set already (probability at most *error_rate* at capacity) gets ``False``;
    * the bits are spread over strings of *shard_bits* bits, ``{base}:bloom:0``,
      ``{base}:bloom:1``..., all with the hash tag ``{base}`` so they live in
      one Redis Cluster slot (a key touching several shards sets them in one
      ``MULTI``/``EXEC``);
    * the entry count at ``{base}:count`` is for stats: each worker adds its
      new keys to it in batches of :data:`COUNT_BATCH`, at least once a second
      (:data:`COUNT_INTERVAL`) while it adds keys, and when asked for :meth:`stats`,
      so it lags behind by less than a batch or a second a worker, and a killed
      worker's last batch is not counted;
    * with *generations* (``DEDUP_URL_TTL``), one such filter per time slice
      (``{base}:bloom:<shard>:gen:<n>``, ``{base}:count:gen:<n>``), each for
      *capacity* keys and expiring on its own; ``add`` is then one Lua call
      that looks in every live generation before it sets the key's bits in
      the newest, and counts it at once.

    A filter does not grow: past *capacity* its false-positive rate rises
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
        generations: Generations | None = None,
        key_setting: str = "DEDUP_REDIS_KEY",
    ) -> None:
        #: the setting that names *base*, for errors
        self.key_setting = key_setting
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
        self.generations = generations
        # pybloom-live's sizing puts the rate *at* error_rate at capacity; sized
        # for TIGHTENING times it, as BloomSeenSet's first filter, it stays under.
        sizing_rate = error_rate * TIGHTENING
        self.num_slices = math.ceil(math.log2(1 / sizing_rate))
        self.bits_per_slice = math.ceil(
            capacity * abs(math.log(sizing_rate)) / (self.num_slices * math.log(2) ** 2)
        )
        self.num_bits = self.num_slices * self.bits_per_slice
        self.num_shards = math.ceil(self.num_bits / shard_bits)
        self.last_shard_bits = self.num_bits - (self.num_shards - 1) * shard_bits
        self.tag = hash_tag(base)
        self.signature_key = f"{self.tag}:signature"
        self.shard_keys = [f"{self.tag}:bloom:{shard}" for shard in range(self.num_shards)]
        self.count_key = f"{self.tag}:count"
        self._untimed_keys = [self.count_key, *self.shard_keys]
        self._shard_names = [name.encode() for name in self.shard_keys]
        self._positions = double_hashing(self.num_slices, self.bits_per_slice)
        self._uncounted = 0
        self._counted_at = time.monotonic()

    def _keys_of(self, generation: int) -> list[str]:
        suffix = f":gen:{generation}"
        return [self.count_key + suffix, *(key + suffix for key in self.shard_keys)]

    def _live_keys(self) -> list[str]:
        if self.generations is None:
            return self._untimed_keys
        return [key for number in self.generations.live() for key in self._keys_of(number)]

    def _args(self, key: bytes) -> list[int]:
        slice_bits = self.bits_per_slice
        expire = 0 if self.generations is None else self.generations.expire_seconds
        return [
            int.from_bytes(key[:8], "little") % slice_bits,
            int.from_bytes(key[8:16], "little") % slice_bits,
            self.num_slices,
            slice_bits,
            self.shard_bits,
            self.num_shards,
            self.last_shard_bits,
            expire,
        ]

    def open(self, signature: Mapping[str, Any]) -> None:
        """Ping, claim or check the rules signature, and create missing shards, while
        Redis fails for less than its fault budget (:meth:`RedisConnection.opening`)."""
        self.connection.opening(
            lambda: self._open(signature),
            what=f"the shared store {self.base!r} ({self.key_setting})",
        )

    def _open(self, signature: Mapping[str, Any]) -> None:
        self.connection.open()
        data_key = self._live_keys()[0]
        self.connection.check_signature(
            self.signature_key, signature, data_key=data_key, key_setting=self.key_setting
        )
        if self.generations is None:
            sizes = [self.shard_bits] * (self.num_shards - 1) + [self.last_shard_bits]
            script = self.connection.script(_BLOOM_ALLOCATE)
            self.connection.call(script, keys=self.shard_keys, args=sizes)

    def add(self, key: bytes) -> bool:
        offsets = {} if self.generations is not None else self._offsets_by_shard(key)
        if self.generations is not None or (self.connection.cluster and len(offsets) > 1):
            # looks in every slice, or sets bits in several shards of a cluster
            # (no MULTI there): one Lua call, which counts the key itself
            script = self.connection.script(_BLOOM_ADD)
            return bool(self.connection.call(script, keys=self._live_keys(), args=self._args(key)))
        if not self._set_bits(offsets):
            return False
        self._uncounted += 1
        if self._uncounted >= COUNT_BATCH or time.monotonic() - self._counted_at >= COUNT_INTERVAL:
            self._flush_count()
        return True

    @property
    def bases(self) -> list[str]:
        """The base key of each shard: this store's alone."""
        return [self.base]

    def add_then(self, key: bytes, tail: LuaTail) -> tuple[bool, Any]:
        """:meth:`add`, and *tail* when *key* was seen, in one atomic call
        (:func:`add_then`, the Lua form of :meth:`add`, which counts a new key itself);
        *tail*'s keys are in :attr:`tag`'s slot."""
        return add_then(self.connection, (_BLOOM_ADD, self._live_keys(), self._args(key)), tail)

    def _offsets_by_shard(self, key: bytes) -> dict[int, list[int]]:
        offsets: dict[int, list[int]] = {}
        bits_per_slice, shard_bits = self.bits_per_slice, self.shard_bits
        for slice_number, position in enumerate(self._positions(key)):
            shard, offset = divmod(slice_number * bits_per_slice + position, shard_bits)
            offsets.setdefault(shard, []).append(offset)
        return offsets

    def _set_bits(self, offsets: dict[int, list[int]]) -> bool:
        """Set the bits at *offsets* of the untimed filter; ``True`` when one was unset."""
        connection = self.connection
        if len(offsets) == 1:
            ((shard, shard_offsets),) = offsets.items()
            if connection.cluster:
                command = connection.client.execute_command
                arguments = _bitfield_set_arguments(shard_offsets)
                return 0 in connection.call(command, "BITFIELD", self.shard_keys[shard], *arguments)
            packed = bitfield_set_command(self._shard_names[shard], shard_offsets)
            return 0 in connection.call(connection.execute_packed, packed)

        def transaction() -> list[list[int]]:
            pipeline = connection.client.pipeline(transaction=True)
            for shard, shard_offsets in offsets.items():
                arguments = _bitfield_set_arguments(shard_offsets)
                pipeline.execute_command("BITFIELD", self.shard_keys[shard], *arguments)
            return pipeline.execute()

        return any(0 in previous for previous in connection.call(transaction))

    def _flush_count(self) -> None:
        if self._uncounted:
            client = self.connection.client
            self.connection.call(client.incrby, self.count_key, self._uncounted)
            self._uncounted = 0
        self._counted_at = time.monotonic()

    def __contains__(self, key: bytes) -> bool:
        script = self.connection.script(_BLOOM_CONTAINS)
        return bool(self.connection.call(script, keys=self._live_keys(), args=self._args(key)))

    def discard(self, key: bytes) -> bool:
        """Raise :exc:`TypeError`: a key's bits are other keys' too, and clearing them
        would forget those."""
        raise TypeError("a Bloom filter cannot forget a key")

    def _counts(self) -> list[tuple[int | None, int]]:
        """Each live filter's generation (``None`` without a time to live) and entries."""
        client = self.connection.client
        if self.generations is None:
            self._flush_count()
            return [(None, int(self.connection.call(client.get, self.count_key) or 0))]
        numbers = self.generations.live()
        names = [self._keys_of(number)[0] for number in numbers]
        counts = self.connection.call(client.mget, names)
        return [
            (number, int(count)) for number, count in zip(numbers, counts, strict=True) if count
        ]

    def __len__(self) -> int:
        return sum(entries for _, entries in self._counts())

    def false_positive_rate(self, entries: int) -> float:
        """Estimated probability that a new key is reported as seen after *entries* keys."""
        return float((1.0 - math.exp(-entries / self.bits_per_slice)) ** self.num_slices)

    def generation_stats(self) -> list[dict[str, float]]:
        """Each live generation holding entries, newest first: number, age, entries."""
        if self.generations is None:
            return []
        return [
            {
                "generation": number,
                "age_seconds": round(self.generations.age(number), 3),
                "entries": entries,
            }
            for number, entries in self._counts()
            if number is not None
        ]

    def stats(self) -> dict[str, float]:
        live = self._counts()
        counts = [entries for _, entries in live] or [0]
        none_collide = 1.0
        for entries in counts:
            none_collide *= 1.0 - self.false_positive_rate(entries)
        stats: dict[str, float] = {
            "entries": sum(counts),
            "fill_ratio": round(max(counts) / self.capacity, 6),
            "false_positive_rate": float(f"{1.0 - none_collide:.3g}"),
            "bytes": math.ceil(self.num_bits / 8) * len(counts),
            "shards": self.num_shards,
        }
        if self.generations is not None:
            stats["generations"] = len(live)
        return stats

    def params(self) -> dict[str, Any]:
        return {
            "backend": self.kind,
            "capacity": self.capacity,
            "error_rate": self.error_rate,
            "hashing": HASHING,
            "shard_bits": self.shard_bits,
            **_ttl_params(self.generations),
        }

    def close(self) -> None:
        """Add this worker's uncounted keys to the entry count; the shared filter stays."""
        self._flush_count()

    def clear(self) -> None:
        """Delete the filter's shards, counts and signature, in every generation."""
        self._uncounted = 0
        timed = _matching_keys(self.connection, f"{_glob_escape(self.tag)}:*:gen:*")
        client = self.connection.client
        self.connection.call(client.delete, *self._untimed_keys, *timed, self.signature_key)


def _ttl_params(generations: Generations | None) -> dict[str, Any]:
    if generations is None:
        return {}
    return {"ttl": generations.ttl, "ttl_generations": generations.count}


def _matching_keys(connection: RedisConnection, pattern: str) -> list[bytes]:
    return connection.call(lambda: list(connection.client.scan_iter(match=pattern, count=1000)))


def _glob_escape(text: str) -> str:
    return "".join(f"\\{char}" if char in "*?[]\\" else char for char in text)
