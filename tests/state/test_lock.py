"""One crawl at a time in a state directory: the lock, across processes."""

from __future__ import annotations

import signal
import subprocess
import sys

import pytest

from crawler.state.lock import (
    StateDirInUseError,
    check_state_dir_free,
    lock_state_dir,
    unlock_state_dir,
)

HOLD = (
    "import sys, time; from pathlib import Path; "
    "from crawler.state.lock import lock_state_dir; "
    "lock_state_dir(Path(sys.argv[1]), 'JOBDIR'); print('held', flush=True); time.sleep(60)"
)
CHECK = (
    "import sys; from pathlib import Path; "
    "from crawler.state.lock import check_state_dir_free, StateDirInUseError\n"
    "try:\n    check_state_dir_free(Path(sys.argv[1]), 'JOBDIR')\n"
    "except StateDirInUseError as exc:\n    print(exc)\nelse:\n    print('free')"
)


def checked_from_another_process(directory) -> str:
    completed = subprocess.run(
        [sys.executable, "-c", CHECK, str(directory)],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return completed.stdout.strip()


def test_a_directory_held_by_a_killed_process_is_free_again(tmp_path):
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(tmp_path)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout is not None
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(StateDirInUseError) as refused:
            check_state_dir_free(tmp_path, "DEDUP_STATE_DIR")
        assert str(refused.value) == (
            f"{tmp_path} is in use by another crawl (process {holder.pid}): two crawls "
            "writing one DEDUP_STATE_DIR would damage its state. Wait for that crawl to end, "
            "or give this one another DEDUP_STATE_DIR"
        )
        with pytest.raises(StateDirInUseError):
            lock_state_dir(tmp_path, "DEDUP_STATE_DIR")
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait()
    check_state_dir_free(tmp_path, "DEDUP_STATE_DIR")  # no stale lock after kill -9
    lock_state_dir(tmp_path, "DEDUP_STATE_DIR")
    unlock_state_dir(tmp_path)


def test_the_components_of_one_crawl_share_the_lock_until_the_last_lets_go(tmp_path):
    state_dir = tmp_path / "state"
    lock_state_dir(state_dir, "JOBDIR")  # creates the directory
    lock_state_dir(state_dir, "JOBDIR")  # the pipeline, after the dupefilter
    check_state_dir_free(state_dir, "JOBDIR")  # this process holds it: not refused
    assert "is in use by another crawl" in checked_from_another_process(state_dir)
    unlock_state_dir(state_dir)
    assert "is in use by another crawl" in checked_from_another_process(state_dir)
    unlock_state_dir(state_dir)
    assert checked_from_another_process(state_dir) == "free"
