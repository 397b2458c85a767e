"""Requests held back while a shared store fails for a moment.

The dupefilter answers on the reactor's thread, which must not wait for a server that
went away. A request met while Redis fails (and has failed for less than
``DEDUP_REDIS_FAULT_BUDGET``) is held here, neither recorded nor scheduled, and handed to
the engine again a moment later: one at a time, the first doubling as the probe, and the
rest once one gets through. The spider is kept open while requests are held.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from scrapy import signals
from scrapy.exceptions import DontCloseSpider
from scrapy.utils.asyncio import call_later

from crawler.url.request_meta import META_HELD

if TYPE_CHECKING:
    from scrapy import Request, Spider
    from scrapy.crawler import Crawler

#: Seconds before held requests are first handed back; the pause doubles while the
#: server fails, up to :data:`LONGEST_PAUSE`.
FIRST_PAUSE = 0.05
LONGEST_PAUSE = 0.8
#: Requests handed back in one turn of the reactor (each costs the scheduler's Redis
#: calls: 700 at once held a crawl's reactor 0.9 s).
BATCH = 50


class HeldRequests:
    """The requests held while a store fails, and the timer that hands them back."""

    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        self._requests: list[Request] = []
        self._pause = FIRST_PAUSE
        self._timer: Any = None
        crawler.signals.connect(self._keep_spider_open, signal=signals.spider_idle)

    def __len__(self) -> int:
        return len(self._requests)

    def hold(self, request: Request) -> None:
        # its parent is not finished while it is held: a kill meanwhile loses nothing,
        # the parent is crawled again and finds it again
        request.meta[META_HELD] = True
        self._requests.append(request)
        if self._timer is None:
            self._timer = call_later(self._pause, self._hand_back)

    def _hand_back(self) -> None:
        self._timer = None
        requests, self._requests = self._requests, []
        self._pause = min(self._pause * 2, LONGEST_PAUSE)  # if the first is held again
        engine = self.crawler.engine
        assert engine is not None  # the timer is cancelled when the spider closes
        for position, request in enumerate(requests):
            if position == BATCH:  # the rest in the next turn
                self._requests.extend(requests[position:])
                self._pause = FIRST_PAUSE
                self._timer = call_later(0, self._hand_back)
                return
            del request.meta[META_HELD]
            engine.crawl(request)  # the scheduler asks the dupefilter again, at once
            if self._requests:  # held again: the store still fails
                self._requests.extend(requests[position + 1 :])
                return
        self._pause = FIRST_PAUSE

    def release_all(self) -> list[Request]:
        """Stop handing requests back (the spider closes): the requests still held."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        requests, self._requests = self._requests, []
        return requests

    def _keep_spider_open(self, spider: Spider) -> None:
        if self._requests:
            raise DontCloseSpider
