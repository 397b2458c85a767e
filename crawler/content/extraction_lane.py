"""One page at a time in the crawl process, and the sign that it is not enough.

With ``DEDUP_CONTENT_WORKERS = "auto"`` the content level extracts pages in a thread of the
crawl process while that keeps up: no worker process takes pages, so none of their memory
(but a spare's, for a few seconds), start-up or copying of pages. That thread shares the
interpreter with the reactor's, so it is busy longer than its pages' CPU time, and its
being busy says little: on a polite crawl (200 ms latency) it was busy 84% of the time and
the crawl took as long as with worker processes, on a slower hour of the same machine 1.16
times as long. Two things say more. The pages
it holds: Scrapy stops downloading while the responses being processed add up to
``SCRAPER_SLOT_MAX_ACTIVE_SIZE``: a content level that keeps up holds that much now and
then (4% of the time on that polite crawl), one that does not holds it most of the time
(two thirds of the time at 50 or 100 ms latency). And the whole process's CPU time: one
that keeps about a core busy makes its reactor and its extraction wait for each other.

:class:`ExtractionLane` lets one page in at a time and tells when worker processes should
take over: the pages held reached *max_held* for *max_held_share* of the last *window*
seconds (:class:`HeldPages`), a page waited *window* seconds for the lane, or the crawl
process was busy *max_cpu_share* of a core over the last *window* seconds
(:class:`ProcessLoad`; that polite crawl, slower, kept the crawl process 1.0 core busy
extracting every page there, and took 1.04 times as long as without dedup with a worker
process from the start). The held pages' sign tells when the worker processes fall
behind in turn.

Nothing here imports Scrapy.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from collections.abc import Callable

#: How often a page waiting for the lane looks whether the lane is overloaded meanwhile.
WAIT_STEP: Final = 0.05


class HeldPages:
    """The size of the pages the content level holds, and whether they held the crawl back.

    * :meth:`hold` and :meth:`release` count the size of the pages held (bytes, or
      characters), from any thread;
    * :attr:`behind` becomes ``True`` (for good) once the pages held reached *max_held* for
      *max_held_share* of the last *window* seconds.

    >>> pages = HeldPages(window=10.0, max_held=1_000, max_held_share=0.5)
    >>> pages.hold(1_000)
    >>> pages.behind  # held back the crawl a moment, not half of the window
    False
    """

    def __init__(self, window: float, max_held: int, max_held_share: float = 0.25) -> None:
        if window <= 0:
            raise ValueError(f"window must be positive, got {window!r}")
        if max_held <= 0:
            raise ValueError(f"max_held must be positive, got {max_held!r}")
        if not 0 < max_held_share <= 1:
            raise ValueError(f"max_held_share must be in (0, 1], got {max_held_share!r}")
        self.window = window
        self.max_held = max_held
        self.max_held_share = max_held_share
        self._behind = False
        self.held = 0
        self._state = threading.Lock()
        self._full_since: float | None = None
        #: (start, end) of the stretches the pages held reached max_held, within the window
        self._full: deque[tuple[float, float]] = deque()

    def hold(self, size: int) -> None:
        """A page of *size* (bytes, or characters) reached the content level."""
        self._change_held(size)

    def release(self, size: int) -> None:
        """A page held before is done with."""
        self._change_held(-size)

    @property
    def behind(self) -> bool:
        """Counted when asked too: pages held without a change since still hold the crawl."""
        if not self._behind:
            with self._state:
                self._update(time.monotonic())
        return self._behind

    def _change_held(self, change: int) -> None:
        now = time.monotonic()
        with self._state:
            self.held += change
            full = self.held >= self.max_held
            if full and self._full_since is None:
                self._full_since = now
            elif not full and self._full_since is not None:
                self._full.append((self._full_since, now))
                self._full_since = None
            self._update(now)

    def _update(self, now: float) -> None:
        since = now - self.window
        while self._full and self._full[0][1] < since:
            self._full.popleft()
        full_for = sum(end - max(start, since) for start, end in self._full)
        if self._full_since is not None:
            full_for += now - max(self._full_since, since)
        if full_for >= self.max_held_share * self.window:
            self._behind = True


class ProcessLoad:
    """Whether this process kept *max_share* of a core busy over the last *window* seconds.

    :attr:`busy` samples the process's CPU time (*cpu_clock*, by default
    :func:`time.process_time`; *clock*: :func:`time.monotonic`) at each look and becomes
    ``True`` (for good) once the CPU time since the last sample at least *window* seconds
    old reached *max_share* of the time since.

    >>> now, cpu = [0.0], [0.0]
    >>> load = ProcessLoad(2.0, 0.8, clock=lambda: now[0], cpu_clock=lambda: cpu[0])
    >>> load.busy
    False
    >>> now[0], cpu[0] = 1.0, 1.0
    >>> load.busy  # a second at full load: not yet a whole window
    False
    >>> now[0], cpu[0] = 2.0, 1.7
    >>> load.busy  # 1.7 s of CPU over 2 s
    True
    """

    def __init__(
        self,
        window: float,
        max_share: float,
        *,
        clock: Callable[[], float] | None = None,
        cpu_clock: Callable[[], float] | None = None,
    ) -> None:
        _check_window_and_share(window, max_share)
        self.window = window
        self.max_share = max_share
        self._clock = clock or time.monotonic
        self._cpu_clock = cpu_clock or time.process_time
        self._busy = False
        self._state = threading.Lock()
        #: (time, CPU time) samples, the oldest at least *window* old once there is one
        self._samples: deque[tuple[float, float]] = deque()

    @property
    def busy(self) -> bool:
        if self._busy:
            return True
        now, cpu = self._clock(), self._cpu_clock()
        with self._state:
            samples = self._samples
            samples.append((now, cpu))
            while len(samples) > 1 and samples[1][0] <= now - self.window:
                samples.popleft()
            since, cpu_since = samples[0]
            if now - since >= self.window and cpu - cpu_since >= self.max_share * (now - since):
                self._busy = True
        return self._busy


class ExtractionLoad:
    """Whether the pages extracted over the last *window* seconds took *max_share* of a core.

    :meth:`extracted` counts a page's CPU seconds as it leaves the lane, each page at most
    its part of the limit (*max_share* of the *window* over *min_pages*: one slow page, a
    large one or the one that imports trafilatura, is no rate); :attr:`busy` becomes
    ``True`` (for good) once *min_pages* pages or more left it within the last *window*
    seconds and their CPU time reached *max_share* of the window.

    >>> now = [0.0]
    >>> load = ExtractionLoad(1.0, 0.25, min_pages=3, clock=lambda: now[0])
    >>> load.extracted(0.5)  # one slow page: not a rate (it counts for 0.25 / 3 s)
    >>> for _ in range(2):
    ...     now[0] += 0.1
    ...     load.extracted(0.05)
    >>> load.busy  # 0.18 s within a second
    False
    >>> now[0] += 0.1
    >>> load.extracted(0.08)
    >>> load.busy  # 0.26 s within a second
    True
    """

    def __init__(
        self,
        window: float,
        max_share: float,
        *,
        min_pages: int = 5,
        clock: Callable[[], float] | None = None,
    ) -> None:
        _check_window_and_share(window, max_share)
        self.window = window
        self.max_share = max_share
        self.min_pages = min_pages
        self.max_page_share = max_share * window / min_pages
        self.busy = False
        self._clock = clock or time.monotonic
        self._state = threading.Lock()
        #: (time, CPU seconds) of the pages that left the lane within the window
        self._pages: deque[tuple[float, float]] = deque()
        self._cpu = 0.0

    def extracted(self, cpu_seconds: float) -> None:
        """A page left the lane; its extraction took *cpu_seconds*."""
        now = self._clock()
        counted = min(cpu_seconds, self.max_page_share)
        with self._state:
            self._pages.append((now, counted))
            self._cpu += counted
            while self._pages and self._pages[0][0] <= now - self.window:
                self._cpu -= self._pages.popleft()[1]
            if len(self._pages) >= self.min_pages and self._cpu >= self.max_share * self.window:
                self.busy = True


def _check_window_and_share(window: float, max_share: float) -> None:
    if window <= 0:
        raise ValueError(f"window must be positive, got {window!r}")
    if max_share <= 0:
        raise ValueError(f"max_share must be positive, got {max_share!r}")


class ExtractionLane:
    """A lane one page uses at a time, from any thread.

    * :meth:`hold` and :meth:`release` count the size of the pages the content level holds
      (waiting for the lane, or in it: :attr:`pages`);
    * :meth:`enter` takes the lane, waiting for it while it is busy; it returns ``False``,
      without the lane, once the lane is :attr:`overloaded`, and at once after that;
    * :meth:`leave` gives the lane to the next page;
    * the lane is :attr:`overloaded` (for good) once the pages held were
      :attr:`HeldPages.behind`, a page has waited *window* seconds for it, (with
      *max_cpu_share*) the process was :attr:`ProcessLoad.busy`, or (with *extraction*)
      its own pages were :attr:`ExtractionLoad.busy`; :attr:`overloaded_by` says which;
    * ``enter(overloaded_too=True)`` takes it even then (while worker processes start).

    >>> lane = ExtractionLane(window=0.1, max_held=1_000)
    >>> lane.enter()
    True
    >>> lane.enter()  # a second page waits 0.1 s for the first, then gives up
    False
    >>> lane.overloaded
    True
    """

    def __init__(
        self,
        window: float,
        max_held: int,
        max_held_share: float = 0.25,
        max_cpu_share: float | None = None,
        extraction: ExtractionLoad | None = None,
    ) -> None:
        self.pages = HeldPages(window, max_held, max_held_share)
        self.load = ProcessLoad(window, max_cpu_share) if max_cpu_share is not None else None
        self.extraction = extraction
        self.window = window
        self._waited_out = False
        self._turns = threading.Condition()
        self._queue: deque[object] = deque()
        self._taken = False

    @property
    def overloaded(self) -> bool:
        return self.overloaded_by is not None

    @property
    def overloaded_by(self) -> str | None:
        """The first sign that overloaded the lane: ``"held"``, ``"waited"``, ``"load"`` or
        ``"extraction"``; ``None`` while it is not."""
        if self.pages.behind:
            return "held"
        if self._waited_out:
            return "waited"
        if self.load is not None and self.load.busy:
            return "load"
        if self.extraction is not None and self.extraction.busy:
            return "extraction"
        return None

    @property
    def held(self) -> int:
        return self.pages.held

    def hold(self, size: int) -> None:
        """A page of *size* (bytes, or characters) reached the content level."""
        self.pages.hold(size)

    def release(self, size: int) -> None:
        """A page held before is done with."""
        self.pages.release(size)

    def enter(self, *, overloaded_too: bool = False) -> bool:
        """Take the lane (see the class documentation); ``False``: it was not taken. Pages
        take it in the order they came (a lock lets one thread take it again and again
        while another waits). *overloaded_too*: take it even once it is overloaded (while
        the worker processes start), unless the page waited *window* seconds for it."""
        ticket = object()
        with self._turns:
            self._queue.append(ticket)
            deadline = time.monotonic() + self.window
            waited_out = False
            try:
                while (overloaded_too or not self.overloaded) and (
                    self._taken or self._queue[0] is not ticket
                ):
                    left = deadline - time.monotonic()
                    if left <= 0:
                        self._waited_out = waited_out = True
                        break
                    self._turns.wait(min(left, WAIT_STEP))
            finally:
                self._queue.remove(ticket)
            if waited_out or (self.overloaded and not overloaded_too):
                self._turns.notify_all()
                return False
            self._taken = True
            return True

    def leave(self, cpu_seconds: float = 0.0) -> None:
        """Give the lane up; the page's extraction took *cpu_seconds*."""
        try:
            if self.extraction is not None:
                self.extraction.extracted(cpu_seconds)
        finally:
            with self._turns:
                self._taken = False
                self._turns.notify_all()
