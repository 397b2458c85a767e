"""Benchmark :class:`crawler.content.index.memory.MemoryFingerprintIndex` against
``simhash.SimhashIndex``.

Usage (from the repository root)::

    .venv/bin/python bench/neardup_index.py [--docs 1000000] [--peer-docs 100000]
                                            [--queries 10000] [--repeat 2]
                                            [--json out.json]

What the numbers mean, and what the script promises about them:

* **Peer.** ``simhash.SimhashIndex(objs=[], f=64, k=3)``: the simhash package's index, which
  splits a fingerprint into the same 4 bands of 16 bits. Its logger is set to ERROR so that
  its "Big bucket found" warning does not write a line per crowded query.
* **Workloads.** Fingerprints are random 64-bit integers (seeded :mod:`numpy` generator),
  keys are URL-like strings of about 35 characters. *Planted*: 1% of the indexed documents
  are 1 to 3 bits from an earlier one, and 1% of the queries are 1 to 3 bits from an
  indexed document, the rest random. *Crowded*: 10% of the indexed documents share the
  value of band 0 (a page template), and every query has that band value too, so every
  lookup walks the crowded bucket: the worst case.
* **Timing.** :func:`time.perf_counter` around the loop of ``add`` calls (per document) and
  around the loop of queries (per query), nothing else: the peer's ``Simhash`` objects are
  built before its loops. Each figure is the best of ``--repeat`` passes, ours and the
  peer's taking turns, each pass on a new index. Ratios are peer time / our time, both
  measured in this run at ``--peer-docs`` documents; our index is also measured at
  ``--docs``. The crowded scenario runs at most 100 queries on the peer (each walks the
  whole crowded bucket in Python).
* **Memory.** Separate builds under :mod:`tracemalloc`: the bytes an index still holds after
  its adds, divided by the number of documents. Ours is shown with and without the UTF-8
  bytes of the keys it stores; the peer's keys are inside its strings. The detector's whole
  storage (index plus exact content-hash table) is measured too, at ``--docs``.
* **Agreement.** At ``--peer-docs``, every planted query's result (keys within 3 bits) is
  compared between the two indexes.
* **Both stages.** At ``--docs``, the detector's whole look-up of a long text
  (``check_fingerprinted(..., add=False)``: content hash, the first stage within 3 bits,
  then the second stage up to 10 bits with each band probed one bit away, every candidate
  verified by its MinHash and numbers signatures), timed one query at a time: median and
  99th percentile, with the second stage on and off. Documents carry random MinHash and
  numbers signatures, as stored for real texts; 1% of the queries are 4 to 10 bits from an
  indexed document (what only the second stage finds) and 1% within 3 bits.
* **Redis.** With ``--redis-docs N`` (default 1,000,000; 0 to skip), a ``redis-server``
  on this machine and the corpus (``--corpus``, else ``$DEDUP_CORPUS_DIR``, else
  ``<repo>/../shared/corpus``), the script starts its own server (no persistence) and adds
  N documents to a :class:`crawler.content.index.redis.RedisContentIndex`, one ``check_and_add``
  call each, keyed by the real URLs of ``<corpus>/url/real_urls.tsv`` (from the 3,221st
  document on, each URL again with a ``p=<n>`` parameter); ``used_memory`` after minus
  before, per document, and the same without the lists that hold the keys
  (``MEMORY USAGE``).

Results go to stdout as Markdown (tables, machine facts, the command line, elapsed time);
``--json`` also writes the raw numbers.
"""

from __future__ import annotations

import argparse
import gc
import json
import logging
import os
import shlex
import shutil
import sys
import time
import tracemalloc
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from machine import machine_facts as shared_machine_facts
from simhash import Simhash, SimhashIndex

from crawler.content.fingerprints import MINHASH_BYTES
from crawler.content.index import BAND_BITS, BAND_MASK, MAX_QUERY_DISTANCE
from crawler.content.index.memory import MemoryFingerprintIndex
from crawler.content.neardup import NearDuplicateDetector, TextFingerprint

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

SEED = 20_240_611
PLANTED_SHARE = 0.01
CROWDED_SHARE = 0.10
CROWDED_BAND_VALUE = 0xBEEF
#: Queries in the crowded scenario, as a share of ``--queries`` (ours) and at most (peer).
CROWDED_QUERY_SHARE = 0.1
PEER_CROWDED_QUERIES = 100


@dataclass
class Workload:
    """Fingerprints to index, with their keys, and the queries to run against them."""

    name: str
    keys: list[str]
    fingerprints: list[int]
    queries: list[int]


def document_keys(count: int) -> list[str]:
    return [f"https://example.com/articles/{number:08d}" for number in range(count)]


def flip_random_bits(rng: np.random.Generator, fingerprint: int) -> int:
    for bit in rng.choice(64, size=int(rng.integers(1, MAX_QUERY_DISTANCE + 1)), replace=False):
        fingerprint ^= 1 << int(bit)
    return fingerprint


def random_fingerprints(rng: np.random.Generator, count: int) -> list[int]:
    values: list[int] = rng.integers(0, 2**64, size=count, dtype=np.uint64).tolist()
    return values


def planted_workload(documents: int, queries: int, seed: int) -> Workload:
    """Random fingerprints, 1% of them near an earlier one; 1% of queries near one indexed."""
    rng = np.random.default_rng(seed)
    fingerprints = random_fingerprints(rng, documents)
    planted = rng.choice(np.arange(1, documents), size=int(documents * PLANTED_SHARE))
    for position in planted.tolist():
        earlier = int(rng.integers(0, position))
        fingerprints[position] = flip_random_bits(rng, fingerprints[earlier])
    probes = random_fingerprints(rng, queries)
    for position in rng.choice(queries, size=int(queries * PLANTED_SHARE), replace=False):
        probes[int(position)] = flip_random_bits(rng, fingerprints[int(rng.integers(0, documents))])
    return Workload("planted", document_keys(documents), fingerprints, probes)


def with_band_zero(fingerprint: int, value: int) -> int:
    return (fingerprint & ~BAND_MASK) | value


def crowded_workload(documents: int, queries: int, seed: int) -> Workload:
    """10% of the documents, and every query, share the value of band 0."""
    rng = np.random.default_rng(seed + 1)
    fingerprints = random_fingerprints(rng, documents)
    crowded = rng.choice(documents, size=int(documents * CROWDED_SHARE), replace=False)
    for position in crowded.tolist():
        fingerprints[position] = with_band_zero(fingerprints[position], CROWDED_BAND_VALUE)
    probes = [
        with_band_zero(fingerprint, CROWDED_BAND_VALUE)
        for fingerprint in random_fingerprints(rng, queries)
    ]
    for position in range(0, queries, int(1 / PLANTED_SHARE)):
        source = fingerprints[int(rng.choice(crowded))]
        probes[position] = with_band_zero(flip_random_bits(rng, source), CROWDED_BAND_VALUE)
    return Workload("crowded", document_keys(documents), fingerprints, probes)


# Measurements


def seconds_per_call(loop: Callable[[], int]) -> float:
    """Time *loop*, which returns how many calls it made; return seconds per call."""
    gc.collect()
    started = time.perf_counter()
    calls = loop()
    return (time.perf_counter() - started) / calls


def build_ours(workload: Workload) -> MemoryFingerprintIndex:
    index = MemoryFingerprintIndex()
    for key, fingerprint in zip(workload.keys, workload.fingerprints, strict=True):
        index.add(key, fingerprint)
    return index


def build_peer(workload: Workload, fingerprints: Sequence[Simhash]) -> SimhashIndex:
    index = SimhashIndex([], f=64, k=MAX_QUERY_DISTANCE)
    for key, fingerprint in zip(workload.keys, fingerprints, strict=True):
        index.add(key, fingerprint)
    return index


@dataclass
class Timings:
    """Seconds per add and per query: the best of the repeats."""

    add_seconds: float = float("inf")
    query_seconds: float = float("inf")
    queries: int = 0
    hits: int = 0

    def keep_best(self, add_seconds: float, query_seconds: float, hits: list[int]) -> None:
        self.add_seconds = min(self.add_seconds, add_seconds)
        self.query_seconds = min(self.query_seconds, query_seconds)
        self.queries, self.hits = len(hits), sum(hits)


def time_ours(
    workload: Workload, queries: Sequence[int], timings: Timings
) -> MemoryFingerprintIndex:
    """Build our index from *workload*, query it with *queries*; record the times."""
    index = MemoryFingerprintIndex()
    keys, fingerprints = workload.keys, workload.fingerprints

    def add_all() -> int:
        add = index.add
        for key, fingerprint in zip(keys, fingerprints, strict=True):
            add(key, fingerprint)
        return len(keys)

    hits: list[int] = []

    def query_all() -> int:
        query = index.query
        hits.extend(len(query(probe, MAX_QUERY_DISTANCE)) for probe in queries)
        return len(queries)

    timings.keep_best(seconds_per_call(add_all), seconds_per_call(query_all), hits)
    return index


def time_peer(workload: Workload, queries: Sequence[int], timings: Timings) -> SimhashIndex:
    """The same for ``SimhashIndex``; its ``Simhash`` objects are built before the loops."""
    index = SimhashIndex([], f=64, k=MAX_QUERY_DISTANCE)
    keys = workload.keys
    fingerprints = [Simhash(value) for value in workload.fingerprints]
    probes = [Simhash(value) for value in queries]

    def add_all() -> int:
        add = index.add
        for key, fingerprint in zip(keys, fingerprints, strict=True):
            add(key, fingerprint)
        return len(keys)

    hits: list[int] = []

    def query_all() -> int:
        near = index.get_near_dups
        hits.extend(len(near(probe)) for probe in probes)
        return len(probes)

    timings.keep_best(seconds_per_call(add_all), seconds_per_call(query_all), hits)
    return index


def traced_bytes(build: Callable[[], object]) -> int:
    """Bytes still allocated by what *build* returns, measured with tracemalloc."""
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        built = build()
        gc.collect()
        used = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    del built
    return used


def detector_storage(workload: Workload) -> NearDuplicateDetector:
    """A detector holding the workload's documents (random 16-byte content hashes)."""
    rng = np.random.default_rng(SEED + 2)
    hashes = rng.bytes(16 * len(workload.keys))
    detector = NearDuplicateDetector()
    for number, (key, fingerprint) in enumerate(
        zip(workload.keys, workload.fingerprints, strict=True)
    ):
        detector.add_fingerprinted(key, fingerprint, hashes[16 * number : 16 * number + 16])
    return detector


def fingerprinted_detector(workload: Workload) -> NearDuplicateDetector:
    """A detector holding the workload's documents with random MinHash and numbers
    signatures (the sizes real texts store)."""
    rng = np.random.default_rng(SEED + 3)
    detector = NearDuplicateDetector()
    signatures = rng.bytes(MINHASH_BYTES * len(workload.keys))
    hashes = rng.bytes(16 * len(workload.keys))
    numbers = rng.integers(0, 2**63, size=len(workload.keys), dtype=np.int64).tolist()
    for row, (key, fingerprint) in enumerate(
        zip(workload.keys, workload.fingerprints, strict=True)
    ):
        detector.add_fingerprinted(
            key,
            fingerprint,
            hashes[16 * row : 16 * row + 16],
            minhash=signatures[MINHASH_BYTES * row : MINHASH_BYTES * (row + 1)],
            numbers=numbers[row],
        )
    return detector


def flip_bits(rng: np.random.Generator, fingerprint: int, low: int, high: int) -> int:
    for bit in rng.choice(64, size=int(rng.integers(low, high + 1)), replace=False):
        fingerprint ^= 1 << int(bit)
    return fingerprint


def lookup_times(
    detector: NearDuplicateDetector, workload: Workload, queries: int, *, second_stage: bool
) -> dict[str, float]:
    """Median and p99 microseconds of the detector's look-up of a long text (nothing added)."""
    rng = np.random.default_rng(SEED + 4)
    probes = random_fingerprints(rng, queries)
    for position in range(0, queries, 100):
        source = workload.fingerprints[int(rng.integers(0, len(workload.fingerprints)))]
        probes[position] = flip_bits(rng, source, MAX_QUERY_DISTANCE + 1, 10)
        if position + 1 < queries:
            probes[position + 1] = flip_bits(rng, source, 1, MAX_QUERY_DISTANCE)
    detector.second_stage = second_stage
    own = rng.bytes(MINHASH_BYTES)
    times = []
    for number, probe in enumerate(probes):
        text = TextFingerprint(
            normalized_length=5_000,
            fingerprint=probe,
            content_hash=number.to_bytes(16, "big"),
            minhash=own,
        )
        started = time.perf_counter_ns()
        detector.check_fingerprinted(f"query-{number}", text, add=False)
        times.append(time.perf_counter_ns() - started)
    detector.second_stage = True
    ordered = sorted(times)
    return {
        "median_us": ordered[len(ordered) // 2] / 1000,
        "p99_us": ordered[int(len(ordered) * 0.99)] / 1000,
    }


def corpus_dir(given: Path | None) -> Path:
    repo = Path(__file__).resolve().parent.parent
    return Path(given or os.environ.get("DEDUP_CORPUS_DIR") or repo.parent / "shared" / "corpus")


def redis_bytes_per_document(documents: int, corpus: Path) -> dict[str, Any] | None:
    """``used_memory`` per document of a Redis content index holding *documents* (all of
    it, and without the lists of keys), with real URLs as keys; ``None`` without a
    redis-server."""
    if shutil.which("redis-server") is None:
        print("Redis figure skipped: no redis-server on PATH", file=sys.stderr)
        return None
    if not (corpus / "url" / "real_urls.tsv").is_file():
        print(f"Redis figure skipped: no real URLs in {corpus} (--corpus)", file=sys.stderr)
        return None
    from redis_urlfilter import local_redis_server
    from urlfilter import load_seed_urls

    from crawler.content.index.redis import RedisContentIndex
    from crawler.redis.connection import RedisConnection

    seeds = load_seed_urls(corpus)
    rng = np.random.default_rng(SEED + 5)
    fingerprints = random_fingerprints(rng, documents)
    signatures = rng.bytes(MINHASH_BYTES * documents)
    hashes = rng.bytes(16 * documents)
    key_bytes = 0
    with local_redis_server() as url:
        connection = RedisConnection(url)
        connection.open()
        index = RedisContentIndex(connection, "bench:content")
        index.open({"bench": 1})
        client = connection.client
        before = int(client.info("memory")["used_memory"])
        for row, fingerprint in enumerate(fingerprints):
            # a real URL, made distinct by a parameter: pages 2, 3... of that URL
            seed = seeds[row % len(seeds)]
            key = seed if row < len(seeds) else f"{seed}{'&' if '?' in seed else '?'}p={row}"
            key_bytes += len(key.encode())
            index.check_and_add(
                key,
                fingerprint,
                hashes[16 * row : 16 * (row + 1)],
                MAX_QUERY_DISTANCE,
                minhash=signatures[MINHASH_BYTES * row : MINHASH_BYTES * (row + 1)],
                min_similarity=0.5,
            )
        after = int(client.info("memory")["used_memory"])
        key_lists = sum(
            int(client.memory_usage(key, samples=0) or 0)
            for key in client.scan_iter(match=f"{index.tag}:k:*", count=1000)
        )
    return {
        "bytes_per_doc": (after - before) / documents,
        "bytes_per_doc_without_keys": (after - before - key_lists) / documents,
        "key_bytes_per_doc": key_bytes / documents,
    }


def results_agree(ours: MemoryFingerprintIndex, peer: SimhashIndex, queries: Sequence[int]) -> bool:
    return all(
        sorted(key for key, _ in ours.query(probe, MAX_QUERY_DISTANCE))
        == sorted(peer.get_near_dups(Simhash(probe)))
        for probe in queries
    )


# Report


@dataclass
class Report:
    command: str
    facts: dict[str, Any]
    docs: int
    peer_docs: int
    figures: dict[str, Any] = field(default_factory=dict)
    elapsed: float = 0.0


def machine_facts() -> dict[str, Any]:
    return shared_machine_facts("numpy", "simhash")


def markdown_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def microseconds(seconds: float) -> str:
    return f"{seconds * 1e6:,.1f}"


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--docs", type=int, default=1_000_000, help="documents in our index")
    parser.add_argument(
        "--peer-docs",
        type=int,
        default=100_000,
        help="documents in both indexes for the side-by-side comparison",
    )
    parser.add_argument("--queries", type=int, default=10_000, help="queries per workload")
    parser.add_argument(
        "--repeat", type=int, default=2, help="passes of each timing; the best one counts"
    )
    parser.add_argument(
        "--redis-docs",
        type=int,
        default=1_000_000,
        help="documents in the Redis content index whose memory is measured (0: skip)",
    )
    parser.add_argument("--corpus", type=Path, help="corpus folder, for real URLs as keys")
    parser.add_argument("--json", type=Path, help="also write the raw figures here")
    return parser.parse_args(argv)


def progress(message: str, started: float) -> None:
    print(f"[{time.perf_counter() - started:5.0f} s] {message}", file=sys.stderr, flush=True)


def main(argv: Sequence[str] | None = None) -> None:
    args = parse_args(argv)
    started = time.perf_counter()
    logging.getLogger("simhash").setLevel(logging.ERROR)
    report = Report(
        command=shlex.join(getattr(sys, "orig_argv", [sys.executable, *sys.argv])),
        facts=machine_facts(),
        docs=args.docs,
        peer_docs=args.peer_docs,
    )
    figures = report.figures
    crowded_queries = max(1, int(args.queries * CROWDED_QUERY_SHARE))

    # Side by side at --peer-docs; ours and the peer take turns in each repeat.
    planted = planted_workload(args.peer_docs, args.queries, SEED)
    crowded = crowded_workload(args.peer_docs, crowded_queries, SEED)
    peer_crowded_queries = crowded.queries[:PEER_CROWDED_QUERIES]
    side = {
        name: Timings() for name in ("ours_planted", "peer_planted", "ours_crowded", "peer_crowded")
    }
    for repeat in range(args.repeat):
        progress(f"side by side at {args.peer_docs:,} documents, repeat {repeat + 1}", started)
        ours_index = time_ours(planted, planted.queries, side["ours_planted"])
        peer_index = time_peer(planted, planted.queries, side["peer_planted"])
        figures["agree"] = results_agree(ours_index, peer_index, planted.queries)
        del ours_index, peer_index
        time_ours(crowded, crowded.queries, side["ours_crowded"])
        time_peer(crowded, peer_crowded_queries, side["peer_crowded"])
    progress("memory side by side", started)
    figures["side_by_side"] = {name: asdict(timings) for name, timings in side.items()}
    figures["side_by_side"]["ours_bytes"] = traced_bytes(lambda: build_ours(planted))
    peer_simhashes = [Simhash(value) for value in planted.fingerprints]
    figures["side_by_side"]["peer_bytes"] = traced_bytes(
        lambda: build_peer(planted, peer_simhashes)
    )
    figures["side_by_side"]["key_bytes"] = sum(len(key) for key in planted.keys)

    # Ours at --docs.
    large = planted_workload(args.docs, args.queries, SEED)
    large_crowded = crowded_workload(args.docs, crowded_queries, SEED)
    large_planted, large_crowded_timings = Timings(), Timings()
    for repeat in range(args.repeat):
        progress(f"ours at {args.docs:,} documents, repeat {repeat + 1}", started)
        time_ours(large, large.queries, large_planted)
        time_ours(large_crowded, large_crowded.queries, large_crowded_timings)
    progress("memory at scale", started)
    figures["large"] = {
        "planted": asdict(large_planted),
        "crowded": asdict(large_crowded_timings),
        "index_bytes": traced_bytes(lambda: build_ours(large)),
        "detector_bytes": traced_bytes(lambda: detector_storage(large)),
        "key_bytes": sum(len(key) for key in large.keys),
    }
    progress("both stages at scale", started)
    detector = fingerprinted_detector(large)
    figures["stages"] = {
        "first_only": lookup_times(detector, large, args.queries, second_stage=False),
        "both": lookup_times(detector, large, args.queries, second_stage=True),
    }
    del detector
    if args.redis_docs:
        progress(f"Redis content index, {args.redis_docs:,} documents", started)
        figures["redis"] = {
            "docs": args.redis_docs,
            **(redis_bytes_per_document(args.redis_docs, corpus_dir(args.corpus)) or {}),
        }
    report.elapsed = time.perf_counter() - started
    print_report(report)
    if args.json:
        args.json.write_text(json.dumps(asdict(report), indent=2))


def print_report(report: Report) -> None:
    facts, figures = report.facts, report.figures
    side, large = figures["side_by_side"], figures["large"]
    print("# Fingerprint index vs simhash.SimhashIndex\n")
    print(f"Command: `{report.command}`  ")
    print(
        f"Python {facts['python']} ({facts['implementation']}), numpy {facts['numpy']}, "
        f"simhash {facts['simhash']}; {facts['cpu_count']} CPUs "
        f"({facts['cpu_model'] or 'unknown model'}); {facts['platform']}  "
    )
    print(f"Elapsed: {report.elapsed:.0f} s\n")

    peer_docs = report.peer_docs
    print(f"## Side by side at {peer_docs:,} documents\n")
    ours_planted, peer_planted = side["ours_planted"], side["peer_planted"]
    ours_crowded, peer_crowded = side["ours_crowded"], side["peer_crowded"]
    ours_without_keys = (side["ours_bytes"] - side["key_bytes"]) / peer_docs
    rows = [
        [
            "add, µs a document",
            microseconds(ours_planted["add_seconds"]),
            microseconds(peer_planted["add_seconds"]),
            f"{peer_planted['add_seconds'] / ours_planted['add_seconds']:.1f}x faster",
        ],
        [
            f"query, µs (planted: {ours_planted['queries']:,} queries, 1% near)",
            microseconds(ours_planted["query_seconds"]),
            microseconds(peer_planted["query_seconds"]),
            f"{peer_planted['query_seconds'] / ours_planted['query_seconds']:.1f}x faster",
        ],
        [
            f"query, µs (crowded bucket: {CROWDED_SHARE:.0%} of documents; "
            f"{ours_crowded['queries']:,} / {peer_crowded['queries']:,} queries)",
            microseconds(ours_crowded["query_seconds"]),
            microseconds(peer_crowded["query_seconds"]),
            f"{peer_crowded['query_seconds'] / ours_crowded['query_seconds']:.1f}x faster",
        ],
        [
            "memory, bytes a document (keys included)",
            f"{side['ours_bytes'] / peer_docs:,.1f}",
            f"{side['peer_bytes'] / peer_docs:,.1f}",
            f"{side['peer_bytes'] / side['ours_bytes']:.1f}x smaller",
        ],
        [
            "memory, bytes a document (without key bytes)",
            f"{ours_without_keys:,.1f}",
            "n/a (keys inside its strings)",
            "",
        ],
    ]
    print(markdown_table(["measure", "ours", "SimhashIndex", "ratio"], rows))
    agree = "identical" if figures["agree"] else "DIFFERENT"
    print(
        f"\nResults of the {ours_planted['queries']:,} planted queries: {agree} key sets "
        f"({ours_planted['hits']:,} hits for ours, {peer_planted['hits']:,} for the peer).\n"
    )

    docs = report.docs
    print(f"## Ours at {docs:,} documents\n")
    rows = [
        ["add, µs a document", microseconds(large["planted"]["add_seconds"])],
        [
            f"query, µs (planted: {large['planted']['queries']:,} queries, 1% near)",
            microseconds(large["planted"]["query_seconds"]),
        ],
        [
            f"query, µs (crowded bucket: {docs * CROWDED_SHARE:,.0f} documents share band 0; "
            f"{large['crowded']['queries']:,} queries)",
            microseconds(large["crowded"]["query_seconds"]),
        ],
        ["index memory, bytes a document (keys included)", f"{large['index_bytes'] / docs:.1f}"],
        [
            "index memory, bytes a document (without key bytes)",
            f"{(large['index_bytes'] - large['key_bytes']) / docs:.1f}",
        ],
        [
            "detector storage (index + content-hash table), bytes a document (keys included)",
            f"{large['detector_bytes'] / docs:.1f}",
        ],
        [
            "detector storage, bytes a document (without key bytes)",
            f"{(large['detector_bytes'] - large['key_bytes']) / docs:.1f}",
        ],
    ]
    stages = figures["stages"]
    rows += [
        [
            "look-up of a long text, first stage only, median / p99 µs",
            f"{stages['first_only']['median_us']:.1f} / {stages['first_only']['p99_us']:.1f}",
        ],
        [
            "look-up of a long text, both stages (second up to 10 bits), median / p99 µs",
            f"{stages['both']['median_us']:.1f} / {stages['both']['p99_us']:.1f}",
        ],
    ]
    redis = figures.get("redis")
    if redis and redis.get("bytes_per_doc") is not None:
        rows += [
            [
                f"Redis content index, used_memory a document ({redis['docs']:,} documents, "
                f"real URLs of {redis['key_bytes_per_doc']:.0f} bytes on average as keys)",
                f"{redis['bytes_per_doc']:.1f}",
            ],
            [
                "Redis content index, the same without its lists of keys",
                f"{redis['bytes_per_doc_without_keys']:.1f}",
            ],
        ]
    print(markdown_table(["measure", "ours"], rows))
    print(
        f"\nKeys average {large['key_bytes'] / docs:.0f} bytes. Band layout: 4 bands of "
        f"{BAND_BITS} bits; queries within {MAX_QUERY_DISTANCE} bits."
    )


if __name__ == "__main__":
    main()
