"""Each benchmark the manual shows runs to its report, on a small input (the real runs
take minutes; docs/benchmarks.md has their figures). The ones that read real pages or URLs
need the corpus, and are skipped without it, as the URL vector tests are."""

from __future__ import annotations

import importlib.metadata
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT

CORPUS_DIR = Path(os.environ.get("DEDUP_CORPUS_DIR") or REPO_ROOT.parent / "shared" / "corpus")

#: Each script of bench/, with small arguments, and whether it reads the corpus.
SMALL_RUNS = {
    "content": (["--pages", "3"], True),
    "crawl_overhead": (["--pages", "3", "--rounds", "1"], True),
    "dedup_text": (["--repeat", "1"], True),
    "item_pages": (["--pages", "3"], True),
    "learned_rules": (["--products", "12"], False),
    "manual_crawl": (["--rounds", "1"], False),  # the small site the test writes
    "neardup_index": (
        [
            *("--docs", "3000", "--peer-docs", "1000", "--queries", "50"),
            *("--repeat", "1", "--redis-docs", "500"),
        ],
        False,
    ),
    "neardup_precision": (["--workers", "1"], False),  # a small site written by the test
    "neardup_quality": (["--pages", "2", "--workers", "1"], True),
    "offload": (["--pages", "4", "--workers", "1", "--repeat", "1"], True),
    "recrawl": (["--pages", "60", "--rounds", "1", "--ttl", "4"], False),
    "redis_cluster": (["--urls", "3000"], False),
    "same_template": (["--pages", "6", "--extractor", "auto"], True),
    "redis_urlfilter": (["--requests", "2000", "--repeat", "1", "--scale-urls", "0"], True),
    "tracking_registries": ([], True),
    "urlfilter": (["--requests", "2000", "--repeat", "1"], True),
    "worker_transfer": (["--rounds", "1", "--copies", "1"], True),
}


def test_every_benchmark_has_a_small_run():
    scripts = {path.stem for path in (REPO_ROOT / "bench").glob("*.py")} - {"machine"}
    assert scripts == set(SMALL_RUNS)


def test_bench_extra_is_installed():
    requirements = importlib.metadata.requires("scrapy-crawl-dedup") or []
    bench = [
        requirement.split(";")[0].split(">=")[0].strip()
        for requirement in requirements
        if 'extra == "bench"' in requirement
    ]
    assert bench
    for name in bench:
        importlib.metadata.version(name)  # raises when the extra is not installed


def small_site(root: Path) -> Path:
    """Three pages of a manual: two distinct ones, and the index."""
    root.mkdir()
    for name, text in [
        ("install.html", "Install the package with pip, then add one line to the settings. " * 8),
        ("usage.html", "Run a crawl as usual and read the report it writes at the end. " * 8),
        (
            "index.html",
            'Contents: <a href="install.html">installing the package</a>; '
            '<a href="usage.html">running a crawl</a>; the report.',
        ),
    ]:
        (root / name).write_text(f"<html><body><article><p>{text}</p></article></body></html>")
    return root


@pytest.mark.timeout(600)
@pytest.mark.parametrize("script", sorted(SMALL_RUNS))
def test_each_benchmark_runs(script: str, tmp_path: Path):
    arguments, reads_corpus = SMALL_RUNS[script]
    if reads_corpus and not (CORPUS_DIR / "pages").is_dir():
        pytest.skip(f"corpus not found in {CORPUS_DIR} (set DEDUP_CORPUS_DIR)")
    if script in ("neardup_precision", "manual_crawl"):
        arguments = [str(small_site(tmp_path / "manual")), *arguments]
    result = subprocess.run(
        [sys.executable, str(REPO_ROOT / "bench" / f"{script}.py"), *arguments],
        cwd=REPO_ROOT,
        env={**os.environ, "DEDUP_CORPUS_DIR": str(CORPUS_DIR)},
        capture_output=True,
        text=True,
        timeout=540,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    if script == "dedup_text":
        assert json.loads(result.stdout)["dedup-text"]["kept"] > 0
    else:  # a Markdown report, its figures in tables
        assert "\n|---" in result.stdout, result.stdout[-2000:]
