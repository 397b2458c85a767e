"""Benchmark a shared seen store spread over a Redis Cluster (``DEDUP_REDIS_SHARDS``)
against the same store on one Redis server.

Usage (from the repository root)::

    .venv/bin/python bench/redis_cluster.py [--urls 1000000] [--clients 3] [--json out.json]

What the numbers mean, and what the script promises about them:

* **Servers.** The script starts, on free 127.0.0.1 ports and without persistence, one lone
  ``redis-server`` and three more made one Redis Cluster of three primaries, no replica
  (``redis-cli --cluster create``, which gives each primary a third of the slots), and
  stops them at the end, also on an exception or Ctrl-C.
* **Layouts.** Each store kind (``redis``: an exact set; ``redis-bloom``: a Bloom filter
  sized for ``--urls`` at a 0.001 false-positive rate) in three layouts: the lone server
  (the peer), the cluster with one shard (``DEDUP_REDIS_SHARDS=1``: the store on one
  primary, as before shards), and the cluster with the default 12 shards. Each store is
  built from settings, as a crawl builds it, and opened with its rules signature.
* **Workload.** ``--urls`` distinct 16-byte request keys (digests of numbers: what the
  store receives; canonicalizing URLs is the dupefilter's cost, not the store's), added by
  ``--clients`` processes at once, each a worker with its own connection and its own part
  of the keys, started together. Every add must answer "new"; the count is checked.
* **Throughput.** Keys added by all clients per second of wall time (first start to last
  end), as a ratio against the lone server in the same run. On a machine with fewer cores
  than clients plus servers, the clients' Python takes most of the CPU, so the ratio says
  what a cluster costs a worker (its client routes each call), not the capacity it adds;
  the servers' own CPU seconds per node (``INFO cpu``) say how the load is spread.
* **Spread.** For each node: the keys it holds (``DBSIZE``), the bytes of those keys
  (``MEMORY USAGE ... SAMPLES 0``), the commands it ran (``INFO commandstats``) and its CPU
  seconds, after the fill. The layouts run one after another, each on servers emptied by
  ``FLUSHALL``.

Results go to stdout as Markdown (tables, machine facts, the command line, elapsed time);
``--json`` also writes the raw numbers.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import multiprocessing
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from contextlib import ExitStack, contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import redis
from machine import machine_facts
from redis_urlfilter import free_loopback_port
from scrapy.settings import Settings

from crawler.url.canonical import UrlRules
from crawler.url.configuration import redis_seen_store, url_signature

if TYPE_CHECKING:
    from collections.abc import Iterator, Sequence

DEFAULT_URLS = 1_000_000
DEFAULT_CLIENTS = 3
ERROR_RATE = 0.001
SPIDER = "bench"
SERVER_START_TIMEOUT = 30.0
LAYOUTS = ("one server", "cluster, 1 shard", "cluster, 12 shards")
BACKENDS = ("redis", "redis-bloom")


# Servers


@contextmanager
def redis_server(work_dir: Path, *, cluster: bool) -> Iterator[int]:
    """Yield the port of a new ``redis-server`` without persistence (a cluster node with
    *cluster*), stopped at the end."""
    executable = shutil.which("redis-server")
    if executable is None:
        raise RuntimeError("redis-server not found on PATH (apt-get install redis-server)")
    port = free_loopback_port()
    directory = work_dir / str(port)
    directory.mkdir()
    command = [executable, "--bind", "127.0.0.1", "--port", str(port), "--dir", str(directory)]
    command += ["--save", "", "--appendonly", "no"]
    if cluster:  # a bus port of its own: the default, port + 10000, may be past 65535
        command += ["--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf"]
        command += ["--cluster-port", str(free_loopback_port())]
    server = subprocess.Popen(
        command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
    )
    try:
        client = redis.Redis(port=port, socket_connect_timeout=1)
        deadline = time.monotonic() + SERVER_START_TIMEOUT
        while True:
            try:
                client.ping()
                break
            except redis.ConnectionError:
                if server.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"redis-server on port {port} did not start") from None
                time.sleep(0.05)
        client.close()
        yield port
    finally:
        server.terminate()
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


def make_cluster(ports: Sequence[int]) -> None:
    """Make the nodes on *ports* one cluster of primaries; return once it is ok."""
    subprocess.run(
        [
            *("redis-cli", "--cluster", "create"),
            *(f"127.0.0.1:{port}" for port in ports),
            *("--cluster-replicas", "0", "--cluster-yes"),
        ],
        check=True,
        capture_output=True,
        timeout=60,
    )
    deadline = time.monotonic() + SERVER_START_TIMEOUT
    for port in ports:
        client = redis.Redis(port=port)
        while client.cluster("info").get("cluster_state") != "ok":
            if time.monotonic() > deadline:
                raise RuntimeError("the Redis Cluster was not ok in time")
            time.sleep(0.1)
        client.close()


# Measuring


def layout_settings(
    layout: str, backend: str, urls: int, lone_port: int, cluster_port: int
) -> Settings:
    cluster = layout != "one server"
    settings: dict[str, Any] = {
        "REDIS_URL": f"redis://127.0.0.1:{cluster_port if cluster else lone_port}",
        "DEDUP_REDIS_CLUSTER": cluster,
        "DEDUP_URL_BACKEND": backend,
        "DEDUP_URL_CAPACITY": urls,
        "DEDUP_URL_ERROR_RATE": ERROR_RATE,
    }
    if layout == "cluster, 1 shard":
        settings["DEDUP_REDIS_SHARDS"] = 1
    return Settings(settings)


def request_keys(start: int, stop: int) -> list[bytes]:
    return [
        hashlib.blake2b(str(number).encode(), digest_size=16).digest()
        for number in range(start, stop)
    ]


def client_process(settings: Settings, start: int, stop: int, barrier: Any, results: Any) -> None:
    """One worker: open the store, wait for the others, add keys *start* to *stop*."""
    store = redis_seen_store(settings, SPIDER, settings["DEDUP_URL_BACKEND"])
    store.open(url_signature(UrlRules(), store))
    keys = request_keys(start, stop)
    barrier.wait()
    started = time.monotonic()
    new = sum(store.add(key) for key in keys)
    ended = time.monotonic()
    store.close()
    results.put((started, ended, new))


@dataclass
class NodeFigures:
    port: int
    keys: int
    key_bytes: int
    commands: int
    cpu_seconds: float


@dataclass
class LayoutResult:
    backend: str
    layout: str
    urls: int
    seconds: float
    new: int
    nodes: list[NodeFigures]

    @property
    def per_second(self) -> float:
        return self.urls / self.seconds


def node_counters(port: int) -> tuple[int, float]:
    """Commands run (our store's, not ``INFO``'s own) and CPU seconds of a node."""
    client = redis.Redis(port=port)
    try:
        stats = client.info("commandstats")
        cpu = client.info("cpu")
    finally:
        client.close()
    commands = sum(
        int(figures["calls"])
        for name, figures in stats.items()
        if not name.endswith(("_info", "_cluster", "_ping", "_flushall", "_memory", "_dbsize"))
        and not name.endswith(("_scan", "_config", "_command", "_client"))
    )
    return commands, float(cpu["used_cpu_user"]) + float(cpu["used_cpu_sys"])


def node_holdings(port: int) -> tuple[int, int]:
    """Keys of a node, and their bytes (``MEMORY USAGE``, exact)."""
    client = redis.Redis(port=port)
    try:
        names = list(client.scan_iter(count=1000))
        return len(names), sum(int(client.memory_usage(name, samples=0) or 0) for name in names)
    finally:
        client.close()


def flush(ports: Sequence[int]) -> None:
    for port in ports:
        client = redis.Redis(port=port)
        client.flushall()
        client.config_resetstat()
        client.close()


def measure(
    backend: str, layout: str, urls: int, clients: int, lone_port: int, cluster_ports: Sequence[int]
) -> LayoutResult:
    ports = [lone_port] if layout == "one server" else list(cluster_ports)
    flush(ports)
    before = {port: node_counters(port) for port in ports}
    settings = layout_settings(layout, backend, urls, lone_port, cluster_ports[0])
    context = multiprocessing.get_context("fork")
    barrier = context.Barrier(clients)
    results = context.Queue()
    bounds = [urls * number // clients for number in range(clients + 1)]
    processes = [
        context.Process(
            target=client_process, args=(settings, bounds[n], bounds[n + 1], barrier, results)
        )
        for n in range(clients)
    ]
    for process in processes:
        process.start()
    outcomes = [results.get() for _ in processes]
    for process in processes:
        process.join()
        if process.exitcode:
            raise RuntimeError(f"a client of {backend} on {layout} failed ({process.exitcode})")
    seconds = max(end for _, end, _ in outcomes) - min(start for start, _, _ in outcomes)
    nodes = []
    for port in ports:
        commands, cpu = node_counters(port)
        keys, key_bytes = node_holdings(port)
        nodes.append(
            NodeFigures(port, keys, key_bytes, commands - before[port][0], cpu - before[port][1])
        )
    return LayoutResult(backend, layout, urls, seconds, sum(new for *_, new in outcomes), nodes)


# Report


def markdown(results: list[LayoutResult], args: argparse.Namespace, elapsed: float) -> str:
    lines = [
        "# A shared seen store over a Redis Cluster",
        "",
        f"{args.urls:,} distinct keys added by {args.clients} client processes at once; "
        "a 3-primary cluster against one server, in one run.",
        "",
        "| store | layout | keys/s | vs one server | new (must be all) | nodes holding data "
        "| keys a node | MB a node | commands a node | server CPU s a node |",
        "|---|---|---:|---:|---:|---:|---|---|---|---|",
    ]
    for backend in BACKENDS:
        peer = next(r for r in results if r.backend == backend and r.layout == "one server")
        for result in (r for r in results if r.backend == backend):
            holding = [node for node in result.nodes if node.keys]
            lines.append(
                f"| {backend} | {result.layout} | {result.per_second:,.0f} "
                f"| {result.per_second / peer.per_second:.2f}x | {result.new:,} "
                f"| {len(holding)} of {len(result.nodes)} "
                f"| {' / '.join(str(node.keys) for node in result.nodes)} "
                f"| {' / '.join(f'{node.key_bytes / 1e6:.2f}' for node in result.nodes)} "
                f"| {' / '.join(f'{node.commands:,}' for node in result.nodes)} "
                f"| {' / '.join(f'{node.cpu_seconds:.1f}' for node in result.nodes)} |"
            )
    facts = machine_facts("redis", "scrapy")
    facts["redis-server"] = subprocess.run(
        ["redis-server", "--version"], capture_output=True, text=True, check=False
    ).stdout.strip()
    lines += [
        "",
        "Machine: " + "; ".join(f"{name} {value}" for name, value in facts.items()),
        "",
        f"Command: `{shlex.join([sys.executable, *sys.argv])}`; {elapsed:.0f} s.",
    ]
    return "\n".join(lines)


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--urls", type=int, default=DEFAULT_URLS, help="distinct keys to add")
    parser.add_argument("--clients", type=int, default=DEFAULT_CLIENTS, help="client processes")
    parser.add_argument("--json", type=Path, help="also write the raw numbers here")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> None:
    args = parse_args(argv)
    started = time.monotonic()
    results = []
    with tempfile.TemporaryDirectory(prefix="redis-cluster-bench-") as work, ExitStack() as stack:
        lone_port = stack.enter_context(redis_server(Path(work), cluster=False))
        cluster_ports = [
            stack.enter_context(redis_server(Path(work), cluster=True)) for _ in range(3)
        ]
        make_cluster(cluster_ports)
        for backend in BACKENDS:
            for layout in LAYOUTS:
                print(f"{backend}, {layout}...", file=sys.stderr, flush=True)
                result = measure(backend, layout, args.urls, args.clients, lone_port, cluster_ports)
                if result.new != args.urls and backend == "redis":
                    raise RuntimeError(f"{backend} on {layout}: {result.new} new of {args.urls}")
                results.append(result)
    print(markdown(results, args, time.monotonic() - started))
    if args.json:
        args.json.write_text(json.dumps([asdict(result) for result in results], indent=2))


if __name__ == "__main__":
    main()
