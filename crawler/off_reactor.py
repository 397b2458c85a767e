"""Blocking work run off the reactor's thread, whichever reactor Scrapy runs on."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any, TypeVar

from scrapy.utils.asyncio import is_asyncio_available
from twisted.internet.threads import deferToThread

if TYPE_CHECKING:
    from collections.abc import Callable

_T = TypeVar("_T")


async def in_thread(function: Callable[..., _T], *args: Any) -> _T:
    """Run *function* in a worker thread, off the reactor (asyncio or not)."""
    if is_asyncio_available():
        return await asyncio.to_thread(function, *args)
    result: _T = await deferToThread(function, *args)
    return result


def running_loop() -> asyncio.AbstractEventLoop | None:
    """The asyncio loop running on this thread: the one the reactor runs on, called on its
    thread; ``None`` with another reactor, or none running."""
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None
