"""Worker processes whose pipes asyncio's event loop writes and reads.

:class:`LoopWorkerProcesses` is :class:`~crawler.content.worker_processes.WorkerProcesses`
for a crawl whose reactor runs on asyncio's loop: a coroutine on the loop hands a call to a
worker and awaits its answer, with no thread in between. Each worker's two pipes are
non-blocking on the crawl process's side; the loop writes a call when the pipe can take it
and reads an answer when one is there, framed as :mod:`multiprocessing.connection` frames
them (the worker's side is the same :func:`~crawler.content.worker_processes._serve`).
With threads, each page woke one of asyncio's executor threads, which took the interpreter
from the reactor's thread to write the page and again to read the answer: the reactor's
thread then waited on its own system calls (a socket's ``recv`` took 294 µs a call against
33 without the content level, ``bench/crawl_overhead.py`` profiled). Handed over from the
loop, three rounds each taking turns with the threads: at 50 ms latency the crawl took
7.1-8.0 s against 8.4-10.1 and 9.8-11.6 ms of CPU a page more than without dedup against
11.6-14.7; at 200 ms the same wall time, and what the content level spends beside the
extractor and the fingerprints 2.6-2.7 ms a page against 3.0-3.1.

Everything but :meth:`LoopWorkerProcesses.call` may be called from any thread: it runs on
the loop (and waits for it there).

Nothing here imports Scrapy.
"""

from __future__ import annotations

import asyncio
import logging
import os
import pickle
from collections import deque
from concurrent.futures import Future
from typing import TYPE_CHECKING, Any, Final, TypeVar

from crawler.content.worker_pipes import Call, PipedWorker
from crawler.content.worker_processes import (
    _EXIT_WITHIN,
    _MAX_HAND_OVERS,
    _READY,
    MAX_FAILED_STARTS,
    WorkerDied,
    WorkerStuck,
    _launched,
    _stop,
)

if TYPE_CHECKING:
    import subprocess
    from collections.abc import Callable, Mapping

__all__ = ["LOOP_CALLS_A_WORKER", "LoopWorkerProcesses"]

logger = logging.getLogger(__name__)

#: The calls a worker holds at most: the one it works on and three waiting in its pipe. The
#: loop reads an answer, and writes the next call, between its other callbacks, which ran
#: up to 50 ms in a crawl at 50 ms latency: with one call waiting (as a thread that waits
#: for the worker has it, ``CALLS_A_WORKER``), the worker sat idle meanwhile and that crawl
#: took 2.38x-2.83x as long as without dedup against 2.17x-2.57x with threads; with three,
#: 2.18x-2.45x against 2.29x-3.21x (``bench/crawl_overhead.py``, taking turns).
LOOP_CALLS_A_WORKER: Final = 4
#: Seconds between two looks, by a thread waiting for the loop, at whether it still runs.
_LOOP_ALIVE_CHECK: Final = 1.0

_T = TypeVar("_T")


class LoopWorkerProcesses:
    """Up to *size* worker processes, each started with ``initializer(*initargs)``, whose
    pipes *loop* writes and reads.

    * :meth:`call` (a coroutine, on the loop) gives a call to the ready worker with the
      fewest calls once one has fewer than
      :data:`LOOP_CALLS_A_WORKER`, and returns its answer;
      an exception the call raised is raised again. :exc:`WorkerStuck` when the worker
      has not answered *timeout* seconds after it started the call (once it answered the
      one before), :exc:`WorkerDied` when it ended first; either way it is replaced, and
      the calls waiting in its pipe go to another worker;
    * :meth:`run` is :meth:`call` for another thread, which it blocks;
    * :attr:`started` is answered once the first worker is ready;
    * :meth:`grow` starts more; :meth:`close` stops every worker: from another thread
      once the calls given out are answered, on the loop at once (they are answered
      :exc:`RuntimeError`);
    * *environment*: variables each worker is started with besides the crawl process's.

    The initializer and the functions run are pickled by name: they must be importable from
    a module.
    """

    def __init__(
        self,
        size: int,
        *,
        loop: asyncio.AbstractEventLoop,
        initializer: Callable[..., object],
        initargs: tuple[Any, ...] = (),
        environment: Mapping[str, str] | None = None,
    ) -> None:
        if size < 1:
            raise ValueError(f"size must be 1 or more, got {size!r}")
        self._loop = loop
        self._initializer = initializer
        self._initargs = initargs
        self._environment = dict(environment or {})
        self._workers: list[PipedWorker] = []
        #: calls no worker has taken yet, oldest first
        self._waiting: deque[Call] = deque()
        self._wanted = 0
        self._closed = False
        #: answered once the pool is closed, for the threads waiting in :meth:`close`
        self._closings: list[Future[None]] = []
        #: why no worker can be started any more (:data:`MAX_FAILED_STARTS`)
        self._broken: str | None = None
        self._failed_starts = 0
        self.started: Future[None] = Future()
        self.grow(size)

    @property
    def size(self) -> int:
        return len(self._workers)

    def processes(self) -> list[subprocess.Popen[bytes]]:
        return [worker.process for worker in list(self._workers)]

    def grow(self, size: int) -> None:
        """Start workers until there are *size*."""
        self._on_loop(self._grow, size)

    async def call(
        self,
        function: Callable[..., _T],
        args: tuple[Any, ...] = (),
        kwargs: Mapping[str, Any] | None = None,
        *,
        timeout: float | None = None,
    ) -> _T:
        """``function(*args, **kwargs)`` in a worker (see the class documentation)."""
        if self._closed:
            raise RuntimeError("the worker processes are closed")
        if self._broken is not None and not self._workers:
            raise WorkerDied(self._broken)
        call = Call((function, args, kwargs or {}), self._loop.create_future(), timeout)
        self._waiting.append(call)
        self._dispatch()
        answer: _T = await call.answer
        return answer

    def run(
        self,
        function: Callable[..., _T],
        args: tuple[Any, ...] = (),
        kwargs: Mapping[str, Any] | None = None,
        *,
        timeout: float | None = None,
    ) -> _T:
        """:meth:`call` from a thread other than the loop's, which waits for the answer."""
        if self._on_loop_thread():
            raise RuntimeError("run() would block the event loop: await call() there")
        coroutine = self.call(function, args, kwargs, timeout=timeout)
        return self._waited(asyncio.run_coroutine_threadsafe(coroutine, self._loop))

    def submit(self, function: Callable[..., _T], *args: Any, **kwargs: Any) -> Future[_T]:
        """:meth:`call` from a thread other than the loop's, answered in a future."""
        coroutine = self.call(function, args, kwargs)
        return asyncio.run_coroutine_threadsafe(coroutine, self._loop)

    def close(self) -> None:
        if self._on_loop_thread():
            self._close()
            return
        closing: Future[None] = Future()
        self._loop.call_soon_threadsafe(self._close_once_answered, closing)
        self._waited(closing)

    def _on_loop_thread(self) -> bool:
        try:
            return asyncio.get_running_loop() is self._loop
        except RuntimeError:
            return False

    def _on_loop(self, function: Callable[..., _T], *args: Any) -> _T:
        """``function(*args)`` run on the loop; from another thread, waited for."""
        if self._on_loop_thread():
            return function(*args)
        done: Future[_T] = Future()

        def run() -> None:
            try:
                done.set_result(function(*args))
            except BaseException as exc:
                done.set_exception(exc)

        self._loop.call_soon_threadsafe(run)
        return self._waited(done)

    def _waited(self, done: Future[_T]) -> _T:
        """*done*'s result, for a thread other than the loop's: :exc:`RuntimeError` once the
        loop stopped without answering it (a crawl stopped by force)."""
        while True:
            try:
                return done.result(timeout=_LOOP_ALIVE_CHECK)
            except TimeoutError:
                if not self._loop.is_running():
                    done.cancel()
                    raise RuntimeError("the event loop stopped") from None

    def _grow(self, size: int) -> None:
        self._wanted = max(self._wanted, size)
        while not self._closed and self._broken is None and len(self._workers) < self._wanted:
            self._spawn()

    def _spawn(self) -> None:
        try:
            process, requests, answers = _launched(
                self._initializer, self._initargs, self._environment
            )
        except Exception as exc:  # out of processes or descriptors, mostly
            self._failed_start(f"it could not be started: {exc!r}")
            return
        os.set_blocking(requests.fileno(), False)
        os.set_blocking(answers.fileno(), False)
        worker = PipedWorker(process, requests, answers)
        self._workers.append(worker)
        self._loop.add_reader(answers.fileno(), self._readable, worker)

    def _failed_start(self, why: str) -> None:
        """Count a worker that did not start; after :data:`MAX_FAILED_STARTS` in a row the
        pool is broken: no more are started, and the calls waiting are answered so."""
        if self._closed:
            return
        self._failed_starts += 1
        if self._failed_starts < MAX_FAILED_STARTS:
            logger.warning("A worker process did not start (%(why)s); another one is", {"why": why})
            return
        self._broken = (
            f"{self._failed_starts} worker processes in a row did not start (the last: "
            f"{why}); no more are started"
        )
        logger.error("%(why)s", {"why": self._broken})
        if not self.started.done():
            self.started.set_exception(WorkerDied(self._broken))

    def _dispatch(self) -> None:
        """Give the calls waiting to the workers that can take them."""
        while self._waiting:
            free = [
                worker
                for worker in self._workers
                if worker.ready and len(worker.calls) < LOOP_CALLS_A_WORKER
            ]
            if not free:
                if self._broken is not None and not self._workers:
                    while self._waiting:
                        _answer(self._waiting.popleft(), error=WorkerDied(self._broken))
                return
            call = self._waiting.popleft()
            if not call.answer.done() and call.pickled():  # its caller may have given up
                self._send(min(free, key=lambda worker: len(worker.calls)), call)

    def _send(self, worker: PipedWorker, call: Call) -> None:
        if worker.queue(call):
            self._writable(worker)
        if len(worker.calls) == 1:
            self._begun(worker)

    def _writable(self, worker: PipedWorker) -> None:
        """Write what *worker*'s pipe takes; the loop calls again when it takes more."""
        try:
            left = worker.write()
        except OSError:  # it died while it had no call, or on the one before
            self._lost(worker, WorkerDied("its pipe is closed"))
            return
        if left:
            self._loop.add_writer(worker.requests.fileno(), self._writable, worker)
        else:
            self._loop.remove_writer(worker.requests.fileno())

    def _begun(self, worker: PipedWorker) -> None:
        """*worker* starts its first call now: its time limit runs from here."""
        timeout = worker.calls[0].timeout
        if timeout is not None:
            worker.deadline = self._loop.call_later(timeout, self._stuck, worker)

    def _stuck(self, worker: PipedWorker) -> None:
        worker.deadline = None
        self._lost(worker, WorkerStuck(f"no answer within {worker.calls[0].timeout} s"))

    def _readable(self, worker: PipedWorker) -> None:
        messages = worker.read()
        if messages is None:  # it ended, and its end of the pipe closed with it
            self._ended(worker)
            return
        for message in messages:
            if worker.gone:
                return
            self._received(worker, message)

    def _received(self, worker: PipedWorker, message: bytes) -> None:
        if not worker.ready:
            if message != _READY:
                self._failed_start("it wrote something else than that it was ready")
                self._lost(worker, WorkerDied("it did not start"), restart=self._broken is None)
                return
            worker.ready = True
            self._failed_starts = 0
            if not self.started.done():
                self.started.set_result(None)
            self._dispatch()
            return
        call = worker.calls.popleft()
        if worker.deadline is not None:
            worker.deadline.cancel()
            worker.deadline = None
        if worker.calls:
            self._begun(worker)
        try:
            returned, answer = pickle.loads(message)
        except Exception as exc:
            error = RuntimeError(f"the worker's answer cannot be read: {exc!r}")
            _answer(call, error=error)
        else:
            if returned:
                _answer(call, answer)
            else:
                _answer(call, error=answer)
        self._dispatch()
        self._close_if_answered()

    def _ended(self, worker: PipedWorker) -> None:
        """*worker* exited: before it was ready (counted as a start that failed), or on
        its call."""
        _stop(worker.process, within=0 if worker.ready else _EXIT_WITHIN)
        code = worker.process.returncode
        if worker.ready:
            self._lost(worker, WorkerDied(f"exit code {code}"))
            return
        self._failed_start(f"it exited with code {code} before it was ready")
        self._lost(worker, WorkerDied(f"exit code {code}"), restart=self._broken is None)

    def _lost(self, worker: PipedWorker, error: Exception, *, restart: bool = True) -> None:
        """Take *worker* out (killed if it still runs); the call it worked on is answered
        *error*, the others wait for another worker, which takes its place."""
        if worker.gone:
            return
        worker.gone = True
        if worker.deadline is not None:
            worker.deadline.cancel()
        self._loop.remove_reader(worker.answers.fileno())
        self._loop.remove_writer(worker.requests.fileno())
        self._workers.remove(worker)
        _stop(worker.process, within=0)
        calls = worker.calls
        if calls and calls[0].written:  # it may have started it
            _answer(calls.popleft(), error=error)
        for call in reversed(calls):
            call.hand_overs += 1
            if call.hand_overs < _MAX_HAND_OVERS:
                call.written = False
                self._waiting.appendleft(call)
            else:
                died = f"{_MAX_HAND_OVERS} workers died before they started the call"
                _answer(call, error=WorkerDied(died))
        calls.clear()
        worker.requests.close()
        worker.answers.close()
        if restart and not self._closed:
            self._grow(self._wanted)
        self._dispatch()
        self._close_if_answered()

    def _close(self) -> None:
        self._closed = True
        while self._waiting:
            _answer(self._waiting.popleft(), error=RuntimeError("the worker processes are closed"))
        workers, self._workers = self._workers, []
        for worker in workers:
            worker.gone = True
            if worker.deadline is not None:
                worker.deadline.cancel()
            self._loop.remove_reader(worker.answers.fileno())
            self._loop.remove_writer(worker.requests.fileno())
            worker.requests.close()  # the worker reads the end of its calls and exits
            while worker.calls:
                _answer(worker.calls.popleft(), error=RuntimeError("closed before it answered"))
        for worker in workers:
            _stop(worker.process, within=_EXIT_WITHIN)
            worker.answers.close()
        if not self.started.done():
            self.started.set_exception(RuntimeError("the worker processes are closed"))
        closings, self._closings = self._closings, []
        for closing in closings:
            closing.set_result(None)

    def _close_once_answered(self, closing: Future[None]) -> None:
        """Close the pool once the calls given to workers are answered (the calls not given
        out are answered :exc:`RuntimeError` now); then answer *closing*."""
        self._closings.append(closing)
        for call in self._waiting:
            _answer(call, error=RuntimeError("the worker processes are closed"))
        self._waiting.clear()
        self._closed = True
        self._close_if_answered()

    def _close_if_answered(self) -> None:
        if self._closings and not any(worker.calls for worker in self._workers):
            self._close()


def _answer(call: Call, answer: Any = None, *, error: BaseException | None = None) -> None:
    if call.answer.done():  # its caller gave up
        return
    if error is not None:
        call.answer.set_exception(error)
    else:
        call.answer.set_result(answer)
