"""Pages fingerprinted off the reactor: in a thread of the crawl process while it keeps
up, or in worker processes, which a stuck page cannot hold for ever.

:class:`PageFingerprinter` is what :class:`~crawler.pipelines.NearDuplicatePipeline` asks
for a page's fingerprints (:func:`crawler.content.pages.fingerprint_page`). It decides where the
page is extracted (``DEDUP_CONTENT_WORKERS``), starts, replaces and stops the worker
processes, gives a page up after ``DEDUP_EXTRACT_TIMEOUT``, and fingerprints a body seen
lately only once. Its :meth:`~PageFingerprinter.fingerprint` blocks: call it from a
thread, never from the reactor's; once the worker processes run on asyncio's event loop
and have started, :meth:`~PageFingerprinter.fingerprint_on_loop` is awaited there instead.
"""

from __future__ import annotations

import asyncio
import logging
import os
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from crawler import defaults
from crawler.content.bodies import BodiesInFlight
from crawler.content.extraction_lane import ExtractionLane, ExtractionLoad, HeldPages
from crawler.content.loop_worker_processes import LoopWorkerProcesses
from crawler.content.pages import (
    EncodedPage,
    PageFingerprint,
    ResponseBody,
    body_for_worker,
    fingerprint_page,
    fingerprint_page_within,
    single_threaded_blas,
    start_worker,
)
from crawler.content.spare_worker import SpareWorker
from crawler.content.worker_processes import WorkerDied, WorkerProcesses, WorkerStuck

if TYPE_CHECKING:
    from collections.abc import Iterator

    from scrapy.statscollectors import StatsCollector

logger = logging.getLogger(__name__)

#: Seconds past ``DEDUP_EXTRACT_TIMEOUT`` after which a worker that has not given a page
#: up is taken for stuck (in one call into C code) and replaced.
STUCK_WORKER_MARGIN = 2.0
#: With ``DEDUP_CONTENT_WORKERS = "auto"``: worker processes start once the pages the
#: content level holds reached ``SCRAPER_SLOT_MAX_ACTIVE_SIZE`` (Scrapy downloads nothing
#: more meanwhile) for :data:`AUTO_WORKERS_HELD_SHARE` of the last this many seconds, or a
#: page waited for the crawl process's extraction so long.
AUTO_WORKERS_AFTER = 2.0
#: 4% of the time on a polite crawl that extracting in the crawl process did not slow, two
#: thirds at 50 or 100 ms latency, where it did (``bench/crawl_overhead.py``).
AUTO_WORKERS_HELD_SHARE = 0.25
#: With ``"auto"``, worker processes start too once the crawl process kept this share of a
#: core busy over the last :data:`AUTO_WORKERS_AFTER` seconds: its reactor and its
#: extraction then wait for each other (one interpreter). A crawl without dedup kept 0.35
#: of a core busy at 200 ms latency; extracting there too, 1.0 (``bench/crawl_overhead.py``).
AUTO_WORKERS_CPU_SHARE = 0.8
#: With ``"auto"``, worker processes start too once the pages extracted in the crawl
#: process over the last this many seconds ...
AUTO_EXTRACTION_WINDOW = 0.5
#: ... took this share of a core (the reactor's thread waits for them meanwhile) ...
AUTO_EXTRACTION_SHARE = 0.25
#: ... and were this many at least (a page that imports trafilatura is no rate). At 200 ms
#: latency and 16 concurrent requests (75 pages a second), the pages' share was 0.5 and the
#: worker started after 0.55 s instead of the 0.9 to 1.6 s the signs above took, 1.03x-1.07x
#: the crawl without dedup instead of 1.05x-1.13x; at 0.5 s latency and 8 concurrent (16
#: pages a second), 0.11: no worker (``bench/crawl_overhead.py``).
AUTO_EXTRACTION_PAGES = 5
#: With ``"auto"``, a page larger than this (bytes, or characters) goes to the worker
#: processes (started for it), where ``DEDUP_EXTRACT_TIMEOUT`` can stop it: a thread cannot
#: be stopped. The largest of the 474 real pages of the dev corpus has 1.8 MB.
IN_PROCESS_MAX_SIZE = 2_000_000
#: With ``"auto"``, so do pages whose closing tags (``</``) are fewer than this share of
#: their tags (``<``): 20,000 nested tags never closed (380 KB) take resiliparse's and
#: trafilatura's main-content walks minutes; the real pages of the dev corpus close
#: 0.29 of their tags or more.
IN_PROCESS_MIN_CLOSED_SHARE = 0.2
#: ... unless they have fewer tags than this: 1,000 nested tags take those walks 0.1 s
#: (a binary body has a ``<`` here and there, and nothing closed).
IN_PROCESS_ANY_SHARE_BELOW = 1_000
#: With ``"auto"``, a spare worker process starts with the spider and waits: once the crawl
#: process's extraction falls behind, it takes the pages at once, where they waited for a
#: worker to start (its interpreter and imports, 0.2 s). At 200 ms latency and 16 concurrent
#: requests the crawl took 1.03x-1.06x (11.4 s on average) the wall time of dedup off against
#: 1.06x-1.08x (11.7 s) without it (``bench/crawl_overhead.py``, three rounds each, taking
#: turns); at 50 ms the same within the noise. The first page that comes this many seconds
#: after the spider opened, while the crawl process keeps up, stops the spare: a crawl that
#: needs no worker holds an idle one (28 MiB, and 0.2 s of CPU at its start) until then.
AUTO_SPARE_SECONDS = 10.0


def auto_worker_count() -> int:
    """The most worker processes ``"auto"`` starts: one per CPU core this process may run
    on (``os.sched_getaffinity``) but one, which the crawl process keeps busy when pages
    wait for the workers (at least one). On 2 cores, a second worker made a crawl at 50 ms
    latency no faster (3.02x and 3.13x the wall time without dedup, four rounds each) and
    cost 1.2 ms of CPU a page and 69 MiB more (``bench/crawl_overhead.py``)."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return max(1, (cores or 1) - 1)


class PageFingerprinter:
    """Fingerprints pages where ``DEDUP_CONTENT_WORKERS`` says.

    * *workers* ``"auto"``: in one thread of the crawl process, one page at a time, until
      the pages waiting for it would stop Scrapy's downloads (*max_held*, Scrapy's
      ``SCRAPER_SLOT_MAX_ACTIVE_SIZE``), the crawl process keeps
      :data:`AUTO_WORKERS_CPU_SHARE` of a core busy, or the pages extracted there take
      :data:`AUTO_EXTRACTION_SHARE` of one (see
      :class:`~crawler.content.extraction_lane.ExtractionLane`), then in one worker
      process: the spare started with the spider (:data:`AUTO_SPARE_SECONDS`), or one
      started then (pages go on in the thread until it has started), and in
      :func:`auto_worker_count` once that one falls behind in turn (by the same sign: the
      others start beside it); a page too large or too deeply nested for a thread that
      cannot be stopped goes to the workers at once;
    * a number: so many worker processes from :meth:`open` on; ``0``: in the calling thread;
    * *options*: :func:`~crawler.content.pages.fingerprint_page`'s keyword arguments.
    """

    def __init__(
        self,
        stats: StatsCollector,
        options: dict[str, Any],
        *,
        workers: int | str | None = defaults.DEDUP_CONTENT_WORKERS,
        extract_timeout: float = defaults.DEDUP_EXTRACT_TIMEOUT,
        max_held: int = 5_000_000,
    ) -> None:
        self.stats = stats
        self.options = options
        auto = workers is None or workers == "auto"
        self.workers = auto_worker_count() if auto else int(workers)  # type: ignore[arg-type]
        self.extract_timeout = extract_timeout
        self._lane = (
            ExtractionLane(
                AUTO_WORKERS_AFTER,
                max_held=max_held,
                max_held_share=AUTO_WORKERS_HELD_SHARE,
                max_cpu_share=AUTO_WORKERS_CPU_SHARE,
                extraction=ExtractionLoad(
                    AUTO_EXTRACTION_WINDOW, AUTO_EXTRACTION_SHARE, min_pages=AUTO_EXTRACTION_PAGES
                ),
            )
            if auto
            else None
        )
        #: the pages the lane lets in are extracted by this one thread: glibc gives each
        #: thread that allocates its own heap, and a page's parse left its peak in each
        #: of the six threads asyncio hands pages to (60 MiB more in a crawl of 800 pages)
        self._lane_thread = (
            ThreadPoolExecutor(1, thread_name_prefix="dedup-extract") if auto else None
        )
        #: the worker processes (``"auto"``: the first one, then the others once pages wait
        #: for it)
        self.processes: WorkerProcesses | LoopWorkerProcesses | None = None
        #: the event loop the worker processes' pipes are written and read on (:meth:`open`)
        self.loop: asyncio.AbstractEventLoop | None = None
        #: how many worker processes were started (``"auto"``: one, then all)
        self.started = 0
        #: with ``"auto"`` and one worker started: whether the pages wait for it
        self._behind: HeldPages | None = None
        self._max_held = max_held
        #: with ``"auto"``: answered once the first worker process has started
        self._first_started: Future[None] | None = None
        #: with ``"auto"``: the spare worker process (:data:`AUTO_SPARE_SECONDS`)
        self._spare = SpareWorker()
        self._processes_lock = threading.Lock()
        self._bodies: BodiesInFlight[PageFingerprint] = BodiesInFlight()
        self._waiting = 0

    def open(self, loop: asyncio.AbstractEventLoop | None = None) -> None:
        """Start the worker processes of a number of *workers*. With *loop* (the running
        asyncio loop, on its thread), their pipes are written and read there
        (:class:`~crawler.content.loop_worker_processes.LoopWorkerProcesses`), else by the
        threads that call them."""
        self.loop = loop
        if self.workers > 0 and self._lane is None:
            self.processes = self._new_processes(self.workers)
            self.started = self.workers
        elif self._lane is not None:
            self._spare = SpareWorker(self._new_processes(1))

    def close(self) -> None:
        try:
            if self.processes is not None:
                self.processes.close()
        finally:
            self._spare.stop()
            if self._lane_thread is not None:
                self._lane_thread.shutdown(wait=True)

    @contextmanager
    def waiting(self, page: Any) -> Iterator[None]:
        """Count *page* (HTML, or text) as waiting for its fingerprints while the block
        runs; for the reactor's thread, around the thread that calls :meth:`fingerprint`."""
        size = len(page) if isinstance(page, (str, bytes)) else 0
        self._waiting += 1
        self.stats.max_value("dedup/extract/backlog_max", self._waiting)
        if self._lane is not None:
            self._lane.hold(size)
        behind = self._behind
        if behind is not None:
            behind.hold(size)
        try:
            yield
        finally:
            self._waiting -= 1
            if self._lane is not None:
                self._lane.release(size)
            if behind is not None:
                behind.release(size)

    def fingerprint(
        self,
        url: str,
        text: Any,
        html: Any,
        encoding: str | None,
        downloaded: ResponseBody | None = None,
    ) -> tuple[PageFingerprint, bool]:
        """The page's fingerprints, and whether its body was fingerprinted before (or is
        being, for another item: it is waited for, not fingerprinted again). *downloaded*:
        *html* (a ``str``) as Scrapy downloaded it, sent to a worker in its place."""
        text = text if isinstance(text, str) else None
        if text is not None or not isinstance(html, (str, bytes)):
            return self._extract(url, text, html, encoding), False
        key, encoded, encoding = body_for_worker(html, encoding, downloaded)
        known, pending = self._bodies.claim(key)
        if isinstance(known, PageFingerprint):
            return known, True
        if known is not None:
            del encoded  # a page-sized copy, not held while this thread waits
            return known.result(), True
        try:
            page = self._extract(url, text, html, encoding, encoded)
        except BaseException as exc:
            self._bodies.failed(key, pending, exc)
            raise
        self._bodies.found(key, pending, page, remember=page.status != "timeout")
        return page, False

    def on_loop(self) -> bool:
        """Whether pages go to the worker processes from the event loop now: they run there
        (:meth:`open` was given the loop) and have started. :meth:`fingerprint_on_loop` is
        then what to call, on the loop; :meth:`fingerprint`, in a thread, otherwise."""
        processes = self.processes
        return isinstance(processes, LoopWorkerProcesses) and processes.started.done()

    async def fingerprint_on_loop(
        self,
        url: str,
        text: Any,
        html: Any,
        encoding: str | None,
        downloaded: ResponseBody | None = None,
    ) -> tuple[PageFingerprint, bool]:
        """:meth:`fingerprint` on the event loop, while :meth:`on_loop`: the page is written
        to a worker process's pipe and its answer read there, with no thread in between."""
        text = text if isinstance(text, str) else None
        if text is not None or not isinstance(html, (str, bytes)):
            return await self._extract_on_loop(url, text, html, encoding), False
        key, encoded, encoding = body_for_worker(html, encoding, downloaded)
        known, pending = self._bodies.claim(key)
        if isinstance(known, PageFingerprint):
            return known, True
        if known is not None:
            del encoded
            # shielded: a caller that gives up does not cancel the others' future
            return await asyncio.shield(asyncio.wrap_future(known)), True
        try:
            page = await self._extract_on_loop(url, text, html, encoding, encoded)
        except BaseException as exc:
            self._bodies.failed(key, pending, exc)
            raise
        self._bodies.found(key, pending, page, remember=page.status != "timeout")
        return page, False

    def _extract(
        self,
        url: str,
        text: Any,
        html: Any,
        encoding: str | None,
        encoded: EncodedPage | ResponseBody | None = None,
    ) -> PageFingerprint:
        """*encoded*: *html* (a ``str``) in bytes, what a worker process is sent instead."""
        text = text if isinstance(text, str) else None
        # given text is fingerprinted as it is: the page is not needed
        html = html if isinstance(html, (str, bytes)) and text is None else None
        options = {**self.options, "url": url or None, "encoding": encoding}
        if self._lane is not None and self._in_process(html if text is None else text):
            assert self._lane_thread is not None
            cpu = 0.0
            try:
                page = self._lane_thread.submit(fingerprint_page, html, text, **options).result()
                cpu = page.extractor_cpu + page.fingerprints_cpu
                self.stats.inc_value("dedup/extract/in_process")
            finally:
                self._lane.leave(cpu)
            return page
        sent = encoded if encoded is not None else html
        if self._behind is not None and self._behind.behind:
            self._start_all_workers()
        processes = self.processes
        if processes is None:
            return fingerprint_page(html, text, **options)
        try:
            page = processes.run(
                fingerprint_page_within,
                (self.extract_timeout, sent, text),
                options,
                timeout=_worker_timeout(self.extract_timeout),
            )
        except (WorkerStuck, WorkerDied) as exc:
            return _worker_lost(url, exc, self.extract_timeout)
        return _given_up_or_done(url, page, self.extract_timeout)

    async def _extract_on_loop(
        self,
        url: str,
        text: str | None,
        html: Any,
        encoding: str | None,
        encoded: EncodedPage | ResponseBody | None = None,
    ) -> PageFingerprint:
        """:meth:`_extract` by the worker processes, from the event loop."""
        html = html if isinstance(html, (str, bytes)) and text is None else None
        options = {**self.options, "url": url or None, "encoding": encoding}
        sent = encoded if encoded is not None else html
        if self._behind is not None and self._behind.behind:
            self._start_all_workers()
        assert isinstance(self.processes, LoopWorkerProcesses)
        try:
            page = await self.processes.call(
                fingerprint_page_within,
                (self.extract_timeout, sent, text),
                options,
                timeout=_worker_timeout(self.extract_timeout),
            )
        except (WorkerStuck, WorkerDied) as exc:
            return _worker_lost(url, exc, self.extract_timeout)
        return _given_up_or_done(url, page, self.extract_timeout)

    def _in_process(self, page: Any) -> bool:
        """Whether the page is to be extracted here, in the crawl process: the lane was
        free, or freed before it had been busy too long (``"auto"``; the lane is then
        taken). Otherwise the worker processes are started if they were not."""
        assert self._lane is not None
        ordinary = _ordinary_page(page)
        if self.processes is None:
            if ordinary and self._spare.older_than(AUTO_SPARE_SECONDS):
                self._spare.stop(
                    f"the crawl process kept up with extraction for {AUTO_SPARE_SECONDS} s"
                )
            if ordinary and self._lane.enter():
                return True
            self._start_workers(
                "the crawl process's extraction fell behind "
                f"({_sign_text(self._lane.overloaded_by or 'waited')})"
                if ordinary
                else "a page is too large or too deeply nested to extract without a time limit"
            )
        # once the worker has started, extracting here too would take the reactor's thread
        # its time; until then (its interpreter and imports: a few tenths of a second) pages
        # would wait for it, and six of them fill asyncio's threads: Scrapy stopped
        # downloading for half a second
        started = self._first_started
        if started is None or started.done():
            return False
        return ordinary and self._lane.enter(overloaded_too=True)

    def _start_workers(self, why: str) -> None:
        """One worker process, and the watch on whether pages wait for it (all of them at
        once when there is one core)."""
        with self._processes_lock:
            if self.processes is not None:
                return
            # a loop's pool starts there, waited for: the loop takes this lock once it exists
            processes = self._spare.take() or self._new_processes(1)
            self._first_started = processes.started
            self.processes = processes
            self.started = 1
            if self.workers > 1:
                assert self._lane is not None
                self._behind = HeldPages(
                    AUTO_WORKERS_AFTER, self._max_held, AUTO_WORKERS_HELD_SHARE
                )
        logger.info(
            "Content dedup: %(why)s; a worker process extracts pages from now on "
            "(DEDUP_CONTENT_WORKERS = 'auto')",
            {"why": why},
        )
        self.stats.set_value("dedup/extract/workers_started", 1)

    def _start_all_workers(self) -> None:
        """The other :attr:`workers` - 1 worker processes, beside the first."""
        with self._processes_lock:
            if self._behind is None or self.processes is None:
                return  # started already, for another page
            self._behind = None
            processes = self.processes
            self.started = self.workers
        # not under the lock: from a thread, a pool on the event loop grows there, and the
        # loop may want the lock meanwhile (a page it hands over finds the pool behind too)
        processes.grow(self.workers)
        logger.info(
            "Content dedup: the worker process fell behind in turn (the pages waiting for it "
            "reached SCRAPER_SLOT_MAX_ACTIVE_SIZE %(share)s of %(window)s s); "
            "%(workers)d worker processes extract pages from now on",
            {
                "share": f"{AUTO_WORKERS_HELD_SHARE:.0%}",
                "window": AUTO_WORKERS_AFTER,
                "workers": self.workers,
            },
        )
        self.stats.set_value("dedup/extract/workers_started", self.workers)

    def _new_processes(self, workers: int) -> WorkerProcesses | LoopWorkerProcesses:
        initargs = (self.options.get("extractor", defaults.DEDUP_EXTRACTOR), os.getpid())
        if self.loop is not None:
            return LoopWorkerProcesses(
                workers,
                loop=self.loop,
                initializer=start_worker,
                initargs=initargs,
                environment=single_threaded_blas(),
            )
        return WorkerProcesses(
            workers,
            initializer=start_worker,
            initargs=initargs,
            environment=single_threaded_blas(),
        )


def _worker_timeout(extract_timeout: float) -> float | None:
    """How long a worker is given to answer: it gives a page up itself once it has
    worked on it for the limit, however long the page waited for a worker; one that has
    not answered within the limit and a margin is stuck in one call into C code (a
    signal cannot stop it: one page took 22 s to give up a limit of 4 s)."""
    return extract_timeout + STUCK_WORKER_MARGIN if extract_timeout else None


def _worker_lost(
    url: str, error: WorkerStuck | WorkerDied, extract_timeout: float
) -> PageFingerprint:
    if isinstance(error, WorkerStuck):
        logger.warning(
            "Content dedup: a worker process did not give %(url)s up after "
            "DEDUP_EXTRACT_TIMEOUT (%(timeout)s s) as it should (stuck in one call); "
            "it is replaced and the item kept unchecked (dedup/content/timeout)",
            {"url": url or "<no url>", "timeout": extract_timeout},
        )
    else:
        logger.warning(
            "Content dedup: a worker process died while extracting %(url)s (%(why)s); "
            "it is replaced and the item kept unchecked (dedup/content/timeout)",
            {"url": url or "<no url>", "why": error},
        )
    return PageFingerprint("timeout", None)


def _given_up_or_done(url: str, page: PageFingerprint, extract_timeout: float) -> PageFingerprint:
    if page.status == "timeout":
        logger.warning(
            "Content dedup: %(url)s took more than DEDUP_EXTRACT_TIMEOUT "
            "(%(timeout)s s) to extract; it was given up and the item kept unchecked "
            "(dedup/content/timeout)",
            {"url": url or "<no url>", "timeout": extract_timeout},
        )
    return page


def _sign_text(sign: str) -> str:
    """What the INFO line says of each sign that starts the worker processes
    (:attr:`~crawler.content.extraction_lane.ExtractionLane.overloaded_by`)."""
    if sign == "held":
        return (
            "the pages waiting for it reached SCRAPER_SLOT_MAX_ACTIVE_SIZE, where Scrapy "
            f"stops downloading, {AUTO_WORKERS_HELD_SHARE:.0%} of {AUTO_WORKERS_AFTER} s"
        )
    if sign == "load":
        return (
            f"the crawl process kept {AUTO_WORKERS_CPU_SHARE:.0%} of a core busy over "
            f"{AUTO_WORKERS_AFTER} s"
        )
    if sign == "extraction":
        return (
            f"the pages extracted there took {AUTO_EXTRACTION_SHARE:.0%} of a core over "
            f"{AUTO_EXTRACTION_WINDOW} s"
        )
    return f"a page waited {AUTO_WORKERS_AFTER} s for it"


def _ordinary_page(page: Any) -> bool:
    """Whether *page* (HTML, or text) is no larger than :data:`IN_PROCESS_MAX_SIZE` and
    closes at least :data:`IN_PROCESS_MIN_CLOSED_SHARE` of its tags, if it has
    :data:`IN_PROCESS_ANY_SHARE_BELOW` or more."""
    if not isinstance(page, (str, bytes)):
        return True
    if len(page) > IN_PROCESS_MAX_SIZE:
        return False
    if isinstance(page, str):
        tags, closed = page.count("<"), page.count("</")
    else:
        tags, closed = page.count(b"<"), page.count(b"</")
    return tags < IN_PROCESS_ANY_SHARE_BELOW or closed >= IN_PROCESS_MIN_CLOSED_SHARE * tags
