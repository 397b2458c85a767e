"""The copy a reader would keep: a better copy of a kept page's text met later takes its
place (held items), or is recorded (``"mark"``), or is counted (``"drop"``)."""

import asyncio
import json
import re
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

import pytest
from scrapy.exceptions import DropItem

from crawler.content.held_items import HeldItems
from crawler.content.item_pages import ItemPage, item_pages
from crawler.content.representatives import (
    better_representative,
    has_copy_marker,
    may_be_superseded,
)
from crawler.demo.site import build_site
from tests.conftest import DemoSiteProcess, final_stat, run_scrapy, scrapy_crawl_command
from tests.test_pipelines import PARAGRAPHS, make_pipeline, page, process, stats

ARTICLE = "https://news.test/articles/harbour"
PRINTED = "https://news.test/articles/harbour/print"


@pytest.mark.parametrize(
    ("candidate", "kept", "reason"),
    [
        (ARTICLE, PRINTED, "no_copy_marker"),
        (ARTICLE, "https://news.test/amp/articles/harbour", "no_copy_marker"),
        (ARTICLE, "https://m.news.test/articles/harbour", "no_copy_marker"),
        (ARTICLE, ARTICLE + "?output=amp", "no_copy_marker"),
        (ARTICLE, "http://news.test/articles/harbour", "https"),
        (ARTICLE, "http://www.news.test/articles/harbour", "https"),
        ("https://news.test/a/harbour", ARTICLE, "shorter"),
        # the article on another site than its mirror: the marker still tells them apart
        (ARTICLE, "https://partner.test/mirror/harbour", "no_copy_marker"),
        # the other way round, nothing makes the later copy better
        (PRINTED, ARTICLE, None),
        ("http://news.test/articles/harbour", ARTICLE, None),
        (ARTICLE, "https://news.test/a/harbour", None),
        # across sites, length and scheme say nothing
        ("https://x.test/h", ARTICLE, None),
        ("https://x.test/articles/harbour", "http://news.test/articles/harbour", None),
        (ARTICLE, ARTICLE, None),
    ],
)
def test_the_better_representative_of_two_urls(candidate, kept, reason):
    assert better_representative(candidate, kept) == reason


def test_a_url_the_kept_page_declares_its_own_comes_first_whatever_its_shape():
    kept = "https://news.test/story-7"
    declared = "http://news.test/story?id=7&print=1"  # longer, http, marked: still first
    assert better_representative(declared, kept, kept_declares=declared) == "declared_canonical"
    assert better_representative(declared, kept, kept_declares=kept) is None


def test_the_url_the_kept_pages_url_redirects_to_comes_first_across_sites():
    moved = "https://new.test/news/2026/harbour-reopens"  # longer, on another site
    old = "http://news.test/harbour"
    assert better_representative(moved, old, candidate_redirected_from=[old]) == "redirect_target"
    assert better_representative(moved, old) is None
    # the URL that redirected to the kept page is not better, however short or clean
    kept = "https://news.test/articles/harbour/print"
    assert better_representative("https://news.test/h", kept, kept_redirected_from=[]) == (
        "no_copy_marker"
    )
    assert (
        better_representative(
            "https://news.test/h", kept, kept_redirected_from=["https://news.test/h"]
        )
        is None
    )


@pytest.mark.parametrize(
    "url",
    [
        "https://news.test/articles/amplifier",
        "https://news.test/printing-history",
        "https://news.test/articles/harbour?page=2",
        "https://amplify.news.test/",
        "https://shop.test/category/mobile?size=m&color=mirror",
        "https://blog.test/?m=202401",
        "https://mobile.test/news/today",
        "https://m.co.uk/news/today",
        "https://shop.test/products/mirror",
    ],
)
def test_words_that_only_contain_a_marker_are_no_marker(url):
    assert not has_copy_marker(url)
    assert not may_be_superseded(url)


def articles_and_copy() -> tuple[str, str]:
    printed = page(["Printed on 3 May 2026 from the Port Gazette.", *PARAGRAPHS])
    return page(PARAGRAPHS), printed


def test_a_held_copy_leaves_as_a_copy_of_its_article_met_while_it_waited(tmp_path):
    audit = tmp_path / "audit.jsonl"
    pipeline = make_pipeline({"DEDUP_HOLD_SECONDS": 30, "DEDUP_AUDIT_FILE": str(audit)})
    article, printed = articles_and_copy()

    async def copy_first() -> tuple[object, dict]:
        held = asyncio.ensure_future(pipeline.process_item({"url": PRINTED, "html": printed}))
        while PRINTED not in pipeline._held:
            assert not held.done(), held.result()
            await asyncio.sleep(0.01)
        kept = await pipeline.process_item({"url": ARTICLE, "html": article})
        try:
            await held
        except DropItem as exc:
            return exc, kept
        raise AssertionError("the printed copy was kept")

    dropped, kept = asyncio.run(copy_first())
    assert kept == {"url": ARTICLE}
    assert str(dropped) == (
        "A better copy of its page came while it was held (no_copy_marker): "
        f"{ARTICLE} instead of {PRINTED}"
    )
    outcomes = stats(pipeline)
    assert outcomes["dedup/content/unique"] == 1
    assert outcomes["dedup/content/superseded"] == 1
    assert outcomes["dedup/content/better_copy"] == 1
    assert outcomes["dedup/content/held"] == 1  # the article has nothing better to wait for
    assert outcomes["dedup/content/held_seconds"] < 30
    assert outcomes["dedup/content/held_bytes_most"] == len(printed)
    pipeline.close_spider()
    records = [json.loads(line) for line in audit.read_text().splitlines()]
    assert [(r["url"], r["decision"], r["reason"]) for r in records] == [
        (ARTICLE, "kept", "better_copy"),
        (PRINTED, "dropped", "superseded"),
    ]
    assert records[1]["superseded_by"] == ARTICLE
    assert "1 superseded by a better copy of their page" in pipeline.summary()


def test_a_held_copy_whose_article_never_comes_leaves_kept_after_the_hold():
    pipeline = make_pipeline({"DEDUP_HOLD_SECONDS": 0.2})
    _, printed = articles_and_copy()
    assert process(pipeline, {"url": PRINTED, "html": printed}) == {"url": PRINTED}
    assert 0.2 <= stats(pipeline)["dedup/content/held_seconds"] < 5
    assert stats(pipeline)["dedup/content/unique"] == 1


def test_an_item_no_later_copy_could_better_is_not_held():
    pipeline = make_pipeline({"DEDUP_HOLD_SECONDS": 60})
    article, _ = articles_and_copy()
    assert process(pipeline, {"url": ARTICLE, "html": article}) == {"url": ARTICLE}
    assert "dedup/content/held" not in stats(pipeline)


def test_without_a_hold_the_first_copy_stays_kept_and_the_better_one_is_counted(tmp_path):
    audit = tmp_path / "audit.jsonl"
    pipeline = make_pipeline({"DEDUP_AUDIT_FILE": str(audit)})
    article, printed = articles_and_copy()
    process(pipeline, {"url": PRINTED, "html": printed})
    with pytest.raises(DropItem, match=re.escape(f"duplicate of {PRINTED}")):
        process(pipeline, {"url": ARTICLE, "html": article})
    assert stats(pipeline)["dedup/content/better_copy_dropped"] == 1
    pipeline.close_spider()
    record = json.loads(audit.read_text().splitlines()[-1])
    assert (record["url"], record["decision"], record["better_copy"]) == (
        ARTICLE,
        "dropped",
        "no_copy_marker",
    )


def test_with_mark_the_better_copy_is_kept_and_the_earlier_named_superseded(tmp_path):
    audit = tmp_path / "audit.jsonl"
    pipeline = make_pipeline({"DEDUP_CONTENT_ACTION": "mark", "DEDUP_AUDIT_FILE": str(audit)})
    article, printed = articles_and_copy()
    assert process(pipeline, {"url": PRINTED, "html": printed}) == {"url": PRINTED}
    assert process(pipeline, {"url": ARTICLE, "html": article}) == {"url": ARTICLE}
    # a later copy is a copy of the article now
    mirror = process(pipeline, {"url": "https://partner.test/mirror/harbour", "html": printed})
    assert mirror["duplicate_of"] == ARTICLE
    pipeline.close_spider()
    records = [json.loads(line) for line in audit.read_text().splitlines()]
    assert [(r["url"], r["decision"], r["reason"]) for r in records] == [
        (PRINTED, "kept", "unique"),
        (ARTICLE, "kept", "better_copy"),
        ("https://partner.test/mirror/harbour", "marked", "exact"),
    ]
    assert records[1]["supersedes"] == PRINTED
    assert stats(pipeline)["dedup/content/superseded_exported"] == 1


def test_with_mark_the_page_the_kept_url_redirects_to_now_supersedes_it(tmp_path):
    """A page that moved: its old URL, kept first, now redirects to the new one (a
    recrawl, or a link fetched again): the new URL is kept, and named the better copy."""
    audit = tmp_path / "audit.jsonl"
    pipeline = make_pipeline({"DEDUP_CONTENT_ACTION": "mark", "DEDUP_AUDIT_FILE": str(audit)})
    article, _ = articles_and_copy()
    old, moved = "https://news.test/h", "https://harbour.test/news/2026/harbour-reopens"
    assert process(pipeline, {"url": old, "html": article}) == {"url": old}
    item = {"url": moved, "html": article}
    item_pages(pipeline.crawler).put(item, ItemPage(moved, 0, redirected_from=(old,)))
    assert process(pipeline, item) == {"url": moved}
    # an item of the old URL again: a copy of the page it leads to
    assert process(pipeline, {"url": old + "?ref=x", "html": article})["duplicate_of"] == moved
    pipeline.close_spider()
    records = [json.loads(line) for line in audit.read_text().splitlines()]
    assert (records[1]["url"], records[1]["reason"], records[1]["supersedes"]) == (
        moved,
        "better_copy",
        old,
    )


def test_a_page_reached_by_redirect_is_not_superseded_by_the_url_that_led_to_it():
    pipeline = make_pipeline({"DEDUP_CONTENT_ACTION": "mark"})
    article, _ = articles_and_copy()
    target, short = "https://news.test/articles/harbour/print", "https://news.test/h"
    item = {"url": target, "html": article}
    item_pages(pipeline.crawler).put(item, ItemPage(target, 0, redirected_from=(short,)))
    process(pipeline, item)
    assert process(pipeline, {"url": short, "html": article})["duplicate_of"] == target


def test_with_mark_a_merely_shorter_url_is_marked_as_before():
    """Of two ordinary URLs of one site, the shorter is preferred only while the other is
    held: otherwise both would leave unmarked, and a feed filtered on duplicate_of would
    keep both."""
    pipeline = make_pipeline({"DEDUP_CONTENT_ACTION": "mark"})
    article, _ = articles_and_copy()
    process(pipeline, {"url": ARTICLE, "html": article})
    shorter = process(pipeline, {"url": "https://news.test/a/harbour", "html": article})
    assert shorter["duplicate_of"] == ARTICLE
    assert "dedup/content/better_copy" not in stats(pipeline)


def test_a_duplicate_with_a_url_that_cannot_be_parsed_is_dropped_as_before():
    pipeline = make_pipeline()
    article, _ = articles_and_copy()
    process(pipeline, {"url": "http://[blog.test/x", "html": article})
    with pytest.raises(DropItem, match=re.escape("Exact duplicate of http://[blog.test/x")):
        process(pipeline, {"url": "http://[blog.test/y", "html": article})
    assert stats(pipeline)["dedup/content/exact"] == 1


def test_the_url_a_kept_page_declares_canonical_takes_its_place():
    pipeline = make_pipeline({"DEDUP_HOLD_SECONDS": 30})
    canonical = "https://news.test/story?id=7"
    declaring = page(PARAGRAPHS).replace(
        "<title>", f'<link rel="canonical" href="{canonical}"><title>'
    )

    async def declaring_first() -> dict:
        held = asyncio.ensure_future(
            pipeline.process_item({"url": "https://news.test/s7", "html": declaring})
        )
        while "https://news.test/s7" not in pipeline._held:
            await asyncio.sleep(0.01)
        kept = await pipeline.process_item({"url": canonical, "html": page(PARAGRAPHS)})
        with pytest.raises(DropItem, match="declared_canonical"):
            await held
        return kept

    assert asyncio.run(declaring_first()) == {"url": canonical}


def test_a_hold_that_ran_out_is_not_superseded_any_more():
    held = HeldItems()

    async def run_out() -> tuple:
        held.reserve(PRINTED)
        outcome = await held.hold(PRINTED, 0.01)
        return outcome, held.supersede(PRINTED, ARTICLE, "no_copy_marker"), PRINTED in held

    assert asyncio.run(run_out()) == (None, False, False)


def test_a_better_copy_met_before_the_hold_begins_ends_it_at_once():
    """The better copy may be decided in another thread after the copy, and reach the
    event loop first: the copy's hold then ends as it begins."""
    held = HeldItems()
    held.reserve(PRINTED)
    assert PRINTED in held
    assert held.supersede(PRINTED, ARTICLE, "no_copy_marker")

    async def hold() -> object:
        return await held.hold(PRINTED, 60)

    assert asyncio.run(hold()) == (ARTICLE, "no_copy_marker")
    assert PRINTED not in held
    assert not held.supersede(PRINTED, ARTICLE, "no_copy_marker")


def test_a_negative_hold_names_the_setting():
    with pytest.raises(
        ValueError, match=re.escape("DEDUP_HOLD_SECONDS=-1.0 must be a number of seconds")
    ):
        make_pipeline({"DEDUP_HOLD_SECONDS": -1})


# -- real crawls of the demo site whose home page links every copy before its article ---------


def copies_first_crawl(server, tmp_path, *settings: str) -> tuple[list[dict], list[dict], str]:
    """Crawl the copies-first demo site with the add-on; its items, audit records and log."""
    output, audit = tmp_path / "items.jsonl", tmp_path / "audit.jsonl"
    log = run_scrapy(
        scrapy_crawl_command(
            server.url,
            "-s",
            'ADDONS={"crawler.addon.DedupAddon": 0}',
            "-s",
            f"DEDUP_AUDIT_FILE={audit}",
            "-s",
            "LOG_LEVEL=INFO",
            "-o",
            f"{output}:jsonl",
            *settings,
        )
    )
    items = [json.loads(line) for line in output.read_text("utf-8").splitlines()]
    records = [json.loads(line) for line in audit.read_text("utf-8").splitlines()]
    return items, [r for r in records if r.get("level") == "content"], log


@pytest.fixture(scope="module")
def copies_first_site():
    server = DemoSiteProcess(site="copies-first")
    server.start()
    yield server, build_site(copies_first=True)
    server.stop()


def representative(superseded: dict[str, str], path: str) -> str:
    """Where *path* ends, following the copies that took each other's place: an article's
    printed copy gives way to its (shorter) mirror, and the mirror to the article."""
    while path in superseded:
        path = superseded[path]
    return path


def paths(items: list[dict]) -> list[str]:
    return [urlsplit(item["url"]).path for item in items]


def test_without_a_hold_articles_linked_after_their_copies_are_dropped(copies_first_site, tmp_path):
    """The problem the hold solves, on this site: the copy met first is kept."""
    server, site = copies_first_site
    items, _, log = copies_first_crawl(server, tmp_path)
    kept_copies = set(paths(items)) & set(site.near_duplicates)
    assert kept_copies  # 8 of the site's 15 copies in runs of 2026-12-04
    assert final_stat(log, "dedup/content/better_copy_dropped") >= len(kept_copies)


def test_held_items_leave_the_feed_with_each_articles_own_url(copies_first_site, tmp_path):
    """DEDUP_HOLD_SECONDS = 10: each copy waits for its article; the whole crawl takes
    0.4 s on a 2-core Xeon of 2026, and the held copies waited 0.1 s each on average."""
    server, site = copies_first_site
    items, records, log = copies_first_crawl(server, tmp_path, "-s", "DEDUP_HOLD_SECONDS=10")
    kept = set(paths(items))
    assert not kept & set(site.near_duplicates)  # 0 copies' URLs in the feed
    assert set(site.near_duplicates.values()) <= kept  # every article with a copy
    superseded = {
        urlsplit(r["url"]).path: urlsplit(r["superseded_by"]).path
        for r in records
        if r["reason"] == "superseded"
    }
    assert superseded  # the copies met first: 8 to 10 in runs of 2026-12-04
    assert {copy: representative(superseded, copy) for copy in superseded} == {
        copy: site.near_duplicates[copy] for copy in superseded
    }
    assert final_stat(log, "dedup/content/superseded") == len(superseded)
    assert final_stat(log, "dedup/content/held") >= len(superseded)


def test_with_mark_the_audit_names_every_superseded_item(copies_first_site, tmp_path):
    server, site = copies_first_site
    items, records, _ = copies_first_crawl(server, tmp_path, "-s", "DEDUP_CONTENT_ACTION=mark")
    # a copy in the feed without duplicate_of was met before its article: it was superseded
    unmarked_copies = {
        path: site.near_duplicates[path]
        for path, item in zip(paths(items), items, strict=True)
        if path in site.near_duplicates and "duplicate_of" not in item
    }
    assert unmarked_copies
    named = {  # the kept better copy's record names the earlier one
        urlsplit(r["supersedes"]).path: urlsplit(r["url"]).path
        for r in records
        if "supersedes" in r
    }
    assert {copy: representative(named, copy) for copy in named} == unmarked_copies
    unmarked = {
        path for path, item in zip(paths(items), items, strict=True) if "duplicate_of" not in item
    }
    assert set(site.near_duplicates.values()) <= unmarked  # every article kept unmarked


# -- a real recrawl of a site whose page moved: its old URL now redirects to the new one ------


@pytest.fixture
def moving_site():
    """A home page linking ``/h``, an article; ``moved()`` makes ``/h`` answer 301 to a
    longer URL on the same server, which serves the article."""
    article = page(PARAGRAPHS).encode()
    routes: dict[str, tuple[int, dict[str, str], bytes]] = {
        "/": (200, {"Content-Type": "text/html"}, b'<html><body><a href="/h">h</a></body></html>'),
        "/h": (200, {"Content-Type": "text/html"}, article),
    }

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            status, headers, body = routes.get(self.path, (404, {}, b""))
            self.send_response(status)
            for name, value in headers.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    def moved() -> None:
        routes["/h"] = (301, {"Location": "/news/2026/harbour-reopens"}, b"")
        routes["/news/2026/harbour-reopens"] = (200, {"Content-Type": "text/html"}, article)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/", moved
    finally:
        server.shutdown()
        server.server_close()


def test_a_recrawl_keeps_the_page_a_kept_url_now_redirects_to(moving_site, tmp_path):
    """Run 1 keeps the article at /h; /h then moves to a longer URL, which no other rule
    prefers. Run 2, once the URLs expired (DEDUP_URL_TTL = 1 s: forgotten 1 to 1.25 s after
    they were recorded), meets the article at the new URL through the redirect: with
    "mark", the new URL is kept unmarked and its audit record names /h as superseded."""
    url, moved = moving_site
    output, audit = tmp_path / "items.jsonl", tmp_path / "audit.jsonl"
    settings = [
        "-s",
        'ADDONS={"crawler.addon.DedupAddon": 0}',
        "-s",
        f"DEDUP_STATE_DIR={tmp_path / 'state'}",
        "-s",
        "DEDUP_URL_TTL=1",
        "-s",
        "DEDUP_CONTENT_ACTION=mark",
        "-s",
        f"DEDUP_AUDIT_FILE={audit}",
        "-s",
        "ROBOTSTXT_OBEY=False",
        "-o",
        f"{output}:jsonl",
    ]
    run_scrapy(scrapy_crawl_command(url, *settings))
    moved()
    time.sleep(1.5)
    log = run_scrapy(scrapy_crawl_command(url, *settings))
    items = [json.loads(line) for line in output.read_text("utf-8").splitlines()]
    new_url = url + "news/2026/harbour-reopens"
    assert [i["url"] for i in items if "duplicate_of" not in i][-1] == new_url
    records = [json.loads(line) for line in audit.read_text("utf-8").splitlines()]
    superseding = [r for r in records if r.get("supersedes")]
    assert [(r["url"], r["supersedes"]) for r in superseding] == [(new_url, url + "h")]
    assert final_stat(log, "dedup/content/better_copy") == 1
