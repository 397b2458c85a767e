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
``parse_start_url`` (nothing, unless overridden), and only a link back to it, which its
rules handle, makes the page's item; stock Scrapy downloads the page again for that link.
:class:`StartPages` lets through the first repeat of a start page whose response goes to
another callback than the start request's: the page is downloaded twice, as stock Scrapy
downloads it, and its item is not lost. A repeat with the start request's own callback (a
``Spider`` whose links go to ``parse``) is filtered. That the page passed is a marker in the
dupefilter's store, beside the keys, so that it persists and is shared as they are: a later
start or another worker does not download it a third time.

Nothing here imports Scrapy's engine.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from scrapy import Spider
from scrapy.http.request import NO_CALLBACK

from crawler.hashing import blake2b_digest
from crawler.url.request_keys import KEY_SIZE

if TYPE_CHECKING:
    from collections.abc import Callable

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


def _passed_marker(key: bytes) -> bytes:
    return blake2b_digest(b"start page passed again\0", key, digest_size=KEY_SIZE)


class StartPages:
    """The keys of this run's start requests and the callbacks their responses go to
    (about 100 bytes a start request), and whether a repeat of each passed (a marker in
    *seen*)."""

    def __init__(self, seen: SeenStore) -> None:
        self.seen = seen
        self._handlers: dict[bytes, Any] = {}

    def scheduled(self, key: bytes, request: Request, spider: Spider) -> None:
        """Remember that *key*, recorded for the start request *request*, is a start page."""
        self._handlers[key] = response_handler(request, spider)

    def passes_again(
        self,
        key: bytes,
        request: Request,
        spider: Spider | None,
        on_pass: Callable[[], object] | None = None,
    ) -> bool:
        """Whether *request*, a repeat of *key*, is the first repeat of a start page whose
        response goes to another callback than the start request's; *on_pass* runs before
        the store makes that durable (as :meth:`~crawler.url.stores.SeenStore.add` runs
        it). A request without a callback (``NO_CALLBACK``: not for the spider) never
        passes. A store that fails raises, as it does for the request's own key."""
        if not self.may_pass_again(key, request, spider):
            return False
        return self.seen.add(_passed_marker(key), on_pass)

    def may_pass_again(self, key: bytes, request: Request, spider: Spider | None) -> bool:
        """Whether *request* is a repeat that :meth:`passes_again` would ask the store about."""
        start_handler = self._handlers.get(key)
        if start_handler is None or spider is None or request.callback is NO_CALLBACK:
            return False
        return bool(response_handler(request, spider) != start_handler)
