"""``DedupLogStats``: what dedup did, logged periodically during a crawl, like
Scrapy's ``LogStats``.

Enabled by the add-on; by hand::

    EXTENSIONS = {"crawler.extensions.DedupLogStats": 0}
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from scrapy import Spider, signals
from scrapy.exceptions import NotConfigured
from scrapy.utils.asyncio import AsyncioLoopingCall, create_looping_call

from crawler import defaults
from crawler.content.configuration import action_from_settings

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from scrapy.statscollectors import StatsCollector
    from twisted.internet.task import LoopingCall
    from typing_extensions import Self

logger = logging.getLogger(__name__)


LINE = (
    "Dedup: filtered %(filtered)d of %(seen)d requests (%(share).1f%%, at "
    "%(request_rate)d requests/min); %(verb)s %(exact)d exact and %(near)d near "
    "duplicate items (at %(item_rate)d items/min)"
)
LINE_WITH_ITEM_KEYS = LINE.replace(
    " (at %(item_rate)d", ", dropped %(by_key)d items whose key was seen (at %(item_rate)d"
)


class DedupLogStats:
    """Log one INFO line every ``DEDUP_LOG_INTERVAL`` seconds (``None``: every
    ``LOGSTATS_INTERVAL``; ``0``: never), from the crawl's stats::

        Dedup: filtered 804 of 858 requests (93.7%, at 1200 requests/min); dropped 6 exact
        and 5 near duplicate items (at 30 items/min)

    * requests seen are the filtered ones (``dupefilter/filtered``) plus the
      scheduled ones (``scheduler/enqueued``); rates are per minute over the
      last interval, counts since the start;
    * items are counted by ``dedup/content/exact`` and ``dedup/content/near``
      ("marked" instead of "dropped" with ``DEDUP_CONTENT_ACTION = "mark"``),
      and ``dedup/item/dropped`` (``DEDUP_ITEM_KEY_FIELDS``) when there are any.

    The full summary comes once at close, from the dupefilter and the pipeline.
    """

    def __init__(self, stats: StatsCollector, interval: float, *, action: str = "drop") -> None:
        self.stats = stats
        self.interval = interval
        self.multiplier = 60.0 / interval
        self.verb = "marked" if action == "mark" else "dropped"
        self.task: AsyncioLoopingCall | LoopingCall | None = None
        self.filtered_before = 0
        self.duplicates_before = 0

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        settings = crawler.settings
        interval, setting = defaults.log_interval_from_settings(settings)
        if not interval:
            raise NotConfigured(f"{setting} is 0")
        assert crawler.stats is not None
        # checked by the content pipeline, when the content level is on
        content_off = defaults.switched_off(settings, "DEDUP_CONTENT_ENABLED")
        action = "drop" if content_off else action_from_settings(settings)
        extension = cls(crawler.stats, interval, action=action)
        crawler.signals.connect(extension.spider_opened, signal=signals.spider_opened)
        crawler.signals.connect(extension.spider_closed, signal=signals.spider_closed)
        return extension

    def spider_opened(self, spider: Spider) -> None:
        self.task = create_looping_call(self.log, spider)
        self.task.start(self.interval, now=False)

    def spider_closed(self, spider: Spider) -> None:
        if self.task is not None and self.task.running:
            self.task.stop()

    def log(self, spider: Spider | None = None) -> None:
        stats = self.stats
        filtered = stats.get_value("dupefilter/filtered", 0)
        enqueued = stats.get_value("scheduler/enqueued")
        if enqueued is None:  # scrapy-redis's scheduler counts under its own key
            enqueued = stats.get_value("scheduler/enqueued/redis", 0)
        seen = filtered + enqueued
        exact = stats.get_value("dedup/content/exact", 0)
        near = stats.get_value("dedup/content/near", 0)
        by_key = stats.get_value("dedup/item/dropped", 0)
        duplicates = exact + near + by_key
        message = LINE_WITH_ITEM_KEYS if by_key else LINE
        logger.info(
            message,
            {
                "filtered": filtered,
                "seen": seen,
                "share": 100 * filtered / seen if seen else 0.0,
                "request_rate": (filtered - self.filtered_before) * self.multiplier,
                "verb": self.verb,
                "exact": exact,
                "near": near,
                "by_key": by_key,
                "item_rate": (duplicates - self.duplicates_before) * self.multiplier,
            },
            extra={"spider": spider},
        )
        self.filtered_before = filtered
        self.duplicates_before = duplicates
