"""A Redis seen store used as a :class:`~crawler.url.stores.SeenStore`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from crawler.redis.connection import redact
from crawler.url.stores.holding import KeysHeldElsewhere
from crawler.url.stores.redis_shards import redis_store_whereabouts

if TYPE_CHECKING:
    from collections.abc import Mapping
    from pathlib import Path

    from crawler.url.stores.redis_add_then import LuaTail
    from crawler.url.stores.redis_shards import RedisSeenStore


class SharedSeenStore(KeysHeldElsewhere):
    """*store* (one of :data:`~crawler.url.stores.redis_shards.REDIS_SEEN_STORES`), opened
    with *signature*: the rules its keys were made with, claimed by the first worker and
    checked by the others."""

    shared = True
    state_dir: Path | None = None

    def __init__(self, store: RedisSeenStore, signature: Mapping[str, Any]) -> None:
        self.store = store
        self.signature = dict(signature)
        self.connection = store.connection
        #: the Redis key (or key prefix) the store lives at
        self.base = store.base

    def open(self) -> None:
        self.store.open(self.signature)

    def holder(self) -> RedisSeenStore:
        return self.store

    def add_then(self, key: bytes, tail: LuaTail) -> tuple[bool, Any]:
        """Remember *key* and, when it was seen, run *tail* in the same atomic call
        (:meth:`RedisSetSeenStore.add_then`): whether it was new, and *tail*'s reply."""
        return self.store.add_then(key, tail)

    def close(self) -> None:
        self.store.close()

    def clear(self) -> None:
        """Empty the shared store, for every worker."""
        self.store.clear()

    def whereabouts(self) -> str:
        return (
            f"in Redis at {redact(self.connection.url)}, key {self.base}"
            f"{redis_store_whereabouts(self.store)}"
        )
