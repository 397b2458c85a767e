"""Item pipelines: ``NearDuplicatePipeline`` drops (or marks) items whose page
text was seen before; ``ItemKeyPipeline`` drops items whose business key
(``DEDUP_ITEM_KEY_FIELDS``) was seen before.

Enable them with the add-on, or by hand::

    ITEM_PIPELINES = {
        "crawler.pipelines.NearDuplicatePipeline": 100,
        "crawler.pipelines.ItemKeyPipeline": 110,
    }
"""

from __future__ import annotations

import logging
import time
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from itemadapter import ItemAdapter
from scrapy.exceptions import CloseSpider, NotConfigured

from crawler import defaults
from crawler import signals as dedup_signals
from crawler.closing import close_spider
from crawler.content.configuration import (
    CONTENT_ACTIONS,
    action_from_settings,
    content_backend_from_settings,
    detector_from_settings,
    extract_timeout_from_settings,
    hold_seconds_from_settings,
    item_text_fields_from_settings,
    keep_html_from_settings,
    max_page_bytes_from_settings,
    page_fields_from_settings,
    redis_content_index,
    workers_from_settings,
)
from crawler.content.held_items import HeldItems
from crawler.content.item_pages import item_pages, item_text
from crawler.content.neardup import NearDuplicateDetector
from crawler.content.page_fingerprinter import PageFingerprinter
from crawler.content.pages import ResponseBody
from crawler.content.representatives import (
    STRONG_REASONS,
    better_representative,
    may_be_superseded,
    same_page,
)
from crawler.exceptions import DuplicateItem
from crawler.item_key_pipeline import ItemKeyPipeline
from crawler.log_once import LogOnce
from crawler.off_reactor import running_loop
from crawler.pipeline_decisions import PageDecisions, StateUnwritable
from crawler.pipeline_report import ContentReport
from crawler.redis.connection import (
    RedisStartRefused,
    RedisUnavailable,
    redact,
)
from crawler.state.lock import lock_state_dir, unlock_state_dir
from crawler.url.configuration import (
    recrawl_for,
    snapshot_every_from_settings,
    state_dir_from_settings,
    state_dir_setting,
)

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from typing_extensions import Self

    from crawler.content.neardup import Decision, Match
    from crawler.url.recrawl import Recrawl

__all__ = ["ItemKeyPipeline", "NearDuplicatePipeline"]

logger = logging.getLogger(__name__)

_T = TypeVar("_T")


#: What a page without main text gives the recrawl to compare: it stays "unchanged".
_NO_TEXT_HASH = bytes(8)


class NearDuplicatePipeline:
    """Drop items whose main text duplicates an earlier item's, exactly or nearly.

    * the text comes from ``DEDUP_TEXT_FIELD`` when the item has it, else the
      main text is extracted (trafilatura) from ``DEDUP_HTML_FIELD``; items
      with neither pass through untouched;
    * extraction and fingerprinting run never on the reactor: by default in a thread
      of the crawl process, one page at a time, and in worker processes instead once
      pages wait for it (``DEDUP_CONTENT_WORKERS = "auto"``); or in so many worker
      processes (in threads when 0); the look-up and insert happen together;
    * ``DEDUP_CONTENT_ACTION = "drop"`` raises ``DuplicateItem``, a ``DropItem`` (logged at INFO)
      naming the earlier URL and the distance; ``"mark"`` keeps the item and
      adds ``duplicate_of``, ``distance`` and ``simhash``;
    * the HTML field is removed from items (``DEDUP_KEEP_HTML`` keeps it);
    * ``DEDUP_AUDIT_FILE`` gets one JSON line per decision.
    """

    def __init__(
        self,
        crawler: Crawler,
        detector: NearDuplicateDetector,
        *,
        action: str = defaults.DEDUP_CONTENT_ACTION,
        html_field: str = defaults.DEDUP_HTML_FIELD,
        text_field: str = defaults.DEDUP_TEXT_FIELD,
        item_text_fields: list[str] | None = None,
        keep_html: bool = defaults.DEDUP_KEEP_HTML,
        max_page_bytes: int = defaults.DEDUP_MAX_PAGE_BYTES,
        audit_path: Path | None = None,
        state_dir: Path | None = None,
        workers: int | str | None = defaults.DEDUP_CONTENT_WORKERS,
        extract_timeout: float = defaults.DEDUP_EXTRACT_TIMEOUT,
        hold_seconds: float = defaults.DEDUP_HOLD_SECONDS,
        recrawl: Recrawl | None = None,
    ) -> None:
        if action not in CONTENT_ACTIONS:
            raise ValueError(
                f"DEDUP_CONTENT_ACTION={action!r} is not an action; use 'drop' or 'mark'"
            )
        self.crawler = crawler
        self.stats = crawler.stats
        self.detector = detector
        self.action = action
        self.html_field = html_field
        self.text_field = text_field
        self.item_text_fields = list(item_text_fields or [])
        self._item_pages = item_pages(crawler)
        self.keep_html = keep_html
        self.max_page_bytes = max_page_bytes
        self.audit_path = audit_path
        self.state_dir = state_dir
        self.hold_seconds = hold_seconds
        self.recrawl = recrawl
        if recrawl is not None:
            recrawl.hashes_main_text = True  # unchanged pages are told by their main text
        self._held = HeldItems()
        #: in this crawl: kept URL -> the URL its page declared its own (rel=canonical)
        self._declared: dict[str, str] = {}
        #: in this crawl: kept URL -> the URLs that redirected to its page
        self._redirected_from: dict[str, tuple[str, ...]] = {}
        #: in this crawl: URL of a kept copy -> the better copy that took its place
        self._better: dict[str, str] = {}
        self.fingerprinter = PageFingerprinter(
            crawler.stats,
            {
                "max_bytes": max_page_bytes,
                "extractor": detector.extractor or defaults.DEDUP_EXTRACTOR,
                "fold_repeats": detector.fold_repeats,
                "min_repeats": detector.min_repeats,
            },
            workers=workers,
            extract_timeout=extract_timeout,
            max_held=crawler.settings.getint("SCRAPER_SLOT_MAX_ACTIVE_SIZE", 5_000_000),
        )
        self._decisions = PageDecisions(
            detector,
            self.fingerprinter,
            self._held,
            hold_seconds=hold_seconds,
            declared_canonical_needed=hold_seconds > 0 or action == "mark",
        )
        self._locked = False
        self._warn_state_unwritable = LogOnce(logger, logging.ERROR)
        self.report = ContentReport(
            crawler.stats, action=action, html_field=html_field, text_field=text_field
        )
        #: outcome -> items (the report's)
        self.counts = self.report.counts
        self._warn_redis_failing = LogOnce(logger, logging.WARNING)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        settings = crawler.settings
        switch = defaults.switched_off(settings, "DEDUP_CONTENT_ENABLED")
        if switch:
            raise NotConfigured(f"{switch} is False")
        shared_index = (
            redis_content_index(settings, crawler.spidercls.name)
            if content_backend_from_settings(settings) == "redis"
            else None
        )
        detector = detector_from_settings(settings, shared_index)
        state_dir = state_dir_from_settings(settings) if shared_index is None else None
        # a damaged state directory, an unreachable Redis or a shared index built with
        # other rules stops the crawl here, before its spider opens
        if state_dir is not None:
            detector.check_state_files(state_dir)
        if shared_index is not None:
            shared_index.open(detector.signature)
        html_field, text_field = page_fields_from_settings(settings)
        return cls(
            crawler,
            detector,
            action=action_from_settings(settings),
            html_field=html_field,
            text_field=text_field,
            item_text_fields=item_text_fields_from_settings(settings),
            keep_html=keep_html_from_settings(settings),
            max_page_bytes=max_page_bytes_from_settings(settings),
            audit_path=defaults.audit_path_from_settings(settings),
            state_dir=state_dir,
            workers=workers_from_settings(settings),
            extract_timeout=extract_timeout_from_settings(settings),
            hold_seconds=hold_seconds_from_settings(settings),
            recrawl=recrawl_for(crawler),
        )

    def open_spider(self) -> None:
        shared_index = self.detector.shared_index
        if shared_index is not None:
            try:
                shared_index.open(self.detector.signature)
            except RedisStartRefused as exc:
                # said in one ERROR line; Scrapy closes a spider that fails to open so
                raise CloseSpider("dedup_redis_unavailable") from exc
            logger.info(
                "Content dedup shares its index in Redis at %(url)s, key {%(base)s}: "
                "%(count)d documents",
                {
                    "url": redact(shared_index.connection.url),
                    "base": shared_index.base,
                    "count": len(shared_index),
                },
            )
        elif self.state_dir is not None:
            lock_state_dir(self.state_dir, state_dir_setting(self.crawler.settings))
            self._locked = True
            self.detector.open(
                self.state_dir, snapshot_every=snapshot_every_from_settings(self.crawler.settings)
            )
            logger.info(
                "Content dedup state in %(dir)s: %(count)d entries from earlier runs "
                "(documents kept and their near copies)",
                {"dir": self.state_dir, "count": len(self.detector)},
            )
        self.fingerprinter.open(running_loop())
        self.report.open_audit(self.audit_path)

    def close_spider(self) -> None:
        self.fingerprinter.close()
        try:
            self.detector.close()
        except OSError as exc:
            logger.error(
                "Content dedup cannot write its snapshot at close (%(error)s): its journal "
                "keeps every document, and the next start reads it",
                {"error": exc},
            )
        if self._locked and self.state_dir is not None:
            unlock_state_dir(self.state_dir)
            self._locked = False
        self.report.close_audit()
        logger.info("%(summary)s", {"summary": self.summary()})

    async def process_item(self, item: Any) -> Any:
        adapter = ItemAdapter(item)
        url = str(adapter.get("url") or "")
        text = adapter.get(self.text_field)
        html = adapter.get(self.html_field)
        encoding = self._encoding(adapter)
        source = self._item_pages.take(item)
        redirected_from = source.redirected_from if source is not None else ()
        if text is None and html is None:
            if source is None:
                self.report.count("no_page")
                self.report.audit(url, "kept", "no_page", None, None)
                return item
            url = url or source.key
            if source.body is not None:
                html, encoding = source.body, source.encoding
                self.stats.inc_value("dedup/content/from_response")
            else:
                text = item_text(adapter, self.item_text_fields)
                self.stats.inc_value("dedup/content/from_item_fields")
        downloaded = None
        if source is not None and source.html_body is not None and html is source.html_text:
            downloaded = ResponseBody(source.html_body, source.encoding or "utf-8")
        if not self.keep_html and self.html_field in adapter:
            del adapter[self.html_field]
        started = time.perf_counter()
        # Scrapy bounds what waits here (CONCURRENT_ITEMS a response, and no new downloads
        # while SCRAPER_SLOT_MAX_ACTIVE_SIZE of responses are being processed)
        try:
            with self.fingerprinter.waiting(html if text is None else text):
                page, decision, same_body, declares = await self._decisions.decide(
                    url, text, html, encoding, downloaded
                )
        except RedisUnavailable as exc:
            self.report.count("unchecked")
            self.report.audit(url, "kept", "unchecked", None, None)
            self._warn_redis_failing(
                "Content dedup: %(error)s; items are kept unchecked meanwhile, counted "
                "in dedup/content/unchecked",
                {"error": exc},
            )
            return item
        except StateUnwritable as exc:
            self.report.count("unchecked")
            self._state_unwritable(exc.error)
            return item
        self.stats.inc_value("dedup/content/seconds", time.perf_counter() - started)  # type: ignore[arg-type]
        if page.worker_start_cpu and not same_body:
            self.stats.inc_value("dedup/extract/worker_start_cpu_seconds", page.worker_start_cpu)  # type: ignore[arg-type]
        if page.status == "timeout":
            self.report.count("timeout")
            self.report.audit(url, "kept", "timeout", None, None)
            return item
        if same_body:
            self.stats.inc_value("dedup/extract/same_body")
        else:
            self.stats.inc_value("dedup/extract/extractor_cpu_seconds", page.extractor_cpu)  # type: ignore[arg-type]
            self.stats.inc_value("dedup/extract/fingerprints_cpu_seconds", page.fingerprints_cpu)  # type: ignore[arg-type]
            if page.status != "ok":
                self.stats.inc_value(f"dedup/extract/{page.status}")
            if page.fallback:
                self.stats.inc_value("dedup/extract/fallback")
        if self.recrawl is not None and text is None:
            page_url = source.url if source is not None else url
            content_hash = _NO_TEXT_HASH if decision is None else decision.content_hash
            try:
                unchanged = self.recrawl.text_hashed(page_url, content_hash)
            except (OSError, RedisUnavailable):
                unchanged = False  # kept: the record stays as its download left it
            if unchanged:
                return self._unchanged(item, url, decision)
        if decision is None or not decision.normalized_length:
            self.report.count("no_text")
            self.report.audit(url, "kept", "no_text", decision, None)
            return item
        match = decision.match
        if decision.refetched:
            self.report.count("refetched")
            if decision.repeated:  # its item passed earlier in this crawl: not a second one
                return self._refetched_in_crawl(item, url, decision)
        if match is None:
            if decision.refetched:  # kept in an earlier run (a recrawl after the TTL, a resume)
                self.report.audit(url, "kept", "refetched", decision, None)
                return item
            self._decided(url, url)
            if decision.rejected is not None:
                self.report.count("rejected")
            if redirected_from:
                self._redirected_from[url] = redirected_from
            return await self._kept(item, url, declares, decision, "unique", size=_size(html, text))
        self._decided(url, match.key)
        match = replace(match, key=self._representative(match.key))
        better = self._better_than(url, match.key, redirected_from)
        if better is not None and (
            match.key in self._held or (self.action == "mark" and better in STRONG_REASONS)
        ):
            if redirected_from:
                self._redirected_from[url] = redirected_from
            return await self._better_copy(
                item, url, declares, decision, match, better, _size(html, text)
            )
        if better not in STRONG_REASONS:
            better = None  # https, shorter: a preference between ordinary URLs, not a copy
        self.report.count(match.kind)
        if match.stage == "second":
            self.stats.inc_value("dedup/content/second_stage")
        if self.action == "mark":
            self.report.audit(url, "marked", match.kind, decision, match)
            adapter["duplicate_of"] = match.key
            adapter["distance"] = match.distance
            adapter["simhash"] = f"{decision.fingerprint:016x}"
            adapter["similarity"] = match.similarity
            return item
        if better is not None:  # the first copy left the pipeline already: it stays kept
            self.stats.inc_value("dedup/content/better_copy_dropped")
        self.report.audit(url, "dropped", match.kind, decision, match, better_copy=better)
        how = (
            "Hamming distance 0"
            if match.kind == "exact"
            else f"Hamming distance {match.distance}, {match.stage} stage, "
            f"word-pair similarity {match.similarity:.2f}"
        )
        raise DuplicateItem(
            f"{match.kind.capitalize()} duplicate of {match.key} ({how}): {url}",
            log_level="INFO",
        )

    async def _kept(
        self,
        item: Any,
        url: str,
        declares: str | None,
        decision: Decision,
        reason: str,
        supersedes: str | None = None,
        size: int = 0,
    ) -> Any:
        """Keep *item*; one reserved for a hold (:meth:`_decide`) waits first for
        ``DEDUP_HOLD_SECONDS``, and leaves as a copy of a better one met meanwhile."""
        if declares is not None and not same_page(declares, url):
            self._declared[url] = declares
        superseded = None
        if url in self._held:
            self.stats.inc_value("dedup/content/held")
            started = time.monotonic()
            superseded = await self._held.hold(url, self.hold_seconds, size)
            self.stats.inc_value("dedup/content/held_seconds", time.monotonic() - started)  # type: ignore[arg-type]
            self.stats.max_value("dedup/content/held_most", self._held.most)
            self.stats.max_value("dedup/content/held_bytes_most", self._held.most_bytes)
        if superseded is None:
            self.report.count("unique")
            self.report.audit(url, "kept", reason, decision, None, supersedes=supersedes)
            return item
        better, why = superseded
        self.report.count("superseded")
        if self.action == "mark":
            self.report.audit(url, "marked", "superseded", decision, None, superseded_by=better)
            ItemAdapter(item)["duplicate_of"] = better
            return item
        self.report.audit(url, "dropped", "superseded", decision, None, superseded_by=better)
        raise DuplicateItem(
            f"A better copy of its page came while it was held ({why}): {better} instead of {url}",
            log_level="INFO",
        )

    async def _better_copy(
        self,
        item: Any,
        url: str,
        declares: str | None,
        decision: Decision,
        match: Match,
        reason: str,
        size: int,
    ) -> Any:
        """*url* represents the text of the earlier copy *match* names better: the earlier
        item, held, leaves as a copy of this one; with ``"mark"``, the audit record of this
        one names the earlier item, which left already. This one is kept (and held in turn
        when a better copy could still come)."""
        self.stats.inc_value("dedup/content/better_copy")
        self._better[match.key] = url
        if not self._held.supersede(match.key, url, reason):
            self.stats.inc_value("dedup/content/superseded_exported")
        if self.hold_seconds > 0 and may_be_superseded(url, declares=declares):
            self._held.reserve(url)
        return await self._kept(item, url, declares, decision, "better_copy", match.key, size)

    def _better_than(
        self, url: str, kept: str, redirected_from: tuple[str, ...] = ()
    ) -> str | None:
        """Why *url*, reached through the redirects *redirected_from*, represents its text
        better than the copy *kept* (see :mod:`crawler.content.representatives`), or
        ``None``."""
        return better_representative(
            url,
            kept,
            kept_declares=self._declared.get(kept),
            candidate_redirected_from=redirected_from,
            kept_redirected_from=self._redirected_from.get(kept, ()),
        )

    def _representative(self, url: str) -> str:
        """The copy that represents *url*'s text now: *url*, or the better copy that took
        its place, and so on."""
        for _ in range(len(self._better)):
            if url not in self._better:
                break
            url = self._better[url]
        return url

    def _unchanged(self, item: Any, url: str, decision: Decision | None) -> Any:
        """Mark or drop the item of a page recrawled with the main text it had at its last
        fetch (``DEDUP_RECRAWL``): not a copy of another page, nothing new."""
        if self.action == "mark":
            self.report.count("unchanged")
            self.report.audit(url, "marked", "unchanged", decision, None)
            ItemAdapter(item)["unchanged"] = True
            return item
        self.report.count("unchanged")
        self.report.audit(url, "dropped", "unchanged", decision, None)
        raise DuplicateItem(f"Unchanged since its last fetch: {url}", log_level="INFO")

    def _refetched_in_crawl(self, item: Any, url: str, decision: Decision) -> Any:
        """Mark or drop the item of a page fetched again in this crawl with the same text
        (a ``dont_filter`` request, a start page without the URL level)."""
        self.stats.inc_value("dedup/content/refetched_in_crawl")
        if self.action == "mark":
            self.report.audit(url, "marked", "refetched", decision, None)
            adapter = ItemAdapter(item)
            adapter["duplicate_of"], adapter["distance"] = url, 0
            return item
        self.report.audit(url, "dropped", "refetched", decision, None)
        raise DuplicateItem(f"Fetched again in this crawl, the same text: {url}", log_level="INFO")

    def _decided(self, url: str, content_key: str) -> None:
        self.crawler.signals.send_catch_log(
            dedup_signals.content_decided, url=url, content_key=content_key
        )

    def _state_unwritable(self, error: OSError) -> None:
        """The state directory refused a write (full, or read-only): items are kept
        unchecked, and the spider closes."""
        first_fault = self._warn_state_unwritable(
            "Content dedup cannot write its state in %(dir)s (%(setting)s): %(error)s; "
            "closing the spider; items are kept unchecked meanwhile, counted in "
            "dedup/content/unchecked",
            {
                "dir": self.state_dir,
                "setting": state_dir_setting(self.crawler.settings),
                "error": error,
            },
        )
        if first_fault:  # the spider closes once
            close_spider(self.crawler, "dedup_state_unwritable")

    @staticmethod
    def _encoding(adapter: ItemAdapter) -> str | None:
        encoding = adapter.get("encoding")
        return encoding if isinstance(encoding, str) else None

    def summary(self) -> str:
        return self.report.summary()


def _size(html: Any, text: Any) -> int:
    """The length of the page (or text) an item brought."""
    page = html if text is None else text
    return len(page) if isinstance(page, (str, bytes)) else 0
