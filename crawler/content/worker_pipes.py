"""A worker process's two pipes as the event loop writes and reads them: calls framed as
:mod:`multiprocessing.connection` frames them (what the worker's
:func:`~crawler.content.worker_processes._serve` reads), written as far as the
non-blocking pipe takes them, and answers taken out whole as they come.

Nothing here imports Scrapy.
"""

from __future__ import annotations

import os
import pickle
import struct
from collections import deque
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import asyncio
    import subprocess
    from collections.abc import Callable, Mapping
    from multiprocessing.connection import Connection

#: The most bytes read from a worker's pipe at once (its answers are a page's fingerprints).
_READ_BYTES = 1 << 16
#: ``multiprocessing.connection``'s frame: a signed big-endian length, or -1 and then an
#: unsigned 8-byte one for a message of 2 GiB or more.
_LENGTH = struct.Struct("!i")
_LONG_LENGTH = struct.Struct("!Q")


@dataclass(eq=False)
class Call:
    """A call for a worker: the function and its arguments, the future its answer goes to,
    and once a worker is to take it, its pickled message."""

    request: tuple[Callable[..., Any], tuple[Any, ...], Mapping[str, Any]]
    answer: asyncio.Future[Any]
    timeout: float | None
    #: pickled as it is given to a worker: a call that waits holds no copy of its page
    message: bytes = b""
    #: wholly written to a worker's pipe (a worker may have started it)
    written: bool = False
    #: the workers it was given to that died before they started it
    hand_overs: int = 0

    def pickled(self) -> bool:
        """Pickle its message, once; ``False`` (and its answer the error) where it cannot be."""
        if not self.message:
            try:
                self.message = pickle.dumps(self.request, protocol=pickle.HIGHEST_PROTOCOL)
            except Exception as exc:  # what cannot cross to a worker
                if not self.answer.done():
                    self.answer.set_exception(exc)
                return False
        return True


@dataclass(eq=False)
class PipedWorker:
    """One worker process, its pipes' ends in the crawl process (non-blocking), and the
    calls given to it."""

    process: subprocess.Popen[bytes]
    requests: Connection
    answers: Connection
    ready: bool = False
    gone: bool = False
    #: the calls given to it, oldest first: the first is the one it works on
    calls: deque[Call] = field(default_factory=deque)
    #: what its pipe has not taken yet, each piece with the call it ends (``None``: a
    #: frame's header)
    unwritten: deque[tuple[memoryview, Call | None]] = field(default_factory=deque)
    received: bytearray = field(default_factory=bytearray)
    #: when the call it works on is taken for stuck
    deadline: asyncio.TimerHandle | None = None
    #: calls given to it (what tests wait for)
    sent: int = 0

    def queue(self, call: Call) -> bool:
        """Frame *call* behind what the pipe has not taken yet; whether it took all before."""
        self.calls.append(call)
        self.sent += 1
        size = len(call.message)
        header = (
            _LENGTH.pack(size) if size <= 0x7FFFFFFF else _LENGTH.pack(-1) + _LONG_LENGTH.pack(size)
        )
        idle = not self.unwritten
        self.unwritten += ((memoryview(header), None), (memoryview(call.message), call))
        return idle

    def write(self) -> bool:
        """Write what the pipe takes now; whether some is left (:exc:`OSError`: the pipe
        is closed)."""
        unwritten = self.unwritten
        try:
            written = os.writev(self.requests.fileno(), [piece for piece, _ in unwritten])
        except BlockingIOError:
            written = 0
        while unwritten and written >= len(unwritten[0][0]):
            piece, ended = unwritten.popleft()
            written -= len(piece)
            if ended is not None:
                ended.written = True
        if written:
            piece, ended = unwritten[0]
            unwritten[0] = (piece[written:], ended)
        return bool(unwritten)

    def read(self) -> list[bytes] | None:
        """The messages the pipe brought whole; ``None`` once the worker's end closed."""
        try:
            data = os.read(self.answers.fileno(), _READ_BYTES)
        except BlockingIOError:
            return []
        except OSError:
            data = b""
        if not data:
            return None
        self.received += data
        messages = []
        while (message := _next_frame(self.received)) is not None:
            messages.append(message)
        return messages


def _next_frame(received: bytearray) -> bytes | None:
    """The first whole message in *received*, taken out of it; ``None`` before it is whole."""
    if len(received) < _LENGTH.size:
        return None
    (size,) = _LENGTH.unpack_from(received)
    start = _LENGTH.size
    if size == -1:
        if len(received) < start + _LONG_LENGTH.size:
            return None
        (size,) = _LONG_LENGTH.unpack_from(received, start)
        start += _LONG_LENGTH.size
    end = start + size
    if len(received) < end:
        return None
    message = bytes(received[start:end])
    del received[:end]
    return message
