"""Benchmark :class:`crawler.dupefilters.URLDupeFilter` against Scrapy's ``RFPDupeFilter``.

Usage (from the repository root)::

    .venv/bin/python bench/urlfilter.py [--corpus ../shared/corpus] [--requests 500000]
                                        [--repeat 2] [--json out.json]
                                        [--gc running|paused] [--profile 50000]

What the numbers mean, and what the script promises about them:

* **Workload.** A request stream of ``--requests`` URLs is built deterministically (seeded
  :class:`random.Random`) from the real URLs in ``<corpus>/url/real_urls.tsv``: about 60% are
  distinct pages that reuse the hosts and the path and query shapes of those URLs; the rest
  re-request an earlier page, exactly or as a variant that names the same page (tracking
  parameters added, query order shuffled, host case changed, trailing slash toggled,
  fragment added, or two of these at once). The corpus is read in place, never copied. The
  corpus folder is ``--corpus``, else ``$DEDUP_CORPUS_DIR``, else ``<repo>/../shared/corpus``.
* **Throughput.** Every filter is fed the same stream as ``scrapy.Request`` objects built
  before timing, new ones for each pass (Scrapy caches fingerprints per Request object),
  through a new crawler and a new filter; only the loop of ``request_seen`` calls is timed
  (:func:`time.perf_counter`), not ``open()``, ``close()`` or building the requests. Passes
  are interleaved (each repeat runs every filter once, in a shuffled order), and each
  figure is reported as a ratio against
  ``RFPDupeFilter`` measured in the same run; the CPU time of each pass is recorded too, so
  that a run on a busy machine shows it. Requests carry ``meta={"depth": 1}``, as Scrapy's
  ``DepthMiddleware`` leaves them. The garbage collector runs as in a crawl, with the
  pre-built requests frozen out of it (``--gc paused`` pauses it, as :mod:`timeit` does);
  the collections each filter causes are reported.
* **Memory.** Measured after the timing, in separate passes under :mod:`tracemalloc` (which
  slows everything; one worker process per CPU): the bytes a filter still holds once the
  stream has gone through it and the requests are released, divided by the number of
  requests it let through (``request_seen`` returned ``False``), broken down by what holds
  them. For the Bloom filter, its bit array's size per URL of capacity is shown too.
* **Dedup gain.** How many requests each filter let through, against the number of distinct
  pages in the stream, overall and per kind of duplicate.
* **Scheduler path.** Scrapy's scheduler calls ``dupefilter.log()`` for each request that
  ``request_seen`` filtered; a second, smaller measurement times both calls together.

Results go to stdout as Markdown (tables, the two targets of the issue, machine facts, the
command line, elapsed time); ``--json`` also writes the raw numbers.
"""

from __future__ import annotations

import argparse
import cProfile
import csv
import gc
import io
import json
import multiprocessing
import os
import pickle
import pstats
import random
import re
import shlex
import statistics
import string
import sys
import tempfile
import time
import tracemalloc
from collections import Counter
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urljoin, urlsplit, urlunsplit

from machine import machine_facts as shared_machine_facts
from scrapy import Request, Spider
from scrapy.dupefilters import BaseDupeFilter, RFPDupeFilter
from scrapy.utils.misc import build_from_crawler
from scrapy.utils.test import get_crawler
from w3lib.url import canonicalize_url as w3lib_canonicalize_url

from crawler.dupefilters import URLDupeFilter
from crawler.url.canonical import UrlCanonicalizer
from crawler.url.canonical import canonicalize_url as dedup_canonicalize_url
from crawler.url.stores.bloom import BloomSeenSet

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator, Sequence

    from scrapy.crawler import Crawler

REPO_DIR = Path(__file__).resolve().parent.parent
DEFAULT_CORPUS_DIR = REPO_DIR.parent / "shared" / "corpus"
CORPUS_ENV_VAR = "DEDUP_CORPUS_DIR"

DEFAULT_REQUESTS = 500_000
#: With 2, the default run takes about 4 minutes on a 2-core machine (3 would take 5).
DEFAULT_REPEAT = 2
SEED = 20_240_611
ERROR_RATE = 0.001
#: Share of the stream that is a page not requested before.
DISTINCT_SHARE = 0.6
#: Requests timed with ``log()`` as the scheduler calls it (a prefix of the stream).
SCHEDULER_PATH_REQUESTS = 50_000
#: URLs canonicalized in the micro-benchmark (a prefix of the stream).
MICRO_URLS = 100_000
#: What ``DepthMiddleware`` leaves on a request before the scheduler sees it.
REQUEST_META: dict[str, Any] = {"depth": 1}

#: Targets from the issue.
TARGET_SPEEDUP = 2.0
TARGET_BLOOM_BYTES_PER_URL = 2.5

#: Duplicate variants and their share among duplicates.
DUPLICATE_WEIGHTS: dict[str, float] = {
    "exact": 0.30,
    "tracking-params": 0.20,
    "query-order": 0.08,
    "host-case": 0.08,
    "trailing-slash": 0.12,
    "fragment": 0.12,
    "two-at-once": 0.10,
}
#: Variants that ``two-at-once`` combines.
COMBINABLE = ("tracking-params", "query-order", "host-case", "trailing-slash", "fragment")
#: A duplicate re-requests one of this many latest pages half of the time (links to a page
#: cluster in time), any earlier page otherwise.
RECENT_PAGES = 1_000

_RELATIVE_BASE = re.compile(r"\(relative to (\S+)\)")
_PLAIN_TOKEN = re.compile(r"^[A-Za-z0-9._~,+-]+$")
_WORD_OR_NUMBER = re.compile(r"[A-Za-z]{3,}|[0-9]+")
_EXTENSION = re.compile(r"\.[A-Za-z0-9]{1,5}$")
_HEX_VALUE = re.compile(r"^[0-9a-f]{16,}$")
_TRACKING_NAMES = ("utm_", "fbclid", "gclid", "srsltid", "mc_", "_ga")
_FRAGMENTS = ("top", "comments", "respond", "main-content", "content", "more")
_UTM_SOURCES = ("newsletter", "twitter", "facebook", "rss", "linkedin", "google")
_UTM_MEDIUMS = ("email", "social", "cpc", "rss-feed", "referral")
_UTM_CAMPAIGNS = ("spring_sale", "weekly-digest", "launch2024", "alle", "breaking")
_TOKEN_CHARS = string.ascii_letters + string.digits + "_-"


# Workload


@dataclass
class UrlShape:
    """The parts of a real URL that new pages on its site are modelled on."""

    scheme: str
    netloc: str
    #: Path segments without their ``;`` parameters (a session id, ``;art114,3177663``)...
    segments: list[str]
    #: ...which are kept as they are, one string per segment (``""`` for none).
    segment_params: list[str]
    trailing_slash: bool
    query: list[tuple[str, str | None]]


@dataclass
class Workload:
    """The request stream: URLs in request order, the kind of each, and the ground truth."""

    urls: list[str]
    kinds: list[str]
    distinct_pages: int
    seed_urls: int
    seed_hosts: int

    def mix(self) -> Counter[str]:
        return Counter(self.kinds)


def resolve_corpus_dir(option: str | None) -> Path:
    """``--corpus``, else ``$DEDUP_CORPUS_DIR``, else ``<repo>/../shared/corpus``."""
    chosen = option or os.environ.get(CORPUS_ENV_VAR)
    return Path(chosen) if chosen else DEFAULT_CORPUS_DIR


def load_seed_urls(corpus_dir: Path) -> list[str]:
    """Return the absolute http(s) URLs of ``<corpus>/url/real_urls.tsv``, in file order,
    without repeats.

    * rows whose source says ``(relative to BASE)`` are resolved against ``BASE``;
    * surrounding whitespace is removed, as a link extractor does;
    * other schemes and unparsable URLs are skipped;
    * raises :class:`ValueError` when the file does not have a ``source``/``url`` header.
    """
    path = corpus_dir / "url" / "real_urls.tsv"
    seen: dict[str, None] = {}
    with path.open(encoding="utf-8", newline="") as tsv:
        rows = csv.reader(tsv, delimiter="\t", quoting=csv.QUOTE_NONE)
        if next(rows, None) != ["source", "url"]:
            raise ValueError(f"{path} should start with a 'source<TAB>url' header")
        for row in rows:
            if len(row) != 2:
                continue
            source, url = row
            base = _RELATIVE_BASE.search(source)
            if base:
                url = urljoin(base.group(1), url)
            url = url.strip()
            try:
                parts = urlsplit(url)
            except ValueError:
                continue
            if parts.scheme in ("http", "https") and parts.hostname:
                seen[url] = None
    return list(seen)


def url_shape(url: str) -> UrlShape:
    """Split *url* into the parts :class:`PageGenerator` varies."""
    parts = urlsplit(url)
    segments = parts.path.split("/")[1:]
    trailing_slash = bool(segments) and segments[-1] == ""
    if trailing_slash:
        segments.pop()
    params = []
    for index, segment in enumerate(segments):
        base, semicolon, rest = segment.partition(";")
        segments[index] = base
        params.append(semicolon + rest)
    query: list[tuple[str, str | None]] = []
    for query_field in parts.query.split("&") if parts.query else []:
        name, equals, value = query_field.partition("=")
        query.append((name, value if equals else None))
    return UrlShape(parts.scheme, parts.netloc, segments, params, trailing_slash, query)


class PageGenerator:
    """Make new page URLs in the shape of real ones, and duplicate variants of pages.

    * :meth:`new_page` puts a caller-given unique number in each page (in a numeric query
      value, else a numeric path segment, else a slug), so pages never name the same
      resource; other numbers, hex tokens and slug words are redrawn at random;
    * :meth:`variant` returns another spelling of a page that any reasonable server serves
      as that same page, or ``None`` when that kind does not apply to the URL;
    * the output depends only on the seed URLs and the state of *rng*.
    """

    def __init__(self, seed_urls: Sequence[str], rng: random.Random) -> None:
        self.rng = rng
        self.shapes = [url_shape(url) for url in seed_urls]
        words: set[str] = set()
        for shape in self.shapes:
            for segment in shape.segments:
                if "-" in segment or "_" in segment:
                    words.update(re.findall(r"[a-z]{3,}", segment.lower()))
        self.words = sorted(words)

    # New pages

    def new_page(self, unique_number: int) -> str:
        shape = self.rng.choice(self.shapes)
        unique = str(unique_number)
        segments = [self._vary_segment(segment) for segment in shape.segments]
        query = [(name, self._vary_value(value)) for name, value in shape.query]
        if not self._place_in_query(query, unique) and not self._place_in_number(
            shape.segments, segments, unique
        ):
            self._place_in_slug(segments, unique)
        params = shape.segment_params + [""] * (len(segments) - len(shape.segments))
        path = "/" + "/".join(map(str.__add__, segments, params))
        if shape.trailing_slash and segments:
            path += "/"
        query_string = "&".join(
            name if value is None else f"{name}={value}" for name, value in query
        )
        return urlunsplit((shape.scheme, shape.netloc, path, query_string, ""))

    @staticmethod
    def _place_in_query(query: list[tuple[str, str | None]], unique: str) -> bool:
        for index, (name, value) in enumerate(query):
            if value is not None and value.isdigit() and not name.startswith(_TRACKING_NAMES):
                query[index] = (name, unique)
                return True
        return False

    @staticmethod
    def _place_in_number(original: list[str], segments: list[str], unique: str) -> bool:
        for index in range(len(original) - 1, -1, -1):
            segment = original[index]
            if segment.isdigit() and len(segment) >= 3 and not _looks_like_year(segment):
                segments[index] = unique
                return True
        return False

    def _place_in_slug(self, segments: list[str], unique: str) -> None:
        for index in range(len(segments) - 1, -1, -1):
            segment = segments[index]
            if any(char.isalpha() for char in segment):
                extension = _EXTENSION.search(segment)
                cut = extension.start() if extension else len(segment)
                segments[index] = f"{segment[:cut]}-{unique}{segment[cut:]}"
                return
        segments.append(f"{self.rng.choice(self.words)}-{self.rng.choice(self.words)}-{unique}")

    def _vary_segment(self, segment: str) -> str:
        if segment.isdigit():
            return self._vary_number(segment)
        if ("-" in segment or "_" in segment) and _PLAIN_TOKEN.match(segment):
            extension = _EXTENSION.search(segment)
            cut = extension.start() if extension else len(segment)
            return _WORD_OR_NUMBER.sub(self._vary_token, segment[:cut]) + segment[cut:]
        return segment

    def _vary_value(self, value: str | None) -> str | None:
        if value is None:
            return None
        if value.isdigit():
            return self._vary_number(value)
        if _HEX_VALUE.match(value):
            return "".join(self.rng.choice("0123456789abcdef") for _ in value)
        return value

    def _vary_token(self, match: re.Match[str]) -> str:
        token = match.group()
        if token.isdigit():
            return self._vary_number(token)
        word = self.rng.choice(self.words)
        return word.capitalize() if token[0].isupper() else word

    def _vary_number(self, number: str) -> str:
        if _looks_like_year(number):
            return str(self.rng.randint(2005, 2025))
        if len(number) <= 2:
            return f"{self.rng.randint(1, 28):0{len(number)}d}"
        return str(self.rng.randrange(10 ** (len(number) - 1), 10 ** len(number)))

    # Duplicate variants

    def variant(self, url: str, kind: str) -> str | None:
        if kind == "exact":
            return url
        if kind == "two-at-once":
            first, second = self.rng.sample(COMBINABLE, 2)
            once = self.variant(url, first)
            return None if once is None else self.variant(once, second)
        parts = urlsplit(url)
        scheme, netloc, path, query, _fragment = parts
        if kind == "tracking-params":
            query = f"{query}&{self._tracking_query()}" if query else self._tracking_query()
        elif kind == "query-order":
            fields = query.split("&")
            if len(set(fields)) < 2:
                return None
            shuffled = fields[:]
            while shuffled == fields:
                self.rng.shuffle(shuffled)
            query = "&".join(shuffled)
        elif kind == "host-case":
            if "@" in netloc or netloc.lower() == netloc.upper():
                return None  # userinfo, or no cased letter (an IP address, a CJK host)
            netloc = self._recase(netloc)
        elif kind == "trailing-slash":
            path = path[:-1] if path.endswith("/") else path + "/"
        elif kind == "fragment":
            return urlunsplit((scheme, netloc, path, query, self._fragment()))
        else:
            raise ValueError(f"unknown duplicate kind {kind!r}")
        return urlunsplit((scheme, netloc, path, query, parts.fragment))

    def _tracking_query(self) -> str:
        rng = self.rng
        style = rng.randrange(4)
        if style == 0:
            return (
                f"utm_source={rng.choice(_UTM_SOURCES)}&utm_medium={rng.choice(_UTM_MEDIUMS)}"
                f"&utm_campaign={rng.choice(_UTM_CAMPAIGNS)}"
            )
        if style == 1:
            return f"utm_source={rng.choice(_UTM_SOURCES)}"
        if style == 2:
            return "fbclid=IwAR" + "".join(rng.choice(_TOKEN_CHARS) for _ in range(58))
        return "gclid=Cj0KCQ" + "".join(rng.choice(_TOKEN_CHARS) for _ in range(80))

    def _recase(self, netloc: str) -> str:
        """*netloc* with the case of some letters changed (it must hold a cased letter)."""
        style = self.rng.randrange(3)
        if style == 0 and netloc.upper() != netloc:
            return netloc.upper()
        capitalized = ".".join(label.capitalize() for label in netloc.split("."))
        if style == 1 and capitalized != netloc:
            return capitalized
        while True:
            mixed = "".join(
                char.upper() if self.rng.random() < 0.5 else char.lower() for char in netloc
            )
            if mixed != netloc:
                return mixed

    def _fragment(self) -> str:
        if self.rng.random() < 0.5:
            return self.rng.choice(_FRAGMENTS)
        return f"{self.rng.choice(('section', 'post', 'comment'))}-{self.rng.randrange(1, 500)}"


def _looks_like_year(number: str) -> bool:
    return len(number) == 4 and 1990 <= int(number) <= 2030


def build_workload(seed_urls: Sequence[str], size: int, seed: int = SEED) -> Workload:
    """Return a stream of *size* request URLs, ``DISTINCT_SHARE`` of them new pages.

    The first request is a new page; a duplicate always follows the page it repeats. The same
    arguments give the same stream.
    """
    if size < 1:
        raise ValueError(f"--requests must be at least 1, got {size}")
    rng = random.Random(seed)
    generator = PageGenerator(seed_urls, rng)
    distinct = max(1, round(size * DISTINCT_SHARE))
    is_new = [True] * distinct + [False] * (size - distinct)
    rng.shuffle(is_new)
    is_new[is_new.index(True)], is_new[0] = False, True
    unique_numbers = rng.sample(range(10_000, 10_000_000), distinct)
    kinds_by_weight = list(DUPLICATE_WEIGHTS)
    weights = list(DUPLICATE_WEIGHTS.values())
    pages: list[str] = []
    page_set: set[str] = set()
    #: Pages whose query has two different fields or more (they can be reordered).
    reorderable: list[str] = []
    urls: list[str] = []
    kinds: list[str] = []
    for new in is_new:
        if new:
            page = generator.new_page(unique_numbers[len(pages)])
            if page in page_set:  # the unique numbers make this impossible
                raise AssertionError(f"generated the same page twice: {page}")
            pages.append(page)
            page_set.add(page)
            if len(set(urlsplit(page).query.split("&"))) > 1:
                reorderable.append(page)
            urls.append(page)
            kinds.append("new page")
            continue
        if rng.random() < 0.5:
            page = pages[rng.randrange(max(0, len(pages) - RECENT_PAGES), len(pages))]
        else:
            page = pages[rng.randrange(len(pages))]
        while True:
            kind = rng.choices(kinds_by_weight, weights)[0]
            if kind == "query-order" and reorderable:
                # Few real URLs have two query fields: pick among those that do.
                page = reorderable[rng.randrange(len(reorderable))]
            variant = generator.variant(page, kind)
            if variant is not None:
                break
        urls.append(variant)
        kinds.append(kind)
    hosts = {urlsplit(url).netloc.lower() for url in seed_urls}
    return Workload(urls, kinds, len(pages), len(seed_urls), len(hosts))


class RequestFactory:
    """New ``scrapy.Request`` objects for a list of URLs, as many times as needed.

    * every call of :meth:`new_requests` returns objects no filter has seen (Scrapy caches
      fingerprints per Request object), all with the same state: the URL, ``GET``, and
      ``meta={"depth": 1}`` as ``DepthMiddleware`` leaves it before the scheduler;
    * the requests are built once and copied by unpickling, which is several times cheaper
      than building them again (``Request()`` parses its URL).
    """

    def __init__(self, urls: Sequence[str]) -> None:
        with gc_paused():
            requests = [Request(url, meta=REQUEST_META) for url in urls]
            self.pickled = pickle.dumps(requests, pickle.HIGHEST_PROTOCOL)

    def new_requests(self) -> list[Request]:
        with gc_paused():
            requests: list[Request] = pickle.loads(self.pickled)
        return requests


@contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector (as :mod:`timeit` does while it times), so that
    the hundreds of thousands of pre-built requests are not scanned again and again."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


#: How the cyclic garbage collector runs during a timed pass: ``running`` (as in a crawl;
#: objects that exist before the pass, the pre-built requests among them, are frozen out of
#: it, so it only scans what the pass allocates) or ``paused`` (as :mod:`timeit` does).
GC_MODES = ("running", "paused")


@contextmanager
def collector(mode: str) -> Iterator[list[int]]:
    """Run the block with the garbage collector in *mode* (see :data:`GC_MODES`); the list
    yielded is filled, on exit, with the collections each generation ran in the block."""
    if mode == "paused":
        context = gc_paused()
    elif mode == "running":
        context = _pre_existing_frozen()
    else:
        raise ValueError(f"garbage collector mode {mode!r} is not one of {GC_MODES}")
    collections: list[int] = []
    with context:
        before = [generation["collections"] for generation in gc.get_stats()]
        try:
            yield collections
        finally:
            after = [generation["collections"] for generation in gc.get_stats()]
            collections[:] = [late - early for early, late in zip(before, after, strict=True)]


@contextmanager
def _pre_existing_frozen() -> Iterator[None]:
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


# Filters


class BenchSpider(Spider):
    name = "urlfilter-bench"


@dataclass(frozen=True)
class FilterSpec:
    """A dupefilter as configured for one row of the results."""

    name: str
    dupefilter_class: type[BaseDupeFilter]
    settings: dict[str, Any]
    #: Setting that receives a new temporary directory for each pass.
    state_setting: str | None = None


def filter_specs(capacity: int) -> list[FilterSpec]:
    """The filters compared, the peer (``RFPDupeFilter``) first."""
    bloom = {
        "DEDUP_URL_BACKEND": "bloom",
        "DEDUP_URL_CAPACITY": capacity,
        "DEDUP_URL_ERROR_RATE": ERROR_RATE,
    }
    return [
        FilterSpec("RFPDupeFilter", RFPDupeFilter, {}),
        FilterSpec("URLDupeFilter bloom", URLDupeFilter, bloom),
        FilterSpec("URLDupeFilter memory", URLDupeFilter, {"DEDUP_URL_BACKEND": "memory"}),
        FilterSpec("RFPDupeFilter + JOBDIR", RFPDupeFilter, {}, state_setting="JOBDIR"),
        FilterSpec(
            "URLDupeFilter bloom + DEDUP_STATE_DIR",
            URLDupeFilter,
            bloom,
            state_setting="DEDUP_STATE_DIR",
        ),
    ]


@contextmanager
def crawler_for(spec: FilterSpec) -> Iterator[Crawler]:
    """A new crawler with *spec*'s settings (and a new state directory, removed afterwards)."""
    with tempfile.TemporaryDirectory(prefix="urlfilter-bench-") as state_dir:
        settings = dict(spec.settings)
        if spec.state_setting:
            settings[spec.state_setting] = state_dir
        crawler = get_crawler(BenchSpider, settings)
        crawler.spider = crawler._create_spider()
        yield crawler


@dataclass
class PassResult:
    seconds: float
    #: CPU time of this process during the pass: well below *seconds* when other
    #: processes took the CPU.
    cpu_seconds: float
    close_seconds: float
    let_through: int
    #: Garbage collections during the pass, per generation.
    collections: list[int]


def timed_pass(spec: FilterSpec, requests: Sequence[Request], gc_mode: str) -> PassResult:
    """Feed *requests* to a new filter; time the ``request_seen`` calls alone, with the
    garbage collector in *gc_mode*."""
    with crawler_for(spec) as crawler:
        dupefilter = build_from_crawler(spec.dupefilter_class, crawler)
        dupefilter.open()
        request_seen = dupefilter.request_seen
        let_through = 0
        with collector(gc_mode) as collections:
            cpu_start = time.process_time()
            start = time.perf_counter()
            for request in requests:
                if not request_seen(request):
                    let_through += 1
            seconds = time.perf_counter() - start
            cpu_seconds = time.process_time() - cpu_start
        start = time.perf_counter()
        dupefilter.close("finished")
        close_seconds = time.perf_counter() - start
    return PassResult(seconds, cpu_seconds, close_seconds, let_through, collections)


def scheduler_pass(spec: FilterSpec, requests: Sequence[Request], gc_mode: str) -> float:
    """Seconds for ``request_seen`` plus ``log()`` of each filtered request, as Scrapy's
    scheduler calls them, with the garbage collector in *gc_mode*."""
    with crawler_for(spec) as crawler:
        dupefilter = build_from_crawler(spec.dupefilter_class, crawler)
        dupefilter.open()
        spider = crawler.spider
        assert spider is not None
        request_seen = dupefilter.request_seen
        log = dupefilter.log
        with collector(gc_mode):
            start = time.perf_counter()
            for request in requests:
                if request_seen(request):
                    log(request, spider)
            seconds = time.perf_counter() - start
        dupefilter.close("finished")
    return seconds


#: Where retained memory comes from, by the file that allocated it.
FINGERPRINT_CACHE = "Scrapy's per-Request fingerprint cache (excluded)"
BLOOM_BITS = "Bloom bit array"
CANONICALIZER_CACHES = "canonicalizer caches"
STORE = "seen keys"


def memory_component(filename: str) -> str:
    """Name the part of a filter that allocated in *filename*.

    Scrapy keeps request fingerprints in a module-level ``WeakKeyDictionary`` keyed by
    Request; its entries go with the requests, but its table keeps the size of the most
    requests alive at once (here the whole stream), which says nothing about the filter.
    """
    parts = Path(filename).parts
    if parts and parts[-1] == "weakref.py":
        return FINGERPRINT_CACHE
    if "pybloom_live" in parts or "bitarray" in parts:
        return BLOOM_BITS
    if parts[-2:] == ("crawler", "urls.py"):
        return CANONICALIZER_CACHES
    return STORE


@dataclass
class MemoryResult:
    let_through: int
    #: Traced bytes still held once the requests are released, by :func:`memory_component`.
    retained_by_component: dict[str, int]
    #: Traced bytes while the requests (and what the filter put on them) were alive.
    bytes_with_requests: int
    #: 1 where request_seen returned False, per request.
    outcomes: bytearray = field(repr=False)
    bloom_bytes: int | None = None
    bloom_capacity: int | None = None

    @property
    def retained_bytes(self) -> int:
        """What the filter holds: everything retained but Scrapy's fingerprint cache."""
        return sum(
            size
            for component, size in self.retained_by_component.items()
            if component != FINGERPRINT_CACHE
        )

    @property
    def bytes_per_url(self) -> float:
        return self.retained_bytes / max(1, self.let_through)


def memory_pass(spec: FilterSpec, requests: list[Request]) -> MemoryResult:
    """Feed *requests* to a new filter under :mod:`tracemalloc`; empties *requests*.

    The crawler exists before tracing starts; the filter is built after, so its own
    structures (a Bloom filter's bit array included) are counted.
    """
    outcomes = bytearray(len(requests))
    with crawler_for(spec) as crawler:
        gc.collect()
        tracemalloc.start()
        try:
            dupefilter = build_from_crawler(spec.dupefilter_class, crawler)
            dupefilter.open()
            request_seen = dupefilter.request_seen
            with gc_paused():
                for index, request in enumerate(requests):
                    if not request_seen(request):
                        outcomes[index] = 1
            with_requests = tracemalloc.get_traced_memory()[0]
            requests.clear()
            gc.collect()
            snapshot = tracemalloc.take_snapshot()
        finally:
            tracemalloc.stop()
        retained: Counter[str] = Counter()
        for stat in snapshot.statistics("filename"):
            retained[memory_component(stat.traceback[0].filename)] += stat.size
        result = MemoryResult(sum(outcomes), dict(retained), with_requests, outcomes)
        seen_set = getattr(dupefilter, "seen", None)
        bloom = getattr(seen_set, "seen", None)  # the set behind a local store
        if isinstance(bloom, BloomSeenSet):
            result.bloom_bytes = bloom.size_in_bytes
            result.bloom_capacity = bloom.capacity
        dupefilter.close("finished")
    return result


def measure_memory(spec_name: str, pickled_requests: bytes, capacity: int) -> MemoryResult:
    """:func:`memory_pass` of the filter named *spec_name*, on the requests pickled in
    *pickled_requests* (see :class:`RequestFactory`).

    Runs in a worker process: memory is measured after all timing is done, two filters at
    a time on a 2-core machine, each under its own :mod:`tracemalloc`.
    """
    (spec,) = [spec for spec in filter_specs(capacity) if spec.name == spec_name]
    with gc_paused():
        requests: list[Request] = pickle.loads(pickled_requests)
    return memory_pass(spec, requests)


# Canonicalization micro-benchmark


def canonicalizers() -> dict[str, Callable[[str], str]]:
    return {
        "w3lib.url.canonicalize_url": w3lib_canonicalize_url,
        "crawler.url.canonical.canonicalize_url": dedup_canonicalize_url,
        "crawler.url.canonical.UrlCanonicalizer()": UrlCanonicalizer(),
    }


def time_canonicalizer(
    canonicalize: Callable[[str], str], urls: Sequence[str], gc_mode: str
) -> float:
    """Seconds to canonicalize every URL of *urls* once, with the collector in *gc_mode*."""
    with collector(gc_mode):
        start = time.perf_counter()
        for url in urls:
            canonicalize(url)
        return time.perf_counter() - start


# Profile


def profile_url_filter(spec: FilterSpec, urls: Sequence[str], top: int = 15) -> str:
    """cProfile of ``request_seen`` over *urls*; the *top* entries by own time."""
    requests = RequestFactory(urls).new_requests()
    with crawler_for(spec) as crawler:
        dupefilter = build_from_crawler(spec.dupefilter_class, crawler)
        dupefilter.open()
        request_seen = dupefilter.request_seen
        profiler = cProfile.Profile()
        profiler.enable()
        for request in requests:
            request_seen(request)
        profiler.disable()
        dupefilter.close("finished")
    out = io.StringIO()
    stats = pstats.Stats(profiler, stream=out)
    stats.sort_stats(pstats.SortKey.TIME).print_stats(top)
    return out.getvalue()


# Running


@dataclass
class Timings:
    """Raw seconds of every timed pass, by filter (or function) name, in run order."""

    repeat: int
    gc_mode: str
    pass_seconds: dict[str, list[float]]
    pass_cpu_seconds: dict[str, list[float]]
    close_seconds: dict[str, list[float]]
    collections: dict[str, list[list[int]]]
    let_through: dict[str, set[int]]
    scheduler_requests: int
    scheduler_seconds: dict[str, list[float]]
    micro_urls: int
    micro_seconds: dict[str, list[float]]


def run_timings(
    factory: RequestFactory,
    workload: Workload,
    specs: Sequence[FilterSpec],
    repeat: int,
    gc_mode: str,
    started: float,
) -> Timings:
    """Time every filter *repeat* times, interleaved, in a shuffled order per repeat; then,
    per repeat, the scheduler path of the peer and the Bloom filter, and the canonicalizers.
    Every pass gets new Request objects from *factory*.
    """
    scheduler_specs = [specs[0], specs[1]]
    scheduler_factory = RequestFactory(workload.urls[:SCHEDULER_PATH_REQUESTS])
    micro_urls = workload.urls[:MICRO_URLS]
    micro = canonicalizers()
    names = [spec.name for spec in specs]
    timings = Timings(
        repeat=repeat,
        gc_mode=gc_mode,
        pass_seconds={name: [] for name in names},
        pass_cpu_seconds={name: [] for name in names},
        close_seconds={name: [] for name in names},
        collections={name: [] for name in names},
        let_through={name: set() for name in names},
        scheduler_requests=min(len(workload.urls), SCHEDULER_PATH_REQUESTS),
        scheduler_seconds={spec.name: [] for spec in scheduler_specs},
        micro_urls=len(micro_urls),
        micro_seconds={name: [] for name in micro},
    )
    order_rng = random.Random(SEED)
    for round_number in range(1, repeat + 1):
        for spec in order_rng.sample(list(specs), len(specs)):
            result = timed_pass(spec, factory.new_requests(), gc_mode)
            timings.pass_seconds[spec.name].append(result.seconds)
            timings.pass_cpu_seconds[spec.name].append(result.cpu_seconds)
            timings.close_seconds[spec.name].append(result.close_seconds)
            timings.collections[spec.name].append(result.collections)
            timings.let_through[spec.name].add(result.let_through)
        for spec in order_rng.sample(scheduler_specs, len(scheduler_specs)):
            seconds = scheduler_pass(spec, scheduler_factory.new_requests(), gc_mode)
            timings.scheduler_seconds[spec.name].append(seconds)
        for name in order_rng.sample(list(micro), len(micro)):
            seconds = time_canonicalizer(micro[name], micro_urls, gc_mode)
            timings.micro_seconds[name].append(seconds)
        progress(f"repeat {round_number}/{repeat} timed", started)
    return timings


def run_memory(
    factory: RequestFactory, specs: Sequence[FilterSpec], capacity: int
) -> dict[str, MemoryResult]:
    """:func:`measure_memory` of each of *specs*, in worker processes (one per CPU, at most
    one per filter)."""
    workers = max(1, min(len(specs), os.cpu_count() or 1))
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(workers, mp_context=context) as pool:
        futures = {
            spec.name: pool.submit(measure_memory, spec.name, factory.pickled, capacity)
            for spec in specs
        }
        return {name: future.result() for name, future in futures.items()}


def load_average() -> float | None:
    """The 1-minute load average, where the platform has one."""
    try:
        return os.getloadavg()[0]
    except (AttributeError, OSError):
        return None


def progress(message: str, started: float) -> None:
    print(f"[{time.perf_counter() - started:5.0f} s] {message}", file=sys.stderr, flush=True)


# Reporting

#: Wall time over CPU time of a pass above which the report warns of contention.
CONTENTION_WARNING = 1.05


def _load(value: float | None) -> str:
    return "unknown" if value is None else f"{value:.2f}"


def summarize(seconds: Sequence[float], count: int) -> dict[str, float]:
    """Best and median of *seconds* for *count* operations, as times and as rates."""
    best, median = min(seconds), statistics.median(seconds)
    return {
        "best_seconds": best,
        "median_seconds": median,
        "best_per_second": count / best,
        "median_per_second": count / median,
    }


def machine_facts() -> dict[str, Any]:
    return {
        **shared_machine_facts("scrapy", "w3lib", "pybloom-live"),
        "tempdir": tempfile.gettempdir(),
    }


def markdown_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def let_through_by_kind(kinds: Sequence[str], outcomes: bytearray) -> Counter[str]:
    counts: Counter[str] = Counter()
    for kind, let_through in zip(kinds, outcomes, strict=True):
        if let_through:
            counts[kind] += 1
    return counts


@dataclass
class Report:
    """Everything measured in one run, and the Markdown and JSON made from it."""

    command: str
    facts: dict[str, Any]
    corpus_dir: Path
    workload: Workload
    specs: list[FilterSpec]
    timings: Timings
    memory: dict[str, MemoryResult]
    #: 1-minute load average before and after the timed passes.
    load_averages: tuple[float | None, float | None] = (None, None)
    profile: str = ""
    elapsed: float = 0.0

    @property
    def size(self) -> int:
        return len(self.workload.urls)

    @property
    def peer(self) -> str:
        return self.specs[0].name

    def throughput(self) -> dict[str, dict[str, float]]:
        figures = {
            name: summarize(seconds, self.size)
            for name, seconds in self.timings.pass_seconds.items()
        }
        for name, figure in figures.items():
            cpu = self.timings.pass_cpu_seconds[name]
            wall = self.timings.pass_seconds[name]
            figure["cpu_best_seconds"] = min(cpu)
            figure["wall_over_cpu_max"] = max(
                w / max(c, 1e-9) for w, c in zip(wall, cpu, strict=True)
            )
        peer = dict(figures[self.peer])
        for figure in figures.values():
            figure["ratio_best"] = figure["best_per_second"] / peer["best_per_second"]
            figure["ratio_median"] = figure["median_per_second"] / peer["median_per_second"]
            figure["ratio_cpu_best"] = peer["cpu_best_seconds"] / figure["cpu_best_seconds"]
        return figures

    def targets(self) -> dict[str, Any]:
        bloom_name = self.specs[1].name
        speedup = self.throughput()[bloom_name]
        bloom = self.memory[bloom_name]
        assert bloom.bloom_bytes is not None and bloom.bloom_capacity is not None
        capacity = bloom.bloom_capacity
        bloom_traced = bloom.retained_by_component.get(BLOOM_BITS, 0)
        return {
            "speedup_best": speedup["ratio_best"],
            "speedup_median": speedup["ratio_median"],
            "speedup_cpu_best": speedup["ratio_cpu_best"],
            "speedup_target": TARGET_SPEEDUP,
            "speedup_pass": speedup["ratio_best"] >= TARGET_SPEEDUP,
            "bloom_capacity": capacity,
            "bloom_size_in_bytes_per_capacity_url": bloom.bloom_bytes / capacity,
            "bloom_traced_bytes_per_capacity_url": bloom_traced / capacity,
            "filter_traced_bytes_per_capacity_url": bloom.retained_bytes / capacity,
            "filter_traced_bytes_per_url_let_through": bloom.bytes_per_url,
            "bloom_bytes_target": TARGET_BLOOM_BYTES_PER_URL,
            "bloom_bytes_pass": bloom_traced / capacity <= TARGET_BLOOM_BYTES_PER_URL,
        }

    # Markdown

    def markdown(self) -> str:
        return "\n\n".join(
            [
                self._header(),
                self._workload(),
                self._results(),
                self._memory(),
                self._dedup_gain(),
                self._scheduler_path(),
                self._micro(),
                self._targets(),
                *([self._profile()] if self.profile else []),
                f"Elapsed: {self.elapsed:.0f} s",
            ]
        )

    def _header(self) -> str:
        facts = self.facts
        return (
            "# URLDupeFilter vs RFPDupeFilter\n\n"
            f"Command: `{self.command}`  \n"
            f"Python {facts['python']} ({facts['implementation']}), Scrapy {facts['scrapy']}, "
            f"w3lib {facts['w3lib']}, pybloom-live {facts['pybloom-live']}; "
            f"{facts['cpu_count']} CPUs ({facts['cpu_model'] or 'unknown model'}); "
            f"{facts['platform']}; temporary state directories in {facts['tempdir']}; "
            f"1-minute load average {_load(self.load_averages[0])} before the timed passes, "
            f"{_load(self.load_averages[1])} after"
        )

    def _workload(self) -> str:
        workload, size = self.workload, self.size
        mix = workload.mix()
        rows = [[kind, f"{count:,}", f"{count / size:.1%}"] for kind, count in mix.most_common()]
        return (
            f"## Workload\n\n{size:,} requests built from {workload.seed_urls:,} real URLs on "
            f"{workload.seed_hosts:,} hosts ({self.corpus_dir / 'url' / 'real_urls.tsv'}), "
            f"seed {SEED}: {workload.distinct_pages:,} distinct pages "
            f"({workload.distinct_pages / size:.1%}), the rest duplicates of earlier pages.\n\n"
            + markdown_table(["request kind", "count", "share"], rows)
        )

    def _results(self) -> str:
        throughput = self.throughput()
        rows = []
        for spec in self.specs:
            figures = throughput[spec.name]
            measured = self.memory.get(spec.name)
            rows.append(
                [
                    spec.name,
                    f"{figures['best_per_second']:,.0f}",
                    f"{figures['median_per_second']:,.0f}",
                    f"{figures['ratio_best']:.2f}x",
                    f"{measured.bytes_per_url:.1f}" if measured else "(same as in memory)",
                    ", ".join(
                        f"{count:,}" for count in sorted(self.timings.let_through[spec.name])
                    ),
                ]
            )
        persisted = {spec.name for spec in self.specs if spec.state_setting}
        closes = ", ".join(
            f"{name} {min(self.timings.close_seconds[name]) * 1000:.0f} ms" for name in persisted
        )
        collections = ", ".join(
            f"{spec.name} {'/'.join(map(str, self.timings.collections[spec.name][0]))}"
            for spec in self.specs
        )
        contention = max(figures["wall_over_cpu_max"] for figures in throughput.values())
        cpu_ratios = ", ".join(
            f"{spec.name} {throughput[spec.name]['ratio_cpu_best']:.2f}x" for spec in self.specs[1:]
        )
        persisted_ratio = (
            throughput["URLDupeFilter bloom + DEDUP_STATE_DIR"]["best_per_second"]
            / throughput["RFPDupeFilter + JOBDIR"]["best_per_second"]
        )
        return (
            f"## Results (best and median of {self.timings.repeat} interleaved passes, garbage "
            f"collector {self.timings.gc_mode})\n\n"
            + markdown_table(
                [
                    "filter",
                    f"requests/s (best of {self.timings.repeat})",
                    "requests/s (median)",
                    f"ratio vs {self.peer} (same run)",
                    "bytes per URL",
                    "requests let through",
                ],
                rows,
            )
            + f"\n\nThe stream holds {self.workload.distinct_pages:,} distinct pages. Bytes per "
            "URL: traced memory the filter still holds once the requests are released, divided "
            "by the requests it let through (see Memory). Persisted against persisted: "
            f"URLDupeFilter bloom + DEDUP_STATE_DIR runs at {persisted_ratio:.2f}x "
            f"RFPDupeFilter + JOBDIR. close(), not in the throughput: {closes}.\n\n"
            f"Garbage collections in the first pass, generations 0/1/2: {collections}.\n\n"
            f"Ratios by the CPU time of the same passes: {cpu_ratios}. A pass took up to "
            f"{contention:.2f}x its CPU time in wall time"
            + (
                ": other processes competed for the CPUs, so wall-clock figures are noisy."
                if contention > CONTENTION_WARNING
                else "."
            )
        )

    def _memory(self) -> str:
        rows = []
        for name, result in self.memory.items():
            components = result.retained_by_component
            structure = components.get(STORE, 0) + components.get(BLOOM_BITS, 0)
            rows.append(
                [
                    name,
                    f"{result.let_through:,}",
                    f"{result.retained_bytes / 2**20:.2f}",
                    f"{result.bytes_per_url:.1f}",
                    f"{structure / max(1, result.let_through):.1f}",
                    f"{components.get(CANONICALIZER_CACHES, 0) / 2**20:.2f}",
                    f"{components.get(FINGERPRINT_CACHE, 0) / 2**20:.2f}",
                    f"{result.bytes_with_requests / self.size:.0f}",
                ]
            )
        return (
            "## Memory (tracemalloc, separate passes)\n\n"
            + markdown_table(
                [
                    "filter",
                    "let through",
                    "retained MiB",
                    "bytes per URL",
                    "of which keys or bits, per URL",
                    "canonicalizer caches MiB",
                    "fingerprint-cache table MiB (excluded)",
                    "bytes per request while requests alive",
                ],
                rows,
            )
            + "\n\nCanonicalizer caches hold per-host results (bounded in size, not per URL). "
            "Scrapy's module-level fingerprint cache is keyed by live Request objects; its "
            "table keeps the size of the most requests alive at once (here all of them), so it "
            "is excluded. The last column counts everything traced after feeding the stream, "
            "with the requests still alive, per request."
        )

    def _dedup_gain(self) -> str:
        mix = self.workload.mix()
        per_kind = {
            name: let_through_by_kind(self.workload.kinds, result.outcomes)
            for name, result in self.memory.items()
        }
        rows = [
            [kind, f"{count:,}", *(f"{per_kind[name][kind]:,}" for name in self.memory)]
            for kind, count in mix.most_common()
        ]
        rows.append(
            [
                "**total**",
                f"{self.size:,}",
                *(f"**{result.let_through:,}**" for result in self.memory.values()),
            ]
        )
        peer = self.memory[self.peer].let_through
        exact = self.memory[self.specs[2].name].let_through
        bloom = self.memory[self.specs[1].name].let_through
        return (
            "## Requests let through, by kind (a duplicate let through is a wasted fetch)\n\n"
            + markdown_table(["request kind", "count", *self.memory], rows)
            + f"\n\nDedup gain: URLDupeFilter lets through {peer - exact:,} fewer requests than "
            f"{self.peer} ({(peer - exact) / peer:.1%} fewer fetches). Bloom false positives "
            f"(new pages lost): {exact - bloom:,} of {exact:,}."
        )

    def _scheduler_path(self) -> str:
        figures = {
            name: summarize(seconds, self.timings.scheduler_requests)
            for name, seconds in self.timings.scheduler_seconds.items()
        }
        peer = figures[self.peer]["best_per_second"]
        rows = [
            [name, f"{figure['best_per_second']:,.0f}", f"{figure['best_per_second'] / peer:.2f}x"]
            for name, figure in figures.items()
        ]
        return (
            "## Scheduler path: request_seen, then log() of each filtered request "
            f"(first {self.timings.scheduler_requests:,} requests, best of "
            f"{self.timings.repeat})\n\n"
            + markdown_table(["filter", "requests/s", f"ratio vs {self.peer}"], rows)
        )

    def _micro(self) -> str:
        count = self.timings.micro_urls
        figures = {
            name: summarize(seconds, count) for name, seconds in self.timings.micro_seconds.items()
        }
        w3lib_best = figures["w3lib.url.canonicalize_url"]["best_seconds"]
        rows = [
            [
                name,
                f"{figure['best_seconds'] / count * 1e6:.2f}",
                f"{w3lib_best / figure['best_seconds']:.2f}x",
            ]
            for name, figure in figures.items()
        ]
        return (
            f"## canonicalize_url (first {count:,} URLs of the stream, best of "
            f"{self.timings.repeat})\n\n"
            + markdown_table(["function", "µs per URL", "speed vs w3lib"], rows)
        )

    def _targets(self) -> str:
        targets = self.targets()
        speed = "PASS" if targets["speedup_pass"] else "FAIL"
        size = "PASS" if targets["bloom_bytes_pass"] else "FAIL"
        bloom_bytes = targets["bloom_traced_bytes_per_capacity_url"]
        return (
            "## Targets from the issue\n\n"
            f"- {speed}: URLDupeFilter (bloom, not persisted) throughput is "
            f"{targets['speedup_best']:.2f}x {self.peer}'s (best; "
            f"{targets['speedup_median']:.2f}x median, {targets['speedup_cpu_best']:.2f}x by CPU "
            f"time), target >= {TARGET_SPEEDUP:g}x.\n"
            f"- {size}: the Bloom filter takes {bloom_bytes:.2f} bytes per URL at error rate "
            f"{ERROR_RATE:g} (traced bit array / capacity of {targets['bloom_capacity']:,}; "
            "size_in_bytes / capacity = "
            f"{targets['bloom_size_in_bytes_per_capacity_url']:.2f}), target <= "
            f"{TARGET_BLOOM_BYTES_PER_URL:g}. The whole filter, canonicalizer caches included, "
            f"holds {targets['filter_traced_bytes_per_capacity_url']:.2f} bytes per URL of "
            f"capacity, {targets['filter_traced_bytes_per_url_let_through']:.2f} per URL it let "
            "through."
        )

    def _profile(self) -> str:
        return (
            f"## cProfile of URLDupeFilter bloom request_seen\n\n```\n{self.profile.strip()}\n```"
        )

    # JSON

    def to_json(self) -> dict[str, Any]:
        return {
            "command": self.command,
            "machine": {**self.facts, "load_averages_1min": list(self.load_averages)},
            "parameters": {
                "requests": self.size,
                "repeat": self.timings.repeat,
                "gc": self.timings.gc_mode,
                "seed": SEED,
                "error_rate": ERROR_RATE,
                "bloom_capacity": self.size,
                "corpus": str(self.corpus_dir),
            },
            "workload": {
                "distinct_pages": self.workload.distinct_pages,
                "seed_urls": self.workload.seed_urls,
                "seed_hosts": self.workload.seed_hosts,
                "mix": dict(self.workload.mix()),
            },
            "throughput": {
                name: {
                    **figures,
                    "pass_seconds": self.timings.pass_seconds[name],
                    "pass_cpu_seconds": self.timings.pass_cpu_seconds[name],
                    "gc_collections_per_generation": self.timings.collections[name],
                    "close_seconds": self.timings.close_seconds[name],
                    "let_through": sorted(self.timings.let_through[name]),
                }
                for name, figures in self.throughput().items()
            },
            "memory": {
                name: {
                    "let_through": result.let_through,
                    "retained_bytes": result.retained_bytes,
                    "retained_by_component": result.retained_by_component,
                    "bytes_per_url": result.bytes_per_url,
                    "bytes_with_requests": result.bytes_with_requests,
                    "bloom_size_in_bytes": result.bloom_bytes,
                    "bloom_capacity": result.bloom_capacity,
                    "let_through_by_kind": dict(
                        let_through_by_kind(self.workload.kinds, result.outcomes)
                    ),
                }
                for name, result in self.memory.items()
            },
            "scheduler_path": {
                name: {"requests": self.timings.scheduler_requests, "seconds": seconds}
                for name, seconds in self.timings.scheduler_seconds.items()
            },
            "canonicalize_url": {
                name: {"urls": self.timings.micro_urls, "seconds": seconds}
                for name, seconds in self.timings.micro_seconds.items()
            },
            "targets": self.targets(),
            "profile": self.profile,
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
    parser.add_argument("--json", type=Path, help="write the raw numbers to this file")
    parser.add_argument(
        "--gc",
        choices=GC_MODES,
        default=GC_MODES[0],
        help="garbage collector during timed passes: running as in a crawl (default; the "
        "pre-built requests are frozen out of it) or paused as timeit does",
    )
    parser.add_argument(
        "--profile",
        type=int,
        default=0,
        metavar="N",
        help="also profile URLDupeFilter.request_seen (bloom) on the first N requests",
    )
    args = parser.parse_args(argv)
    if args.requests < 1 or args.repeat < 1 or args.profile < 0:
        parser.error("--requests and --repeat must be at least 1, --profile at least 0")
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
    progress(f"workload of {len(workload.urls):,} requests built", started)
    size = len(workload.urls)
    specs = filter_specs(capacity=size)
    factory = RequestFactory(workload.urls)
    progress("requests built", started)
    load_before = load_average()
    timings = run_timings(factory, workload, specs, args.repeat, args.gc, started)
    load_after = load_average()
    memory = run_memory(factory, specs[:3], capacity=size)
    progress("memory measured", started)
    report = Report(
        command=shlex.join(getattr(sys, "orig_argv", [sys.executable, *sys.argv])),
        facts=machine_facts(),
        corpus_dir=corpus_dir,
        workload=workload,
        specs=specs,
        timings=timings,
        memory=memory,
        load_averages=(load_before, load_after),
    )
    if args.profile:
        report.profile = profile_url_filter(specs[1], workload.urls[: args.profile])
    report.elapsed = time.perf_counter() - started
    print(report.markdown())
    if args.json:
        args.json.write_text(json.dumps(report.to_json(), indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
