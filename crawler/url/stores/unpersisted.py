"""A seen set used as a :class:`~crawler.url.stores.SeenStore` that keeps nothing across runs."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

    from crawler.redis.connection import RedisConnection
    from crawler.url.stores import SeenSet


class UnpersistedSeenStore:
    """*seen* (a :class:`~crawler.url.stores.SeenSet`) kept in memory only: opening and
    closing it do nothing, and a crawl that ends forgets it. *signature* is kept for
    those who ask (nothing checks it)."""

    shared = False
    connection: RedisConnection | None = None
    state_dir: Path | None = None

    def __init__(self, seen: SeenSet, signature: dict[str, Any] | None = None) -> None:
        self.seen = seen
        self.signature = dict(signature or {})
        self.stats_name = seen.kind

    def open(self) -> None:
        pass

    def add(self, key: bytes, on_new: Callable[[], object] | None = None, /) -> bool:
        if not self.seen.add(key):
            return False
        if on_new is not None:
            on_new()
        return True

    def __contains__(self, key: bytes) -> bool:
        return key in self.seen

    def __len__(self) -> int:
        return len(self.seen)

    def stats(self) -> dict[str, float]:
        return self.seen.stats()

    def close(self) -> None:
        pass

    def clear(self) -> None:
        pass

    def whereabouts(self) -> str:
        return "in memory"
