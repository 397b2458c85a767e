"""``URLDupeFilter``: Scrapy's ``DUPEFILTER_CLASS``, on canonical URLs.

Enable it with the add-on (``ADDONS = {"crawler.addon.DedupAddon": 0}``) or
by hand::

    DUPEFILTER_CLASS = "crawler.dupefilters.URLDupeFilter"
    # crash-safe resume also needs:
    SPIDER_MIDDLEWARES = {"crawler.middlewares.FrontierMiddleware": 25}
    DOWNLOADER_MIDDLEWARES = {"crawler.middlewares.FrontierMiddleware": 25}
"""

from __future__ import annotations

import contextlib
import logging
from collections import Counter
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from scrapy import signals as scrapy_signals
from scrapy.dupefilters import BaseDupeFilter
from scrapy.utils.job import job_dir
from scrapy.utils.request import referer_str

from crawler import defaults
from crawler import signals as dedup_signals
from crawler.closing import SpiderCloser, close_once_opened
from crawler.dupefilter_redis_faults import RedisFaultPolicy, Unchecked
from crawler.dupefilter_report import FilterReport
from crawler.redis.connection import (
    RedisFaultPending,
    RedisLeftAlone,
    RedisStartRefused,
    RedisUnavailable,
    redis_error_policy_from_settings,
)
from crawler.state.lock import lock_state_dir, unlock_state_dir
from crawler.url import canonical_links
from crawler.url.canonical import UrlCanonicalizer
from crawler.url.configuration import (
    REDIS_BACKENDS,
    learner_from_settings,
    recrawl_for,
    redis_key_base,
    rel_canonical_from_settings,
    seen_store_from_settings,
    state_dir_from_settings,
    state_dir_setting,
    url_backend_from_settings,
    url_rules_from_settings,
    url_signature,
)
from crawler.url.frontier import Frontier
from crawler.url.learned_rules import (
    LearnedRules,
    SharedRules,
    shared_rules_key,
)
from crawler.url.request_keys import request_key
from crawler.url.request_meta import (
    META_HELD,
    META_KEY,
    META_TAKEN_BACK,
    META_UNCHECKED,
    META_URL,
    META_VERIFYING,
)
from crawler.url.resume import (
    FrontierRecorder,
    ResumedRequests,
    local_frontier,
    request_to_dict,  # noqa: F401  (its path in earlier releases)
)
from crawler.url.rewritten_pages import with_rules
from crawler.url.start_pages import StartPages, is_start_request

if TYPE_CHECKING:
    from collections.abc import Callable

    from scrapy import Request, Spider
    from scrapy.crawler import Crawler
    from scrapy.http import Response
    from typing_extensions import Self

    from crawler.url.learning import RuleKey
    from crawler.url.recrawl import Recrawl
    from crawler.url.stores import SeenStore
    from crawler.url.stores.shared import SharedSeenStore

logger = logging.getLogger(__name__)

#: On a request held while Redis failed, whose add got no answer: the server may have
#: applied it, so "seen" when it is asked again does not filter it.
_META_ADD_UNANSWERED = "dedup_add_unanswered"


def _compacting(close: Callable[..., None], **kwargs: Any) -> None:
    """Run a local store's *close* (a snapshot, or a compacted journal); when the
    disk refuses the write, say so: the journal it was to replace keeps everything."""
    try:
        close(**kwargs)
    except OSError as exc:
        logger.error(
            "Cannot compact the dedup state at close (%(error)s): its journals keep "
            "everything recorded, and the next start reads them",
            {"error": exc},
        )


def _learned_rules(
    crawler: Crawler,
    canonicalizer: UrlCanonicalizer,
    state_dir: Path | None,
    shared: SharedRules | None = None,
) -> LearnedRules | None:
    learner = learner_from_settings(crawler.settings)
    if learner is None:
        return None
    signature = {"canonical_rules": canonicalizer.rules.describe()}
    return LearnedRules(crawler, canonicalizer, learner, state_dir, signature, shared)


class URLDupeFilter(BaseDupeFilter):
    """Filter requests whose method, canonical URL and body were seen before.

    * URLs are compared in canonical form (:mod:`crawler.url.canonical`): tracking
      parameters, query order, host case, trailing slashes, fragments and
      session ids do not make a page new;
    * seen keys live in a Bloom filter (``DEDUP_URL_BACKEND = "bloom"``) or an
      exact set (``"memory"``), persisted in ``DEDUP_STATE_DIR`` (default
      ``JOBDIR``) so that ``kill -9`` loses nothing, and checked against the
      rules they were built with; or shared by many workers in Redis
      (``"redis"``: a set, ``"redis-bloom"``: a Bloom filter), one atomic call
      a request, with ``DEDUP_REDIS_ON_ERROR`` deciding when Redis stays away;
    * a redirect to the same canonical page is followed, not filtered;
    * with :class:`~crawler.middlewares.FrontierMiddleware` enabled, requests
      that were scheduled but not finished when a crawl was killed are
      scheduled again at the next start.
    """

    def __init__(
        self,
        crawler: Crawler,
        canonicalizer: UrlCanonicalizer,
        seen: SeenStore,
        *,
        frontier: Frontier | None = None,
        learned: LearnedRules | None = None,
        recrawl: Recrawl | None = None,
        debug: bool = False,
    ) -> None:
        self.crawler = crawler
        self.learned = learned
        if learned is not None:
            learned.add_seen = self._add_seen
        self.recrawl = recrawl
        self.stats = crawler.stats
        self.canonicalize = canonicalizer
        self.seen = seen
        self.start_pages = StartPages(seen)
        self.frontier = frontier
        self.debug = debug
        self.logdupes = True
        self.new_urls = 0
        self.report = FilterReport(crawler, canonicalizer)
        self.resumed = ResumedRequests(crawler, frontier) if frontier is not None else None
        self._last_checked: tuple[Request | None, str] = (None, "")
        self._last_rules: list[RuleKey] = []
        self._opened = False
        self._state_dir: Path | None = None
        self._ready = False
        self._closed = False
        self._spider_opened = False
        self._state_closer = SpiderCloser(crawler, "dedup_state_unwritable", logger)
        self._unchecked: Request | None = None
        self.redis_faults = RedisFaultPolicy(crawler, defaults.DEDUP_REDIS_ON_ERROR)
        self.recorder = (
            FrontierRecorder(crawler, frontier, self._state_unwritable)
            if frontier is not None
            else None
        )
        crawler.signals.connect(self._spider_opened_now, signal=scrapy_signals.spider_opened)
        crawler.signals.connect(self._start_scheduled, signal=scrapy_signals.request_scheduled)
        if rel_canonical_from_settings(crawler.settings):
            crawler.signals.connect(
                self._response_received, signal=scrapy_signals.response_received
            )

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        settings = crawler.settings
        rules = url_rules_from_settings(settings)
        backend = url_backend_from_settings(settings)
        policy = defaults.DEDUP_REDIS_ON_ERROR
        if backend in REDIS_BACKENDS:
            policy = redis_error_policy_from_settings(settings)
        # a spider class without a name never runs; the name only names Redis keys
        spider_name = getattr(crawler.spidercls, "name", "")
        seen = seen_store_from_settings(settings, spider_name, partial(url_signature, rules))
        state_dir = state_dir_from_settings(settings)
        if not seen.shared and seen.state_dir is None:
            logger.info(
                "URL dedup (%(backend)s) keeps its state in memory only: set "
                "DEDUP_STATE_DIR or JOBDIR to persist it across runs",
                {"backend": backend},
            )
        shared_rules = None
        if seen.connection is not None:
            key = shared_rules_key(redis_key_base(settings, spider_name))
            shared_rules = SharedRules(seen.connection, key)
        canonicalizer = UrlCanonicalizer(rules)
        dupefilter = cls(
            crawler,
            canonicalizer,
            seen,
            frontier=local_frontier(settings, seen.signature),
            learned=_learned_rules(crawler, canonicalizer, state_dir, shared_rules),
            recrawl=recrawl_for(crawler),
            debug=settings.getbool("DUPEFILTER_DEBUG"),
        )
        dupefilter.redis_faults.policy = policy
        return dupefilter

    @classmethod
    def from_spider(cls, spider: Spider) -> Self:
        """Entry point of scrapy-redis's scheduler, which never calls :meth:`open`."""
        assert spider.crawler is not None
        return cls.from_crawler(spider.crawler)

    # Life cycle

    def open(self) -> None:
        if self._opened:
            return
        self._opened = True
        if self.frontier is not None or self.seen.state_dir is not None:
            self._state_dir = state_dir_from_settings(self.crawler.settings, check_free=False)
            if self._state_dir is not None:
                lock_state_dir(self._state_dir, state_dir_setting(self.crawler.settings))
        # scrapy-redis's scheduler never calls close()
        self.crawler.signals.connect(self._spider_closed, signal=scrapy_signals.spider_closed)
        try:
            self.seen.open()
        except RedisStartRefused:
            # opened at the first request (scrapy-redis), or used on its own: raised
            if self._spider_opened or not close_once_opened(
                self.crawler,
                "dedup_redis_unavailable",  # said at ERROR
            ):
                raise
            return
        if self.seen.shared:
            logger.info(
                "URL dedup shares its seen store %(where)s: %(entries)d URLs seen by all workers",
                {"where": self.seen.whereabouts(), "entries": len(self.seen)},
            )
        elif self.seen.state_dir is not None:
            logger.info(
                "URL dedup state in %(dir)s: %(entries)d URLs seen in earlier runs",
                {"dir": self.seen.state_dir, "entries": len(self.seen)},
            )
        if self.learned is not None:
            self.learned.open()
            if self.seen.shared:
                self.learned.start_sharing()
            self.crawler.signals.send_catch_log(
                dedup_signals.url_dupefilter_opened, dupefilter=self
            )
        if self.resumed is not None:
            self.resumed.load()
        self._ready = True

    def _spider_opened_now(self, spider: Spider) -> None:
        self._spider_opened = True

    def _spider_closed(self, spider: Spider, reason: str) -> None:
        self.close(reason)

    def close(self, reason: str) -> None:
        try:
            self._close(reason)
        finally:
            if self._state_dir is not None:
                unlock_state_dir(self._state_dir)
                self._state_dir = None

    def _close(self, reason: str) -> None:
        if not self._ready or self._closed:
            return  # open() failed: leave the state directory as it was
        self._closed = True
        held = self.redis_faults.release_all()
        if self.learned is not None:
            self.learned.close()
        if self.frontier is not None:
            _compacting(
                self.frontier.close,
                crawl_finished=reason == "finished",
                # a request held back is in no queue: only its unfinished parent, in the
                # journal, brings it back, so the next start must schedule from the journal
                queue_persisted=bool(job_dir(self.crawler.settings))
                and self._unchecked is None
                and not held,
            )
        try:
            self._update_store_stats()
            _compacting(self.seen.close)
            summary = self.summary()
        except RedisUnavailable as exc:
            summary = (
                f"URL dedup: {self.filtered} requests filtered, {self.new_urls} new URLs; "
                f"the shared store's figures are unknown ({exc})"
            )
        logger.info("%(summary)s", {"summary": summary})

    def clear(self) -> None:
        """Called by scrapy-redis's scheduler to flush: at start with
        ``SCHEDULER_FLUSH_ON_START`` (honoured: the shared store is emptied,
        before the spider opens), and at close unless ``SCHEDULER_PERSIST``
        (ignored: other workers may still be crawling with it; clear it
        explicitly). Local state stays."""
        if not self.seen.shared:
            return
        if self._spider_opened:
            logger.info(
                "Not clearing the shared seen store %(where)s at close: other workers may "
                "still use it (set SCHEDULER_PERSIST = True to silence this)",
                {"where": self.seen.whereabouts()},
            )
            return
        self.seen.clear()

    # Filtering

    def _key(self, request: Request) -> bytes:
        """The key of *request*: its method, body and canonical URL, less what learned
        rules remove from it (they are in :attr:`_last_rules` then)."""
        canonical = self.canonicalize(request.url)
        self._last_checked = (request, canonical)
        self._last_rules = []
        if self.learned is not None:
            canonical, self._last_rules = self.learned.rewrite(canonical)
        return request_key(request.method, canonical, request.body)

    def _requested_as_is(self, request: Request) -> bool:
        """Whether the URL of *request*, which learned rules rewrite, was requested as it is
        (its key then): a repeat, reported as one."""
        if request_key(request.method, self._last_checked[1], request.body) not in self.seen:
            return False
        self._last_rules = []
        return True

    def _add_seen(self, keys: list[bytes]) -> None:
        with contextlib.suppress(RedisUnavailable, OSError):  # downloaded again, never lost
            for key in keys:
                self.seen.add(key)

    def request_seen(self, request: Request) -> bool:
        if not self._opened:
            self.open()
        key = self._key(request)
        if self.resumed is not None and self.resumed.passes(key):
            self._add(key, request)  # its key may have missed the journal at the kill
            if self.recrawl is not None:
                self.recrawl.claim(key)
            return False
        if self._is_redirect(request):
            source_key = request.meta[META_KEY]
            if source_key == key:
                self.stats.inc_value("dedup/url/redirect_same_page")
                self._record_scheduled(key, request)
                return False
            if self.frontier is not None:
                self.frontier.finished(source_key)
        if self.redis_faults.held:  # Redis fails: the next hand-back asks it again
            return self.hold_for_redis(request)
        try:
            if self._last_rules and self._requested_as_is(request):
                return True
            added = self._add(key, request)
            again = not added and self.start_pages.passes_again(
                key, request, self.crawler.spider, partial(self._record_scheduled, key, request)
            )
        except RedisFaultPending as exc:
            if exc.may_have_applied:
                request.meta[_META_ADD_UNANSWERED] = True
            assert self.seen.connection is not None
            budget = self.seen.connection.budget
            if not self.redis_faults.held_for(budget):
                return self.hold_for_redis(request, exc)
            # other calls on the connection succeeded meanwhile (a cluster's other
            # nodes): the budget counts from the first request held
            return self._seen_without_redis(
                key,
                request,
                RedisUnavailable(
                    f"{exc.failure}, failing for {budget:g}s in all (DEDUP_REDIS_FAULT_BUDGET)"
                ),
            )
        except RedisLeftAlone as exc:
            return self._seen_without_redis(key, request, exc, reported=True)
        except RedisUnavailable as exc:
            return self._seen_without_redis(key, request, exc)
        except OSError as exc:
            return self._hold_back_unrecorded(request, exc)
        self.redis_faults.answered()
        if added:
            if self.recrawl is not None:
                self.recrawl.claim(key)
            if self.learned is not None:
                self.learned.scheduled(request, key, self._last_checked[1], self._last_rules)
            self.new_urls += 1
            if not self.new_urls % 1000:
                with contextlib.suppress(RedisUnavailable):  # figures for later: not a fault
                    self._update_store_stats()
            return False
        if again:
            self.stats.inc_value("dedup/url/start_page_again")
            return False
        if self.learned is not None:
            rules = self.learned.rules_of_repeat(key, self._last_rules)
            if rules is None:  # recorded under a rule retracted since: new, once
                self._record_scheduled(key, request)
                return False
            self._last_rules = rules
        if self._last_rules:
            assert self.learned is not None
            if self.learned.filter(request, self._last_rules):
                return True
            # downloaded to verify the rules: not to be dropped before download
            request.meta[META_KEY] = key
            request.meta[META_URL] = request.url
            return False
        if self.recrawl is not None and self.recrawl.claim_if_due(key, request):
            self._record_scheduled(key, request)  # a kill before it finishes loses it not
            return False
        return True

    #: Whether :meth:`filtered_before_download` checks at all. A request taken back from a
    #: killed worker's leases (``LeasingScheduler`` marks it) or resumed from the local
    #: frontier after a kill is never checked: it may find its rewritten key recorded by
    #: its own first attempt, and must not be dropped.
    recheck_before_download = True

    def filtered_before_download(self, request: Request) -> bool:
        """Whether *request*, about to be downloaded, is now a repeat under a rule
        learned since it was scheduled (its rewritten key is recorded for another
        request): a crawl queues most links before the first rule is learned."""
        if (
            self.learned is None
            or not self.recheck_before_download
            or request.dont_filter
            or not self.learned.learner
            or (self.resumed is not None and self.resumed.resumed(request.meta.get(META_KEY)))
            or request.meta.get(META_TAKEN_BACK)
            or request.meta.get(META_VERIFYING)
        ):
            return False
        key = self._key(request)
        downloaded_as = self.learned.rewritten_pages.downloaded_under(key)
        if downloaded_as is not None:  # its page came under another URL meanwhile
            return self.learned.filter(request, with_rules(self._last_rules, downloaded_as))
        if not self._last_rules or key == request.meta.get(META_KEY):
            return False
        try:
            added = self.seen.add(key)
        except (RedisUnavailable, OSError):
            return False  # downloaded: a lookup that fails never loses a page
        if added:
            self.learned.rewritten_pages.record(key, self._last_rules)
            request.meta[META_KEY] = key
            return False
        return self.learned.filter(request, self._last_rules)

    def seen_before(self, request: Request) -> bool:
        """Whether :meth:`request_seen` would filter *request*, without recording
        its key: for a scheduler that queues a request before its key is recorded,
        so that a kill between the two cannot leave a key seen and never queued.

        ``False`` when it cannot tell without recording (a redirect, a key to
        resume, a store that fails: :meth:`request_seen` then decides). A request
        it lets through gets the meta that :meth:`request_seen` would give it.
        """
        if not self._opened:
            self.open()
        key = self._key(request)
        if (self.resumed is not None and self.resumed.waiting(key)) or self._is_redirect(request):
            return False
        if self._last_rules:  # what a learned rule filters is counted in request_seen
            request.meta[META_KEY] = key
            request.meta[META_URL] = request.url
            return False
        try:
            seen = key in self.seen
        except (RedisUnavailable, OSError):
            return False
        if seen and self.learned is not None and self.learned.rewritten_pages.rules_for(key):
            return False  # held under those rules by request_seen
        if seen and self.start_pages.may_pass_again(key, request, self.crawler.spider):
            return False  # request_seen asks whether it passed already
        if not seen:
            request.meta[META_KEY] = key
            request.meta[META_URL] = request.url
        return seen

    def _add(self, key: bytes, request: Request) -> bool:
        """Add *key* to the seen store; for a new key, record *request* as
        scheduled first, so that a kill never leaves a seen key unscheduled."""
        connection = self.seen.connection
        if connection is None:
            return self.seen.add(key, lambda: self._record_scheduled(key, request))
        retried_before = connection.retried
        if self.recrawl is not None and not self._last_rules:
            # a seen URL's page claimed in the same call when due
            added = self.recrawl.add_claiming(cast("SharedSeenStore", self.seen), key, request)
        else:
            added = self.seen.add(key)
        unanswered_before = request.meta.pop(_META_ADD_UNANSWERED, False)
        if not added and (unanswered_before or connection.retried != retried_before):
            # the attempt that failed may have recorded the key itself: crawling
            # the page twice is better than never
            self.stats.inc_value("dedup/redis/retried_let_through")
            added = True
        if added:
            self._record_scheduled(key, request)
        return added

    def hold_for_redis(self, request: Request, error: RedisFaultPending | None = None) -> bool:
        """Hold *request* while Redis fails, for less than ``DEDUP_REDIS_FAULT_BUDGET`` so
        far (:class:`~crawler.dupefilter_redis_faults.RedisFaultPolicy`); also for a
        scheduler whose own Redis call failed so. Returns ``True`` (not scheduled now)."""
        return self.redis_faults.hold(request, error)

    def _seen_without_redis(
        self, key: bytes, request: Request, error: RedisUnavailable, *, reported: bool = False
    ) -> bool:
        """Whether *request* is to be filtered while Redis is away
        (``DEDUP_REDIS_ON_ERROR``)."""
        decision = self.redis_faults.unchecked(key, request, error, reported=reported)
        if decision is not Unchecked.STOPPED:
            return decision is Unchecked.FILTERED_LOCALLY
        self._unchecked = request
        if self.frontier is not None:
            # The add that failed may have recorded the key before the server went away
            # (the server applied it, its reply was lost): found again through its
            # parent after a restart, the request would meet its key as seen and never
            # be crawled. Journaled as scheduled, the restart resumes it past the check.
            try:
                self._record_scheduled(key, request)
            except OSError as exc:
                self._state_unwritable(exc)
        return True

    def _hold_back_unrecorded(self, request: Request, error: OSError) -> bool:
        """The state directory cannot be written (full, or read-only): *request* is
        held back, unscheduled, and its parent stays unfinished, so that a restart
        finds it again; the spider closes. Returns ``True`` (not to be crawled)."""
        self.stats.inc_value("dedup/url/unrecorded")
        request.meta[META_UNCHECKED] = True
        self._unchecked = request
        self._state_unwritable(error)
        return True

    def _state_unwritable(self, error: OSError) -> None:
        settings = self.crawler.settings
        self._state_closer.close(
            "Cannot write the dedup state in %(dir)s (%(setting)s): %(error)s; closing the "
            "spider. Requests met meanwhile are not crawled: a restart with room to write "
            "crawls them",
            {
                "dir": state_dir_from_settings(settings, check_free=False),
                "setting": state_dir_setting(settings),
                "error": error,
            },
        )

    @staticmethod
    def _is_redirect(request: Request) -> bool:
        """Whether *request* is a redirect of a request this filter recorded."""
        redirect_urls: list[str] = request.meta.get("redirect_urls") or []
        return bool(redirect_urls) and request.meta.get(META_URL) == redirect_urls[-1]

    def _record_scheduled(self, key: bytes, request: Request) -> None:
        request.meta[META_KEY] = key
        request.meta[META_URL] = request.url
        if self.recorder is not None:
            self.recorder.scheduled(key, request)

    def _response_received(self, response: Response, request: Request, spider: Spider) -> None:
        """Record the canonical URL a page declares as seen, when it only removes query
        parameters from the page's URL (:mod:`crawler.url.canonical_links`): a later link to
        it would download what was just downloaded."""
        if request.method != "GET" or response.status != 200 or not self._opened:
            return
        declared = canonical_links.declared_by(response)
        if declared is None:
            return
        target = self.canonicalize(declared)
        page = self.canonicalize(response.url)
        refusal = canonical_links.refusal(page, target)
        if refusal is not None:
            if refusal != "same-url":
                self.stats.inc_value(f"dedup/url/canonical_ignored/{refusal}")
            return
        if self.learned is not None:
            self.learned.declared(page, target)
            target, _ = self.learned.rewrite(target)
        self._record(request_key("GET", target, b""), "canonical")

    def _start_scheduled(self, request: Request, spider: Spider) -> None:
        """Record a start request, which Scrapy schedules past :meth:`request_seen`, as
        :mod:`crawler.url.start_pages` says: links back to it are filtered, but the first
        one whose response goes to another callback."""
        if not is_start_request(request):
            return
        if not self._ready or self._closed or self.redis_faults.held:
            # not opened (scrapy-redis's scheduler opens it at its first check, where a
            # refusal is raised), or Redis fails: downloaded all the same
            return
        key = self._key(request)
        self._record(key, "start")
        self.start_pages.scheduled(key, request, spider)

    def _record(self, key: bytes, what: str) -> None:
        """Record *key* as seen outside :meth:`request_seen` (a page's declared canonical
        URL, a start request), counted in ``dedup/url/<what>_recorded``; a store that fails
        records nothing (``dedup/url/<what>_unrecorded``): the page it names may be
        downloaded again, no page is lost."""
        try:
            added = self.seen.add(key)
        except (RedisUnavailable, OSError):
            self.stats.inc_value(f"dedup/url/{what}_unrecorded")
            return
        if added:
            self.new_urls += 1
            self.stats.inc_value(f"dedup/url/{what}_recorded")

    def log(self, request: Request, spider: Spider) -> None:
        if request is self._unchecked or request.meta.get(META_HELD):
            return  # held back because Redis is away, not a duplicate: logged already
        if self.debug:
            msg = "Filtered duplicate request: %(request)s (referer: %(referer)s)"
            args = {"request": request, "referer": referer_str(request)}
            logger.debug(msg, args, extra={"spider": spider})
        elif self.logdupes:
            msg = (
                "Filtered duplicate request: %(request)s"
                " - no more duplicates will be shown"
                " (see DUPEFILTER_DEBUG to show all duplicates)"
            )
            logger.debug(msg, {"request": request}, extra={"spider": spider})
            self.logdupes = False
        checked, canonical = self._last_checked
        if checked is request:
            self.report.filtered_request(request, canonical, self._last_rules)
        else:
            self.report.filtered_request(request, None, [])

    @property
    def filtered(self) -> int:
        """Requests filtered so far."""
        return self.report.filtered

    @property
    def filtered_by_rule(self) -> Counter[str]:
        """Requests filtered so far, by the canonical rule that made each a repeat."""
        return self.report.filtered_by_rule

    def _update_store_stats(self) -> None:
        self.report.publish_store(self.seen, self.new_urls)

    @property
    def seen_kind(self) -> str:
        return self.seen.stats_name

    def summary(self) -> str:
        """One line for people: what was filtered, why, and how full the store is."""
        return self.report.summary(self.seen, self.new_urls)
