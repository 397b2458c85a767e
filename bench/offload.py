"""Where should the content pipeline extract and fingerprint: threads or processes?

Runs the pipeline's CPU work (trafilatura main text, normalization, SimHash) on
real pages three ways, in one run, interleaved:

* ``inline``: on the event loop itself (what must not happen: the reactor stalls);
* ``threads``: a ``ThreadPoolExecutor`` (what the pipeline uses);
* ``processes``: a ``ProcessPoolExecutor`` (pages pickled to worker processes).

For each: pages per second, and how late a 5 ms timer on the event loop fires
meanwhile (the reactor's responsiveness: downloads, scheduling, other items).

    .venv/bin/python bench/offload.py [--corpus ../shared/corpus] [--pages 150] [--workers 2]
"""

from __future__ import annotations

import argparse
import asyncio
import gzip
import os
import platform
import statistics
import sys
import time
from concurrent.futures import Executor, ProcessPoolExecutor, ThreadPoolExecutor
from pathlib import Path

from crawler.content.extract import main_text
from crawler.content.fingerprints import content_hash, normalize_text, simhash_of_normalized

TICK = 0.005


def fingerprint_page(html: bytes) -> tuple[int, bytes]:
    normalized = normalize_text(main_text(html))
    return simhash_of_normalized(normalized), content_hash(normalized)


def load_pages(corpus: Path, count: int) -> list[bytes]:
    english = sorted((corpus / "pages" / "wcxb-dev" / "html").glob("*.html.gz"))
    chinese = sorted((corpus / "pages" / "chinese-cx" / "RawHtml").glob("*.html"))
    pages = [gzip.decompress(path.read_bytes()) for path in english[: count * 4 // 5]]
    pages += [path.read_bytes() for path in chinese[: count - len(pages)]]
    return pages


async def run(executor: Executor | None, pages: list[bytes]) -> dict[str, float]:
    loop = asyncio.get_running_loop()
    lags: list[float] = []
    done = asyncio.Event()

    async def ticker() -> None:
        while not done.is_set():
            started = time.perf_counter()
            await asyncio.sleep(TICK)
            lags.append(time.perf_counter() - started - TICK)

    tick_task = asyncio.create_task(ticker())
    await asyncio.sleep(0)
    started = time.perf_counter()
    if executor is None:
        for html in pages:
            fingerprint_page(html)
            await asyncio.sleep(0)  # as an inline pipeline would yield between items
    else:
        await asyncio.gather(
            *(loop.run_in_executor(executor, fingerprint_page, html) for html in pages)
        )
    elapsed = time.perf_counter() - started
    done.set()
    await tick_task
    lags.sort()
    return {
        "pages_per_second": len(pages) / elapsed,
        "lag_median_ms": statistics.median(lags) * 1000 if lags else float("nan"),
        "lag_p99_ms": lags[int(len(lags) * 0.99)] * 1000 if lags else float("nan"),
        "lag_max_ms": lags[-1] * 1000 if lags else float("nan"),
    }


def main() -> None:
    default_corpus = Path(
        os.environ.get("DEDUP_CORPUS_DIR", Path(__file__).resolve().parents[1] / "../shared/corpus")
    )
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, default=default_corpus)
    parser.add_argument("--pages", type=int, default=150)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=2)
    args = parser.parse_args()
    pages = load_pages(args.corpus, args.pages)
    print(f"command: {' '.join(sys.argv)}")
    print(
        f"python {platform.python_version()}, {os.cpu_count()} CPUs, {len(pages)} pages "
        f"({sum(map(len, pages)) / len(pages) / 1024:.0f} KiB on average), "
        f"{args.workers} workers"
    )
    started = time.perf_counter()
    results: dict[str, list[dict[str, float]]] = {"inline": [], "threads": [], "processes": []}
    with (
        ThreadPoolExecutor(args.workers) as threads,
        ProcessPoolExecutor(args.workers) as processes,
    ):
        # warm both pools (imports, trafilatura's first-call setup) before timing
        list(processes.map(fingerprint_page, pages[: args.workers]))
        list(threads.map(fingerprint_page, pages[:1]))
        for _ in range(args.repeat):
            results["inline"].append(asyncio.run(run(None, pages)))
            results["threads"].append(asyncio.run(run(threads, pages)))
            results["processes"].append(asyncio.run(run(processes, pages)))
    base = max(r["pages_per_second"] for r in results["inline"])
    print()
    print("| mode | pages/s (best) | vs inline | event-loop lag median / p99 / max (ms) |")
    print("|---|---|---|---|")
    for mode, runs in results.items():
        best = max(runs, key=lambda r: r["pages_per_second"])
        print(
            f"| {mode} | {best['pages_per_second']:.1f} | "
            f"{best['pages_per_second'] / base:.2f}x | {best['lag_median_ms']:.1f} / "
            f"{best['lag_p99_ms']:.1f} / {best['lag_max_ms']:.1f} |"
        )
    print(f"\nelapsed: {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
