"""A Redis seen store used as a :class:`~crawler.url.stores.SeenStore`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from crawler.redis.connection import redact
from crawler.url.stores.redis_shards import redis_store_whereabouts

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from pathlib import Path

    from crawler.url.stores.redis_shards import RedisSeenStore


class SharedSeenStore:
    """*store* (one of :data:`~crawler.url.stores.redis_shards.REDIS_SEEN_STORES`), opened
    with *signature*: the rules its keys were made with, claimed by the first worker and
    checked by the others."""

    shared = True
    state_dir: Path | None = None

    def __init__(self, store: RedisSeenStore, signature: Mapping[str, Any]) -> None:
        self.store = store
        self.signature = dict(signature)
        self.connection = store.connection
        self.stats_name = store.kind
        #: the Redis key (or key prefix) the store lives at
        self.base = store.base

    def open(self) -> None:
        self.store.open(self.signature)

    def add(self, key: bytes, on_new: Callable[[], object] | None = None, /) -> bool:
        if not self.store.add(key):
            return False
        if on_new is not None:
            on_new()
        return True

    def __contains__(self, key: bytes) -> bool:
        return key in self.store

    def __len__(self) -> int:
        return len(self.store)

    def stats(self) -> dict[str, float]:
        return self.store.stats()

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
