"""Crash-safe resume of a crawl whose request queue is its own: the frontier in the state
directory (:class:`~crawler.url.frontier.Frontier`), Scrapy's own queue discarded after a
kill, and requests serialized for the frontier's journal."""

from __future__ import annotations

import logging
import shutil
from pathlib import Path
from typing import TYPE_CHECKING, Any

from scrapy.utils.job import job_dir

from crawler.url.configuration import keeps_local_frontier, state_dir_from_settings
from crawler.url.frontier import Frontier
from crawler.url.request_meta import is_frontier_middleware

if TYPE_CHECKING:
    from scrapy import Request, Spider
    from scrapy.settings import BaseSettings

__all__ = [
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
