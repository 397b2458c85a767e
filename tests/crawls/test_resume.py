"""Crash-safe resume: kill -9 a real crawl with JOBDIR, start it again, count at the server."""

from __future__ import annotations

import json
import os
import pickle
import pwd
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

import pytest
from scrapy.pqueues import _path_safe
from scrapy.settings import Settings

from crawler.dupefilters import url_rules_from_settings, url_signature
from crawler.url.frontier import Frontier
from crawler.url.request_meta import META_KEY
from crawler.url.stores.bloom import BloomSeenSet

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

    from crawler.demo.site import DemoSite
    from tests.conftest import DemoSiteProcess

from tests.conftest import (
    REPO_ROOT,
    _child_env,
    crawl_stat,
    final_stat,
    run_scrapy,
    scrapy_crawl_command,
)

# Slow enough that the kill lands mid-crawl, whatever the machine.
CRAWL_SETTINGS = {
    "CONCURRENT_REQUESTS": "4",
    "DOWNLOAD_DELAY": "0.03",
    "RANDOMIZE_DOWNLOAD_DELAY": "False",
    "LOG_LEVEL": "INFO",
}
STOCK = {"ADDONS": "{}", "DUPEFILTER_CLASS": "scrapy.dupefilters.RFPDupeFilter"}


def crawl_command(url: str, jobdir: Path, extra: dict[str, str]) -> list[str]:
    command = scrapy_crawl_command(url)
    for name, value in {**CRAWL_SETTINGS, "JOBDIR": str(jobdir), **extra}.items():
        command += ["-s", f"{name}={value}"]
    return command


def kill_mid_crawl(server: DemoSiteProcess, command: list[str], after_hits: int) -> dict:
    """Run *command*, SIGKILL it once the server answered *after_hits* requests."""
    kill_when(command, lambda: server.hits()["total"] >= after_hits)
    return server.hits()


def kill_when(command: list[str], ready: Callable[[], bool], settle: float = 0.0) -> None:
    """Run *command*, SIGKILL it *settle* seconds after *ready* returns true."""
    process = subprocess.Popen(
        command,
        cwd=REPO_ROOT,
        env=_child_env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 60
    try:
        while not ready():
            assert process.poll() is None, "the crawl ended before it could be killed"
            assert time.monotonic() < deadline, "the crawl made no progress"
            time.sleep(0.005)
        time.sleep(settle)
        os.kill(process.pid, signal.SIGKILL)
    finally:
        process.wait()
    assert process.returncode == -signal.SIGKILL


def html_pages(site: DemoSite) -> set[str]:
    return {resource for resource in site.resources if site.resolve(resource).is_html}


def exported_resources(site: DemoSite, feed: Path) -> list[str]:
    """The resource of each item in *feed*, a JSON lines file, in order."""
    resources = []
    for line in feed.read_text("utf-8").splitlines():
        parts = urlsplit(json.loads(line)["url"])
        resource = site.resolve(parts.path + (f"?{parts.query}" if parts.query else ""))
        assert resource.resource_id is not None, line
        resources.append(resource.resource_id)
    return resources


def pending_resources(
    server: DemoSiteProcess, state_dir: Path, capacity: int = 10_000_000
) -> set[str]:
    """Resources of the requests the frontier in *state_dir* will schedule again."""
    return set(pending_requests(server, state_dir, capacity))


def pending_requests(
    server: DemoSiteProcess, state_dir: Path, capacity: int = 10_000_000
) -> Counter[str]:
    """For each resource of a request the frontier in *state_dir* will schedule again,
    how many of that request's items it recorded as written (left out on the restart)."""
    settings = Settings({"JOBDIR": str(state_dir)})
    signature = url_signature(url_rules_from_settings(settings), BloomSeenSet(capacity, 0.001))
    frontier = Frontier(state_dir, signature)
    serialized, queue_persisted = frontier.open()
    assert not queue_persisted
    model = server.model()
    settled: Counter[str] = Counter()
    for payload in serialized:
        request = pickle.loads(payload)
        parts = urlsplit(request["url"])
        target = parts.path + (f"?{parts.query}" if parts.query else "")
        resolution = model.resolve(target)
        if resolution.resource_id is not None:
            key = request["meta"].get(META_KEY)
            settled[resolution.resource_id] += frontier.settled_items.get(key, 0)
    return settled


def feed_resources(site: DemoSite, feed: Path) -> Counter[str]:
    return Counter(exported_resources(site, feed)) if feed.exists() else Counter()


def test_kill_9_and_restart_downloads_every_page_once(demo_site_process_factory, tmp_path):
    server = demo_site_process_factory()
    resources = server.model().resources
    command = crawl_command(server.url, tmp_path / "job", {})

    at_kill = kill_mid_crawl(server, command, after_hits=len(resources) // 3)
    missing_at_kill = resources - set(at_kill["by_resource"])
    assert missing_at_kill, "the kill came after the crawl had downloaded everything"
    in_flight = pending_resources(server, tmp_path / "job") & set(at_kill["by_resource"])

    log = run_scrapy(command)
    assert "Scheduling again" in log

    by_resource = server.hits()["by_resource"]
    assert set(by_resource) == resources  # nothing lost
    downloaded_twice = {r for r, count in by_resource.items() if count > 1}
    # only pages whose download had started but whose callback had not finished
    assert downloaded_twice <= in_flight
    assert all(count <= 2 for count in by_resource.values())


@pytest.mark.parametrize("item_keys", [False, True])
def test_ten_kills_lose_no_page_and_repeat_only_work_in_flight(
    demo_site_process_factory, tmp_path, item_keys
):
    """kill -9 ten times across one crawl, then let it finish: every page is downloaded,
    and a page is downloaded again only as often as a kill caught it in flight
    (downloaded, its links not yet all scheduled), the start page once a run; every
    article is in the feed once, with item keys too, but where a kill fell between the
    feed's write of an item and the frontier's record of it (two files: no order of the
    two writes closes that gap without risking the item's loss instead)."""
    server = demo_site_process_factory()
    model = server.model()
    resources = model.resources
    jobdir = tmp_path / "job"
    output = tmp_path / "items.jsonl"
    settings = {"DEDUP_CONTENT_WORKERS": "0"}
    if item_keys:  # a copy has its article's headline: dropped by either level
        settings["DEDUP_ITEM_KEY_FIELDS"] = "headline"
    command = crawl_command(server.url, jobdir, settings)
    command += ["-o", str(output)]  # each run appends
    caught_in_flight: Counter[str] = Counter()
    # items written by a run whose request the frontier had not yet recorded as written
    killed_before_record: Counter[str] = Counter()
    kills = 10
    for _ in range(kills):
        in_feed_before = feed_resources(model, output)
        at_kill = kill_mid_crawl(server, command, after_hits=server.hits()["total"] + 3)
        pending = pending_requests(server, jobdir)
        caught_in_flight.update(set(pending) & set(at_kill["by_resource"]))
        written_by_run = feed_resources(model, output) - in_feed_before
        killed_before_record.update(
            model.near_duplicates.get(resource, resource)
            for resource in pending
            if written_by_run[resource] > pending[resource]
        )

    log = run_scrapy(command)
    assert "Traceback" not in log
    by_resource = server.hits()["by_resource"]
    assert set(by_resource) == resources  # nothing lost
    start_page = model.resolve("/").resource_id
    for resource, downloads in by_resource.items():
        runs = kills + 1 if resource == start_page else 1
        assert downloads <= runs + caught_in_flight[resource], resource
    assert sum(by_resource.values()) < 2 * len(resources)  # not every page again

    # every article in the feed once: the page itself, or one copy of it kept in its place
    # when the kill had taken the article's item before it was written
    articles = {model.near_duplicates.get(page, page) for page in html_pages(model)}
    exported = Counter(
        model.near_duplicates.get(resource, resource)
        for resource in exported_resources(model, output)
    )
    assert set(exported) == articles
    written_again = [
        article for article, times in exported.items() if times > 1 + killed_before_record[article]
    ]
    assert written_again == []


def test_a_request_is_recorded_finished_only_after_its_item_is_in_the_feed(
    demo_site_server, tmp_path
):
    """The feed writes an item and the frontier records its request finished on one
    signal, item_scraped: the frontier must come second, or a kill between the two loses
    the item, and it must come at once, or a kill between the two writes it twice."""
    output = tmp_path / "items.jsonl"
    command = crawl_command(
        demo_site_server.url,
        tmp_path / "job",
        {"EXTENSIONS": json.dumps({"tests.probes.feed_order_probe.FeedOrderProbe": 0})},
    )
    log = run_scrapy([*command, "-o", str(output)])
    articles = final_stat(log, "item_scraped_count")
    assert final_stat(log, "test/finished_after_item") == articles > 0
    assert crawl_stat(log, "test/finished_before_feed") is None


@pytest.mark.parametrize("item_keys", [False, True])
def test_a_kill_after_the_items_but_before_the_links_writes_no_item_twice(
    demo_site_process_factory, tmp_path, item_keys
):
    """A callback that yields its item and then its links: killed once the item is in the
    feed and before the links are all scheduled, the restart downloads the page again for
    its links, and leaves its item out."""
    server = demo_site_process_factory()
    model = server.model()
    output = tmp_path / "items.jsonl"
    spider = tmp_path / "slow_links.py"
    spider.write_text(SLOW_LINKS_SPIDER)
    settings = {"DEDUP_ITEM_KEY_FIELDS": "url"} if item_keys else {}
    settings["JOBDIR"] = str(tmp_path / "job")
    command = [sys.executable, "-m", "scrapy", "runspider", str(spider), "-a", f"url={server.url}"]
    for name, value in {**CRAWL_SETTINGS, **settings}.items():
        command += ["-s", f"{name}={value}"]
    command += ["-o", str(output)]

    # killed once the start page's item is written, its links held back by the pause
    kill_when(
        [*command, "-a", "pause=30"],
        lambda: output.exists() and bool(output.read_text("utf-8")),
        settle=0.5,
    )
    start_page = model.resolve("/").resource_id
    assert set(server.hits()["by_resource"]) == {start_page}  # no link was followed yet

    log = run_scrapy(command)
    assert "Traceback" not in log
    assert final_stat(log, "dedup/url/resumed_items_skipped") == 1
    exported = Counter(exported_resources(model, output))
    assert [resource for resource, times in exported.items() if times > 1] == []
    # the spider's items hold no page: the content level checks each on the page it came
    # from, and keeps each document once (its page, or a copy checked first)
    originals = model.near_duplicates
    documents = Counter(originals.get(resource, resource) for resource in exported)
    assert documents == Counter(html_pages(model) - set(originals))


SLOW_LINKS_SPIDER = """
import asyncio
from urllib.parse import urlsplit

import scrapy


class SlowLinksSpider(scrapy.Spider):
    \"\"\"Yields each page's URL, then (after *pause* seconds on the start page) its links.\"\"\"

    name = "slow_links"

    def __init__(self, url, pause="0", **kwargs):
        super().__init__(**kwargs)
        self.start_url = url
        self.allowed_domains = [urlsplit(url).hostname]
        self.pause = float(pause)

    async def start(self):
        yield scrapy.Request(self.start_url)

    async def parse(self, response):
        if not isinstance(response, scrapy.http.HtmlResponse):
            return
        yield {"url": response.url}
        if response.url == self.start_url:
            await asyncio.sleep(self.pause)
        for href in response.css("a::attr(href)").getall():
            if urlsplit(response.urljoin(href)).scheme in ("http", "https"):
                yield response.follow(href)
"""


def test_a_scheduler_queue_torn_by_kill_9_loses_nothing(demo_site_process_factory, tmp_path):
    """Scrapy's own request queue (JOBDIR/requests.queue) is not crash-safe: a kill can
    leave a queue file without its header, and the scheduler then fails on the first
    request it queues, so every request the frontier schedules again is lost. The next
    start removes that queue and schedules its requests from the frontier journal."""
    server = demo_site_process_factory()
    resources = server.model().resources
    command = crawl_command(server.url, tmp_path / "job", {})
    kill_mid_crawl(server, command, after_hits=len(resources) // 3)
    # what a kill while Scrapy creates a queue file leaves: the file of the downloader
    # slot's priority-0 requests (where resumed requests go first), its header unwritten
    slot_queue = tmp_path / "job" / "requests.queue" / _path_safe(urlsplit(server.url).hostname)
    slot_queue.mkdir(parents=True, exist_ok=True)
    (slot_queue / "0").write_bytes(b"\x00\x00")

    log = run_scrapy(command)
    assert "Traceback" not in log
    assert "Scrapy's request queue of a run that stopped uncleanly" in log
    assert set(server.hits()["by_resource"]) == resources  # nothing lost


def test_stock_scrapy_loses_or_repeats_pages_after_kill_9(demo_site_process_factory, tmp_path):
    """The failure this feature fixes, measured on the same site with RFPDupeFilter.

    Scrapy writes ``requests.seen`` through a file buffer: a kill before the buffer
    fills (about 370 URLs) loses the fingerprints, and the restart downloads every
    page again; a kill after it loses every page that was still queued.
    """
    server = demo_site_process_factory()
    resources = server.model().resources
    command = crawl_command(server.url, tmp_path / "job", STOCK)

    at_kill = kill_mid_crawl(server, command, after_hits=len(resources) // 3)
    downloaded_at_kill = set(at_kill["by_resource"])
    run_scrapy(command)

    by_resource = server.hits()["by_resource"]
    never_downloaded = resources - set(by_resource)
    downloaded_twice = {r for r, count in by_resource.items() if count > 1}
    in_flight_at_most = int(CRAWL_SETTINGS["CONCURRENT_REQUESTS"])
    assert never_downloaded or (
        len(downloaded_twice) >= len(downloaded_at_kill) - in_flight_at_most
    )


def test_the_dupefilter_alone_resumes_too_and_says_what_it_lacks(
    demo_site_process_factory, tmp_path
):
    """DUPEFILTER_CLASS set by hand, without the add-on's FrontierMiddleware: a request
    counts as finished when its download ends, so a restart after kill -9 downloads again
    only what was in flight, and the crawl says once, at WARNING, how to do better."""
    server = demo_site_process_factory()
    resources = server.model().resources
    alone = {"ADDONS": "{}", "DUPEFILTER_CLASS": "crawler.dupefilters.URLDupeFilter"}
    command = crawl_command(server.url, tmp_path / "job", alone)

    at_kill = kill_mid_crawl(server, command, after_hits=len(resources) // 3)
    downloaded_at_kill = set(at_kill["by_resource"])
    assert resources - downloaded_at_kill, "the kill came after the crawl had downloaded all"

    log = run_scrapy(command)
    warnings = [line for line in log.splitlines() if "without crawler.middlewares" in line]
    assert len(warnings) == 1 and "WARNING" in warnings[0]
    by_resource = server.hits()["by_resource"]
    downloaded_twice = {r for r, count in by_resource.items() if count > 1}
    in_flight_at_most = int(CRAWL_SETTINGS["CONCURRENT_REQUESTS"])
    assert len(downloaded_twice) <= in_flight_at_most  # not every page again
    # what only a page being parsed at the kill links to may be lost: on this site, at most
    # an article's three copies (in three runs here: none)
    assert len(resources - set(by_resource)) <= in_flight_at_most * 3


def test_no_warning_with_the_frontier_middleware(demo_site_process_factory, tmp_path):
    server = demo_site_process_factory()
    log = run_scrapy(crawl_command(server.url, tmp_path / "job", {}))
    assert "without crawler.middlewares" not in log


STATE_FILES = [
    "seen-urls.snapshot",
    "seen-urls.journal",
    "frontier.journal",
    "content-index.snapshot",
    "content-index.journal",
    "seen-items.snapshot",
    "seen-items.journal",
]
# with every file of the table in docs/persistence.md: item keys too
WHOLE_STATE = {"DEDUP_ITEM_KEY_FIELDS": "headline"}


@pytest.mark.parametrize(
    "deleted", [*STATE_FILES, "seen-urls.*", "content-index.*", "seen-items.*"]
)
def test_a_deleted_state_file_is_refused_not_reset(demo_site_process_factory, tmp_path, deleted):
    """A restart never forgets silently: the crawl stops before its spider opens, as a bad
    setting stops it (one error, no other failure after it), naming the missing file; a
    store's snapshot and journal deleted together too."""
    server = demo_site_process_factory()
    command = crawl_command(server.url, tmp_path / "job", WHOLE_STATE)
    run_scrapy(command)
    files = list((tmp_path / "job").glob(deleted))
    assert len(files) == (2 if "*" in deleted else 1)
    for path in files:
        path.unlink()
    server.reset()
    completed = subprocess.run(
        command, cwd=REPO_ROOT, env=_child_env(), capture_output=True, text=True, timeout=120
    )
    assert completed.returncode != 0
    missing = re.escape(str(tmp_path / "job" / deleted)).replace(r"\*", "(journal|snapshot)")
    assert re.search(rf"StateFileError: {missing} is missing", completed.stderr)
    assert "Spider opened" not in completed.stderr
    assert completed.stderr.count("Traceback") == 1
    assert server.hits()["total"] == 0


def truncate(path: Path) -> None:
    """Cut a state file where no kill could have: a snapshot to half its size, a journal
    inside its header (both are written whole under another name, then renamed)."""
    data = path.read_bytes()
    path.write_bytes(data[:10] if data.startswith(b"DEDUPJNL") else data[: len(data) // 2])


def damage(path: Path) -> None:
    """Flip one byte of a state file where no kill could have: in a journal's first record
    when another follows it (else in its header), or in a snapshot's content. (The format:
    8 magic bytes, the header's size in 4 bytes, the header; a record: its size and CRC in
    4 bytes each, then itself.)"""
    data = bytearray(path.read_bytes())
    header_end = 12 + int.from_bytes(data[8:12], "big")
    if not data.startswith(b"DEDUPJNL"):
        at = len(data) - 1
    elif header_end + 8 <= len(data) and header_end + 8 + int.from_bytes(
        data[header_end : header_end + 4], "big"
    ) < len(data):
        at = header_end + 8
    else:
        at = 14
    data[at] ^= 0xFF
    path.write_bytes(bytes(data))


@pytest.mark.parametrize("harm", [damage, truncate])
@pytest.mark.parametrize("damaged", STATE_FILES)
def test_a_damaged_state_file_is_refused_before_the_spider_opens(
    demo_site_process_factory, tmp_path, damaged, harm
):
    """A corrupt file is never read as empty: the crawl stops while it is built, with one
    error naming the file (before: the spider opened and closed under follow-on
    tracebacks)."""
    server = demo_site_process_factory()
    # snapshots every 5 additions, and journals with records after them
    command = crawl_command(
        server.url, tmp_path / "job", {**WHOLE_STATE, "DEDUP_SNAPSHOT_EVERY": "5"}
    )
    kill_mid_crawl(server, command, after_hits=30)
    harm(tmp_path / "job" / damaged)
    server.reset()
    completed = subprocess.run(
        command, cwd=REPO_ROOT, env=_child_env(), capture_output=True, text=True, timeout=120
    )
    assert completed.returncode != 0
    path = re.escape(str(tmp_path / "job" / damaged))
    assert re.search(
        rf"StateFileError: {path} (is corrupt|has an unreadable header|is truncated inside)",
        completed.stderr,
    )
    assert "Spider opened" not in completed.stderr
    assert completed.stderr.count("Traceback") == 1
    assert server.hits()["total"] == 0


@pytest.mark.parametrize("content_dedup", [True, False])
def test_a_second_crawl_on_the_same_jobdir_is_refused(
    demo_site_process_factory, tmp_path, content_dedup
):
    """Two crawls on one JOBDIR would append to the same journals (and the second would
    remove Scrapy's request queue, which the first is using): the second stops before its
    spider opens, naming the setting and the process; the first goes on and loses nothing.
    Without the content level, the URL level alone holds the directory."""
    server = demo_site_process_factory()
    resources = server.model().resources
    extra = {} if content_dedup else {"DEDUP_CONTENT_ENABLED": "False"}
    command = crawl_command(server.url, tmp_path / "job", extra)
    slow = crawl_command(server.url, tmp_path / "job", {**extra, "DOWNLOAD_DELAY": "0.2"})
    first = subprocess.Popen(
        slow, cwd=REPO_ROOT, env=_child_env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    try:
        deadline = time.monotonic() + 60
        while server.hits()["total"] < 3:
            assert first.poll() is None and time.monotonic() < deadline
            time.sleep(0.01)
        second = subprocess.run(
            command, cwd=REPO_ROOT, env=_child_env(), capture_output=True, text=True, timeout=120
        )
        assert first.poll() is None, "the first crawl ended before the second started"
    finally:
        _, first_log = first.communicate(timeout=120)
    assert second.returncode != 0
    assert re.search(
        rf"StateDirInUseError: {re.escape(str(tmp_path / 'job'))} is in use by another crawl "
        rf"\(process {first.pid}\): two crawls writing one JOBDIR",
        second.stderr,
    )
    assert "Spider opened" not in second.stderr
    assert second.stderr.count("Traceback") == 1
    assert first.returncode == 0, first_log.decode()[-3000:]
    by_resource = server.hits()["by_resource"]
    assert set(by_resource) == resources
    assert all(count == 1 for count in by_resource.values())
    run_scrapy(command)  # the directory is free again once the first crawl ended


@pytest.mark.parametrize("free_kib", [32, 40])
def test_a_full_state_directory_stops_the_crawl_and_loses_nothing(
    demo_site_process_factory, small_filesystem, tmp_path, free_kib
):
    """The state directory fills up mid-crawl: the crawl stops with an error naming the
    directory and the setting, keeps every item it scraped, and once there is room again
    a restart downloads every page not downloaded yet (and again only what was in flight)."""
    mount_point, grow = small_filesystem
    server = demo_site_process_factory()
    model = server.model()
    resources = model.resources
    output = tmp_path / "items.jsonl"
    state_dir = mount_point / "state"
    settings = {
        "DEDUP_STATE_DIR": str(state_dir),
        "DEDUP_URL_CAPACITY": "10000",  # a 22 KiB Bloom filter
        "CONCURRENT_REQUESTS": "1",
    }
    command = [*crawl_command(server.url, tmp_path / "job", settings), "-o", str(output)]
    # the journals fill what is left within the crawl: another component fails first with
    # 32 KiB than with 40 (with 40, a request was held back whose parent Scrapy's saved
    # queue does not hold: it was lost until the frontier stopped trusting that queue)
    filler = mount_point / "filler"
    filler.write_bytes(b"\0" * ((256 - free_kib) * 1024))
    completed = subprocess.run(
        command, cwd=REPO_ROOT, env=_child_env(), capture_output=True, text=True, timeout=120
    )
    log = completed.stderr
    assert re.search(
        rf"Cannot write the dedup state in {re.escape(str(state_dir))} \(DEDUP_STATE_DIR\): "
        r".*No space left on device.*closing the spider",
        log,
    ), log[-3000:]
    assert "'finish_reason': 'dedup_state_unwritable'" in log
    first = server.hits()["by_resource"]
    assert set(first) < resources, "the directory did not fill up before the crawl ended"

    filler.unlink()
    grow()
    # Downloaded by the first crawl, never recorded finished: what was in flight when the
    # write failed. Even with CONCURRENT_REQUESTS = 1 that is one to three pages, by
    # timing: the response whose record failed, one whose items were still in the content
    # pipeline (Scrapy's scraper holds several responses while the pipeline works), and
    # the request the downloader had taken (Scrapy downloads it while the spider closes).
    in_flight = pending_resources(server, state_dir, capacity=10_000) & set(first)
    log = run_scrapy(command)
    assert "'finish_reason': 'finished'" in log
    assert "Traceback" not in log
    by_resource = server.hits()["by_resource"]
    assert set(by_resource) == resources  # nothing lost
    downloaded_again = {resource for resource, count in by_resource.items() if count > 1}
    assert downloaded_again <= in_flight | {model.resolve("/").resource_id}
    assert all(count <= 2 for count in by_resource.values())
    articles = {model.near_duplicates.get(page, page) for page in html_pages(model)}
    exported = {model.near_duplicates.get(page, page) for page in exported_resources(model, output)}
    assert exported == articles  # each in the feed: kept unchecked before, or kept after


def test_a_read_only_state_directory_is_refused_before_the_spider_opens(
    demo_site_process_factory, tmpfs_factory, tmp_path
):
    """A read-only mount refuses writes to root too: the crawl stops while it is built,
    naming the setting, before it downloads anything it could not record."""
    state_dir = tmpfs_factory("ro,size=64k")
    server = demo_site_process_factory()
    command = crawl_command(server.url, tmp_path / "job", {"DEDUP_STATE_DIR": str(state_dir)})
    completed = subprocess.run(
        command, cwd=REPO_ROOT, env=_child_env(), capture_output=True, text=True, timeout=120
    )
    assert completed.returncode != 0
    assert f"DEDUP_STATE_DIR='{state_dir}' is not writable by this process" in completed.stderr
    assert "Spider opened" not in completed.stderr
    assert completed.stderr.count("Traceback") == 1
    assert server.hits()["total"] == 0


@pytest.mark.parametrize("journal", ["seen-urls.journal", "frontier.journal"])
def test_an_empty_journal_in_place_of_a_deleted_one_goes_on(
    demo_site_process_factory, tmp_path, journal
):
    """The way out that the refusal of a deleted journal names: an empty file in its place
    goes on from what is left (a finished crawl has nothing after its snapshot, and
    nothing pending)."""
    server = demo_site_process_factory()
    command = crawl_command(server.url, tmp_path / "job", {})
    run_scrapy(command)
    (tmp_path / "job" / journal).unlink()
    (tmp_path / "job" / journal).touch()
    server.reset()
    log = run_scrapy(command)
    assert "Traceback" not in log
    assert "'finish_reason': 'finished'" in log
    assert server.hits()["total"] <= 1  # the start page, which is never filtered


def run_as_nobody(command: list[str]) -> subprocess.CompletedProcess[str]:
    """Run *command* as the user ``nobody`` (which file modes bind, unlike root)."""
    as_nobody = ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", *command]
    return subprocess.run(
        as_nobody, cwd=REPO_ROOT, env=_child_env(), capture_output=True, text=True, timeout=120
    )


@pytest.fixture
def shared_tmp_dir() -> Iterator[Path]:
    """A directory outside pytest's (which only root can enter), for another user's crawl;
    skips unless this process is root and that user can run this checkout's Python."""
    if os.geteuid() != 0 or shutil.which("setpriv") is None:
        pytest.skip("running a crawl as another user takes root and setpriv")
    probe = run_as_nobody([sys.executable, "-c", "import crawler, scrapy"])
    if probe.returncode:
        pytest.skip(f"user nobody cannot run this checkout: {probe.stderr.strip()[-300:]}")
    directory = Path(tempfile.mkdtemp(prefix="dedup-other-user-"))
    directory.chmod(0o755)
    yield directory
    shutil.rmtree(directory)


@pytest.mark.parametrize("read_only", [".", *STATE_FILES, "crawl.lock"])
def test_state_another_user_cannot_write_is_refused_before_the_spider_opens(
    demo_site_process_factory, shared_tmp_dir, read_only
):
    """The state directory, or one file in it, is read-only for the user running the
    crawl: it stops while it is built, naming the directory or the file, before it
    downloads anything it could not record."""
    server = demo_site_process_factory()
    state_dir = shared_tmp_dir / "state"
    job_dir = shared_tmp_dir / "job"
    # snapshots every 5 additions, so that each file exists with records after a kill
    settings = {**WHOLE_STATE, "DEDUP_STATE_DIR": str(state_dir), "DEDUP_SNAPSHOT_EVERY": "5"}
    command = crawl_command(server.url, job_dir, settings)
    kill_mid_crawl(server, command, after_hits=30)
    nobody = pwd.getpwnam("nobody")
    for path in [shared_tmp_dir, *shared_tmp_dir.rglob("*")]:
        os.chown(path, nobody.pw_uid, nobody.pw_gid)
    (state_dir / read_only).chmod(0o555 if read_only == "." else 0o444)
    server.reset()
    completed = run_as_nobody(command)
    assert completed.returncode != 0
    if read_only == ".":
        expected = rf"DEDUP_STATE_DIR='{re.escape(str(state_dir))}' is not writable by this process"
    else:
        expected = rf"StateFileError: {re.escape(str(state_dir / read_only))} is not writable"
    assert re.search(expected, completed.stderr), completed.stderr[-3000:]
    assert "Spider opened" not in completed.stderr
    assert completed.stderr.count("Traceback") == 1
    assert server.hits()["total"] == 0
