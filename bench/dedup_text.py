"""Benchmark ``scrapy dedup-text`` on lines of real text, against ``awk '!seen[$0]++'``.

    .venv/bin/python bench/dedup_text.py [--corpus ../shared/corpus] [--repeat N]

The input is built in a temporary folder from the corpus (never written into the
repository): every line of the main texts of ``<corpus>/pages`` (the 400 WCXB
human-checked texts and the 74 Chinese texts, decoded from GB18030), then the same
lines upper-cased with doubled spaces, then the same lines without their last word; the
whole written ``--repeat`` times. The peer, awk's one-liner, drops byte-equal lines only,
in the same run on the same file. Reported: records/s of each (the command's own figure
excludes its start-up; the wall time includes it), lines kept, and the peak memory (RSS)
of each process.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from machine import machine_facts

REPO_DIR = Path(__file__).resolve().parent.parent
DEFAULT_CORPUS_DIR = REPO_DIR.parent / "shared" / "corpus"


def corpus_lines(corpus_dir: Path) -> list[str]:
    """Every line of the corpus main texts, in file order."""
    pages = corpus_dir / "pages"
    lines: list[str] = []
    for path in sorted((pages / "wcxb-dev" / "ground-truth").glob("*.json")):
        text = json.loads(path.read_text(encoding="utf-8"))["ground_truth"]["main_content"]
        lines.extend(text.splitlines())
    for path in sorted((pages / "chinese-cx" / "Text").glob("*.txt")):
        lines.extend(path.read_bytes().decode("gb18030", "replace").splitlines())
    if not lines:
        raise FileNotFoundError(f"no corpus texts under {pages}")
    return lines


def build_input(lines: list[str], path: Path, repeat: int) -> int:
    """Write the benchmark input to *path*; return its number of lines."""
    variants = [
        lines,
        ["  ".join(line.upper().split()) for line in lines],
        [line.rsplit(" ", 1)[0] for line in lines],
    ]
    with path.open("w", encoding="utf-8") as file:
        for _ in range(repeat):
            for variant in variants:
                file.writelines(f"{line}\n" for line in variant)
    return repeat * sum(map(len, variants))


def timed(command: list[str], cwd: Path, stdout: Path) -> tuple[float, int, str]:
    """Run *command*; return its wall time, peak RSS in bytes and stderr."""
    with stdout.open("wb") as output, tempfile.TemporaryFile() as errors:
        started = time.perf_counter()
        process = subprocess.Popen(command, cwd=cwd, stdout=output, stderr=errors)
        _, status, usage = os.wait4(process.pid, 0)
        wall = time.perf_counter() - started
        process.returncode = os.waitstatus_to_exitcode(status)
        errors.seek(0)
        stderr = errors.read().decode()
    if process.returncode != 0:
        raise RuntimeError(f"{command[:4]} failed: {stderr[-2000:]}")
    return wall, usage.ru_maxrss * 1024, stderr


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", help="corpus folder (default: $DEDUP_CORPUS_DIR or ../shared)")
    parser.add_argument("--repeat", type=int, default=1, help="write the input N times")
    options = parser.parse_args()
    corpus_dir = Path(options.corpus or os.environ.get("DEDUP_CORPUS_DIR") or DEFAULT_CORPUS_DIR)
    with tempfile.TemporaryDirectory(prefix="bench-dedup-text-") as folder:
        work = Path(folder)
        source = work / "lines.txt"
        records = build_input(corpus_lines(corpus_dir), source, options.repeat)
        ours_wall, ours_rss, stderr = timed(
            [sys.executable, "-m", "scrapy.cmdline", "dedup-text", source.name, "--no-progress"],
            work,
            work / "kept.txt",
        )
        rate = re.search(r"\(([\d,]+) records/s\)", stderr)
        assert rate is not None, stderr
        ours_rate = int(rate.group(1).replace(",", ""))
        awk_wall, awk_rss, _ = timed(
            ["awk", "!seen[$0]++", source.name], work, work / "awk-kept.txt"
        )
        results: dict[str, Any] = {
            "input": {
                "records": records,
                "bytes": source.stat().st_size,
                "corpus": str(corpus_dir),
                "repeat": options.repeat,
            },
            "dedup-text": {
                "records_per_second": ours_rate,
                "wall_seconds": round(ours_wall, 2),
                "kept": _count_lines(work / "kept.txt"),
                "peak_rss_mb": round(ours_rss / 2**20, 1),
                "summary": stderr.strip().splitlines(),
            },
            "awk": {
                "records_per_second": round(records / awk_wall),
                "wall_seconds": round(awk_wall, 2),
                "kept": _count_lines(work / "awk-kept.txt"),
                "peak_rss_mb": round(awk_rss / 2**20, 1),
            },
            "machine": machine_facts("scrapy", "simhash"),
        }
        results["dedup-text_vs_awk_wall"] = round(awk_wall / ours_wall, 3)
    print(json.dumps(results, indent=2, ensure_ascii=False))


def _count_lines(path: Path) -> int:
    with path.open("rb") as file:
        return sum(1 for _ in file)


if __name__ == "__main__":
    main()
