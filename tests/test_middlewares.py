"""FrontierMiddleware: when a request counts as finished (whole crawls: test_resume);
ItemPageMiddleware: the page each item came from."""

from __future__ import annotations

import asyncio

import pytest
from scrapy import Request, Spider, signals
from scrapy.crawler import Crawler
from scrapy.http import HtmlResponse
from scrapy.utils.test import get_crawler

from crawler import signals as dedup_signals
from crawler.content.item_pages import ItemPage, item_pages
from crawler.content.pages import ResponseBody
from crawler.middlewares import (
    META_ITEMS_SETTLED,
    META_UNCHECKED,
    FrontierMiddleware,
    ItemPageMiddleware,
)
from crawler.url.request_meta import META_HELD


class NamedSpider(Spider):
    name = "named"


def parent_response() -> tuple[Crawler, FrontierMiddleware, HtmlResponse, list[str]]:
    """A middleware, the response of a parent request whose output it is to see, and the
    URLs it reports finished (filled as it reports them)."""
    crawler = get_crawler(NamedSpider)
    middleware = FrontierMiddleware.from_crawler(crawler)
    finished: list[str] = []

    def record(request: Request) -> None:
        finished.append(request.url)

    crawler.signals.connect(record, signal=dedup_signals.request_finished, weak=False)
    parent = Request("http://a.test/parent")
    response = HtmlResponse(parent.url, body=b"<html></html>", request=parent)
    return crawler, middleware, response, finished


def finished_requests_after(children_meta: list[dict]) -> list[str]:
    """Run one parent's callback output through the middleware and the scheduler's
    ``request_scheduled`` signal, children marked with *children_meta*; return the
    URLs reported finished."""

    async def body() -> list[str]:
        crawler, middleware, response, finished = parent_response()
        children = [Request(f"http://a.test/{n}") for n in range(len(children_meta))]
        for child in middleware.process_spider_output(response, children):
            crawler.signals.send_catch_log(signals.request_scheduled, request=child, spider=None)
            child.meta.update(children_meta[children.index(child)])  # the dupefilter's verdict
        await asyncio.sleep(0.01)
        return finished

    return asyncio.run(body())


def test_a_parent_finishes_once_its_children_are_scheduled():
    assert finished_requests_after([{}, {}]) == ["http://a.test/parent"]


def test_a_parent_with_a_child_held_back_unchecked_stays_unfinished():
    """Redis away under DEDUP_REDIS_ON_ERROR = "stop": the child was neither recorded
    nor scheduled; the parent must be crawled again to find it again."""
    assert finished_requests_after([{}, {META_UNCHECKED: True}]) == []


def test_a_parent_with_a_child_held_while_redis_fails_finishes_once_it_is_scheduled():
    """A child held by the dupefilter (Redis failing for a moment) comes back to the
    scheduler later: its parent finishes then, not before (a lease held by it would
    otherwise never be given up, and the workers would wait for each other)."""

    async def body() -> tuple[list[str], list[str]]:
        crawler, middleware, response, finished = parent_response()
        child = Request("http://a.test/held")
        for output in middleware.process_spider_output(response, [child]):
            crawler.signals.send_catch_log(signals.request_scheduled, request=output, spider=None)
            output.meta[META_HELD] = True
        await asyncio.sleep(0.01)
        while_held = list(finished)
        del child.meta[META_HELD]  # handed back, and recorded this time
        crawler.signals.send_catch_log(signals.request_scheduled, request=child, spider=None)
        await asyncio.sleep(0.01)
        return while_held, finished

    assert asyncio.run(body()) == ([], ["http://a.test/parent"])


def test_a_parent_finishes_once_every_item_of_it_left_the_pipelines():
    """Until then a kill must leave it unfinished: its items may not be in the feed."""

    async def body() -> list[list[str]]:
        crawler, middleware, response, finished = parent_response()
        items = [{"n": n} for n in range(3)]
        for _ in middleware.process_spider_output(response, items):
            pass
        seen = []
        for item, left in zip(
            items, (signals.item_scraped, signals.item_dropped, signals.item_error), strict=True
        ):
            await asyncio.sleep(0.01)
            seen.append(list(finished))
            crawler.signals.send_catch_log(left, item=item, response=response, spider=None)
        await asyncio.sleep(0.01)
        seen.append(list(finished))
        return seen

    assert asyncio.run(body()) == [[], [], [], ["http://a.test/parent"]]


def settled_and_finished(
    outputs: list, leave: list[int], meta: dict | None = None
) -> tuple[list, list[int], list[str]]:
    """Run *outputs* (items and requests) through the middleware as one callback's output,
    let the items at positions *leave* of what it passed on leave the pipelines, in that
    order; return what it passed on, the ``items`` counts it reported settled, and the
    URLs it reported finished. The requests are never scheduled."""

    async def body() -> tuple[list, list[int], list[str]]:
        crawler, middleware, response, finished = parent_response()
        response.request.meta.update(meta or {})
        settled: list[int] = []

        def record(request: Request, items: int) -> None:
            settled.append(items)

        crawler.signals.connect(record, signal=dedup_signals.request_items_settled, weak=False)
        passed = list(middleware.process_spider_output(response, outputs))
        items = [output for output in passed if not isinstance(output, Request)]
        for position in leave:
            crawler.signals.send_catch_log(
                signals.item_scraped, item=items[position], response=response
            )
        await asyncio.sleep(0.01)
        return passed, settled, finished

    return asyncio.run(body())


def test_items_written_from_the_first_are_reported_while_a_link_is_unscheduled():
    """A kill then must not pass them on again: they are in the feed."""
    items = [{"n": n} for n in range(4)]
    child = Request("http://a.test/child")
    _, settled, finished = settled_and_finished([items[0], child, *items[1:]], [1, 0, 3, 2])
    # the second item first: nothing from the first yet; then two, then still two, then four
    assert settled == [2, 4]
    assert finished == []


def test_a_parent_without_children_is_finished_not_reported_settled():
    _, settled, finished = settled_and_finished([{"n": 1}], [0])
    assert (settled, finished) == ([], ["http://a.test/parent"])


def test_a_request_scheduled_again_leaves_out_the_items_written_before():
    items = [{"n": n} for n in range(3)]
    child = Request("http://a.test/child")
    passed, settled, _ = settled_and_finished(
        [items[0], child, items[1], items[2]], [0], {META_ITEMS_SETTLED: 2}
    )
    assert passed == [child, items[2]]
    assert settled == [3]  # counted from the first item of the output, left out ones too


def test_items_left_out_are_counted():
    crawler, middleware, response, _ = parent_response()
    response.request.meta[META_ITEMS_SETTLED] = 2
    list(middleware.process_spider_output(response, [{"n": 1}, {"n": 2}]))
    assert crawler.stats.get_value("dedup/url/resumed_items_skipped") == 2


# ItemPageMiddleware


def page_response() -> tuple[Crawler, ItemPageMiddleware, HtmlResponse]:
    crawler = get_crawler(NamedSpider)
    response = HtmlResponse(
        "http://a.test/article", body="<p>Caf\u00e9</p>".encode("cp1252"), encoding="cp1252"
    )
    return crawler, ItemPageMiddleware.from_crawler(crawler), response


async def collected(output) -> list:
    return [passed async for passed in output]


async def as_async(objects: list):
    for output in objects:
        yield output


@pytest.mark.parametrize("asynchronous", [False, True])
def test_a_callbacks_only_item_is_recorded_with_its_page_and_the_order_kept(asynchronous):
    crawler, middleware, response = page_response()
    item, links = {"title": "Caf\u00e9"}, [Request("http://a.test/1"), Request("http://a.test/2")]
    callback_output = [links[0], item, links[1]]
    if asynchronous:
        output = asyncio.run(
            collected(middleware.process_spider_output_async(response, as_async(callback_output)))
        )
    else:
        output = list(middleware.process_spider_output(response, callback_output))
    assert output == callback_output
    assert item_pages(crawler).take(item) == ItemPage(
        "http://a.test/article", 0, response.body, "cp1252"
    )


def test_items_of_a_listing_are_recorded_with_their_place_in_order():
    crawler, middleware, response = page_response()
    items = [{"name": f"product {n}"} for n in range(20)]
    assert list(middleware.process_spider_output(response, items)) == items
    pages = item_pages(crawler)
    assert [pages.take(item) for item in items] == [
        ItemPage("http://a.test/article", n) for n in range(20)
    ]


def test_an_item_with_a_page_field_is_not_recorded():
    crawler, middleware, response = page_response()
    item = {"url": "http://a.test/article", "html": "<p>Caf\u00e9</p>"}
    assert list(middleware.process_spider_output(response, [item])) == [item]
    assert item_pages(crawler).take(item) is None


def test_an_item_holding_response_text_is_recorded_with_the_body_it_was_decoded_from():
    """``"html": response.text`` (the object Scrapy decoded): the content level can send the
    body to a worker as downloaded, and decode it there to the same text."""
    crawler, middleware, response = page_response()
    item = {"url": response.url, "html": response.text}
    assert list(middleware.process_spider_output(response, [item])) == [item]
    page = item_pages(crawler).take(item)
    assert page is not None
    assert page.html_text is item["html"]
    assert (page.html_body, page.encoding) == (response.body, "cp1252")
    assert ResponseBody(page.html_body, page.encoding).decoded() == item["html"]


def test_an_item_holding_another_text_than_response_text_is_not_recorded():
    crawler, middleware, response = page_response()
    item = {"url": response.url, "html": response.text.replace("Caf", "Kaf")}
    list(middleware.process_spider_output(response, [item]))
    assert item_pages(crawler).take(item) is None


@pytest.mark.parametrize(
    ("body", "headers"),
    [
        ("<p>Caf\u00e9</p>".encode("cp1252"), {"Content-Type": "text/html; charset=cp1252"}),
        ('<meta charset="gbk"><p>\u6c5f\u5357</p>'.encode("gbk"), {}),
        (b"\xef\xbb\xbf<p>BOM</p>", {"Content-Type": "text/html; charset=latin-1"}),
        (b"<p>broken \xff\xfe utf-8</p>", {"Content-Type": "text/html; charset=utf-8"}),
    ],
)
def test_a_body_decodes_in_a_worker_to_the_text_scrapy_gave(body, headers):
    response = HtmlResponse("http://a.test/", body=body, headers=headers)
    assert ResponseBody(response.body, response.encoding).decoded() == response.text


def test_the_redirects_that_led_to_a_page_are_recorded_for_each_of_its_items():
    """Items that hold their page too: which URL redirected to it tells which of two
    copies a reader would keep."""
    crawler, middleware, _ = page_response()
    request = Request(
        "http://a.test/article", meta={"redirect_urls": ["http://a.test/old", "http://a.test/s"]}
    )
    response = HtmlResponse(request.url, body=b"<p>Moved</p>", encoding="utf-8", request=request)
    holds_page, *listing = {"html": "<p>Moved</p>"}, {"title": "one"}, {"title": "two"}
    list(middleware.process_spider_output(response, [holds_page, *listing]))
    pages = item_pages(crawler)
    redirects = ("http://a.test/old", "http://a.test/s")
    assert pages.take(holds_page) == ItemPage(request.url, 0, redirected_from=redirects)
    assert [pages.take(item) for item in listing] == [
        ItemPage(request.url, n, redirected_from=redirects) for n in (0, 1)
    ]


def test_a_first_item_taken_before_a_second_came_was_its_pages_only_item():
    """A callback that waits between its items: the first one, checked meanwhile, was
    checked on the page; the second one shares it."""
    crawler, middleware, response = page_response()
    pages = item_pages(crawler)
    first, second = {"title": "first"}, {"title": "second"}
    output = middleware.process_spider_output(response, iter([first, second]))
    assert next(output) is first
    assert pages.take(first) == ItemPage("http://a.test/article", 0, response.body, "cp1252")
    assert next(output) is second
    assert pages.take(second) == ItemPage("http://a.test/article", 1)
    assert pages.take(first) is None


def test_an_item_that_left_the_pipelines_unchecked_leaves_the_table():
    crawler, middleware, response = page_response()
    item = {"title": "dropped by an earlier pipeline"}
    list(middleware.process_spider_output(response, [item]))
    crawler.signals.send_catch_log(
        signals.item_dropped, item=item, response=response, exception=None, spider=None
    )
    assert len(item_pages(crawler)) == 0
