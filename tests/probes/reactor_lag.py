"""A Scrapy extension for crawl tests: how long the reactor went without running a timer.

Enabled with ``-s EXTENSIONS={"tests.probes.reactor_lag.ReactorLag": 0}``; the longest delay of a
timer set every 50 ms, beyond those 50 ms, is in the stat ``test/reactor_lag_max`` (s).
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from scrapy import signals
from twisted.internet import task

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

INTERVAL = 0.05


class ReactorLag:
    def __init__(self, crawler: Crawler) -> None:
        self.stats = crawler.stats
        self.last = 0.0
        self.loop = task.LoopingCall(self._tick)
        crawler.signals.connect(self._start, signal=signals.engine_started)
        crawler.signals.connect(self._stop, signal=signals.spider_closed)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> ReactorLag:
        return cls(crawler)

    def _start(self) -> None:
        self.last = time.monotonic()
        self.loop.start(INTERVAL, now=False)

    def _tick(self) -> None:
        now = time.monotonic()
        self.stats.max_value("test/reactor_lag_max", round(now - self.last - INTERVAL, 3))
        self.last = now

    def _stop(self) -> None:
        if self.loop.running:
            self.loop.stop()
