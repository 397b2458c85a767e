"""What URL dedup does with a request while its shared seen store fails.

For ``DEDUP_REDIS_FAULT_BUDGET`` seconds, counted from the first request held, requests
are held and handed back to the engine a moment later: the reactor never waits for the
server. Past the budget, ``DEDUP_REDIS_ON_ERROR`` decides: ``"allow"`` lets a request
through unchecked (once a key for this worker, counted), ``"stop"`` keeps it back and
closes the spider, so that nothing unrecorded is crawled.
"""

from __future__ import annotations

import enum
import logging
import time
from typing import TYPE_CHECKING

from crawler.closing import SpiderCloser
from crawler.redis.connection import PROBE_INTERVAL
from crawler.url.held_requests import HeldRequests
from crawler.url.request_meta import META_UNCHECKED

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.crawler import Crawler

    from crawler.redis.connection import RedisFaultPending, RedisUnavailable

# the dupefilter's logger: these lines are the URL level's
logger = logging.getLogger("crawler.dupefilters")


class Unchecked(enum.Enum):
    """What becomes of a request Redis could not check, past the budget."""

    #: let through by this worker before: filtered here, not crawled again
    FILTERED_LOCALLY = "filtered_locally"
    #: ``"allow"``: crawled unchecked
    LET_THROUGH = "let_through"
    #: ``"stop"``: not crawled, and the spider closes
    STOPPED = "stopped"


class RedisFaultPolicy:
    """Holds requests while Redis fails, then applies *policy* (``DEDUP_REDIS_ON_ERROR``)."""

    def __init__(self, crawler: Crawler, policy: str) -> None:
        self.crawler = crawler
        self.stats = crawler.stats
        self.policy = policy
        self.held = HeldRequests(crawler)
        #: when this worker began to hold requests, Redis failing ever since
        self.holding_since: float | None = None
        self._let_through: set[bytes] = set()
        self._closer = SpiderCloser(crawler, "dedup_redis_unavailable", logger)

    def hold(self, request: Request, error: RedisFaultPending | None = None) -> bool:
        """Hold *request* for the engine to hand back a moment later (the first one held
        says why, with *error*). Returns ``True`` (not scheduled now)."""
        self.stats.inc_value("dedup/redis/held")
        if self.holding_since is None:
            self.holding_since = time.monotonic()
            if error is not None:
                logger.warning(
                    "%(error)s; holding requests meanwhile, counted in dedup/redis/held",
                    {"error": error},
                )
        self.held.hold(request)
        return True

    def held_for(self, budget: float) -> bool:
        """Whether requests have been held for *budget* seconds (``DEDUP_REDIS_FAULT_BUDGET``)."""
        since = self.holding_since
        return since is not None and time.monotonic() - since >= budget

    def answered(self) -> None:
        """Redis answered a call: the requests held go on."""
        if self.holding_since is not None:
            self.holding_since = None
            logger.info("Redis answers again: the held requests go on")

    def unchecked(
        self, key: bytes, request: Request, error: RedisUnavailable, *, reported: bool = False
    ) -> Unchecked:
        """Decide *request*, whose *key* Redis could not check (*error*, logged unless
        *reported* already). A request let through is remembered: let through once by this
        worker, not at every link to it (a site's links in a circle would otherwise be
        crawled round and round until Redis is back)."""
        if key in self._let_through:
            self.stats.inc_value("dedup/redis/filtered_locally")
            return Unchecked.FILTERED_LOCALLY
        if self.policy == "allow":
            self.stats.inc_value("dedup/redis/allowed_unchecked")
            if not reported:
                logger.warning(
                    "%(error)s; letting requests through unchecked for %(pause)ds "
                    "(DEDUP_REDIS_ON_ERROR='allow'), counted in dedup/redis/allowed_unchecked",
                    {"error": error, "pause": PROBE_INTERVAL},
                )
            self._let_through.add(key)
            return Unchecked.LET_THROUGH
        self.stats.inc_value("dedup/redis/stopped_unchecked")
        request.meta[META_UNCHECKED] = True
        self._closer.close(
            "%(error)s; closing the spider (DEDUP_REDIS_ON_ERROR='stop'); requests "
            "met meanwhile are not crawled",
            {"error": error},
        )
        return Unchecked.STOPPED

    def release_all(self) -> int:
        """At close: the requests still held are dropped, counted as stopped unchecked
        (their unfinished parents bring them back). Returns how many."""
        held = self.held.release_all()
        if held:
            self.stats.inc_value("dedup/redis/stopped_unchecked", len(held))
        return len(held)
