"""Crash-safe resume of a crawl whose request queue is its own: the frontier in the state
directory (:class:`~crawler.url.frontier.Frontier`), the requests it brings back at the next
start (:class:`ResumedRequests`), Scrapy's own queue discarded after a kill, and requests
serialized for the frontier's journal."""

from __future__ import annotations

import logging
import pickle
import shutil
from pathlib import Path
from typing import TYPE_CHECKING, Any

from scrapy import signals as scrapy_signals
from scrapy.utils.job import job_dir
from scrapy.utils.request import request_from_dict

from crawler import signals as dedup_signals
from crawler.url.configuration import keeps_local_frontier, state_dir_from_settings
from crawler.url.frontier import Frontier
from crawler.url.request_meta import META_ITEMS_SETTLED, META_KEY, is_frontier_middleware

if TYPE_CHECKING:
    from collections.abc import Callable

    from scrapy import Request, Spider
    from scrapy.crawler import Crawler
    from scrapy.settings import BaseSettings

__all__ = [
    "FrontierRecorder",
    "ResumedRequests",
    "discard_scheduler_queue",
    "frontier_middleware_enabled",
    "local_frontier",
    "request_to_dict",
]

# the dupefilter's own logger: where users and their log settings find its lines
logger = logging.getLogger("crawler.dupefilters")


def local_frontier(settings: BaseSettings, signature: dict[str, Any]) -> Frontier | None:
    """The crash-safe frontier in the state dir, for a crawl whose queue is its own.

    With Scrapy's own scheduler a crawl (or each worker sharing a Redis seen
    store) crawls the requests it schedules, so its state dir can record them.
    With a shared queue (scrapy-redis's scheduler) another worker may crawl
    them: the local record would bring them back twice;
    ``crawler.schedulers.LeasingScheduler`` keeps that queue safe instead.
    """
    state_dir = state_dir_from_settings(settings)
    if state_dir is None or not keeps_local_frontier(settings):
        return None
    frontier = Frontier(state_dir, signature)
    queue_dir = job_dir(settings)
    if queue_dir and frontier.stopped_uncleanly():
        discard_scheduler_queue(Path(queue_dir) / "requests.queue")
    return frontier


def discard_scheduler_queue(queue_dir: Path) -> None:
    """Remove Scrapy's request queue left by a run that did not stop cleanly, before the
    scheduler reads it: a kill can leave its files torn (the scheduler then fails on the
    first request it queues), and the frontier schedules again every request it held."""
    if not queue_dir.exists():
        return
    shutil.rmtree(queue_dir)
    logger.info(
        "Removed %(dir)s, Scrapy's request queue of a run that stopped uncleanly: the "
        "requests it held are scheduled again from the frontier journal",
        {"dir": queue_dir},
    )


def frontier_middleware_enabled(settings: BaseSettings) -> bool:
    """Whether ``FrontierMiddleware`` is enabled as a spider middleware (it reports a
    request finished once its callback's requests are all scheduled)."""
    return any(
        priority is not None and is_frontier_middleware(component)
        for component, priority in settings.getwithbase("SPIDER_MIDDLEWARES").items()
    )


def _spider_method_name(spider: Spider | None, function: Any) -> str | None:
    """The name under which *spider* has the bound method *function*, found
    without scanning every member of the spider; ``None`` if it is not one."""
    name = getattr(function, "__name__", None)
    if spider is None or name is None or getattr(function, "__self__", None) is not spider:
        return None
    same = getattr(spider, name, None)
    return name if getattr(same, "__func__", None) is function.__func__ else None


def request_to_dict(request: Request, spider: Spider | None) -> dict[str, Any]:
    """``request.to_dict(spider=spider)``, without the scan of the spider's
    members that Scrapy runs for every callback (~15 µs a request)."""
    callback, errback = request.callback, request.errback
    names = [
        _spider_method_name(spider, function) if callable(function) else function
        for function in (callback, errback)
    ]
    if any(callable(f) and n is None for f, n in zip((callback, errback), names, strict=True)):
        return request.to_dict(spider=spider)  # lambdas, other objects' methods: Scrapy decides
    request.callback, request.errback = names  # type: ignore[assignment]
    try:
        return request.to_dict()
    finally:
        request.callback, request.errback = callback, errback


class ResumedRequests:
    """The requests *frontier* holds as scheduled and never finished by the last run,
    scheduled again once the spider opens (:meth:`load` reads them, unless the last run
    stopped cleanly with Scrapy's queue saved: that queue holds them).

    Each one's key passes the dupefilter once (:meth:`passes`): the key may be recorded as
    seen by the run that was killed. Requests resumed are remembered (:meth:`resumed`), so
    that nothing drops them later as a repeat of their own first attempt. A request whose
    first items the frontier recorded as written carries their count
    (:data:`~crawler.url.request_meta.META_ITEMS_SETTLED`): they are not passed on again.
    """

    def __init__(self, crawler: Crawler, frontier: Frontier) -> None:
        self.crawler = crawler
        self.frontier = frontier
        #: serialized requests to schedule at spider open
        self.pending: list[bytes] = []
        self._passing: set[bytes] = set()
        self._resumed: set[bytes] = set()

    def load(self) -> None:
        pending, queue_persisted = self.frontier.open()
        if pending and not queue_persisted:
            self.pending = pending
            self.crawler.signals.connect(self.schedule, signal=scrapy_signals.spider_opened)

    def passes(self, key: bytes) -> bool:
        """Whether *key* is a resumed request's, met for the first time (then it passes)."""
        if key not in self._passing:
            return False
        self._passing.discard(key)
        return True

    def waiting(self, key: bytes) -> bool:
        """Whether *key* is a resumed request's, not yet met."""
        return key in self._passing

    def resumed(self, key: bytes | None) -> bool:
        return key in self._resumed

    def schedule(self, spider: Spider) -> None:
        """Schedule the requests :meth:`load` read (at spider open)."""
        engine = self.crawler.engine
        assert engine is not None
        logger.info(
            "Scheduling again %(count)d requests that were scheduled but not "
            "finished when the previous run stopped uncleanly",
            {"count": len(self.pending)},
            extra={"spider": spider},
        )
        for serialized in self.pending:
            request = request_from_dict(pickle.loads(serialized), spider=spider)
            key = request.meta[META_KEY]
            self._passing.add(key)
            self._resumed.add(key)
            settled_items = self.frontier.settled_items.get(key)
            if settled_items:
                request.meta[META_ITEMS_SETTLED] = settled_items
            engine.crawl(request)
        assert self.crawler.stats is not None
        self.crawler.stats.inc_value("dedup/url/resumed", len(self.pending))
        self.pending = []


class FrontierRecorder:
    """What URL dedup writes in the crash-safe *frontier*: each request it schedules, then
    that the request finished, or how many of its first items were written.

    * a request that cannot be serialized (a callback that is no spider method) is
      counted in ``dedup/url/unresumable`` and said once each: a kill would lose it;
    * a request is finished when :data:`crawler.signals.request_finished` says so, or,
      without ``FrontierMiddleware`` (said at spider open), once it leaves the downloader;
    * a write the disk refuses while recording a request finished or its items is handed
      to *unwritable* (the dupefilter closes the spider): the request stays unfinished,
      and a restart crawls it again. :meth:`scheduled` raises it to its caller instead,
      who holds the request back.
    """

    def __init__(
        self, crawler: Crawler, frontier: Frontier, unwritable: Callable[[OSError], None]
    ) -> None:
        self.crawler = crawler
        self.frontier = frontier
        self.unwritable = unwritable
        signals = crawler.signals
        signals.connect(self.finished, signal=dedup_signals.request_finished)
        signals.connect(self.items_settled, signal=dedup_signals.request_items_settled)
        if not frontier_middleware_enabled(crawler.settings):
            signals.connect(self._left_downloader, signal=scrapy_signals.request_left_downloader)
            signals.connect(self._warn_without_middleware, signal=scrapy_signals.spider_opened)

    def scheduled(self, key: bytes, request: Request) -> None:
        try:
            serialized = pickle.dumps(request_to_dict(request, self.crawler.spider), 4)
        except (ValueError, TypeError, AttributeError, pickle.PicklingError) as exc:
            assert self.crawler.stats is not None
            self.crawler.stats.inc_value("dedup/url/unresumable")
            logger.warning(
                "Cannot record %(request)s for crash-safe resume (%(error)s): it "
                "would be lost if the crawl were killed before it finishes",
                {"request": request, "error": exc},
                extra={"spider": self.crawler.spider},
            )
            return
        self.frontier.scheduled(key, serialized)

    def finished(self, request: Request) -> None:
        key = request.meta.get(META_KEY)
        if key is None:
            return
        try:
            self.frontier.finished(key)
        except OSError as exc:  # left unfinished: a restart crawls it again
            self.unwritable(exc)

    def items_settled(self, request: Request, items: int) -> None:
        key = request.meta.get(META_KEY)
        if key is None:
            return
        try:
            self.frontier.items_settled(key, items)
        except OSError as exc:  # items passed on again after a kill, as before
            self.unwritable(exc)

    def _left_downloader(self, request: Request, spider: Spider) -> None:
        self.finished(request)

    def _warn_without_middleware(self, spider: Spider) -> None:
        warn_without_frontier_middleware(self.frontier, spider)


def warn_without_frontier_middleware(frontier: Frontier, spider: Spider) -> None:
    """Say that without ``FrontierMiddleware`` a request counts as finished when its
    download ends (see :func:`frontier_middleware_enabled`)."""
    logger.warning(
        "URL dedup records the requests it schedules in %(dir)s, so that a restart after "
        "a kill crawls what was not finished; without crawler.middlewares."
        "FrontierMiddleware a request counts as finished when its download ends, so a "
        "kill can still lose the links of the pages being parsed at that moment. Enable "
        'it with ADDONS = {"crawler.addon.DedupAddon": 0}, or add '
        '"crawler.middlewares.FrontierMiddleware": 25 to SPIDER_MIDDLEWARES and '
        "DOWNLOADER_MIDDLEWARES",
        {"dir": frontier.journal.path.parent},
        extra={"spider": spider},
    )
