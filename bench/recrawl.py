"""Recrawls of a site that changes between crawls: what each way of crawling again costs and
what it finds (issue 33's benchmark; the per-URL schedule it asks for is not built yet, so
its row is missing).

Usage (from the repository root)::

    .venv/bin/python bench/recrawl.py [--pages 2000] [--rounds 5] [--json out.json]

* **Site.** ``python -m crawler.demo.server --site recrawl`` (:mod:`crawler.demo.recrawl_site`):
  ``--pages`` pages under listing pages; before each recrawl ``/__demo/advance`` changes 5% of
  the pages, adds 1% and removes 1%; a third of the pages send an ``ETag``, a third
  ``Last-Modified``, the rest neither, and one in 37 answers 200 to conditional requests. The
  server counts requests by status (``304`` included).
* **Crawls.** ``scrapy crawl site`` of the demo project, one process each, every way once a
  round, in the same order each round, each keeping its own state from round to round:
  *stock* (Scrapy, ``RFPDupeFilter``, no state: every page again), *HTTP cache* (stock with
  ``HttpCacheMiddleware`` and ``RFC2616Policy``: the validators sent, every response's body on
  disk), *TTL* (the add-on with a state directory and ``DEDUP_URL_TTL = --ttl``: every page
  due again at each round, as a daily TTL with daily rounds). The TTL must outlast one crawl
  (a page linked again later in the same crawl would be downloaded again) and be over by the
  next: the benchmark waits before each TTL crawl until its previous one's URLs expired
  (``DEDUP_URL_TTL_GENERATIONS`` slices: at most a quarter of the TTL late).
* **Figures, per recrawl (the rounds after the first), summed over the rounds:** requests and
  how many were answered 304, bytes of the bodies the server sent,
  items emitted, the pages whose body changed in the round that reached the feed with their
  new title (*changed picked up*, of how many), items of an old version of a page or of a page
  removed (*stale*: a cache answering for the server), the pages whose body did not change
  that reached the feed again (*unchanged re-emitted*, the target being 0), and the state each
  way keeps on disk after the last round.
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
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from learned_rules import control, start_server
from machine import machine_facts

from crawler.demo.recrawl_site import RecrawlSite

REPO_ROOT = Path(__file__).resolve().parent.parent
TITLE = re.compile(rb"<title>(.*?)</title>", re.DOTALL)
TTL_MODE = "TTL (DEDUP_URL_TTL)"
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
    }


def crawl(url: str, settings: list[str], feed: Path) -> dict[str, Any]:
    control(url, "reset")
    command = [sys.executable, "-m", "scrapy", "crawl", "site", "-a", f"url={url}"]
    command += ["-s", "LOG_LEVEL=INFO", "-o", f"{feed}:jsonlines", *settings]
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
        ttl_ended = 0.0  # when the last TTL crawl ended
        try:
            for number in range(args.rounds + 1):
                before = {path: model.resolve(path).body for path in model.resources}
                if number:
                    control(url, "advance")
                    model.advance()
                after = {path: model.resolve(path).body for path in model.resources}
                changed = {path for path in after if before.get(path) != after[path]}
                changed_in_round.append(len(changed))
                titles = {path: title_of(body) for path, body in after.items()}
                for mode, settings in ways.items():
                    if mode == TTL_MODE:  # every URL of its last crawl forgotten
                        time.sleep(max(0.0, ttl_ended + args.ttl * 1.25 + 1 - time.monotonic()))
                    run = crawl(url, settings, state / "feed.jsonl")
                    if mode == TTL_MODE:
                        ttl_ended = time.monotonic()
                    emitted = run.pop("emitted")
                    current = {path for path, title in emitted if titles.get(path) == title}
                    run["items"] = len(emitted)
                    run["stale"] = len(emitted) - len(current)
                    run["changed"] = len(changed)
                    run["changed_picked_up"] = len(changed & current)
                    run["unchanged_re_emitted"] = len(current - changed) if number else 0
                    runs[mode].append(run)
            state_bytes = {
                mode: disk_bytes(state / part)
                for mode, part in zip(ways, ("none", "httpcache", "dedup"), strict=True)
            }
        finally:
            server.terminate()
            server.wait()

    resources = len(model.resources)
    print(
        f"# Recrawls: {args.rounds} rounds after the first crawl ({resources} pages at the end)\n"
    )
    print(
        "| crawl | requests | 304 | body bytes sent | items | changed picked up | stale "
        "| unchanged re-emitted | state on disk |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for mode, mode_runs in runs.items():
        later = mode_runs[1:]
        print(
            f"| {mode} | {sum(r['requests'] for r in later)} "
            f"| {sum(r['not_modified'] for r in later)} "
            f"| {sum(r['bytes'] for r in later):,} | {sum(r['items'] for r in later)} "
            f"| {sum(r['changed_picked_up'] for r in later)} of {sum(r['changed'] for r in later)} "
            f"| {sum(r['stale'] for r in later)} "
            f"| {sum(r['unchanged_re_emitted'] for r in later)} | {state_bytes[mode]:,} |"
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
