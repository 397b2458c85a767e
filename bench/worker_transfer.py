"""What it costs to hand a page to a worker process and have the answer back.

The content level sends each page's bytes to its worker processes through
:class:`crawler.content.worker_processes.WorkerProcesses`: the thread that asks writes the
page to an idle worker's pipe and reads the answer itself. This benchmark sends the real
pages of the corpus to two spawned workers that only take their length, from four threads
(as the crawl's asyncio threads do), so that what is measured is the transfer: CPU
milliseconds a page in the crawl process (its threads included) and in the workers. Beside
it, in the same run and taking turns, the peers: ``concurrent.futures.ProcessPoolExecutor``
(what the content level used before, with its feeder and manager threads) called from the
same four threads, and extracting and fingerprinting the same pages in this process
(``fingerprint_page``, the default extractor), the work the transfer moves. The workers'
start-up is measured apart (workers that take no page) and left out.

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
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING

from crawler.content.pages import fingerprint_page
from crawler.content.worker_processes import WorkerProcesses

if TYPE_CHECKING:
    from collections.abc import Callable

WORKERS = 2
#: the threads that hand pages over, as the crawl's asyncio threads do
THREADS = 4


def _cpu(who: int) -> float:
    usage = resource.getrusage(who)
    return usage.ru_utime + usage.ru_stime


def load_pages(corpus: Path) -> list[bytes]:
    english = sorted((corpus / "pages" / "wcxb-dev" / "html").glob("*.html.gz"))
    chinese = sorted((corpus / "pages" / "chinese-cx" / "RawHtml").glob("*"))
    return [gzip.decompress(path.read_bytes()) for path in english] + [
        path.read_bytes() for path in chinese
    ]


def _handed_over(pages: list[bytes], call: Callable[[bytes], int]) -> float:
    """CPU seconds of this process while *pages* go to the workers and back."""
    before = _cpu(resource.RUSAGE_SELF)
    with ThreadPoolExecutor(THREADS) as threads:
        assert list(threads.map(call, pages)) == list(map(len, pages))
    return _cpu(resource.RUSAGE_SELF) - before


def ours(pages: list[bytes]) -> tuple[float, float]:
    """CPU seconds of this process while *pages* go to :class:`WorkerProcesses` and back,
    and of the workers from their start to their end."""
    children_before = _cpu(resource.RUSAGE_CHILDREN)
    processes = WorkerProcesses(WORKERS, initializer=int)  # nothing to load
    processes.started.result()
    for _ in range(WORKERS * 4):
        processes.run(len, (b"",))
    crawl_process = _handed_over(pages, lambda page: processes.run(len, (page,)))
    processes.close()
    return crawl_process, _cpu(resource.RUSAGE_CHILDREN) - children_before


def executor(pages: list[bytes]) -> tuple[float, float]:
    """The same through a ``ProcessPoolExecutor``."""
    children_before = _cpu(resource.RUSAGE_CHILDREN)
    processes = ProcessPoolExecutor(WORKERS, mp_context=multiprocessing.get_context("spawn"))
    list(processes.map(len, [b""] * 20))  # both workers started
    crawl_process = _handed_over(pages, lambda page: processes.submit(len, page).result())
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
    transports = {"WorkerProcesses (ours)": ours, "ProcessPoolExecutor (peer)": executor}
    runs: dict[str, list[tuple[float, float]]] = {name: [] for name in transports}
    start_up: dict[str, list[float]] = {name: [] for name in transports}
    for _ in range(args.rounds):
        for name, transport in transports.items():
            start_up[name].append(transport([])[1])
            runs[name].append(transport(pages))
    mean_size = sum(map(len, pages)) / len(pages)
    print("# Handing pages to worker processes\n")
    print(
        f"{len(pages)} pages a round ({mean_size / 1000:.0f} kB on average), {WORKERS} spawned "
        f"workers, {THREADS} threads handing them over, median of {args.rounds} rounds, the "
        f"two transports taking turns; CPU ms a page (the workers' start-up left out)\n"
    )
    print(
        "| transport | workers' start-up s | crawl process | workers | together "
        "| extracting here (peer) | together / extracting |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|")
    for name in transports:
        workers_start = statistics.median(start_up[name])
        parent = statistics.median(run[0] for run in runs[name]) / len(pages) * 1000
        workers = (
            statistics.median(run[1] - workers_start for run in runs[name]) / len(pages) * 1000
        )
        together = parent + workers
        print(
            f"| {name} | {workers_start:.2f} | {parent:.3f} | {workers:.3f} | {together:.3f} "
            f"| {extraction:.2f} | {together / extraction:.3f} |"
        )
    print(f"\npython {platform.python_version()}, {os.cpu_count()} CPUs, {platform.platform()}")


if __name__ == "__main__":
    main()
