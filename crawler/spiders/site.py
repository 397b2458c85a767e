"""A whole-site spider: ``scrapy crawl site -a url=http://localhost:8000/``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import scrapy
from scrapy.http import HtmlResponse

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Iterator

    from scrapy.http import Response

WEB_SCHEMES = frozenset({"http", "https"})


class SiteSpider(scrapy.Spider):
    """Crawl every page of one site, starting at ``url``.

    - follows every ``<a href>`` to an http(s) URL (``javascript:`` and ``mailto:`` links
      are not pages); Scrapy's offsite handling keeps the crawl on the start URL's
      host (``allowed_domains`` is that host name, lowercased, so subdomains count too);
    - yields ``{"url", "title", "headline", "html"}`` for every HTML response (the headline
      is the first ``<h1>``, a business key for ``DEDUP_ITEM_KEY_FIELDS``); other responses
      (PDF, images...) yield nothing and are not searched for links;
    - the start request goes through the dupefilter like any other, so a later link back to
      the start page is not downloaded again.
    """

    name = "site"

    def __init__(self, url: str | None = None, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        hostname = urlsplit(url).hostname if url else None
        if not url or not hostname:
            raise ValueError(
                f"The site spider needs an absolute start URL, got {url!r}: "
                "run it as scrapy crawl site -a url=http://example.com/"
            )
        self.start_url = url
        self.allowed_domains = [hostname.lower()]

    async def start(self) -> AsyncIterator[scrapy.Request]:
        yield scrapy.Request(self.start_url, callback=self.parse)

    def parse(self, response: Response, **kwargs: Any) -> Iterator[dict[str, str] | scrapy.Request]:
        if not isinstance(response, HtmlResponse):
            return
        yield {
            "url": response.url,
            "title": (response.css("title::text").get() or "").strip(),
            "headline": " ".join(response.css("h1 ::text").getall()).strip(),
            "html": response.text,
        }
        # only web links: a javascript: or mailto: href is not a page to download
        hrefs = response.css("a::attr(href)").getall()
        yield from response.follow_all(
            [href for href in hrefs if urlsplit(response.urljoin(href)).scheme in WEB_SCHEMES]
        )
