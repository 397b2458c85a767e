"""A page's decision: its fingerprints, then the detector's look-up, off the reactor.

:class:`PageDecisions` is the step of :class:`~crawler.pipelines.NearDuplicatePipeline`
that takes a page to a :class:`~crawler.content.neardup.Decision`: in a thread, or on the
event loop once pages go to the worker processes from there
(:meth:`~crawler.content.page_fingerprinter.PageFingerprinter.on_loop`): the look-up of a
local index then costs less there (a few tens of microseconds) than a thread's hand-over;
a look-up in Redis stays in a thread, and so does the one that writes the state
directory's whole snapshot (every ``DEDUP_SNAPSHOT_EVERY`` documents).
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

from crawler.content.representatives import may_be_superseded
from crawler.off_reactor import in_thread
from crawler.url import canonical_links

if TYPE_CHECKING:
    from crawler.content.held_items import HeldItems
    from crawler.content.neardup import Decision, NearDuplicateDetector
    from crawler.content.page_fingerprinter import PageFingerprinter
    from crawler.content.pages import PageFingerprint, ResponseBody
    from crawler.content.text_fingerprints import TextFingerprint

#: What :meth:`PageDecisions.decide` returns: the page's fingerprints, its decision
#: (``None`` without text), whether its body was fingerprinted before, and the URL it
#: declares its own (``rel="canonical"``) where that changes anything.
PageDecision = tuple["PageFingerprint", "Decision | None", bool, "str | None"]


class StateUnwritable(Exception):
    """The content index's state directory refused a write (*error*)."""

    def __init__(self, error: OSError) -> None:
        super().__init__(str(error))
        self.error = error


class PageDecisions:
    """Decides pages with *detector*, fingerprinted by *fingerprinter*.

    * :meth:`decide` (a coroutine) returns a :data:`PageDecision`; :exc:`StateUnwritable`
      when the detector's state directory refused the write;
    * with *hold_seconds* (``DEDUP_HOLD_SECONDS``), a kept page that a better copy could
      replace is reserved in *held* in the same step as its look-up: a better copy looked
      up after it, in another thread, finds it held;
    * *declared_canonical_needed*: the page's ``rel="canonical"`` is read (a better copy
      changes something).
    """

    def __init__(
        self,
        detector: NearDuplicateDetector,
        fingerprinter: PageFingerprinter,
        held: HeldItems,
        *,
        hold_seconds: float,
        declared_canonical_needed: bool,
    ) -> None:
        self.detector = detector
        self.fingerprinter = fingerprinter
        self.held = held
        self.hold_seconds = hold_seconds
        self.declared_canonical_needed = declared_canonical_needed
        self._lock = threading.Lock()

    async def decide(
        self,
        url: str,
        text: Any,
        html: Any,
        encoding: str | None,
        downloaded: ResponseBody | None,
    ) -> PageDecision:
        fingerprinter = self.fingerprinter
        if not fingerprinter.on_loop():
            return await in_thread(self._decide, url, text, html, encoding, downloaded)
        page, same_body = await fingerprinter.fingerprint_on_loop(
            url, text, html, encoding, downloaded
        )
        detector = self.detector
        if detector.shared_index is not None or detector.snapshot_due:
            return await in_thread(self._decision, url, html, encoding, page, same_body)
        return self._decision(url, html, encoding, page, same_body)

    def _decide(
        self,
        url: str,
        text: Any,
        html: Any,
        encoding: str | None,
        downloaded: ResponseBody | None,
    ) -> PageDecision:
        page, same_body = self.fingerprinter.fingerprint(url, text, html, encoding, downloaded)
        return self._decision(url, html, encoding, page, same_body)

    def _decision(
        self, url: str, html: Any, encoding: str | None, page: PageFingerprint, same_body: bool
    ) -> PageDecision:
        if page.fingerprint is None:
            return page, None, same_body, None
        declares = None
        if self.declared_canonical_needed:
            declares = declared_canonical(html, url, encoding)  # 0.09 ms a real page
        if self.hold_seconds <= 0:
            return page, self._looked_up(url, page.fingerprint), same_body, declares
        with self._lock:
            decision = self._looked_up(url, page.fingerprint)
            if (
                decision.match is None
                and not decision.refetched
                and decision.normalized_length
                and may_be_superseded(url, declares=declares)
            ):
                self.held.reserve(url)
        return page, decision, same_body, declares

    def _looked_up(self, url: str, fingerprint: TextFingerprint) -> Decision:
        """The detector's decision; :exc:`StateUnwritable` when its state directory
        refused the write (an ``OSError`` of fingerprinting is no such thing)."""
        try:
            return self.detector.check_fingerprinted(url, fingerprint)
        except OSError as exc:
            raise StateUnwritable(exc) from exc


def declared_canonical(page: Any, url: str, encoding: str | None) -> str | None:
    """The URL *page* (HTML) declares its own in a ``<link rel="canonical">``, if any."""
    if isinstance(page, str):
        head = page[: canonical_links.HEAD_BYTES].encode("utf-8", "replace")
        encoding = "utf-8"
    elif isinstance(page, bytes):
        head = page
    else:
        return None
    try:
        return canonical_links.from_html(head, url, encoding or "utf-8")
    except (ValueError, LookupError):
        return None
