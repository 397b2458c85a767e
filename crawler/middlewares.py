"""The dedup middlewares:

* :class:`FrontierMiddleware` tells the URL dupefilter when Scrapy is done with a request;
* :class:`ItemPageMiddleware` records the page each item came from, for the content level;
* :class:`LearnedRulesMiddleware` drops a queued request that a URL rule learned since
  makes a repeat;
* :class:`RecrawlMiddleware` asks whether a page due again changed (``DEDUP_RECRAWL``).

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
items are safe. Before that, as its items leave the pipelines, it sends
:data:`crawler.signals.request_items_settled` with how many of them, from the
first, have: scheduled again after a kill, the request carries that number in
:data:`META_ITEMS_SETTLED`, and so many items of its callback's output are left
out (they are in the feed already), its requests not. That assumes a callback
yields a page's items in the same order each time, as a callback that reads them
off the page does. An item that a later spider middleware filters out never
reaches the pipelines: its request stays unfinished, and a restart crawls it
again.
"""

from __future__ import annotations

import functools
import logging
import weakref
from typing import TYPE_CHECKING, Any, Protocol

from itemadapter import ItemAdapter, is_item
from scrapy import Request
from scrapy import signals as scrapy_signals
from scrapy.exceptions import DontCloseSpider, IgnoreRequest, NotConfigured
from scrapy.utils.asyncio import call_later

from crawler import defaults, signals
from crawler.audit import AuditLog
from crawler.content.configuration import page_fields_from_settings
from crawler.content.item_pages import ItemPage, ItemPages, item_pages
from crawler.log_once import LogOnce
from crawler.redis.connection import RedisUnavailable
from crawler.url.configuration import check_url_state, recrawl_for
from crawler.url.request_meta import META_HELD, META_ITEMS_SETTLED, META_UNCHECKED

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Iterable, Iterator

    from scrapy.crawler import Crawler
    from scrapy.http import Response
    from typing_extensions import Self

    from crawler.url.recrawl import Recrawl

logger = logging.getLogger(__name__)


class _Parent:
    """A request whose callback output is being consumed."""

    __slots__ = (
        "child_held_back",
        "items_passed",
        "items_reported",
        "items_seen",
        "output_consumed",
        "position_of",
        "request",
        "settled_positions",
        "unscheduled_children",
        "unsettled_items",
    )

    def __init__(self, request: Request) -> None:
        self.request = request
        self.unscheduled_children = 0
        self.unsettled_items = 0
        self.output_consumed = False
        self.child_held_back = False
        #: items of the output so far, those left out included
        self.items_seen = 0
        #: the position in the output of each item passed on, by ``id()``
        self.position_of: dict[int, int] = {}
        self.settled_positions: set[int] = set()
        #: how many items, from the first, are known to have left the pipelines
        self.items_reported = int(request.meta.get(META_ITEMS_SETTLED, 0))
        self.items_passed = False

    def settled_prefix(self) -> int:
        """How many items, from the first, have left the pipelines."""
        prefix = self.items_reported
        while prefix in self.settled_positions:
            prefix += 1
        return prefix


class FrontierMiddleware:
    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        self._parent_of: weakref.WeakKeyDictionary[Request, _Parent] = weakref.WeakKeyDictionary()
        self._parent_of_items: weakref.WeakKeyDictionary[Response, _Parent] = (
            weakref.WeakKeyDictionary()
        )
        self._scheduled_children: list[tuple[_Parent, Request]] = []
        #: whether this instance follows scheduled requests: Scrapy builds one instance as a
        #: spider middleware, which has children to follow, and another as a downloader
        #: middleware, which never has; a receiver of request_scheduled costs every request
        self._following_children = False
        signals.connect_item_left(crawler, self._item_left)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        # The middlewares are built before the spider opens, the dupefilter after: a
        # damaged URL state directory, or a shared store this crawl cannot use, stops the
        # crawl here, as a bad setting does.
        check_url_state(crawler.settings, crawler.spidercls.name)
        return cls(crawler)

    def _finished(self, request: Request) -> None:
        self.crawler.signals.send_catch_log(signal=signals.request_finished, request=request)

    def _track(self, response: Response, parent: _Parent, output: Any) -> bool:
        """Follow *output* of *parent*'s callback; whether it goes on (an item written
        before the last run was killed does not)."""
        if isinstance(output, Request):
            if not self._following_children:
                self._following_children = True
                self.crawler.signals.connect(
                    self._child_scheduled, signal=scrapy_signals.request_scheduled
                )
            parent.unscheduled_children += 1
            self._parent_of[output] = parent
            return True
        if output is None:
            return True
        position = parent.items_seen
        parent.items_seen += 1
        if position < parent.items_reported:
            self._left_out(parent.request)
            return False
        parent.unsettled_items += 1
        parent.items_passed = True
        parent.position_of[id(output)] = position
        self._parent_of_items[response] = parent
        return True

    def _left_out(self, request: Request) -> None:
        assert self.crawler.stats is not None
        self.crawler.stats.inc_value("dedup/url/resumed_items_skipped")
        logger.debug(
            "Item of %(request)s left out: the previous run, killed before the request "
            "finished, had written it",
            {"request": request},
        )

    def _output_consumed(self, parent: _Parent) -> None:
        parent.output_consumed = True
        self._finish_if_settled(parent)

    def _item_left(self, item: Any = None, response: Response | None = None, **kwargs: Any) -> None:
        parent = self._parent_of_items.get(response) if response is not None else None
        if parent is None:
            return
        position = parent.position_of.pop(id(item), None)
        if position is not None:
            parent.settled_positions.add(position)
        # The feed exports (an extension, connected to this signal before any
        # middleware) have written the item: recording it now, in the same step,
        # leaves a kill no time between the two.
        parent.unsettled_items -= 1
        self._finish_if_settled(parent)

    def _finish_if_settled(self, parent: _Parent) -> None:
        if (
            parent.output_consumed
            and not parent.unsettled_items
            and not parent.unscheduled_children
            # a child neither recorded nor scheduled (Redis away): left unfinished, the
            # parent is crawled again and finds it again
            and not parent.child_held_back
        ):
            self._finished(parent.request)
            return
        if not parent.items_passed:
            return
        prefix = parent.settled_prefix()
        if prefix > parent.items_reported:
            parent.settled_positions.difference_update(range(parent.items_reported, prefix))
            parent.items_reported = prefix
            self.crawler.signals.send_catch_log(
                signal=signals.request_items_settled, request=parent.request, items=prefix
            )

    def _child_scheduled(self, request: Request) -> None:
        parent = self._parent_of.pop(request, None)
        if parent is None:
            return
        # request_scheduled is sent just before the scheduler records the child;
        # look at it once that synchronous call is over: the children scheduled
        # meanwhile together (a timer each was a third of the URL level's time on a
        # site of a few hundred links a page)
        if not self._scheduled_children:
            call_later(0, self._children_scheduled)
        self._scheduled_children.append((parent, request))

    def _children_scheduled(self) -> None:
        children, self._scheduled_children = self._scheduled_children, []
        for parent, child in children:
            self._child_settled(parent, child)

    def _child_settled(self, parent: _Parent, child: Request) -> None:
        if child.meta.get(META_HELD):  # scheduled once the dupefilter hands it back
            self._parent_of[child] = parent
            return
        parent.unscheduled_children -= 1
        if child.meta.get(META_UNCHECKED):
            parent.child_held_back = True
        self._finish_if_settled(parent)

    # Spider middleware

    def process_spider_output(self, response: Response, result: Iterable[Any]) -> Iterator[Any]:
        parent = _Parent(response.request)  # type: ignore[arg-type]
        try:
            for output in result:
                if self._track(response, parent, output):
                    yield output
        finally:
            self._output_consumed(parent)

    async def process_spider_output_async(
        self, response: Response, result: AsyncIterator[Any]
    ) -> AsyncIterator[Any]:
        parent = _Parent(response.request)  # type: ignore[arg-type]
        try:
            async for output in result:
                if self._track(response, parent, output):
                    yield output
        finally:
            self._output_consumed(parent)

    def process_spider_exception(self, response: Response, exception: Exception) -> None:
        self._finished(response.request)  # type: ignore[arg-type]

    # Downloader middleware: the download failed after any retries, or a
    # downloader middleware dropped the request (IgnoreRequest).

    def process_exception(self, request: Request, exception: Exception) -> None:
        self._finished(request)


class ItemPageMiddleware:
    """Record the page each item came from (:mod:`crawler.content.item_pages`), for the content
    level to read when an item holds no page or text of its own.

    * the first such item of a callback's output is recorded with the response's body and
      charset: its page's only item, until the output yields another one;
    * from a second item on, each is recorded with its place in the output, and the
      first one too if the content pipeline has not taken it yet (a callback that waits
      between two items, ``await``-ing something, may have its first item checked on the
      page);
    * items with a ``DEDUP_HTML_FIELD`` or ``DEDUP_TEXT_FIELD`` field are not recorded;
    * nothing is added to the items, and the output passes as it comes.

    The add-on enables it with the content level; by hand::

        SPIDER_MIDDLEWARES = {"crawler.middlewares.ItemPageMiddleware": 950}
    """

    def __init__(self, crawler: Crawler) -> None:
        self.pages = item_pages(crawler)
        self.page_fields = page_fields_from_settings(crawler.settings)
        signals.connect_item_left(crawler, self._item_left)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        switch = defaults.switched_off(crawler.settings, "DEDUP_CONTENT_ENABLED")
        if switch:
            raise NotConfigured(f"{switch} is False")
        return cls(crawler)

    def _item_left(self, item: Any = None, **kwargs: Any) -> None:
        self.pages.forget(item)  # left before the content pipeline took its page

    def process_spider_output(self, response: Response, result: Iterable[Any]) -> Iterator[Any]:
        items = _ItemsOfOutput(response, self.pages, self.page_fields)
        for output in result:
            items.came(output)
            yield output

    async def process_spider_output_async(
        self, response: Response, result: AsyncIterator[Any]
    ) -> AsyncIterator[Any]:
        items = _ItemsOfOutput(response, self.pages, self.page_fields)
        async for output in result:
            items.came(output)
            yield output


class _ItemsOfOutput:
    """The items without a page of one callback's output so far."""

    def __init__(self, response: Response, pages: ItemPages, page_fields: tuple[str, ...]) -> None:
        self.response = response
        self.pages = pages
        self.page_fields = page_fields
        self.items = 0
        self.first: Any = None

    def came(self, output: Any) -> None:
        """Record the page of *output*, if it is an item without one; the redirects that led
        to the page of an item that holds it."""
        # a request is no item, and is_item asks every kind of item it knows
        if isinstance(output, Request) or not is_item(output):
            return
        url = self.response.url
        adapter = ItemAdapter(output)
        if any(field in adapter for field in self.page_fields):
            # response.text, decoded once by Scrapy: the worker can read the body instead
            text = getattr(self.response, "_cached_ubody", None)
            if text is not None and adapter.get(self.page_fields[0]) is text:
                page = ItemPage(
                    url,
                    0,
                    encoding=getattr(self.response, "encoding", None),
                    redirected_from=self.redirected_from,
                    html_text=text,
                    html_body=self.response.body,
                )
                self.pages.put(output, page)
            elif self.redirected_from:
                self.pages.put(output, ItemPage(url, 0, redirected_from=self.redirected_from))
            return
        index, self.items = self.items, self.items + 1
        if index == 0:
            self.first = output
            encoding = getattr(self.response, "encoding", None)
            page = ItemPage(url, 0, self.response.body, encoding, self.redirected_from)
            self.pages.put(output, page)
            return
        if self.first is not None:  # it shares its page after all
            self.pages.revise(self.first, ItemPage(url, 0, redirected_from=self.redirected_from))
            self.first = None
        self.pages.put(output, ItemPage(url, index, redirected_from=self.redirected_from))

    @functools.cached_property
    def redirected_from(self) -> tuple[str, ...]:
        request = getattr(self.response, "request", None)
        redirects = request.meta.get("redirect_urls") if request is not None else None
        return tuple(str(url) for url in redirects or ())


class FiltersBeforeDownload(Protocol):
    """What :class:`LearnedRulesMiddleware` asks of the URL dupefilter."""

    def filtered_before_download(self, request: Request) -> bool: ...


class LearnedRulesMiddleware:
    """Downloader middleware: drops a request that a URL rule learned after it was
    scheduled makes a repeat (``IgnoreRequest``, counted in
    ``dedup/url/learned/dropped_before_download``). The add-on enables it; it does nothing
    without :class:`~crawler.dupefilters.URLDupeFilter`."""

    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        self.dupefilter: FiltersBeforeDownload | None = None
        crawler.signals.connect(self._dupefilter_opened, signal=signals.url_dupefilter_opened)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls(crawler)

    def _dupefilter_opened(self, dupefilter: FiltersBeforeDownload) -> None:
        self.dupefilter = dupefilter

    def process_request(self, request: Request) -> None:
        if self.dupefilter is not None and self.dupefilter.filtered_before_download(request):
            self.crawler.stats.inc_value("dedup/url/learned/dropped_before_download")
            raise IgnoreRequest(f"a learned URL rule makes {request.url} a repeat")


class RecrawlMiddleware:
    """Downloader middleware of ``DEDUP_RECRAWL`` (:mod:`crawler.url.recrawl`): a page due
    again is asked for with the validators its server sent; the answer is recorded and
    moves the page's interval.

    What a callback sees:

    * ``304 Not Modified``: nothing; the callback is not called (its errback gets
      :class:`crawler.url.recrawl.NotModified`, an ``IgnoreRequest``), counted in
      ``dedup/recrawl/not_modified``;
    * a ``200``: the page, as always; its item is dropped (or marked) by the content
      pipeline when its main text is the one recorded (``dedup/recrawl/unchanged``);
      without the content level, a body identical to the one recorded is not passed on
      (:class:`crawler.url.recrawl.Unchanged`);
    * when the spider is idle, the pages that are due but that no link led to in this run
      (their only links may be on pages that did not change) are requested with the
      spider's default callback (``parse``), at most a thousand at a time.
    """

    def __init__(self, crawler: Crawler, recrawl: Recrawl) -> None:
        self.crawler = crawler
        self.recrawl = recrawl
        self._warn_unwritable = LogOnce(logger, logging.ERROR)
        crawler.signals.connect(self._spider_idle, signal=scrapy_signals.spider_idle)
        audit_path = defaults.audit_path_from_settings(crawler.settings)
        if audit_path is not None:
            audit = AuditLog(audit_path)
            recrawl.audit = audit.write
            crawler.signals.connect(audit.close, signal=scrapy_signals.spider_closed)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        recrawl = recrawl_for(crawler)
        if recrawl is None:
            raise NotConfigured  # DEDUP_RECRAWL off: said nowhere, as Scrapy's HTTP cache
        if recrawl.store.shared:
            # records shared with other rules stop the crawl here, as a bad setting does
            recrawl.open()
        return cls(crawler, recrawl)

    def process_request(self, request: Request) -> None:
        self.recrawl.conditional_headers(request)

    def process_response(self, request: Request, response: Response) -> Response:
        try:
            self.recrawl.fetched(request, response)
        except IgnoreRequest:
            # raised here, it reaches no downloader middleware's process_exception
            self.crawler.signals.send_catch_log(signal=signals.request_finished, request=request)
            raise
        except (OSError, RedisUnavailable) as exc:
            self.crawler.stats.inc_value("dedup/recrawl/unrecorded")
            self._warn_unwritable(
                "Recrawl records cannot be written (DEDUP_STATE_DIR, or Redis): "
                "%(error)s; pages are passed on as if new meanwhile "
                "(dedup/recrawl/unrecorded)",
                {"error": exc},
            )
        return response

    def _spider_idle(self) -> None:
        assert self.crawler.engine is not None
        requests = self.recrawl.due_requests()
        for request in requests:
            self.crawler.engine.crawl(request)
        if requests:
            raise DontCloseSpider
