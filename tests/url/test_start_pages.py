from __future__ import annotations

import pytest
from scrapy import Request, Spider
from scrapy.http.request import NO_CALLBACK
from scrapy.spiders import CrawlSpider

from crawler.redis.connection import RedisUnavailable
from crawler.url.start_pages import StartPages, is_start_request, response_handler
from crawler.url.stores.memory import MemorySeenSet
from crawler.url.stores.unpersisted import UnpersistedSeenStore

URL = "http://a.test/"
KEY = bytes(range(16))


class Pages(Spider):
    name = "pages"

    def parse(self, response, **kwargs):
        return []

    def parse_product(self, response):
        return []


class Crawling(CrawlSpider):
    name = "crawling"
    rules = ()


class OwnParse(Spider):
    """A spider that overrides the private entry point, as CrawlSpider does."""

    name = "own_parse"

    def _parse(self, response, **kwargs):
        return []


def start_request(url: str = URL, **kwargs) -> Request:
    return Request(url, dont_filter=True, meta={"is_start_request": True}, **kwargs)


def test_a_response_without_callback_goes_to_parse_unless_the_spider_overrides_its_entry():
    pages = Pages()
    assert response_handler(Request(URL), pages) is Pages.parse
    assert response_handler(Request(URL, callback=pages.parse), pages) is Pages.parse
    product = Request(URL, callback=pages.parse_product)
    assert response_handler(product, pages) is Pages.parse_product
    crawling = Crawling()
    assert response_handler(Request(URL), crawling) is CrawlSpider._parse
    # what its rules make of a link: another callback than the start request's
    assert response_handler(Request(URL, callback=crawling._callback), crawling) is (
        CrawlSpider._callback
    )
    assert response_handler(Request(URL), OwnParse()) is OwnParse._parse


def test_only_a_dont_filter_request_marked_by_scrapy_is_a_start_request():
    assert is_start_request(start_request())
    assert not is_start_request(Request(URL, dont_filter=True))
    assert not is_start_request(Request(URL, meta={"is_start_request": True}))


def start_pages() -> StartPages:
    return StartPages(UnpersistedSeenStore(MemorySeenSet()))


def test_a_repeat_for_another_callback_passes_once():
    pages = start_pages()
    crawling = Crawling()
    pages.scheduled(KEY, start_request(), crawling)
    link = Request(URL, callback=crawling._callback)
    passed: list[str] = []
    assert pages.passes_again(KEY, link, crawling, lambda: passed.append("journaled"))
    assert passed == ["journaled"]
    assert not pages.passes_again(KEY, link.replace(), crawling, lambda: passed.append("again"))
    assert passed == ["journaled"]


def test_each_start_page_is_compared_with_its_own_start_requests_callback():
    pages = start_pages()
    spider = Pages()
    other_key = bytes(16)
    pages.scheduled(KEY, start_request(), spider)
    pages.scheduled(other_key, start_request(callback=spider.parse_product), spider)
    assert not pages.passes_again(other_key, Request(URL, callback=spider.parse_product), spider)
    assert pages.passes_again(KEY, Request(URL, callback=spider.parse_product), spider)
    assert pages.passes_again(other_key, Request(URL), spider)


def test_a_request_that_is_not_for_the_spider_never_passes():
    pages = start_pages()
    crawling = Crawling()
    pages.scheduled(KEY, start_request(), crawling)
    assert not pages.passes_again(KEY, Request(URL, callback=NO_CALLBACK), crawling)
    assert pages.passes_again(KEY, Request(URL, callback=crawling._callback), crawling)


class FailingStore(UnpersistedSeenStore):
    def add(self, key, on_new=None, /):
        raise RedisUnavailable("down")


def test_a_store_that_fails_raises_for_the_dupefilter_to_decide():
    pages = StartPages(FailingStore(MemorySeenSet()))
    crawling = Crawling()
    pages.scheduled(KEY, start_request(), crawling)
    # an ordinary repeat never asks the store
    assert not pages.passes_again(bytes(16), Request(URL, callback=crawling._callback), crawling)
    with pytest.raises(RedisUnavailable):
        pages.passes_again(KEY, Request(URL, callback=crawling._callback), crawling)


def test_a_repeat_for_the_start_requests_callback_does_not_pass():
    pages = start_pages()
    spider = Pages()
    pages.scheduled(KEY, start_request(), spider)
    assert not pages.passes_again(KEY, Request(URL), spider)
    assert not pages.passes_again(KEY, Request(URL, callback=spider.parse), spider)
    assert pages.passes_again(KEY, Request(URL, callback=spider.parse_product), spider)


def test_a_key_that_is_no_start_page_never_passes():
    pages = start_pages()
    crawling = Crawling()
    assert not pages.passes_again(KEY, Request(URL, callback=crawling._callback), crawling)
    pages.scheduled(KEY, start_request(), crawling)
    other = bytes(16)
    assert not pages.passes_again(other, Request(URL, callback=crawling._callback), crawling)


def test_the_markers_are_in_the_store_a_resumed_crawl_opens():
    store = UnpersistedSeenStore(MemorySeenSet())
    crawling = Crawling()
    link = Request(URL, callback=crawling._callback)
    first = StartPages(store)
    first.scheduled(KEY, start_request(), crawling)
    assert first.passes_again(KEY, link, crawling)
    # the next start schedules its start requests again; the page passed already
    resumed = StartPages(store)
    resumed.scheduled(KEY, start_request(), crawling)
    assert not resumed.passes_again(KEY, link, crawling)
    # markers are keys of their own: the page's key is not among them
    assert KEY not in store
