"""Real crawls of the demo site with the extension on, counted at the server."""

from __future__ import annotations

import json
import random
import re
import subprocess
import sys
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeAlias
from urllib.parse import urljoin, urlsplit

import pytest

from crawler.content.extract import extract
from crawler.content.fingerprints import normalize_text
from crawler.defaults import DEDUP_EXTRACTOR
from tests.conftest import REPO_ROOT, _child_env, final_stat, run_scrapy, scrapy_crawl_command
from tests.test_site_spider import predict_stock_crawl

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator
    from pathlib import Path

    from crawler.demo.site import DemoSite
    from tests.conftest import DemoSiteProcess

# the server's hits, the crawl's log, its state dir, the items exported, the audit decisions
DedupCrawl: TypeAlias = (
    "tuple[dict[str, Any], str, Path, list[dict[str, Any]], list[dict[str, Any]]]"
)

QUICK = ["-s", "CONCURRENT_REQUESTS=8", "-s", "LOG_LEVEL=INFO"]
ADDON = ["-s", 'ADDONS={"crawler.addon.DedupAddon": 0}']
# The items and requests of one response are handled one at a time, in the order the spider
# yields them (its item first): the requests a page links to are scheduled only once its item
# has been through the pipelines. A copy is linked only from its original article
# (test_demo_site.py::test_copies_are_linked_only_from_their_original), so the original is
# always decided first and is the one kept.
ORIGINALS_FIRST = ["-s", "CONCURRENT_ITEMS=1"]
CONTENT_OUTCOMES = ("exact", "near", "unique")


def resource_of(site: DemoSite, url: str) -> str:
    """The resource the site serves at ``url`` (a page an item was made of)."""
    parts = urlsplit(url)
    resource = site.resolve(parts.path + (f"?{parts.query}" if parts.query else "")).resource_id
    assert resource is not None, url
    return resource


def html_pages(site: DemoSite) -> set[str]:
    """Every HTML resource of the site: what the crawl makes an item of."""
    return {resource for resource in site.resources if site.resolve(resource).is_html}


def broken_pages(site: DemoSite) -> set[str]:
    """Distinct missing pages linked from the site, by path without trailing slash."""
    missing = set()
    for resource in site.resources:
        for href in site.links_on(resource):
            url = urljoin(site.url(resource), href)
            parts = urlsplit(url)
            if parts.hostname != site.host:
                continue
            target = parts.path + (f"?{parts.query}" if parts.query else "")
            if site.resolve(target).status == 404:
                missing.add(parts.path.split(";")[0].rstrip("/"))
    return missing


@pytest.fixture(scope="module")
def dedup_crawl(
    demo_site_server: DemoSiteProcess, tmp_path_factory: pytest.TempPathFactory
) -> DedupCrawl:
    demo_site_server.reset()
    state_dir = tmp_path_factory.mktemp("state")
    output = state_dir.parent / "items.jsonl"
    audit = state_dir.parent / "audit.jsonl"
    command = scrapy_crawl_command(
        demo_site_server.url,
        *("-s", f"DEDUP_STATE_DIR={state_dir}", "-s", f"DEDUP_AUDIT_FILE={audit}"),
        *("-O", str(output), *QUICK, *ADDON, *ORIGINALS_FIRST),
    )
    try:
        log = run_scrapy(command)
    finally:
        hits = demo_site_server.hits()
        demo_site_server.reset()
    items = [json.loads(line) for line in output.read_text("utf-8").splitlines()]
    decisions = [json.loads(line) for line in audit.read_text("utf-8").splitlines()]
    return hits, log, state_dir, items, decisions


def test_each_page_is_downloaded_once(dedup_crawl: DedupCrawl, demo_site_model: DemoSite) -> None:
    hits, *_ = dedup_crawl
    assert set(hits["by_resource"]) == demo_site_model.resources
    assert set(hits["by_resource"].values()) == {1}
    assert hits["by_status"].get("404") == len(broken_pages(demo_site_model)) == 2
    redirects = hits["by_status"].get("301", 0)
    assert redirects <= len(demo_site_model.redirects)
    assert hits["total"] == len(demo_site_model.resources) + redirects + 2


def test_stock_scrapy_downloads_more(dedup_crawl: DedupCrawl, demo_site_model: DemoSite) -> None:
    hits, *_ = dedup_crawl
    stock = predict_stock_crawl(demo_site_model)  # checked against a real crawl in test_site_spider
    stock_by_resource: dict[str, int] = {}
    for url in stock.downloads:
        parts = urlsplit(url)
        resolution = demo_site_model.resolve(
            parts.path + (f"?{parts.query}" if parts.query else "")
        )
        if resolution.resource_id is not None:
            stock_by_resource[resolution.resource_id] = (
                stock_by_resource.get(resolution.resource_id, 0) + 1
            )
    stock_repeats = sum(count - 1 for count in stock_by_resource.values())
    assert set(stock_by_resource) == set(hits["by_resource"])
    # on the default site, stock Scrapy downloads 114 times, 54 of them a page it already had
    assert (len(stock.downloads), stock_repeats) == (114, 54)
    assert len(stock.downloads) - hits["total"] == 56


def test_close_summary_and_state_files(dedup_crawl: DedupCrawl, demo_site_model: DemoSite) -> None:
    _, log, state_dir, *_ = dedup_crawl
    summary = [line for line in log.splitlines() if "URL dedup: " in line]
    assert len(summary) == 1
    assert "requests filtered (repeat:" in summary[0]
    assert "bloom store holds" in summary[0]
    content = [line for line in log.splitlines() if "Content dedup: " in line]
    exact, near, unique = (final_stat(log, f"dedup/content/{name}") for name in CONTENT_OUTCOMES)
    assert exact + near + unique == len(html_pages(demo_site_model))
    assert len(content) == 1
    assert content[0].endswith(
        f"Content dedup: {exact + near} items dropped (exact: {exact}, near: {near}), "
        f"{unique} unique, 0 without text"
    )
    state_files = [
        "content-index.journal",
        "content-index.snapshot",
        "frontier.journal",
        "seen-urls.journal",
        "seen-urls.snapshot",
        "url-rules.snapshot",
    ]
    assert sorted(path.name for path in state_dir.iterdir()) == sorted(
        [*state_files, "crawl.lock", "state-files.json"]
    )
    assert json.loads((state_dir / "state-files.json").read_text()) == state_files


def test_demo_command_compares_with_stock_scrapy() -> None:
    completed = subprocess.run(
        [sys.executable, "-m", "scrapy", "demo"],
        cwd=REPO_ROOT,
        env=_child_env(),
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert completed.returncode == 0, completed.stderr[-3000:]
    rows = {}
    for line in completed.stdout.splitlines():
        label, *counts = line.rsplit(None, 2) or [""]
        if len(counts) == 2 and all(count.isdigit() for count in counts):
            rows[label.strip()] = counts
    assert rows["downloads (requests the server answered)"] == ["114", "58"]
    assert rows["distinct pages and files downloaded"] == ["55", "55"]
    assert rows["downloads of an already downloaded page"] == ["54", "0"]
    assert "Dedup saved 56 of 114 downloads (49%)." in completed.stdout
    shop = {}
    for line in completed.stdout.splitlines():
        if line.startswith("shop: "):
            label, *counts = line.rsplit(None, 3)
            shop[label] = counts
    stock, fixed, learned = (int(count) for count in shop["shop: downloads"])
    assert stock == fixed  # none of the shop's parameters is on a tracking list
    assert learned < stock / 2
    assert len(set(shop["shop: distinct pages downloaded"])) == 1  # every page, each crawl
    learned_line = next(
        line for line in completed.stdout.splitlines() if line.startswith("Learned: ")
    )
    learned_part, refused_part = learned_line.removeprefix("Learned: ").split("; ")
    assert {"ref", "from"} <= set(learned_part.split(", "))
    assert not {"page", "id", "q", "sort"} & set(learned_part.split(", "))
    assert {"page", "id", "q", "sort"} <= set(refused_part.split(": ")[1].split(", "))


@pytest.mark.parametrize("start", ["docs", "guides"])
def test_crawl_starting_at_a_redirect_to_the_same_page(
    demo_site_process_factory: Callable[..., DemoSiteProcess], start: str
) -> None:
    """``/docs`` answers ``301 Location: /docs/``: both have one canonical URL, and the
    redirect must be followed rather than filtered as already seen."""
    server = demo_site_process_factory()
    log = run_scrapy(scrapy_crawl_command(f"{server.url}{start}", *QUICK))
    hits = server.hits()
    assert hits["by_target"][f"/{start}"] == 1
    assert hits["by_resource"][f"/{start}/"] == 1
    assert "'dedup/url/redirect_same_page': 1" in log
    assert set(hits["by_resource"].values()) == {1}


@dataclass
class ContentOutcome:
    """What the content level did in the dedup crawl, by resource id."""

    exported: list[str]  # one entry per exported item
    dropped: dict[str, str]  # dropped resource -> the resource the audit says it copies
    reasons: dict[str, str]  # dropped resource -> "exact" or "near"
    stats: dict[str, int]


@pytest.fixture(scope="module")
def content_outcome(dedup_crawl: DedupCrawl, demo_site_model: DemoSite) -> ContentOutcome:
    _, log, _, items, decisions = dedup_crawl
    dropped = [d for d in decisions if d["decision"] == "dropped"]
    return ContentOutcome(
        exported=[resource_of(demo_site_model, item["url"]) for item in items],
        dropped={
            resource_of(demo_site_model, d["url"]): resource_of(demo_site_model, d["matched_url"])
            for d in dropped
        },
        reasons={resource_of(demo_site_model, d["url"]): d["reason"] for d in dropped},
        stats={name: final_stat(log, f"dedup/content/{name}") for name in CONTENT_OUTCOMES},
    )


COPY_KINDS = {
    "print": lambda path: path.endswith("/print"),
    "mirror": lambda path: path.startswith("/mirror/"),
    "lightweight": lambda path: path.startswith("/amp/"),
}


def copies_of_kind(site: DemoSite, kind: str) -> dict[str, str]:
    """The site's printer-friendly (``print``), mirrored (``mirror``) or lightweight
    (``lightweight``) copies."""
    copies = {
        copy: original for copy, original in site.near_duplicates.items() if COPY_KINDS[kind](copy)
    }
    assert copies
    return copies


def test_no_article_or_listing_page_is_dropped(
    content_outcome: ContentOutcome, demo_site_model: DemoSite
) -> None:
    """Articles, index pages sharing boilerplate and phrasing, pages on one template: all
    distinct documents, each exported once, none dropped for another."""
    site = demo_site_model
    not_copies = html_pages(site) - set(site.near_duplicates)
    assert {article.path for article in site.articles} | set(site.listing_pages) <= not_copies
    assert not not_copies & set(content_outcome.dropped)
    assert not_copies <= set(content_outcome.exported)
    assert len(content_outcome.exported) == len(set(content_outcome.exported))


def test_every_page_not_exported_was_dropped_and_counted(
    content_outcome: ContentOutcome, demo_site_model: DemoSite, dedup_crawl: DedupCrawl
) -> None:
    *_, items, _ = dedup_crawl
    reasons, stats = list(content_outcome.reasons.values()), content_outcome.stats
    assert html_pages(demo_site_model) - set(content_outcome.exported) == set(
        content_outcome.dropped
    )
    assert (stats["exact"], stats["near"]) == (reasons.count("exact"), reasons.count("near"))
    assert stats["unique"] == len(content_outcome.exported)
    assert all("html" not in item for item in items)


@pytest.mark.parametrize("kind", sorted(COPY_KINDS))
def test_copies_are_dropped_as_copies_of_their_article(
    content_outcome: ContentOutcome, demo_site_model: DemoSite, kind: str
) -> None:
    """Mirrors (an ad block and a credit line added), printer-friendly copies (one
    ``Printed on ... from <URL>`` line, which moves most of their SimHashes past the first
    stage's 3 bits) and lightweight copies (the same text): each dropped, as a copy of the
    article it copies."""
    copies = copies_of_kind(demo_site_model, kind)
    assert not set(copies) & set(content_outcome.exported)
    assert {copy: content_outcome.dropped.get(copy) for copy in copies} == copies


def test_a_lightweight_copy_is_exact_when_its_text_is_its_articles(
    content_outcome: ContentOutcome, demo_site_model: DemoSite
) -> None:
    """A lightweight copy whose fingerprinted text (the default extractor's, normalized) is
    its article's is an exact duplicate, decided by the content hash; one whose text lost a
    byline or a share line is a near one."""
    site = demo_site_model

    def text(path: str) -> str:
        return normalize_text(extract(site.resolve(path).body, extractor=DEDUP_EXTRACTOR).text)

    copies = copies_of_kind(site, "lightweight")
    expected = {
        copy: "exact" if text(copy) == text(original) else "near"
        for copy, original in copies.items()
    }
    assert {copy: content_outcome.reasons[copy] for copy in copies} == expected


@pytest.fixture
def twice_served_site(tmp_path: Path) -> Iterator[str]:
    """A static site on ``http.server`` whose five articles are each served twice, byte
    for byte, at ``/a<n>.html`` and ``/copy/a<n>.html``; yields its URL."""
    rng = random.Random(3)
    words = [
        "".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randint(3, 9)))
        for _ in range(400)
    ]
    (tmp_path / "copy").mkdir()
    links = []
    for number in range(1, 6):
        paragraphs = "".join(
            "<p>" + " ".join(rng.choice(words) for _ in range(60)) + ".</p>\n" for _ in range(6)
        )
        body = (
            f"<html><head><title>Article {number}</title></head><body><article>"
            f"<h1>Article {number}</h1>\n{paragraphs}</article></body></html>\n"
        ).encode()
        (tmp_path / f"a{number}.html").write_bytes(body)
        (tmp_path / "copy" / f"a{number}.html").write_bytes(body)
        links += [
            f'<a href="/a{number}.html">{number}</a>',
            f'<a href="/copy/a{number}.html">c</a>',
        ]
    (tmp_path / "index.html").write_text(
        "<html><body><h1>Index</h1><p>" + " ".join(links) + "</p></body></html>\n"
    )
    server = subprocess.Popen(
        [sys.executable, "-u", "-m", "http.server", "0", "--bind", "127.0.0.1"],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert server.stdout is not None
        port = re.search(r" port (\d+) ", server.stdout.readline())
        assert port, "http.server did not say its port"
        yield f"http://127.0.0.1:{port.group(1)}/"
    finally:
        server.terminate()
        server.wait(timeout=10)


def test_a_body_served_at_two_urls_is_extracted_once(twice_served_site: str) -> None:
    log = run_scrapy(scrapy_crawl_command(twice_served_site, *QUICK, *ADDON, *ORIGINALS_FIRST))
    items = final_stat(log, "item_scraped_count")
    exact, unique = final_stat(log, "dedup/content/exact"), final_stat(log, "dedup/content/unique")
    same_body = final_stat(log, "dedup/extract/same_body")
    assert (unique, exact) == (6, 5)  # the index and five articles; five copies dropped
    assert items == 6
    assert same_body == 5  # every copy was decided from its body's hash, not extracted


def test_a_page_recrawled_after_its_ttl_is_not_a_copy_of_itself(
    demo_site_process_factory, tmp_path: Path
) -> None:
    """DEDUP_URL_TTL lets the next crawl download every page again; the content level has
    their texts already, and lets each through as a re-fetch of itself: the second crawl
    exports what the first did."""
    server = demo_site_process_factory()
    settings = ("-s", "DEDUP_URL_TTL=12", "-s", f"DEDUP_STATE_DIR={tmp_path / 'state'}")

    def crawl(name: str) -> tuple[set[str], str]:
        output = tmp_path / f"{name}.jsonl"
        log = run_scrapy(
            scrapy_crawl_command(
                server.url, *settings, *QUICK, *ADDON, *ORIGINALS_FIRST, "-O", str(output)
            )
        )
        return {json.loads(line)["url"] for line in output.read_text("utf-8").splitlines()}, log

    first, _ = crawl("first")
    downloads = server.hits()["total"]
    time.sleep(12 + 3 + 1)  # the TTL, one 3 s slice late at most, and a margin
    server.reset()
    second, log = crawl("second")
    assert server.hits()["total"] == downloads  # every page again
    assert second == first
    assert final_stat(log, "dedup/content/refetched") == len(first)
    assert final_stat(log, "dedup/content/unique") == 0


START_URLS_SPIDER = """
from urllib.parse import urlsplit

import scrapy


class StartUrlsSpider(scrapy.Spider):
    \"\"\"As most spiders are written: start_urls, an item of every page, every link.\"\"\"

    name = "start_urls"

    def __init__(self, url, **kwargs):
        super().__init__(**kwargs)
        self.start_urls = [url]
        self.allowed_domains = [urlsplit(url).hostname]

    def parse(self, response):
        if not isinstance(response, scrapy.http.HtmlResponse):
            return
        yield {"url": response.url, "title": response.css("title::text").get()}
        yield from response.follow_all(css="a")
"""


def crawl_from_start_urls(
    server: DemoSiteProcess, tmp_path: Path, spider_source: str, by_hand: bool
) -> tuple[str, list[str]]:
    """Run *spider_source* over the demo site from its home page, with the add-on or the
    dupefilter set by hand (no content level to make up for a second download); its log
    and the URLs of the items in its feed."""
    spider = tmp_path / "spider.py"
    spider.write_text(spider_source)
    output = tmp_path / "items.jsonl"
    settings = (
        ["-s", "ADDONS={}", "-s", "DUPEFILTER_CLASS=crawler.dupefilters.URLDupeFilter"]
        if by_hand
        else ADDON
    )
    command = [sys.executable, "-m", "scrapy", "runspider", str(spider), "-a", f"url={server.url}"]
    log = run_scrapy([*command, *settings, *QUICK, "-O", str(output)])
    return log, [json.loads(line)["url"] for line in output.read_text("utf-8").splitlines()]


@pytest.mark.parametrize("by_hand", [False, True])
def test_a_start_url_linked_back_to_is_downloaded_once(
    demo_site_process_factory, tmp_path: Path, by_hand: bool
) -> None:
    """Scrapy schedules start_urls with dont_filter=True, past the dupefilter; the demo
    site links back to its home page 71 times. The start request is recorded as seen, by
    the add-on and by the dupefilter set by hand alike: the home page is downloaded once,
    and its item is in the feed once."""
    server = demo_site_process_factory()
    model = server.model()
    log, exported = crawl_from_start_urls(server, tmp_path, START_URLS_SPIDER, by_hand)
    home = model.resolve("/").resource_id
    assert server.hits()["by_resource"][home] == 1
    assert [url for url in exported if resource_of(model, url) == home] == [server.url]
    assert final_stat(log, "dedup/url/start_recorded") == 1
    # every page of the site, each downloaded once
    assert set(server.hits()["by_resource"].values()) == {1}


def test_a_start_page_fetched_again_without_the_url_level_is_in_the_feed_once(
    demo_site_process_factory, tmp_path: Path
) -> None:
    """With Scrapy's own dupefilter (DEDUP_URL_ENABLED = False), a link back to the start
    page downloads it again; the content level, finding the same text it kept for that URL
    in this crawl, yields no second item."""
    server = demo_site_process_factory()
    model = server.model()
    spider = tmp_path / "start_urls.py"
    spider.write_text(START_URLS_SPIDER)
    output = tmp_path / "items.jsonl"
    command = [sys.executable, "-m", "scrapy", "runspider", str(spider), "-a", f"url={server.url}"]
    settings = ["-s", "DEDUP_URL_ENABLED=False"]
    log = run_scrapy([*command, *ADDON, *settings, *QUICK, "-O", str(output)])
    home = model.resolve("/").resource_id
    assert server.hits()["by_resource"][home] == 2
    exported = [json.loads(line)["url"] for line in output.read_text("utf-8").splitlines()]
    assert [url for url in exported if resource_of(model, url) == home] == [server.url]
    assert final_stat(log, "dedup/content/refetched_in_crawl") == 1


CRAWL_SPIDER = """
from urllib.parse import urlsplit

import scrapy
from scrapy.linkextractors import LinkExtractor
from scrapy.spiders import CrawlSpider, Rule


class RulesSpider(CrawlSpider):
    \"\"\"As a CrawlSpider is written: start_urls, a rule that follows every link and makes
    an item of every page it leads to (the start page's response goes to parse_start_url,
    which makes none).\"\"\"

    name = "rules"
    rules = (Rule(LinkExtractor(), callback="parse_page", follow=True),)

    def __init__(self, url, **kwargs):
        self.start_urls = [url]
        self.allowed_domains = [urlsplit(url).hostname]
        super().__init__(**kwargs)

    def parse_page(self, response):
        yield {"url": response.url, "title": response.css("title::text").get()}
"""


@pytest.mark.parametrize("by_hand", [False, True])
def test_a_crawl_spiders_start_page_is_in_the_feed_as_with_stock_scrapy(
    demo_site_process_factory, tmp_path: Path, by_hand: bool
) -> None:
    """A CrawlSpider makes its start page's item only from a link back to it, which its
    rules handle: stock Scrapy downloads the page again for that link (its start request
    was never recorded), and so does the dupefilter, once, for the first link back to it
    with another callback than the start request's. Every other page is downloaded once."""
    server = demo_site_process_factory()
    model = server.model()
    log, exported = crawl_from_start_urls(server, tmp_path, CRAWL_SPIDER, by_hand)
    home = model.resolve("/").resource_id
    downloads = server.hits()["by_resource"]
    assert downloads.pop(home) == 2
    assert set(downloads.values()) == {1}
    assert [url for url in exported if resource_of(model, url) == home] == [server.url]
    assert final_stat(log, "dedup/url/start_page_again") == 1
