"""Tell the URL dupefilter when Scrapy is done with a request.

``FrontierMiddleware`` is both a spider middleware and a downloader
middleware (the add-on enables it as both). It sends
:data:`crawler.signals.request_finished` for a request once

* its callback's output was consumed, every request in that output reached
  the scheduler (Scrapy consumes callback output ahead of processing it, so
  the end of the output alone is too early: a kill then would lose the
  requests not yet scheduled) **and** every item in it left the item
  pipelines (scraped, and written by the feed exports, which write on the
  same signal; or dropped, or failed); or
* its download failed for good, or a downloader middleware dropped it.

A request with a child the dupefilter could neither check nor schedule
(Redis away under ``DEDUP_REDIS_ON_ERROR = "stop"``) is never reported
finished, so it is crawled again and finds that child again.

Requests not finished when a crawl is killed are scheduled again at the next
start, so a request is never reported finished before its children and its
items are safe. An item that a later spider middleware filters out never
reaches the pipelines: its request stays unfinished, and a restart crawls it
again.
"""

from __future__ import annotations

import weakref
from typing import TYPE_CHECKING, Any

from scrapy import Request
from scrapy import signals as scrapy_signals
from scrapy.utils.asyncio import call_later

from crawler import signals

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Iterable, Iterator

    from scrapy.crawler import Crawler
    from scrapy.http import Response
    from typing_extensions import Self


#: Request meta flag the dupefilter sets on a request it could not check
#: (Redis away, ``DEDUP_REDIS_ON_ERROR = "stop"``) and did not schedule.
META_UNCHECKED = "dedup_unchecked"


class _Parent:
    """A request whose callback output is being consumed."""

    __slots__ = (
        "child_held_back",
        "output_consumed",
        "request",
        "unscheduled_children",
        "unsettled_items",
    )

    def __init__(self, request: Request) -> None:
        self.request = request
        self.unscheduled_children = 0
        self.unsettled_items = 0
        self.output_consumed = False
        self.child_held_back = False


class FrontierMiddleware:
    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        self._parent_of: weakref.WeakKeyDictionary[Request, _Parent] = weakref.WeakKeyDictionary()
        self._parent_of_items: weakref.WeakKeyDictionary[Response, _Parent] = (
            weakref.WeakKeyDictionary()
        )
        crawler.signals.connect(self._child_scheduled, signal=scrapy_signals.request_scheduled)
        for item_left in (
            scrapy_signals.item_scraped,
            scrapy_signals.item_dropped,
            scrapy_signals.item_error,
        ):
            crawler.signals.connect(self._item_left, signal=item_left)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        # The middlewares are built before the spider opens, the dupefilter after: a
        # damaged URL state directory, or a shared store this crawl cannot use, stops the
        # crawl here, as a bad setting does.
        from crawler.dupefilters import check_url_state  # it imports this module

        check_url_state(crawler.settings, crawler.spidercls.name)
        return cls(crawler)

    def _finished(self, request: Request) -> None:
        self.crawler.signals.send_catch_log(signal=signals.request_finished, request=request)

    def _track(self, response: Response, parent: _Parent, output: Any) -> None:
        if isinstance(output, Request):
            parent.unscheduled_children += 1
            self._parent_of[output] = parent
        elif output is not None:
            parent.unsettled_items += 1
            self._parent_of_items[response] = parent

    def _output_consumed(self, parent: _Parent) -> None:
        parent.output_consumed = True
        self._finish_if_settled(parent)

    def _item_left(self, response: Response | None = None, **kwargs: Any) -> None:
        parent = self._parent_of_items.get(response) if response is not None else None
        if parent is not None:
            # after the other receivers of this signal: the feed exports write the item
            call_later(0, self._item_settled, parent)

    def _item_settled(self, parent: _Parent) -> None:
        parent.unsettled_items -= 1
        self._finish_if_settled(parent)

    def _finish_if_settled(self, parent: _Parent) -> None:
        if (
            parent.output_consumed
            and not parent.unscheduled_children
            and not parent.unsettled_items
        ):
            self._finish_parent(parent)

    def _child_scheduled(self, request: Request) -> None:
        parent = self._parent_of.pop(request, None)
        if parent is None:
            return
        # request_scheduled is sent just before the scheduler records the child;
        # look at it once that synchronous call is over.
        call_later(0, self._child_settled, parent, request)

    def _child_settled(self, parent: _Parent, child: Request) -> None:
        parent.unscheduled_children -= 1
        if child.meta.get(META_UNCHECKED):
            parent.child_held_back = True
        self._finish_if_settled(parent)

    def _finish_parent(self, parent: _Parent) -> None:
        if parent.child_held_back:
            # a child was neither recorded nor scheduled (Redis away): left
            # unfinished, the parent is crawled again and finds it again
            return
        self._finished(parent.request)

    # Spider middleware

    def process_spider_output(self, response: Response, result: Iterable[Any]) -> Iterator[Any]:
        parent = _Parent(response.request)  # type: ignore[arg-type]
        try:
            for output in result:
                self._track(response, parent, output)
                yield output
        finally:
            self._output_consumed(parent)

    async def process_spider_output_async(
        self, response: Response, result: AsyncIterator[Any]
    ) -> AsyncIterator[Any]:
        parent = _Parent(response.request)  # type: ignore[arg-type]
        try:
            async for output in result:
                self._track(response, parent, output)
                yield output
        finally:
            self._output_consumed(parent)

    def process_spider_exception(self, response: Response, exception: Exception) -> None:
        self._finished(response.request)  # type: ignore[arg-type]

    # Downloader middleware: the download failed after any retries, or a
    # downloader middleware dropped the request (IgnoreRequest).

    def process_exception(self, request: Request, exception: Exception) -> None:
        self._finished(request)
