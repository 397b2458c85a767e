"""The ``site`` spider, and a stock Scrapy crawl of the demo site whose downloads we predict."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urljoin, urlsplit

import pytest
import scrapy
from scrapy.http import HtmlResponse, Response, TextResponse
from scrapy.utils.request import RequestFingerprinter
from w3lib.url import canonicalize_url

from crawler.spiders.site import SiteSpider

if TYPE_CHECKING:
    from crawler.demo.site import DemoSite
    from tests.conftest import DemoSiteProcess

REPO_ROOT = Path(__file__).resolve().parent.parent

# Scrapy's defaults, whatever the project's settings.py switches on.
STOCK_SETTINGS = {
    "ADDONS": "{}",
    "DUPEFILTER_CLASS": "scrapy.dupefilters.RFPDupeFilter",
    "SCHEDULER": "scrapy.core.scheduler.Scheduler",
    "DOWNLOADER_MIDDLEWARES": "{}",
    "SPIDER_MIDDLEWARES": "{}",
    "ITEM_PIPELINES": "{}",
    "JOBDIR": "",
    "HTTPCACHE_ENABLED": "False",
    "ROBOTSTXT_OBEY": "False",
    "LOG_LEVEL": "INFO",
    "CONCURRENT_REQUESTS": "8",
    "DOWNLOAD_DELAY": "0",
    "TELNETCONSOLE_ENABLED": "False",
    "REMOTE_CONTROL_ENABLED": "False",
}


# -- the spider on its own --------------------------------------------------------------------


@pytest.mark.parametrize("url", [None, "", "localhost:8000/", "/relative/path"])
def test_spider_needs_an_absolute_url(url: str | None) -> None:
    with pytest.raises(ValueError, match=r"-a url=http://"):
        SiteSpider(url=url)


def test_spider_stays_on_the_start_host() -> None:
    spider = SiteSpider(url="http://WWW.Example.com:8000/start")
    assert spider.allowed_domains == ["www.example.com"]


def test_spider_starts_at_the_url_through_the_dupefilter() -> None:
    spider = SiteSpider(url="http://localhost:8000/start")

    async def collect() -> list[Any]:
        return [request async for request in spider.start()]

    (request,) = asyncio.run(collect())
    assert isinstance(request, scrapy.Request)
    assert (request.url, request.dont_filter) == ("http://localhost:8000/start", False)


def test_spider_yields_an_item_and_follows_links_of_html() -> None:
    spider = SiteSpider(url="http://localhost:8000/")
    body = (
        b"<html><head><title>\n  Hello  </title></head><body><h1>Big <b>news</b></h1>"
        b'<a href="/a">a</a> <a name="anchor">no href</a> <a href="b?x=1#c">b</a></body></html>'
    )
    response = HtmlResponse("http://localhost:8000/dir/page", body=body, encoding="utf-8")
    item, *requests = spider.parse(response)
    assert item == {
        "url": response.url,
        "title": "Hello",
        "headline": "Big  news",
        "html": body.decode(),
    }
    assert [request.url for request in requests] == [
        "http://localhost:8000/a",
        "http://localhost:8000/dir/b?x=1#c",
    ]


def test_spider_follows_web_links_only() -> None:
    """A javascript: or mailto: href is not a page, and the links after it are followed."""
    spider = SiteSpider(url="http://localhost:8000/")
    body = (
        b'<html><body><a href="javascript:void(0)">menu</a> <a href="mailto:a@b.test">mail</a>'
        b' <a href="tel:+1">call</a> <a href="/next">next</a>'
        b' <a href="https://localhost:8000/secure">secure</a></body></html>'
    )
    response = HtmlResponse("http://localhost:8000/", body=body, encoding="utf-8")
    _, *requests = spider.parse(response)
    assert [request.url for request in requests] == [
        "http://localhost:8000/next",
        "https://localhost:8000/secure",
    ]


@pytest.mark.parametrize(
    "response",
    [
        Response("http://localhost:8000/report.pdf", body=b"%PDF-1.4 <a href='/x'>"),
        TextResponse("http://localhost:8000/data.json", body=b'{"a": 1}', encoding="utf-8"),
    ],
)
def test_spider_ignores_non_html(response: Response) -> None:
    assert list(SiteSpider(url="http://localhost:8000/").parse(response)) == []


# -- what a stock crawl downloads, predicted from the model -----------------------------------


@dataclass
class StockCrawlPrediction:
    """What Scrapy's default scheduler and RFPDupeFilter will download from the demo site."""

    downloads: list[str] = field(default_factory=list)
    html_pages: list[str] = field(default_factory=list)

    @property
    def download_keys(self) -> set[str]:
        return {canonicalize_url(url) for url in self.downloads}


def predict_stock_crawl(site: DemoSite) -> StockCrawlPrediction:
    """Walk the site the way a stock crawl does, without crawling it.

    Breadth first from ``/``; a URL is requested when its request fingerprint (what
    RFPDupeFilter keys on) is new, whether it comes from a link or from a redirect; links on
    other hosts are offsite; only ``200`` HTML pages are searched for links.
    """
    fingerprinter = RequestFingerprinter()

    def key(url: str) -> bytes:
        return fingerprinter.fingerprint(scrapy.Request(url))

    prediction = StockCrawlPrediction()
    queue = deque([site.base_url])
    seen = {key(site.base_url)}
    while queue:
        url = queue.popleft()
        prediction.downloads.append(url)
        parts = urlsplit(url)
        target = parts.path + (f"?{parts.query}" if parts.query else "")
        resolution = site.resolve(target)
        if resolution.location is not None:
            hrefs = [resolution.location]
        elif resolution.status == 200 and resolution.is_html:
            prediction.html_pages.append(url)
            hrefs = site.links_on(target)
        else:
            hrefs = []
        for href in hrefs:
            next_url = urljoin(url, href)
            if urlsplit(next_url).hostname != site.host:
                continue
            next_key = key(next_url)
            if next_key not in seen:
                seen.add(next_key)
                queue.append(next_url)
    return prediction


def test_prediction_of_the_default_site(demo_site_model: DemoSite) -> None:
    prediction = predict_stock_crawl(demo_site_model)
    assert len(prediction.downloads) == 114
    assert len(prediction.html_pages) == 106
    assert len(demo_site_model.resources) == 55


# -- a real crawl -----------------------------------------------------------------------------


@dataclass
class CrawlResult:
    items: list[dict[str, str]]
    hits: dict[str, Any]
    log: str


@pytest.fixture(scope="module")
def stock_crawl(
    demo_site_server: DemoSiteProcess, tmp_path_factory: pytest.TempPathFactory
) -> CrawlResult:
    """``scrapy crawl site`` of the demo server with Scrapy's stock dedup, run once."""
    output = tmp_path_factory.mktemp("stock-crawl") / "items.jsonl"
    command = [
        sys.executable,
        "-m",
        "scrapy",
        "crawl",
        "site",
        "-a",
        f"url={demo_site_server.url}",
        "-O",
        str(output),
    ]
    for name, value in STOCK_SETTINGS.items():
        command += ["-s", f"{name}={value}"]
    demo_site_server.reset()
    result = subprocess.run(
        command,
        cwd=REPO_ROOT,
        env={**os.environ, "PYTHONPATH": str(REPO_ROOT)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    hits = demo_site_server.hits()
    demo_site_server.reset()
    assert result.returncode == 0, result.stderr
    items = [json.loads(line) for line in output.read_text("utf-8").splitlines()]
    return CrawlResult(items=items, hits=hits, log=result.stderr)


def test_stock_crawl_downloads_exactly_what_the_model_predicts(
    stock_crawl: CrawlResult, demo_site_model: DemoSite
) -> None:
    prediction = predict_stock_crawl(demo_site_model)
    assert stock_crawl.hits["total"] == len(prediction.downloads), stock_crawl.log
    downloaded = {canonicalize_url(demo_site_model.url(t)) for t in stock_crawl.hits["by_target"]}
    assert downloaded == prediction.download_keys
    assert len(stock_crawl.items) == len(prediction.html_pages)


def test_stock_crawl_downloads_resources_several_times(
    stock_crawl: CrawlResult, demo_site_model: DemoSite
) -> None:
    by_resource = stock_crawl.hits["by_resource"]
    assert set(by_resource) == demo_site_model.resources
    assert sum(by_resource.values()) > len(demo_site_model.resources)
    article = demo_site_model.articles[3].path
    assert by_resource[article] >= 3  # plain, session id, newsletter utm


def test_every_html_resource_got_an_item(
    stock_crawl: CrawlResult, demo_site_model: DemoSite
) -> None:
    html_resources = {
        resource_id
        for resource_id in demo_site_model.resources
        if demo_site_model.resolve(resource_id).is_html
    }
    item_resources = set()
    for item in stock_crawl.items:
        parts = urlsplit(item["url"])
        resolution = demo_site_model.resolve(
            parts.path + (f"?{parts.query}" if parts.query else "")
        )
        item_resources.add(resolution.resource_id)
        assert item["html"] == resolution.body.decode("utf-8")
        assert item["title"] and item["title"] in item["html"]
    assert item_resources == html_resources


def test_files_are_downloaded_but_give_no_item(stock_crawl: CrawlResult) -> None:
    for path in ("/files/report-2024.pdf", "/img/logo.png"):
        assert stock_crawl.hits["by_resource"][path] >= 1
        assert not [item for item in stock_crawl.items if urlsplit(item["url"]).path == path]


def test_broken_links_and_redirects_are_requested(stock_crawl: CrawlResult) -> None:
    by_target = stock_crawl.hits["by_target"]
    assert by_target["/articles/deleted-story"] == 1
    assert by_target["/files/brochure-2019.pdf"] == 1
    assert stock_crawl.hits["by_status"] == {"200": 109, "301": 3, "404": 2}
    assert {"/docs", "/guides", "/old-home"} <= set(by_target)
    assert "__demo" not in "".join(by_target)
