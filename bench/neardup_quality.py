"""Measure how well the near-duplicate detector tells copies of a page from other pages.

Usage (from the repository root)::

    .venv/bin/python bench/neardup_quality.py [--corpus ../shared/corpus] [--pages N]
                                              [--seed S] [--workers W] [--json out.json]

What the numbers mean, and what the script promises about them:

* **Pages.** The real pages of ``<corpus>/pages``, read in place as the bytes a crawler
  downloads: ``wcxb-dev/html/*.html.gz`` (400 pages, mostly English) and
  ``chinese-cx/RawHtml/*.html`` (74 NetEase pages in GBK or UTF-8). ``--pages N`` takes
  the first N of each folder. The corpus folder is ``--corpus``, else
  ``$DEDUP_CORPUS_DIR``, else ``<repo>/../shared/corpus``; nothing is copied from it.
* **Copies.** Each base page is decoded (:func:`crawler.extract.decode_html`), parsed with
  lxml, edited, serialized and encoded back in its own charset, once per perturbation,
  each copy a different URL. The edits, deterministic for a given ``--seed``:

  - ``chrome``: the contents of the page's navigation, header and footer (``nav``,
    ``header``, ``footer``, ARIA roles, class or id names such as ``menu`` or
    ``site-footer``; outside ``article`` and ``main``, without an ``h1``) are replaced by
    those of another site's page; a page without any gets that chrome added at the top
    and the bottom of its body;
  - ``ad``: a block of 30 to 60 words of promotional text (60 to 120 characters in a
    Chinese page) right before the first paragraph of the main text, in a plain ``div``
    that no class name marks as an ad;
  - ``dates``: every date, time, view, comment or reply count in the page's text (and
    ``<time datetime>``) gets other digits; not applicable when the page has none;
  - ``related``: a "related articles" block of 5 to 8 real headlines of other corpus
    pages, each with the first words of that page as a teaser, right after the last
    paragraph of the main text;
  - ``paragraph``: one paragraph (``p``) of the main text removed, holding at most a
    quarter of it; only for pages whose main text has 6 or more paragraphs (lines).

  A copy whose edit could not be applied is left out (and counted). The edits are real
  HTML edits: how much of them reaches the main text is up to trafilatura. As a control,
  each page is also re-serialized without an edit (not part of the stream): the report
  says how often that alone changes the main text.
* **Stream.** Originals and copies are shuffled with the seed: each copy comes after its
  original with probability 0.85, before it otherwise. Every detector sees the same
  stream, in the same order, and keeps what it judges new.
* **Labels.** A decision "X duplicates Y" is correct when X and Y come from the same base
  page, whatever their kinds. A positive is a (copy, original) pair; it is *found* when
  the later of the two in the stream was reported as a duplicate of a page of its own
  base page (the other one, or another copy of it). *Precision* is correct decisions over
  all duplicate decisions; *recall* is found positives over positives. Negatives are all
  pairs of different base pages, including pages of one site or one template
  (*same-template*): the NetEase pages, pages of one registered domain, and pages whose
  class and id names (``div.menu``, ``span#views``) agree at Jaccard 0.5 or more.
* **Order-free rule.** Besides the stream, every pair is judged by the detector's rule
  alone: texts equal, or both at least ``min_chars`` long and within the threshold (a
  positive: the copy's threshold; a negative: the larger of the two). Positives within
  it, and negative pairs within it, show what the fingerprint can do without the
  stream's order effects.
* **Detectors.** *Ours*: ``NearDuplicateDetector()`` with its defaults on
  :func:`crawler.extract.main_text` of each page. *Anchor*: ``simhash.Simhash(text).value``
  (the package default: lower case, word characters only, character 4-grams, MD5, weighted
  by count) on the same text, with the same rule: exact check on equal text, Hamming
  threshold 2 below 200 characters of normalized text
  (:func:`crawler.fingerprints.normalize_text`) and 3 from there, exact check only below
  50; the nearest kept fingerprint within the threshold, found by brute force. Under
  NumPy 2 the package raises ``OverflowError`` when a 4-gram occurs more than 255 times
  (simhash issue #74): such items get the exact check only and are counted, and a third
  column then gives the anchor with those weights passed as ``float`` (what NumPy 1
  computed). Every tenth item checks that the float-weights fingerprint equals the
  package's own where the package does not raise.
* **Distances.** For ours and the anchor: the Hamming distance of every positive pair (by
  kind for ours), and for every item with at least ``min_chars`` characters, the distance
  to the nearest such item of another base page. A what-if table applies one threshold
  0..10 to every pair (order-free) and gives recall and the negative pairs within it,
  next to the pairs that many uniformly random 64-bit fingerprints would bring at a
  million documents (real fingerprints cluster more: the least to expect at that size).

Pages whose main text is empty are left out, with their copies, and counted. Output is
Markdown on stdout (tables, machine facts, the fingerprint code measured, the command line,
elapsed time); ``--json`` also writes the raw numbers.
"""

from __future__ import annotations

import argparse
import copy
import functools
import gzip
import hashlib
import html
import json
import math
import os
import random
import re
import shlex
import statistics
import subprocess
import sys
import time
from collections import Counter, defaultdict
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import lxml.html  # type: ignore[import-untyped]
import numpy as np
import simhash as simhash_package
import tldextract
from machine import machine_facts as shared_machine_facts

from crawler.extract import decode_html, extract
from crawler.fingerprints import normalize_text, simhash_of_normalized
from crawler.neardup import NearDuplicateDetector

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Iterator, Sequence

REPO_DIR = Path(__file__).resolve().parent.parent
DEFAULT_CORPUS_DIR = REPO_DIR.parent / "shared" / "corpus"
CORPUS_ENV_VAR = "DEDUP_CORPUS_DIR"
SEED = 20_240_707

KINDS: Final = ("chrome", "ad", "dates", "related", "paragraph")
ORIGINAL: Final = "original"
CONTROL: Final = "reserialized"
#: Probability that a copy arrives after its original.
COPY_AFTER_ORIGINAL: Final = 0.85
#: Jaccard similarity of class and id names from which two pages share a template.
TEMPLATE_JACCARD: Final = 0.5
#: Pages with fewer class and id names than this have no template fingerprint.
MIN_TEMPLATE_NAMES: Final = 10
MIN_PARAGRAPHS_FOR_REMOVAL: Final = 6
#: The removed paragraph holds at most this share of the main text.
MAX_REMOVED_SHARE: Final = 0.25
#: A paragraph of the HTML counts as one of the main text from this many characters.
MIN_PARAGRAPH_CHARS: Final = 20
#: Chrome that holds more than this share of the body's text is not chrome.
MAX_CHROME_SHARE: Final = 0.25
MAX_CHROME_SNIPPET_CHARS: Final = 40_000
MAX_CHROME_SNIPPETS: Final = 8
HISTOGRAM_BINS: Final = 10  # 0..9, then "10+"
#: The what-if table tries uniform thresholds 0 .. WHAT_IF_MAX.
WHAT_IF_MAX: Final = 10
#: ... and says how many pairs of that many uniformly random fingerprints fall within each.
RANDOM_DOCUMENTS: Final = 1_000_000
TARGET_RECALL: Final = 0.95
TARGET_PRECISION: Final = 0.995
NETEASE_SITE: Final = "163.com"
#: Every so many items, the package's fingerprint is also computed with float weights, to
#: check that the two agree where the default does not raise.
PACKAGE_CHECK_EVERY: Final = 10
EXAMPLES: Final = 4

#: What the detector's defaults are, repeated for the anchor (checked against it in main).
SHORT_TEXT_CHARS: Final = 200
SHORT_THRESHOLD: Final = 2
LONG_THRESHOLD: Final = 3
MIN_CHARS: Final = 50

_XML_DECLARATION = re.compile(r"\A\s*<\?xml[^>]*\?>")
_MONTH = (
    r"(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?"
    r"|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)"
)
_COUNTED = (
    r"(?:views?|comments?|replies|reply|shares?|likes?|reads?|answers?|votes?|followers?"
    r"|reviews?|ratings?|responses?|min(?:ute)?s? read|(?:minutes?|hours?|days?) ago)"
)
_DATE_OR_COUNTER = re.compile(
    "|".join(
        (
            r"\b(?:19|20)\d\d[-/.]\d{1,2}[-/.]\d{1,2}\b",
            r"\b\d{1,2}[-/.]\d{1,2}[-/.](?:19|20)?\d\d\b",
            rf"\b{_MONTH}\.?\s+\d{{1,2}}(?:st|nd|rd|th)?,?\s+(?:19|20)\d\d\b",
            rf"\b\d{{1,2}}(?:st|nd|rd|th)?\s+{_MONTH}\.?,?\s+(?:19|20)\d\d\b",
            r"\d{2,4}\s*年\s*\d{1,2}\s*月(?:\s*\d{1,2}\s*日)?",
            r"\b\d{1,2}:\d\d(?::\d\d)?\b",
            rf"\b\d[\d,.]*\s*{_COUNTED}\b",
            "(?:跟帖|评论|阅读|浏览|参与|点击|回复)\\s*[:\uff1a]?\\s*\\d[\\d,]*",
            r"\d[\d,]*\s*(?:人参与|条评论|人评论|次阅读|次浏览|人阅读|条跟帖|跟帖)",
        )
    ),
    re.IGNORECASE,
)
_DIGIT_RUN = re.compile(r"\d+")
_CHROME_TAGS: Final = frozenset({"nav", "header", "footer"})
_CHROME_ROLES: Final = frozenset({"navigation", "banner", "contentinfo"})
_CHROME_NAME = re.compile(
    r"(?:^|[-_])(?:nav|navbar|navigation|menu|header|footer|breadcrumbs?|masthead|topbar)"
    r"(?:$|[-_])",
    re.IGNORECASE,
)
# names of the article's own parts, which a chrome-like word does not turn into chrome
_CONTENT_NAME = re.compile(r"entry|post|article|content|title|comment|story", re.IGNORECASE)
_NOT_TEXT_TAGS: Final = frozenset({"script", "style", "noscript", "template"})

_ENGLISH_ADS: Final = (
    "Save 20 percent on your first order with code WELCOME at checkout.",
    "Limited time offer: free shipping on every order over fifty dollars.",
    "Subscribe to our newsletter and get exclusive deals delivered to your inbox each week.",
    "Try the premium plan free for thirty days, no credit card required.",
    "Shop the summer sale now and discover hundreds of new styles at unbeatable prices.",
    "Download the app today to unlock member rewards and early access to new products.",
    "Join thousands of happy customers who trust us for fast and reliable delivery.",
    "Book your next getaway now and earn double points on every stay.",
    "Upgrade your home office with ergonomic furniture designed for all-day comfort.",
    "Get a free quote in minutes and see how much you could save on car insurance.",
    "Our best-selling wireless earbuds are back in stock, so order before they sell out.",
    "Sign up today and receive a complimentary gift with your first purchase.",
    "Compare mortgage rates from top lenders in under two minutes.",
    "Learn a new language in fifteen minutes a day with our award-winning courses.",
    "Discover the skincare routine that dermatologists cannot stop talking about.",
    "The smart thermostat that pays for itself within a year is now on sale.",
)
_CHINESE_ADS: Final = (
    "限时特惠全场商品满一百九十九元减五十元先到先得。",
    "下载客户端新用户注册即送三十元优惠券。",
    "专业理财顾问一对一为您服务点击了解详情。",
    "夏季大促火热进行中品牌家电低至五折。",
    "扫码关注官方微信每日精彩资讯抢先看。",
    "开户即享免佣金优惠投资理财就选我们。",
    "买房贷款找我们利率低审批快放款快。",
    "名校名师在线辅导首节试听课程免费。",
    "旅游旺季特价机票酒店套餐立即预订享受折扣。",
    "新款智能手机震撼上市预订即赠精美好礼。",
)

HtmlElement = Any  # lxml.html.HtmlElement; lxml ships no type information


# Corpus


@dataclass(frozen=True)
class BasePage:
    """One corpus page, as found in the corpus folder."""

    page_id: str
    path: Path
    site: str
    url: str | None = None
    title: str = ""
    teaser_source: str = ""

    @property
    def chinese(self) -> bool:
        return self.site == NETEASE_SITE


def resolve_corpus_dir(option: str | None) -> Path:
    """``--corpus``, else ``$DEDUP_CORPUS_DIR``, else ``<repo>/../shared/corpus``."""
    chosen = option or os.environ.get(CORPUS_ENV_VAR)
    return Path(chosen) if chosen else DEFAULT_CORPUS_DIR


def registered_domain(url: str | None) -> str:
    """The domain a site registered (``psu.edu`` for ``dubois.psu.edu``), from the bundled
    public suffix list (no network)."""
    if not url:
        return ""
    return _domain_extractor()(url).top_domain_under_public_suffix or ""


@functools.cache
def _domain_extractor() -> tldextract.TLDExtract:
    return tldextract.TLDExtract(cache_dir=None, suffix_list_urls=())


def load_pages(corpus_dir: Path, pages_per_folder: int | None) -> list[BasePage]:
    """Return the base pages of both folders in name order, at most N of each.

    Raises :class:`FileNotFoundError` naming a missing folder.
    """
    wcxb = corpus_dir / "pages" / "wcxb-dev"
    netease = corpus_dir / "pages" / "chinese-cx"
    for folder in (wcxb / "html", netease / "RawHtml"):
        if not folder.is_dir():
            raise FileNotFoundError(f"corpus folder not found: {folder}")
    pages: list[BasePage] = []
    for path in sorted((wcxb / "html").glob("*.html.gz"))[:pages_per_folder]:
        name = path.name.split(".")[0]
        truth = json.loads((wcxb / "ground-truth" / f"{name}.json").read_text("utf-8"))
        url = truth.get("url")
        pages.append(
            BasePage(
                page_id=f"wcxb/{name}",
                path=path,
                site=registered_domain(url),
                url=url,
                title=truth["ground_truth"].get("title") or "",
                teaser_source=truth["ground_truth"].get("main_content") or "",
            )
        )
    netease_paths = sorted((netease / "RawHtml").glob("*.html"), key=lambda path: int(path.stem))
    for path in netease_paths[:pages_per_folder]:
        text_path = netease / "Text" / f"{path.stem}.txt"
        teaser = decode_html(text_path.read_bytes())[1] if text_path.exists() else ""
        pages.append(
            BasePage(
                page_id=f"netease/{path.stem}", path=path, site=NETEASE_SITE, teaser_source=teaser
            )
        )
    return pages


def read_page(page: BasePage) -> bytes:
    data = page.path.read_bytes()
    return gzip.decompress(data) if page.path.suffix == ".gz" else data


# HTML


def parse_page(data: bytes) -> tuple[str, HtmlElement]:
    """Decode *data* as :func:`crawler.extract.extract` does; return the codec and the tree."""
    codec, markup = decode_html(data)
    markup = _XML_DECLARATION.sub("", markup.lstrip("\ufeff"), count=1)
    return codec, lxml.html.document_fromstring(markup)


def serialize_page(root: HtmlElement, codec: str) -> bytes:
    """The page as bytes in its own charset (characters it lacks as references)."""
    doctype = root.getroottree().docinfo.doctype or None
    markup: str = lxml.html.tostring(root, encoding="unicode", doctype=doctype)
    return markup.encode(codec, "xmlcharrefreplace")


def collapse_spaces(text: str) -> str:
    return " ".join(text.split())


def class_and_id_names(root: HtmlElement) -> frozenset[str]:
    """``tag.class`` and ``tag#id`` of every element of the body: a template fingerprint."""
    names: set[str] = set()
    body = root.find("body")
    if body is None:
        return frozenset()
    for element in body.iter():
        if not isinstance(element.tag, str):
            continue
        names.update(f"{element.tag}.{name}" for name in (element.get("class") or "").split())
        if element.get("id"):
            names.add(f"{element.tag}#{element.get('id')}")
    return frozenset(names)


def _looks_like_chrome(element: HtmlElement) -> bool:
    if element.tag in _CHROME_TAGS or (element.get("role") or "").lower() in _CHROME_ROLES:
        return True
    names = [*(element.get("class") or "").split(), element.get("id") or ""]
    return any(_CHROME_NAME.search(name) and not _CONTENT_NAME.search(name) for name in names)


def chrome_elements(root: HtmlElement) -> list[HtmlElement]:
    """The outermost navigation, header and footer elements outside the article.

    An element counts when it looks like chrome (tag, ARIA role or class/id name), holds
    at most a quarter of the body's text and no ``h1``, ``article`` or ``main``; the walk
    does not enter ``article`` or ``main``.
    """
    body = root.find("body")
    if body is None:
        return []
    body_chars = len(collapse_spaces(body.text_content()))
    found: list[HtmlElement] = []
    pending = [child for child in body if isinstance(child.tag, str)]
    pending.reverse()
    while pending:
        element = pending.pop()
        if element.tag in ("article", "main") or element.tag in _NOT_TEXT_TAGS:
            continue
        if _looks_like_chrome(element):
            chars = len(collapse_spaces(element.text_content()))
            holds_content = element.find(".//h1") is not None or any(
                True for _ in element.iter("article", "main")
            )
            if chars <= MAX_CHROME_SHARE * max(body_chars, 1) and not holds_content:
                found.append(element)
                continue
        children = [child for child in element if isinstance(child.tag, str)]
        pending.extend(reversed(children))
    return found


def main_paragraphs(root: HtmlElement, main_text: str) -> list[HtmlElement]:
    """The ``p`` elements whose text is part of the page's main text, in document order."""
    body = root.find("body")
    if body is None:
        return []
    text = collapse_spaces(main_text)
    paragraphs = []
    for element in body.iter("p"):
        words = collapse_spaces(element.text_content())
        if len(words) >= MIN_PARAGRAPH_CHARS and words in text:
            paragraphs.append(element)
    return paragraphs


# Perturbations: each edits a copy of the tree and returns a note, or raises NotApplicable


class NotApplicable(Exception):
    """The perturbation has nothing to change in this page."""


@dataclass(frozen=True)
class PerturbationJob:
    """What :func:`perturb_page` needs to build the copies of one base page."""

    page: BasePage
    seed: int
    original_text: str
    donor_chrome: tuple[str, ...]
    related: tuple[tuple[str, str, str], ...]  # (headline, teaser, href)


def replace_chrome(root: HtmlElement, job: PerturbationJob, rng: random.Random) -> str:
    if not job.donor_chrome:
        raise NotApplicable("no donor chrome")
    targets = chrome_elements(root)
    if not targets:
        donors = [lxml.html.fragment_fromstring(snippet) for snippet in job.donor_chrome]
        body = root.find("body")
        body.insert(0, donors[0])
        for donor in donors[1:]:
            body.append(donor)
        return f"added {len(donors)} chrome elements"
    for number, target in enumerate(targets):
        donor = lxml.html.fragment_fromstring(job.donor_chrome[number % len(job.donor_chrome)])
        for child in list(target):
            target.remove(child)
        target.text = donor.text
        for child in list(donor):
            target.append(child)
    return f"replaced {len(targets)} chrome elements"


def ad_text(rng: random.Random, chinese: bool) -> str:
    if chinese:
        length = rng.randint(60, 120)
        sentences = rng.sample(_CHINESE_ADS, len(_CHINESE_ADS))
        return "".join(sentences)[:length]
    length = rng.randint(30, 60)
    words = " ".join(rng.sample(_ENGLISH_ADS, len(_ENGLISH_ADS))).split()[:length]
    return " ".join(words).rstrip(",.:") + "."


def insert_ad(root: HtmlElement, job: PerturbationJob, rng: random.Random) -> str:
    block = lxml.html.fragment_fromstring(
        f"<div><p>{html.escape(ad_text(rng, job.page.chinese))}</p></div>"
    )
    paragraphs = main_paragraphs(root, job.original_text)
    if paragraphs:
        paragraphs[0].addprevious(block)
        return "before the first paragraph"
    root.find("body").insert(0, block)
    return "at the top of the body"


def rewrite_digits(text: str, rng: random.Random) -> str:
    """*text* with every run of digits replaced by other digits of the same length."""

    def other_digits(match: re.Match[str]) -> str:
        old = match.group()
        while True:
            new = "".join(rng.choice("0123456789") for _ in old)
            if new != old and (len(new) == 1 or new[0] != "0" or old[0] == "0"):
                return new

    return _DIGIT_RUN.sub(other_digits, text)


def change_dates_and_counters(root: HtmlElement, job: PerturbationJob, rng: random.Random) -> str:
    changed = 0

    def rewrite(text: str | None) -> str | None:
        nonlocal changed
        if not text or not any(character.isdigit() for character in text):
            return text

        def rewrite_match(match: re.Match[str]) -> str:
            nonlocal changed
            changed += 1
            return rewrite_digits(match.group(), rng)

        return _DATE_OR_COUNTER.sub(rewrite_match, text)

    body = root.find("body")
    for element in body.iter():
        if element is not body:
            element.tail = rewrite(element.tail)
        if isinstance(element.tag, str) and element.tag not in _NOT_TEXT_TAGS:
            element.text = rewrite(element.text)
            if element.tag == "time" and element.get("datetime"):
                element.set("datetime", rewrite_digits(element.get("datetime"), rng))
    if not changed:
        raise NotApplicable("no dates or counters")
    return f"{changed} dates and counters changed"


def append_related(root: HtmlElement, job: PerturbationJob, rng: random.Random) -> str:
    if not job.related:
        raise NotApplicable("no related headlines")
    heading = "相关新闻" if job.page.chinese else "Related articles"
    items = "".join(
        f'<li><a href="{html.escape(href)}">{html.escape(headline)}</a>'
        f"<p>{html.escape(teaser)}</p></li>"
        for headline, teaser, href in job.related
    )
    block = lxml.html.fragment_fromstring(f"<div><h3>{heading}</h3><ul>{items}</ul></div>")
    paragraphs = main_paragraphs(root, job.original_text)
    if paragraphs:
        paragraphs[-1].addnext(block)
        return f"{len(job.related)} links after the last paragraph"
    root.find("body").append(block)
    return f"{len(job.related)} links at the end of the body"


def remove_paragraph(root: HtmlElement, job: PerturbationJob, rng: random.Random) -> str:
    lines = [line for line in job.original_text.splitlines() if line.strip()]
    if len(lines) < MIN_PARAGRAPHS_FOR_REMOVAL:
        raise NotApplicable(f"main text has {len(lines)} paragraphs")
    most = MAX_REMOVED_SHARE * len(collapse_spaces(job.original_text))
    paragraphs = [
        paragraph
        for paragraph in main_paragraphs(root, job.original_text)
        if len(collapse_spaces(paragraph.text_content())) <= most
    ]
    if not paragraphs:
        raise NotApplicable("no paragraph of the main text, of at most a quarter of it, found")
    victim = rng.choice(paragraphs)
    chars = len(collapse_spaces(victim.text_content()))
    victim.drop_tree()
    return f"removed a paragraph of {chars} characters out of {len(lines)}"


PERTURBATIONS: Final[dict[str, Callable[[HtmlElement, PerturbationJob, random.Random], str]]] = {
    "chrome": replace_chrome,
    "ad": insert_ad,
    "dates": change_dates_and_counters,
    "related": append_related,
    "paragraph": remove_paragraph,
}


# Workers (run in a process pool)


@dataclass
class Survey:
    """A base page's main text and what other pages borrow from it."""

    page_id: str
    text: str
    status: str
    title: str
    template_names: frozenset[str] = frozenset()
    chrome: tuple[str, ...] = ()


@dataclass
class Variant:
    """One copy of a base page: its main text, or why there is none."""

    kind: str
    text: str = ""
    status: str = ""
    note: str = ""
    skipped: str = ""


def survey_page(page: BasePage) -> Survey:
    """Extract the main text of a base page; collect its title, template names and chrome."""
    data = read_page(page)
    extraction = extract(data, page.url)
    try:
        _, root = parse_page(data)
    except Exception:  # an unparseable page has neither template nor chrome
        return Survey(page.page_id, extraction.text, extraction.status, page.title)
    title = page.title or collapse_spaces(root.findtext(".//title") or "").split("_")[0]
    snippets = []
    for element in chrome_elements(root):
        snippet = lxml.html.tostring(element, encoding="unicode", with_tail=False)
        if len(snippet) <= MAX_CHROME_SNIPPET_CHARS and collapse_spaces(element.text_content()):
            snippets.append(snippet)
    return Survey(
        page.page_id,
        extraction.text,
        extraction.status,
        title,
        class_and_id_names(root),
        tuple(snippets[:MAX_CHROME_SNIPPETS]),
    )


def perturb_page(job: PerturbationJob) -> list[Variant]:
    """Build and extract every copy of one base page, and the re-serialized control."""
    data = read_page(job.page)
    url = job.page.url or f"https://{job.page.site}/{job.page.page_id}"
    try:
        codec, root = parse_page(data)
    except Exception as error:
        reason = f"unparseable: {type(error).__name__}"
        return [Variant(kind, skipped=reason) for kind in (*KINDS, CONTROL)]
    if root.find("body") is None:
        return [Variant(kind, skipped="no body") for kind in (*KINDS, CONTROL)]
    extracted: dict[bytes, tuple[str, str]] = {}

    def main_text_of(page_bytes: bytes) -> tuple[str, str]:
        digest = hashlib.blake2b(page_bytes, digest_size=16).digest()
        if digest not in extracted:
            extraction = extract(page_bytes, url)
            extracted[digest] = (extraction.text, extraction.status)
        return extracted[digest]

    variants = []
    for kind, perturb in PERTURBATIONS.items():
        rng = random.Random(f"{job.seed}/{job.page.page_id}/{kind}")
        edited = copy.deepcopy(root)
        try:
            note = perturb(edited, job, rng)
        except NotApplicable as reason:
            variants.append(Variant(kind, skipped=str(reason)))
            continue
        text, status = main_text_of(serialize_page(edited, codec))
        variants.append(Variant(kind, text, status, note))
    text, status = main_text_of(serialize_page(root, codec))
    variants.append(Variant(CONTROL, text, status))
    return variants


# Site and template groups


def same_template_groups(pages: Sequence[BasePage], surveys: dict[str, Survey]) -> dict[str, int]:
    """Group number of each page that shares its site or its template with another page.

    Two pages are joined when their registered domains are equal or when their class and
    id names agree at :data:`TEMPLATE_JACCARD` or more; groups are the connected parts.
    """
    parent = {page.page_id: page.page_id for page in pages}

    def root_of(page_id: str) -> str:
        while parent[page_id] != page_id:
            parent[page_id] = parent[parent[page_id]]
            page_id = parent[page_id]
        return page_id

    def join(first: str, second: str) -> None:
        parent[root_of(first)] = root_of(second)

    by_site: dict[str, list[str]] = defaultdict(list)
    for page in pages:
        if page.site:
            by_site[page.site].append(page.page_id)
    for members in by_site.values():
        for other in members[1:]:
            join(members[0], other)
    names = [
        (page.page_id, surveys[page.page_id].template_names)
        for page in pages
        if len(surveys[page.page_id].template_names) >= MIN_TEMPLATE_NAMES
    ]
    for position, (first, first_names) in enumerate(names):
        for second, second_names in names[position + 1 :]:
            shared = len(first_names & second_names)
            if shared and shared / len(first_names | second_names) >= TEMPLATE_JACCARD:
                join(first, second)
    members_of: dict[str, list[str]] = defaultdict(list)
    for page in pages:
        members_of[root_of(page.page_id)].append(page.page_id)
    groups: dict[str, int] = {}
    multi = sorted(sorted(members) for members in members_of.values() if len(members) > 1)
    for number, members in enumerate(multi):
        for page_id in members:
            groups[page_id] = number
    return groups


# The stream


@dataclass(frozen=True)
class Item:
    """A page of the stream: a base page's original or one of its copies."""

    key: str
    base: str
    kind: str
    text: str


def order_stream(items: Sequence[Item], seed: int) -> list[Item]:
    """Shuffle: originals at random; each copy after its original with probability 0.85."""
    rng = random.Random(seed)
    by_base: dict[str, list[Item]] = defaultdict(list)
    for item in items:
        by_base[item.base].append(item)
    placed: list[tuple[float, str, Item]] = []
    for base in sorted(by_base):
        group = sorted(by_base[base], key=lambda item: (item.kind != ORIGINAL, item.key))
        anchor = rng.random()
        for item in group:
            if item.kind == ORIGINAL:
                position = anchor
            elif rng.random() < COPY_AFTER_ORIGINAL:
                position = anchor + (1.0 - anchor) * rng.random()
            else:
                position = anchor * rng.random()
            placed.append((position, item.key, item))
    placed.sort(key=lambda entry: (entry[0], entry[1]))
    return [item for _, _, item in placed]


# Detectors


@dataclass
class Outcome:
    """What a detector said about one item of the stream."""

    key: str
    match: str | None
    distance: int | None
    match_kind: str | None
    fingerprint: int | None
    exact_key: str
    normalized_length: int
    threshold: int | None


def threshold_for(normalized_length: int) -> int | None:
    if normalized_length < MIN_CHARS:
        return None
    return SHORT_THRESHOLD if normalized_length < SHORT_TEXT_CHARS else LONG_THRESHOLD


def run_ours(stream: Sequence[Item]) -> list[Outcome]:
    """``NearDuplicateDetector()`` with its defaults, fed the stream in order."""
    detector = NearDuplicateDetector()
    outcomes = []
    for item in stream:
        decision = detector.check(item.key, item.text)
        match = decision.match
        outcomes.append(
            Outcome(
                key=item.key,
                match=match.key if match else None,
                distance=match.distance if match else None,
                match_kind=match.kind if match else None,
                fingerprint=decision.fingerprint,
                exact_key=decision.content_hash.hex(),
                normalized_length=decision.normalized_length,
                threshold=decision.threshold,
            )
        )
    return outcomes


@dataclass(frozen=True)
class PackageFingerprint:
    """What the ``simhash`` package makes of one text.

    ``value`` is ``simhash.Simhash(text).value``, ``None`` when that raised (``error``);
    ``float_weights`` is the fingerprint of the same features and weights with those over
    255 passed as ``float`` (what the package computed under NumPy 1), computed when the
    default raised or when asked to check that both agree; ``max_weight`` is the count of
    the text's most frequent feature.
    """

    value: int | None
    float_weights: int | None
    max_weight: int
    error: str = ""


def package_fingerprint(job: tuple[str, bool]) -> PackageFingerprint:
    """The package default's fingerprint of a text (and, if asked, the float-weights one)."""
    text, check = job
    counts = Counter(simhash_package.Simhash(0)._tokenize(text))  # an int builds nothing
    max_weight = max(counts.values(), default=0)
    try:
        value: int | None = int(simhash_package.Simhash(text).value)
        error = ""
    except Exception as raised:  # under NumPy 2: OverflowError above a weight of 255
        value, error = None, f"{type(raised).__name__}: {raised}"
    float_weights = None
    if value is None or check:
        weighted = [
            (feature, float(weight) if weight > 255 else weight)
            for feature, weight in counts.items()
        ]
        float_weights = int(simhash_package.Simhash(weighted).value)
    return PackageFingerprint(value, float_weights, max_weight, error)


def run_anchor(
    stream: Sequence[Item], fingerprints: Sequence[int | None], normalized_lengths: Sequence[int]
) -> list[Outcome]:
    """A brute-force detector with our rule around precomputed fingerprints.

    Exact check on equal text; near check (nearest kept fingerprint within the threshold
    of the text's normalized length) from :data:`MIN_CHARS`; a text without fingerprint
    (the package raised) gets the exact check only and is not kept for the near check.
    """
    kept_texts: dict[str, str] = {}
    kept_keys: list[str] = []
    kept_fingerprints = np.zeros(len(stream), dtype=np.uint64)
    outcomes: list[Outcome] = []
    for item, fingerprint, normalized_length in zip(
        stream, fingerprints, normalized_lengths, strict=True
    ):
        threshold = threshold_for(normalized_length)
        match: str | None = None
        distance: int | None = None
        match_kind: str | None = None
        if item.text in kept_texts:
            match, distance, match_kind = kept_texts[item.text], 0, "exact"
        elif fingerprint is not None and threshold is not None and kept_keys:
            distances = np.bitwise_count(
                kept_fingerprints[: len(kept_keys)] ^ np.uint64(fingerprint)
            )
            nearest = int(np.argmin(distances))
            if int(distances[nearest]) <= threshold:
                match, distance, match_kind = kept_keys[nearest], int(distances[nearest]), "near"
        if match is None:
            kept_texts[item.text] = item.key
            if fingerprint is not None and threshold is not None:
                kept_fingerprints[len(kept_keys)] = fingerprint
                kept_keys.append(item.key)
        outcomes.append(
            Outcome(
                key=item.key,
                match=match,
                distance=distance,
                match_kind=match_kind,
                fingerprint=fingerprint,
                exact_key=hashlib.blake2b(item.text.encode("utf-8", "surrogatepass")).hexdigest(),
                normalized_length=normalized_length,
                threshold=threshold,
            )
        )
    return outcomes


# Evaluation


@dataclass
class Evaluation:
    """The quality figures of one detector on the stream."""

    name: str
    decisions: int = 0
    exact_decisions: int = 0
    correct: int = 0
    wrong: int = 0
    wrong_same_template: int = 0
    positives: Counter[str] = field(default_factory=Counter)
    found: Counter[str] = field(default_factory=Counter)
    within_rule: Counter[str] = field(default_factory=Counter)
    positives_by_folder: Counter[str] = field(default_factory=Counter)
    found_by_folder: Counter[str] = field(default_factory=Counter)
    negative_pairs: int = 0
    negative_pairs_within_rule: int = 0
    same_template_pairs: int = 0
    same_template_pairs_within_rule: int = 0
    fingerprint_failures: int = 0
    failure_example: str = ""
    positive_distances: dict[str, list[int]] = field(default_factory=dict)
    #: Per kind, the change of normalized length from original to copy, as a share.
    length_changes: dict[str, list[float]] = field(default_factory=dict)
    #: Per positive: 0 for equal texts, the distance when both texts get the near check,
    #: else None (exact check only).
    rule_distances: list[int | None] = field(default_factory=list)
    #: Negative pairs that both get the near check, by distance 0 .. WHAT_IF_MAX, then more;
    #: pairs of equal texts are counted apart.
    negative_histogram: list[int] = field(default_factory=list)
    same_template_histogram: list[int] = field(default_factory=list)
    negative_equal: int = 0
    same_template_equal: int = 0
    nearest_negative: list[int] = field(default_factory=list)
    largest_positives: list[dict[str, Any]] = field(default_factory=list)
    wrong_examples: list[dict[str, Any]] = field(default_factory=list)
    misses: list[dict[str, Any]] = field(default_factory=list)
    closest_negatives: list[dict[str, Any]] = field(default_factory=list)

    @property
    def precision(self) -> float:
        return self.correct / self.decisions if self.decisions else 1.0

    @property
    def recall(self) -> float:
        total = sum(self.positives.values())
        return sum(self.found.values()) / total if total else 0.0

    def recall_of(self, kind: str) -> float:
        return self.found[kind] / self.positives[kind] if self.positives[kind] else 0.0

    @property
    def order_free_recall(self) -> float:
        total = sum(self.positives.values())
        return sum(self.within_rule.values()) / total if total else 0.0

    def rule_recall(self, threshold: int) -> float:
        """Positives within *threshold* (texts both long enough, or equal), order-free."""
        within = sum(
            distance is not None and distance <= threshold for distance in self.rule_distances
        )
        return within / len(self.rule_distances) if self.rule_distances else 0.0

    def negatives_within(self, threshold: int, *, same_template: bool = False) -> int:
        """Negative pairs within *threshold* (texts both long enough, or equal)."""
        if same_template:
            return self.same_template_equal + sum(self.same_template_histogram[: threshold + 1])
        return self.negative_equal + sum(self.negative_histogram[: threshold + 1])

    def summary(self) -> dict[str, Any]:
        figures = asdict(self)
        figures.update(
            # asdict() rebuilds a Counter from (key, count) pairs: counts them instead
            positives=dict(self.positives),
            found=dict(self.found),
            within_rule=dict(self.within_rule),
            precision=self.precision,
            recall=self.recall,
            order_free_recall=self.order_free_recall,
            found_by_folder=dict(self.found_by_folder),
            positives_by_folder=dict(self.positives_by_folder),
            recall_by_kind={kind: self.recall_of(kind) for kind in KINDS},
            order_free_by_threshold={
                threshold: {
                    "recall": self.rule_recall(threshold),
                    "negative_pairs": self.negatives_within(threshold),
                    "same_template_pairs": self.negatives_within(threshold, same_template=True),
                }
                for threshold in range(WHAT_IF_MAX + 1)
            },
        )
        return figures


def within_rule(first: Outcome, second: Outcome, threshold: int | None) -> bool:
    """Whether the detector's rule calls two texts duplicates at *threshold*."""
    if first.exact_key == second.exact_key:
        return True
    if threshold is None or first.fingerprint is None or second.fingerprint is None:
        return False
    if first.threshold is None or second.threshold is None:
        return False
    return (first.fingerprint ^ second.fingerprint).bit_count() <= threshold


def miss_reason(later: Outcome, earlier: Outcome, by_key: dict[str, Outcome]) -> str:
    """Why the later of a positive pair was not reported as a duplicate of its base page."""
    if later.exact_key == earlier.exact_key:
        return (
            f"equal text, yet the later page was judged {later.match or 'new'} "
            f"(the earlier: {earlier.match or 'kept'})"
        )
    if later.fingerprint is None or earlier.fingerprint is None:
        return "no fingerprint: exact check only"
    distance = (later.fingerprint ^ earlier.fingerprint).bit_count()
    if later.threshold is None or earlier.threshold is None:
        return f"under {MIN_CHARS} characters: exact check only (distance {distance})"
    if distance > later.threshold:
        return f"distance {distance} > threshold {later.threshold}"
    if later.match is not None:
        return f"within the threshold (distance {distance}), but matched `{later.match}`"
    if earlier.match is not None:
        representative = by_key[earlier.match]
        gap = (later.fingerprint ^ (representative.fingerprint or 0)).bit_count()
        return (
            f"within the threshold (distance {distance}), but the earlier page was itself a "
            f"duplicate of `{earlier.match}`, which is {gap} bits from the later"
        )
    return f"UNEXPLAINED: distance {distance} within threshold {later.threshold}, judged new"


def evaluate(
    name: str,
    stream: Sequence[Item],
    outcomes: Sequence[Outcome],
    groups: dict[str, int],
) -> Evaluation:
    """Score one detector's outcomes on the stream (see the module documentation)."""
    result = Evaluation(
        name,
        positive_distances={kind: [] for kind in KINDS},
        length_changes={kind: [] for kind in KINDS},
    )
    items = {item.key: item for item in stream}
    by_key = {outcome.key: outcome for outcome in outcomes}
    position = {item.key: number for number, item in enumerate(stream)}
    for item, outcome in zip(stream, outcomes, strict=True):
        if outcome.match is None:
            continue
        result.decisions += 1
        result.exact_decisions += outcome.match_kind == "exact"
        other = items[outcome.match]
        if other.base == item.base:
            result.correct += 1
            continue
        result.wrong += 1
        same_template = groups.get(item.base, -1) == groups.get(other.base, -2)
        result.wrong_same_template += same_template
        result.wrong_examples.append(
            {
                "key": item.key,
                "match": other.key,
                "distance": outcome.distance,
                "kind": outcome.match_kind,
                "normalized_length": outcome.normalized_length,
                "same_template": same_template,
                "text": item.text[:80],
                "match_text": other.text[:80],
            }
        )
    originals = {item.base: item for item in stream if item.kind == ORIGINAL}
    for item in stream:
        original = originals.get(item.base)
        if item.kind == ORIGINAL or original is None:
            continue
        copy_outcome, original_outcome = by_key[item.key], by_key[original.key]
        result.positives[item.kind] += 1
        later = item if position[item.key] > position[original.key] else original
        later_outcome = by_key[later.key]
        found = later_outcome.match is not None and items[later_outcome.match].base == item.base
        result.found[item.kind] += found
        folder = item.base.partition("/")[0]
        result.positives_by_folder[folder] += 1
        result.found_by_folder[folder] += found
        if within_rule(copy_outcome, original_outcome, copy_outcome.threshold):
            result.within_rule[item.kind] += 1
        distance = None
        if copy_outcome.fingerprint is not None and original_outcome.fingerprint is not None:
            distance = (copy_outcome.fingerprint ^ original_outcome.fingerprint).bit_count()
            result.positive_distances[item.kind].append(distance)
            result.largest_positives.append(
                {
                    "key": item.key,
                    "distance": distance,
                    "lengths": [
                        original_outcome.normalized_length,
                        copy_outcome.normalized_length,
                    ],
                }
            )
        result.length_changes[item.kind].append(
            copy_outcome.normalized_length / max(original_outcome.normalized_length, 1) - 1.0
        )
        if copy_outcome.exact_key == original_outcome.exact_key:
            result.rule_distances.append(0)
        elif copy_outcome.threshold is None or original_outcome.threshold is None:
            result.rule_distances.append(None)
        else:
            result.rule_distances.append(distance)
        if not found:
            earlier = original if later is item else item
            result.misses.append(
                {
                    "key": item.key,
                    "kind": item.kind,
                    "distance": distance,
                    "normalized_length": copy_outcome.normalized_length,
                    "original_length": original_outcome.normalized_length,
                    "copy_first": later is original,
                    "why": miss_reason(later_outcome, by_key[earlier.key], by_key),
                }
            )
    result.largest_positives.sort(key=lambda example: -example["distance"])
    del result.largest_positives[EXAMPLES:]
    count_negatives(result, stream, outcomes, groups)
    return result


def count_negatives(
    result: Evaluation,
    stream: Sequence[Item],
    outcomes: Sequence[Outcome],
    groups: dict[str, int],
) -> None:
    """Negative pairs within the rule (order-free), and each item's nearest negative."""
    base_numbers: dict[str, int] = {}
    bases = np.array([base_numbers.setdefault(item.base, len(base_numbers)) for item in stream])
    template = np.array([groups.get(item.base, -1 - number) for number, item in enumerate(stream)])
    usable = np.array(
        [outcome.fingerprint is not None and outcome.threshold is not None for outcome in outcomes]
    )
    fingerprints = np.array([outcome.fingerprint or 0 for outcome in outcomes], dtype=np.uint64)
    thresholds = np.array([outcome.threshold or 0 for outcome in outcomes], dtype=np.int64)
    exact_keys: dict[str, list[int]] = defaultdict(list)
    for number, outcome in enumerate(outcomes):
        exact_keys[outcome.exact_key].append(number)
    closest: list[tuple[int, int, int]] = []
    bins = WHAT_IF_MAX + 2
    negative_histogram = np.zeros(bins, dtype=np.int64)
    same_template_histogram = np.zeros(bins, dtype=np.int64)
    for number in range(len(stream)):
        distances = np.bitwise_count(fingerprints ^ fingerprints[number]).astype(np.int64)
        other_base = bases != bases[number]
        later = np.arange(len(stream)) > number
        pairs = other_base & later
        result.negative_pairs += int(pairs.sum())
        same_template = pairs & (template == template[number])
        result.same_template_pairs += int(same_template.sum())
        exact = np.zeros(len(stream), dtype=bool)
        exact[exact_keys[outcomes[number].exact_key]] = True
        result.negative_equal += int((pairs & exact).sum())
        result.same_template_equal += int((same_template & exact).sum())
        if usable[number]:
            near = pairs & usable & (distances <= np.maximum(thresholds, thresholds[number]))
            within = near | (pairs & exact)
            clipped = np.minimum(distances, bins - 1)
            negative_histogram += np.bincount(clipped[pairs & usable & ~exact], minlength=bins)
            same_template_histogram += np.bincount(
                clipped[same_template & usable & ~exact], minlength=bins
            )
            candidates = np.where(other_base & usable, distances, 64)
            nearest = int(candidates.argmin())
            if candidates[nearest] < 64:
                result.nearest_negative.append(int(candidates[nearest]))
                closest.append((int(candidates[nearest]), number, nearest))
        else:
            within = pairs & exact
        result.negative_pairs_within_rule += int(within.sum())
        result.same_template_pairs_within_rule += int((within & same_template).sum())
    result.negative_histogram = negative_histogram.tolist()
    result.same_template_histogram = same_template_histogram.tolist()
    seen: set[tuple[str, str]] = set()
    for distance, first, second in sorted(closest):
        pair = tuple(sorted((stream[first].base, stream[second].base)))
        if pair in seen:
            continue
        seen.add((pair[0], pair[1]))
        result.closest_negatives.append(
            {
                "distance": distance,
                "first": stream[first].key,
                "second": stream[second].key,
                "same_template": bool(template[first] == template[second]),
                "lengths": [outcomes[first].normalized_length, outcomes[second].normalized_length],
            }
        )
        if len(result.closest_negatives) >= EXAMPLES:
            break


# Report


def histogram(distances: Iterable[int]) -> list[int]:
    """Counts of distances 0 .. HISTOGRAM_BINS - 1, then HISTOGRAM_BINS and more."""
    counts = [0] * (HISTOGRAM_BINS + 1)
    for distance in distances:
        counts[min(distance, HISTOGRAM_BINS)] += 1
    return counts


def markdown_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def share(part: int, whole: int) -> str:
    return f"{part / whole:.3f} ({part:,}/{whole:,})" if whole else "n/a"


def machine_facts() -> dict[str, Any]:
    return shared_machine_facts("numpy", "simhash", "trafilatura", "lxml")


MEASURED_MODULES: Final = ("fingerprints", "neardup", "extract")


def code_facts() -> dict[str, Any]:
    """The commit, and the state of the modules whose behaviour is measured."""

    def git(*arguments: str) -> str:
        try:
            completed = subprocess.run(
                ["git", *arguments], cwd=REPO_DIR, capture_output=True, text=True, check=True
            )
        except (OSError, subprocess.CalledProcessError):
            return ""
        return completed.stdout.strip()

    facts: dict[str, Any] = {"commit": git("rev-parse", "--short", "HEAD"), "modules": {}}
    for name in MEASURED_MODULES:
        module = REPO_DIR / "crawler" / f"{name}.py"
        if not module.exists():
            continue
        modified = datetime.fromtimestamp(module.stat().st_mtime, timezone.utc)
        facts["modules"][name] = {
            "mtime": modified.isoformat(timespec="seconds"),
            "sha256": hashlib.sha256(module.read_bytes()).hexdigest()[:12],
            "last_commit": git("log", "-1", "--format=%h", "--", str(module)),
            "uncommitted_changes": bool(git("status", "--porcelain", "--", str(module))),
        }
    return facts


@dataclass
class Report:
    command: str
    seed: int
    facts: dict[str, Any]
    code: dict[str, Any]
    elapsed: float
    extraction_seconds: float
    counts: dict[str, Any]
    groups: list[list[str]]
    evaluations: list[Evaluation]
    kind_facts: dict[str, dict[str, Any]]
    control: dict[str, Any]
    items: list[dict[str, Any]]

    def to_json(self) -> dict[str, Any]:
        figures = asdict(self)
        figures["evaluations"] = [evaluation.summary() for evaluation in self.evaluations]
        figures["kind_facts"] = {
            kind: {**facts, "how": dict(facts["how"])} for kind, facts in self.kind_facts.items()
        }
        return figures


def print_report(report: Report) -> None:
    ours, package = report.evaluations[0], report.evaluations[1]
    counts = report.counts
    facts, code = report.facts, report.code
    print("# Near-duplicate detection quality on perturbed real pages\n")
    print(f"Command: `{report.command}`  ")
    print(
        f"Python {facts['python']}, numpy {facts['numpy']}, simhash {facts['simhash']}, "
        f"trafilatura {facts['trafilatura']}, lxml {facts['lxml']}; {facts['cpu_count']} CPUs "
        f"({facts['cpu_model'] or 'unknown model'}); {facts['platform']}  "
    )
    modules = "; ".join(
        f"crawler/{name}.py last committed in {module['last_commit'] or 'none'}"
        f"{' + uncommitted changes' if module['uncommitted_changes'] else ''}, mtime "
        f"{module['mtime']}, sha256 {module['sha256']}…"
        for name, module in code["modules"].items()
    )
    print(f"Code measured: HEAD {code['commit'] or 'unknown'}; {modules}  ")
    print(
        f"Elapsed: {report.elapsed:.0f} s, of which {report.extraction_seconds:.0f} s "
        f"extracting {counts['extractions']:,} page versions in {counts['workers']} processes\n"
    )
    positives = sum(ours.positives.values())
    print(
        f"Stream: {counts['base_pages']:,} base pages ({counts['wcxb']:,} WCXB, "
        f"{counts['netease']:,} NetEase) and {positives:,} copies, {counts['items']:,} items "
        f"(seed {report.seed}); {counts['copies_first']:,} copies arrive before their "
        f"original. Negative pairs: {ours.negative_pairs:,}, of which "
        f"{ours.same_template_pairs:,} between pages of one site or template "
        f"({len(report.groups)} groups, {sum(len(group) for group in report.groups):,} base "
        "pages).\n"
    )

    print_quality_table(report)
    passed = ours.recall >= TARGET_RECALL and ours.precision >= TARGET_PRECISION
    print(
        f"\naim: recall >= {TARGET_RECALL} at precision >= {TARGET_PRECISION} (ours): "
        f"**{'PASS' if passed else 'FAIL'}** (recall {ours.recall:.3f}, precision "
        f"{ours.precision:.4f})\n"
    )
    if counts["package_failures"]:
        print(
            f"`simhash.Simhash(text)` raised on {counts['package_failures']:,} of "
            f"{counts['items']:,} items ({counts['package_error']}): NumPy 2 refuses a feature "
            "weight over 255 (simhash issue #74). Those items get the exact check only; the "
            "last column passes such weights as float.\n"
        )
    else:
        print(
            f"`simhash.Simhash(text)` raised on none of the {counts['items']:,} items: the most "
            f"frequent character 4-gram of any text occurs {counts['package_max_weight']:,} "
            "times, and the package raises (NumPy 2, simhash issue #74) only above 255.\n"
        )
    print(
        f"Float weights checked against the package default on {counts['package_checked']:,} "
        f"items: {counts['package_disagreements']:,} differ.\n"
    )

    print("## Hamming distances\n")
    print(
        "Positives: each copy against its original. Nearest negative: for each item with "
        f"at least {MIN_CHARS} characters of normalized text, the closest such item of another "
        f"base page. Our threshold is {LONG_THRESHOLD} ({SHORT_THRESHOLD} under "
        f"{SHORT_TEXT_CHARS} characters).\n"
    )
    columns = [histogram(ours.positive_distances[kind]) for kind in KINDS]
    columns += [
        histogram(d for kind in KINDS for d in ours.positive_distances[kind]),
        histogram(ours.nearest_negative),
        histogram(d for kind in KINDS for d in package.positive_distances[kind]),
        histogram(package.nearest_negative),
    ]
    header = ["distance", *(f"ours: {kind}" for kind in KINDS)]
    header += ["ours: all positives", "ours: nearest negative"]
    header += ["package: all positives", "package: nearest negative"]
    rows = []
    for bin_number in range(HISTOGRAM_BINS + 1):
        label = str(bin_number) if bin_number < HISTOGRAM_BINS else f"{HISTOGRAM_BINS}+"
        rows.append([label, *(f"{column[bin_number]:,}" for column in columns)])
    print(markdown_table(header, rows))
    print()
    for evaluation in (ours, package):
        negatives = sorted(evaluation.nearest_negative)
        if negatives:
            print(
                f"Nearest negative, {evaluation.name}: min {negatives[0]}, 1st percentile "
                f"{negatives[len(negatives) // 100]}, median {statistics.median(negatives):g} "
                f"({len(negatives):,} items).  "
            )
    print(
        "\nWhat a different threshold would give (order-free: every positive and negative "
        f"pair judged by the rule alone, one threshold for every text of {MIN_CHARS} "
        "characters or more; the banded index answers only up to 3):\n"
    )
    rows = []
    for threshold in range(WHAT_IF_MAX + 1):
        random_share = sum(math.comb(64, bits) for bits in range(threshold + 1)) / 2**64
        pairs = RANDOM_DOCUMENTS * (RANDOM_DOCUMENTS - 1) // 2
        row = [str(threshold), f"{random_share * pairs:.2g}"]
        for evaluation in (ours, package):
            row += [
                f"{evaluation.rule_recall(threshold):.3f}",
                f"{evaluation.negatives_within(threshold):,} / "
                f"{evaluation.negatives_within(threshold, same_template=True):,}",
            ]
        rows.append(row)
    print(
        markdown_table(
            [
                "threshold",
                f"random fingerprints: pairs within, among {RANDOM_DOCUMENTS:,} documents",
                "ours: recall",
                "ours: negative pairs within (all / same template)",
                "package: recall",
                "package: negative pairs within (all / same template)",
            ],
            rows,
        )
    )
    print()
    print_kind_table(report)
    print_examples(report)


def print_quality_table(report: Report) -> None:
    counts = report.counts
    evaluations = report.evaluations
    positives = sum(evaluations[0].positives.values())
    names = ["ours", "anchor: `Simhash(text)` (package default)"]
    names += ["anchor, weights over 255 as float"][: len(evaluations) - 2]

    def row(label: str, cell: Callable[[Evaluation], str]) -> list[str]:
        return [label, *(cell(evaluation) for evaluation in evaluations)]

    def same(label: str, cell: str) -> list[str]:
        return [label, *([cell] * len(evaluations))]

    def decisions(e: Evaluation) -> str:
        return f"{e.decisions:,} ({e.exact_decisions:,} + {e.decisions - e.exact_decisions:,})"

    def recall_of(kind: str) -> Callable[[Evaluation], str]:
        return lambda e: share(e.found[kind], e.positives[kind])

    def recall_in(folder: str) -> Callable[[Evaluation], str]:
        return lambda e: share(e.found_by_folder[folder], e.positives_by_folder[folder])

    rows = [
        row("duplicate decisions (exact + near)", decisions),
        row("**precision**", lambda e: f"**{share(e.correct, e.decisions)}**"),
        row(
            "**recall** (stream, pair/cluster level)",
            lambda e: f"**{share(sum(e.found.values()), positives)}**",
        ),
        *(row(f"recall: {kind}", recall_of(kind)) for kind in KINDS),
        *(
            row(f"recall: {label} pages", recall_in(folder))
            for folder, label in (("wcxb", "WCXB"), ("netease", "NetEase"))
        ),
        row(
            "recall, order-free (pair within the rule)",
            lambda e: share(sum(e.within_rule.values()), positives),
        ),
        row(
            "wrong decisions: all / same site or template",
            lambda e: f"{e.wrong:,} / {e.wrong_same_template:,}",
        ),
        row(
            "negative pairs within the rule, order-free: all / same site or template",
            lambda e: f"{e.negative_pairs_within_rule:,} / {e.same_template_pairs_within_rule:,}",
        ),
        row(
            "items without fingerprint (the package raised): exact check only",
            lambda e: f"{e.fingerprint_failures:,}",
        ),
        same(
            "pages used: base pages / stream items",
            f"{counts['base_pages']:,} / {counts['items']:,}",
        ),
        same(
            "excluded, no main text: base pages / copies",
            f"{counts['empty_bases']:,} / {counts['empty_copies']:,}",
        ),
        same(
            "copies not built (perturbation not applicable)",
            f"{sum(counts['not_applicable'].values()):,}",
        ),
    ]
    print(markdown_table(["measure", *names], rows))


def print_kind_table(report: Report) -> None:
    ours, counts = report.evaluations[0], report.counts
    print("## By perturbation (ours)\n")
    rows = []
    for kind in KINDS:
        distances = ours.positive_distances[kind]
        kind_facts = report.kind_facts[kind]
        rows.append(
            [
                kind,
                f"{ours.positives[kind]:,}",
                f"{counts['not_applicable'].get(kind, 0):,}",
                f"{kind_facts['equal_raw']:,} / {kind_facts['equal_normalized']:,}",
                f"{statistics.median(ours.length_changes[kind]):+.1%}"
                if ours.length_changes[kind]
                else "n/a",
                f"{statistics.median(distances):g}" if distances else "n/a",
                f"{sum(distance >= HISTOGRAM_BINS for distance in distances):,}",
                f"{kind_facts['short']:,}",
                share(ours.within_rule[kind], ours.positives[kind]),
                share(ours.found[kind], ours.positives[kind]),
            ]
        )
    header = ["kind", "copies", "not applicable", "main text unchanged: raw / normalized"]
    header += ["median length change", "median distance", f"distance {HISTOGRAM_BINS}+"]
    header += [f"copies under {MIN_CHARS} chars", "within rule", "found in stream"]
    print(markdown_table(header, rows))
    print("\nHow the edits were applied:\n")
    for kind in KINDS:
        how = report.kind_facts[kind]["how"]
        print(
            f"- {kind}: " + "; ".join(f"{note} ({count:,})" for note, count in how.most_common(4))
        )
    control = report.control
    print(
        f"\nControl: re-serializing a page with lxml, without an edit, changed its normalized "
        f"main text on {control['changed']:,} of {control['pages']:,} pages.\n"
    )


def print_examples(report: Report) -> None:
    ours = report.evaluations[0]
    print("## Examples (ours)\n")
    print("Misses, up to four a kind:\n")
    for kind in KINDS:
        for miss in [miss for miss in ours.misses if miss["kind"] == kind][:EXAMPLES]:
            print(
                f"- `{miss['key']}` ({miss['normalized_length']:,} chars, original "
                f"{miss['original_length']:,}{', copy first' if miss['copy_first'] else ''}): "
                f"{miss['why']}"
            )
    print("\nLargest distances between a copy and its original (normalized lengths):\n")
    for example in ours.largest_positives:
        original_length, copy_length = example["lengths"]
        print(
            f"- `{example['key']}`: distance {example['distance']}, original "
            f"{original_length:,} chars, copy {copy_length:,}"
        )
    print("\nWrong decisions:\n")
    if not ours.wrong_examples:
        print("- none")
    for wrong in ours.wrong_examples[: EXAMPLES * 2]:
        print(
            f"- `{wrong['key']}` reported as {wrong['kind']} duplicate of `{wrong['match']}` at "
            f"distance {wrong['distance']} ({wrong['normalized_length']:,} chars"
            f"{', same site or template' if wrong['same_template'] else ''}): "
            f"{wrong['text']!r} / {wrong['match_text']!r}"
        )
    print("\nClosest pairs of different base pages:\n")
    for pair in ours.closest_negatives:
        print(
            f"- distance {pair['distance']}: `{pair['first']}` and `{pair['second']}` "
            f"({pair['lengths'][0]:,} and {pair['lengths'][1]:,} chars"
            f"{', same site or template' if pair['same_template'] else ''})"
        )
    print("\nSite and template groups (negatives that must stay distinct):\n")
    for group in report.groups:
        shown = ", ".join(group[:6]) + (f", … ({len(group)} pages)" if len(group) > 6 else "")
        print(f"- {shown}")


# Main


def build_items(
    pages: Sequence[BasePage],
    surveys: dict[str, Survey],
    variants: dict[str, list[Variant]],
) -> tuple[list[Item], dict[str, Any], dict[str, dict[str, Any]], dict[str, Any]]:
    """The stream's items; the counts of what was left out; facts by kind; the control."""
    items: list[Item] = []
    not_applicable: Counter[str] = Counter()
    counts: dict[str, Any] = {"empty_bases": 0, "empty_copies": 0, "wcxb": 0, "netease": 0}
    kind_facts: dict[str, dict[str, Any]] = {
        kind: {"equal_normalized": 0, "equal_raw": 0, "short": 0, "how": Counter()}
        for kind in KINDS
    }
    control_distances: list[int] = []
    control_changed = 0
    for page in pages:
        survey = surveys[page.page_id]
        if not survey.text:
            counts["empty_bases"] += 1
            continue
        counts["netease" if page.chinese else "wcxb"] += 1
        items.append(Item(page.page_id, page.page_id, ORIGINAL, survey.text))
        original_normalized = normalize_text(survey.text)
        for variant in variants[page.page_id]:
            if variant.skipped:
                if variant.kind != CONTROL:
                    not_applicable[variant.kind] += 1
                continue
            if not variant.text:
                counts["empty_copies"] += variant.kind != CONTROL
                continue
            normalized = normalize_text(variant.text)
            if variant.kind == CONTROL:
                control_changed += normalized != original_normalized
                control_distances.append(
                    (
                        simhash_of_normalized(normalized)
                        ^ simhash_of_normalized(original_normalized)
                    ).bit_count()
                )
                continue
            facts = kind_facts[variant.kind]
            facts["equal_normalized"] += normalized == original_normalized
            facts["equal_raw"] += variant.text == survey.text
            facts["short"] += len(normalized) < MIN_CHARS
            facts["how"][_DIGIT_RUN.sub("N", variant.note)] += 1
            items.append(
                Item(f"{page.page_id}~{variant.kind}", page.page_id, variant.kind, variant.text)
            )
    counts["not_applicable"] = dict(not_applicable)
    counts["base_pages"] = counts["wcxb"] + counts["netease"]
    control = {
        "pages": len(control_distances),
        "changed": control_changed,
        "distance_histogram": histogram(control_distances),
    }
    return items, counts, kind_facts, control


def perturbation_jobs(
    pages: Sequence[BasePage], surveys: dict[str, Survey], seed: int
) -> list[PerturbationJob]:
    """One job a base page with main text: its donor chrome and its related headlines."""
    donors = [page for page in pages if surveys[page.page_id].chrome]
    jobs = []
    for page in pages:
        survey = surveys[page.page_id]
        if not survey.text:
            continue
        rng = random.Random(f"{seed}/{page.page_id}/choices")
        other_sites = [donor for donor in donors if donor.site != page.site]
        donor_chrome: tuple[str, ...] = ()
        if other_sites:
            donor_chrome = surveys[rng.choice(other_sites).page_id].chrome
        same_language = [
            other
            for other in pages
            if other.chinese == page.chinese
            and other.page_id != page.page_id
            and surveys[other.page_id].title
        ]
        related = []
        for other in rng.sample(same_language, min(len(same_language), rng.randint(5, 8))):
            source = collapse_spaces(other.teaser_source or surveys[other.page_id].text)
            if page.chinese:
                teaser = source[: rng.randint(20, 40)]
            else:
                teaser = " ".join(source.split()[: rng.randint(10, 20)])
            href = other.url or f"https://{other.site}/{other.page_id}.html"
            related.append((surveys[other.page_id].title, teaser + "…", href))
        jobs.append(PerturbationJob(page, seed, survey.text, donor_chrome, tuple(related)))
    return jobs


def check_rule_matches_detector() -> None:
    detector = NearDuplicateDetector()
    ours = (
        detector.short_text_chars,
        detector.short_threshold,
        detector.long_threshold,
        detector.min_chars,
    )
    assumed = (SHORT_TEXT_CHARS, SHORT_THRESHOLD, LONG_THRESHOLD, MIN_CHARS)
    if ours != assumed:
        raise SystemExit(f"the detector's defaults changed: {ours}, the anchor assumes {assumed}")


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument(
        "--corpus", help=f"corpus folder (default: ${CORPUS_ENV_VAR}, else ../shared/corpus)"
    )
    parser.add_argument(
        "--pages", type=int, default=None, help="at most N base pages of each folder"
    )
    parser.add_argument(
        "--seed", type=int, default=SEED, help="seed of the perturbations and the order"
    )
    parser.add_argument(
        "--workers",
        type=int,
        default=os.cpu_count() or 1,
        help="extraction processes (default: CPUs)",
    )
    parser.add_argument("--json", type=Path, help="also write the raw numbers to this file")
    return parser.parse_args(argv)


def pooled(function: Callable[[Any], Any], jobs: Sequence[Any], workers: int) -> Iterator[Any]:
    if workers <= 1:
        yield from map(function, jobs)
        return
    with ProcessPoolExecutor(max_workers=workers) as pool:
        yield from pool.map(function, jobs, chunksize=4)


def shown_path(path: Path) -> str:
    """*path* relative to the working directory when it is below it (``.venv/bin/python``)."""
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def evaluate_detectors(
    stream: Sequence[Item], groups: dict[str, int], workers: int, counts: dict[str, Any]
) -> tuple[list[Evaluation], dict[str, list[Outcome]]]:
    """Run ours and the anchor (and, if the package raised, the float-weights anchor) on
    the stream; score them. Adds the package's failures and checks to *counts*."""
    outcomes = {"ours": run_ours(stream)}
    normalized_lengths = [len(normalize_text(item.text)) for item in stream]
    package_jobs = [
        (item.text, number % PACKAGE_CHECK_EVERY == 0) for number, item in enumerate(stream)
    ]
    package = list(pooled(package_fingerprint, package_jobs, workers))
    failures = [result for result in package if result.value is None]
    checked = [result for result in package if result.value is not None and result.float_weights]
    counts.update(
        package_failures=len(failures),
        package_error=failures[0].error if failures else "",
        package_max_weight=max((result.max_weight for result in package), default=0),
        package_checked=len(checked),
        package_disagreements=sum(result.value != result.float_weights for result in checked),
    )
    outcomes["package default"] = run_anchor(
        stream, [result.value for result in package], normalized_lengths
    )
    if failures:
        outcomes["package, float weights"] = run_anchor(
            stream,
            [
                result.value if result.value is not None else result.float_weights
                for result in package
            ],
            normalized_lengths,
        )
    evaluations = [evaluate(name, stream, results, groups) for name, results in outcomes.items()]
    for evaluation in evaluations[1:]:
        evaluation.fingerprint_failures = (
            len(failures) if evaluation.name == "package default" else 0
        )
    return evaluations, outcomes


def main(argv: Sequence[str] | None = None) -> None:
    arguments = parse_args(argv)
    started = time.perf_counter()
    check_rule_matches_detector()
    try:
        pages = load_pages(resolve_corpus_dir(arguments.corpus), arguments.pages)
    except FileNotFoundError as error:
        raise SystemExit(f"{error} (set --corpus or ${CORPUS_ENV_VAR})") from None

    extraction_started = time.perf_counter()
    surveys = {survey.page_id: survey for survey in pooled(survey_page, pages, arguments.workers)}
    jobs = perturbation_jobs(pages, surveys, arguments.seed)
    variants = {
        job.page.page_id: page_variants
        for job, page_variants in zip(
            jobs, pooled(perturb_page, jobs, arguments.workers), strict=True
        )
    }
    extraction_seconds = time.perf_counter() - extraction_started
    for page in pages:
        variants.setdefault(page.page_id, [])

    items, counts, kind_facts, control = build_items(pages, surveys, variants)
    stream = order_stream(items, arguments.seed)
    groups = same_template_groups(pages, surveys)
    seen_originals: set[str] = set()
    copies_first = 0
    for item in stream:
        if item.kind == ORIGINAL:
            seen_originals.add(item.base)
        else:
            copies_first += item.base not in seen_originals
    counts.update(
        items=len(stream),
        copies_first=copies_first,
        workers=max(arguments.workers, 1),
        extractions=len(pages)
        + sum(1 for page_variants in variants.values() for v in page_variants if not v.skipped),
    )

    evaluations, outcomes = evaluate_detectors(stream, groups, arguments.workers, counts)

    group_members: dict[int, list[str]] = defaultdict(list)
    for page_id, number in groups.items():
        group_members[number].append(page_id)
    report = Report(
        command=shlex.join([shown_path(Path(sys.executable)), *sys.argv]),
        seed=arguments.seed,
        facts=machine_facts(),
        code=code_facts(),
        elapsed=time.perf_counter() - started,
        extraction_seconds=extraction_seconds,
        counts=counts,
        groups=[sorted(members) for _, members in sorted(group_members.items())],
        evaluations=evaluations,
        kind_facts=kind_facts,
        control=control,
        items=[
            {
                "key": item.key,
                "base": item.base,
                "kind": item.kind,
                "normalized_length": outcomes["ours"][number].normalized_length,
                "decisions": {
                    name: [results[number].match, results[number].distance]
                    for name, results in outcomes.items()
                },
            }
            for number, item in enumerate(stream)
        ],
    )
    print_report(report)
    if arguments.json:
        arguments.json.write_text(json.dumps(report.to_json(), indent=2, default=str) + "\n")


if __name__ == "__main__":
    main()
