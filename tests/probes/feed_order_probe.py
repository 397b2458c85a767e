"""A Scrapy extension for crawl tests: is an item in the feed when its request finishes?

Enabled with ``-s EXTENSIONS={"tests.probes.feed_order_probe.FeedOrderProbe": 0}`` on a crawl
writing one JSON lines feed (``-o``). When :data:`crawler.signals.request_finished` is
sent for a request whose item was scraped, the feed file must hold that item's line
already: a kill right after the request is recorded finished must not lose the item.
Stats: ``test/finished_after_item`` (requests checked), ``test/finished_before_feed``
(requests recorded finished while their item was not yet in the file).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from scrapy import signals

from crawler import signals as dedup_signals

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.crawler import Crawler
    from scrapy.http import Response


class FeedOrderProbe:
    def __init__(self, crawler: Crawler) -> None:
        self.stats = crawler.stats
        (self.feed,) = (Path(uri) for uri in crawler.settings.getdict("FEEDS"))
        self.scraped: dict[int, str] = {}
        crawler.signals.connect(self._item_scraped, signal=signals.item_scraped)
        crawler.signals.connect(self._finished, signal=dedup_signals.request_finished)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> FeedOrderProbe:
        return cls(crawler)

    def _item_scraped(self, item: Any, response: Response) -> None:
        self.scraped[id(response.request)] = item["url"]

    def _finished(self, request: Request) -> None:
        url = self.scraped.pop(id(request), None)
        if url is None:
            return
        self.stats.inc_value("test/finished_after_item")
        written = {json.loads(line)["url"] for line in self.feed.read_text("utf-8").splitlines()}
        if url not in written:
            self.stats.inc_value("test/finished_before_feed")
