"""A seen set used as a :class:`~crawler.url.stores.SeenStore` that keeps nothing across runs."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from crawler.url.stores.holding import KeysHeldElsewhere

if TYPE_CHECKING:
    from pathlib import Path

    from crawler.redis.connection import RedisConnection
    from crawler.url.stores import SeenSet


class UnpersistedSeenStore(KeysHeldElsewhere):
    """*seen* (a :class:`~crawler.url.stores.SeenSet`) kept in memory only: opening and
    closing it do nothing, and a crawl that ends forgets it. *signature* is kept for
    those who ask (nothing checks it)."""

    shared = False
    connection: RedisConnection | None = None
    state_dir: Path | None = None

    def __init__(self, seen: SeenSet, signature: dict[str, Any] | None = None) -> None:
        self.seen = seen
        self.signature = dict(signature or {})

    def holder(self) -> SeenSet:
        return self.seen

    def open(self) -> None:
        pass

    def close(self) -> None:
        pass

    def clear(self) -> None:
        pass

    def whereabouts(self) -> str:
        return "in memory"
