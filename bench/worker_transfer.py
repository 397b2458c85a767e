"""What it costs to hand a page to a worker process and have the answer back.

The content level sends each page's bytes to its worker processes through a
``ProcessPoolExecutor`` (``crawler.content.page_fingerprinter``). This benchmark sends the
real pages of the corpus to two spawned workers that only take their length, so that what is
measured is the transfer: CPU milliseconds a page in the crawl process (the executor's
threads included) and in the workers, beside the peer measured in the same run: extracting
and fingerprinting the same pages in this process (``fingerprint_page``, the default
extractor), the work the transfer moves. The workers' start-up is measured apart (a pool
that takes no page) and left out.

    .venv/bin/python bench/worker_transfer.py [--corpus ../shared/corpus] [--rounds 3]
"""

from __future__ import annotations

import argparse
import gzip
import multiprocessing
import os
import platform
import resource
import statistics
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from crawler.content.pages import fingerprint_page

WORKERS = 2


def _cpu(who: int) -> float:
    usage = resource.getrusage(who)
    return usage.ru_utime + usage.ru_stime


def load_pages(corpus: Path) -> list[bytes]:
    english = sorted((corpus / "pages" / "wcxb-dev" / "html").glob("*.html.gz"))
    chinese = sorted((corpus / "pages" / "chinese-cx" / "RawHtml").glob("*"))
    return [gzip.decompress(path.read_bytes()) for path in english] + [
        path.read_bytes() for path in chinese
    ]


def one_pool(pages: list[bytes]) -> tuple[float, float]:
    """CPU seconds of this process while *pages* go to the workers and back, and of the
    workers from their start to their end."""
    children_before = _cpu(resource.RUSAGE_CHILDREN)
    processes = ProcessPoolExecutor(WORKERS, mp_context=multiprocessing.get_context("spawn"))
    list(processes.map(len, [b""] * 20))  # both workers started
    before = _cpu(resource.RUSAGE_SELF)
    for future in [processes.submit(len, page) for page in pages]:
        future.result()
    crawl_process = _cpu(resource.RUSAGE_SELF) - before
    processes.shutdown()
    return crawl_process, _cpu(resource.RUSAGE_CHILDREN) - children_before


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    default_corpus = os.environ.get("DEDUP_CORPUS_DIR") or "../shared/corpus"
    parser.add_argument("--corpus", type=Path, default=Path(default_corpus))
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--copies", type=int, default=6, help="each page sent N times a pool")
    args = parser.parse_args()
    pages = load_pages(args.corpus)
    if not pages:
        sys.exit(f"no pages in {args.corpus}/pages: point --corpus at the corpus")
    fingerprint_page(pages[0], extractor="auto")  # the extractor's imports, not timed
    before = _cpu(resource.RUSAGE_SELF)
    for page in pages:
        fingerprint_page(page, extractor="auto")
    extraction = (_cpu(resource.RUSAGE_SELF) - before) / len(pages) * 1000
    pages *= args.copies  # the workers' start-up then weighs little
    runs = []
    start_up = []
    for _ in range(args.rounds):
        start_up.append(one_pool([])[1])
        runs.append(one_pool(pages))
    workers_start = statistics.median(start_up)
    mean_size = sum(map(len, pages)) / len(pages)
    parent = statistics.median(run[0] for run in runs) / len(pages) * 1000
    workers = statistics.median(run[1] - workers_start for run in runs) / len(pages) * 1000
    print("# Handing pages to worker processes\n")
    print(
        f"{len(pages)} pages a pool ({mean_size / 1000:.0f} kB on average), {WORKERS} spawned "
        f"workers, median of {args.rounds} rounds; CPU ms a page (the workers' start-up, "
        f"{workers_start:.2f} s a pool, left out)\n"
    )
    print("| crawl process | workers | together | extracting here (peer) | together / peer |")
    print("|---:|---:|---:|---:|---:|")
    together = parent + workers
    print(
        f"| {parent:.3f} | {workers:.3f} | {together:.3f} | {extraction:.2f} "
        f"| {together / extraction:.3f} |"
    )
    print(f"\npython {platform.python_version()}, {os.cpu_count()} CPUs, {platform.platform()}")


if __name__ == "__main__":
    main()
