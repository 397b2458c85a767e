"""One page at a time in the crawl process, and the sign that it is not enough.

With ``DEDUP_CONTENT_WORKERS = "auto"`` the content level extracts pages in a thread of the
crawl process while that keeps up: no worker processes, so none of their memory, start-up
or copying of pages. That thread shares the interpreter with the reactor's, so a crawl
whose pages keep it busy slows the crawl itself, and its pages seldom queue for long:
Scrapy, slowed down, hands them over more slowly. :class:`ExtractionLane` lets one page in
at a time and tells when worker processes should take over: the lane was busy for
``max_busy_share`` of the last ``window`` seconds or more, or pages waited for it that long.

Nothing here imports Scrapy.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from typing import Final

#: How often a page waiting for the lane looks whether it has waited too long.
WAIT_STEP: Final = 0.05


class ExtractionLane:
    """A lane one page uses at a time, from any thread.

    * :meth:`enter` takes the lane, waiting for it while it is busy; it returns ``False``,
      without the lane, once the lane is :attr:`overloaded`, and at once after that;
    * :meth:`leave` gives the lane to the next page;
    * the lane is :attr:`overloaded` (for good) once it has been busy for
      *max_busy_share* of the last *window* seconds, or a page has waited *window*
      seconds for it.

    >>> lane = ExtractionLane(window=0.1)
    >>> lane.enter()
    True
    >>> lane.enter()  # a second page waits 0.1 s for the first, then gives up
    False
    >>> lane.overloaded
    True
    """

    def __init__(self, window: float, max_busy_share: float = 0.5) -> None:
        if window <= 0:
            raise ValueError(f"window must be positive, got {window!r}")
        if not 0 < max_busy_share <= 1:
            raise ValueError(f"max_busy_share must be in (0, 1], got {max_busy_share!r}")
        self.window = window
        self.max_busy_share = max_busy_share
        self.overloaded = False
        self._lane = threading.Lock()
        self._state = threading.Lock()
        self._started = time.monotonic()
        self._entered_at = 0.0
        #: (start, end) of the busy stretches that end within the window
        self._busy: deque[tuple[float, float]] = deque()

    def enter(self) -> bool:
        """Take the lane (see the class documentation); ``False``: it was not taken."""
        waited_since = time.monotonic()
        while not self.overloaded:
            if self._lane.acquire(timeout=WAIT_STEP):
                self._entered_at = time.monotonic()
                return True
            if time.monotonic() - waited_since >= self.window:
                self.overloaded = True
        return False

    def leave(self) -> None:
        """Give the lane up."""
        now = time.monotonic()
        with self._state:
            self._busy.append((self._entered_at, now))
            while self._busy and self._busy[0][1] < now - self.window:
                self._busy.popleft()
            since = now - self.window
            busy = sum(end - max(start, since) for start, end in self._busy)
            if now - self._started >= self.window and busy >= self.max_busy_share * self.window:
                self.overloaded = True
        self._lane.release()
