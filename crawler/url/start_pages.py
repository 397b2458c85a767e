"""Start pages: the pages of start requests, which Scrapy schedules past the dupefilter.

Scrapy makes ``start_urls`` into requests with ``dont_filter=True``: the scheduler never
asks the dupefilter about them, and a link back to a start page would download it again.
:class:`~crawler.dupefilters.URLDupeFilter` records a start request (``is_start_request``
in its meta, which Scrapy's ``StartSpiderMiddleware`` sets) under the key it would give it,
as it is scheduled, so that links back to it, and their variants, are filtered. It is
downloaded all the same, at every start (its page may link to new pages); its redirects and
retries carry the meta and are recorded too. Other ``dont_filter`` requests are not
recorded: a callback that sets it asks for a page outside dedup (a refresh, a page fetched
again for another callback), and Scrapy records none of them either. A start request is not
journaled in the frontier: every start schedules it again.

A start page's response may go where a link to it would not: a ``CrawlSpider`` gives it to
``parse_start_url`` (nothing, unless overridden), and only a link back to it, handled by its
rules, makes its item, as stock Scrapy downloads it again. :class:`StartPages` lets the
first repeat of a start page whose response goes to another callback through, once a
crawl and its resumptions: the page is downloaded twice, as stock Scrapy downloads it, and
its item is not lost. A repeat with the start request's own callback (a ``Spider`` whose
links go to ``parse``) is filtered.

Nothing here imports Scrapy's engine; the markers live in the dupefilter's store, so that
they persist and are shared as its keys are.
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, Any

from scrapy import Spider

from crawler.hashing import blake2b_digest
from crawler.redis.connection import RedisFaultPending, RedisUnavailable
from crawler.url.request_keys import KEY_SIZE

if TYPE_CHECKING:
    from scrapy import Request

    from crawler.url.stores import SeenStore

__all__ = ["StartPages", "is_start_request", "response_handler"]


def is_start_request(request: Request) -> bool:
    """Whether *request* is a start request that Scrapy schedules past the dupefilter."""
    return bool(request.dont_filter and request.meta.get("is_start_request"))


def response_handler(request: Request, spider: Spider) -> Any:
    """The function Scrapy gives the response of *request* to: its callback, else the
    spider's ``_parse``, which is ``parse`` unless a subclass (``CrawlSpider``) overrides it."""
    callback = request.callback
    if callback is None:
        plain = getattr(type(spider), "_parse", None) is Spider._parse
        callback = spider.parse if plain else spider._parse
    return getattr(callback, "__func__", callback)


def _marker(kind: bytes, key: bytes) -> bytes:
    return blake2b_digest(kind, b"\0", key, digest_size=KEY_SIZE)


class StartPages:
    """Which recorded keys are start pages, and which of them a repeat with another
    callback has already passed: markers in *seen*, beside the request keys."""

    def __init__(self, seen: SeenStore) -> None:
        self.seen = seen
        #: The callbacks the start requests of this run go to (one, most often).
        self.handlers: set[Any] = set()

    def scheduled(self, key: bytes, request: Request, spider: Spider) -> None:
        """Remember that *key*, just recorded for the start request *request*, is a start
        page; a store that fails remembers nothing (its links are then filtered)."""
        self.handlers.add(response_handler(request, spider))
        with contextlib.suppress(RedisUnavailable, RedisFaultPending, OSError):
            self.seen.add(_marker(b"start page", key))

    def passes_again(self, key: bytes, request: Request, spider: Spider | None) -> bool:
        """Whether *request*, a repeat of *key*, is the first repeat of a start page whose
        response goes to another callback than the start request's; a store that fails
        lets it through (downloaded again, never lost)."""
        if not self.handlers or spider is None:
            return False
        if response_handler(request, spider) in self.handlers:
            return False
        try:
            if _marker(b"start page", key) not in self.seen:
                return False
            return self.seen.add(_marker(b"start page again", key))
        except (RedisUnavailable, RedisFaultPending, OSError):
            return True
