"""Kept items that wait a while in case a better copy of their page comes
(``DEDUP_HOLD_SECONDS``, see :mod:`crawler.content.representatives`)."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

from scrapy.utils.asyncio import call_later
from scrapy.utils.defer import maybe_deferred_to_future
from twisted.internet.defer import Deferred

if TYPE_CHECKING:
    from collections.abc import Callable

#: What ends a hold early: the better copy's URL, and why it is better.
Supersession = tuple[str, str]


class HeldItems:
    """Items waiting, by their URL.

    * :meth:`reserve` (from any thread) says an item will be held: from then on a better copy
      can take its place, even before its wait begins (the better copy may be decided in
      another thread, and reach the event loop first);
    * :meth:`hold` waits, on the crawl's event loop (asyncio's when Scrapy runs on it, else
      the Twisted reactor), never in a thread;
    * :meth:`supersede` ends a wait, or the wait to come, with the better copy.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        #: reserved, not waiting yet -> the better copy met meanwhile, if any
        self._reserved: dict[str, Supersession | None] = {}
        self._waiting: dict[str, Callable[[Supersession | None], None]] = {}
        self._sizes: dict[str, int] = {}
        #: the most items held at once, and the most bytes (or characters) of their pages
        self.most = 0
        self.most_bytes = 0

    def __contains__(self, url: object) -> bool:
        with self._lock:
            return url in self._waiting or url in self._reserved

    def reserve(self, url: str) -> None:
        """*url*'s item will be held (:meth:`hold`)."""
        with self._lock:
            if url not in self._waiting:
                self._reserved.setdefault(url, None)

    async def hold(self, url: str, seconds: float, size: int = 0) -> Supersession | None:
        """Wait *seconds*, or until :meth:`supersede` names a better copy of *url*'s page
        (returned, at once if one was named since :meth:`reserve`). A URL held already is
        not held twice: ``None`` at once. *size*: the page's, counted while it waits."""
        ended: Deferred[Supersession | None] = Deferred()

        def end(outcome: Supersession | None) -> None:
            with self._lock:  # out of the table first: a later supersede() finds it gone
                if self._waiting.get(url) is end:
                    del self._waiting[url]
                    del self._sizes[url]
            if not ended.called:
                ended.callback(outcome)

        with self._lock:
            superseded = self._reserved.pop(url, None)
            if superseded is not None or url in self._waiting or seconds <= 0:
                return superseded
            self._waiting[url] = end
            self._sizes[url] = size
            self.most = max(self.most, len(self._waiting))
            self.most_bytes = max(self.most_bytes, sum(self._sizes.values()))
        timer = call_later(seconds, end, None)
        try:
            outcome: Supersession | None = await maybe_deferred_to_future(ended)
            return outcome
        finally:
            end(None)  # a cancelled wait leaves the table too
            timer.cancel()

    def supersede(self, url: str, better: str, reason: str) -> bool:
        """End *url*'s wait, or the wait to come, with *better* (see :meth:`hold`);
        ``False`` when *url* is neither held nor reserved (it left already)."""
        with self._lock:
            if url in self._reserved:
                self._reserved[url] = (better, reason)
                return True
            end = self._waiting.get(url)
        if end is None:
            return False
        end((better, reason))
        return True
