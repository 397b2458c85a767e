"""What the add-on costs a crawl of a whole real manual, and what it keeps: stock Scrapy
against the add-on with its defaults and with another extractor, in one run, interleaved.

Usage (from the repository root)::

    .venv/bin/python bench/manual_crawl.py [ROOT] [--concurrency 16] [--rounds 2]
        [--extractor NAME ...] [--set NAME=VALUE ...] [--json out.json]

What the numbers mean, and what the script promises about them:

* **Site.** ROOT (default: Django's manual, ``/usr/share/doc/python-django-doc/html``, from
  the Debian package ``python-django-doc``; the script installs nothing) served as it is by
  Python's ``http.server`` on 127.0.0.1, in a process of its own, without latency: the
  crawl is as fast as the machine lets it be, the case where dedup costs the most.
* **Crawls.** ``scrapy`` with ``CONCURRENT_REQUESTS`` = ``--concurrency``, no delay, no
  robots.txt, a spider that starts at ``index.html``, follows every link to the site
  (``response.follow_all`` of the ``a`` elements) and makes one item (URL and HTML) of
  each HTML response: *stock* (Scrapy's own dupefilter, no pipeline), *add-on* (``ADDONS``
  with its defaults) and one *add-on* crawl per ``--extractor`` (its ``DEDUP_EXTRACTOR``;
  default: ``trafilatura+resiliparse``, the default before 2026-12-04, unless ``--set`` is
  given) and one per ``--set NAME=VALUE`` (the add-on's defaults and that setting; VALUE is
  read as JSON when it is JSON, else as a string). Each crawl is a
  process of its own; the configurations take turns, ``--rounds`` times, and the best wall
  time of each counts.
* **Figures.** Wall time from the engine's start to its close, against *stock*; CPU
  milliseconds per downloaded page of the crawl process and its children (the extraction
  workers) and how many more than *stock*, and of those the crawl process's own (where the
  crawl is CPU-bound, its core decides the wall time); the pages extracted in the crawl
  process (``dedup/extract/in_process``); downloads; items kept and dropped; peak RSS of
  the crawl process and its children (sampled from ``/proc``). The JSON holds each
  thread's CPU seconds too (``cpu_seconds_by_thread``).
* **Decisions.** The URLs of the items each add-on crawl dropped, with the page they were
  taken for (from the drop's message), and the items one add-on crawl kept that another
  dropped: what changing the extractor changes.

Output is Markdown on stdout.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from crawl_overhead import MemorySampler, crawl_cpu_seconds, crawl_in_a_process, every_wall_time
from machine import machine_facts

REPO_DIR = Path(__file__).resolve().parent.parent
DEFAULT_ROOT = Path("/usr/share/doc/python-django-doc/html")
ADDON = {"ADDONS": {"crawler.addon.DedupAddon": 0}}
#: The page an item was dropped for, from the drop's message ("... duplicate of URL (...)").
DROPPED_FOR = re.compile(r"duplicate of (\S+) \(")


def crawl(settings_json: str, start_url: str, result_file: str) -> None:
    """One crawl, in this process (``manual_crawl.py crawl``)."""
    import scrapy
    from scrapy import signals
    from scrapy.crawler import CrawlerProcess

    kept: list[str] = []
    dropped: dict[str, str] = {}

    class Manual(scrapy.Spider):
        name = "manual"
        allowed_domains = ["127.0.0.1"]

        async def start(self) -> Any:
            yield scrapy.Request(start_url)

        def parse(self, response: Any, **kwargs: Any) -> Any:
            if not isinstance(response, scrapy.http.HtmlResponse):
                return
            yield {"url": response.url, "html": response.text}
            yield from response.follow_all(css="a")

    settings = {
        "LOG_LEVEL": "WARNING",
        "ROBOTSTXT_OBEY": False,
        "DOWNLOAD_DELAY": 0,
        "TELNETCONSOLE_ENABLED": False,
        **json.loads(settings_json),
    }
    process = CrawlerProcess(settings, install_root_handler=False)
    crawler = process.create_crawler(Manual)
    times: dict[str, float] = {}

    def scraped(item: Any) -> None:
        kept.append(item["url"])

    def item_dropped(item: Any, exception: BaseException) -> None:
        found = DROPPED_FOR.search(str(exception))
        dropped[item["url"]] = found.group(1) if found else str(exception)

    def started() -> None:
        times["start"] = time.perf_counter()

    def stopped() -> None:
        times["end"] = time.perf_counter()

    # (Scrapy's signals hold their receivers weakly: named functions, alive until the end)
    crawler.signals.connect(started, signals.engine_started)
    crawler.signals.connect(stopped, signals.engine_stopped)
    crawler.signals.connect(scraped, signals.item_scraped)
    crawler.signals.connect(item_dropped, signals.item_dropped)
    memory = MemorySampler(os.getpid())
    memory.start()
    process.crawl(crawler)
    process.start()
    stats = crawler.stats.get_stats() if crawler.stats else {}
    cpu_seconds, workers_cpu_seconds = crawl_cpu_seconds(memory)
    result = {
        "seconds": times["end"] - times["start"],
        "pages": stats.get("response_received_count", 0),
        "kept": sorted(kept),
        "dropped": dropped,
        "cpu_seconds": cpu_seconds,
        "cpu_seconds_workers": workers_cpu_seconds,
        "in_process": stats.get("dedup/extract/in_process", 0),
        "cpu_seconds_by_thread": memory.cpu_seconds_by_thread(),
        "peak_rss_mib": memory.peak_rss / 2**20,
    }
    Path(result_file).write_text(json.dumps(result))


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def run_crawl(settings: dict[str, Any], start_url: str, workdir: Path) -> dict[str, Any]:
    return crawl_in_a_process(__file__, [json.dumps(settings), start_url], workdir, "manual")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("root", nargs="?", type=Path, default=DEFAULT_ROOT, help="the site")
    parser.add_argument("--concurrency", type=int, default=16, help="CONCURRENT_REQUESTS")
    parser.add_argument("--rounds", type=int, default=2, help="crawls of each configuration")
    parser.add_argument(
        "--extractor",
        action="append",
        help="add-on crawls with this DEDUP_EXTRACTOR too (default: trafilatura+resiliparse)",
    )
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="add-on crawls with this setting too (VALUE read as JSON if it is JSON)",
    )
    parser.add_argument("--json", type=Path, help="also write every crawl's figures here")
    arguments = parser.parse_args(argv)
    if not (arguments.root / "index.html").is_file():
        raise SystemExit(
            f"no index.html in {arguments.root}: give a site's folder, or install Django's "
            "manual (apt-get install python-django-doc)"
        )
    configurations: dict[str, dict[str, Any]] = {"stock": {}, "add-on": {**ADDON}}
    default_extractors = [] if arguments.set else ["trafilatura+resiliparse"]
    for extractor in arguments.extractor or default_extractors:
        configurations[f"add-on, {extractor}"] = {**ADDON, "DEDUP_EXTRACTOR": extractor}
    for assignment in arguments.set:
        name, _, value = assignment.partition("=")
        configurations[f"add-on, {assignment}"] = {**ADDON, name: _setting_value(value)}
    for settings in configurations.values():
        settings["CONCURRENT_REQUESTS"] = settings["CONCURRENT_REQUESTS_PER_DOMAIN"] = (
            arguments.concurrency
        )
    port = free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1"],
        cwd=arguments.root,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    started = time.perf_counter()
    results: dict[str, list[dict[str, Any]]] = {name: [] for name in configurations}
    try:
        _wait_for(port)
        start_url = f"http://127.0.0.1:{port}/index.html"
        with tempfile.TemporaryDirectory() as workdir:
            for round_number in range(arguments.rounds):
                for name, settings in configurations.items():
                    print(f"round {round_number + 1}: {name}", file=sys.stderr, flush=True)
                    results[name].append(run_crawl(settings, start_url, Path(workdir)))
    finally:
        server.terminate()
        server.wait(timeout=10)
    report(arguments, results, time.perf_counter() - started)
    if arguments.json:
        arguments.json.write_text(json.dumps(results, indent=1))


def _setting_value(value: str) -> Any:
    """*value* of ``--set NAME=VALUE``: its JSON value, or the string itself."""
    try:
        return json.loads(value)
    except json.JSONDecodeError:
        return value


def _wait_for(port: int) -> None:
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.05)
    raise SystemExit("the page server did not start")


def report(
    arguments: argparse.Namespace, results: dict[str, list[dict[str, Any]]], elapsed: float
) -> None:
    best = {name: min(runs, key=lambda run: run["seconds"]) for name, runs in results.items()}
    stock = best["stock"]
    stock_cpu = 1000 * stock["cpu_seconds"] / max(stock["pages"], 1)
    facts = machine_facts("scrapy", "trafilatura", "resiliparse")
    print("# A whole real manual crawled from 127.0.0.1: stock Scrapy and the add-on\n")
    print(f"Command: `{shlex.join([Path(sys.executable).name, *sys.argv])}`  ")
    print("Machine: " + ", ".join(f"{key} {value}" for key, value in facts.items()) + "  ")
    print(f"Site: {arguments.root}; CONCURRENT_REQUESTS {arguments.concurrency}; ", end="")
    print(f"best of {arguments.rounds} crawls each, taking turns; elapsed {elapsed:.0f} s\n")
    print(
        "| crawl | wall s | vs stock | CPU ms a page | more than stock | of which the crawl "
        "process | pages extracted in it | downloads | items kept | dropped | peak RSS MiB |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for name, run in best.items():
        pages = max(run["pages"], 1)
        cpu = 1000 * run["cpu_seconds"] / pages
        # without the workers': where the crawl is CPU-bound, the crawl process's core decides
        own = cpu - 1000 * run.get("cpu_seconds_workers", 0.0) / pages
        print(
            f"| {name} | {run['seconds']:.1f} | {run['seconds'] / stock['seconds']:.2f}x "
            f"| {cpu:.1f} | {cpu - stock_cpu:+.1f} | {own - stock_cpu:+.1f} "
            f"| {run.get('in_process', 0)} | {run['pages']} | {len(run['kept'])} "
            f"| {len(run['dropped'])} | {run['peak_rss_mib']:.0f} |"
        )
    print(f"\n{every_wall_time(results)}\n")
    add_ons = [name for name in best if name != "stock"]
    for name in add_ons:
        dropped = best[name]["dropped"]
        print(f"**{name}** dropped {len(dropped)}:\n")
        for url, matched in sorted(dropped.items()):
            print(f"- `{_path(url)}` taken for `{_path(matched)}`")
        print()
    for name in add_ons[1:]:
        only_default = set(best["add-on"]["kept"]) - set(best[name]["kept"])
        only_other = set(best[name]["kept"]) - set(best["add-on"]["kept"])
        print(
            f"Kept by the add-on's default and not by *{name}*: "
            f"{', '.join(f'`{_path(url)}`' for url in sorted(only_default)) or 'none'}; "
            f"the other way round: "
            f"{', '.join(f'`{_path(url)}`' for url in sorted(only_other)) or 'none'}."
        )


def _path(url: str) -> str:
    return re.sub(r"^https?://[^/]+", "", url)


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "crawl":
        crawl(sys.argv[2], sys.argv[3], sys.argv[4])
    else:
        main()
