"""Recrawl records shared by every worker in Redis (``DEDUP_RECRAWL`` with a Redis URL
backend): one schedule, each due page claimed by one worker.

The records live under one hash tag, ``{<DEDUP_REDIS_KEY>:recrawl}``, so that a Redis Cluster
serves them from one slot and every Lua call below touches keys of one slot:

* ``…:r:<bucket>``, 4,096 hashes: field the 16-byte request key, value what
  :class:`~crawler.url.recrawl_store.RecrawlStore` keeps (the record's length, the record, the
  URL); about 60 bytes of Redis overhead a URL beside the ~120 of data (a hash of this size is
  a hash table: a value longer than 64 bytes, as a URL makes it, is never listpack-encoded);
* ``…:count``, how many records; ``…:signature``, the rules the keys were made with.

:meth:`RedisRecrawlStore.claim_if_due` is one atomic call: a page due now is claimed by
rewriting its record's fetch time to now and its interval to a lease, and the caller gets the
record as it was; another worker then finds it not due. The worker's fetch writes the real
record; a worker killed meanwhile leaves the claim, and the page is due again when the lease
ends. A seen URL without a record is not due here (with a local store it is): another worker
may be fetching it for the first time.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from crawler.url.recrawl_records import RecrawlRecord, decode, encode
from crawler.url.recrawl_store import RecordsByKey
from crawler.url.stores.redis import hash_tag

if TYPE_CHECKING:
    from collections.abc import Iterator, Mapping

    from crawler.redis.connection import RedisConnection

__all__ = ["BUCKETS", "RedisRecrawlStore"]

#: Hashes the records are spread over.
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
    """The recrawl records of the workers sharing *base* (``DEDUP_REDIS_KEY``); see the
    module's documentation. Same reading interface as
    :class:`~crawler.url.recrawl_store.RecrawlStore`."""

    kind = "redis-recrawl-records"
    shared = True
    state_dir = None

    def __init__(
        self, connection: RedisConnection, base: str, signature: Mapping[str, Any]
    ) -> None:
        self.connection = connection
        self.base = base
        self.signature = dict(signature)
        self.tag = hash_tag(f"{base}:recrawl")
        self.signature_key = f"{self.tag}:signature"
        self.count_key = f"{self.tag}:count"

    def bucket(self, key: bytes) -> str:
        """The hash that holds the record of *key*."""
        return f"{self.tag}:r:{int.from_bytes(key[:2], 'big') % BUCKETS:03x}"

    def open(self) -> None:
        """Claim or check the rules signature (``RedisSignatureMismatch`` naming what
        differs), while Redis fails for less than its fault budget."""

        def check() -> None:
            self.connection.open()
            self.connection.check_signature(
                self.signature_key, self.signature, data_key=self.count_key
            )

        self.connection.opening(check, what=f"the shared recrawl records of {self.base!r}")

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
        self.connection.call(script, keys=[self.bucket(key), self.count_key], args=[key, value])

    def claim_if_due(self, key: bytes, now: int, lease: int) -> tuple[bool, RecrawlRecord | None]:
        """Whether the page of *key* is due at *now*, and its record before the claim;
        a due page is claimed for *lease* seconds, for every worker, in the same call."""
        script = self.connection.script(_CLAIM_IF_DUE)
        reply = self.connection.call(script, keys=[self.bucket(key)], args=[key, now, lease])
        if not reply[0]:
            return False, None
        value = bytes(reply[1])
        return True, decode(value[1 : 1 + value[0]])

    def due(self, now: int) -> Iterator[tuple[bytes, str, RecrawlRecord]]:
        """``(key, url, record)`` of every page due at *now*, a few hundred buckets a
        round trip."""
        client = self.connection.client
        for first in range(0, BUCKETS, _BUCKETS_A_CALL):

            def read_buckets(first: int = first) -> list[dict[bytes, bytes]]:
                pipeline = client.pipeline(transaction=False)
                for number in range(first, min(BUCKETS, first + _BUCKETS_A_CALL)):
                    pipeline.hgetall(f"{self.tag}:r:{number:03x}")
                result: list[dict[bytes, bytes]] = pipeline.execute()
                return result

            for bucket in self.connection.call(read_buckets):
                for key, value in bucket.items():
                    record = decode(value[1 : 1 + value[0]])
                    if record.due_at <= now:
                        yield key, value[1 + value[0] :].decode("utf-8", "surrogatepass"), record

    def __len__(self) -> int:
        count = self.connection.call(self.connection.client.get, self.count_key)
        return int(count or 0)

    def disk_bytes(self) -> int:
        """Nothing on this machine's disk."""
        return 0

    def snapshot(self) -> None:
        """Redis persists the records itself."""

    def close(self) -> None:
        """Nothing to write: every record is in Redis once :meth:`put` returns."""
