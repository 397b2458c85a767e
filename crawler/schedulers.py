"""``LeasingScheduler``: scrapy-redis's scheduler, without losing requests.

scrapy-redis's scheduler pops a request from the shared queue and forgets it:
a worker killed before the page is crawled loses it (its URL is already in the
seen store, so no worker crawls it again). This scheduler takes each request
under a lease (:mod:`crawler.redis.leases`) and gives the lease up when
:class:`~crawler.middlewares.FrontierMiddleware` reports the request finished.
The leases of a worker whose heartbeat stopped go back to the queue::

    SCHEDULER = "crawler.schedulers.LeasingScheduler"
    SCHEDULER_PERSIST = True
    DEDUP_LEASE_TTL = 60  # seconds without a heartbeat before a worker's leases go back
    DEDUP_WORKER_ID = "crawler-1"  # optional, stable across restarts
"""

from __future__ import annotations

import contextlib
import logging
import warnings
from typing import TYPE_CHECKING, Any

from scrapy import signals as scrapy_signals
from scrapy.exceptions import ScrapyDeprecationWarning
from scrapy.utils.asyncio import create_looping_call
from scrapy.utils.conf import build_component_list
from scrapy.utils.request import request_from_dict
from scrapy_redis.queue import FifoQueue, LifoQueue, PriorityQueue
from scrapy_redis.scheduler import Scheduler

from crawler import signals as dedup_signals
from crawler.closing import close_once_opened, close_spider
from crawler.log_once import LogOnce
from crawler.redis.connection import (
    RedisConnection,
    RedisFaultPending,
    RedisStartRefused,
    RedisUnavailable,
    fault_budget_from_settings,
    redact,
    redis_params_from_settings,
    wait_while_redis_fails,
)
from crawler.redis.leases import (
    Lease,
    RequestLeases,
    lease_ttl_from_settings,
    worker_id_from_settings,
)
from crawler.url.request_meta import (
    FRONTIER_MIDDLEWARE,
    META_LEASE,
    META_TAKEN_BACK,
    is_frontier_middleware,
)

if TYPE_CHECKING:
    from scrapy import Request, Spider
    from scrapy.crawler import Crawler
    from scrapy.http import Response
    from scrapy.settings import BaseSettings
    from typing_extensions import Self

logger = logging.getLogger(__name__)


def queue_redis_url(settings: BaseSettings) -> str:
    """The Redis server of scrapy-redis's queue: ``REDIS_URL``, else
    ``REDIS_HOST``/``REDIS_PORT``. Leases must live on that server, so that
    taking a request and leasing it is one atomic call."""
    url = settings.get("REDIS_URL")
    if url:
        return str(url)
    host = settings.get("REDIS_HOST") or "localhost"
    return f"redis://{host}:{settings.getint('REDIS_PORT', 6379)}"


def _queue_url_setting(settings: BaseSettings) -> str:
    """The setting :func:`queue_redis_url` takes the URL from, for errors."""
    return "REDIS_URL" if settings.get("REDIS_URL") else "REDIS_HOST/REDIS_PORT"


def queue_kind(queue: Any) -> str:
    """How a scrapy-redis queue pops: ``priority``, ``fifo`` or ``lifo``."""
    kinds = ((PriorityQueue, "priority"), (FifoQueue, "fifo"), (LifoQueue, "lifo"))
    for queue_class, kind in kinds:
        if isinstance(queue, queue_class):
            return kind
    raise ValueError(
        f"SCHEDULER_QUEUE_CLASS={type(queue).__module__}.{type(queue).__qualname__} is not "
        "supported by crawler.schedulers.LeasingScheduler; use scrapy_redis.queue.PriorityQueue "
        "(the default), FifoQueue or LifoQueue, or a subclass that keeps their layout"
    )


def _require_frontier_middleware(settings: BaseSettings) -> None:
    for setting in ("SPIDER_MIDDLEWARES", "DOWNLOADER_MIDDLEWARES"):
        components = build_component_list(settings.getwithbase(setting))
        if not any(is_frontier_middleware(component) for component in components):
            raise ValueError(
                f"SCHEDULER = crawler.schedulers.LeasingScheduler needs "
                f"{FRONTIER_MIDDLEWARE} in {setting} (the add-on "
                "crawler.addon.DedupAddon enables it): without it no request is ever "
                "reported finished and every lease would go back to the queue"
            )


class _StatsWithoutSpider:
    """The crawl's stats for scrapy-redis's scheduler, which passes ``spider=`` to
    ``inc_value`` (scrapy-redis 0.9.1), an argument Scrapy deprecates (warned under 2.19)."""

    def __init__(self, stats: Any) -> None:
        self._stats = stats

    def inc_value(self, key: str, count: int = 1, start: int = 0, spider: Any = None) -> None:
        self._stats.inc_value(key, count, start)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stats, name)


class LeasingScheduler(Scheduler):
    """scrapy-redis's ``Scheduler``, where a killed worker loses no request.

    * each request is popped and leased in one atomic Redis call; its lease is
      given up when the request is finished (callback output consumed and its
      requests queued, or download failed for good), or when the downloader
      hands back a replacement (a redirect, a retry) once that is queued;
    * a heartbeat every ``DEDUP_LEASE_TTL / 3`` seconds keeps the worker's
      leases; at start and with each heartbeat, the leases of workers silent
      for ``DEDUP_LEASE_TTL`` go back to the queue, each exactly once;
    * a worker that starts with the ``DEDUP_WORKER_ID`` of a killed one puts
      that one's leases back at once; at a clean stop a worker puts back the
      leases it still holds;
    * the spider is not idle while other workers hold leases: their requests
      may still add to the queue, or come back to it.
    """

    crawler: Crawler
    connection: RedisConnection
    leases: RequestLeases
    lease_ttl: float
    worker_id: str

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # what the leases are doing: a scheduler built without from_crawler has it too
        self._held: set[int] = set()
        self._awaiting_response: set[int] = set()
        self._warn_late_after_expiry = LogOnce(logger, logging.WARNING)
        self._keep_alive: Any = None
        self._closing_for_redis = False
        self._unreleased: set[int] = set()

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        settings = crawler.settings
        _require_frontier_middleware(settings)
        ttl = lease_ttl_from_settings(settings)
        worker_id = worker_id_from_settings(settings)
        # scrapy-redis's from_crawler pings the queue's server
        scheduler: Self = wait_while_redis_fails(
            lambda: super(LeasingScheduler, cls).from_crawler(crawler),
            url=queue_redis_url(settings),
            setting=_queue_url_setting(settings),
            budget=fault_budget_from_settings(settings),
            what="the shared request queue",
        )
        scheduler.stats = _StatsWithoutSpider(crawler.stats)
        scheduler.crawler = crawler
        scheduler.lease_ttl = ttl
        scheduler.worker_id = worker_id
        scheduler.connection = RedisConnection(
            queue_redis_url(settings),
            redis_params_from_settings(settings),
            setting=_queue_url_setting(settings),
            budget=fault_budget_from_settings(settings),
        )
        signals = crawler.signals
        signals.connect(scheduler._request_finished, signal=dedup_signals.request_finished)
        signals.connect(scheduler._response_received, signal=scrapy_signals.response_received)
        return scheduler

    # Life cycle

    def open(self, spider: Spider) -> None:
        try:
            recovered = self.connection.opening(
                lambda: self._open_queue(spider), what="the shared request queue and its leases"
            )
        except RedisStartRefused:
            if not close_once_opened(self.crawler, "dedup_redis_unavailable"):  # said at ERROR
                raise
            return
        if recovered:
            self._count("dedup/lease/reclaimed", recovered)
            logger.info(
                "Put back in the queue %(count)d requests leased to worker %(worker)s "
                "by a run that did not stop cleanly",
                {"count": recovered, "worker": self.worker_id},
                extra={"spider": spider},
            )
        if self.idle_before_close:
            logger.warning(
                "SCHEDULER_IDLE_BEFORE_CLOSE=%(seconds)d is not used by the leasing "
                "scheduler: a worker stays while other workers hold leases instead",
                {"seconds": self.idle_before_close},
                extra={"spider": spider},
            )
        self._keep_alive = create_looping_call(self._beat)
        self._keep_alive.start(self.lease_ttl / 3, now=False)
        logger.info(
            "Leasing requests from %(queue)s at %(url)s as worker %(worker)s "
            "(DEDUP_LEASE_TTL %(ttl)gs)",
            {
                "queue": self.queue.key,
                "url": redact(self.connection.url),
                "worker": self.worker_id,
                "ttl": self.lease_ttl,
            },
            extra={"spider": spider},
        )

    def _open_queue(self, spider: Spider) -> int:
        """Open scrapy-redis's queue and this worker's leases; how many requests a run
        of this worker that did not stop cleanly had leased (put back). Safe to do
        again after a fault: each step is one atomic call, a done one does nothing."""
        with warnings.catch_warnings():
            # scrapy-redis 0.9.1 says "Resuming crawl" with Spider.log(), which Scrapy
            # deprecates (warned under 2.19); the line itself still comes out, at DEBUG
            warnings.filterwarnings(
                "ignore", r"Spider\.log\(\) is deprecated", ScrapyDeprecationWarning
            )
            super().open(spider)
        self.leases = RequestLeases(
            self.connection, self.queue.key, queue_kind(self.queue), self.worker_id, self.lease_ttl
        )
        self.connection.open()
        if self.flush_on_start:
            self.leases.clear()  # the queue they came from was flushed
        recovered = self.leases.return_own()
        self.leases.heartbeat()
        self._reclaim_expired()
        return recovered

    def close(self, reason: str) -> None:
        if self._keep_alive is None:
            return  # open() failed: nothing leased
        self._keep_alive.stop()
        self._keep_alive = None
        with contextlib.suppress(RedisUnavailable):  # else crawled again: nothing lost
            self._release_finished()
        returned = self.leases.return_own()
        if returned:
            self._count("dedup/lease/returned", returned)
            logger.info(
                "Put back in the queue %(count)d leased requests not finished at close",
                {"count": returned},
                extra={"spider": self.spider},
            )
        self._held.clear()
        self._awaiting_response.clear()
        if not self.persist:
            logger.warning(
                "Not emptying the shared queue %(queue)s at close, although "
                "SCHEDULER_PERSIST is False: other workers may still be crawling from it, "
                "and it holds the requests just put back. Empty it with "
                "SCHEDULER_FLUSH_ON_START when a new crawl starts",
                {"queue": self.queue.key},
                extra={"spider": self.spider},
            )

    def _beat(self) -> None:
        try:
            self._release_finished()
            self.leases.heartbeat()
            self._reclaim_expired()
        except RedisUnavailable as exc:
            logger.warning(
                "No heartbeat for worker %(worker)s (%(error)s): if Redis stays away for "
                "DEDUP_LEASE_TTL, other workers will take its leased requests again",
                {"worker": self.worker_id, "error": exc},
                extra={"spider": self.spider},
            )

    def _release_finished(self) -> None:
        """Give up the leases of finished requests that Redis failed to take."""
        for lease_id in sorted(self._unreleased):
            self._unreleased.discard(lease_id)
            self._release(lease_id)  # back in the set when Redis fails
            if lease_id in self._unreleased:
                return  # Redis fails still

    def _reclaim_expired(self) -> None:
        reclaimed = self.leases.reclaim_expired()
        if reclaimed:
            self._count("dedup/lease/reclaimed", reclaimed)
            logger.info(
                "Put back in the queue %(count)d requests leased to workers whose "
                "heartbeat stopped for DEDUP_LEASE_TTL",
                {"count": reclaimed},
                extra={"spider": self.spider},
            )

    # Scheduling

    def next_request(self) -> Request | None:
        while (lease := self._take()) is not None:
            try:
                request = request_from_dict(
                    self.queue.serializer.loads(lease.payload), spider=self.spider
                )
            except Exception as exc:  # whatever the serializer or Scrapy raise on bad input
                self.leases.set_aside(lease.id)
                self._count("dedup/lease/undecodable")
                logger.error(
                    "Cannot read a request taken from %(queue)s (%(error)r); moved it to %(aside)s",
                    {"queue": self.queue.key, "error": exc, "aside": self.leases.undecodable_key},
                    extra={"spider": self.spider},
                )
                continue
            request.meta[META_LEASE] = lease.id
            if lease.reclaimed:
                request.meta[META_TAKEN_BACK] = True
            self._held.add(lease.id)
            self._awaiting_response.add(lease.id)
            self._count("scheduler/dequeued/redis")
            self._count("dedup/lease/taken")
            return request
        return None

    def _take(self) -> Lease | None:
        try:
            return self.leases.take()
        except RedisFaultPending:
            return None  # the engine asks again in a moment; the reactor does not wait
        except RedisUnavailable as exc:
            self._queue_gone(exc)
            return None

    def _queue_gone(self, error: RedisUnavailable) -> None:
        """Redis failed for ``DEDUP_REDIS_FAULT_BUDGET``: without its queue the worker
        cannot go on, whatever ``DEDUP_REDIS_ON_ERROR`` says; it closes, and its leases
        go back to the queue (at its next start with its id, or when they expire)."""
        if self._closing_for_redis:
            return
        self._closing_for_redis = True
        logger.error(
            "%(error)s; closing the spider: the shared queue is in Redis (%(setting)s)",
            {"error": error, "setting": self.connection.setting},
            extra={"spider": self.spider},
        )
        close_spider(self.crawler, "dedup_redis_unavailable")

    def enqueue_request(self, request: Request) -> bool:
        lease_id = request.meta.pop(META_LEASE, None)
        enqueued = self._enqueue(request)
        if lease_id in self._awaiting_response:
            # The downloader handed back a replacement (redirect, retry) of a
            # leased request that got no response: it is queued or filtered now.
            self._release(lease_id)
        return enqueued

    def _enqueue(self, request: Request) -> bool:
        """Queue *request* unless it was seen. scrapy-redis records the key, then
        pushes: a worker killed between the two left the key seen and the request
        nowhere, and the request whose lease went back, crawled again, found its
        link seen. With :class:`~crawler.dupefilters.URLDupeFilter`, a new request is
        leased to this worker before its key is recorded, and queued after: a kill
        at any point puts it in the queue with the worker's other leases."""
        seen_before = getattr(self.df, "seen_before", None)
        if request.dont_filter or seen_before is None:
            enqueued: bool = super().enqueue_request(request)
            return enqueued
        if seen_before(request):
            self.df.log(request, self.spider)
            return False
        try:
            staged = self.leases.stage(self.queue._encode_request(request), -request.priority)
        except RedisFaultPending as exc:
            # the dupefilter holds it, and hands it to the engine again in a moment
            self.df.hold_for_redis(request, exc)
            return False
        except RedisUnavailable as exc:
            self._queue_gone(exc)
            self.df.hold_for_redis(request)  # at close, its parent is left unfinished
            return False
        if self.df.request_seen(request):  # another worker recorded it in between
            with contextlib.suppress(RedisUnavailable):  # else it goes back at close or expiry
                self.leases.unstage(staged, queue=False)
            self.df.log(request, self.spider)
            return False
        if not self.leases.unstage(staged, queue=True):
            self._count("dedup/lease/expired")  # queued already, as a lease of a dead worker
        self.stats.inc_value("scheduler/enqueued/redis")
        return True

    def has_pending_requests(self) -> bool:
        try:
            queued, held_elsewhere = self.leases.pending()
        except RedisFaultPending:
            return True  # not idle: Redis may be back in a moment
        except RedisUnavailable as exc:
            self._queue_gone(exc)
            return False
        return queued > 0 or held_elsewhere > 0

    # Signals

    def _response_received(self, response: Response, request: Request) -> None:
        self._awaiting_response.discard(request.meta.get(META_LEASE))

    def _request_finished(self, request: Request) -> None:
        lease_id = request.meta.get(META_LEASE)
        if lease_id is not None and lease_id in self._held:
            self._release(lease_id)

    def _release(self, lease_id: int) -> None:
        self._held.discard(lease_id)
        self._awaiting_response.discard(lease_id)
        try:
            released = self.leases.release(lease_id)
        except RedisUnavailable:
            self._unreleased.add(lease_id)  # given up with the next heartbeat
            return
        if released:
            self._count("dedup/lease/released")
            return
        self._count("dedup/lease/expired")
        self._warn_late_after_expiry(
            "A request finished after its lease had gone back to the queue (no "
            "heartbeat for DEDUP_LEASE_TTL=%(ttl)gs): another worker may crawl it "
            "again. Raise DEDUP_LEASE_TTL if workers are slow rather than dead.",
            {"ttl": self.lease_ttl},
            extra={"spider": self.spider},
        )

    def _count(self, name: str, count: int = 1) -> None:
        self.crawler.stats.inc_value(name, count)
