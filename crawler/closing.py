"""Close a running crawl from a dedup component that cannot go on."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from scrapy import signals
from scrapy.exceptions import CloseSpider
from scrapy.utils.defer import deferred_from_coro

if TYPE_CHECKING:
    from collections.abc import Mapping

    from scrapy.crawler import Crawler

__all__ = ["SpiderCloser", "close_once_opened", "close_spider"]


def close_spider(crawler: Crawler, reason: str) -> None:
    """Ask *crawler*'s engine to close the spider with *reason* (its ``finish_reason``);
    nothing when no crawl is running (a component used on its own)."""
    try:
        engine = crawler.engine
    except RuntimeError:
        return
    if engine is not None:
        deferred_from_coro(engine.close_spider_async(reason=reason))


def close_once_opened(crawler: Crawler, reason: str) -> bool:
    """Close the spider with *reason* as soon as it has opened, before it crawls: for a
    component that cannot start in the scheduler's ``open`` (there, a ``CloseSpider``
    leaves Scrapy's scraper unopened, and its close then fails with "Scraper slot not
    assigned" under a traceback). ``False`` when no crawl is running (a component used on
    its own): the caller raises its error instead."""
    try:
        engine = crawler.engine
    except RuntimeError:
        return False
    if engine is None:
        return False

    def refuse(spider: Any) -> None:
        raise CloseSpider(reason)

    crawler.signals.connect(refuse, signal=signals.spider_opened, weak=False)
    return True


class SpiderCloser:
    """Closes *crawler*'s spider with *reason* once, for a component that can no longer
    go on: the first call says why at ERROR on *logger* and closes; the next ones do
    nothing (the spider is closing)."""

    def __init__(self, crawler: Crawler, reason: str, logger: logging.Logger) -> None:
        self.crawler = crawler
        self.reason = reason
        self.logger = logger
        self.closing = False

    def close(self, message: str, args: Mapping[str, Any], **log_options: Any) -> None:
        if self.closing:
            return
        self.closing = True
        self.logger.error(message, args, **log_options)
        close_spider(self.crawler, self.reason)
