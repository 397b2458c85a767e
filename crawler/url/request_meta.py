"""What the Scrapy components of this package tell each other through a request: the keys
they write in its ``meta``, and which middleware reports requests finished (named by its
import path, so that no component has to import another to find it)."""

from __future__ import annotations

from typing import Any

from scrapy.utils.misc import load_object

#: The key the dupefilter recorded the request under, and its URL then.
META_KEY = "dedup_key"
META_URL = "dedup_url"
#: Set by the dupefilter on a request it could not check (Redis away,
#: ``DEDUP_REDIS_ON_ERROR = "stop"``) and did not schedule.
META_UNCHECKED = "dedup_unchecked"
#: Set by the dupefilter on a request it holds while Redis fails for a moment: neither
#: recorded nor scheduled yet, it goes to the engine again shortly, and its parent is not
#: finished before that.
META_HELD = "dedup_held"
#: On a request scheduled again after a kill: how many items of its callback's output, from
#: the first, had left the item pipelines (they are in the feed); so many items of the
#: output are left out, its requests are not.
META_ITEMS_SETTLED = "dedup_items_settled"
#: True on a request a learned URL rule would filter, downloaded to verify that rule.
META_VERIFYING = "dedup_verifying"
#: The lease under which ``LeasingScheduler`` handed the request out.
META_LEASE = "dedup_lease"
#: True on a request that ``LeasingScheduler`` took back from a worker's leases (a killed
#: worker's): its first attempt may have recorded keys for it, so the check just before
#: download must not take it for a repeat.
META_TAKEN_BACK = "dedup_taken_back"

#: The middleware that reports a request finished once its callback's output is consumed.
FRONTIER_MIDDLEWARE = "crawler.middlewares.FrontierMiddleware"


def is_frontier_middleware(component: Any) -> bool:
    """Whether *component*, a class or its import path, is :data:`FRONTIER_MIDDLEWARE`.

    >>> is_frontier_middleware("crawler.middlewares.FrontierMiddleware")
    True
    >>> is_frontier_middleware("scrapy.spidermiddlewares.depth.DepthMiddleware")
    False
    """
    cls = load_object(component) if isinstance(component, str) else component
    return f"{cls.__module__}.{cls.__qualname__}" == FRONTIER_MIDDLEWARE
