"""A log message said once: the first time a condition is met, not at each of the
thousands of requests or items that meet it after.

Nothing here imports Scrapy.
"""

from __future__ import annotations

import logging
import threading
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Mapping

__all__ = ["LogOnce"]


class LogOnce:
    """Log a message at *level* with *logger* the first time it is called, from any thread;
    each later call does nothing.

    >>> warning = LogOnce(logging.getLogger("crawler"), logging.WARNING)
    >>> warning("Redis failed: %(error)s", {"error": "timeout"}), warning("again")
    (True, False)
    >>> warning.said
    True
    """

    def __init__(self, logger: logging.Logger, level: int) -> None:
        self.logger = logger
        self.level = level
        self.said = False
        self._lock = threading.Lock()

    def __call__(self, message: str, args: Mapping[str, Any] | None = None, **kwargs: Any) -> bool:
        """Log *message* % *args* (``logging``'s *extra*... in *kwargs*) unless it was
        logged already, as logged where it is called; whether it was logged now."""
        with self._lock:
            if self.said:
                return False
            self.said = True
        if args is None:
            self.logger.log(self.level, message, stacklevel=2, **kwargs)
        else:
            self.logger.log(self.level, message, args, stacklevel=2, **kwargs)
        return True
