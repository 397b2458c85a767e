"""What :class:`~crawler.dupefilters.URLDupeFilter` says about its work.

* each filtered request: the rules that made it a repeat, counted in
  ``dedup/url/filtered/<rule>`` (published every 1,000 requests and at close), and one
  line in ``DEDUP_AUDIT_FILE`` (its canonical form, the rules, the parameters they removed,
  the learned rules that applied);
* the seen store's figures in ``dedup/<store>/...`` (and Redis's retries and failures),
  with a warning once a Bloom filter nears or passes ``DEDUP_URL_CAPACITY``;
* the summary line logged at close.
"""

from __future__ import annotations

import logging
import time
from collections import Counter
from typing import TYPE_CHECKING

from scrapy import signals as scrapy_signals
from scrapy.utils.request import referer_str

from crawler import defaults
from crawler.audit import URL_LEVEL, AuditLog
from crawler.log_once import LogOnce
from crawler.url.configuration import FILL_WARNING_RATIO, generations_from_settings

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.crawler import Crawler

    from crawler.url.canonical import UrlCanonicalizer
    from crawler.url.learning import RuleKey
    from crawler.url.stores import SeenStore

# the dupefilter's own logger: its warnings are where users and their log settings find them
logger = logging.getLogger("crawler.dupefilters")


class FilterReport:
    """The counts, audit lines, store figures and summary of one URL dupefilter."""

    def __init__(self, crawler: Crawler, canonicalize: UrlCanonicalizer) -> None:
        self.crawler = crawler
        self.stats = crawler.stats
        self.canonicalize = canonicalize
        self.filtered = 0
        self.filtered_by_rule: Counter[str] = Counter()
        self._audit: AuditLog | None = None
        self._audit_opened = False
        self._warn_filling = LogOnce(logger, logging.WARNING)
        self._warn_outgrown = LogOnce(logger, logging.WARNING)
        generations = generations_from_settings(crawler.settings)
        self._ttl = None if generations is None else generations.ttl
        self.clock = time.monotonic
        #: when the crawl began, by :attr:`clock`
        self.started_at = self.clock()
        self._warn_ttl_too_short = LogOnce(logger, logging.WARNING)

    def filtered_request(
        self, request: Request, canonical: str | None, learned: list[RuleKey]
    ) -> None:
        """Count *request*, filtered, and audit it. *canonical*: its canonical URL when
        the filter computed it for this request (``None`` otherwise); *learned*: the
        learned rules that rewrote it then."""
        self.stats.inc_value("dupefilter/filtered")
        self.filtered += 1
        reasons = self._reasons(request, canonical, learned)
        self.filtered_by_rule.update(reasons)
        if self._audit is not None or not self._audit_opened:
            self._write_audit(request, reasons, learned)
        if not self.filtered % 1000:
            self.publish_counts()

    def _reasons(
        self, request: Request, canonical: str | None, learned: list[RuleKey]
    ) -> list[str]:
        """The canonical rules that changed the URL of a filtered *request*;
        ``["repeat"]`` when it was already in canonical form."""
        by_rule = ["learned-rule"] if learned else []
        if request.url == canonical:
            return by_rule or ["repeat"]  # the common case, without canonicalizing again
        return self.canonicalize.explain(request.url) + by_rule or ["repeat"]

    def _write_audit(self, request: Request, reasons: list[str], learned: list[RuleKey]) -> None:
        """One URL-level line in the audit file: the filtered URL, its canonical
        form, the rules that changed it and the query parameters they removed."""
        if not self._audit_opened:
            self._audit_opened = True
            path = defaults.audit_path_from_settings(self.crawler.settings)
            if path is None:
                return
            self._audit = AuditLog(path)
            self.crawler.signals.connect(self._audit.close, signal=scrapy_signals.spider_closed)
        if self._audit is None:
            return
        if reasons == ["repeat"]:
            canonical, stripped_params = request.url, []
        else:
            trace = self.canonicalize.trace(request.url)
            canonical, stripped_params = trace.canonical, trace.stripped_params
        self._audit.write(
            {
                "level": URL_LEVEL,
                "url": request.url,
                "decision": "filtered",
                "canonical_url": canonical,
                "rules": reasons,
                "stripped_params": stripped_params,
                "method": request.method,
                "referer": referer_str(request),
                **({"learned_rules": [str(rule) for rule in learned]} if learned else {}),
            }
        )

    def publish_counts(self) -> None:
        for rule, count in self.filtered_by_rule.items():
            self.stats.set_value(f"dedup/url/filtered/{rule}", count)

    def _check_ttl(self) -> None:
        """A ``DEDUP_URL_TTL`` shorter than the crawl forgets the URLs the crawl met first
        while it still follows links to them: each is downloaded again, and links again to
        pages it forgot (a crawl that may not end). Said once, at a count of new URLs."""
        if self._ttl is None or self._warn_ttl_too_short.said:
            return
        running = self.clock() - self.started_at
        if running <= self._ttl:
            return
        self.stats.set_value("dedup/url/ttl_shorter_than_crawl", 1)
        self._warn_ttl_too_short(
            "This crawl has run %(running).0fs, longer than DEDUP_URL_TTL=%(ttl)g: the URLs "
            "it met first are forgotten and downloaded again when linked. The TTL is the age "
            "at which a later crawl downloads a page again: set it above a crawl's length, or "
            "use DEDUP_RECRAWL for a schedule per page.",
            {"running": running, "ttl": self._ttl},
        )

    def publish_store(self, seen: SeenStore, new_urls: int) -> None:
        """The counts, and the figures of the seen store *seen*; warns once when a Bloom
        filter nears its capacity, once when a local one grew past it, and once when the
        crawl has run longer than ``DEDUP_URL_TTL``."""
        self.stats.set_value("dedup/url/new", new_urls)
        self.publish_counts()
        self._check_ttl()
        if seen.connection is not None:
            self.stats.set_value("dedup/redis/retries", seen.connection.retried)
            self.stats.set_value("dedup/redis/failures", seen.connection.failures)
        store_stats = seen.stats()
        for name, value in store_stats.items():
            self.stats.set_value(f"dedup/{seen.stats_name}/{name}", value)
        if "fill_ratio" not in store_stats:
            return
        fill_ratio = store_stats["fill_ratio"]
        if fill_ratio >= FILL_WARNING_RATIO and not self._warn_filling.said:
            past_capacity = (
                "its false-positive rate rises above DEDUP_URL_ERROR_RATE"
                if seen.stats_name == "redis-bloom"
                else "it grows (more memory, slower) to keep its false-positive rate"
            )
            self._warn_filling(
                "The URL Bloom filter holds %(entries)d URLs, %(percent).0f%% of "
                "DEDUP_URL_CAPACITY; past it, %(past_capacity)s. Raise "
                "DEDUP_URL_CAPACITY for the next crawl.",
                {
                    "entries": store_stats["entries"],
                    "percent": fill_ratio * 100,
                    "past_capacity": past_capacity,
                },
            )
        if store_stats.get("filters", 1) > 1:
            self._warn_outgrown(
                "The URL Bloom filter outgrew DEDUP_URL_CAPACITY and added a filter "
                "to keep its false-positive rate (now about %(rate).2g)",
                {"rate": store_stats["false_positive_rate"]},
            )

    def summary(self, seen: SeenStore, new_urls: int) -> str:
        """One line for people: what was filtered, why, and how full the store is."""
        reasons = ", ".join(
            f"{rule}: {count}" for rule, count in self.filtered_by_rule.most_common()
        )
        store = seen.stats()
        line = (
            f"URL dedup: {self.filtered} requests filtered"
            f"{f' ({reasons})' if reasons else ''}, {new_urls} new URLs; "
            f"{seen.stats_name} store holds {store['entries']} URLs"
        )
        if "fill_ratio" in store:
            line += (
                f", {store['fill_ratio']:.1%} of capacity, estimated false-positive "
                f"rate {store['false_positive_rate']:.2g}"
            )
        return line
