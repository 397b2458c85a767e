"""A shared seen store spread over the primaries of a Redis Cluster.

A Redis Cluster serves each key from the primary that owns its hash slot, and a
store whose keys share one hash tag (:func:`~crawler.url.stores.redis.hash_tag`, so that
one Lua call or ``BITFIELD`` can touch them all) lives on one primary: a cluster
then adds no room and no throughput to it. :class:`ShardedRedisSeenStore` splits
one store into *N* stores of the same kind, each under its own hash tag, and sends
each key to one of them by a hash of the key, so every check is still one atomic
call, on one primary.

The shards' tags are chosen to fall in *N* equal runs of the 16,384 slots
(:func:`shard_bases`), the way ``redis-cli --cluster create`` hands slots out, so
on such a cluster of *P* primaries each holds *N/P* shards when *P* divides *N*.
"""

from __future__ import annotations

import hashlib
import math
from typing import TYPE_CHECKING, Any

from crawler.url.stores.redis import RedisBloomSeenStore, RedisSetSeenStore, hash_tag

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from crawler.redis.connection import RedisConnection
    from crawler.url.stores.redis_add_then import LuaTail

#: Hash slots of a Redis Cluster.
CLUSTER_SLOTS = 16384

#: Shards of a store on a Redis Cluster by default: as many on each primary of a
#: cluster of 2, 3, 4, 6 or 12 primaries.
CLUSTER_SHARDS = 12

#: The name of the shard count in a store's rules signature and parameters.
SHARDS_PARAM = "DEDUP_REDIS_SHARDS"


def shard_bases(base: str, count: int) -> list[str]:
    """The base key of each of *count* shards of the store at *base*.

    Shard *i*'s base is ``<base>#<i>.<n>``, with the first *n* whose hash slot is
    in the *i*-th of *count* equal runs of the cluster's slots; a base without
    braces, since a hash tag in it would put every shard in its slot.

    >>> shard_bases("site:dupefilter", 3)
    ['site:dupefilter#0.0', 'site:dupefilter#1.1', 'site:dupefilter#2.0']
    """
    from redis.crc import key_slot

    if count < 1 or count > CLUSTER_SLOTS:
        raise ValueError(f"{SHARDS_PARAM}={count!r} must be 1 to {CLUSTER_SLOTS} shards")
    if "{" in base or "}" in base:
        raise ValueError(
            f"Redis key {base!r} has a hash tag, which would keep all {count} shards in "
            f"one slot: remove the braces, or set {SHARDS_PARAM}=1"
        )
    bases = []
    for shard in range(count):
        first, end = shard * CLUSTER_SLOTS // count, (shard + 1) * CLUSTER_SLOTS // count
        number = 0
        while not first <= key_slot(f"{base}#{shard}.{number}".encode()) < end:
            number += 1
        bases.append(f"{base}#{shard}.{number}")
    return bases


def shard_index(key: bytes, count: int) -> int:
    """The shard of *count* that holds *key*: a hash independent of the Bloom bit positions
    (and of the recrawl records' buckets, which follow the shards).

    >>> shard_index(bytes(16), 12)
    4
    """
    digest = hashlib.blake2b(key, digest_size=8, person=b"dedup-shard").digest()
    return int.from_bytes(digest, "little") % count


class ShardedRedisSeenStore:
    """One seen store made of *shards* (stores of one kind, each under its own hash
    tag), answering like one of them.

    * a key goes to the shard a hash of it names, so ``add`` is one atomic call and
      ``True`` for exactly one caller per key, as with one store;
    * the rules signature, with the shard count, is kept at ``{base}:signature`` too,
      and :meth:`open` checks it first: a worker with another shard count (or with a
      store of one shard at *base*) is refused before it writes anything;
    * *capacity* is the whole store's, for :meth:`params` (each Bloom shard holds its share).
    """

    def __init__(
        self,
        connection: RedisConnection,
        base: str,
        shards: Sequence[RedisSetSeenStore | RedisBloomSeenStore],
        *,
        capacity: int | None = None,
        key_setting: str = "DEDUP_REDIS_KEY",
    ) -> None:
        if not shards:
            raise ValueError("a sharded store needs at least one shard")
        self.connection = connection
        self.base = base
        self.shards = list(shards)
        self.kind = self.shards[0].kind
        self.capacity = capacity
        self.key_setting = key_setting
        self.signature_key = f"{hash_tag(base)}:signature"

    def primaries(self) -> list[str]:
        """The cluster primaries holding the shards (``host:port``), or ``[]`` off a cluster."""
        nodes = {self.connection.node_of(shard.signature_key) for shard in self.shards}
        return sorted(node for node in nodes if node is not None)

    def shard_of(self, key: bytes) -> RedisSetSeenStore | RedisBloomSeenStore:
        """The shard that holds *key* (:func:`shard_index`)."""
        return self.shards[shard_index(key, len(self.shards))]

    def open(self, signature: Mapping[str, Any]) -> None:
        """Check the store's signature, then open every shard with it, while Redis fails
        for less than its fault budget (:meth:`RedisConnection.opening`)."""
        self.connection.opening(
            lambda: self._open(signature),
            what=f"the shared store {self.base!r} ({self.key_setting})",
        )

    def _open(self, signature: Mapping[str, Any]) -> None:
        self.connection.open()
        self.connection.check_signature(
            self.signature_key, signature, data_key=self.base, key_setting=self.key_setting
        )
        for shard in self.shards:
            shard.open(signature)

    def add(self, key: bytes) -> bool:
        return self.shard_of(key).add(key)

    @property
    def bases(self) -> list[str]:
        """The base key of each shard, in :func:`shard_index`'s order."""
        return [shard.base for shard in self.shards]

    def add_then(self, key: bytes, tail: LuaTail) -> tuple[bool, Any]:
        """The :meth:`add_then` of *key*'s shard: *tail*'s keys are in that shard's slot."""
        return self.shard_of(key).add_then(key, tail)

    def __contains__(self, key: bytes) -> bool:
        return key in self.shard_of(key)

    def discard(self, key: bytes) -> bool:
        """Forget *key* where it is kept (a set's shard only: a Bloom filter's raises
        :exc:`TypeError`)."""
        return self.shard_of(key).discard(key)

    def __len__(self) -> int:
        return sum(len(shard) for shard in self.shards)

    def generation_stats(self) -> list[dict[str, float]]:
        """Each live generation holding entries in any shard, newest first."""
        merged: dict[int, dict[str, float]] = {}
        for shard in self.shards:
            for generation in shard.generation_stats():
                number = int(generation["generation"])
                if number in merged:
                    merged[number]["entries"] += generation["entries"]
                else:
                    merged[number] = dict(generation)
        return [merged[number] for number in sorted(merged, reverse=True)]

    def stats(self) -> dict[str, float]:
        """The shards' figures added up; ratios and rates are the fullest shard's."""
        each = [shard.stats() for shard in self.shards]
        stats: dict[str, float] = {}
        for name in each[0]:
            values = [shard_stats[name] for shard_stats in each]
            if name in ("fill_ratio", "false_positive_rate", "generations"):
                stats[name] = max(values)
            else:
                stats[name] = sum(values)
        stats["redis_shards"] = len(self.shards)
        return stats

    def params(self) -> dict[str, Any]:
        params = self.shards[0].params()
        if self.capacity is not None and "capacity" in params:
            params["capacity"] = self.capacity
        params[SHARDS_PARAM] = len(self.shards)
        return params

    def close(self) -> None:
        for shard in self.shards:
            shard.close()

    def clear(self) -> None:
        """Delete every shard, and the store's signature."""
        for shard in self.shards:
            shard.clear()
        self.connection.call(self.connection.client.delete, self.signature_key)


def shard_capacity(capacity: int, count: int) -> int:
    """The capacity of each of *count* Bloom shards of a store for *capacity* keys."""
    return math.ceil(capacity / count)


def redis_store_whereabouts(store: RedisSeenStore) -> str:
    """Where a shared store's keys live, for its log line: ``""`` on one server,
    `` (on 127.0.0.1:7001)`` or `` (12 shards on 3 primaries: ...)`` on a cluster."""
    if isinstance(store, ShardedRedisSeenStore):
        primaries = store.primaries()
        count = len(store.shards)
        if not primaries:
            return f" ({count} shards)"
        return f" ({count} shards on {len(primaries)} primaries: {', '.join(primaries)})"
    node = store.connection.node_of(store.signature_key)
    return f" (on {node})" if node else ""


#: The shared seen stores, for ``isinstance``.
REDIS_SEEN_STORES = (RedisSetSeenStore, RedisBloomSeenStore, ShardedRedisSeenStore)

RedisSeenStore = RedisSetSeenStore | RedisBloomSeenStore | ShardedRedisSeenStore
