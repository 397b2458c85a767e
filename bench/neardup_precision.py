"""Measure how often content dedup drops a distinct page of a real documentation site.

Usage (from the repository root)::

    .venv/bin/python bench/neardup_precision.py [ROOT ...] [--workers W]
        [--extractor trafilatura|resiliparse] [--json out.json]

What the numbers mean, and what the script promises about them:

* **Sites.** Each ROOT is one site: a folder of HTML documentation, read in place as the
  bytes a crawler would download. By default the HTML manuals of four Debian packages:
  ``python-sqlalchemy-doc`` (``/usr/share/doc/python-sqlalchemy-doc/html``),
  ``postgresql-doc-15``, ``python-django-doc`` and ``python3.11-doc``. A default root that
  is missing stops the script with the ``apt-get install`` line that brings it; the script
  installs nothing. The package owning a root (``dpkg -S``) and its version (``dpkg -s``)
  are reported.
* **Pages.** Every ``*.html`` file under a root, in sorted path order, each its own
  document: a manual has no two pages meant to say the same thing. Symbolic links (files
  and folders) are not followed, and a file whose resolved path or whose bytes were seen
  before, in this site or an earlier one, is the same document again: counted, not fed.
  The main text is :func:`crawler.content.extract.extract` of the bytes, with the page's
  ``file://`` URL, in ``--workers`` processes. A page whose main text is empty is counted
  and not fed (the item pipeline keeps such items unchecked).
* **Detectors.** ``NearDuplicateDetector()`` with its defaults, fed in that order as the
  item pipeline feeds it: the text fingerprinted with the size class of its page
  (``check_fingerprinted``; ``check(file_url, text)`` with a ``crawler`` that has no page
  sizes): one detector per site (the main figure), and one
  detector for all the sites together (their streams one after the other, in the order
  of the roots).
* **Dropped pairs.** Every decision with a match: the later page, which the content level
  would drop, and the earlier one it was called a copy of, with the match's kind and
  Hamming distance. Where the detector has them (a newer API), the match's ``stage``
  (``"exact"``, ``"first"``, ``"second"``) and ``similarity`` are shown too, and the
  decisions whose match verification rejected (``Decision.rejected``) are counted: such a
  page is kept.
* **Jaccard.** Of each dropped pair, the Jaccard similarity of the two pages' sets of word
  bigrams, on the words of :func:`crawler.content.fingerprints.normalize_text` (default options)
  of each page's whole visible text (resiliparse's plain text of the whole page, without
  its main-content heuristics), not of the extractions: two pages whose extractions are
  equal (an index page and the sidebar it shares with a search page) compare as 1.0 on
  their extractions and hide a page lost. The extractions' Jaccard is shown beside it.
  Two texts of one word or none compare as 1.0 when equal and 0.0 otherwise. Pages of a
  manual are distinct documents, so a dropped pair below 0.5 is a page lost for nothing:
  **the target is none**. Pairs at 0.5 or more share most of their wording (two release
  notes of one template, say) and are shown, not counted against the target.
* **Repetition.** For each page of a dropped pair, the share of its word bigrams that are
  distinct: near 1.0 for prose, low for a page dominated by one repeated phrase (an index,
  a changelog of "fixed bug in ..." lines), where a SimHash is built from few features.

The ``crawler`` measured is the one Python imports: this work tree, or another copy put
first with ``PYTHONPATH`` (e.g. ``git archive HEAD crawler | tar -x -C /tmp/head``); the
report gives its folder and, per module, whether it equals the committed ``HEAD``.
Extraction takes most of the time (about 4 minutes for the default sites in 2 processes).

Output is Markdown on stdout: per site the pages and the pairs dropped, the target line,
the pairs of lowest Jaccard, machine facts, the package versions, the code measured, the
command line and the elapsed time; ``--json`` also writes every pair and figure.
"""

from __future__ import annotations

import argparse
import functools
import hashlib
import importlib
import itertools
import json
import os
import shlex
import subprocess
import sys
import time
from collections import Counter
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from machine import machine_facts as shared_machine_facts

from crawler.content import fingerprints
from crawler.content.extract import decode_html, extract
from crawler.content.fingerprints import normalize_text
from crawler.content.neardup import NearDuplicateDetector
from crawler.defaults import DEDUP_EXTRACTOR

if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator, Sequence

REPO_DIR = Path(__file__).resolve().parent.parent

#: (Debian package, documentation root) of the default sites.
DEFAULT_SITES: Final = (
    ("python-sqlalchemy-doc", Path("/usr/share/doc/python-sqlalchemy-doc/html")),
    ("postgresql-doc-15", Path("/usr/share/doc/postgresql-doc-15/html")),
    ("python-django-doc", Path("/usr/share/doc/python-django-doc/html")),
    ("python3.11-doc", Path("/usr/share/doc/python3.11/html")),
)
#: A dropped pair of pages sharing fewer word bigrams than this is a distinct page lost.
TARGET_JACCARD: Final = 0.5
WORST_PAIRS: Final = 10
#: The worst pairs show the first characters of the dropped page's main text.
TEXT_START_CHARS: Final = 60
#: Bins of the Jaccard histogram: [0, 0.1), [0.1, 0.3), ... [0.8, 1.0].
JACCARD_BINS: Final = (0.0, 0.1, 0.3, 0.5, 0.8, 1.0)
#: The modules whose behaviour is measured, reported with their hash and git state.
MEASURED_MODULES: Final = (
    "crawler.content.extract",
    "crawler.content.fingerprints",
    "crawler.content.neardup",
    "crawler.content.index",
    "crawler.content.index.memory",
)


# Sites and pages


@dataclass(frozen=True)
class Site:
    """One documentation root, and the Debian package it comes from ("" when none)."""

    name: str
    root: Path
    package: str


@dataclass(frozen=True)
class Page:
    """One distinct HTML file of a site, as fed to the detectors."""

    site: str
    relative: str
    path: Path

    @property
    def key(self) -> str:
        return self.path.as_uri()


@dataclass
class SiteCounts:
    """What the walk of one site found."""

    html_files: int = 0
    symlinked_files: int = 0
    symlinked_folders: int = 0
    same_file: int = 0
    identical_bytes: int = 0
    distinct: int = 0


def owning_package(root: Path) -> str:
    """The Debian package that installed *root* (``dpkg -S``), ``""`` when none or no dpkg."""
    completed = _run(["dpkg", "-S", str(root)])
    if not completed:
        return ""
    return completed.splitlines()[0].partition(":")[0].split(",")[0].strip()


def package_version(package: str) -> str:
    """The ``Version:`` field of ``dpkg -s PACKAGE``, ``""`` when not installed."""
    for line in _run(["dpkg", "-s", package]).splitlines():
        if line.startswith("Version:"):
            return line.partition(":")[2].strip()
    return ""


def _run(command: Sequence[str], cwd: Path | None = None) -> str:
    try:
        completed = subprocess.run(command, cwd=cwd, capture_output=True, text=True, check=True)
    except (OSError, subprocess.CalledProcessError):
        return ""
    return completed.stdout.strip()


def resolve_sites(roots: Sequence[Path]) -> list[Site]:
    """The sites of *roots*, or the default ones.

    Raises :class:`SystemExit` naming a root that is not a folder, and for a missing
    default root the package to install.
    """
    if not roots:
        missing = [(package, root) for package, root in DEFAULT_SITES if not root.is_dir()]
        if missing:
            lines = [f"  {root}: from the Debian package {package}" for package, root in missing]
            packages = " ".join(package for package, _ in missing)
            raise SystemExit(
                "documentation roots not found:\n"
                + "\n".join(lines)
                + f"\ninstall them with: apt-get install {packages}"
                + "\n(or name the roots to measure as arguments)"
            )
        return [Site(package, root, package) for package, root in DEFAULT_SITES]
    sites = []
    for root in roots:
        if not root.is_dir():
            raise SystemExit(f"not a folder: {root}")
        package = owning_package(root.resolve())
        sites.append(Site(package or str(root), root, package))
    return sites


def walk_html(root: Path, counts: SiteCounts) -> Iterator[Path]:
    """The ``*.html`` files under *root* that are not symbolic links, in sorted path order.

    Symbolic links to files and to folders are counted in *counts*, not followed.
    """
    found = []
    for folder, folders, files in os.walk(root, followlinks=False):
        here = Path(folder)
        counts.symlinked_folders += sum((here / name).is_symlink() for name in folders)
        for name in files:
            if not name.endswith(".html"):
                continue
            counts.html_files += 1
            path = here / name
            if path.is_symlink():
                counts.symlinked_files += 1
                continue
            found.append(path)
    yield from sorted(found)


def distinct_pages(sites: Sequence[Site]) -> tuple[list[Page], dict[str, SiteCounts]]:
    """Every page of every site once: a resolved path or bytes seen before are skipped."""
    seen_paths: set[Path] = set()
    seen_contents: set[bytes] = set()
    pages: list[Page] = []
    counts: dict[str, SiteCounts] = {}
    for site in sites:
        site_counts = counts[site.name] = SiteCounts()
        for path in walk_html(site.root, site_counts):
            resolved = path.resolve()
            if resolved in seen_paths:
                site_counts.same_file += 1
                continue
            seen_paths.add(resolved)
            digest = hashlib.sha256(path.read_bytes()).digest()
            if digest in seen_contents:
                site_counts.identical_bytes += 1
                continue
            seen_contents.add(digest)
            site_counts.distinct += 1
            pages.append(Page(site.name, path.relative_to(site.root).as_posix(), resolved))
    return pages, counts


def extract_page(path: Path, extractor: str = DEDUP_EXTRACTOR) -> tuple[str, int]:
    """The main text of the HTML file at *path* and how much text the whole page holds
    (``0`` from a ``crawler`` that does not report it); run in a worker process."""
    # (a crawler without a choice of extractor is measured with its own)
    options: dict[str, Any] = {} if extractor == "trafilatura" else {"extractor": extractor}
    extraction = extract(path.read_bytes(), path.as_uri(), **options)
    return extraction.text, getattr(extraction, "page_chars", 0)


def extract_all(
    pages: Sequence[Page], workers: int, extractor: str = DEDUP_EXTRACTOR
) -> list[tuple[str, int]]:
    paths = [page.path for page in pages]
    extract_one = functools.partial(extract_page, extractor=extractor)
    if workers <= 1:
        return [extract_one(path) for path in paths]
    with ProcessPoolExecutor(max_workers=workers) as pool:
        return list(pool.map(extract_one, paths, chunksize=8))


# Similarity of two texts


def word_bigrams(normalized: str) -> list[tuple[str, str]]:
    words = normalized.split()
    return list(itertools.pairwise(words))


def bigram_jaccard(first: str, second: str) -> float:
    """Jaccard similarity of the word-bigram sets of two normalized texts.

    >>> bigram_jaccard("a b c", "a b d")
    0.3333333333333333
    >>> bigram_jaccard("word", "word"), bigram_jaccard("", "word")
    (1.0, 0.0)
    """
    first_set, second_set = set(word_bigrams(first)), set(word_bigrams(second))
    if not first_set and not second_set:
        return 1.0 if first == second else 0.0
    return len(first_set & second_set) / len(first_set | second_set)


@functools.cache
def visible_text(path: Path) -> str:
    """The normalized text of the whole HTML page at *path*: every word a reader sees,
    navigation and footers included."""
    from resiliparse.extract.html2text import extract_plain_text

    _, html = decode_html(path.read_bytes())
    return normalize_text(extract_plain_text(html, main_content=False))


def distinct_bigram_share(normalized: str) -> float:
    """Distinct word bigrams over all of them: low for a text of one repeated phrase."""
    bigrams = word_bigrams(normalized)
    return len(set(bigrams)) / len(bigrams) if bigrams else 1.0


# Running the detectors


@dataclass(frozen=True)
class PagePair:
    """A decision with a match: *dropped* was called a copy of *kept* (the earlier page).

    ``stage`` and ``similarity`` are ``None`` where the detector's ``Match`` has no such
    attribute.
    """

    site: str
    dropped: str
    kept: str
    kind: str
    distance: int
    stage: str | None
    similarity: float | None
    #: of the two pages' whole visible text
    jaccard: float
    #: of the two extractions
    main_text_jaccard: float
    dropped_chars: int
    kept_chars: int
    dropped_distinct_share: float
    kept_distinct_share: float
    cross_site: bool
    dropped_text_start: str


@dataclass
class StreamResult:
    """What one detector did with one stream of pages."""

    name: str
    fed: int = 0
    kept: int = 0
    seconds: float = 0.0
    #: whether ``Decision`` has ``rejected`` (the API with verification)
    has_rejected: bool = False
    dropped: list[PagePair] = field(default_factory=list)
    rejected: list[PagePair] = field(default_factory=list)

    def below_target(self) -> list[PagePair]:
        return [pair for pair in self.dropped if pair.jaccard < TARGET_JACCARD]

    def summary(self) -> dict[str, Any]:
        kinds = Counter(pair.kind for pair in self.dropped)
        stages = Counter(pair.stage for pair in self.dropped if pair.stage is not None)
        return {
            "name": self.name,
            "fed": self.fed,
            "kept": self.kept,
            "seconds": self.seconds,
            "dropped": len(self.dropped),
            "dropped_by_kind": dict(sorted(kinds.items())),
            "dropped_by_stage": dict(sorted(stages.items())),
            "below_target": len(self.below_target()),
            "cross_site": sum(pair.cross_site for pair in self.dropped),
            "rejected": len(self.rejected) if self.has_rejected else None,
        }


def page_label(page: Page, with_site: bool) -> str:
    return f"{page.site}:{page.relative}" if with_site else page.relative


def describe_pair(
    match: Any, page: Page, text: str, earlier: Page, normalized: dict[str, str], with_site: bool
) -> PagePair:
    similarity = getattr(match, "similarity", None)
    dropped_text, kept_text = normalized[page.key], normalized[earlier.key]
    return PagePair(
        site=page.site,
        dropped=page_label(page, with_site),
        kept=page_label(earlier, with_site),
        kind=str(match.kind),
        distance=int(match.distance),
        stage=getattr(match, "stage", None),
        similarity=None if similarity is None else float(similarity),
        jaccard=bigram_jaccard(visible_text(page.path), visible_text(earlier.path)),
        main_text_jaccard=bigram_jaccard(dropped_text, kept_text),
        dropped_chars=len(dropped_text),
        kept_chars=len(kept_text),
        dropped_distinct_share=distinct_bigram_share(dropped_text),
        kept_distinct_share=distinct_bigram_share(kept_text),
        cross_site=page.site != earlier.site,
        dropped_text_start=" ".join(text.split())[:TEXT_START_CHARS],
    )


def check_page(detector: NearDuplicateDetector, page: Page, text: str, page_chars: int) -> Any:
    """What the item pipeline decides for the page: its text fingerprinted with the size
    of the page it came from, where the detector takes one."""
    size_class = getattr(fingerprints, "page_size_class", None)
    if size_class is None or not page_chars:
        return detector.check(page.key, text)
    text_fingerprint = replace(detector.fingerprint(text), page_size=size_class(page_chars))
    return detector.check_fingerprinted(page.key, text_fingerprint)


def run_stream(
    name: str,
    stream: Iterable[tuple[Page, str, int]],
    normalized: dict[str, str],
    *,
    with_site: bool,
) -> StreamResult:
    """Feed *stream* to a new ``NearDuplicateDetector()`` and describe every match."""
    detector = NearDuplicateDetector()
    result = StreamResult(name)
    pages_by_key: dict[str, Page] = {}
    decisions = []
    started = time.perf_counter()
    for page, text, page_chars in stream:
        pages_by_key[page.key] = page
        decisions.append((page, text, check_page(detector, page, text, page_chars)))
    result.seconds = time.perf_counter() - started
    result.fed = len(decisions)
    result.kept = len(detector)
    for page, text, decision in decisions:
        result.has_rejected = result.has_rejected or hasattr(decision, "rejected")
        if decision.match is not None:
            earlier = pages_by_key[decision.match.key]
            result.dropped.append(
                describe_pair(decision.match, page, text, earlier, normalized, with_site)
            )
        rejected = getattr(decision, "rejected", None)
        if rejected is not None:
            earlier = pages_by_key[rejected.key]
            result.rejected.append(
                describe_pair(rejected, page, text, earlier, normalized, with_site)
            )
    return result


# Code and machine


def machine_facts() -> dict[str, Any]:
    return shared_machine_facts("trafilatura", "lxml", "xxhash")


def code_facts() -> dict[str, Any]:
    """Where ``crawler`` was imported from, and for each measured module its hash and
    whether it equals the committed ``HEAD`` version (when it is the repository's own)."""
    facts: dict[str, Any] = {
        "commit": _run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO_DIR),
        "crawler_dir": str(Path(importlib.import_module("crawler").__file__ or "").parent),
        "modules": {},
    }
    crawler_dir = Path(facts["crawler_dir"])
    for name in MEASURED_MODULES:
        source = Path(importlib.import_module(name).__file__ or "")
        content = source.read_bytes()
        relative = Path("crawler") / source.relative_to(crawler_dir)
        committed = subprocess.run(
            ["git", "show", f"HEAD:{relative.as_posix()}"],
            cwd=REPO_DIR,
            capture_output=True,
            check=False,
        )
        facts["modules"][name] = {
            "sha256": hashlib.sha256(content).hexdigest()[:12],
            "equals_head": committed.returncode == 0 and committed.stdout == content,
        }
    return facts


# Report


@dataclass
class Report:
    command: str
    facts: dict[str, Any]
    code: dict[str, Any]
    packages: dict[str, str]
    elapsed: float
    extraction_seconds: float
    workers: int
    sites: list[Site]
    counts: dict[str, SiteCounts]
    empty: dict[str, int]
    per_site: list[StreamResult]
    all_sites: StreamResult

    def to_json(self) -> dict[str, Any]:
        return {
            "command": self.command,
            "facts": self.facts,
            "code": self.code,
            "packages": self.packages,
            "elapsed": self.elapsed,
            "extraction_seconds": self.extraction_seconds,
            "workers": self.workers,
            "target_jaccard": TARGET_JACCARD,
            "sites": [
                {
                    "name": site.name,
                    "root": str(site.root),
                    "package": site.package,
                    **asdict(self.counts[site.name]),
                    "empty": self.empty[site.name],
                }
                for site in self.sites
            ],
            "streams": [
                {**result.summary(), "pairs": [asdict(pair) for pair in result.dropped]}
                | {"rejected_pairs": [asdict(pair) for pair in result.rejected]}
                for result in [*self.per_site, self.all_sites]
            ],
        }


def markdown_table(header: Sequence[str], rows: Iterable[Sequence[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def optional(value: float | str | None) -> str:
    if value is None:
        return "-"
    return f"{value:.3f}" if isinstance(value, float) else value


def count_or_dash(count: int | None) -> str:
    return "-" if count is None else f"{count:,}"


def pair_table(
    pairs: Sequence[PagePair], new_api: bool, *, with_site: bool = False, text: bool = False
) -> str:
    header = ["site"] if with_site else []
    header += ["dropped page", "earlier page", "kind", "distance"]
    header += ["stage", "similarity"] if new_api else []
    header += ["Jaccard, whole pages", "Jaccard, extractions"]
    header += ["chars (dropped / earlier)", "distinct bigrams (dropped / earlier)"]
    header += ["dropped page's text begins"] if text else []
    rows = []
    for pair in pairs:
        row = [pair.site] if with_site else []
        row += [f"`{pair.dropped}`", f"`{pair.kept}`", pair.kind, str(pair.distance)]
        row += [optional(pair.stage), optional(pair.similarity)] if new_api else []
        row += [
            f"{pair.jaccard:.3f}",
            f"{pair.main_text_jaccard:.3f}",
            f"{pair.dropped_chars:,} / {pair.kept_chars:,}",
            f"{pair.dropped_distinct_share:.2f} / {pair.kept_distinct_share:.2f}",
        ]
        row += [pair.dropped_text_start.replace("|", "\\|")] if text else []
        rows.append(row)
    return markdown_table(header, rows)


def jaccard_histogram(results: Sequence[StreamResult]) -> str:
    header = ["stream"]
    bins = list(itertools.pairwise(JACCARD_BINS))
    header += [
        f"[{low:.1f}, {high:.1f}{']' if high == JACCARD_BINS[-1] else ')'}" for low, high in bins
    ]
    rows = []
    for result in results:
        row = [result.name]
        for low, high in bins:
            row.append(
                str(
                    sum(
                        low <= pair.jaccard < high
                        or (high == JACCARD_BINS[-1] and pair.jaccard == high)
                        for pair in result.dropped
                    )
                )
            )
        rows.append(row)
    return markdown_table(header, rows)


def print_report(report: Report) -> None:
    streams = [*report.per_site, report.all_sites]
    new_api = any(
        pair.stage is not None or pair.similarity is not None
        for result in streams
        for pair in [*result.dropped, *result.rejected]
    )
    has_rejected = any(result.has_rejected for result in streams)
    facts, code = report.facts, report.code
    print("# Content-dedup precision on whole documentation sites\n")
    print(f"Command: `{report.command}`  ")
    print(
        f"Python {facts['python']}, trafilatura {facts['trafilatura']}, lxml {facts['lxml']}, "
        f"xxhash {facts['xxhash']}; {facts['cpu_count']} CPUs "
        f"({facts['cpu_model'] or 'unknown model'}); {facts['platform']}  "
    )
    modules = "; ".join(
        f"{name} {module['sha256']}…{'' if module['equals_head'] else ' (differs from HEAD)'}"
        for name, module in code["modules"].items()
    )
    print(
        f"Code measured: `crawler` from {code['crawler_dir']}, repository HEAD "
        f"{code['commit'] or 'unknown'}; sha256 of {modules}  "
    )
    print(
        "Debian packages: "
        + (
            ", ".join(
                f"{package} {version or 'not installed'}"
                for package, version in report.packages.items()
            )
            or "none (the roots belong to no package)"
        )
        + "  "
    )
    print(
        f"Elapsed: {report.elapsed:.0f} s, of which {report.extraction_seconds:.0f} s "
        f"extracting in {report.workers} processes and "
        f"{sum(result.seconds for result in streams):.1f} s in the detectors\n"
    )

    print("## Pages and pairs dropped\n")
    print(
        "One `NearDuplicateDetector()` per site, with its defaults; the last row is one "
        "detector fed all the sites in a row. *Dropped*: decisions with a match (the page "
        f"the content level would drop). *Below {TARGET_JACCARD}*: dropped pairs whose word-"
        f"bigram Jaccard, on the two pages' whole visible text, is under {TARGET_JACCARD}: "
        "distinct pages lost.\n"
    )
    header = ["site", "HTML files", "symlinks", "copies", "distinct", "empty text", "fed"]
    header += ["dropped", "exact", "near", f"below {TARGET_JACCARD}"]
    header += ["rejected by verification"] if has_rejected else []
    rows = []
    for site, result in zip(report.sites, report.per_site, strict=True):
        counts = report.counts[site.name]
        summary = result.summary()
        row = [
            site.name,
            f"{counts.html_files:,}",
            f"{counts.symlinked_files:,}",
            f"{counts.same_file + counts.identical_bytes:,}",
            f"{counts.distinct:,}",
            f"{report.empty[site.name]:,}",
            f"{result.fed:,}",
            f"{summary['dropped']:,}",
            f"{summary['dropped_by_kind'].get('exact', 0):,}",
            f"{summary['dropped_by_kind'].get('near', 0):,}",
            f"**{summary['below_target']:,}**",
        ]
        row += [count_or_dash(summary["rejected"])] if has_rejected else []
        rows.append(row)
    total = report.all_sites.summary()
    all_counts = list(report.counts.values())
    row = [
        "all sites, one detector",
        f"{sum(counts.html_files for counts in all_counts):,}",
        f"{sum(counts.symlinked_files for counts in all_counts):,}",
        f"{sum(counts.same_file + counts.identical_bytes for counts in all_counts):,}",
        f"{sum(counts.distinct for counts in all_counts):,}",
        f"{sum(report.empty.values()):,}",
        f"{report.all_sites.fed:,}",
        f"{total['dropped']:,} ({total['cross_site']:,} across sites)",
        f"{total['dropped_by_kind'].get('exact', 0):,}",
        f"{total['dropped_by_kind'].get('near', 0):,}",
        f"**{total['below_target']:,}**",
    ]
    row += [count_or_dash(total["rejected"])] if has_rejected else []
    rows.append(row)
    print(markdown_table(header, rows))
    symlinked_folders = sum(counts.symlinked_folders for counts in all_counts)
    if symlinked_folders:
        print(f"\n{symlinked_folders:,} symbolic links to folders were not followed.")
    if new_api:
        stages = Counter(pair.stage or "-" for result in report.per_site for pair in result.dropped)
        print(
            "\nDropped pairs by stage (per-site detectors): "
            + ", ".join(f"{stage} {count:,}" for stage, count in sorted(stages.items()))
        )
    if not has_rejected:
        print("\nRejected by verification: n/a (this detector's `Decision` has no `rejected`).")

    below = sum(len(result.below_target()) for result in report.per_site)
    dropped = sum(len(result.dropped) for result in report.per_site)
    print(
        f"\nTarget: dropped pairs with Jaccard < {TARGET_JACCARD} = 0 (per site): "
        f"**{'PASS' if below == 0 else 'FAIL'}** ({below:,} of {dropped:,} dropped pairs; "
        f"one detector for all sites: {report.all_sites.summary()['below_target']:,})\n"
    )

    print("## Jaccard of the dropped pairs\n")
    print(jaccard_histogram(streams))
    print()

    print(f"## The {WORST_PAIRS} dropped pairs of lowest Jaccard (per-site detectors)\n")
    worst = sorted(
        (pair for result in report.per_site for pair in result.dropped),
        key=lambda pair: (pair.jaccard, pair.dropped),
    )[:WORST_PAIRS]
    if worst:
        print(pair_table(worst, new_api, with_site=True, text=True))
    else:
        print("No page was dropped.")
    print()

    if has_rejected:
        print(f"## Rejected by verification: the {WORST_PAIRS} of highest Jaccard\n")
        rejected = sorted(
            (pair for result in report.per_site for pair in result.rejected),
            key=lambda pair: (-pair.jaccard, pair.dropped),
        )[:WORST_PAIRS]
        print(pair_table(rejected, new_api, with_site=True, text=True) if rejected else "None.")
        print()

    print("## Every dropped pair, by site, lowest Jaccard first\n")
    for result in streams:
        print(f"### {result.name}: {len(result.dropped):,} dropped\n")
        if result.dropped:
            ordered = sorted(result.dropped, key=lambda pair: (pair.jaccard, pair.dropped))
            print(pair_table(ordered, new_api))
            print()


# Main


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument(
        "roots",
        nargs="*",
        type=Path,
        help="documentation roots, one site each (default: "
        + ", ".join(str(root) for _, root in DEFAULT_SITES)
        + ")",
    )
    parser.add_argument(
        "--workers",
        type=int,
        default=os.cpu_count() or 1,
        help="extraction processes (default: CPUs)",
    )
    parser.add_argument(
        "--extractor",
        default=DEDUP_EXTRACTOR,
        help=f"the main-text extractor (DEDUP_EXTRACTOR; default: {DEDUP_EXTRACTOR})",
    )
    parser.add_argument("--json", type=Path, help="also write every pair and figure here")
    return parser.parse_args(argv)


def progress(message: str, started: float) -> None:
    print(f"[{time.perf_counter() - started:5.0f} s] {message}", file=sys.stderr, flush=True)


def main(argv: Sequence[str] | None = None) -> None:
    arguments = parse_args(argv)
    started = time.perf_counter()
    sites = resolve_sites(arguments.roots)
    pages, counts = distinct_pages(sites)
    progress(f"{len(pages):,} distinct pages in {len(sites)} sites; extracting", started)

    extraction_started = time.perf_counter()
    extracted = extract_all(pages, arguments.workers, arguments.extractor)
    extraction_seconds = time.perf_counter() - extraction_started
    progress("extracted; running the detectors", started)

    empty = {site.name: 0 for site in sites}
    fed: dict[str, list[tuple[Page, str, int]]] = {site.name: [] for site in sites}
    normalized: dict[str, str] = {}
    for page, (text, page_chars) in zip(pages, extracted, strict=True):
        if not text:
            empty[page.site] += 1
            continue
        fed[page.site].append((page, text, page_chars))
        normalized[page.key] = normalize_text(text)
    per_site = [
        run_stream(site.name, fed[site.name], normalized, with_site=False) for site in sites
    ]
    all_sites = run_stream(
        "all sites, one detector",
        (item for site in sites for item in fed[site.name]),
        normalized,
        with_site=True,
    )

    report = Report(
        command=shlex.join(getattr(sys, "orig_argv", [sys.executable, *sys.argv])),
        facts=machine_facts(),
        code=code_facts(),
        packages={site.package: package_version(site.package) for site in sites if site.package},
        elapsed=time.perf_counter() - started,
        extraction_seconds=extraction_seconds,
        workers=max(arguments.workers, 1),
        sites=sites,
        counts=counts,
        empty=empty,
        per_site=per_site,
        all_sites=all_sites,
    )
    print_report(report)
    if arguments.json:
        arguments.json.write_text(json.dumps(report.to_json(), indent=2, default=str) + "\n")


if __name__ == "__main__":
    main()
