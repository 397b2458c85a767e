"""Benchmark main-text extraction and content fingerprints against their peers.

Usage (from the repository root)::

    .venv/bin/python bench/content.py [--corpus ../shared/corpus] [--pages N] [--choices]

What the numbers mean, and what the script promises about them:

* **Pages.** The real pages of ``<corpus>/pages``: ``wcxb-dev/html/*.html.gz`` (400 pages,
  mostly English) and ``chinese-cx/RawHtml/*.html`` (74 Chinese pages in GBK/GB2312),
  read in place as the bytes a crawler downloads. ``--pages N`` takes the first N of each
  folder. The corpus folder is ``--corpus``, else ``$DEDUP_CORPUS_DIR``, else
  ``<repo>/../shared/corpus``.
* **Extraction.** ms per page of :func:`crawler.content.extract.extract` (decoding included)
  against ``trafilatura.extract`` alone on the same bytes with the same options
  (:data:`crawler.content.extract.TRAFILATURA_OPTIONS`); both in one loop, their order
  alternating from page to page, after one untimed warm-up page.
* **Fingerprints.** On the text our extraction returned, ms per page of
  :func:`crawler.content.neardup.fingerprint_text` (normalization, content hash, SimHash, and the
  two signatures that verify a match: MinHash and numbers) against ``simhash.Simhash(text)``
  (the package's default: md5 of character 4-grams), timed the same way.
* **Budget.** Fingerprints must cost at most 0.5 ms a page on average over all pages (the
  fast extractor's parse and walk take 2 to 3 ms: the fingerprints should be a small
  part of a page's cost beside it), with PASS or FAIL; their share of extraction is shown.
* **Choices** (``--choices``, a few minutes more): the measurements behind the settings of
  :mod:`crawler.content.extract` and :mod:`crawler.content.fingerprints`. Token F1 of
  trafilatura's option sets against WCXB's human-checked main text; the Hamming distances
  that SimHash feature schemes give to pairs of near duplicates (a real article and the
  same article with one small change: numbers, a dropped or a replaced paragraph,
  boilerplate lines, a related articles block, or three of these at once) and to pairs of
  different articles (English: every pair of WCXB articles, and pairs sharing one
  boilerplate block; Chinese: every pair of the NetEase articles, one site); and the cost
  of the feature hash functions.

Output is Markdown on stdout: tables, machine facts, the command line, elapsed time.
"""

from __future__ import annotations

import argparse
import gc
import gzip
import hashlib
import itertools
import json
import os
import platform
import random
import re
import shlex
import statistics
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from importlib.metadata import version
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import simhash as simhash_package
import trafilatura
import xxhash

from crawler.content.extract import EXTRACTORS, TRAFILATURA_OPTIONS, extract
from crawler.content.fingerprints import (
    CJK_NGRAM,
    WORD_NGRAMS,
    hamming_distance,
    normalize_text,
    simhash_of_features,
    text_features,
)
from crawler.content.neardup import TextFingerprint, fingerprint_text
from crawler.defaults import DEDUP_EXTRACTOR

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence

REPO_DIR = Path(__file__).resolve().parent.parent
DEFAULT_CORPUS_DIR = REPO_DIR.parent / "shared" / "corpus"
CORPUS_ENV_VAR = "DEDUP_CORPUS_DIR"
FOLDERS = ("wcxb-dev", "chinese-cx")
FINGERPRINT_BUDGET_MS = 0.5
SEED = 20_240_501
NEAR_THRESHOLD = 3
#: Articles shorter than this (characters of main text) are left out of the feature study.
MIN_ARTICLE_CHARS = 500

_TOKEN = re.compile(r"\w+")
_DIGITS = re.compile(r"\d+")


# Corpus


@dataclass(frozen=True)
class Page:
    """One corpus page: its bytes as downloaded and, for WCXB, the human-checked text."""

    folder: str
    name: str
    body: bytes
    url: str | None = None
    gold_text: str | None = None


def resolve_corpus_dir(option: str | None) -> Path:
    """``--corpus``, else ``$DEDUP_CORPUS_DIR``, else ``<repo>/../shared/corpus``."""
    chosen = option or os.environ.get(CORPUS_ENV_VAR)
    return Path(chosen) if chosen else DEFAULT_CORPUS_DIR


def load_pages(corpus_dir: Path, pages_per_folder: int | None = None) -> list[Page]:
    """Return the pages of both folders, in name order (numeric), at most N per folder.

    Raises :class:`FileNotFoundError` naming the folder when a folder is missing.
    """
    pages: list[Page] = []
    wcxb = corpus_dir / "pages" / "wcxb-dev"
    chinese = corpus_dir / "pages" / "chinese-cx" / "RawHtml"
    for folder in (wcxb / "html", chinese):
        if not folder.is_dir():
            raise FileNotFoundError(f"corpus folder not found: {folder}")
    for path in sorted((wcxb / "html").glob("*.html.gz"))[:pages_per_folder]:
        name = path.name.split(".")[0]
        truth = json.loads((wcxb / "ground-truth" / f"{name}.json").read_text("utf-8"))
        pages.append(
            Page(
                "wcxb-dev",
                name,
                gzip.decompress(path.read_bytes()),
                truth.get("url"),
                truth["ground_truth"]["main_content"],
            )
        )
    chinese_paths = sorted(chinese.glob("*.html"), key=lambda path: int(path.stem))
    for path in chinese_paths[:pages_per_folder]:
        pages.append(Page("chinese-cx", path.stem, path.read_bytes()))
    return pages


# Speed: extraction and fingerprints, ours against the peers


@dataclass
class FolderTimes:
    """Summed seconds over the pages of one folder (or of all)."""

    pages: int = 0
    extract_ours: float = 0.0
    extract_trafilatura: float = 0.0
    fingerprint_ours: float = 0.0
    fingerprint_package: float = 0.0
    text_chars: int = 0

    def add(self, other: FolderTimes) -> None:
        self.pages += other.pages
        self.extract_ours += other.extract_ours
        self.extract_trafilatura += other.extract_trafilatura
        self.fingerprint_ours += other.fingerprint_ours
        self.fingerprint_package += other.fingerprint_package
        self.text_chars += other.text_chars

    def row(self) -> dict[str, float]:
        per_page = 1000.0 / max(self.pages, 1)
        return {
            "pages": self.pages,
            "extract_ours_ms": self.extract_ours * per_page,
            "extract_trafilatura_ms": self.extract_trafilatura * per_page,
            "extract_ratio": _ratio(self.extract_ours, self.extract_trafilatura),
            "fingerprint_ours_ms": self.fingerprint_ours * per_page,
            "fingerprint_package_ms": self.fingerprint_package * per_page,
            "fingerprint_ratio": _ratio(self.fingerprint_ours, self.fingerprint_package),
            "fingerprint_share": _ratio(self.fingerprint_ours, self.extract_ours),
            "text_chars": self.text_chars / max(self.pages, 1),
        }


@dataclass
class ContentBenchResult:
    """Per-folder and overall timings of :func:`bench_extraction_and_fingerprints`."""

    folders: dict[str, FolderTimes] = field(default_factory=dict)
    statuses: Counter[str] = field(default_factory=Counter)
    #: Pages on which ``simhash.Simhash(text)`` raised OverflowError (a character 4-gram
    #: seen more than 255 times: simhash issue #74 under NumPy 2).
    package_overflows: int = 0
    texts: list[tuple[Page, str]] = field(default_factory=list)

    @property
    def total(self) -> FolderTimes:
        total = FolderTimes()
        for times in self.folders.values():
            total.add(times)
        return total

    @property
    def fingerprint_share(self) -> float:
        """Fingerprinting time over extraction time, both ours, all pages."""
        return self.total.row()["fingerprint_share"]

    @property
    def fingerprint_ms(self) -> float:
        """Fingerprinting time a page, all pages."""
        return self.total.row()["fingerprint_ours_ms"]

    @property
    def budget_met(self) -> bool:
        return self.fingerprint_ms <= FINGERPRINT_BUDGET_MS


def _fingerprint(text: str) -> TextFingerprint:
    # what the detector computes of each text: content hash, SimHash and both signatures
    return fingerprint_text(text)


def _package_simhash(text: str) -> int:
    return int(simhash_package.Simhash(text).value)


def bench_extraction_and_fingerprints(pages: Sequence[Page]) -> ContentBenchResult:
    """Time extraction and fingerprinting, ours and the peers', page by page.

    Returns the summed times per folder, the extraction statuses and the extracted texts
    (for further measurements). The two sides of each comparison run on the same input,
    back to back, in an order that alternates from page to page.
    """
    result = ContentBenchResult()
    if not pages:
        return result
    warm_up = pages[0]
    _fingerprint(extract(warm_up.body, warm_up.url, extractor=DEDUP_EXTRACTOR).text)
    trafilatura.extract(warm_up.body, url=warm_up.url, **TRAFILATURA_OPTIONS)
    _package_simhash("warm up")
    gc.collect()
    clock = time.perf_counter
    for index, page in enumerate(pages):
        times = result.folders.setdefault(page.folder, FolderTimes())
        times.pages += 1
        ours_first = index % 2 == 0
        for side in (0, 1) if ours_first else (1, 0):
            started = clock()
            if side == 0:
                extraction = extract(page.body, page.url, extractor=DEDUP_EXTRACTOR)
                times.extract_ours += clock() - started
            else:
                trafilatura.extract(page.body, url=page.url, **TRAFILATURA_OPTIONS)
                times.extract_trafilatura += clock() - started
        result.statuses[extraction.status] += 1
        text = extraction.text
        times.text_chars += len(text)
        result.texts.append((page, text))
        for side in (0, 1) if ours_first else (1, 0):
            started = clock()
            if side == 0:
                _fingerprint(text)
                times.fingerprint_ours += clock() - started
            else:
                try:
                    _package_simhash(text)
                except OverflowError:
                    result.package_overflows += 1
                times.fingerprint_package += clock() - started
    return result


# Choices: trafilatura options


#: Option sets compared on the WCXB ground truth; the first is the one we use.
EXTRACTION_OPTION_SETS: dict[str, dict[str, Any]] = {
    "ours (trafilatura default balance, tables, no comments)": {},
    "favor_precision=True": {"favor_precision": True},
    "favor_recall=True": {"favor_recall": True},
    "include_tables=False": {"include_tables": False},
    "fast=True (no fallback extractors)": {"fast": True},
}


def token_f1(predicted: str, gold: str) -> tuple[float, float, float]:
    """Precision, recall and F1 of the multiset of lowercase word tokens."""
    predicted_tokens = Counter(_TOKEN.findall(predicted.lower()))
    gold_tokens = Counter(_TOKEN.findall(gold.lower()))
    if not predicted_tokens or not gold_tokens:
        same = not predicted_tokens and not gold_tokens
        return (1.0, 1.0, 1.0) if same else (0.0, 0.0, 0.0)
    common = sum((predicted_tokens & gold_tokens).values())
    if not common:
        return 0.0, 0.0, 0.0
    precision = common / sum(predicted_tokens.values())
    recall = common / sum(gold_tokens.values())
    return precision, recall, 2 * precision * recall / (precision + recall)


def compare_extraction_options(pages: Sequence[Page]) -> list[dict[str, Any]]:
    """Mean token precision, recall and F1 (and median F1, ms per page) of each option set
    of :data:`EXTRACTION_OPTION_SETS` on the pages that have a human-checked text."""
    judged = [page for page in pages if page.gold_text is not None]
    rows = []
    for label, overrides in EXTRACTION_OPTION_SETS.items():
        options = {**TRAFILATURA_OPTIONS, **overrides}
        scores = []
        elapsed = 0.0
        for page in judged:
            started = time.perf_counter()
            text = trafilatura.extract(page.body, url=page.url, **options) or ""
            elapsed += time.perf_counter() - started
            scores.append(token_f1(text, page.gold_text or ""))
        rows.append(_scored(label, scores, elapsed))
    # the other extractors DEDUP_EXTRACTOR names, decoding included as in a crawl
    for extractor in EXTRACTORS[1:]:
        scores, elapsed = [], 0.0
        for page in judged:
            started = time.perf_counter()
            text = extract(page.body, page.url, extractor=extractor).text
            elapsed += time.perf_counter() - started
            scores.append(token_f1(text, page.gold_text or ""))
        rows.append(_scored(f"{extractor} (DEDUP_EXTRACTOR = {extractor!r})", scores, elapsed))
    return rows


def _scored(
    label: str, scores: Sequence[tuple[float, float, float]], elapsed: float
) -> dict[str, Any]:
    return {
        "options": label,
        "pages": len(scores),
        "precision": statistics.fmean(score[0] for score in scores),
        "recall": statistics.fmean(score[1] for score in scores),
        "f1": statistics.fmean(score[2] for score in scores),
        "median_f1": statistics.median(score[2] for score in scores),
        "ms_per_page": 1000 * elapsed / max(len(scores), 1),
    }


# Choices: SimHash features


def _scheme(cjk_ngram: int, word_ngrams: tuple[int, ...]) -> Callable[[str], Mapping[str, int]]:
    def features(normalized: str) -> Mapping[str, int]:
        return text_features(normalized, cjk_ngram=cjk_ngram, word_ngrams=word_ngrams)

    return features


def _package_style_features(normalized: str) -> Mapping[str, int]:
    """The ``simhash`` package's own features: character 4-grams, spaces removed."""
    joined = normalized.replace(" ", "")
    return Counter(joined[start : start + 4] for start in range(max(len(joined) - 3, 1)))


def feature_schemes() -> dict[str, Callable[[str], Mapping[str, int]]]:
    """The feature schemes compared; ours is marked."""
    chosen = (CJK_NGRAM, WORD_NGRAMS)
    schemes: dict[str, Callable[[str], Mapping[str, int]]] = {}
    for cjk_ngram, word_ngrams in (
        (1, (1,)),
        (2, (1,)),
        (2, (2,)),
        (2, (3,)),
        (2, (1, 2)),
        (2, (1, 2, 3)),
        (3, (2,)),
    ):
        words = "-".join(str(size) for size in word_ngrams)
        label = f"CJK {cjk_ngram}-grams + word {words}-grams"
        if (cjk_ngram, word_ngrams) == chosen:
            label += " (ours)"
        schemes[label] = _scheme(cjk_ngram, word_ngrams)
    schemes["character 4-grams everywhere (package style)"] = _package_style_features
    return schemes


_BOILERPLATE = {
    "en": (
        "Advertisement",
        "Share this article: Facebook Twitter LinkedIn Email",
        "Subscribe to our newsletter for the latest updates",
        "Read more",
        "Cookie settings",
    ),
    "zh": (
        "广告",
        "分享到 微博 微信 QQ空间",
        "关注我们的微信公众号获取更多资讯",
        "阅读全文",
        "相关推荐",
    ),
}
PERTURBATIONS = (
    "numbers",
    "drop_paragraph",
    "replace_paragraph",
    "boilerplate",
    "related_block",
    "three_at_once",
)


def _paragraphs(text: str) -> list[str]:
    return [line for line in text.split("\n") if line.strip()]


def perturb(
    kind: str, text: str, language: str, rng: random.Random, donors: Sequence[str]
) -> str | None:
    """Return *text* changed the way two fetches of one article differ, or ``None`` when
    the change does not apply (too few paragraphs)."""
    paragraphs = _paragraphs(text)
    if kind == "numbers":
        renumbered = _DIGITS.sub(lambda match: str(rng.randrange(10 ** len(match[0]))), text)
        year, month, day = rng.randrange(2000, 2030), rng.randrange(1, 13), rng.randrange(1, 29)
        stamp = f"Updated {year}-{month:02d}-{day:02d} · {rng.randrange(100_000)} views"
        return stamp + "\n" + renumbered
    if kind in ("drop_paragraph", "replace_paragraph"):
        if len(paragraphs) < 3:
            return None
        position = rng.randrange(1, len(paragraphs))
        replacement = [rng.choice(_paragraphs(rng.choice(donors)))]
        middle = replacement if kind == "replace_paragraph" else []
        return "\n".join(paragraphs[:position] + middle + paragraphs[position + 1 :])
    if kind == "boilerplate":
        for line in rng.sample(_BOILERPLATE[language], 3):
            paragraphs.insert(rng.randrange(len(paragraphs) + 1), line)
        return "\n".join(paragraphs)
    if kind == "related_block":
        titles = [_title(rng.choice(donors), language) for _ in range(4)]
        heading = "Related articles" if language == "en" else "相关新闻"
        return "\n".join([text, heading, *titles])
    if kind == "three_at_once":
        changed = perturb("numbers", text, language, rng, donors) or text
        changed = perturb("boilerplate", changed, language, rng, donors) or changed
        return perturb("related_block", changed, language, rng, donors)
    raise ValueError(f"unknown perturbation {kind!r}")


def _title(text: str, language: str) -> str:
    first = _paragraphs(text)[0]
    return " ".join(first.split()[:8]) if language == "en" else first[:20]


@dataclass
class PairSets:
    """Text pairs that should (near) and should not (different) count as duplicates."""

    near: dict[str, list[tuple[str, str, str]]]  # language -> (kind, original, changed)
    articles: dict[str, list[str]]  # language -> texts; every pair is different
    shared_block: list[tuple[str, str]]  # different English articles, one shared block


def build_pair_sets(texts: Sequence[tuple[Page, str]], shared_pairs: int = 1000) -> PairSets:
    """Near-duplicate pairs (every article x every perturbation) and different pairs."""
    rng = random.Random(SEED)
    articles: dict[str, list[str]] = {"en": [], "zh": []}
    for page, text in texts:
        if len(text) >= MIN_ARTICLE_CHARS:
            articles["en" if page.folder == "wcxb-dev" else "zh"].append(text)
    near: dict[str, list[tuple[str, str, str]]] = {"en": [], "zh": []}
    for language, group in articles.items():
        if len(group) < 2:
            continue
        for index, text in enumerate(group):
            donors = group[:index] + group[index + 1 :]
            for kind in PERTURBATIONS:
                changed = perturb(kind, text, language, rng, donors)
                if changed is not None:
                    near[language].append((kind, text, changed))
    shared: list[tuple[str, str]] = []
    english = articles["en"]
    if len(english) >= 3:
        for _ in range(shared_pairs):
            first, second, third = rng.sample(english, 3)
            block = " ".join(third.split()[:40])
            shared.append((first + "\n" + block, second + "\n" + block))
    return PairSets(near, articles, shared)


def _distance_summary(distances: Sequence[int], near: bool) -> dict[str, float]:
    ordered = sorted(distances)
    within = sum(1 for distance in ordered if distance <= NEAR_THRESHOLD)
    summary: dict[str, float] = {"pairs": len(ordered), "mean": statistics.fmean(ordered)}
    if near:
        summary["max"] = ordered[-1]
    else:
        summary["min"] = ordered[0]
        summary["p1"] = ordered[len(ordered) // 100]
    summary["within_threshold"] = within / len(ordered)
    return summary


def compare_feature_schemes(pairs: PairSets) -> list[dict[str, Any]]:
    """Hamming distances of near-duplicate and different pairs under each feature scheme."""
    rows = []
    for label, features in feature_schemes().items():
        cache: dict[str, int] = {}

        def fingerprint(
            text: str,
            features: Callable[[str], Mapping[str, int]] = features,
            cache: dict[str, int] = cache,
        ) -> int:
            if text not in cache:
                cache[text] = simhash_of_features(features(normalize_text(text)))
            return cache[text]

        row: dict[str, Any] = {"scheme": label}
        for language, triples in pairs.near.items():
            if not triples:
                continue
            by_kind: dict[str, list[int]] = {}
            for kind, original, changed in triples:
                distance = hamming_distance(fingerprint(original), fingerprint(changed))
                by_kind.setdefault(kind, []).append(distance)
            everything = [distance for group in by_kind.values() for distance in group]
            row[f"near_{language}"] = _distance_summary(everything, near=True)
            row[f"near_{language}_by_kind"] = {
                kind: _distance_summary(group, near=True)["within_threshold"]
                for kind, group in by_kind.items()
            }
        for language, group in pairs.articles.items():
            if len(group) < 2:
                continue
            fingerprints = [fingerprint(text) for text in group]
            row[f"different_{language}"] = _distance_summary(
                [hamming_distance(a, b) for a, b in itertools.combinations(fingerprints, 2)],
                near=False,
            )
        if pairs.shared_block:
            row["different_en_shared_block"] = _distance_summary(
                [hamming_distance(fingerprint(a), fingerprint(b)) for a, b in pairs.shared_block],
                near=False,
            )
        rows.append(row)
    return rows


def _blake2b_64(data: bytes) -> bytes:
    return hashlib.blake2b(data, digest_size=8).digest()


def _md5(data: bytes) -> bytes:
    return hashlib.md5(data).digest()


def _int64_simhash(features: Mapping[str, int]) -> int:
    """The measured alternative to the package: the same SimHash, summed with NumPy int64."""
    if not features:
        return 0
    digests = b"".join(xxhash.xxh64_digest(feature.encode("utf-8")) for feature in features)
    bits = np.unpackbits(np.frombuffer(digests, dtype=np.uint8)).reshape(-1, 64)
    weights = np.fromiter(features.values(), dtype=np.int64, count=len(features))
    set_bits = (weights @ bits) * 2 > int(weights.sum())
    return int.from_bytes(np.packbits(set_bits).tobytes(), "big")


def _best_seconds(run: Callable[[], object], repeat: int = 3) -> float:
    best = float("inf")
    for _ in range(repeat):
        started = time.perf_counter()
        run()
        best = min(best, time.perf_counter() - started)
    return best


def compare_feature_hashes(texts: Sequence[str]) -> list[dict[str, Any]]:
    """ms per text (best of 3) to hash every feature with each candidate hash, and to build
    the SimHash from the features: ours (the package with exact weights), the package
    with its default md5, and a NumPy int64 build (the alternative we measured)."""
    feature_sets = [text_features(normalize_text(text)) for text in texts]
    encoded = [[feature.encode("utf-8") for feature in counts] for counts in feature_sets]
    rows: list[dict[str, Any]] = []
    for label, hash_function in (
        ("xxh64 (ours)", xxhash.xxh64_digest),
        ("blake2b, 8 bytes", _blake2b_64),
        ("md5 (package default)", _md5),
    ):

        def hash_all(hash_function: Callable[[bytes], bytes] = hash_function) -> None:
            for encoded_features in encoded:
                for feature in encoded_features:
                    hash_function(feature)

        rows.append({"what": f"hash every feature: {label}", "seconds": _best_seconds(hash_all)})

    def package_md5() -> None:
        for features in feature_sets:
            simhash_package.Simhash(
                {feature: min(weight, 255) for feature, weight in features.items()}, f=64
            )

    builds: dict[str, Callable[[], object]] = {
        "SimHash build: package + xxh64, exact weights (ours)": lambda: [
            simhash_of_features(features) for features in feature_sets
        ],
        "SimHash build: package default md5 (weights capped at 255)": package_md5,
        "SimHash build: NumPy int64 sums + xxh64 (alternative)": lambda: [
            _int64_simhash(features) for features in feature_sets
        ],
    }
    for label, build in builds.items():
        rows.append({"what": label, "seconds": _best_seconds(build)})
    same = all(
        simhash_of_features(features) == _int64_simhash(features) for features in feature_sets
    )
    rows.append({"what": f"ours == NumPy int64 build on every text: {same}", "seconds": None})
    for row in rows:
        if row["seconds"] is not None:
            row["ms_per_text"] = row["seconds"] * 1000 / max(len(texts), 1)
    return rows


# Report


def _ratio(numerator: float, denominator: float) -> float:
    return numerator / denominator if denominator else float("nan")


def machine_facts() -> dict[str, Any]:
    """Versions and hardware the numbers were measured with."""
    return {
        "python": platform.python_version(),
        "numpy": version("numpy"),
        "trafilatura": version("trafilatura"),
        "simhash": version("simhash"),
        "xxhash": version("xxhash"),
        "charset-normalizer": version("charset-normalizer"),
        "cpu_count": os.cpu_count(),
        "platform": platform.platform(),
    }


def format_speed(result: ContentBenchResult) -> list[str]:
    lines = [
        "## Speed: extraction and fingerprints",
        "",
        "| pages | n | text chars/page | extract ours ms | trafilatura ms | ratio "
        "| fingerprint ours ms | `Simhash(text)` ms | ratio | fingerprint / extraction |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    rows = [*result.folders.items(), ("all", result.total)]
    for name, times in rows:
        row = times.row()
        lines.append(
            f"| {name} | {row['pages']:.0f} | {row['text_chars']:.0f} "
            f"| {row['extract_ours_ms']:.1f} | {row['extract_trafilatura_ms']:.1f} "
            f"| {row['extract_ratio']:.2f} | {row['fingerprint_ours_ms']:.2f} "
            f"| {row['fingerprint_package_ms']:.2f} | {row['fingerprint_ratio']:.2f} "
            f"| {row['fingerprint_share']:.3f} |"
        )
    verdict = "PASS" if result.budget_met else "FAIL"
    statuses = ", ".join(f"{status}: {count}" for status, count in sorted(result.statuses.items()))
    lines += [
        "",
        f"Fingerprints cost <= {FINGERPRINT_BUDGET_MS} ms a page: "
        f"{result.fingerprint_ms:.2f} ms ({result.fingerprint_share:.0%} of extraction) "
        f"-> **{verdict}**",
        "",
        f"Extraction statuses: {statuses}. `Simhash(text)` overflowed (issue #74) on "
        f"{result.package_overflows} pages.",
    ]
    return lines


def format_extraction_options(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    lines = [
        "## Choice: extractor and trafilatura options (token F1 against WCXB's human-checked "
        "main text)",
        "",
        "| options | pages | precision | recall | F1 | median F1 | ms/page |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for row in rows:
        lines.append(
            f"| {row['options']} | {row['pages']} | {row['precision']:.3f} "
            f"| {row['recall']:.3f} | {row['f1']:.3f} | {row['median_f1']:.3f} "
            f"| {row['ms_per_page']:.1f} |"
        )
    return lines


def format_feature_schemes(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    lines = [
        "## Choice: SimHash features (Hamming distances; near = same article, one change)",
        "",
        f"`<=3`: share of pairs within the threshold of {NEAR_THRESHOLD}. Near pairs should "
        "be within it, different ones far from it (min, 1st percentile p1).",
        "",
        "| scheme | near en mean / max / <=3 | near zh mean / max / <=3 "
        "| different en mean / min / p1 / <=3 | different en, shared block mean / min / p1 "
        "| different zh (one site) mean / min / p1 / <=3 |",
        "|---|---|---|---|---|---|",
    ]

    def near(summary: Mapping[str, float] | None) -> str:
        if not summary:
            return "n/a"
        return f"{summary['mean']:.2f} / {summary['max']:.0f} / {summary['within_threshold']:.1%}"

    def different(summary: Mapping[str, float] | None, with_share: bool = True) -> str:
        if not summary:
            return "n/a"
        text = f"{summary['mean']:.1f} / {summary['min']:.0f} / {summary['p1']:.0f}"
        return text + (f" / {summary['within_threshold']:.2%}" if with_share else "")

    for row in rows:
        lines.append(
            f"| {row['scheme']} | {near(row.get('near_en'))} | {near(row.get('near_zh'))} "
            f"| {different(row.get('different_en'))} "
            f"| {different(row.get('different_en_shared_block'), with_share=False)} "
            f"| {different(row.get('different_zh'))} |"
        )
    lines += [
        "",
        "Near pairs within the threshold, by change (en / zh):",
        "",
        "| scheme | " + " | ".join(PERTURBATIONS) + " |",
        "|---|" + "---:|" * len(PERTURBATIONS),
    ]
    for row in rows:
        cells = []
        for kind in PERTURBATIONS:
            english = row.get("near_en_by_kind", {}).get(kind)
            chinese = row.get("near_zh_by_kind", {}).get(kind)
            cells.append(" / ".join("n/a" if v is None else f"{v:.0%}" for v in (english, chinese)))
        lines.append(f"| {row['scheme']} | " + " | ".join(cells) + " |")
    if rows:
        first = rows[0]
        described = ", ".join(
            f"{key}: {first[key]['pairs']:.0f}"
            for key in first
            if key != "scheme" and "by_kind" not in key
        )
        lines += ["", f"Pairs: {described}."]
    return lines


def format_feature_hashes(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    lines = [
        "## Choice: feature hash and SimHash build (ms per text)",
        "",
        "| what | ms/text |",
        "|---|---:|",
    ]
    lines += [
        f"| {row['what']} | {row['ms_per_text']:.3f} |"
        if "ms_per_text" in row
        else f"| {row['what']} | |"
        for row in rows
    ]
    return lines


def format_facts(facts: Mapping[str, Any], command: str, elapsed: float) -> list[str]:
    versions = ", ".join(
        f"{name} {facts[name]}"
        for name in ("python", "numpy", "trafilatura", "simhash", "xxhash", "charset-normalizer")
    )
    return [
        "## Machine",
        "",
        f"{versions}; {facts['cpu_count']} CPUs; {facts['platform']}",
        "",
        f"Command: `{command}`",
        "",
        f"Elapsed: {elapsed:.0f} s",
    ]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--corpus", help="corpus folder (default: $DEDUP_CORPUS_DIR or ../shared)")
    parser.add_argument("--pages", type=int, default=None, help="at most N pages per folder")
    parser.add_argument(
        "--choices",
        action="store_true",
        help="also measure the choices behind the settings (a few minutes more)",
    )
    options = parser.parse_args(argv)
    started = time.perf_counter()
    command = shlex.join(getattr(sys, "orig_argv", [sys.executable, *sys.argv]))
    pages = load_pages(resolve_corpus_dir(options.corpus), options.pages)
    result = bench_extraction_and_fingerprints(pages)
    lines = ["# Content extraction and fingerprints", "", *format_speed(result)]
    if options.choices:
        lines += ["", *format_extraction_options(compare_extraction_options(pages))]
        pairs = build_pair_sets(result.texts)
        lines += ["", *format_feature_schemes(compare_feature_schemes(pairs))]
        texts = [text for _, text in result.texts if text]
        lines += ["", *format_feature_hashes(compare_feature_hashes(texts))]
    lines += ["", *format_facts(machine_facts(), command, time.perf_counter() - started)]
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
