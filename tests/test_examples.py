"""The example project in examples/news, a plain ``scrapy startproject`` layout that
switches dedup on with the one add-on line, crawls the demo site as its README says."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections import Counter
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

import pytest

from tests.conftest import REPO_ROOT, DemoSiteProcess, _child_env
from tests.crawls.test_crawl import resource_of

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

EXAMPLE = REPO_ROOT / "examples" / "news"


def test_the_example_enables_dedup_with_the_add_on_line_only():
    settings = (EXAMPLE / "news" / "settings.py").read_text("utf-8")
    assert 'ADDONS = {"crawler.addon.DedupAddon": 0}' in settings
    assert "DEDUP_" not in settings and "DUPEFILTER" not in settings
    for spider in ("articles.py", "stories.py"):
        assert "crawler" not in (EXAMPLE / "news" / "spiders" / spider).read_text("utf-8")


def crawl_the_example(
    server: DemoSiteProcess,
    tmp_path: Path,
    spider: str,
    *options: str,
    spider_module: str | None = None,
) -> tuple[subprocess.CompletedProcess[str], list[dict]]:
    """Crawl the demo site with a copy of the example project's *spider* (or of a spider
    *spider_module* adds to the copy's spiders); its run and the items of its feed."""
    project = tmp_path / "news"
    shutil.copytree(EXAMPLE, project)
    if spider_module is not None:
        (project / "news" / "spiders" / f"{spider}.py").write_text(spider_module, "utf-8")
    server.reset()
    # the project's polite defaults (one request a second) are lifted for the test only
    completed = subprocess.run(
        [
            *(sys.executable, "-m", "scrapy", "crawl", spider),
            *("-a", f"url={server.url}", "-o", "items.jsonl", *options),
            *("-s", "DOWNLOAD_DELAY=0", "-s", "CONCURRENT_REQUESTS_PER_DOMAIN=8"),
        ],
        cwd=project,
        env=_child_env(),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert completed.returncode == 0, completed.stderr[-3000:]
    lines = (project / "items.jsonl").read_text().splitlines()
    return completed, [json.loads(line) for line in lines]


def test_the_example_project_crawls_each_article_once(
    demo_site_server: DemoSiteProcess, tmp_path: Path
) -> None:
    completed, items = crawl_the_example(
        demo_site_server, tmp_path, "articles", "-s", "JOBDIR=crawls/articles-1"
    )
    site = demo_site_server.model()
    # each article once: its page, or its printer-friendly copy when the two were checked
    # at the same moment and the copy's check ended first
    originals = site.near_duplicates
    pages = [resource_of(site, item["url"]) for item in items]
    articles = Counter(originals.get(page, page) for page in pages)
    assert articles == Counter({article.path: 1 for article in site.articles})
    assert all("html" not in item for item in items)  # the content level took it out
    printed = [copy for copy in originals if copy.startswith("/articles/")]
    assert printed  # printer-friendly copies: article paths, dropped by the content level
    assert f"'dedup/content/near': {len(printed)}" in completed.stderr
    hits = demo_site_server.hits()["by_resource"]
    assert hits and all(count == 1 for count in hits.values()), hits
    assert {urlsplit(site.url(copy)).path for copy in printed} <= set(hits)


@pytest.mark.parametrize("spider", ["stories", "story_items"])
def test_items_without_html_are_checked_on_the_page_they_came_from(
    demo_site_server: DemoSiteProcess, tmp_path: Path, spider: str
) -> None:
    """A spider as most are written (start_urls; title, body and date items, or a
    scrapy.Item class without an html field; teaser items on listing pages): the add-on
    line alone drops the printer-friendly copies and keeps every article and teaser."""
    completed, items = crawl_the_example(demo_site_server, tmp_path, spider)
    site = demo_site_server.model()
    stories = [item for item in items if "title" in item]
    teasers = [item for item in items if "headline" in item]
    # each article once, by its title: its page or its printer-friendly copy, whichever
    # was checked first
    assert Counter(story["title"] for story in stories) == Counter(
        article.title for article in site.articles
    )
    assert all(set(story) == {"title", "body", "date"} for story in stories)
    # every listing page's teasers: a listing page's items share it, and are not copies
    assert len(teasers) == len(site.articles)
    assert {teaser["headline"] for teaser in teasers} == {a.title for a in site.articles}
    printed = [copy for copy in site.near_duplicates if copy.startswith("/articles/")]
    assert f"'dedup/content/near': {len(printed)}" in completed.stderr
    assert f"'dedup/content/from_response': {len(stories) + len(printed)}" in completed.stderr
    assert "unchecked without a page" not in completed.stderr


#: The example's stories spider, with an item of its own from ``start()``: no page behind it.
DIGEST_SPIDER = """
from news.spiders.stories import StoriesSpider


class DigestSpider(StoriesSpider):
    name = "digest"

    async def start(self):
        yield {"title": "Crawl digest", "note": "made by the spider, from no page"}
        async for request in super().start():
            yield request
"""


def test_an_item_with_neither_page_nor_text_is_counted_and_named_at_close(
    demo_site_server: DemoSiteProcess, tmp_path: Path
) -> None:
    """An item yielded from ``start()``: no response, no text field. It is kept, counted,
    and the close line names what would let the content level check it."""
    completed, items = crawl_the_example(
        demo_site_server, tmp_path, "digest", spider_module=DIGEST_SPIDER
    )
    assert {"title": "Crawl digest", "note": "made by the spider, from no page"} in items
    assert "'dedup/content/no_page': 1" in completed.stderr
    assert "1 unchecked without a page: give items a 'html' field (DEDUP_HTML_FIELD)" in (
        completed.stderr
    )
    site = demo_site_server.model()
    stories = Counter(item["title"] for item in items if "body" in item)
    assert stories == Counter(article.title for article in site.articles)  # each one once


@pytest.fixture(scope="module")
def long_listing_site() -> Iterator[DemoSiteProcess]:
    """The demo site with 20 stories on a listing page: page 1 lists 20, page 2 the last 4."""
    server = DemoSiteProcess(listing_size=20)
    server.start()
    try:
        yield server
    finally:
        server.stop()


def test_a_listing_page_yielding_20_items_keeps_all_20(
    long_listing_site: DemoSiteProcess, tmp_path: Path
) -> None:
    """The 20 teasers of one listing page share their page, its boilerplate and the shape of
    their text: the content level checks them on their own fields, and none is a copy of
    another."""
    completed, items = crawl_the_example(long_listing_site, tmp_path, "stories")
    site = long_listing_site.model()
    first_page = [article.title for article in site.articles if article.listing_page == 1]
    assert len(first_page) == 20
    teasers = Counter(item["headline"] for item in items if "headline" in item)
    assert teasers == Counter(article.title for article in site.articles)  # each once
    assert f"'dedup/content/from_item_fields': {len(site.articles)}" in completed.stderr
