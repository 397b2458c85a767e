"""Signals sent by the extension, in addition to Scrapy's own."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from scrapy import signals as scrapy_signals

if TYPE_CHECKING:
    from collections.abc import Callable

    from scrapy.crawler import Crawler

#: How an item leaves the item pipelines: scraped, dropped, or failed.
ITEM_LEFT_SIGNALS = (
    scrapy_signals.item_scraped,
    scrapy_signals.item_dropped,
    scrapy_signals.item_error,
)


def connect_item_left(crawler: Crawler, receiver: Callable[..., Any]) -> None:
    """Connect *receiver* to each of :data:`ITEM_LEFT_SIGNALS`."""
    for signal in ITEM_LEFT_SIGNALS:
        crawler.signals.connect(receiver, signal=signal)


#: Sent with ``request`` when Scrapy is done with a request: its callback's
#: output (or its errback's) was consumed, or its download failed for good.
#: The URL dupefilter then forgets it from the crash-safe frontier.
request_finished = object()

#: Sent with ``request`` and ``items`` when the first ``items`` items of a request's
#: callback output have left the item pipelines, before the request is finished (its
#: links, or later items, still on their way). A request scheduled again after a kill
#: in between leaves those items out.
request_items_settled = object()

#: Sent by the content pipeline with ``url`` (an item's page) and ``content_key`` (the
#: key of the page the content level kept for that content: the item's own URL when
#: it is new) for each item it decided on; learned URL rules take their evidence from it.
content_decided = object()

#: Sent with ``dupefilter`` when :class:`~crawler.dupefilters.URLDupeFilter` opens, so
#: that components that work with it (``LearnedRulesMiddleware``) find it whatever
#: scheduler holds it.
url_dupefilter_opened = object()
