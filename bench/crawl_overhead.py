"""What the dedup levels cost a real crawl: the same crawl with dedup off, the URL level only,
and both levels (each extractor), in one run, interleaved.

Usage (from the repository root)::

    .venv/bin/python bench/crawl_overhead.py [--corpus ../shared/corpus] [--pages 400]
        [--delay 0.05] [--concurrency 32] [--rounds 2] [--json out.json] [--only NAME ...]

What the numbers mean, and what the script promises about them:

* **Site.** A local aiohttp server on 127.0.0.1 (its own process) serves the real pages of
  ``<corpus>/pages/wcxb-dev/html`` (``--pages`` of them, as downloaded) at ``/p/<n>`` and,
  for each, a printer-friendly copy at ``/print/<n>`` (the same bytes with one
  ``Printed on ... from <URL>`` paragraph after ``<body>``), so that the content level has
  copies to find; every response waits ``--delay`` seconds first (network latency). The
  crawl's start requests are every page and every copy, in an order shuffled with a fixed
  seed (copies mostly after their page).
* **Crawls.** ``scrapy`` with ``CONCURRENT_REQUESTS`` = ``CONCURRENT_REQUESTS_PER_DOMAIN`` =
  ``--concurrency``, no delay, no robots.txt, a spider that makes one item (URL and HTML) of
  each response: *off* (Scrapy's own dupefilter, no pipeline), *url* (the add-on with
  ``DEDUP_CONTENT_ENABLED = False``), *both, default extractor* (the add-on's defaults:
  ``"auto"``), *both, trafilatura*, *both, resiliparse* and *both, trafilatura+resiliparse*
  (the default until 2026-12-04) (each its ``DEDUP_EXTRACTOR``), and *both, default,
  pure-Python fingerprints* (the defaults with ``DEDUP_PURE_PYTHON`` set: the fingerprints'
  pure-Python references instead of their compiled forms). Each crawl is a process of its
  own; the configurations take turns, ``--rounds`` times, and the best wall time of each
  counts (the others are in ``--json``).
* **Figures.** Wall time from the engine's start to its close, pages per second, CPU
  seconds per page (the crawl process and its children: the extraction workers; the
  workers' share apart, 0 when pages were extracted in the crawl process), how many
  of the machine's cores were busy and idle while the crawl ran (every process, the page
  server's included: an *off* crawl that leaves no core idle leaves the content level no
  room but the crawl's own time), peak memory of the crawl process and its children (the
  extraction workers) together, sampled from ``/proc``: RSS every 20 ms (a library page
  shared by several processes counted in each) and PSS every half second (shared pages
  split between the processes that share them: reading it walks each process's page
  tables, and every 20 ms that took a fifth of a core from the crawls with workers, a
  twentieth from the others); not ``ru_maxrss``, since Linux carries a parent's peak into
  the ``ru_maxrss`` of each process it starts (the sampling thread's own CPU time, which
  grows with the crawl's wall time and memory, is left out of the CPU figures; the JSON
  has each thread's CPU, the sampler's included), the items
  dropped, and the reactor's lag: how
  late a 10 ms timer fires while the crawl runs (median, p99, max). Ratios are against
  *off* in the same run.
* **Where the content level's CPU goes.** For each crawl with both levels, its CPU a page
  over the *url* crawl (or *off*), split into the extractor's and the fingerprints' own
  time (the pipeline's ``dedup/extract/*_cpu_seconds`` stats: the CPU time of the thread
  that did the work, in a worker or in the crawl process) and the rest: handing pages to
  the workers and back, threads, the index, the pipeline's own steps, the workers' start;
  of the rest, what the crawl process spent before the engine started, over the base crawl
  (the dedup modules' imports and set-up), and what the worker processes' start took
  (``dedup/extract/worker_start_cpu_seconds``: their imports), both once a crawl whatever
  its length, and the rest a page without them.
* **Bytecode.** The package's bytecode is written before the first crawl, as installing it
  does: without it, where ``PYTHONDONTWRITEBYTECODE`` is set, every crawl process and worker
  would compile the package's modules from source (``manual_crawl.py`` too).
"""

from __future__ import annotations

import argparse
import asyncio
import compileall
import functools
import gzip
import json
import os
import random
import re
import resource
import shlex
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from machine import machine_facts

REPO_DIR = Path(__file__).resolve().parent.parent
CORPUS_ENV_VAR = "DEDUP_CORPUS_DIR"
#: In a configuration: environment variables of its crawl's process, not a setting.
ENVIRONMENT = "environment"
#: crawler.content.speedups.PURE_PYTHON_VARIABLE (not imported: the benchmark's own
#: process imports no part of the package it measures)
PURE_PYTHON_VARIABLE = "DEDUP_PURE_PYTHON"
CONFIGURATIONS: dict[str, dict[str, Any]] = {
    "off": {},
    "url": {"ADDONS": {"crawler.addon.DedupAddon": 0}, "DEDUP_CONTENT_ENABLED": False},
    "both, default extractor": {"ADDONS": {"crawler.addon.DedupAddon": 0}},
    "both, trafilatura": {
        "ADDONS": {"crawler.addon.DedupAddon": 0},
        "DEDUP_EXTRACTOR": "trafilatura",
    },
    "both, resiliparse": {
        "ADDONS": {"crawler.addon.DedupAddon": 0},
        "DEDUP_EXTRACTOR": "resiliparse",
    },
    "both, trafilatura+resiliparse": {
        "ADDONS": {"crawler.addon.DedupAddon": 0},
        "DEDUP_EXTRACTOR": "trafilatura+resiliparse",
    },
    "both, default, collector not frozen": {
        "ADDONS": {"crawler.addon.DedupAddon": 0},
        "DEDUP_GC_FREEZE": False,
    },
    "both, default, one worker from the start": {
        "ADDONS": {"crawler.addon.DedupAddon": 0},
        "DEDUP_CONTENT_WORKERS": 1,
    },
    "both, default, no worker process": {
        "ADDONS": {"crawler.addon.DedupAddon": 0},
        "DEDUP_CONTENT_WORKERS": 0,
    },
    "both, default, pure-Python fingerprints": {
        "ADDONS": {"crawler.addon.DedupAddon": 0},
        ENVIRONMENT: {PURE_PYTHON_VARIABLE: "1"},
    },
}
PRINTED = (
    '<p class="printed">Printed on 12 March 2024 at 14:05 UTC from http://127.0.0.1/p/{number}</p>'
)


# The site (run in its own process: ``crawl_overhead.py serve``)


def serve(corpus: Path, pages: int, delay: float) -> None:
    from aiohttp import web

    files = sorted((corpus / "pages" / "wcxb-dev" / "html").glob("*.html.gz"))[:pages]
    bodies = [gzip.decompress(path.read_bytes()) for path in files]

    def printed(number: int) -> bytes:
        body = bodies[number]
        at = body.lower().find(b"<body")
        at = body.find(b">", at) + 1 if at >= 0 else 0
        return body[:at] + PRINTED.format(number=number).encode() + body[at:]

    copies = [printed(number) for number in range(len(bodies))]

    async def page(request: web.Request) -> web.Response:
        await asyncio.sleep(delay)
        number = int(request.match_info["number"])
        kind = request.match_info["kind"]
        if not 0 <= number < len(bodies):
            raise web.HTTPNotFound()
        body = bodies[number] if kind == "p" else copies[number]
        return web.Response(body=body, content_type="text/html", charset="utf-8")

    app = web.Application()
    app.router.add_get("/{kind:p|print}/{number:\\d+}", page)

    async def main() -> None:
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        port = runner.addresses[0][1]
        print(f"READY {port} {len(bodies)}", flush=True)
        await asyncio.Event().wait()

    asyncio.run(main())


# One crawl (run in its own process: ``crawl_overhead.py crawl``)


def crawl(settings_json: str, urls_file: str, result_file: str) -> None:
    import scrapy
    from scrapy.crawler import CrawlerProcess

    urls = Path(urls_file).read_text().split()
    lags: list[float] = []

    class Pages(scrapy.Spider):
        name = "pages"

        async def start(self) -> Any:
            for url in urls:
                yield scrapy.Request(url, dont_filter=False)

        def parse(self, response: Any, **kwargs: Any) -> Any:
            yield {"url": response.url, "html": response.text}

    settings = {
        "LOG_LEVEL": "WARNING",
        "ROBOTSTXT_OBEY": False,
        "CONCURRENT_REQUESTS": 32,
        "CONCURRENT_REQUESTS_PER_DOMAIN": 32,
        "DOWNLOAD_DELAY": 0,
        "TELNETCONSOLE_ENABLED": False,
        **json.loads(settings_json),
    }
    process = CrawlerProcess(settings, install_root_handler=False)

    crawler = process.create_crawler(Pages)
    times: dict[str, float] = {}
    machine: list[tuple[float, float]] = []
    last = [time.perf_counter()]

    def tick() -> None:
        now = time.perf_counter()
        lags.append(max(0.0, now - last[0] - 0.010))
        last[0] = now

    tickers: list[Any] = []

    def opened() -> None:
        from twisted.internet import task  # the crawl's reactor is installed and running

        times["start"] = time.perf_counter()
        times["reactor_cpu_start"] = time.thread_time()
        own = resource.getrusage(resource.RUSAGE_SELF)
        times["cpu_before_engine"] = own.ru_utime + own.ru_stime - memory.cpu_seconds
        machine[:] = [machine_cpu_seconds()]
        last[0] = time.perf_counter()
        tickers.append(task.LoopingCall(tick))
        tickers[0].start(0.010, now=False)

    def closed() -> None:
        times["end"] = time.perf_counter()
        times["reactor_cpu_end"] = time.thread_time()
        machine.append(machine_cpu_seconds())
        for ticker in tickers:
            if ticker.running:
                ticker.stop()

    from scrapy import signals

    memory = MemorySampler(os.getpid())
    memory.start()
    crawler.signals.connect(opened, signals.engine_started)
    crawler.signals.connect(closed, signals.engine_stopped)
    process.crawl(crawler)
    process.start()
    stats = crawler.stats.get_stats() if crawler.stats else {}
    cpu_seconds, workers_cpu_seconds = crawl_cpu_seconds(memory)
    result = {
        "seconds": times["end"] - times["start"],
        "pages": stats.get("response_received_count", 0),
        "items": stats.get("item_scraped_count", 0),
        "dropped": stats.get("item_dropped_count", 0),
        "same_body": stats.get("dedup/extract/same_body", 0),
        # pages extracted in the crawl process, and the worker processes started
        "in_process": stats.get("dedup/extract/in_process", 0),
        "workers_started": stats.get("dedup/extract/workers_started", 0),
        # the content level's own measures of its work (CPU seconds of the threads that did it)
        "extractor_cpu_seconds": stats.get("dedup/extract/extractor_cpu_seconds", 0.0),
        "fingerprints_cpu_seconds": stats.get("dedup/extract/fingerprints_cpu_seconds", 0.0),
        # what starting the worker processes took (their imports), once a crawl
        "worker_start_cpu_seconds": stats.get("dedup/extract/worker_start_cpu_seconds", 0.0),
        # every process of the machine, the page server's included, while the crawl ran
        "machine_busy_cores": (machine[1][0] - machine[0][0]) / (times["end"] - times["start"]),
        "machine_idle_cores": (machine[1][1] - machine[0][1]) / (times["end"] - times["start"]),
        "cpu_seconds": cpu_seconds,
        "cpu_seconds_sampler": memory.cpu_seconds,
        # the reactor's thread alone (the crawl's own work, Scrapy's and the dedup levels')
        "cpu_seconds_reactor": times["reactor_cpu_end"] - times["reactor_cpu_start"],
        # the crawl process's, before the engine started: imports and set-up, once a crawl
        "cpu_seconds_before_engine": times["cpu_before_engine"],
        "cpu_seconds_workers": workers_cpu_seconds,
        # ru_maxrss is in KiB on Linux
        "peak_rss_mib": memory.peak_rss / 2**20,
        "peak_pss_mib": memory.peak_pss / 2**20,
        "peak_rss_mib_crawl_process": memory.peak_rss_by_pid.get(os.getpid(), 0) / 2**20,
        "peak_rss_mib_each_child": sorted(
            rss / 2**20 for pid, rss in memory.peak_rss_by_pid.items() if pid != os.getpid()
        ),
        # the crawl process's threads, by name without their number (the sampler's own
        # included), as last seen: a look every half second
        "cpu_seconds_by_thread": memory.cpu_seconds_by_thread(),
        "lag_ms": sorted(lag * 1000 for lag in lags),
    }
    Path(result_file).write_text(json.dumps(result))


def crawl_cpu_seconds(memory: MemorySampler) -> tuple[float, float]:
    """CPU seconds of this process and its children (the extraction workers), *memory*'s
    own sampling left out; and the children's alone."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    workers = children.ru_utime + children.ru_stime
    return own.ru_utime + own.ru_stime + workers - memory.cpu_seconds, workers


#: Bytes a page of memory (``/proc/<pid>/statm`` counts pages).
PAGE_SIZE = os.sysconf("SC_PAGE_SIZE")
#: Clock ticks a second (``/proc/<pid>/task/<tid>/stat`` counts CPU time in them).
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
#: The PSS, the child processes and the threads' CPU are read at one look in this many:
#: ``smaps_rollup`` walks a process's page tables, and read every 20 ms from the crawl
#: and its workers it took 0.2 of a core of the machine's two during the crawl
#: (``statm``'s RSS costs next to nothing).
PSS_EVERY = 25


def _pss_bytes(rollup: str) -> int:
    for line in rollup.splitlines():
        if line.startswith("Pss:"):
            return int(line.split()[1]) * 1024
    return 0


class MemorySampler(threading.Thread):
    """The peak, over time, of the summed RSS and PSS of a process and its children (the
    PSS at one look in :data:`PSS_EVERY`)."""

    def __init__(self, pid: int, interval: float = 0.020) -> None:
        super().__init__(name="memory-sampler", daemon=True)
        self.pid, self.interval = pid, interval
        self.peak_rss = self.peak_pss = 0
        self.peak_rss_by_pid: dict[int, int] = {}
        #: this thread's own CPU time (reading /proc costs the kernel more for larger and
        #: more processes): left out of the crawl's
        self.cpu_seconds = 0.0
        #: each thread of this process seen (by its id): its name and CPU seconds at the
        #: last look (one in PSS_EVERY), which outlives the threads that end before the
        #: crawl does
        self.threads: dict[int, tuple[str, float]] = {}

    def run(self) -> None:
        started = time.thread_time()
        looks = 0
        pids = [self.pid]
        while True:
            self.cpu_seconds = time.thread_time() - started
            look_at_pss = looks % PSS_EVERY == 0
            looks += 1
            if look_at_pss:  # and at the processes and threads there are
                self.look_at_threads()
                pids = [self.pid, *self.children()]
            rss = pss = 0
            for pid in pids:
                try:
                    own = int(Path(f"/proc/{pid}/statm").read_text().split()[1]) * PAGE_SIZE
                    if look_at_pss:
                        pss += _pss_bytes(Path(f"/proc/{pid}/smaps_rollup").read_text())
                except OSError:  # ended meanwhile
                    continue
                rss += own
                self.peak_rss_by_pid[pid] = max(self.peak_rss_by_pid.get(pid, 0), own)
            self.peak_rss = max(self.peak_rss, rss)
            if look_at_pss:
                self.peak_pss = max(self.peak_pss, pss)
            time.sleep(self.interval)

    def look_at_threads(self) -> None:
        names = {thread.native_id: thread.name for thread in threading.enumerate()}
        for task in Path("/proc/self/task").iterdir():
            try:
                fields = (task / "stat").read_text().rpartition(")")[2].split()
            except OSError:  # ended meanwhile
                continue
            tid = int(task.name)
            name = names.get(tid) or self.threads.get(tid, ("other", 0.0))[0]
            self.threads[tid] = (name, (int(fields[11]) + int(fields[12])) / CLOCK_TICKS)

    def cpu_seconds_by_thread(self) -> dict[str, float]:
        """CPU seconds of each thread of this process, by its name without its number
        (``ThreadPoolExecutor-0_3`` counts as ``ThreadPoolExecutor-0``): the threads still
        running as they are now, the others as last seen."""
        self.look_at_threads()
        seconds: dict[str, float] = {}
        for name, cpu in list(self.threads.values()):  # the sampler adds threads meanwhile
            name = re.sub(r"_\d+$", "", name)
            seconds[name] = round(seconds.get(name, 0.0) + cpu, 3)
        return seconds

    def children(self) -> list[int]:
        found = []
        for task in Path(f"/proc/{self.pid}/task").iterdir():
            try:
                found += [int(pid) for pid in (task / "children").read_text().split()]
            except OSError:
                continue
        return found


def machine_cpu_seconds() -> tuple[float, float]:
    """CPU seconds the whole machine has spent busy and idle since boot (``/proc/stat``)."""
    fields = [int(value) for value in Path("/proc/stat").read_text().split("\n")[0].split()[1:]]
    ticks = os.sysconf("SC_CLK_TCK")
    idle = fields[3] + fields[4]  # idle, iowait
    return (sum(fields[:8]) - idle) / ticks, idle / ticks


# The benchmark


def run_crawl(name: str, urls_file: Path, workdir: Path) -> dict[str, Any]:
    settings = dict(CONFIGURATIONS[name])
    environment = settings.pop(ENVIRONMENT, {})
    return crawl_in_a_process(
        __file__, [json.dumps(settings), str(urls_file)], workdir, name, environment
    )


def crawl_in_a_process(
    script: str,
    arguments: list[str],
    workdir: Path,
    name: str,
    environment: dict[str, str] | None = None,
) -> dict[str, Any]:
    """Run ``script crawl ARGUMENTS RESULT_FILE`` in a process of its own and return the
    figures it wrote to RESULT_FILE; stop the benchmark with its error when it fails."""
    byte_compile_the_package()
    result_file = workdir / "result.json"
    completed = subprocess.run(
        [sys.executable, script, "crawl", *arguments, str(result_file)],
        cwd=REPO_DIR,
        env={**os.environ, **(environment or {}), "SCRAPY_SETTINGS_MODULE": "crawler.settings"},
        capture_output=True,
        text=True,
        timeout=1800,
        check=False,
    )
    if completed.returncode:
        raise SystemExit(f"crawl {name!r} failed:\n{completed.stderr[-3000:]}")
    result: dict[str, Any] = json.loads(result_file.read_text())
    return result


@functools.cache
def byte_compile_the_package() -> None:
    """Write the package's bytecode, as installing it does: where ``PYTHONDONTWRITEBYTECODE``
    is set (as on the machine these figures come from), each crawl process and each of its
    workers would otherwise compile the package's modules from source, 0.1 to 0.2 s of CPU
    that a user's crawl does not spend."""
    compileall.compile_dir(REPO_DIR / "crawler", quiet=1)


def percentile(values: list[float], share: float) -> float:
    if not values:
        return 0.0
    return values[min(len(values) - 1, int(len(values) * share))]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--corpus", help=f"corpus folder (default: ${CORPUS_ENV_VAR})")
    parser.add_argument("--pages", type=int, default=400, help="real pages served (and copies)")
    parser.add_argument("--delay", type=float, default=0.05, help="seconds before each answer")
    parser.add_argument("--concurrency", type=int, default=32, help="CONCURRENT_REQUESTS")
    parser.add_argument("--rounds", type=int, default=2, help="crawls of each configuration")
    parser.add_argument("--json", type=Path, help="also write every crawl's figures here")
    parser.add_argument(
        "--only",
        action="append",
        choices=[name for name in CONFIGURATIONS if name != "off"],
        help="crawl only these configurations besides off (repeatable; default: all)",
    )
    arguments = parser.parse_args(argv)
    if arguments.only:
        for name in [*CONFIGURATIONS]:
            if name != "off" and name not in arguments.only:
                del CONFIGURATIONS[name]
    corpus = Path(
        arguments.corpus or os.environ.get(CORPUS_ENV_VAR) or REPO_DIR.parent / "shared" / "corpus"
    )
    started = time.perf_counter()
    server = subprocess.Popen(
        [
            sys.executable,
            __file__,
            "serve",
            str(corpus),
            str(arguments.pages),
            str(arguments.delay),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert server.stdout is not None
        ready = server.stdout.readline().split()
        if not ready or ready[0] != "READY":
            raise SystemExit("the page server did not start")
        port, served = int(ready[1]), int(ready[2])
        rng = random.Random(20241202)
        urls = [f"http://127.0.0.1:{port}/p/{number}" for number in range(served)]
        copies = [f"http://127.0.0.1:{port}/print/{number}" for number in range(served)]
        order = [*urls]
        rng.shuffle(order)
        for copy in copies:  # mostly after their page
            order.insert(min(len(order), order.index(copy.replace("/print/", "/p/")) + 40), copy)
        results: dict[str, list[dict[str, Any]]] = {name: [] for name in CONFIGURATIONS}
        with tempfile.TemporaryDirectory() as workdir:
            urls_file = Path(workdir) / "urls.txt"
            urls_file.write_text("\n".join(order))
            settings_extra = {
                "CONCURRENT_REQUESTS": arguments.concurrency,
                "CONCURRENT_REQUESTS_PER_DOMAIN": arguments.concurrency,
            }
            for name in CONFIGURATIONS:
                CONFIGURATIONS[name] = {**CONFIGURATIONS[name], **settings_extra}
            for round_number in range(arguments.rounds):
                for name in CONFIGURATIONS:
                    seconds = time.perf_counter() - started
                    print(
                        f"[{seconds:5.0f} s] round {round_number + 1}: {name}",
                        file=sys.stderr,
                        flush=True,
                    )
                    results[name].append(run_crawl(name, urls_file, Path(workdir)))
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=10)
    report(arguments, results, served, time.perf_counter() - started)
    if arguments.json:
        arguments.json.write_text(json.dumps(results, indent=2))


def report(
    arguments: argparse.Namespace,
    results: dict[str, list[dict[str, Any]]],
    served: int,
    elapsed: float,
) -> None:
    best = {name: min(runs, key=lambda run: run["seconds"]) for name, runs in results.items()}
    off = best["off"]
    facts = machine_facts("scrapy", "trafilatura")
    print("# Crawl overhead of the dedup levels\n")
    print(f"Command: `{shlex.join([sys.executable, *sys.argv])}`  ")
    print(
        f"Python {facts['python']}, Scrapy {facts['scrapy']}, trafilatura {facts['trafilatura']}; "
        f"{facts['cpu_count']} CPUs ({facts['cpu_model'] or 'unknown model'})  "
    )
    print(f"Elapsed: {elapsed:.0f} s\n")
    print(
        f"{served} real pages and {served} printer-friendly copies, "
        f"{arguments.delay * 1000:.0f} ms per response, CONCURRENT_REQUESTS "
        f"{arguments.concurrency}; best of {arguments.rounds} crawls each, taking turns.\n"
    )
    print(
        "| crawl | wall s | vs off | pages/s | CPU ms/page | more than off | of which workers | "
        "machine busy / idle cores | "
        "peak RSS MiB | vs off | peak PSS MiB | vs off | items | dropped | same body | "
        "reactor lag median / p99 / max ms |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    off_cpu_ms = 1000 * off["cpu_seconds"] / max(off["pages"], 1)
    for name, run in best.items():
        lags = run["lag_ms"]
        print(
            f"| {name} | {run['seconds']:.1f} | {run['seconds'] / off['seconds']:.2f}x "
            f"| {run['pages'] / run['seconds']:.0f} "
            f"| {1000 * run['cpu_seconds'] / max(run['pages'], 1):.1f} "
            f"| {1000 * run['cpu_seconds'] / max(run['pages'], 1) - off_cpu_ms:+.1f} "
            f"| {1000 * run.get('cpu_seconds_workers', 0) / max(run['pages'], 1):.1f} "
            f"| {run['machine_busy_cores']:.2f} / {run['machine_idle_cores']:.2f} "
            f"| {run['peak_rss_mib']:.0f} | {run['peak_rss_mib'] / off['peak_rss_mib']:.2f}x "
            f"| {run['peak_pss_mib']:.0f} | {run['peak_pss_mib'] / off['peak_pss_mib']:.2f}x "
            f"| {run['items']} | {run['dropped']} | {run['same_body']} "
            f"| {statistics.median(lags) if lags else 0:.1f} / {percentile(lags, 0.99):.1f} / "
            f"{max(lags) if lags else 0:.1f} |"
        )
    print(f"\n{every_wall_time(results)}")
    print(where_the_content_level_spends(best))


def where_the_content_level_spends(best: dict[str, dict[str, Any]]) -> str:
    """A table: for each crawl with the content level, its CPU ms a page over the crawl
    with the URL level alone (or over *off*), split into the extractor's, the
    fingerprints' and the rest: handing pages over and back, threads, the index, the
    pipeline's own steps (what issue 32 calls coordination)."""
    base_name = "url" if "url" in best else "off"
    base = best[base_name]
    base_ms = 1000 * base["cpu_seconds"] / max(base["pages"], 1)
    base_reactor_ms = 1000 * base.get("cpu_seconds_reactor", 0.0) / max(base["pages"], 1)
    base_setup = base.get("cpu_seconds_before_engine", 0.0)
    rows = [
        "\nWhere the content level's CPU goes, ms a page (all pages downloaded), over the "
        f"*{base_name}* crawl; the extractor's and the fingerprints' own time as the threads "
        "that did the work measured it (`dedup/extract/*_cpu_seconds`):\n",
        "| crawl | over the base | extractor | fingerprints | the rest | of which the reactor's "
        "thread | elsewhere (threads, workers) | of the rest, set-up before the engine started "
        "(once a crawl: s) | of the rest, the workers' start (once a crawl: s) | the rest "
        "without what is once a crawl |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    content_crawls = {name: run for name, run in best.items() if name.startswith("both")}
    if not content_crawls:
        return ""
    for name, run in content_crawls.items():
        pages = max(run["pages"], 1)
        over = 1000 * run["cpu_seconds"] / pages - base_ms
        extractor = 1000 * run.get("extractor_cpu_seconds", 0.0) / pages
        fingerprints = 1000 * run.get("fingerprints_cpu_seconds", 0.0) / pages
        rest = over - extractor - fingerprints
        reactor = 1000 * run.get("cpu_seconds_reactor", 0.0) / pages - base_reactor_ms
        setup = run.get("cpu_seconds_before_engine", 0.0) - base_setup
        workers_start = run.get("worker_start_cpu_seconds", 0.0)
        rows.append(
            f"| {name} | {over:+.2f} | {extractor:.2f} | {fingerprints:.2f} "
            f"| {rest:.2f} | {reactor:+.2f} | {rest - reactor:.2f} "
            f"| {1000 * setup / pages:+.2f} ({setup:+.2f} s) "
            f"| {1000 * workers_start / pages:.2f} ({workers_start:.2f} s) "
            f"| {rest - 1000 * (setup + workers_start) / pages:.2f} |"
        )
    return "\n".join(rows)


def every_wall_time(results: dict[str, list[dict[str, Any]]]) -> str:
    """One sentence: each configuration's crawls' wall seconds, in the order they ran."""
    walls = ", ".join(
        f"{name}: " + " / ".join(f"{run['seconds']:.1f}" for run in runs)
        for name, runs in results.items()
    )
    return f"Every crawl's wall seconds, in order: {walls}."


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "serve":
        serve(Path(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4]))
    elif len(sys.argv) > 1 and sys.argv[1] == "crawl":
        crawl(sys.argv[2], sys.argv[3], sys.argv[4])
    else:
        main()
