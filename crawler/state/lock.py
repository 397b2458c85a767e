"""One crawl at a time in a state directory.

Two crawls appending to the same journals, or one of them removing Scrapy's
request queue that the other still uses, would damage the state both rely on.
A crawl holds an exclusive lock on ``<state dir>/crawl.lock`` (``flock``) while
its components use the directory; another process that wants the directory is
refused, naming the setting and the process that holds it. The operating system
releases the lock when the holder exits, however it exits (``kill -9``
included), so a crashed crawl never leaves a stale lock behind.

Within one process the components of a crawl (dupefilter, pipelines) share the
lock: each :func:`lock_state_dir` is matched by an :func:`unlock_state_dir`, and
the file is unlocked when the last user lets go.
"""

from __future__ import annotations

import fcntl
import os
import threading
from pathlib import Path

from crawler.state.persistence import StateFileError, check_writable

__all__ = [
    "LOCK_FILE_NAME",
    "StateDirInUseError",
    "check_state_dir_free",
    "lock_state_dir",
    "unlock_state_dir",
]

LOCK_FILE_NAME = "crawl.lock"

_held: dict[Path, tuple[int, int]] = {}  # directory -> (descriptor, users)
_held_lock = threading.Lock()


class StateDirInUseError(StateFileError):
    """Another process holds the state directory."""


def check_state_dir_free(directory: Path, setting: str) -> None:
    """Raise :class:`StateDirInUseError` when another process holds *directory*
    (whose path comes from the setting named *setting*), and
    :class:`~crawler.state.persistence.StateFileError` when this process may not write its lock
    file; nothing is kept locked."""
    with _held_lock:
        if _key(directory) in _held or not directory.is_dir():
            return
        check_writable(directory / LOCK_FILE_NAME)
        descriptor = _open(directory)
        try:
            _lock(descriptor, directory, setting)
            fcntl.flock(descriptor, fcntl.LOCK_UN)
        finally:
            os.close(descriptor)


def lock_state_dir(directory: Path, setting: str) -> None:
    """Hold *directory* for this process (created if missing) until as many
    :func:`unlock_state_dir` calls; raise :class:`StateDirInUseError` when another
    process holds it."""
    key = _key(directory)
    with _held_lock:
        if key in _held:
            descriptor, users = _held[key]
            _held[key] = (descriptor, users + 1)
            return
        directory.mkdir(parents=True, exist_ok=True)
        descriptor = _open(directory)
        try:
            _lock(descriptor, directory, setting)
        except BaseException:
            os.close(descriptor)
            raise
        os.ftruncate(descriptor, 0)
        os.write(descriptor, f"{os.getpid()}\n".encode())
        _held[key] = (descriptor, 1)


def unlock_state_dir(directory: Path) -> None:
    """Let go of *directory*; the lock is released with its last user in this process."""
    key = _key(directory)
    with _held_lock:
        if key not in _held:
            return
        descriptor, users = _held[key]
        if users > 1:
            _held[key] = (descriptor, users - 1)
            return
        del _held[key]
        os.close(descriptor)  # releases the lock


def _key(directory: Path) -> Path:
    return directory.resolve()


def _open(directory: Path) -> int:
    return os.open(directory / LOCK_FILE_NAME, os.O_RDWR | os.O_CREAT, 0o644)


def _lock(descriptor: int, directory: Path, setting: str) -> None:
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = os.pread(descriptor, 32, 0).decode("ascii", "replace").strip() or "unknown"
        raise StateDirInUseError(
            f"{directory} is in use by another crawl (process {holder}): two crawls writing "
            f"one {setting} would damage its state. Wait for that crawl to end, or give this "
            f"one another {setting}"
        ) from None
