"""Recrawls with DEDUP_RECRAWL, real crawls of the demo site that changes between crawls
(crawler/demo/recrawl_site.py): validators sent, 304s and unchanged pages emit nothing, changed
pages come back, pages that only unchanged pages link are fetched when due.

The schedule's intervals are seconds here: the first interval 2 s, so that every page is due
again once a crawl is 3 s behind (each test waits that long; a crawl of the 63 pages takes
about 2 s, and a page fetched in it is not due twice in one run whatever its interval)."""

from __future__ import annotations

import json
import pickle
import time
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from scrapy.settings import Settings

from crawler.demo.recrawl_site import IGNORES_VALIDATORS, LISTING_SIZE, RecrawlSite, not_modified
from crawler.url.configuration import url_rules_from_settings, url_signature
from crawler.url.frontier import Frontier
from crawler.url.stores.bloom import BloomSeenSet
from tests.conftest import (
    final_stat,
    run_scrapy,
    scrapy_command,
    scrapy_crawl_command,
)
from tests.crawls.test_distributed import run_workers
from tests.crawls.test_resume import kill_when

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

    from tests.conftest import DemoSiteProcess, RedisServerProcess

PAGES = 60
FIRST_INTERVAL = 2
SCHEDULE = [
    *("-s", "DEDUP_RECRAWL=True", "-s", f"DEDUP_RECRAWL_FIRST_INTERVAL={FIRST_INTERVAL}"),
    *("-s", "DEDUP_RECRAWL_MIN_INTERVAL=1", "-s", "DEDUP_RECRAWL_MAX_INTERVAL=60"),
    *("-s", "CONCURRENT_REQUESTS=8", "-s", "LOG_LEVEL=INFO"),
]


class Recrawls:
    """Crawls of one server, each keeping the state of the ones before."""

    def __init__(self, server: DemoSiteProcess, tmp_path: Path, *settings: str) -> None:
        self.server = server
        self.tmp_path = tmp_path
        self.audit = tmp_path / "audit.jsonl"
        self.settings = [
            *SCHEDULE,
            *("-s", f"DEDUP_STATE_DIR={tmp_path / 'state'}"),
            *("-s", f"DEDUP_AUDIT_FILE={self.audit}"),
            *settings,
        ]
        self.number = 0
        self.ended = 0.0

    def crawl(self, wait: float = FIRST_INTERVAL + 1) -> tuple[dict[str, str], str]:
        """The next crawl, once *wait* seconds passed since the last one ended: its items
        (path -> title) and its log; the server's counts start from zero."""
        time.sleep(max(0.0, self.ended + wait - time.monotonic()))
        self.number += 1
        feed = self.tmp_path / f"crawl{self.number}.jsonl"
        self.server.reset()
        log = run_scrapy(scrapy_crawl_command(self.server.url, *self.settings, "-O", str(feed)))
        self.ended = time.monotonic()
        items = [json.loads(line) for line in feed.read_text("utf-8").splitlines()]
        paths = [item["url"][len(self.server.url) - 1 :] for item in items]
        assert len(paths) == len(set(paths)), "a page emitted twice in one crawl"
        return {path: item for path, item in zip(paths, items, strict=True)}, log

    def audited(self, level: str, outcome: str) -> set[str]:
        """The paths the audit file has a *level* record of *outcome* for (its decision or
        its reason)."""
        records = [json.loads(line) for line in self.audit.read_text("utf-8").splitlines()]
        return {
            record["url"][len(self.server.url) - 1 :]
            for record in records
            if record["level"] == level and outcome in (record["decision"], record.get("reason"))
        }


def linked_from(site: RecrawlSite, path: str) -> set[str]:
    """The pages of *site* whose links lead to *path*."""
    return {
        source
        for source in site.resources
        if f'href="{path}"' in site.resolve(source).body.decode()
    }


def answers_200(site: RecrawlSite, before: RecrawlSite, path: str) -> bool:
    """Whether the server answers 200 to a recrawl of *path* that sends the validators
    *before* gave it."""
    old = before.resolve(path).headers
    sent = {"If-None-Match": old.get("ETag"), "If-Modified-Since": old.get("Last-Modified")}
    headers = {name: value for name, value in sent.items() if value is not None}
    return not headers or not not_modified(site.resolve(path), headers)


def test_a_recrawl_emits_what_changed_and_asks_for_the_rest_with_validators(
    demo_site_process_factory: Callable[..., DemoSiteProcess], tmp_path: Path
) -> None:
    server = demo_site_process_factory(site="recrawl", articles=PAGES)
    recrawls = Recrawls(server, tmp_path)
    first, _ = recrawls.crawl()
    site, before = RecrawlSite(pages=PAGES), RecrawlSite(pages=PAGES)
    assert len(first) == len(site.resources) == PAGES + -(-PAGES // LISTING_SIZE) + 1
    # 6 sends an ETag, 4 Last-Modified, 5 neither; 6 is linked only from pages that answer
    # 304 to the recrawl (its listing and ETag pages): only the idle hand-off finds it
    changed = {"/p/6", "/p/4", "/p/5"}
    for path in sorted(changed):
        server._control(f"change/{path[3:]}")
        site.change(int(path[3:]))
    assert not any(answers_200(site, before, source) for source in linked_from(site, "/p/6"))

    second, log = recrawls.crawl()

    assert {path: item["title"] for path, item in second.items()} == {
        path: f"Page {path[3:]}, version 1" for path in changed
    }
    answered = {path: answers_200(site, before, path) for path in site.resources}
    not_modified_count = sum(not whole for whole in answered.values())
    hits = server.hits()
    assert hits["total"] == len(site.resources)  # each page once
    assert hits["by_status"] == {"200": len(site.resources) - not_modified_count,
                                 "304": not_modified_count}  # fmt: skip
    assert final_stat(log, "dedup/recrawl/not_modified") == not_modified_count
    assert final_stat(log, "dedup/recrawl/changed") == len(changed)
    # the pages without validators, or whose server ignores them, that did not change: byte
    # for byte (told at download, no callback), or but for the round in their footer (told
    # by their main text, their item dropped)
    unchanged = {path for path, whole in answered.items() if whole} - changed
    assert {f"/p/{n}" for n in range(0, PAGES, IGNORES_VALIDATORS)} <= unchanged
    stamped = {path for path in unchanged if site.resolve(path).body != before.resolve(path).body}
    assert stamped and stamped < unchanged
    assert final_stat(log, "dedup/recrawl/unchanged") == len(unchanged)
    assert final_stat(log, "dedup/content/unchanged") == len(stamped)
    assert recrawls.audited("content", "unchanged") == stamped
    assert recrawls.audited("recrawl", "unchanged") == unchanged
    assert len(recrawls.audited("recrawl", "not_modified")) == not_modified_count
    assert final_stat(log, "dedup/recrawl/handed_out") >= 1
    assert final_stat(log, "dedup/content/exact") + final_stat(log, "dedup/content/near") == 0


def test_a_page_whose_etag_never_changes_is_fetched_whole_after_the_bound(
    demo_site_process_factory: Callable[..., DemoSiteProcess], tmp_path: Path
) -> None:
    # page 9 makes its ETag from its path: a 304 answers for it whatever it holds
    server = demo_site_process_factory(site="recrawl", articles=PAGES)
    recrawls = Recrawls(server, tmp_path, "-s", "DEDUP_RECRAWL_MOST_NOT_MODIFIED=2")
    recrawls.crawl()
    server._control("change/9")
    second, _ = recrawls.crawl()
    assert "/p/9" not in second  # the server said not modified: its fault, one answer
    third, _ = recrawls.crawl(wait=FIRST_INTERVAL * 1.5 + 1)
    assert "/p/9" not in third  # two in a row: the bound
    # the interval grew twice (2 s, 3 s, 4.5 s): due again 4.5 s after the last fetch
    fourth, log = recrawls.crawl(wait=FIRST_INTERVAL * 1.5 * 1.5 + 1)
    assert second.keys() == third.keys() == set()
    assert fourth["/p/9"]["title"] == "Page 9, version 1"
    assert final_stat(log, "dedup/recrawl/forced_full") >= 1


def test_with_mark_an_unchanged_page_is_marked_unchanged_not_a_duplicate(
    demo_site_process_factory: Callable[..., DemoSiteProcess], tmp_path: Path
) -> None:
    server = demo_site_process_factory(site="recrawl", articles=PAGES)
    recrawls = Recrawls(server, tmp_path, "-s", "DEDUP_CONTENT_ACTION=mark")
    first, _ = recrawls.crawl()
    server._control("change/3")  # a round goes by
    second, log = recrawls.crawl()
    changed = second.pop("/p/3")
    assert changed["title"] == "Page 3, version 1" and "unchanged" not in changed
    # 11 sends no validators and names the round in its footer: its bytes changed, its text
    # did not, so its item is marked; 5, byte for byte the same, yields no item at all
    assert {"/p/5", "/p/11"} <= first.keys()
    assert second["/p/11"]["unchanged"] is True and "/p/5" not in second
    assert all(item.get("unchanged") is True for item in second.values())
    assert not any("duplicate_of" in item for item in second.values())
    assert final_stat(log, "dedup/content/unchanged") == len(second)


def pending_paths(state_dir: Path) -> set[str]:
    """The paths of the requests the frontier in *state_dir* will schedule again."""
    rules = url_rules_from_settings(Settings())
    frontier = Frontier(state_dir, url_signature(rules, BloomSeenSet(10_000_000, 0.001)))
    serialized, _ = frontier.open()
    return {urlsplit(pickle.loads(payload)["url"]).path for payload in serialized}


def test_a_kill_during_a_recrawl_loses_no_due_page_and_repeats_only_what_was_in_flight(
    demo_site_process_factory: Callable[..., DemoSiteProcess], tmp_path: Path
) -> None:
    server = demo_site_process_factory(site="recrawl", articles=PAGES)
    # intervals long enough that nothing fetched by the killed crawl is due at the next
    recrawls = Recrawls(
        server,
        tmp_path,
        *("-s", "DEDUP_RECRAWL_FIRST_INTERVAL=8", "-s", "DEDUP_RECRAWL_MIN_INTERVAL=8"),
        *("-s", "CONCURRENT_REQUESTS=2", "-s", "DOWNLOAD_DELAY=0.05"),
    )
    recrawls.crawl()
    site = RecrawlSite(pages=PAGES)
    changed = {f"/p/{number}" for number in range(1, PAGES, 6)}
    for path in changed:
        server._control(f"change/{path[3:]}")
        site.change(int(path[3:]))
    time.sleep(max(0.0, recrawls.ended + 8 + 1 - time.monotonic()))
    server.reset()
    killed_feed = tmp_path / "killed.jsonl"
    command = scrapy_crawl_command(server.url, *recrawls.settings, "-O", str(killed_feed))
    kill_when(command, lambda: server.hits()["total"] >= len(site.resources) // 2)
    at_kill = server.hits()["by_resource"]
    assert set(at_kill) < site.resources, "the kill came after every page was fetched"
    in_flight = pending_paths(tmp_path / "state") & set(at_kill)
    killed_items = [json.loads(line) for line in killed_feed.read_text().splitlines() if line]
    recrawls.ended = time.monotonic()

    last, log = recrawls.crawl(wait=0)

    by_resource = server.hits()["by_resource"]
    assert set(at_kill) | set(by_resource) == site.resources  # no due page lost
    # fetched again: what was in flight at the kill, and the start page (every start)
    assert set(at_kill) & set(by_resource) <= in_flight | {"/"}
    emitted = [urlsplit(item["url"]).path for item in killed_items] + list(last)
    assert sorted(emitted) == sorted(changed)  # each changed page once
    assert "Traceback" not in log


def test_dedup_inspect_shows_a_pages_record_and_dedup_forget_makes_it_due(
    demo_site_process_factory: Callable[..., DemoSiteProcess], tmp_path: Path
) -> None:
    server = demo_site_process_factory(site="recrawl", articles=PAGES)
    # a Bloom filter, which cannot forget a URL: the record is what a reset removes
    recrawls = Recrawls(
        server,
        tmp_path,
        *("-s", "DEDUP_RECRAWL_FIRST_INTERVAL=3600", "-s", "DEDUP_RECRAWL_MAX_INTERVAL=7200"),
    )
    recrawls.crawl(wait=0)
    page, other = f"{server.url}p/3", f"{server.url}p/4"
    state = ["-s", f"DEDUP_STATE_DIR={tmp_path / 'state'}"]

    shown = scrapy_command("dedup-inspect", "--json", "--url", page, *state)
    assert shown.returncode == 0, shown.stderr
    recrawl = json.loads(shown.stdout)["recrawl"]
    assert (recrawl["records"], recrawl["due_now"]) == (len(RecrawlSite(pages=PAGES).resources), 0)
    (entry,) = recrawl["urls"]
    sent = RecrawlSite(pages=PAGES).resolve("/p/3").headers["ETag"]
    assert entry["record"]["etag"] == sent and entry["record"]["interval_seconds"] == 3600
    assert 3500 < entry["record"]["due_in_seconds"] <= 3600
    assert "due in 60 min" in scrapy_command("dedup-inspect", "--url", page, *state).stdout

    reset = scrapy_command("dedup-forget", "--recrawl", page, *state)
    assert reset.returncode == 0, reset.stderr
    assert reset.stdout.split() == ["reset", page]
    again, _ = recrawls.crawl(wait=0)
    # requested when the spider is idle, as no link leads to it (the start page is not
    # due), and downloaded whole, as a new page: its item is emitted again
    assert server.hits()["by_resource"] == {"/p/3": 1}
    assert server.hits()["by_status"] == {"200": 1}
    assert set(again) == {"/p/3"}
    shown = scrapy_command("dedup-inspect", "--json", "--url", page, "--url", other, *state)
    urls = json.loads(shown.stdout)["recrawl"]["urls"]
    assert urls[0]["record"]["fetched_at"] > urls[1]["record"]["fetched_at"]


def test_three_workers_on_redis_share_one_schedule(
    demo_site_process_factory: Callable[..., DemoSiteProcess], redis_server: RedisServerProcess
) -> None:
    server = demo_site_process_factory(site="recrawl", articles=PAGES)
    # claims last for one run of a worker, and a page fetched is not due again before its
    # interval: longer than a round of the three workers here (about 6 s), as an hour
    # is longer than most crawls
    interval = 20
    settings = {
        "SCHEDULER": "scrapy_redis.scheduler.Scheduler",
        "SCHEDULER_PERSIST": "True",
        "DEDUP_URL_BACKEND": "redis",
        "DEDUP_RECRAWL": "True",
        "DEDUP_RECRAWL_FIRST_INTERVAL": str(interval),
        "DEDUP_RECRAWL_MIN_INTERVAL": str(interval),
        "DEDUP_RECRAWL_MAX_INTERVAL": "600",
    }
    run_workers(server, redis_server, settings)
    site, before = RecrawlSite(pages=PAGES), RecrawlSite(pages=PAGES)
    assert server.hits()["by_resource"] == dict.fromkeys(site.resources, 1)
    changed = {"/p/4", "/p/5", "/p/6"}
    for path in changed:
        server._control(f"change/{path[3:]}")
        site.change(int(path[3:]))
    time.sleep(interval + 1)
    server.reset()

    logs = run_workers(server, redis_server, settings)

    hits = server.hits()
    # every page was due: each fetched once, by one of the workers
    assert hits["by_resource"] == dict.fromkeys(site.resources, 1)
    answered = {path: answers_200(site, before, path) for path in site.resources}
    assert hits["by_status"]["304"] == sum(not whole for whole in answered.values())
    assert (
        sum(final_stat(log, "dedup/recrawl/not_modified") for log in logs)
        == hits["by_status"]["304"]
    )
    assert sum(final_stat(log, "item_scraped_count") for log in logs) == len(changed)
    # the pages only the idle hand-off finds were shared out: more than one worker fetched
    assert sum(1 for log in logs if final_stat(log, "downloader/response_count")) >= 2

    # the shared records, read and reset with the commands
    shared = ["-s", "DEDUP_URL_BACKEND=redis", "-s", f"REDIS_URL={redis_server.url}"]
    page = f"{server.url}p/4"
    shown = scrapy_command("dedup-inspect", "--json", "--url", page, *shared)
    assert shown.returncode == 0, shown.stderr
    recrawl = json.loads(shown.stdout)["recrawl"]
    assert recrawl["records"] == len(site.resources) and recrawl["due_now"] == 0
    assert recrawl["urls"][0]["record"]["interval_seconds"] == interval  # changed: the minimum
    reset = scrapy_command("dedup-forget", "--recrawl", page, *shared)
    assert reset.stdout.split() == ["reset", page], reset.stderr
    shown = scrapy_command("dedup-inspect", "--json", "--url", page, *shared)
    assert json.loads(shown.stdout)["recrawl"]["due_now"] == 1
