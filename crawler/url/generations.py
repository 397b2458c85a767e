"""Time slices for seen stores that forget: ``DEDUP_URL_TTL``.

A store with a time to live records each key in the *generation* of the
moment it was added, generation ``floor(time / slice)``, and answers "seen"
when any live generation holds the key. Generations are dropped whole once
they are older than the time to live, so no per-key timestamp is kept.

With ``slice = ttl / count``, the live generations are the current one and the
*count* before it. A key recorded at time ``t`` is therefore forgotten between
``t + ttl`` and ``t + ttl + slice``: never early, at most one slice late.

Generation numbers come from the wall clock, so workers sharing a store agree
on them without talking to each other (as far as their clocks agree).
"""

from __future__ import annotations

import math
import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable


class Generations:
    """The generation arithmetic for a time to live of *ttl* seconds split in *count* slices.

    >>> generations = Generations(ttl=3600, count=4, clock=lambda: 10_000.0)
    >>> generations.slice_seconds, generations.current(), generations.live()
    (900.0, 11, [11, 10, 9, 8, 7])
    """

    def __init__(self, ttl: float, count: int, clock: Callable[[], float] = time.time) -> None:
        if not ttl > 0:
            raise ValueError(f"a time to live must be a positive number of seconds, got {ttl!r}")
        if count < 1:
            raise ValueError(f"a time to live needs at least 1 generation, got {count!r}")
        self.ttl = float(ttl)
        self.count = count
        self.slice_seconds = self.ttl / count
        self.clock = clock

    def current(self) -> int:
        return math.floor(self.clock() / self.slice_seconds)

    def live(self) -> list[int]:
        """The generations still consulted, newest first."""
        current = self.current()
        return list(range(current, current - self.count - 1, -1))

    def is_live(self, generation: int) -> bool:
        return generation >= self.current() - self.count

    def started_at(self, generation: int) -> float:
        return generation * self.slice_seconds

    def age(self, generation: int) -> float:
        """Seconds since *generation* began."""
        return self.clock() - self.started_at(generation)

    @property
    def expire_seconds(self) -> int:
        """How long a generation created now must be kept: until it is no longer live,
        plus one slice of margin for clocks that disagree."""
        return math.ceil(self.slice_seconds * (self.count + 2))
