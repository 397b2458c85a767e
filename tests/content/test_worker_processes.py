"""WorkerProcesses and LoopWorkerProcesses with real spawned processes: answers, errors,
deaths, stuck calls, closing."""

from __future__ import annotations

import asyncio
import functools
import os
import pickle
import signal
import threading
import time
from pathlib import Path

import pytest

from crawler.content.loop_worker_processes import LOOP_CALLS_A_WORKER, LoopWorkerProcesses
from crawler.content.worker_processes import (
    MAX_FAILED_STARTS,
    PIPE_BYTES,
    WorkerDied,
    WorkerProcesses,
    WorkerStuck,
)


def ready() -> None:
    """An initializer with nothing to load."""


def cannot_start() -> None:
    raise ImportError("an extractor that cannot be imported here")


def refuse(message: str) -> None:
    raise ValueError(message)


def die() -> None:
    os._exit(3)


def written(processes: WorkerProcesses | LoopWorkerProcesses, calls: int) -> None:
    """Wait until *calls* calls were written to the one worker of *processes*."""
    deadline = time.monotonic() + 60
    while processes._workers[0].sent < calls:
        assert time.monotonic() < deadline
        time.sleep(0.01)


def die_later() -> None:
    time.sleep(0.5)
    os._exit(3)


def pipe_size(connection_fd: int) -> int:
    import fcntl

    return fcntl.fcntl(connection_fd, fcntl.F_GETPIPE_SZ)


@pytest.fixture(params=["threads", "loop"])
def new_pool(request):
    """Starts pools of either kind: the callers' threads write and read the pipes, or an
    event loop run in a thread of its own does."""
    pools: list[WorkerProcesses | LoopWorkerProcesses] = []
    loops: list[tuple[asyncio.AbstractEventLoop, threading.Thread]] = []

    def new(size: int = 1, initializer=ready) -> WorkerProcesses | LoopWorkerProcesses:
        if request.param == "threads":
            pool: WorkerProcesses | LoopWorkerProcesses = WorkerProcesses(
                size, initializer=initializer
            )
        else:
            loop = asyncio.new_event_loop()
            thread = threading.Thread(target=loop.run_forever, daemon=True)
            thread.start()
            loops.append((loop, thread))
            pool = LoopWorkerProcesses(size, loop=loop, initializer=initializer)
        pools.append(pool)
        return pool

    yield new
    for pool in pools:
        pool.close()
    for loop, thread in loops:
        loop.call_soon_threadsafe(loop.stop)
        thread.join()
        loop.close()


@pytest.fixture
def workers(new_pool):
    processes = new_pool()
    processes.started.result(timeout=60)
    return processes


def test_a_call_runs_in_a_worker_and_its_exception_comes_back(workers):
    assert workers.run(os.getpid) != os.getpid()
    assert workers.run(divmod, (7, 2)) == (3, 1)
    assert workers.run(int, ("ff",), {"base": 16}) == 255
    with pytest.raises(ValueError, match="no such page"):
        workers.run(refuse, ("no such page",))
    assert workers.run(len, (b"x" * 3_000_000,)) == 3_000_000  # more than a pipe holds


def test_a_worker_that_dies_is_replaced_and_the_next_call_answered(workers):
    first = workers.run(os.getpid)
    with pytest.raises(WorkerDied, match="exit code 3"):
        workers.run(die)
    second = workers.run(os.getpid)
    assert second != first
    assert [process.pid for process in workers.processes()] == [second]


def test_a_call_waiting_behind_one_that_kills_its_worker_goes_to_the_next_worker(workers):
    first = workers.run(os.getpid)
    fatal = workers.submit(die_later)
    written(workers, 2)
    # written to the same worker's pipe, behind the fatal call, which it never started
    assert workers.run(os.getpid) not in (first, os.getpid())
    with pytest.raises(WorkerDied, match="exit code 3"):
        fatal.result(timeout=30)


def test_a_worker_killed_while_idle_does_not_lose_the_next_call(workers):
    killed = workers.run(os.getpid)
    os.kill(killed, signal.SIGKILL)
    time.sleep(0.2)
    # the call never reached the dead worker: a new one answers it
    assert workers.run(os.getpid) not in (killed, os.getpid())


def test_a_stuck_worker_is_killed_after_the_timeout_and_replaced(workers):
    stuck = workers.run(os.getpid)
    started = time.monotonic()
    with pytest.raises(WorkerStuck, match=r"within 0\.5 s"):
        workers.run(time.sleep, (30,), timeout=0.5)
    assert time.monotonic() - started < 10
    assert workers.run(os.getpid) != stuck
    assert not Path(f"/proc/{stuck}").exists()  # killed and reaped


def test_the_time_limit_counts_from_the_hand_over_not_from_the_wait(new_pool):
    processes = new_pool()
    try:
        processes.started.result(timeout=60)
        processes.run(int)
        slow = processes.submit(time.sleep, 1.5)
        written(processes, 2)
        # waits about 1.3 s for the worker, then is answered well within its own 1 s
        assert processes.run(divmod, (9, 4), timeout=1.0) == (2, 1)
        assert slow.result(timeout=10) is None
    finally:
        processes.close()


def test_ctrl_c_reaches_the_workers_without_stopping_them(workers):
    worker = workers.run(os.getpid)
    os.kill(worker, signal.SIGINT)
    time.sleep(0.2)
    assert workers.run(os.getpid) == worker


def test_workers_that_cannot_start_stop_being_started(new_pool, caplog):
    processes = new_pool(initializer=cannot_start)
    try:
        with pytest.raises(WorkerDied, match=f"{MAX_FAILED_STARTS} worker processes in a row"):
            processes.started.result(timeout=120)
        with pytest.raises(WorkerDied):
            processes.run(int)
        assert processes.size == 0
    finally:
        processes.close()
    assert "it exited with code 1 before it was ready" in caplog.text


def pid_after(seconds: float) -> int:
    time.sleep(seconds)
    return os.getpid()


class TwoArguments(Exception):
    """An exception that pickles and cannot be unpickled (its ``__init__`` wants two)."""

    def __init__(self, first: str, second: str) -> None:
        super().__init__(f"{first} {second}")


def raise_two_arguments() -> None:
    raise TwoArguments("not", "readable")


def test_grow_starts_more_and_calls_go_to_the_least_busy(new_pool):
    processes = new_pool()
    try:
        processes.grow(3)
        assert processes.size == 3
        deadline = time.monotonic() + 60
        while not all(worker.ready for worker in processes._workers):
            assert time.monotonic() < deadline
            time.sleep(0.01)
        answers = [processes.submit(pid_after, 0.5) for _ in range(3)]
        assert len({answer.result(timeout=60) for answer in answers}) == 3
    finally:
        processes.close()


def test_close_lets_the_calls_given_out_finish_then_stops_every_worker(new_pool):
    processes = new_pool()
    processes.started.result(timeout=60)
    slow = processes.submit(pid_after, 1.0)
    written(processes, 1)
    large = processes.submit(len, b"x" * 3_000_000)  # more than the pipe holds: it waits
    written(processes, 2)
    children = processes.processes()
    processes.close()
    assert slow.result(timeout=1) == children[0].pid
    assert large.result(timeout=1) == 3_000_000
    assert all(process.poll() is not None for process in children)
    with pytest.raises(RuntimeError, match="closed"):
        processes.run(int)


def note_teardown(marker: str) -> None:
    """An initializer that writes *marker* when the worker's interpreter tears down."""
    import atexit

    atexit.register(Path(marker).write_text, "torn down")


def test_a_closed_worker_exits_at_once_without_the_interpreters_teardown(new_pool, tmp_path):
    marker = tmp_path / "teardown"
    processes = new_pool(initializer=functools.partial(note_teardown, str(marker)))
    processes.started.result(timeout=60)
    assert processes.run(divmod, (7, 2)) == (3, 1)
    children = processes.processes()
    processes.close()
    assert [process.returncode for process in children] == [0]
    assert not marker.exists()


def test_callers_meeting_a_worker_dead_while_idle_both_get_an_answer(workers):
    killed = workers.run(os.getpid)
    os.kill(killed, signal.SIGKILL)
    time.sleep(0.2)
    both = [workers.submit(os.getpid) for _ in range(2)]
    pids = {answer.result(timeout=60) for answer in both}
    assert killed not in pids and os.getpid() not in pids


def test_an_answer_that_cannot_be_read_is_an_error_and_the_worker_goes_on(workers):
    worker = workers.run(os.getpid)
    with pytest.raises(RuntimeError, match="answer cannot be read"):
        workers.run(raise_two_arguments)
    assert workers.run(os.getpid) == worker


@pytest.mark.skipif(not hasattr(__import__("fcntl"), "F_GETPIPE_SZ"), reason="Linux only")
def test_pipes_hold_a_page_in_one_write(workers):
    assert workers.run(len, (b"",)) == 0
    worker = workers._workers[0]
    for connection in (worker.requests, worker.answers):
        assert pipe_size(connection.fileno()) >= min(PIPE_BYTES, _pipe_max_size())


def _pipe_max_size() -> int:
    return int(Path("/proc/sys/fs/pipe-max-size").read_text())


def test_a_call_that_cannot_be_pickled_is_its_callers_error_and_the_worker_goes_on(workers):
    worker = workers.run(os.getpid)
    with pytest.raises((pickle.PicklingError, AttributeError, TypeError)):
        workers.run(len, (threading.Lock(),))
    assert workers.run(os.getpid) == worker


@pytest.mark.parametrize("new_pool", ["loop"], indirect=True)
def test_the_loop_gives_a_worker_its_call_and_three_more_to_wait_in_its_pipe(new_pool):
    processes = new_pool()
    worker = processes.run(os.getpid)
    calls = [processes.submit(pid_after, 0.5) for _ in range(LOOP_CALLS_A_WORKER + 1)]
    written(processes, 1 + LOOP_CALLS_A_WORKER)  # the run() above and four of these
    time.sleep(0.2)
    assert processes._workers[0].sent == 1 + LOOP_CALLS_A_WORKER  # the fifth waits its turn
    assert {call.result(timeout=30) for call in calls} == {worker}


def test_threads_closing_the_loops_pool_at_once_all_return_once_calls_are_answered():
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    processes = LoopWorkerProcesses(1, loop=loop, initializer=ready)
    try:
        processes.started.result(timeout=60)
        slow = processes.submit(pid_after, 1.0)
        written(processes, 1)
        closers = [threading.Thread(target=processes.close) for _ in range(2)]
        for closer in closers:
            closer.start()
        for closer in closers:
            closer.join(30)
        assert not any(closer.is_alive() for closer in closers)
        assert slow.result(timeout=1) > 0  # answered before the workers stopped
    finally:
        loop.call_soon_threadsafe(loop.stop)
        thread.join()
        loop.close()


def test_a_thread_waiting_for_a_loop_that_stopped_is_told_so():
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    processes = LoopWorkerProcesses(1, loop=loop, initializer=ready)
    processes.started.result(timeout=60)
    loop.call_soon_threadsafe(loop.stop)
    thread.join()
    started = time.monotonic()
    with pytest.raises(RuntimeError, match="event loop stopped"):
        processes.run(os.getpid)
    assert time.monotonic() - started < 10
    thread = threading.Thread(target=loop.run_forever, daemon=True)  # to close the pool
    thread.start()
    processes.close()
    loop.call_soon_threadsafe(loop.stop)
    thread.join()
    loop.close()
