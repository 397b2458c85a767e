"""Worker processes that the calling thread hands a call to and reads the answer from itself.

:class:`WorkerProcesses` runs functions of this package in spawned processes, one call a
process at a time, for :class:`~crawler.content.page_fingerprinter.PageFingerprinter`. Each
worker has a pipe of its own each way; the thread that calls :meth:`WorkerProcesses.run`
takes an idle worker, writes the call to it and waits for the answer, so a page crosses with
no thread of the pool's in between. ``concurrent.futures.ProcessPoolExecutor`` moves each
task through two threads of its own (a queue's feeder, which pickles and writes it, and a
manager, which reads the result and answers its future): 0.28 ms of CPU a call in the
calling process against 0.07 here, 0.46 against 0.17 for the pages of the dev corpus
(``bench/worker_transfer.py``), and in a crawl those threads wait for the interpreter the
reactor holds. One worker that is stuck or dies is replaced alone; the pages waiting for
the others go on.

Nothing here imports Scrapy.
"""

from __future__ import annotations

import logging
import multiprocessing
import pickle
import signal
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import nullcontext
from dataclasses import dataclass, field
from multiprocessing.connection import Connection, wait
from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from contextlib import AbstractContextManager
    from multiprocessing.process import BaseProcess

__all__ = [
    "CALLS_A_WORKER",
    "MAX_FAILED_STARTS",
    "PIPE_BYTES",
    "WorkerDied",
    "WorkerProcesses",
    "WorkerStuck",
]

logger = logging.getLogger(__name__)

#: The size asked of each pipe (Linux's default is 64 KiB, the most an unprivileged process
#: may ask 1 MiB): a page of the dev corpus (230 kB on average) crosses in one write.
PIPE_BYTES: Final = 1 << 20
#: What a worker writes once it has started, before any answer.
_READY: Final = b"ready"
#: Seconds a worker is given to exit once its pipe is closed, before it is killed.
_EXIT_WITHIN: Final = 2.0
#: The calls a worker holds at most: the one it works on, and the next, waiting in its pipe
#: (without it the worker waited, between two pages, for a thread of the crawl process to
#: read its answer and another to write the next page, each first waiting for the
#: interpreter the reactor holds: a crawl at 50 ms latency kept 0.2 of a core less busy).
CALLS_A_WORKER: Final = 2
#: Workers that exit before they are ready, one after the other, before no more are started
#: (an extractor that cannot be imported there would otherwise start one after another).
MAX_FAILED_STARTS: Final = 3


class WorkerDied(Exception):
    """The worker process ended before it answered (a crash, or a kill by the system)."""


class WorkerStuck(Exception):
    """The worker process did not answer within the time given: it was killed."""


@dataclass(eq=False)
class _Worker:
    process: BaseProcess
    #: what the crawl process writes to, and reads from
    requests: Connection
    answers: Connection
    #: held while a call is written (the calls of a worker are read in the order written)
    sending: threading.Lock = field(default_factory=threading.Lock)
    ready: bool = False
    #: killed, or found dead: the calls written to it and not answered go to another
    gone: bool = False
    #: calls written to it, and answers read from it
    sent: int = 0
    read: int = 0


class WorkerProcesses:
    """Up to *size* spawned processes, each started with ``initializer(*initargs)``.

    * :meth:`run` blocks its thread until a worker can take the call, then until it
      answers; an exception the call raised is raised again here. A worker holds at most
      :data:`CALLS_A_WORKER` calls: the next one waits in its pipe while it works on one,
      so that it does not wait for the crawl process's threads between two pages;
    * :attr:`started` is answered once the first worker is ready (its initializer ran);
    * :meth:`grow` starts more, :meth:`close` stops them all: a thread waiting for a
      worker then gets :exc:`RuntimeError`;
    * *starting* (a context manager factory) wraps each process's start: the environment
      and ``__main__`` it is spawned with.
    """

    def __init__(
        self,
        size: int,
        *,
        initializer: Callable[..., object],
        initargs: tuple[Any, ...] = (),
        starting: Callable[[], AbstractContextManager[object]] | None = None,
    ) -> None:
        if size < 1:
            raise ValueError(f"size must be 1 or more, got {size!r}")
        self._context = multiprocessing.get_context("spawn")
        self._initializer = initializer
        self._initargs = initargs
        self._starting = starting
        self._workers: list[_Worker] = []
        #: guards the workers and their counts; notified whenever one changes
        self._changed = threading.Condition()
        self._closed = False
        #: why no worker can be started any more (:data:`MAX_FAILED_STARTS`)
        self._broken: str | None = None
        self._failed_starts = 0
        self._submitted: ThreadPoolExecutor | None = None
        self.started: Future[None] = Future()
        self.grow(size)

    @property
    def size(self) -> int:
        return len(self._workers)

    def processes(self) -> list[BaseProcess]:
        with self._changed:
            return [worker.process for worker in self._workers]

    def grow(self, size: int) -> None:
        """Start workers until there are *size*."""
        with self._changed:
            while not self._closed and len(self._workers) < size:
                self._workers.append(self._start())

    def run(
        self,
        function: Callable[..., Any],
        args: tuple[Any, ...] = (),
        kwargs: Mapping[str, Any] | None = None,
        *,
        timeout: float | None = None,
    ) -> Any:
        """``function(*args, **kwargs)`` in a worker, once one can take it (however long
        that takes); :exc:`WorkerStuck` when it has not answered *timeout* seconds after
        it was done with the call before (when it started this one), :exc:`WorkerDied`
        when it ended first. Either way it is replaced."""
        message = pickle.dumps((function, args, kwargs or {}), protocol=pickle.HIGHEST_PROTOCOL)
        while True:
            worker, call = self._hand_over(message)
            if worker is None:
                continue  # it died before it had the call: another one takes it
            with self._changed:
                while not worker.gone and worker.read < call:
                    self._changed.wait()
                if worker.gone:
                    continue  # died on a call before this one, which it never started
            return self._answer(worker, timeout)

    def submit(self, function: Callable[..., Any], *args: Any, **kwargs: Any) -> Future[Any]:
        """:meth:`run` in a thread of its own, answered in a future."""
        with self._changed:
            if self._submitted is None:
                self._submitted = ThreadPoolExecutor(thread_name_prefix="dedup-worker-call")
        return self._submitted.submit(self.run, function, args, kwargs)

    def close(self) -> None:
        """Stop every worker (killed when it does not exit within a moment); the threads
        waiting for one get :exc:`RuntimeError`."""
        with self._changed:
            self._closed = True
            workers, self._workers = self._workers, []
            self._changed.notify_all()
        for worker in workers:
            worker.requests.close()
        for worker in workers:
            worker.process.join(_EXIT_WITHIN)
            if worker.process.is_alive():
                worker.process.kill()
                worker.process.join()
            worker.answers.close()
        if self._submitted is not None:
            self._submitted.shutdown(wait=False, cancel_futures=True)

    def _hand_over(self, message: bytes) -> tuple[_Worker | None, int]:
        """Write *message* to the ready worker with the fewest calls, once one has fewer
        than :data:`CALLS_A_WORKER`; the worker and the call's number (``None`` when the
        worker turned out dead)."""
        with self._changed:
            while True:
                if self._closed:
                    raise RuntimeError("the worker processes are closed")
                if self._broken is not None:
                    raise WorkerDied(self._broken)
                free = [
                    worker
                    for worker in self._workers
                    if worker.ready and worker.sent - worker.read < CALLS_A_WORKER
                ]
                if free:
                    break
                self._changed.wait()
            worker = min(free, key=lambda each: each.sent - each.read)
            call = worker.sent
            worker.sent += 1
            # the calls are written in the order of their numbers
            worker.sending.acquire()
        try:
            worker.requests.send_bytes(message)
        except OSError:  # it died while it had no call
            self._replace(worker)
            return None, call
        finally:
            worker.sending.release()
        return worker, call

    def _answer(self, worker: _Worker, timeout: float | None) -> Any:
        try:
            ready = wait([worker.answers, worker.process.sentinel], timeout)
        except (OSError, ValueError):  # replaced meanwhile by a thread that found it dead
            ready = [worker.process.sentinel]
        if worker.answers not in ready:
            self._replace(worker)
            if not ready:
                raise WorkerStuck(f"no answer within {timeout} s")
            raise WorkerDied(f"exit code {worker.process.exitcode}")
        try:
            returned, answer = pickle.loads(worker.answers.recv_bytes())
        except (EOFError, OSError) as exc:
            self._replace(worker)
            raise WorkerDied(f"exit code {worker.process.exitcode}") from exc
        with self._changed:
            worker.read += 1
            self._changed.notify_all()
        if not returned:
            raise answer
        return answer

    def _start(self) -> _Worker:
        requests_read, requests = self._context.Pipe(duplex=False)
        answers, answers_write = self._context.Pipe(duplex=False)
        for connection in (requests, answers):
            _widen(connection)
        process = self._context.Process(
            target=_serve,
            args=(requests_read, answers_write, self._initializer, self._initargs),
            name="dedup-worker",
            daemon=True,
        )
        with self._starting() if self._starting is not None else nullcontext():
            process.start()
        requests_read.close()
        answers_write.close()
        worker = _Worker(process, requests, answers)
        threading.Thread(target=self._await_ready, args=(worker,), daemon=True).start()
        return worker

    def _await_ready(self, worker: _Worker) -> None:
        try:
            ready = worker.answers in wait([worker.answers, worker.process.sentinel])
            ready = ready and worker.answers.recv_bytes() == _READY
        except (EOFError, OSError):
            ready = False
        if ready:
            with self._changed:
                self._failed_starts = 0
                worker.ready = True
                self._changed.notify_all()
            if not self.started.done():
                self.started.set_result(None)
            return
        if self._closed:
            return
        with self._changed:
            self._failed_starts += 1
            failed = self._failed_starts
        if failed < MAX_FAILED_STARTS:
            logger.warning(
                "A worker process exited before it was ready (exit code %(code)s); "
                "another one is started",
                {"code": worker.process.exitcode},
            )
            self._replace(worker)
            return
        broken = (
            f"{failed} worker processes in a row exited before they were ready (the last "
            f"with exit code {worker.process.exitcode}): no more are started"
        )
        logger.error("%(why)s", {"why": broken})
        self._replace(worker, restart=False)
        with self._changed:
            self._broken = broken
            self._changed.notify_all()
        if not self.started.done():
            self.started.set_exception(WorkerDied(broken))

    def _replace(self, worker: _Worker, *, restart: bool = True) -> None:
        """Kill *worker* if it still runs; a new one takes its place unless *restart* is
        false, it was replaced already or the pool closed."""
        with self._changed:
            worker.gone = True
            self._changed.notify_all()
        if worker.process.is_alive():
            worker.process.kill()
        worker.process.join()
        worker.requests.close()
        worker.answers.close()
        with self._changed:
            if worker in self._workers:
                index = self._workers.index(worker)
                if self._closed or not restart:
                    del self._workers[index]
                else:
                    self._workers[index] = self._start()
            self._changed.notify_all()


def _serve(
    requests: Connection,
    answers: Connection,
    initializer: Callable[..., object],
    initargs: tuple[Any, ...],
) -> None:
    """A worker's life: its initializer, then one call after another until the crawl
    process closes its pipe. Ctrl-C reaches every process of the terminal's group: the
    crawl process, which may finish its items first, says when its workers stop."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    initializer(*initargs)
    answers.send_bytes(_READY)
    while True:
        try:
            message = requests.recv_bytes()
        except EOFError:
            return
        try:
            function, args, kwargs = pickle.loads(message)
            answer: tuple[bool, Any] = (True, function(*args, **kwargs))
        except BaseException as exc:  # given back to the caller, as a pool would
            answer = (False, exc)
        try:
            data = pickle.dumps(answer, protocol=pickle.HIGHEST_PROTOCOL)
        except Exception as exc:  # an exception or a result that cannot cross
            data = pickle.dumps((False, RuntimeError(f"the answer cannot be pickled: {exc!r}")))
        answers.send_bytes(data)


def _widen(connection: Connection) -> None:
    try:
        import fcntl

        fcntl.fcntl(connection.fileno(), fcntl.F_SETPIPE_SZ, PIPE_BYTES)
    except (ImportError, AttributeError, OSError):  # not Linux, or a lower limit
        pass
