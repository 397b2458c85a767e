"""Close a running crawl from a dedup component that cannot go on."""

from __future__ import annotations

from typing import TYPE_CHECKING

from scrapy.utils.defer import deferred_from_coro

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

__all__ = ["close_spider"]


def close_spider(crawler: Crawler, reason: str) -> None:
    """Ask *crawler*'s engine to close the spider with *reason* (its ``finish_reason``);
    nothing when no crawl is running (a component used on its own)."""
    try:
        engine = crawler.engine
    except RuntimeError:
        return
    if engine is not None:
        deferred_from_coro(engine.close_spider_async(reason=reason))
