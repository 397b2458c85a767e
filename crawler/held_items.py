"""Kept items that wait a while in case a better copy of their page comes
(``DEDUP_HOLD_SECONDS``, see :mod:`crawler.representatives`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from scrapy.utils.asyncio import call_later
from scrapy.utils.defer import maybe_deferred_to_future
from twisted.internet.defer import Deferred

if TYPE_CHECKING:
    from collections.abc import Callable

#: What ends a hold early: the better copy's URL, and why it is better.
Supersession = tuple[str, str]


class HeldItems:
    """Items waiting, by their URL; :meth:`hold` waits, :meth:`supersede` ends a wait.

    Waits run on the crawl's event loop (asyncio's when Scrapy runs on it, else the
    Twisted reactor), never in a thread.
    """

    def __init__(self) -> None:
        self._waiting: dict[str, Callable[[Supersession], None]] = {}
        #: the most items held at once
        self.most = 0

    def __len__(self) -> int:
        return len(self._waiting)

    def __contains__(self, url: object) -> bool:
        return url in self._waiting

    async def hold(self, url: str, seconds: float) -> Supersession | None:
        """Wait *seconds*, or until :meth:`supersede` names a better copy of *url*'s page
        (returned). A URL held already is not held twice: ``None`` at once."""
        if url in self._waiting or seconds <= 0:
            return None
        ended: Deferred[Supersession | None] = Deferred()

        def end(outcome: Supersession | None) -> None:
            if not ended.called:
                ended.callback(outcome)

        timer = call_later(seconds, end, None)
        self._waiting[url] = end
        self.most = max(self.most, len(self._waiting))
        try:
            outcome: Supersession | None = await maybe_deferred_to_future(ended)
            return outcome
        finally:
            self._waiting.pop(url, None)
            timer.cancel()

    def supersede(self, url: str, better: str, reason: str) -> bool:
        """End *url*'s wait: *better* represents its page (see :meth:`hold`); ``False`` when
        *url* is not held (it left already)."""
        end = self._waiting.pop(url, None)
        if end is None:
            return False
        end((better, reason))
        return True
