"""Benchmark the Redis backends of :class:`crawler.dupefilters.URLDupeFilter` against
scrapy-redis's ``RFPDupeFilter``, on one local ``redis-server``.

Usage (from the repository root)::

    .venv/bin/python bench/redis_urlfilter.py [--corpus ../shared/corpus] [--requests 100000]
                                              [--repeat 2] [--json out.json]

What the numbers mean, and what the script promises about them:

* **Server.** The script starts its own ``redis-server`` (``--save "" --appendonly no``) on a
  free 127.0.0.1 port and stops it at the end, also on an exception or Ctrl-C.
* **Workload.** The request stream of ``bench/urlfilter.py`` (same seed, same mix): about
  60% distinct pages modelled on ``<corpus>/url/real_urls.tsv``, the rest re-requests of
  earlier pages, exactly or as variants naming the same page. The corpus folder is
  ``--corpus``, else ``$DEDUP_CORPUS_DIR``, else ``<repo>/../shared/corpus``.
* **Throughput.** Each filter gets new ``scrapy.Request`` objects (built before timing), a
  new crawler, a spider name of its own and an empty server (``FLUSHALL`` before each pass);
  only the sequential loop of ``request_seen`` calls is timed. Passes are interleaved (each
  repeat runs every filter once, in a shuffled order); best and median are reported, as a
  ratio against scrapy-redis's ``RFPDupeFilter`` in the same run.
* **Memory.** After each pass, before the filter is closed (scrapy-redis's ``close()``
  deletes its key): ``INFO memory`` ``used_memory`` minus its value right after the
  ``FLUSHALL``, and the sum of ``MEMORY USAGE`` (exact, ``SAMPLES 0``) of every key, both
  divided by the number of requests the filter let through.
* **Memory at scale** (``--scale-urls``, default 1,000,000; 0 skips it). At the stream's
  size, fixed costs (client buffers, scripts) and the allocator's size classes weigh on a
  Bloom filter of a hundred kilobytes; so each filter is also fed that many distinct URLs
  (not timed; the Bloom filter sized for them) and measured the same way.

Results go to stdout as Markdown (tables, targets, machine facts, the command line, elapsed
time); ``--json`` also writes the raw numbers.
"""

from __future__ import annotations

import argparse
import json
import random
import shlex
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from importlib.metadata import version
from pathlib import Path
from typing import TYPE_CHECKING, Any

import redis
from scrapy import Spider
from scrapy.utils.test import get_crawler
from scrapy_redis.dupefilter import RFPDupeFilter as ScrapyRedisDupeFilter
from urlfilter import (
    CORPUS_ENV_VAR,
    DEFAULT_CORPUS_DIR,
    SEED,
    RequestFactory,
    Workload,
    build_workload,
    collector,
    load_seed_urls,
    machine_facts,
    markdown_table,
    progress,
    resolve_corpus_dir,
)

from crawler.dupefilters import URLDupeFilter

if TYPE_CHECKING:
    from collections.abc import Iterator, Sequence

    from scrapy import Request

DEFAULT_REQUESTS = 100_000
DEFAULT_REPEAT = 2
DEFAULT_SCALE_URLS = 1_000_000
ERROR_RATE = 0.001
REDIS_SERVER = "/usr/bin/redis-server"
SERVER_START_TIMEOUT = 10.0

#: Targets.
TARGET_BLOOM_BYTES_PER_URL = 2.5

PEER = "scrapy-redis RFPDupeFilter"
OURS_SET = "URLDupeFilter redis"
OURS_BLOOM = "URLDupeFilter redis-bloom"


# Redis server


def free_loopback_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


@contextmanager
def local_redis_server() -> Iterator[str]:
    """Yield the URL of a new ``redis-server`` on a free loopback port, without persistence.

    * the server runs in its own session, so Ctrl-C reaches this script only, which then
      stops the server (SIGTERM, SIGKILL after 10 s);
    * raises :class:`RuntimeError` when the server does not answer ``PING`` in time.
    """
    if not Path(REDIS_SERVER).exists() and shutil.which("redis-server") is None:
        raise RuntimeError(f"redis-server not found at {REDIS_SERVER} nor on PATH")
    executable = REDIS_SERVER if Path(REDIS_SERVER).exists() else "redis-server"
    with tempfile.TemporaryDirectory(prefix="redis-urlfilter-bench-") as work_dir:
        port = free_loopback_port()
        command = [
            executable,
            "--bind",
            "127.0.0.1",
            "--port",
            str(port),
            "--save",
            "",
            "--appendonly",
            "no",
            "--dir",
            work_dir,
        ]
        server = subprocess.Popen(
            command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True
        )
        url = f"redis://127.0.0.1:{port}/0"
        try:
            _wait_until_ready(server, url)
            yield url
        finally:
            server.terminate()
            try:
                server.wait(timeout=10)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait()


def _wait_until_ready(server: subprocess.Popen[bytes], url: str) -> None:
    deadline = time.monotonic() + SERVER_START_TIMEOUT
    client = redis.Redis.from_url(url, socket_connect_timeout=1)
    try:
        while True:
            if server.poll() is not None:
                error = server.stderr.read().decode(errors="replace") if server.stderr else ""
                raise RuntimeError(f"redis-server exited with {server.returncode}: {error}")
            try:
                client.ping()
                return
            except redis.ConnectionError:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"redis-server at {url} did not answer PING") from None
                time.sleep(0.05)
    finally:
        client.close()


# Filters


@dataclass(frozen=True)
class FilterSpec:
    """A dupefilter as configured for one row of the results."""

    name: str
    spider_name: str
    settings: dict[str, Any]
    scrapy_redis: bool = False


def filter_specs(redis_url: str, capacity: int) -> list[FilterSpec]:
    """The filters compared, the peer (scrapy-redis) first; each has its own spider name."""
    return [
        FilterSpec(PEER, "bench-scrapy-redis", {"REDIS_URL": redis_url}, scrapy_redis=True),
        FilterSpec(
            OURS_SET, "bench-redis-set", {"REDIS_URL": redis_url, "DEDUP_URL_BACKEND": "redis"}
        ),
        FilterSpec(
            OURS_BLOOM,
            "bench-redis-bloom",
            {
                "REDIS_URL": redis_url,
                "DEDUP_URL_BACKEND": "redis-bloom",
                "DEDUP_URL_CAPACITY": capacity,
                "DEDUP_URL_ERROR_RATE": ERROR_RATE,
            },
        ),
    ]


def build_filter(spec: FilterSpec) -> ScrapyRedisDupeFilter | URLDupeFilter:
    """Build *spec*'s filter as Scrapy's tests do, through ``from_spider``, and open it."""
    spider_class = type("BenchSpider", (Spider,), {"name": spec.spider_name})
    crawler = get_crawler(spider_class, spec.settings)
    crawler.spider = crawler._create_spider()
    dupefilter: ScrapyRedisDupeFilter | URLDupeFilter
    if spec.scrapy_redis:
        dupefilter = ScrapyRedisDupeFilter.from_spider(crawler.spider)
    else:
        dupefilter = URLDupeFilter.from_spider(crawler.spider)
    open_filter = getattr(dupefilter, "open", None)
    if callable(open_filter):
        open_filter()
    return dupefilter


# Passes


@dataclass
class PassResult:
    seconds: float
    cpu_seconds: float
    let_through: int
    used_memory_delta: int
    memory_usage: int
    keys: int


def redis_memory(client: redis.Redis) -> tuple[int, int, int]:
    """``used_memory``, the sum of exact ``MEMORY USAGE`` over every key, and the key count."""
    used = int(client.info("memory")["used_memory"])
    total, keys = 0, 0
    for key in client.scan_iter(match="*", count=1000):
        total += int(client.memory_usage(key, samples=0) or 0)
        keys += 1
    return used, total, keys


def timed_pass(spec: FilterSpec, requests: Sequence[Request], client: redis.Redis) -> PassResult:
    """Empty the server, feed *requests* to a new filter (the calls alone timed), measure
    what the server holds, then close the filter."""
    client.flushall()
    baseline, _, _ = redis_memory(client)
    dupefilter = build_filter(spec)
    request_seen = dupefilter.request_seen
    let_through = 0
    with collector("running"):
        cpu_start = time.process_time()
        start = time.perf_counter()
        for request in requests:
            if not request_seen(request):
                let_through += 1
        seconds = time.perf_counter() - start
        cpu_seconds = time.process_time() - cpu_start
    used, memory_usage, keys = redis_memory(client)
    dupefilter.close("finished")
    return PassResult(seconds, cpu_seconds, let_through, used - baseline, memory_usage, keys)


@dataclass
class ScaleResult:
    urls: int
    let_through: int
    used_memory_delta: int
    memory_usage: int

    @property
    def used_memory_per_url(self) -> float:
        return self.used_memory_delta / max(1, self.let_through)

    @property
    def memory_usage_per_url(self) -> float:
        return self.memory_usage / max(1, self.let_through)


def scale_pass(spec: FilterSpec, urls: int, client: redis.Redis) -> ScaleResult:
    """Feed *urls* distinct URLs to a new filter on an empty server; measure its memory."""
    from scrapy import Request

    client.flushall()
    baseline, _, _ = redis_memory(client)
    dupefilter = build_filter(spec)
    let_through = 0
    for number in range(urls):
        url = f"https://shop{number % 97}.example.com/item/{number}?ref=list&page={number % 13}"
        if not dupefilter.request_seen(Request(url)):
            let_through += 1
    if isinstance(dupefilter, URLDupeFilter):
        dupefilter.seen.stats()  # workers add their count to the shared one in batches
    used, memory_usage, _ = redis_memory(client)
    dupefilter.close("finished")
    client.flushall()
    return ScaleResult(urls, let_through, used - baseline, memory_usage)


def run_scale_passes(redis_url: str, urls: int, started: float) -> dict[str, ScaleResult]:
    client = redis.Redis.from_url(redis_url)
    results = {}
    try:
        for spec in filter_specs(redis_url, capacity=urls):
            results[spec.name] = scale_pass(spec, urls, client)
            progress(f"memory at scale ({urls:,} URLs): {spec.name}", started)
    finally:
        client.close()
    return results


@dataclass
class Timings:
    repeat: int
    passes: dict[str, list[PassResult]] = field(default_factory=dict)


def run_passes(
    factory: RequestFactory,
    specs: Sequence[FilterSpec],
    repeat: int,
    redis_url: str,
    started: float,
) -> Timings:
    timings = Timings(repeat, {spec.name: [] for spec in specs})
    order = random.Random(SEED)
    client = redis.Redis.from_url(redis_url)
    try:
        for round_number in range(1, repeat + 1):
            shuffled = list(specs)
            order.shuffle(shuffled)
            for spec in shuffled:
                requests = factory.new_requests()
                timings.passes[spec.name].append(timed_pass(spec, requests, client))
                del requests
                progress(f"pass {round_number}/{repeat}: {spec.name}", started)
        client.flushall()
    finally:
        client.close()
    return timings


# Reporting


def server_facts(redis_url: str) -> dict[str, Any]:
    client = redis.Redis.from_url(redis_url)
    try:
        info = client.info("server")
        memory = client.info("memory")
    finally:
        client.close()
    return {
        "redis_server": info["redis_version"],
        "redis_allocator": memory.get("mem_allocator", ""),
        "redis-py": version("redis"),
        "scrapy-redis": version("scrapy-redis"),
    }


@dataclass
class Report:
    """Everything measured in one run, and the Markdown and JSON made from it."""

    command: str
    facts: dict[str, Any]
    corpus_dir: Path
    workload: Workload
    timings: Timings
    scale: dict[str, ScaleResult] = field(default_factory=dict)
    elapsed: float = 0.0

    @property
    def size(self) -> int:
        return len(self.workload.urls)

    def summary(self) -> dict[str, dict[str, float]]:
        """Per filter: rates, ratios against the peer, let-through and bytes per URL."""
        figures: dict[str, dict[str, float]] = {}
        for name, passes in self.timings.passes.items():
            seconds = [result.seconds for result in passes]
            last = passes[-1]
            through = max(1, last.let_through)
            figures[name] = {
                "best_per_second": self.size / min(seconds),
                "median_per_second": self.size / statistics.median(seconds),
                "cpu_best_per_second": self.size / min(r.cpu_seconds for r in passes),
                "let_through": last.let_through,
                "keys": last.keys,
                "used_memory_bytes_per_url": last.used_memory_delta / through,
                "memory_usage_bytes_per_url": last.memory_usage / through,
            }
        peer = figures[PEER]
        for values in figures.values():
            values["ratio_best"] = values["best_per_second"] / peer["best_per_second"]
            values["ratio_median"] = values["median_per_second"] / peer["median_per_second"]
        return figures

    def targets(self) -> dict[str, Any]:
        figures = self.summary()
        peer, ours_set, bloom = figures[PEER], figures[OURS_SET], figures[OURS_BLOOM]
        bloom_bytes = max(bloom["used_memory_bytes_per_url"], bloom["memory_usage_bytes_per_url"])
        bloom_bytes_at_scale = None
        if OURS_BLOOM in self.scale:
            at_scale = self.scale[OURS_BLOOM]
            bloom_bytes_at_scale = max(at_scale.used_memory_per_url, at_scale.memory_usage_per_url)
            bloom_bytes = bloom_bytes_at_scale
        return {
            "set_ratio_best": ours_set["ratio_best"],
            "bloom_ratio_best": bloom["ratio_best"],
            "throughput_pass": ours_set["ratio_best"] >= 1 and bloom["ratio_best"] >= 1,
            "bloom_bytes_per_url": bloom_bytes,
            "bloom_bytes_at_scale": bloom_bytes_at_scale,
            "bloom_bytes_pass": bloom_bytes <= TARGET_BLOOM_BYTES_PER_URL,
            "set_bytes_per_url": ours_set["used_memory_bytes_per_url"],
            "peer_bytes_per_url": peer["used_memory_bytes_per_url"],
            "set_bytes_pass": (
                ours_set["used_memory_bytes_per_url"] < peer["used_memory_bytes_per_url"]
                and ours_set["memory_usage_bytes_per_url"] < peer["memory_usage_bytes_per_url"]
            ),
        }

    def markdown(self) -> str:
        sections = [self._header(), self._workload(), self._results()]
        if self.scale:
            sections.append(self._scale())
        return "\n\n".join([*sections, self._targets(), self._footer()])

    def _scale(self) -> str:
        urls = next(iter(self.scale.values())).urls
        rows = [
            [
                name,
                f"{result.let_through:,}",
                f"{result.used_memory_per_url:.2f}",
                f"{result.memory_usage_per_url:.2f}",
            ]
            for name, result in self.scale.items()
        ]
        return (
            f"## Memory at scale ({urls:,} distinct URLs, Bloom filter sized for them)\n\n"
            + markdown_table(
                [
                    "filter",
                    "requests let through",
                    "used_memory delta per URL (bytes)",
                    "MEMORY USAGE per URL (bytes)",
                ],
                rows,
            )
        )

    def _header(self) -> str:
        facts = ", ".join(f"{key} {value}" for key, value in self.facts.items())
        return f"# Redis URL filter benchmark\n\nMachine: {facts}.\n\nCommand: `{self.command}`"

    def _workload(self) -> str:
        workload = self.workload
        return (
            f"## Workload\n\n{self.size:,} requests built from {workload.seed_urls:,} real URLs "
            f"on {workload.seed_hosts:,} hosts ({self.corpus_dir / 'url' / 'real_urls.tsv'}), "
            f"seed {SEED}: {workload.distinct_pages:,} distinct pages "
            f"({workload.distinct_pages / self.size:.1%}), the rest duplicates of earlier pages."
        )

    def _results(self) -> str:
        repeat = self.timings.repeat
        rows = [
            [
                name,
                f"{values['best_per_second']:,.0f}",
                f"{values['median_per_second']:,.0f}",
                f"{values['ratio_best']:.2f}x ({values['ratio_median']:.2f}x median)",
                f"{values['let_through']:,.0f}",
                f"{values['keys']:,.0f}",
                f"{values['used_memory_bytes_per_url']:.2f}",
                f"{values['memory_usage_bytes_per_url']:.2f}",
            ]
            for name, values in self.summary().items()
        ]
        return (
            f"## Results (one worker, sequential; best and median of {repeat} interleaved "
            "passes)\n\n"
            + markdown_table(
                [
                    "filter",
                    f"requests/s (best of {repeat})",
                    "requests/s (median)",
                    f"ratio vs {PEER} (same run)",
                    "requests let through",
                    "Redis keys",
                    "used_memory delta per URL (bytes)",
                    "MEMORY USAGE per URL (bytes)",
                ],
                rows,
            )
            + f"\n\nThe stream holds {self.workload.distinct_pages:,} distinct pages. Bytes per "
            "URL are divided by the requests the filter let through (last pass); used_memory "
            "is measured against its value right after FLUSHALL, so it includes loaded Lua "
            "scripts and allocator overhead."
        )

    def _targets(self) -> str:
        targets = self.targets()

        def verdict(passed: bool) -> str:
            return "PASS" if passed else "FAIL"

        return (
            "## Targets\n\n"
            f"- {verdict(targets['throughput_pass'])}: throughput of both ours >= "
            f"{PEER}'s (one round trip each): redis {targets['set_ratio_best']:.2f}x, "
            f"redis-bloom {targets['bloom_ratio_best']:.2f}x (best).\n"
            f"- {verdict(targets['bloom_bytes_pass'])}: redis-bloom takes "
            f"{targets['bloom_bytes_per_url']:.2f} bytes per URL at error rate {ERROR_RATE:g} "
            f"(the larger of the two measures"
            f"{', at scale' if targets['bloom_bytes_at_scale'] is not None else ''}), "
            f"target <= {TARGET_BLOOM_BYTES_PER_URL:g}.\n"
            f"- {verdict(targets['set_bytes_pass'])}: redis set takes "
            f"{targets['set_bytes_per_url']:.1f} bytes per URL (used_memory), {PEER} "
            f"{targets['peer_bytes_per_url']:.1f}; target below (both measures)."
        )

    def _footer(self) -> str:
        return f"Elapsed: {self.elapsed:.1f} s."

    def to_json(self) -> dict[str, Any]:
        return {
            "command": self.command,
            "machine": self.facts,
            "parameters": {
                "requests": self.size,
                "repeat": self.timings.repeat,
                "seed": SEED,
                "error_rate": ERROR_RATE,
                "bloom_capacity": self.workload.distinct_pages,
                "corpus": str(self.corpus_dir),
            },
            "workload": {
                "distinct_pages": self.workload.distinct_pages,
                "mix": dict(self.workload.mix()),
            },
            "summary": self.summary(),
            "passes": {
                name: [vars(result) for result in passes]
                for name, passes in self.timings.passes.items()
            },
            "scale": {name: vars(result) for name, result in self.scale.items()},
            "targets": self.targets(),
            "elapsed_seconds": self.elapsed,
        }


# Command line


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.partition("\n")[0] if __doc__ else "")
    parser.add_argument(
        "--corpus",
        help=f"corpus folder (default: ${CORPUS_ENV_VAR}, else {DEFAULT_CORPUS_DIR})",
    )
    parser.add_argument("--requests", type=int, default=DEFAULT_REQUESTS)
    parser.add_argument("--repeat", type=int, default=DEFAULT_REPEAT)
    parser.add_argument(
        "--scale-urls",
        type=int,
        default=DEFAULT_SCALE_URLS,
        help="distinct URLs for the memory-at-scale passes (0: skip them)",
    )
    parser.add_argument("--json", type=Path, help="write the raw numbers to this file")
    args = parser.parse_args(argv)
    if args.scale_urls < 0:
        parser.error("--scale-urls must be 0 or more")
    if args.requests < 1 or args.repeat < 1:
        parser.error("--requests and --repeat must be at least 1")
    return args


def main(argv: Sequence[str] | None = None) -> None:
    args = parse_args(argv)
    started = time.perf_counter()
    corpus_dir = resolve_corpus_dir(args.corpus)
    try:
        seed_urls = load_seed_urls(corpus_dir)
    except FileNotFoundError as exc:
        sys.exit(f"{exc.filename} not found: point --corpus or ${CORPUS_ENV_VAR} at the corpus")
    workload = build_workload(seed_urls, args.requests)
    factory = RequestFactory(workload.urls)
    progress(f"workload of {len(workload.urls):,} requests built", started)
    with local_redis_server() as redis_url:
        progress(f"redis-server ready at {redis_url}", started)
        specs = filter_specs(redis_url, capacity=workload.distinct_pages)
        timings = run_passes(factory, specs, args.repeat, redis_url, started)
        scale = run_scale_passes(redis_url, args.scale_urls, started) if args.scale_urls else {}
        facts = {**machine_facts(), **server_facts(redis_url)}
    report = Report(
        command=shlex.join(getattr(sys, "orig_argv", [sys.executable, *sys.argv])),
        facts=facts,
        corpus_dir=corpus_dir,
        workload=workload,
        timings=timings,
        scale=scale,
    )
    report.elapsed = time.perf_counter() - started
    print(report.markdown())
    if args.json:
        args.json.write_text(json.dumps(report.to_json(), indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
