"""A worker process started before it is needed, so that it is ready when it is.

With ``DEDUP_CONTENT_WORKERS = "auto"`` pages are extracted in the crawl process while it
keeps up; once it falls behind, a worker process takes them, and a worker started only then
makes the pages wait for its interpreter and imports (0.2 s). :class:`SpareWorker` holds one
started with the spider: :meth:`SpareWorker.take` hands it over as the first worker (unless
it could not start), :meth:`SpareWorker.stop` stops it where it was not needed.

Nothing here imports Scrapy.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from crawler.content.loop_worker_processes import LoopWorkerProcesses
    from crawler.content.worker_processes import WorkerProcesses

__all__ = ["SpareWorker"]

logger = logging.getLogger(__name__)


class SpareWorker:
    """*processes* (a pool of one worker, started) until it is taken or stopped; none
    without it.

    * :meth:`older_than` says whether it was started more than so many seconds ago (never
      once taken or stopped);
    * :meth:`take` returns it and holds it no more: ``None`` when there is none, or when it
      could not start (it is closed then);
    * :meth:`stop` closes it; what goes wrong then is no page's concern (logged at DEBUG).

    Its lock guards the pool alone and is never held while a pool is started or closed
    (which may wait for the event loop).
    """

    def __init__(self, processes: WorkerProcesses | LoopWorkerProcesses | None = None) -> None:
        self.processes = processes
        self._since = time.monotonic() if processes is not None else math.inf
        self._lock = threading.Lock()

    def older_than(self, seconds: float) -> bool:
        return time.monotonic() - self._since > seconds

    def take(self) -> WorkerProcesses | LoopWorkerProcesses | None:
        processes = self._given_up()
        if processes is not None and processes.started.done() and processes.started.exception():
            _close(processes)
            return None
        return processes

    def stop(self, why: str = "") -> None:
        processes = self._given_up()
        if processes is not None:
            _close(processes)
            if why:
                logger.debug("Content dedup: %(why)s; the spare worker process stops", {"why": why})

    def _given_up(self) -> WorkerProcesses | LoopWorkerProcesses | None:
        with self._lock:
            processes, self.processes = self.processes, None
            self._since = math.inf
        return processes


def _close(processes: WorkerProcesses | LoopWorkerProcesses) -> None:
    try:
        processes.close()
    except Exception:  # e.g. the event loop stopped first: the worker exits with the crawl
        logger.debug("Content dedup: the spare worker process could not be closed", exc_info=True)
