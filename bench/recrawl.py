"""Recrawls of a site that changes between crawls: what each way of crawling again costs and
what it finds (issue 33's benchmark).

Usage (from the repository root)::

    .venv/bin/python bench/recrawl.py [--pages 2000] [--rounds 5] [--json out.json]

* **Site.** ``python -m crawler.demo.server --site recrawl`` (:mod:`crawler.demo.recrawl_site`):
  ``--pages`` pages under listing pages; before each recrawl ``/__demo/advance`` changes 5% of
  the pages (a new version, named in the title), adds 1% and removes 1%; a third of the pages
  send an ``ETag``, a third ``Last-Modified``, the rest neither; one in 37 answers 200 to
  conditional requests, one in 123 keeps its ``ETag`` when it changes, and one in 5 names the
  round in a footer (new bytes every round, the same main text). The server counts requests by
  status (``304`` included).
* **Crawls.** ``scrapy crawl site`` of the demo project, one process each, every way once a
  round, in the same order each round, each keeping its own state from round to round:
  *stock* (Scrapy, ``RFPDupeFilter``, no state: every page again), *HTTP cache* (stock with
  ``HttpCacheMiddleware`` and ``RFC2616Policy``: the validators sent, every response's body on
  disk), *TTL* (the add-on with a state directory and ``DEDUP_URL_TTL = --ttl``: every page
  due again at each round, as a daily TTL with daily rounds), *schedule* (the add-on with a
  state directory and ``DEDUP_RECRAWL``, its intervals scaled so that ``--ttl`` seconds stand
  for a day: the first interval one day, the shortest an hour, the longest 14 days). The TTL
  must outlast one crawl (a page linked again later in the same crawl would be downloaded
  again) and be over by the next: the benchmark waits before each TTL and schedule crawl
  until 1.25 TTL has passed since its previous one ended (``DEDUP_URL_TTL_GENERATIONS``
  slices: at most a quarter of the TTL late).
* **Figures, per recrawl (the rounds after the first), summed over the rounds:** requests and
  how many were answered 304, bytes of the bodies the server sent, items emitted, the pages (not
  listings: their main text need not change with their links) whose version changed that reached
  the feed with their new title (*changed picked up*, of how many; *late* those picked up a
  round or more after the round they changed in, as a schedule does for a page whose interval
  grew; *waiting at the end* those not picked up after the last round: not due yet, or missed),
  items of an old version of a page or of a page removed (*stale*: a cache answering for the
  server), the pages whose version did not change that reached the feed again (*unchanged re-
  emitted*, the target being 0; listings are in neither count), and the state each way keeps on
  disk after the last round.
"""

from __future__ import annotations

import argparse
import html
import json
import re
import shlex
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from learned_rules import control, start_server
from machine import machine_facts
from redis_urlfilter import local_redis_server
from scrapy.settings import Settings

from crawler.demo.recrawl_site import RecrawlSite
from crawler.redis.connection import RedisConnection
from crawler.state.persistence import read_header
from crawler.url.canonical import UrlCanonicalizer
from crawler.url.configuration import url_rules_from_settings
from crawler.url.recrawl_records import RecrawlRecord, encode
from crawler.url.recrawl_redis_store import RedisRecrawlStore
from crawler.url.recrawl_store import RecrawlStore
from crawler.url.request_keys import request_key

REPO_ROOT = Path(__file__).resolve().parent.parent
TITLE = re.compile(rb"<title>(.*?)</title>", re.DOTALL)
TTL_MODE = "TTL (DEDUP_URL_TTL)"
SCHEDULE_MODE = "schedule (DEDUP_RECRAWL)"
WAITING_MODES = (TTL_MODE, SCHEDULE_MODE)
STOCK = ["-s", "ADDONS={}", "-s", "DUPEFILTER_CLASS=scrapy.dupefilters.RFPDupeFilter"]


def modes(state: Path, ttl: float) -> dict[str, list[str]]:
    """Each way of crawling again, with the settings that make it, its state under *state*."""
    return {
        "stock": STOCK,
        "HTTP cache (RFC2616Policy)": [
            *STOCK,
            *("-s", "HTTPCACHE_ENABLED=True", "-s", f"HTTPCACHE_DIR={state / 'httpcache'}"),
            *("-s", "HTTPCACHE_POLICY=scrapy.extensions.httpcache.RFC2616Policy"),
        ],
        TTL_MODE: [
            *("-s", f"DEDUP_STATE_DIR={state / 'dedup'}", "-s", f"DEDUP_URL_TTL={ttl:g}"),
        ],
        SCHEDULE_MODE: [
            *("-s", f"DEDUP_STATE_DIR={state / 'schedule'}", "-s", "DEDUP_RECRAWL=True"),
            *("-s", f"DEDUP_RECRAWL_FIRST_INTERVAL={round(ttl)}"),
            *("-s", f"DEDUP_RECRAWL_MIN_INTERVAL={max(1, round(ttl / 24))}"),
            *("-s", f"DEDUP_RECRAWL_MAX_INTERVAL={round(ttl * 14)}"),
        ],
    }


def crawl(url: str, settings: list[str], feed: Path) -> dict[str, Any]:
    control(url, "reset")
    command = [sys.executable, "-m", "scrapy", "crawl", "site", "-a", f"url={url}"]
    command += ["-s", "LOG_LEVEL=INFO", "-o", f"{feed}:jsonlines", *settings]
    started_at = time.time()
    started = time.perf_counter()
    completed = subprocess.run(command, cwd=REPO_ROOT, capture_output=True, text=True)
    seconds = time.perf_counter() - started
    if completed.returncode:
        raise RuntimeError(f"crawl failed:\n{completed.stderr[-3000:]}")
    hits = control(url, "hits")
    items = [json.loads(line) for line in feed.read_text().splitlines() if line]
    feed.unlink()
    return {
        "seconds": seconds,
        "started_at": started_at,
        "requests": hits["total"],
        "not_modified": hits["by_status"].get("304", 0),
        "bytes": hits["body_bytes"],
        "emitted": [
            ("/" + urlsplit(item["url"]).path.lstrip("/"), item["title"]) for item in items
        ],
    }


def title_of(body: bytes) -> str:
    """The ``<title>`` of a page, as the spider's item holds it."""
    found = TITLE.search(body)
    return html.unescape(found.group(1).decode()).strip() if found else ""


def disk_bytes(path: Path) -> int:
    return sum(file.stat().st_size for file in path.rglob("*") if file.is_file())


def recorded_pages(state_dir: Path) -> dict[str, int]:
    """How many pages the schedule's records hold in *state_dir*, and their files' bytes."""
    header = read_header(state_dir / "recrawl.snapshot") or {}
    store = RecrawlStore(state_dir, header.get("signature", {}))
    store.open()
    pages = len(store)
    store.close()
    return {"pages": pages, "bytes": store.disk_bytes()}


def overdue(
    state_dir: Path, base_url: str, waiting: dict[str, int], runs: list[dict[str, Any]]
) -> set[str]:
    """The pages of *waiting* (changed, not picked up) that were due when the last crawl
    started: missed, where the others are within their interval; a new page without a
    record is named ``new:<path>`` (it waits for a page that links it to be due)."""
    header = read_header(state_dir / "recrawl.snapshot") or {}
    store = RecrawlStore(state_dir, header.get("signature", {}))
    store.open()
    canonicalize = UrlCanonicalizer(url_rules_from_settings(Settings()))
    missed = set()
    for path in waiting:
        record = store.get(request_key("GET", canonicalize(base_url + path.lstrip("/"))))
        if record is None:
            missed.add(f"new:{path}")
        elif record.due_at <= runs[-1]["started_at"]:
            missed.add(path)
    store.close()
    return missed


def records_at_scale(count: int) -> dict[str, float]:
    """Bytes a URL of *count* records like the demo site's, on disk and in memory."""
    with tempfile.TemporaryDirectory(prefix="recrawl-records-") as scratch:
        tracemalloc.start()
        store = RecrawlStore(Path(scratch), {}, snapshot_every=count * 2)
        store.open()
        url_chars = 0
        for number in range(count):
            url = f"https://www.example.com/section-{number % 50}/{number}-a-title-in-words.html"
            url_chars += len(url)
            etag = f'"{number:x}-5f3a1c2b"'.encode() if number % 3 == 0 else None
            modified = 1_700_000_000 + number if number % 3 == 1 else None
            record = RecrawlRecord(
                1_750_000_000, 86_400, etag, modified, number * 7919, body_hash=number * 104_729
            )
            store.put(request_key("GET", url), url, record)
        memory = tracemalloc.get_traced_memory()[0]
        tracemalloc.stop()
        store.close()
        return {
            "disk": store.disk_bytes() / count,
            "memory": memory / count,
            "url_chars": url_chars / count,
        }


def redis_records_at_scale(count: int) -> dict[str, float]:
    """Bytes of Redis memory a URL of *count* shared records like :func:`records_at_scale`'s
    (``used_memory`` before and after), on a new local ``redis-server``."""
    import redis

    with local_redis_server() as url:
        client = redis.Redis.from_url(url)
        store = RedisRecrawlStore(RedisConnection(url), "bench:dupefilter", {})
        before = client.info("memory")["used_memory"]
        pipeline = client.pipeline(transaction=False)
        for number in range(count):
            page = f"https://www.example.com/section-{number % 50}/{number}-a-title-in-words.html"
            etag = f'"{number:x}-5f3a1c2b"'.encode() if number % 3 == 0 else None
            modified = 1_700_000_000 + number if number % 3 == 1 else None
            record = RecrawlRecord(
                1_750_000_000, 86_400, etag, modified, number * 7919, body_hash=number * 104_729
            )
            key = request_key("GET", page)
            encoded = encode(record)
            value = bytes((len(encoded),)) + encoded + page.encode()
            pipeline.hset(store.bucket(key), key, value)
            if number % 10_000 == 9_999:
                pipeline.execute()
        pipeline.execute()
        client.set(store.count_keys[0], count)
        used = client.info("memory")["used_memory"] - before
        return {"memory": used / count}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pages", type=int, default=2000, help="pages of the site")
    parser.add_argument("--rounds", type=int, default=5, help="recrawls after the first crawl")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument(
        "--ttl",
        type=float,
        default=120,
        help="DEDUP_URL_TTL of the TTL crawls, longer than one crawl (seconds)",
    )
    parser.add_argument(
        "--records",
        type=int,
        default=0,
        help="also measure the bytes a URL of so many recrawl records (e.g. 1000000)",
    )
    parser.add_argument("--json", type=Path, help="write the raw numbers here")
    args = parser.parse_args(argv)
    began = time.perf_counter()
    model = RecrawlSite(pages=args.pages, seed=args.seed)
    server, url = start_server(args.pages, args.seed, "recrawl")
    runs: dict[str, list[dict[str, Any]]] = {}
    changed_in_round: list[int] = []
    with tempfile.TemporaryDirectory(prefix="recrawl-bench-") as scratch:
        state = Path(scratch)
        ways = modes(state, args.ttl)
        runs = {mode: [] for mode in ways}
        ended = dict.fromkeys(WAITING_MODES, 0.0)  # when its last crawl ended
        # by way: the pages changed and not yet in its feed with their new title -> the
        # round they changed in
        waiting: dict[str, dict[str, int]] = {mode: {} for mode in ways}
        try:
            for number in range(args.rounds + 1):
                before = {path: model.resolve(path).body for path in model.resources}
                if number:
                    control(url, "advance")
                    model.advance()
                after = {path: model.resolve(path).body for path in model.resources}
                # pages whose version (in their title) moved, not listings: a listing
                # changes with the links it lists, and its main text need not; nor the
                # footer of a page that names the round it is served in
                changed = {
                    path
                    for path in after
                    if path.startswith("/p/")
                    and (path not in before or title_of(before[path]) != title_of(after[path]))
                }
                changed_in_round.append(len(changed))
                titles = {path: title_of(body) for path, body in after.items()}
                for mode, settings in ways.items():
                    if mode in WAITING_MODES:  # a day passed since its last crawl
                        time.sleep(max(0.0, ended[mode] + args.ttl * 1.25 + 1 - time.monotonic()))
                    run = crawl(url, settings, state / "feed.jsonl")
                    if mode in WAITING_MODES:
                        ended[mode] = time.monotonic()
                    emitted = run.pop("emitted")
                    current = {path for path, title in emitted if titles.get(path) == title}
                    pending = waiting[mode]
                    for path in changed:
                        pending.setdefault(path, number)
                    for path in set(pending) - set(after):  # removed: nothing to pick up
                        del pending[path]
                    picked = {path: number - pending.pop(path) for path in current & set(pending)}
                    run["items"] = len(emitted)
                    run["stale"] = len(emitted) - len(current)
                    run["changed"] = len(changed)
                    run["changed_picked_up"] = len(picked)
                    run["late"] = sum(1 for rounds in picked.values() if rounds)
                    run["latest"] = max(picked.values(), default=0)
                    run["waiting"] = len(pending)
                    run["unchanged_re_emitted"] = (
                        sum(1 for path in current - set(picked) if path.startswith("/p/"))
                        if number
                        else 0
                    )
                    runs[mode].append(run)
            state_bytes = {
                mode: disk_bytes(state / part)
                for mode, part in zip(ways, ("none", "httpcache", "dedup", "schedule"), strict=True)
            }
            records = recorded_pages(state / "schedule")
            missed = overdue(state / "schedule", url, waiting[SCHEDULE_MODE], runs[SCHEDULE_MODE])
        finally:
            server.terminate()
            server.wait()

    resources = len(model.resources)
    print(
        f"# Recrawls: {args.rounds} rounds after the first crawl ({resources} pages at the end)\n"
    )
    print(
        "| crawl | requests | 304 | body bytes sent | items | changed picked up | late (most) "
        "| waiting at the end | stale | unchanged re-emitted | state on disk |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for mode, mode_runs in runs.items():
        later = mode_runs[1:]
        print(
            f"| {mode} | {sum(r['requests'] for r in later)} "
            f"| {sum(r['not_modified'] for r in later)} "
            f"| {sum(r['bytes'] for r in later):,} | {sum(r['items'] for r in later)} "
            f"| {sum(r['changed_picked_up'] for r in later)} of {sum(r['changed'] for r in later)} "
            f"| {sum(r['late'] for r in later)} ({max(r['latest'] for r in later)} rounds) "
            f"| {later[-1]['waiting']} | {sum(r['stale'] for r in later)} "
            f"| {sum(r['unchanged_re_emitted'] for r in later)} | {state_bytes[mode]:,} |"
        )
    record_bytes = records["bytes"]
    new = {path for path in missed if path.startswith("new:")}
    print(
        "\nThe schedule's pages waiting at the end that were due at its last crawl (missed): "
        f"{len(missed - new)} {sorted(missed - new)[:10]}; new pages not found yet (their "
        f"listing page was not due): {len(new)}; the others are within their interval."
    )
    print(
        f"The schedule's records: {records['pages']} pages, {record_bytes:,} bytes on disk "
        f"({record_bytes / max(1, records['pages']):.1f} a page; the rest of its state is the "
        "seen URLs' Bloom filter, allocated whole, and the content index)."
    )
    if args.records:
        scale = records_at_scale(args.records)
        shared = redis_records_at_scale(args.records)
        print(
            f"At {args.records:,} URLs (synthetic records, URLs of {scale['url_chars']:.0f} "
            f"characters on average): {scale['disk']:.1f} bytes a URL on disk, "
            f"{scale['memory']:.1f} in memory; shared in Redis, {shared['memory']:.1f} bytes "
            "a URL of used_memory."
        )
    print(f"\nMachine: {json.dumps(machine_facts('scrapy'))}")
    print(
        f"Command: `{shlex.join([sys.executable, *sys.argv])}`; {time.perf_counter() - began:.0f} s"
    )
    if args.json:
        args.json.write_text(json.dumps({"runs": runs, "changed": changed_in_round}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
