"""Recrawl records shared by every worker in Redis (``DEDUP_RECRAWL`` with a Redis URL
backend): one schedule, each due page claimed by one worker.

A page's record lives in the hash slot of the seen-URL store (or shard of it) that holds the
page's key, under that store's hash tag, so that one Lua call can ask "seen?" and, for a
seen page, "due? then claimed" (:meth:`RedisRecrawlStore.claim_tail`, run by the seen
store's ``add_then``), and so that a Redis Cluster spreads the records over its primaries
as it spreads the seen keys. Under ``<tag>:recrawl`` for each shard's tag:

* ``…:r:<bucket>``, 4,096 hashes in all, split evenly between the shards: field the
  16-byte request key, value the record's length, the record
  (:func:`crawler.url.recrawl_records.encode`) and the URL; about 60 bytes of Redis
  overhead a URL beside the ~120 of data (a hash of this size is a hash table: a value
  longer than 64 bytes, as a URL makes it, is never listpack-encoded);
* ``…:count``, how many records the shard holds.

The rules the keys were made with are at ``{<DEDUP_REDIS_KEY>:recrawl}:signature``. Records
written by the first layout (every record under that one tag) are moved when a worker
opens the store.

A claim rewrites a due page's fetch time to now and its interval to a lease, and the caller
gets the record as it was; another worker then finds it not due. The worker's fetch writes
the real record; a worker killed meanwhile leaves the claim, and the page is due again when
the lease ends. A seen URL without a record is not due here (with a local store it is):
another worker may be fetching it for the first time.
"""

from __future__ import annotations

import logging
import math
from collections import Counter
from typing import TYPE_CHECKING, Any

from crawler.url.recrawl_records import RecrawlRecord, decode, encode
from crawler.url.recrawl_store import RecordsByKey
from crawler.url.stores.redis import hash_tag
from crawler.url.stores.redis_add_then import LuaTail
from crawler.url.stores.redis_shards import shard_index

if TYPE_CHECKING:
    from collections.abc import Iterator, Mapping, Sequence

    from crawler.redis.connection import RedisConnection
    from crawler.url.stores.redis_shards import RedisSeenStore

logger = logging.getLogger(__name__)

__all__ = ["BUCKETS", "RedisRecrawlStore"]

#: Hashes the records are spread over, in all shards.
BUCKETS = 4096
#: Buckets read in one round trip when listing the due pages.
_BUCKETS_A_CALL = 256

#: KEYS[1] bucket, KEYS[2] count; ARGV[1] key, ARGV[2] value. Records a record.
_PUT = """
if redis.call('HSET', KEYS[1], ARGV[1], ARGV[2]) == 1 then redis.call('INCR', KEYS[2]) end
"""

#: KEYS[1] bucket; ARGV[1] key, ARGV[2] now, ARGV[3] lease. Returns {1, record as it was}
#: for a page due now, claimed for the lease; {0} otherwise (not due, or no record).
_CLAIM_IF_DUE = """
local value = redis.call('HGET', KEYS[1], ARGV[1])
if not value then return {0} end
local fetched_at = struct.unpack('<I4', value, 4)
local interval = struct.unpack('<I4', value, 8)
local now = tonumber(ARGV[2])
if fetched_at + interval > now then return {0} end
local claimed = string.sub(value, 1, 3) .. struct.pack('<I4I4', now, tonumber(ARGV[3]))
    .. string.sub(value, 12)
redis.call('HSET', KEYS[1], ARGV[1], claimed)
return {1, value}
"""


class RedisRecrawlStore(RecordsByKey):
    """The recrawl records of the workers sharing *base* (``DEDUP_REDIS_KEY``), kept beside
    the seen store's shards at *shard_bases* (``[base]`` for a store of one shard; see
    :meth:`beside`); see the module's documentation. Same reading interface as
    :class:`~crawler.url.recrawl_store.RecrawlStore`."""

    kind = "redis-recrawl-records"
    shared = True
    state_dir = None

    def __init__(
        self,
        connection: RedisConnection,
        base: str,
        signature: Mapping[str, Any],
        shard_bases: Sequence[str] | None = None,
    ) -> None:
        self.connection = connection
        self.base = base
        self.signature = dict(signature)
        self.tag = hash_tag(f"{base}:recrawl")
        self.signature_key = f"{self.tag}:signature"
        self.prefixes = [f"{hash_tag(shard)}:recrawl" for shard in (shard_bases or [base])]
        self.count_keys = [f"{prefix}:count" for prefix in self.prefixes]
        self.buckets_a_shard = math.ceil(BUCKETS / len(self.prefixes))

    @classmethod
    def beside(cls, seen: RedisSeenStore, signature: Mapping[str, Any]) -> RedisRecrawlStore:
        """The records kept in the slots of the shared seen store *seen*, on its connection."""
        return cls(seen.connection, seen.base, signature, seen.bases)

    def _shard(self, key: bytes) -> int:
        return 0 if len(self.prefixes) == 1 else shard_index(key, len(self.prefixes))

    def bucket(self, key: bytes) -> str:
        """The hash that holds the record of *key*, in the slot of *key*'s seen shard."""
        number = int.from_bytes(key[:2], "big") % self.buckets_a_shard
        return f"{self.prefixes[self._shard(key)]}:r:{number:03x}"

    def count_key(self, key: bytes) -> str:
        """The record count of *key*'s shard."""
        return self.count_keys[self._shard(key)]

    def open(self) -> None:
        """Claim or check the rules signature (``RedisSignatureMismatch`` naming what
        differs) and move the records of the first layout, while Redis fails for less than
        its fault budget."""

        def check() -> None:
            self.connection.open()
            # (the data key must share the signature's slot: the first layout's count)
            self.connection.check_signature(
                self.signature_key, self.signature, data_key=f"{self.tag}:count"
            )
            self._move_first_layout()

        self.connection.opening(check, what=f"the shared recrawl records of {self.base!r}")

    def _move_first_layout(self) -> None:
        """Records written under ``{<base>:recrawl}`` alone, in 4,096 buckets, go to their
        shard's slot; a record already there (a worker's newer write) is kept."""
        if self.prefixes == [self.tag]:
            return  # a base with its own hash tag and one shard: the same keys
        client = self.connection.client
        old_count = f"{self.tag}:count"
        if not self.connection.call(client.exists, old_count):
            return
        moved = 0
        for first in range(0, BUCKETS, _BUCKETS_A_CALL):
            names = [
                f"{self.tag}:r:{number:03x}" for number in range(first, first + _BUCKETS_A_CALL)
            ]
            records = [item for bucket in self._read_buckets(names) for item in bucket.items()]
            moved += self._put_if_absent(records)
            self.connection.call(client.delete, *names)
        self.connection.call(client.delete, old_count)
        logger.info(
            "Recrawl: %(moved)d shared records moved beside the seen URLs of %(base)r",
            {"moved": moved, "base": self.base},
        )

    def _put_if_absent(self, records: list[tuple[bytes, bytes]]) -> int:
        """Record each ``(key, value)`` whose key has no record, in two round trips (each
        ``HSETNX`` answers one caller only, so workers moving the same records at once
        count each once); how many were recorded."""
        if not records:
            return 0

        def put() -> list[int]:
            pipeline = self.connection.client.pipeline(transaction=False)
            for key, value in records:
                pipeline.hsetnx(self.bucket(key), key, value)
            result: list[int] = pipeline.execute()
            return result

        added: Counter[str] = Counter()
        for (key, _), new in zip(records, self.connection.call(put), strict=True):
            added[self.count_key(key)] += int(new)

        def count() -> None:
            pipeline = self.connection.client.pipeline(transaction=False)
            for count_key, number in added.items():
                pipeline.incrby(count_key, number)
            pipeline.execute()

        self.connection.call(count)
        return sum(added.values())

    def read(self) -> None:
        """Nothing to load: the records are read where they are."""

    def get(self, key: bytes) -> RecrawlRecord | None:
        value = self._value(key)
        return None if value is None else decode(value[1 : 1 + value[0]])

    def url(self, key: bytes) -> str | None:
        value = self._value(key)
        return None if value is None else value[1 + value[0] :].decode("utf-8", "surrogatepass")

    def _value(self, key: bytes) -> bytes | None:
        value: Any = self.connection.call(self.connection.client.hget, self.bucket(key), key)
        return None if value is None else bytes(value)

    def put(self, key: bytes, url: str, record: RecrawlRecord) -> None:
        encoded = encode(record)
        value = bytes((len(encoded),)) + encoded + url.encode("utf-8", "surrogatepass")
        script = self.connection.script(_PUT)
        keys = [self.bucket(key), self.count_key(key)]
        self.connection.call(script, keys=keys, args=[key, value])

    def claim_if_due(self, key: bytes, now: int, lease: int) -> tuple[bool, RecrawlRecord | None]:
        """Whether the page of *key* is due at *now*, and its record before the claim;
        a due page is claimed for *lease* seconds, for every worker, in the same call."""
        tail = self.claim_tail(key, now, lease)
        return self.claimed(
            self.connection.call(self.connection.script(tail.body), keys=tail.keys, args=tail.args)
        )

    def claim_tail(self, key: bytes, now: int, lease: int) -> LuaTail:
        """:meth:`claim_if_due` as the tail of the seen store's add (its keys are in the
        slot of *key*'s seen shard); :meth:`claimed` reads its reply."""
        return LuaTail(_CLAIM_IF_DUE, [self.bucket(key)], [key, now, lease])

    @staticmethod
    def claimed(reply: Any) -> tuple[bool, RecrawlRecord | None]:
        """What :meth:`claim_if_due` returns, from the claim's reply."""
        if not int(reply[0]):
            return False, None
        value = bytes(reply[1])
        return True, decode(value[1 : 1 + value[0]])

    def due(self, now: int) -> Iterator[tuple[bytes, str, RecrawlRecord]]:
        """``(key, url, record)`` of every page due at *now*, a few hundred buckets a
        round trip."""
        names = [
            f"{prefix}:r:{number:03x}"
            for prefix in self.prefixes
            for number in range(self.buckets_a_shard)
        ]
        for first in range(0, len(names), _BUCKETS_A_CALL):
            for bucket in self._read_buckets(names[first : first + _BUCKETS_A_CALL]):
                for key, value in bucket.items():
                    record = decode(value[1 : 1 + value[0]])
                    if record.due_at <= now:
                        yield key, value[1 + value[0] :].decode("utf-8", "surrogatepass"), record

    def _read_buckets(self, names: list[str]) -> list[dict[bytes, bytes]]:
        """The hashes at *names*, in one round trip (a node at a time on a cluster)."""

        def read() -> list[dict[bytes, bytes]]:
            pipeline = self.connection.client.pipeline(transaction=False)
            for name in names:
                pipeline.hgetall(name)
            result: list[dict[bytes, bytes]] = pipeline.execute()
            return result

        return self.connection.call(read)

    def __len__(self) -> int:
        client = self.connection.client
        return sum(int(self.connection.call(client.get, key) or 0) for key in self.count_keys)

    def disk_bytes(self) -> int:
        """Nothing on this machine's disk."""
        return 0

    def snapshot(self) -> None:
        """Redis persists the records itself."""

    def close(self) -> None:
        """Nothing to write: every record is in Redis once :meth:`put` returns."""
