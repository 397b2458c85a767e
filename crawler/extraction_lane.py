"""One page at a time in the crawl process, and the sign that it is not enough.

With ``DEDUP_CONTENT_WORKERS = "auto"`` the content level extracts pages in a thread of the
crawl process while that keeps up: no worker processes, so none of their memory, start-up
or copying of pages. :class:`ExtractionLane` lets one page in at a time and tells when
pages have queued for it so long that worker processes should take over part of the work:
the lane has been busy without a break, with pages waiting, for ``busy_seconds``.

Nothing here imports Scrapy.
"""

from __future__ import annotations

import threading
import time
from typing import Final

#: How often a page waiting for the lane looks whether it has waited too long.
WAIT_STEP: Final = 0.05


class ExtractionLane:
    """A lane one page uses at a time, from any thread.

    * :meth:`try_enter` takes the lane when it is free, and never waits;
    * :meth:`enter` waits for it while it is busy, and returns ``False`` without it once
      the lane has been busy for ``busy_seconds`` without a break while pages waited
      (:attr:`overloaded` is then ``True`` for good, and :meth:`enter` no longer waits);
    * :meth:`leave` gives the lane to the next page; a busy stretch ends when the lane
      is left with no page waiting.

    >>> lane = ExtractionLane(busy_seconds=0.1)
    >>> lane.enter()
    True
    >>> lane.enter()  # a second page waits 0.1 s for the first, then gives up
    False
    >>> lane.overloaded, lane.try_enter()
    (True, False)
    >>> lane.leave()
    >>> lane.try_enter()
    True
    """

    def __init__(self, busy_seconds: float) -> None:
        if busy_seconds <= 0:
            raise ValueError(f"busy_seconds must be positive, got {busy_seconds!r}")
        self.busy_seconds = busy_seconds
        self.overloaded = False
        self._lane = threading.Lock()
        self._state = threading.Lock()
        self._waiting = 0
        self._busy_since = 0.0

    def try_enter(self) -> bool:
        """Take the lane if it is free."""
        if not self._lane.acquire(blocking=False):
            return False
        with self._state:
            if not self._waiting:  # a new busy stretch
                self._busy_since = time.monotonic()
        return True

    def enter(self) -> bool:
        """Take the lane, waiting for it (see the class documentation); ``False``: it was
        not taken."""
        if self.try_enter():
            return True
        if self.overloaded:
            return False
        with self._state:
            self._waiting += 1
        try:
            while not self._lane.acquire(timeout=WAIT_STEP):
                if self.overloaded or time.monotonic() - self._busy_since >= self.busy_seconds:
                    self.overloaded = True
                    return False
        finally:
            with self._state:
                self._waiting -= 1
        return True

    def leave(self) -> None:
        """Give the lane up."""
        self._lane.release()
