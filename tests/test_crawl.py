"""Real crawls of the demo site with the extension on, counted at the server."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from urllib.parse import urljoin, urlsplit

import pytest

from tests.conftest import REPO_ROOT, _child_env, run_scrapy, scrapy_crawl_command
from tests.test_site_spider import predict_stock_crawl

QUICK = ["-s", "CONCURRENT_REQUESTS=8", "-s", "LOG_LEVEL=INFO"]


def broken_pages(site) -> set[str]:
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
def dedup_crawl(demo_site_server, tmp_path_factory):
    demo_site_server.reset()
    state_dir = tmp_path_factory.mktemp("state")
    output = state_dir.parent / "items.jsonl"
    audit = state_dir.parent / "audit.jsonl"
    command = scrapy_crawl_command(
        demo_site_server.url,
        *("-s", f"DEDUP_STATE_DIR={state_dir}", "-s", f"DEDUP_AUDIT_FILE={audit}"),
        *("-O", str(output), *QUICK),
    )
    try:
        log = run_scrapy(command)
    finally:
        hits = demo_site_server.hits()
        demo_site_server.reset()
    items = [json.loads(line) for line in output.read_text("utf-8").splitlines()]
    decisions = [json.loads(line) for line in audit.read_text("utf-8").splitlines()]
    return hits, log, state_dir, items, decisions


def test_each_page_is_downloaded_once(dedup_crawl, demo_site_model):
    hits, *_ = dedup_crawl
    assert set(hits["by_resource"]) == demo_site_model.resources
    assert set(hits["by_resource"].values()) == {1}
    assert hits["by_status"].get("404") == len(broken_pages(demo_site_model)) == 2
    redirects = hits["by_status"].get("301", 0)
    assert redirects <= len(demo_site_model.redirects)
    assert hits["total"] == len(demo_site_model.resources) + redirects + 2


def test_stock_scrapy_downloads_more(dedup_crawl, demo_site_model):
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
    # on the default site, stock Scrapy downloads 110 times, 54 of them a page it already had
    assert (len(stock.downloads), stock_repeats) == (110, 54)
    assert len(stock.downloads) - hits["total"] == 56


def test_close_summary_and_state_files(dedup_crawl):
    _, log, state_dir, *_ = dedup_crawl
    summary = [line for line in log.splitlines() if "URL dedup: " in line]
    assert len(summary) == 1
    assert "requests filtered (repeat:" in summary[0]
    assert "bloom store holds" in summary[0]
    content = [line for line in log.splitlines() if "Content dedup: " in line]
    # which copy of a group is met first varies with the crawl order: check the total
    summary_pattern = (
        r"Content dedup: 11 items dropped \(exact: \d+, near: \d+\), 38 unique, 0 without text$"
    )
    assert re.search(summary_pattern, content[0])
    assert sorted(path.name for path in state_dir.iterdir()) == [
        "content-index.journal",
        "content-index.snapshot",
        "frontier.journal",
        "seen-urls.journal",
        "seen-urls.snapshot",
    ]


def test_demo_command_compares_with_stock_scrapy():
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
    assert rows["downloads (requests the server answered)"] == ["110", "54"]
    assert rows["distinct pages and files downloaded"] == ["51", "51"]
    assert rows["downloads of an already downloaded page"] == ["54", "0"]
    assert "Dedup saved 56 of 110 downloads (51%)." in completed.stdout


@pytest.mark.parametrize("start", ["docs", "guides"])
def test_crawl_starting_at_a_redirect_to_the_same_page(demo_site_process_factory, start):
    """``/docs`` answers ``301 Location: /docs/``: both have one canonical URL, and the
    redirect must be followed rather than filtered as already seen."""
    server = demo_site_process_factory()
    log = run_scrapy(scrapy_crawl_command(f"{server.url}{start}", *QUICK))
    hits = server.hits()
    assert hits["by_target"][f"/{start}"] == 1
    assert hits["by_resource"][f"/{start}/"] == 1
    assert "'dedup/url/redirect_same_page': 1" in log
    assert set(hits["by_resource"].values()) == {1}


def test_printer_friendly_and_mirrored_copies_are_dropped(dedup_crawl, demo_site_model):
    hits, _, _, items, decisions = dedup_crawl

    def resource(url: str) -> str:
        parts = urlsplit(url)
        return demo_site_model.resolve(
            parts.path + (f"?{parts.query}" if parts.query else "")
        ).resource_id

    kept = {resource(item["url"]) for item in items}
    dropped = {
        resource(d["url"]): resource(d["matched_url"])
        for d in decisions
        if d["decision"] == "dropped"
    }
    groups: dict[str, set[str]] = {}  # original article -> it and its print/mirror copies
    for copy, original in demo_site_model.near_duplicates.items():
        groups.setdefault(original, {original}).add(copy)
    # of each article and its copies, exactly one item is kept; the others name a member
    for members in groups.values():
        assert len(members & kept) == 1
        assert all(dropped[member] in members for member in members - kept)
    # every other page, though it shares the site template, is kept
    html_pages = {r for r in hits["by_resource"] if demo_site_model.resolve(r).is_html}
    assert kept == html_pages - set(dropped)
    assert len(dropped) == len(demo_site_model.near_duplicates) == 11
    assert all("html" not in item for item in items)
