"""``GCFreeze``: the objects a crawl holds from its start to its end left out of the
garbage collector's collections while the crawl runs.

Python's cyclic garbage collector walks every object it tracks on each full collection, and
a crawl sets one off every few thousand requests. Most of what it walks was there before the
first request and stays to the end: the modules (Scrapy's, Twisted's, and the add-on's
NumPy, extractors and tables), classes, settings and components. At the engine's start the
extension collects the young generations and freezes what is left (:func:`gc.freeze`), and
unfreezes it when the engine stops (:func:`gc.unfreeze`), so that anything among it that
became garbage is collected again after the crawl. Reference counting frees objects as usual
meanwhile; only a cycle of objects that were alive at the start waits for the crawl's end.

Only the young generations (:data:`STARTUP_GENERATIONS`): the garbage of a crawl's start-up
is young (its settings, components and spider were just made), and a full collection walks
every object to find the rest: in a crawl of the add-on (``bench/crawl_overhead.py``) it took
56-62 ms on the reactor's thread before the first request went out and found 5 objects more
than the young generations' 1.4 ms. What it would have found waits for the crawl's end.

Enabled by the add-on (``DEDUP_GC_FREEZE = False`` switches it off); by hand::

    EXTENSIONS = {"crawler.gc_freeze.GCFreeze": 0}
"""

from __future__ import annotations

import gc
import logging
from typing import TYPE_CHECKING, Final

from scrapy import signals
from scrapy.exceptions import NotConfigured

from crawler import defaults

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from scrapy.statscollectors import StatsCollector
    from typing_extensions import Self

logger = logging.getLogger(__name__)

#: The generations collected before freezing: 0 and 1 (see the module documentation).
STARTUP_GENERATIONS: Final = 1


class GCFreeze:
    """Collect the young generations and :func:`gc.freeze` at ``engine_started``,
    :func:`gc.unfreeze` at ``engine_stopped``; the stat ``dedup/gc/frozen_objects`` says how
    many objects were frozen."""

    def __init__(self, stats: StatsCollector) -> None:
        self.stats = stats
        self.frozen = False

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        switch = defaults.switched_off(crawler.settings, "DEDUP_GC_FREEZE")
        if switch:
            raise NotConfigured(f"{switch} is False")
        assert crawler.stats is not None
        extension = cls(crawler.stats)
        crawler.signals.connect(extension.engine_started, signal=signals.engine_started)
        crawler.signals.connect(extension.engine_stopped, signal=signals.engine_stopped)
        return extension

    def engine_started(self) -> None:
        gc.collect(STARTUP_GENERATIONS)
        gc.freeze()
        self.frozen = True
        frozen = gc.get_freeze_count()
        self.stats.set_value("dedup/gc/frozen_objects", frozen)
        logger.debug("Froze %d objects out of the garbage collector's collections", frozen)

    def engine_stopped(self) -> None:
        if self.frozen:
            gc.unfreeze()
            self.frozen = False
