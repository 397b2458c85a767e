"""Worker processes that the calling thread hands a call to and reads the answer from itself.

:class:`WorkerProcesses` runs functions of this package in spawned processes for
:class:`~crawler.content.page_fingerprinter.PageFingerprinter`. Each worker has a pipe of
its own each way; the thread that calls :meth:`WorkerProcesses.run` writes the call to the
worker with the fewest calls and reads the answer itself, so a page crosses with no thread
of the pool's in between. ``concurrent.futures.ProcessPoolExecutor`` moves each task
through two threads of its own (a queue's feeder, which pickles and writes it, and a
manager, which reads the result and answers its future), and in a crawl those threads wait
for the interpreter the reactor holds: the pages of the dev corpus cost 0.54 ms of CPU a
page in the crawl process and 0.28 in the workers that way, 0.22 and 0.16 here
(``bench/worker_transfer.py``). A worker that is stuck or dies is replaced alone: the
others go on, and a call that waited in its pipe goes to another.

A worker is a new interpreter started with :mod:`subprocess`, not by ``multiprocessing``:
its ``"spawn"`` method also starts a resource tracker process (13 MiB of resident memory
for a crawl that creates no semaphore nor shared memory) and runs the crawl's ``__main__``
script again in each worker (for ``scrapy crawl``, Scrapy's console script: Scrapy and
Twisted imported for nothing).

Nothing here imports Scrapy.
"""

from __future__ import annotations

import contextlib
import logging
import os
import pickle
import signal
import subprocess
import sys
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from multiprocessing.connection import Connection, Pipe, wait
from typing import TYPE_CHECKING, Any, Final, NoReturn

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

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
#: What a new interpreter runs: the crawl process's ``sys.path`` (read before anything of
#: this package can be imported), then :func:`_serve`. Its arguments are the descriptors
#: of its ends of the two pipes.
_BOOTSTRAP: Final = """\
import pickle, sys
from multiprocessing.connection import Connection
requests = Connection(int(sys.argv[1]), writable=False)
answers = Connection(int(sys.argv[2]), readable=False)
sys.path[:] = pickle.loads(requests.recv_bytes())
from crawler.content.worker_processes import _serve
_serve(requests, answers)
"""
#: Seconds a worker is given to exit once its pipe is closed, before it is killed.
_EXIT_WITHIN: Final = 2.0
#: The calls a worker holds at most: the one it works on, and the next, waiting in its pipe
#: (without it the worker waited, between two pages, for a thread of the crawl process to
#: read its answer and another to write the next page, each first waiting for the
#: interpreter the reactor holds: a crawl at 50 ms latency kept 0.2 of a core less busy).
CALLS_A_WORKER: Final = 2
#: The workers a call is given to at most, when each dies on an earlier call before it
#: starts this one.
_MAX_HAND_OVERS: Final = 5
#: Workers that exit before they are ready, one after the other, before no more are started
#: (an extractor that cannot be imported there would otherwise start one after another).
MAX_FAILED_STARTS: Final = 3


class WorkerDied(Exception):
    """The worker process ended before it answered (a crash, or a kill by the system)."""


class WorkerStuck(Exception):
    """The worker process did not answer within the time given: it was killed."""


@dataclass(eq=False)
class _Worker:
    """One worker process and its pipes. The pipes are closed by nobody but :meth:`close`
    and the garbage collector: a thread may still be writing to or reading from a worker
    another thread found dead (a descriptor closed under it, or reused, loses data)."""

    process: subprocess.Popen[bytes]
    #: what the crawl process writes to, and reads from
    requests: Connection
    answers: Connection
    #: notified when an answer of this worker is read, or it is gone: what the thread whose
    #: call is next waits for (on the pool's lock)
    turn: threading.Condition
    #: held while a call is written: a worker's calls are numbered in the order written
    sending: threading.Lock = field(default_factory=threading.Lock)
    ready: bool = False
    #: killed, or found dead: the calls written to it and not started go to another
    gone: bool = False
    #: calls given to it and not answered yet (what :data:`CALLS_A_WORKER` limits)
    calls: int = 0
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
    * :meth:`grow` starts more; :meth:`close` lets the calls given out finish, then stops
      every worker: a thread that asks for one afterwards gets :exc:`RuntimeError`;
    * *environment*: variables each worker is started with besides the crawl process's.

    The initializer and the functions run are pickled by name: they must be importable from
    a module (a worker does not run the script the crawl process was started with).
    """

    def __init__(
        self,
        size: int,
        *,
        initializer: Callable[..., object],
        initargs: tuple[Any, ...] = (),
        environment: Mapping[str, str] | None = None,
    ) -> None:
        if size < 1:
            raise ValueError(f"size must be 1 or more, got {size!r}")
        self._initializer = initializer
        self._initargs = initargs
        self._environment = dict(environment or {})
        self._workers: list[_Worker] = []
        #: guards the workers' list and counts, and the flags below
        self._lock = threading.Lock()
        #: notified on each change but one call's end (:meth:`_notify_all`)
        self._changed = threading.Condition(self._lock)
        #: notified once for each place a call leaves on a worker: what :meth:`_hand_over`
        #: waits for, one thread a place (every waiting thread woken at each call's end took
        #: the interpreter in turn: with six threads calling, 17 context switches a page and
        #: 0.97 ms of CPU a call, against 8.9 and 0.74 this way)
        self._free = threading.Condition(self._lock)
        #: processes being spawned (outside the condition's lock)
        self._spawning = 0
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

    def processes(self) -> list[subprocess.Popen[bytes]]:
        with self._lock:
            return [worker.process for worker in self._workers]

    def grow(self, size: int) -> None:
        """Start workers until there are *size*."""
        while True:
            with self._lock:
                if self._closed or self._broken is not None:
                    return
                if len(self._workers) + self._spawning >= size:
                    return
            self._spawn()

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
        when it ended first. Either way it is replaced. A call that waited in the pipe of
        a worker that died on an earlier call goes to another worker."""
        message = pickle.dumps((function, args, kwargs or {}), protocol=pickle.HIGHEST_PROTOCOL)
        for _ in range(_MAX_HAND_OVERS):
            worker, call = self._hand_over(message)
            if worker is None:
                continue  # found dead as the call was written to it
            with self._lock:
                while not worker.gone and worker.read < call:
                    worker.turn.wait()
                if worker.gone and worker.read < call:
                    worker.calls -= 1
                    self._notify_all()
                    continue  # it died on an earlier call, before it started this one
            return self._answer(worker, timeout)
        raise WorkerDied(f"{_MAX_HAND_OVERS} workers died before they started the call")

    def submit(self, function: Callable[..., Any], *args: Any, **kwargs: Any) -> Future[Any]:
        """:meth:`run` in a thread of its own, answered in a future."""
        with self._lock:
            if self._submitted is None:
                self._submitted = ThreadPoolExecutor(thread_name_prefix="dedup-worker-call")
        return self._submitted.submit(self.run, function, args, kwargs)

    def close(self) -> None:
        """Let the calls given out finish (a stuck one: until its caller's time limit),
        then stop every worker (killed when it does not exit within a moment)."""
        with self._lock:
            self._closed = True
            self._notify_all()
            while any(worker.calls for worker in self._workers) or self._spawning:
                self._changed.wait()
            workers, self._workers = self._workers, []
            if not self.started.done():
                self.started.set_exception(RuntimeError("the worker processes are closed"))
        for worker in workers:
            with worker.sending:
                worker.requests.close()  # the worker reads the end of its calls and exits
        for worker in workers:
            _stop(worker.process, within=_EXIT_WITHIN)
        if self._submitted is not None:
            self._submitted.shutdown(wait=False, cancel_futures=True)

    def _notify_all(self) -> None:
        """Wake every waiting thread, for a change other than one call's end (called with
        the lock held)."""
        self._changed.notify_all()
        self._free.notify_all()
        for worker in self._workers:
            worker.turn.notify_all()

    def _hand_over(self, message: bytes) -> tuple[_Worker | None, int]:
        """Write *message* to the ready worker with the fewest calls, once one has fewer
        than :data:`CALLS_A_WORKER`; the worker and the call's number (``None`` when the
        worker turned out dead)."""
        with self._lock:
            while True:
                if self._closed:
                    raise RuntimeError("the worker processes are closed")
                if not self._workers and not self._spawning:
                    raise WorkerDied(self._broken or "no worker process runs")
                free = [
                    worker
                    for worker in self._workers
                    if worker.ready and not worker.gone and worker.calls < CALLS_A_WORKER
                ]
                if free:
                    break
                self._free.wait()
            worker = min(free, key=lambda each: each.calls)
            worker.calls += 1
        # never waited for with the condition's lock held: a thread that found the worker
        # dead takes that lock with this one
        with worker.sending:
            call = worker.sent
            worker.sent += 1
            try:
                worker.requests.send_bytes(message)
                return worker, call
            except OSError:  # it died while it had no call, or on the call before
                pass
        with self._lock:
            worker.calls -= 1
        self._replace(worker)
        return None, call

    def _answer(self, worker: _Worker, timeout: float | None) -> Any:
        """The answer to the call whose turn it is on *worker*."""
        read = False
        try:
            # a worker that ends closes its end of the pipe: readable, at its end
            try:
                answered = bool(wait([worker.answers], timeout))
            except (OSError, ValueError):  # never an error of the caller's (state, disk)
                answered = True
            if not answered:
                self._replace(worker)
                raise WorkerStuck(f"no answer within {timeout} s")
            try:
                message = worker.answers.recv_bytes()
            except (EOFError, OSError) as exc:
                self._replace(worker)
                raise WorkerDied(f"exit code {worker.process.returncode}") from exc
            read = True
        finally:
            with self._lock:
                worker.calls -= 1
                if read:
                    worker.read += 1
                worker.turn.notify_all()
                self._free.notify()
                if self._closed:  # close() waits for the calls given out
                    self._changed.notify_all()
            if not read and not worker.gone:  # interrupted: its answers are out of step
                self._replace(worker)
        try:
            returned, answer = pickle.loads(message)
        except Exception as exc:
            raise RuntimeError(f"the worker's answer cannot be read: {exc!r}") from exc
        if not returned:
            raise answer
        return answer

    def _spawn(self, *, reserved: bool = False) -> None:
        """Start one worker and add it to the others (unless the pool closed meanwhile);
        *reserved*: the caller counted it in :attr:`_spawning` already."""
        if not reserved:
            with self._lock:
                self._spawning += 1
        while True:
            try:
                worker: _Worker | None = self._start()
                break
            except OSError as exc:  # out of processes or descriptors
                worker = None
                if not self._failed_start(f"it could not be started: {exc}"):
                    break
        with self._lock:
            self._spawning -= 1
            if worker is not None and not self._closed:
                self._workers.append(worker)
            self._notify_all()
        if worker is not None and self._closed:
            _stop(worker.process, within=0)

    def _start(self) -> _Worker:
        process, requests, answers = _launched(self._initializer, self._initargs, self._environment)
        worker = _Worker(process, requests, answers, threading.Condition(self._lock))
        threading.Thread(target=self._await_ready, args=(worker,), daemon=True).start()
        return worker

    def _await_ready(self, worker: _Worker) -> None:
        try:
            ready = worker.answers.recv_bytes() == _READY
        except (EOFError, OSError):
            ready = False
        if ready:
            with self._lock:
                self._failed_starts = 0
                worker.ready = True
                self._notify_all()
                if not self.started.done():
                    self.started.set_result(None)
            return
        _stop(worker.process, within=_EXIT_WITHIN)
        why = f"it exited with code {worker.process.returncode} before it was ready"
        self._replace(worker, restart=self._failed_start(why))

    def _failed_start(self, why: str) -> bool:
        """Count a worker that did not start; whether another one is to start: not once
        :data:`MAX_FAILED_STARTS` did not in a row (the pool is broken then)."""
        with self._lock:
            if self._closed:
                return False
            self._failed_starts += 1
            failed = self._failed_starts
            if failed >= MAX_FAILED_STARTS:
                self._broken = (
                    f"{failed} worker processes in a row did not start (the last: {why}); "
                    "no more are started"
                )
                self._notify_all()
                if not self.started.done():
                    self.started.set_exception(WorkerDied(self._broken))
        if failed >= MAX_FAILED_STARTS:
            logger.error("%(why)s", {"why": self._broken})
            return False
        logger.warning("A worker process did not start (%(why)s); another one is", {"why": why})
        return True

    def _replace(self, worker: _Worker, *, restart: bool = True) -> None:
        """Kill *worker* if it still runs and take it out; a new one takes its place
        unless *restart* is false, another thread replaced it already or the pool closed.
        Its pipes are left to the threads still holding them."""
        with self._lock:
            worker.gone = True
            restarting = worker in self._workers and restart and not self._closed
            if worker in self._workers:
                self._workers.remove(worker)
            if restarting:  # counted at once: no caller finds the pool empty meanwhile
                self._spawning += 1
            worker.turn.notify_all()
            self._notify_all()
        _stop(worker.process, within=0)
        if restarting:
            self._spawn(reserved=True)


def _launched(
    initializer: Callable[..., object],
    initargs: tuple[Any, ...],
    environment: Mapping[str, str],
) -> tuple[subprocess.Popen[bytes], Connection, Connection]:
    """A new worker process, given what it starts with; its pipes' ends the crawl process
    writes calls to, and reads answers from."""
    requests_read, requests = Pipe(duplex=False)
    answers, answers_write = Pipe(duplex=False)
    for connection in (requests, answers):
        _widen(connection)
    descriptors = (requests_read.fileno(), answers_write.fileno())
    try:
        process = subprocess.Popen(
            [
                sys.executable,
                *subprocess._args_from_interpreter_flags(),  # type: ignore[attr-defined]
                "-c",
                _BOOTSTRAP,
                *map(str, descriptors),
            ],
            stdin=subprocess.DEVNULL,
            pass_fds=descriptors,
            env={**os.environ, **environment},
        )
    finally:
        requests_read.close()
        answers_write.close()
    try:
        requests.send_bytes(pickle.dumps(sys.path))
        requests.send_bytes(pickle.dumps((initializer, initargs), protocol=pickle.HIGHEST_PROTOCOL))
    except OSError:  # it ended at once: told apart as a worker that never got ready
        pass
    return process, requests, answers


def _stop(process: subprocess.Popen[bytes], *, within: float) -> None:
    """Wait *within* seconds for *process* to exit, then kill it and wait for it."""
    try:
        process.wait(within)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def _serve(requests: Connection, answers: Connection) -> None:
    """A worker's life: its initializer, then one call after another until the crawl
    process closes its pipe (:func:`_exit_at_once`). Ctrl-C reaches every process of the
    terminal's group: the crawl process, which may finish its items first, says when its
    workers stop."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    initializer, initargs = pickle.loads(requests.recv_bytes())
    initializer(*initargs)
    answers.send_bytes(_READY)
    while True:
        try:
            message = requests.recv_bytes()
        except EOFError:
            _exit_at_once()
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


def _exit_at_once() -> NoReturn:
    """End the worker without the interpreter's teardown: the crawl process waits for its
    workers to exit as it closes, and freeing a worker's modules and pages one object at a
    time took about 0.1 s of every crawl's end (``bench/crawl_overhead.py``); a worker holds
    nothing that needs it (its answers are written, it writes no file)."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):  # closed, or None: nothing to keep
            stream.flush()
    os._exit(0)


def _widen(connection: Connection) -> None:
    try:
        import fcntl

        fcntl.fcntl(connection.fileno(), fcntl.F_SETPIPE_SZ, PIPE_BYTES)
    except (ImportError, AttributeError, OSError):  # not Linux, or a lower limit
        pass
