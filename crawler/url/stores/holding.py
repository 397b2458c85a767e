"""What the :class:`~crawler.url.stores.SeenStore` classes answer alike: by asking the set
or the Redis store that holds their keys."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Callable

    from crawler.url.stores import SeenSet
    from crawler.url.stores.redis_shards import RedisSeenStore


class KeysHeldElsewhere:
    """A seen store whose keys :meth:`holder` keeps: ``in``, ``len``, the stats, their
    name, and :meth:`add` running its hook after the holder recorded a new key."""

    def holder(self) -> SeenSet | RedisSeenStore:
        raise NotImplementedError

    @property
    def stats_name(self) -> str:
        return self.holder().kind

    def add(self, key: bytes, on_new: Callable[[], object] | None = None, /) -> bool:
        if not self.holder().add(key):
            return False
        if on_new is not None:
            on_new()
        return True

    def __contains__(self, key: bytes) -> bool:
        return key in self.holder()

    def __len__(self) -> int:
        return len(self.holder())

    def stats(self) -> dict[str, Any]:
        return self.holder().stats()
