"""Measure how well the near-duplicate detector tells copies of a page from other pages.

Usage (from the repository root; the MinHash column needs the ``bench`` extra,
``.venv/bin/pip install -e '.[bench]'``)::

    .venv/bin/python bench/neardup_quality.py [--corpus ../shared/corpus] [--pages N]
                                              [--seed S] [--workers W] [--json out.json]

What the numbers mean, and what the script promises about them:

* **Pages.** The real pages of ``<corpus>/pages``, read in place as the bytes a crawler
  downloads: ``wcxb-dev/html/*.html.gz`` (400 pages, mostly English) and
  ``chinese-cx/RawHtml/*.html`` (74 NetEase pages in GBK or UTF-8). ``--pages N`` takes
  the first N of each folder. The corpus folder is ``--corpus``, else
  ``$DEDUP_CORPUS_DIR``, else ``<repo>/../shared/corpus``; nothing is copied from it.
* **Copies.** Each base page is decoded (:func:`crawler.content.extract.decode_html`), parsed with
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
    quarter of it; only for pages whose main text has 6 or more paragraphs (lines);
  - ``printed``: a printer-friendly copy, the original plus one header or footer line of
    60 to 150 characters (``Printed on 12 March 2024 at 14:05 UTC from <the page's URL>``,
    in Chinese for a Chinese page) in a ``p`` right before the first or after the last
    paragraph of the main text; only for pages whose main text has 2,000 to 8,000
    characters (the report says how many).

  A copy whose edit could not be applied is left out (and counted). The edits are real
  HTML edits: how much of them reaches the main text is up to trafilatura. As a control,
  each page is also re-serialized without an edit (not part of the stream): the report
  says how often that alone changes the main text.
* **Siblings** (``sku``). From each base page, two distinct product pages on its template:
  when its main text holds sizes, capacities or product codes (``500 GB``, ``15.6-inch``,
  ``250 ml``, ``Size: 42``, ``SKU 12345``, ``Model No. XR-200``, ``货号 A12``), every such
  token of the page's text is changed (sizes times 2 and 3, the codes' last digits
  shifted); otherwise one spec line with a capacity, a screen size and a SKU is added after
  a paragraph of the main text, the same paragraph with other values in each sibling. A
  sibling is a base page of its own: a negative of the other sibling and, when its sizes
  and codes were changed, of its original and the original's copies. A sibling that only
  *adds* a spec line is its original plus one line, the edit a ``printed`` copy makes: a
  decision between it and its original's pages is neither right nor wrong (counted as
  *not judged*), and a copy matched to it counts as found. So is a decision between a
  sibling that changes sizes and a copy whose edit took every size and code of its page's
  text out (a dropped paragraph that held the only size): the same edit of the sibling
  gives the same text, and no detector that compares texts can tell which page it
  came from (``Item.sizeless``; counted apart). A sibling whose main text
  comes out equal to the original's is left out (and counted), as is one whose normalized
  main text equals the original's or the other sibling's: the edit did not reach the text
  the detectors compare, and an equal text is an exact copy to each of them.
* **Stream.** Originals, siblings and copies are shuffled with the seed: originals and
  siblings at random, each copy after its original with probability 0.85, before it
  otherwise. Every detector sees the same stream, in the same order, and keeps what it
  judges new. Each column is also run on the stream without the siblings (the other items
  in the same order): what the siblings cost it, as a sibling that takes the place of an
  original leads its copies astray.
* **Labels.** A decision "X duplicates Y" is correct when X and Y come from the same base
  page, whatever their kinds. A positive is a (copy, original) pair; it is *found* when
  the later of the two in the stream was reported as a duplicate of a page of its own
  base page (the other one, or another copy of it). *Precision* is correct decisions over
  all duplicate decisions; *recall* is found positives over positives. Negatives are all
  pairs of different base pages, including pages of one site or one template
  (*same-template*): the NetEase pages, pages of one registered domain, pages whose
  class and id names (``div.menu``, ``span#views``) agree at Jaccard 0.5 or more, and a
  page with its siblings. A *false flag among same-template siblings* is a decision
  between two pages of one family (a corpus page, its copies and its siblings) of
  different base pages. The targets: recall 0.97 or more, ``printed`` 0.98,
  ``paragraph`` 0.95, precision 0.999, no false flag among siblings.
* **Order-free rule.** Besides the stream, every pair is judged by the SimHash rule
  alone: texts equal, or both at least ``min_chars`` long and within the threshold (a
  positive: the copy's threshold; a negative: the larger of the two). Positives within
  it, and negative pairs within it, show what the fingerprint can do without the
  stream's order effects. Only for the columns that have such a rule alone: today's
  first stage and the anchors.
* **Columns**, each on :func:`crawler.content.extract.main_text` of each page (ours fed as the
  item pipeline feeds the detector: the text with the size class of its page):

  1. *Today's first stage* (unverified): ``NearDuplicateDetector(second_stage=False,
     min_similarity=0.0)``: exact check, then the banded SimHash look-up, nothing
     verified.
  2. *Verified stages*: ``NearDuplicateDetector()``, the default.

     Both are built with only the keyword arguments the installed detector accepts (on a
     detector without the verified stages the two columns run the same detector, and the
     report says so). Decisions are counted by stage (``Match.stage``: ``exact``,
     ``first``, ``second``; from ``Match.kind`` where the detector has no stages), and so
     are the matches verification rejected (``Decision.rejected``), split into those of
     another base page (rightly rejected) and those of the item's own.
  3. *Anchor*: ``simhash.Simhash(text).value`` (the package default: lower case, word
     characters only, character 4-grams, MD5, weighted by count) on the same text, with
     the first stage's rule: exact check on equal text, Hamming threshold 2 below 200
     characters of normalized text (:func:`crawler.content.fingerprints.normalize_text`) and 3
     from there, exact check only below 50; the nearest kept fingerprint within the
     threshold, found by brute force. Under NumPy 2 the package raises ``OverflowError``
     when a 4-gram occurs more than 255 times (simhash issue #74): such items get the
     exact check only and are counted, and one more column then gives the anchor with
     those weights passed as ``float`` (what NumPy 1 computed). Every tenth item checks
     that the float-weights fingerprint equals the package's own where the package does
     not raise.
  4. *MinHash LSH*: datasketch ``MinHashLSH(threshold=0.8, num_perm=128)`` over
     ``MinHash(num_perm=128)`` (datasketch's default hash and seed) of the word-bigram
     shingles of the normalized main text (each Chinese or Japanese character a word;
     a one-word text is its own shingle). Insert-then-query in stream order: the
     candidates are verified in the order they were kept, the first at an estimated
     Jaccard similarity of 0.8 or more is the match (the item is not kept); when none
     passes, the item is kept and the first candidate counts as rejected. No exact stage:
     a match on an equal normalized text is counted as exact. Left out, with a note, when
     datasketch is not installed.
* **Distances.** For the first stage's SimHash and the anchor: the Hamming distance of
  every positive pair (by kind for ours), and for every item with at least ``min_chars``
  characters, the distance to the nearest such item of another base page. A what-if table
  applies one threshold 0..10 to every pair (order-free) and gives recall and the
  negative pairs within it, next to the pairs that many uniformly random 64-bit
  fingerprints would bring at a million documents (real fingerprints cluster more: the
  least to expect at that size).

Pages whose main text is empty are left out, with their copies and siblings, and counted.
Output is Markdown on stdout (tables, machine facts, the fingerprint code measured, the
command line, elapsed time); ``--json`` also writes the raw numbers.
"""

from __future__ import annotations

import argparse
import copy
import functools
import gzip
import hashlib
import html
import importlib
import inspect
import itertools
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
from dataclasses import asdict, dataclass, field, replace
from datetime import datetime, timezone
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import lxml.html
import numpy as np
import simhash as simhash_package
import tldextract
from machine import machine_facts as shared_machine_facts

from crawler.content import fingerprints
from crawler.content.extract import EXTRACTORS, Extractor, decode_html, extract
from crawler.content.fingerprints import normalize_text, simhash_of_normalized
from crawler.content.neardup import Decision, Match, NearDuplicateDetector
from crawler.defaults import DEDUP_EXTRACTOR

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Iterator, Sequence

REPO_DIR = Path(__file__).resolve().parent.parent
DEFAULT_CORPUS_DIR = REPO_DIR.parent / "shared" / "corpus"
CORPUS_ENV_VAR = "DEDUP_CORPUS_DIR"
SEED = 20_240_707

#: The perturbations that make copies (positives) of a base page.
KINDS: Final = ("chrome", "ad", "dates", "related", "paragraph", "printed")
ORIGINAL: Final = "original"
#: Distinct product pages made from a base page on its template (negatives).
SIBLING: Final = "sku"
SIBLINGS_PER_PAGE: Final = 2
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
#: A printer-friendly copy is made of pages with this much main text (collapsed spaces).
PRINTED_MIN_CHARS: Final = 2_000
PRINTED_MAX_CHARS: Final = 8_000
#: ... and gets one header or footer line of this many characters.
PRINT_LINE_MIN_CHARS: Final = 60
PRINT_LINE_MAX_CHARS: Final = 150
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
TARGET_RECALL: Final = 0.97
TARGET_RECALL_BY_KIND: Final = {"printed": 0.98, "paragraph": 0.95}
TARGET_PRECISION: Final = 0.999
TARGET_SIBLING_FALSE_FLAGS: Final = 0
NETEASE_SITE: Final = "163.com"
#: Every so many items, the package's fingerprint is also computed with float weights, to
#: check that the two agree where the default does not raise.
PACKAGE_CHECK_EVERY: Final = 10
EXAMPLES: Final = 4

#: The datasketch column: LSH threshold, permutations, and the verification of a candidate.
MINHASH_THRESHOLD: Final = 0.8
MINHASH_PERMUTATIONS: Final = 128

#: The columns, in the order of the tables.
FIRST_STAGE: Final = "first stage"
VERIFIED: Final = "verified"
PACKAGE: Final = "package default"
PACKAGE_FLOAT: Final = "package, float weights"
MINHASH: Final = "minhash lsh"
COLUMN_TITLES: Final = {
    FIRST_STAGE: "today's first stage (unverified)",
    VERIFIED: "verified stages (the default)",
    PACKAGE: "anchor: `Simhash(text)` (package default)",
    PACKAGE_FLOAT: "anchor, weights over 255 as float",
    MINHASH: f"datasketch `MinHashLSH` ({MINHASH_THRESHOLD}, {MINHASH_PERMUTATIONS} perm)",
}
#: The keyword arguments of each detector column; those the installed
#: NearDuplicateDetector does not accept are left out (and reported).
DETECTOR_OPTIONS: Final[dict[str, dict[str, Any]]] = {
    FIRST_STAGE: {"second_stage": False, "min_similarity": 0.0, "index_copies": False},
    VERIFIED: {},
}

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


_PRINT_LINES: Final = (
    "Printed on {day} {month} {year} at {hour:02}:{minute:02} UTC from {url}",
    "Printed from {url} on {month} {day}, {year} at {hour:02}:{minute:02}",
    "This page was printed on {day} {month} {year}, {hour:02}:{minute:02} UTC. Source: {url}",
    "Print version generated {year}-{month_number:02}-{day:02} {hour:02}:{minute:02} from {url}",
)
_CHINESE_PRINT_LINES: Final = (
    "本文打印于{year}年{month_number}月{day}日 {hour:02}:{minute:02}\uff0c来源\uff1a{url}",
    "打印时间\uff1a{year}-{month_number:02}-{day:02} {hour:02}:{minute:02}"
    "\u3000原文链接\uff1a{url}",
)
_PRINT_LINE_PADDING: Final = " | printer-friendly version"
_CHINESE_PRINT_LINE_PADDING: Final = "\u3000打印版本\u3000版权所有"
_MONTH_NAMES: Final = (
    *("January", "February", "March", "April", "May", "June"),
    *("July", "August", "September", "October", "November", "December"),
)

# A size or capacity: a number and its unit ("500 GB", "15.6-inch", "250ml", "42 毫米").
_SIZE_UNIT = (
    r"TB|GB|MB|KB|kB|GHz|MHz|mAh|Wh|kW|W|V|mm|cm|km|mg|ml|mL|m|inch(?:es)?|in\.|L|litres?"
    r"|liters?|kg|g|oz|lbs?|ft|MP|英寸|寸|毫米|厘米|米|千克|公斤|克|毫升|升|瓦"
)
_SIZE = re.compile(
    rf"(?<![A-Za-z0-9.,])(\d+(?:[.,]\d+)?)(\s?-?\s?(?:{_SIZE_UNIT}))(?![A-Za-z])"
    r"|(?i:\b(size)|(尺码|尺寸))(\s*[:\uff1a]?\s*)(\d+(?:\.\d+)?)"
)
# A labelled product code with at least one digit ("SKU 12345", "Model No. XR-200", "货号 A12").
_PRODUCT_CODE = re.compile(
    r"((?i:\b(?:sku|mpn|upc|ean|model(?:\s+(?:no\.?|number))?|(?:part|item|style)\s+"
    r"(?:no\.?|number|#)|product\s+code))|货号|型号|产品编号|商品编号)"
    r"(\s*[:#\uff1a]?\s*)((?=[A-Za-z0-9-]*\d)[A-Za-z0-9][A-Za-z0-9-]*)"
)
_LAST_DIGITS = re.compile(r"\d+(?=\D*$)")
_CAPACITIES_GB: Final = (64, 128, 256, 512, 1000, 2000, 4000)
_SCREEN_INCHES: Final = ("11.6", "13.3", "14", "15.6", "16", "17.3")

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
    """Decode *data* as :func:`crawler.content.extract.extract` does; return the codec and
    the tree."""
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
    extractor: Extractor = DEDUP_EXTRACTOR


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


def print_line(page: BasePage, rng: random.Random) -> str:
    """A "printed on ... from <url>" line of 60 to 150 characters for *page*."""
    url = page.url or f"https://{page.site or 'example.org'}/{page.page_id}"
    month_number = rng.randint(1, 12)
    when = {
        "year": rng.randint(2015, 2025),
        "month_number": month_number,
        "month": _MONTH_NAMES[month_number - 1],
        "day": rng.randint(1, 28),
        "hour": rng.randrange(24),
        "minute": rng.randrange(60),
    }
    template = rng.choice(_CHINESE_PRINT_LINES if page.chinese else _PRINT_LINES)
    line = template.format(url=url, **when)
    if len(line) > PRINT_LINE_MAX_CHARS:  # a long URL: keep its start
        room = PRINT_LINE_MAX_CHARS - len(template.format(url="", **when)) - 1
        line = template.format(url=url[:room] + "…", **when)
    while len(line) < PRINT_LINE_MIN_CHARS:
        line += _CHINESE_PRINT_LINE_PADDING if page.chinese else _PRINT_LINE_PADDING
    return line[:PRINT_LINE_MAX_CHARS]


def add_print_line(root: HtmlElement, job: PerturbationJob, rng: random.Random) -> str:
    length = len(collapse_spaces(job.original_text))
    if not PRINTED_MIN_CHARS <= length <= PRINTED_MAX_CHARS:
        raise NotApplicable(
            f"main text of {length} characters, not {PRINTED_MIN_CHARS}-{PRINTED_MAX_CHARS}"
        )
    paragraphs = main_paragraphs(root, job.original_text)
    if not paragraphs:
        raise NotApplicable("no paragraph of the main text found")
    line = print_line(job.page, rng)
    block = lxml.html.fragment_fromstring(f"<p>{html.escape(line)}</p>")
    if rng.random() < 0.5:
        paragraphs[0].addprevious(block)
        return f"header line of {len(line)} characters"
    paragraphs[-1].addnext(block)
    return f"footer line of {len(line)} characters"


PERTURBATIONS: Final[dict[str, Callable[[HtmlElement, PerturbationJob, random.Random], str]]] = {
    "chrome": replace_chrome,
    "ad": insert_ad,
    "dates": change_dates_and_counters,
    "related": append_related,
    "paragraph": remove_paragraph,
    "printed": add_print_line,
}


# Same-template siblings: distinct product pages (negatives), a base page each


def scaled(number: str, factor: int) -> str:
    """*number* ("500", "15.6", "1,5") times *factor*, with as many decimals.

    >>> scaled("500", 2), scaled("15.6", 3), scaled("1,5", 2)
    ('1000', '46.8', '3,0')
    """
    whole, separator, fraction = number.replace(",", ".").partition(".")
    if not separator:
        return str(int(whole) * factor)
    digits = str(int(whole + fraction) * factor).rjust(len(fraction) + 1, "0")
    return digits[: -len(fraction)] + ("," if "," in number else ".") + digits[-len(fraction) :]


def other_code(code: str, sibling: int) -> str:
    """*code* with its last run of digits shifted for sibling 1, 2, ... (width kept).

    >>> other_code("12345", 1), other_code("XR-200", 2), other_code("A7", 1)
    ('12382', 'XR-274', 'A4')
    """

    def shift(match: re.Match[str]) -> str:
        digits = match.group()
        return f"{(int(digits) + 37 * sibling) % 10 ** len(digits):0{len(digits)}d}"

    return _LAST_DIGITS.sub(shift, code, count=1)


def sibling_text(text: str, sibling: int) -> tuple[str, int]:
    """*text* with every size, capacity and product code changed for sibling 1, 2, ...,
    and the number of tokens changed.

    Sizes are multiplied by ``sibling + 1``; codes get their last digits shifted.

    >>> sibling_text("1 TB drive, 15.6-inch, SKU 12345", 1)
    ('2 TB drive, 31.2-inch, SKU 12382', 3)
    """
    changed = 0

    def new_code(match: re.Match[str]) -> str:
        nonlocal changed
        changed += 1
        return match.group(1) + match.group(2) + other_code(match.group(3), sibling)

    def new_size(match: re.Match[str]) -> str:
        nonlocal changed
        changed += 1
        if match.group(1) is not None:
            return scaled(match.group(1), sibling + 1) + match.group(2)
        label = match.group(3) or match.group(4)
        return label + match.group(5) + scaled(match.group(6), sibling + 1)

    text = _SIZE.sub(new_size, _PRODUCT_CODE.sub(new_code, text))
    return text, changed


def spec_line(job: PerturbationJob, rng: random.Random, sibling: int) -> str:
    """A product spec line (a capacity, a screen size and a SKU) with sibling's values.

    Every sibling calls it with *rng* in the same state: their values differ by the
    sibling's number only.
    """
    capacity = _CAPACITIES_GB[(rng.randrange(len(_CAPACITIES_GB)) + sibling) % len(_CAPACITIES_GB)]
    inches = _SCREEN_INCHES[(rng.randrange(len(_SCREEN_INCHES)) + sibling) % len(_SCREEN_INCHES)]
    sku = other_code(str(rng.randint(10_000, 99_999)), sibling)
    if job.page.chinese:
        return f"产品规格\uff1a容量 {capacity}GB\uff0c屏幕尺寸 {inches} 英寸\uff0c货号 SKU {sku}。"
    return f"Specifications: capacity {capacity} GB, screen size {inches} inch, SKU {sku}."


def make_sibling(root: HtmlElement, job: PerturbationJob, sibling: int) -> str:
    """Turn the page into its sibling 1, 2, ...: a distinct product on the same template.

    * when the main text holds a size, capacity or product code, every such token of the
      page's text is changed (:func:`sibling_text`);
    * otherwise one spec line (:func:`spec_line`) is added after a paragraph of the main
      text: the same paragraph in every sibling, with other values.
    """
    if sibling_text(job.original_text, sibling)[1]:
        changed = 0

        def rewrite(text: str | None) -> str | None:
            nonlocal changed
            if not text or not any(character.isdigit() for character in text):
                return text
            text, count = sibling_text(text, sibling)
            changed += count
            return text

        body = root.find("body")
        for element in body.iter():
            if element is not body:
                element.tail = rewrite(element.tail)
            if isinstance(element.tag, str) and element.tag not in _NOT_TEXT_TAGS:
                element.text = rewrite(element.text)
        if changed:
            return f"changed {changed} size and SKU tokens"
    paragraphs = main_paragraphs(root, job.original_text)
    if not paragraphs:
        raise NotApplicable("no size or SKU in the main text, and no paragraph to add one after")
    rng = random.Random(f"{job.seed}/{job.page.page_id}/{SIBLING}")
    paragraph = rng.choice(paragraphs)
    line = spec_line(job, rng, sibling)
    paragraph.addnext(lxml.html.fragment_fromstring(f"<p>{html.escape(line)}</p>"))
    return "added a spec line"


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
    #: How much text the whole page holds (``Extraction.page_chars``; 0 when unknown).
    page_chars: int = 0


@dataclass
class Variant:
    """One copy or sibling of a base page: its main text, or why there is none."""

    kind: str
    text: str = ""
    status: str = ""
    note: str = ""
    skipped: str = ""
    #: 1, 2, ... for a same-template sibling, 0 otherwise.
    sibling: int = 0
    page_chars: int = 0


def survey_page(page: BasePage, extractor: Extractor = DEDUP_EXTRACTOR) -> Survey:
    """Extract the main text of a base page; collect its title, template names and chrome."""
    data = read_page(page)
    extraction = extract(data, page.url, extractor=extractor)
    try:
        _, root = parse_page(data)
    except Exception:  # an unparseable page has neither template nor chrome
        return Survey(
            page.page_id,
            extraction.text,
            extraction.status,
            page.title,
            page_chars=getattr(extraction, "page_chars", 0),
        )
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
        getattr(extraction, "page_chars", 0),
    )


def perturb_page(job: PerturbationJob) -> list[Variant]:
    """Build and extract every copy and sibling of one base page, and the re-serialized
    control."""
    data = read_page(job.page)
    url = job.page.url or f"https://{job.page.site}/{job.page.page_id}"
    siblings = range(1, SIBLINGS_PER_PAGE + 1)
    try:
        codec, root = parse_page(data)
    except Exception as error:
        reason = f"unparseable: {type(error).__name__}"
        return [Variant(kind, skipped=reason) for kind in (*KINDS, CONTROL)] + [
            Variant(SIBLING, skipped=reason, sibling=sibling) for sibling in siblings
        ]
    if root.find("body") is None:
        return [Variant(kind, skipped="no body") for kind in (*KINDS, CONTROL)] + [
            Variant(SIBLING, skipped="no body", sibling=sibling) for sibling in siblings
        ]
    extracted: dict[bytes, tuple[str, str, int]] = {}

    def main_text_of(page_bytes: bytes) -> tuple[str, str, int]:
        digest = hashlib.blake2b(page_bytes, digest_size=16).digest()
        if digest not in extracted:
            extraction = extract(page_bytes, url, extractor=job.extractor)
            page_chars = getattr(extraction, "page_chars", 0)
            extracted[digest] = (extraction.text, extraction.status, page_chars)
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
        text, status, page_chars = main_text_of(serialize_page(edited, codec))
        variants.append(Variant(kind, text, status, note, page_chars=page_chars))
    for sibling in siblings:
        edited = copy.deepcopy(root)
        try:
            note = make_sibling(edited, job, sibling)
        except NotApplicable as reason:
            variants.append(Variant(SIBLING, skipped=str(reason), sibling=sibling))
            continue
        text, status, page_chars = main_text_of(serialize_page(edited, codec))
        variants.append(
            Variant(SIBLING, text, status, note, sibling=sibling, page_chars=page_chars)
        )
    text, status, page_chars = main_text_of(serialize_page(root, codec))
    variants.append(Variant(CONTROL, text, status, page_chars=page_chars))
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
    """A page of the stream: a base page's original, one of its copies, or a sibling.

    ``base`` says which pages are copies of each other (a sibling is a base page of its
    own); ``family`` is the corpus page it was made from (siblings included).
    """

    key: str
    base: str
    kind: str
    text: str
    family: str
    #: For a sibling that adds a spec line to its original: the original's base.
    extends: str = ""
    #: For a copy of a page whose siblings change its sizes and codes: the copy's edit
    #: took every one of them out, so the same edit of a sibling gives the same text.
    sizeless: bool = False
    #: How much text the whole page holds (0 when unknown).
    page_chars: int = 0


def related(first: Item, second: Item) -> bool:
    """Whether one of two pages of different bases is the other's page plus a spec line."""
    return (bool(first.extends) and first.extends == second.base) or (
        bool(second.extends) and second.extends == first.base
    )


def sizeless_copy_and_sibling(first: Item, second: Item) -> bool:
    """Whether one of two pages is a copy that lost every size and code in which the
    other, a sibling of its page, differs from that page: the same edit of the sibling
    gives the same text, so the copy is as much the sibling's copy as its page's."""

    def copy_of(copy: Item, sibling: Item) -> bool:
        return (
            copy.sizeless
            and sibling.kind == SIBLING
            and not sibling.extends
            and sibling.family == copy.family
        )

    return copy_of(first, second) or copy_of(second, first)


def order_stream(items: Sequence[Item], seed: int) -> list[Item]:
    """Shuffle: originals (and siblings) at random; each copy after its original with
    probability 0.85."""
    rng = random.Random(seed)
    by_base: dict[str, list[Item]] = defaultdict(list)
    for item in items:
        by_base[item.base].append(item)
    placed: list[tuple[float, str, Item]] = []
    for base in sorted(by_base):
        group = sorted(by_base[base], key=lambda item: (item.kind != ORIGINAL, item.key))
        anchor = rng.random()
        for item in group:
            if item.kind in (ORIGINAL, SIBLING):
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
    """What a detector said about one item of the stream.

    ``stage`` is the stage that found the match: ``"exact"``, ``"first"`` (the SimHash
    look-up) or ``"second"`` for our detector, ``"lsh"`` for MinHash LSH; ``rejected`` is
    the key of a match that verification turned down, ``similarity`` and
    ``rejected_similarity`` the similarities verification measured (``None`` where the
    detector says nothing).
    """

    key: str
    match: str | None
    distance: int | None
    match_kind: str | None
    fingerprint: int | None
    exact_key: str
    normalized_length: int
    threshold: int | None
    stage: str | None = None
    similarity: float | None = None
    rejected: str | None = None
    rejected_similarity: float | None = None


def threshold_for(normalized_length: int) -> int | None:
    if normalized_length < MIN_CHARS:
        return None
    return SHORT_THRESHOLD if normalized_length < SHORT_TEXT_CHARS else LONG_THRESHOLD


def make_detector(options: dict[str, Any]) -> tuple[NearDuplicateDetector, list[str]]:
    """A ``NearDuplicateDetector`` with those of *options* its signature accepts, and the
    names of the options it does not (the code measured predates them)."""
    accepted = inspect.signature(NearDuplicateDetector).parameters
    passed = {name: value for name, value in options.items() if name in accepted}
    return NearDuplicateDetector(**passed), sorted(set(options) - set(passed))


def run_detector(stream: Sequence[Item], detector: NearDuplicateDetector) -> list[Outcome]:
    """*detector*, fed the stream in order.

    A detector without verification (no ``Decision.rejected``, no ``Match.stage``) gets
    the stage from ``Match.kind``: ``"exact"``, else ``"first"``.
    """
    outcomes = []
    size_class = getattr(fingerprints, "page_size_class", None)
    for item in stream:
        if size_class is not None and item.page_chars:
            # as the item pipeline does: the text, and the size of the page it came from
            text_fingerprint = replace(
                detector.fingerprint(item.text), page_size=size_class(item.page_chars)
            )
            decision = detector.check_fingerprinted(item.key, text_fingerprint)
        else:
            decision = detector.check(item.key, item.text)
        match = decision.match
        rejected = getattr(decision, "rejected", None)
        stage = None
        if match is not None:
            stage = getattr(match, "stage", None) or ("exact" if match.kind == "exact" else "first")
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
                stage=stage,
                similarity=getattr(match, "similarity", None),
                rejected=rejected.key if rejected is not None else None,
                rejected_similarity=getattr(rejected, "similarity", None),
            )
        )
    return outcomes


def detector_api_notes(dropped: dict[str, list[str]]) -> list[str]:
    """What the installed detector lacks of the verified stages' API, one note each."""
    notes = [
        f"`NearDuplicateDetector` does not accept {', '.join(f'`{name}`' for name in names)}: "
        f"the column '{COLUMN_TITLES[column]}' runs it with the other options only"
        for column, names in dropped.items()
        if names
    ]
    decision_fields = inspect.signature(Decision).parameters
    match_fields = inspect.signature(Match).parameters
    missing = [f"`Decision.{name}`" for name in ("rejected",) if name not in decision_fields]
    missing += [f"`Match.{name}`" for name in ("stage", "similarity") if name not in match_fields]
    if missing:
        notes.append(
            f"the detector has no {', '.join(missing)}: stages come from `Match.kind` "
            "(exact, else first), and nothing is counted as rejected"
        )
    return notes


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
                stage=match_kind,
            )
        )
    return outcomes


# The datasketch column

_NO_SPACE_CHARACTER = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_SHINGLE_WORD = re.compile(f"[{_NO_SPACE_CHARACTER}]|[^\\s{_NO_SPACE_CHARACTER}]+")


def load_datasketch() -> Any | None:
    """The ``datasketch`` module, or ``None`` when it is not installed (extra ``bench``)."""
    try:
        return importlib.import_module("datasketch")
    except ImportError:
        return None


def word_bigrams(normalized: str) -> set[str]:
    """The word-bigram shingles of a normalized text.

    * Words are runs of characters between spaces; each Chinese or Japanese character is
      a word of its own (those scripts put no spaces between words).
    * A text of one word gives that word; an empty text gives none.

    >>> sorted(word_bigrams("the cat sat")), sorted(word_bigrams("中文 ok"))
    (['cat sat', 'the cat'], ['中 文', '文 ok'])
    """
    words = _SHINGLE_WORD.findall(normalized)
    if len(words) < 2:
        return set(words)
    return {f"{first} {second}" for first, second in itertools.pairwise(words)}


def minhash_of(text: str) -> Any | None:
    """The datasketch ``MinHash`` (default hash and seed) of the word bigrams of *text*'s
    normalized form; ``None`` for a text without any (or without datasketch)."""
    datasketch = load_datasketch()
    shingles = word_bigrams(normalize_text(text))
    if datasketch is None or not shingles:
        return None
    minhash = datasketch.MinHash(num_perm=MINHASH_PERMUTATIONS)
    minhash.update_batch([shingle.encode("utf-8", "surrogatepass") for shingle in shingles])
    return minhash


def run_minhash(
    stream: Sequence[Item], minhashes: Sequence[Any | None], normalized: Sequence[str]
) -> list[Outcome]:
    """``MinHashLSH(threshold=0.8, num_perm=128)``, insert-then-query in stream order.

    * the LSH candidates of an item are verified in the order they were kept: the first
      whose estimated Jaccard similarity is at least 0.8 is the match (the item is not
      kept); when none passes, the first candidate is the rejected one and the item is
      kept;
    * an item without shingles is judged new and not kept;
    * a match on an equal normalized text counts as ``"exact"``, any other as ``"near"``.
    """
    datasketch = load_datasketch()
    assert datasketch is not None
    lsh = datasketch.MinHashLSH(threshold=MINHASH_THRESHOLD, num_perm=MINHASH_PERMUTATIONS)
    kept: dict[str, tuple[int, Any]] = {}
    exact_keys: dict[str, str] = {}
    outcomes = []
    for number, (item, minhash, text) in enumerate(zip(stream, minhashes, normalized, strict=True)):
        exact_key = hashlib.blake2b(text.encode("utf-8", "surrogatepass")).hexdigest()
        exact_keys[item.key] = exact_key
        match = rejected = None
        similarity = rejected_similarity = None
        if minhash is not None:
            for key in sorted(lsh.query(minhash), key=lambda key: kept[key][0]):
                estimate = float(minhash.jaccard(kept[key][1]))
                if estimate >= MINHASH_THRESHOLD:
                    match, similarity = key, estimate
                    break
                if rejected is None:
                    rejected, rejected_similarity = key, estimate
            if match is None:
                lsh.insert(item.key, minhash)
                kept[item.key] = (number, minhash)
            else:
                rejected = rejected_similarity = None
        match_kind = None
        if match is not None:
            match_kind = "exact" if exact_keys[match] == exact_key else "near"
        outcomes.append(
            Outcome(
                key=item.key,
                match=match,
                distance=None,
                match_kind=match_kind,
                fingerprint=None,
                exact_key=exact_key,
                normalized_length=len(text),
                threshold=None,
                stage="lsh" if match is not None else None,
                similarity=similarity,
                rejected=rejected,
                rejected_similarity=rejected_similarity,
            )
        )
    return outcomes


def minhash_miss_reason(
    minhashes: dict[str, Any | None],
) -> Callable[[Outcome, Outcome, dict[str, Outcome]], str]:
    """:func:`miss_reason` for the MinHash column, from the items' MinHashes by key."""

    def reason(later: Outcome, earlier: Outcome, by_key: dict[str, Outcome]) -> str:
        first, second = minhashes.get(later.key), minhashes.get(earlier.key)
        if first is None or second is None:
            return "no shingles: not checked"
        estimate = float(first.jaccard(second))
        if later.match is not None:
            return f"estimated Jaccard {estimate:.2f}, but matched `{later.match}`"
        if estimate < MINHASH_THRESHOLD:
            return f"estimated Jaccard {estimate:.2f} < {MINHASH_THRESHOLD}"
        if earlier.match is not None:
            representative = minhashes.get(earlier.match)
            gap = float(first.jaccard(representative)) if representative is not None else 0.0
            return (
                f"estimated Jaccard {estimate:.2f}, but the earlier page was itself a duplicate "
                f"of `{earlier.match}`, at {gap:.2f} from the later"
            )
        return f"estimated Jaccard {estimate:.2f}: not an LSH candidate"

    return reason


# Evaluation


@dataclass
class Evaluation:
    """The quality figures of one detector on the stream."""

    name: str
    #: Whether the order-free figures (pairs judged by the SimHash rule alone) apply.
    order_free: bool = True
    decisions: int = 0
    exact_decisions: int = 0
    #: Duplicate decisions by the stage that made them.
    stages: Counter[str] = field(default_factory=Counter)
    #: Matches that verification rejected: all, those of another base page (rightly
    #: rejected) and those of the item's own base page.
    rejected: int = 0
    rejected_other_base: int = 0
    rejected_same_base: int = 0
    correct: int = 0
    wrong: int = 0
    #: Decisions between a page and a sibling that adds a spec line to it (not judged).
    not_judged: int = 0
    #: Decisions between a sibling and a copy that lost every size it changes (not judged).
    not_judged_sizeless: int = 0
    wrong_same_template: int = 0
    #: Wrong decisions between the pages of one family: a base page, its copies and its
    #: same-template siblings.
    sibling_false_flags: int = 0
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
    sibling_examples: list[dict[str, Any]] = field(default_factory=list)

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
            stages=dict(self.stages),
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
    if later.match is None and later.rejected is not None:
        similarity = later.rejected_similarity
        return (
            f"verification rejected `{later.rejected}`"
            + (f" (similarity {similarity:.3f})" if similarity is not None else "")
            + ", judged new"
        )
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
    *,
    order_free: bool = True,
    explain_miss: Callable[[Outcome, Outcome, dict[str, Outcome]], str] = miss_reason,
) -> Evaluation:
    """Score one detector's outcomes on the stream (see the module documentation).

    *order_free* false skips the figures of the SimHash rule alone (pairs within it);
    *explain_miss* says why a positive was missed.
    """
    result = Evaluation(
        name,
        order_free=order_free,
        positive_distances={kind: [] for kind in KINDS},
        length_changes={kind: [] for kind in KINDS},
    )
    items = {item.key: item for item in stream}
    by_key = {outcome.key: outcome for outcome in outcomes}
    position = {item.key: number for number, item in enumerate(stream)}
    for item, outcome in zip(stream, outcomes, strict=True):
        if outcome.rejected is not None:
            result.rejected += 1
            if items[outcome.rejected].base == item.base:
                result.rejected_same_base += 1
            else:
                result.rejected_other_base += 1
        if outcome.match is None:
            continue
        other = items[outcome.match]
        if other.base != item.base and related(item, other):
            result.not_judged += 1
            continue
        if other.base != item.base and sizeless_copy_and_sibling(item, other):
            result.not_judged_sizeless += 1
            continue
        result.decisions += 1
        result.exact_decisions += outcome.match_kind == "exact"
        result.stages[outcome.stage or "unknown"] += 1
        if other.base == item.base:
            result.correct += 1
            continue
        result.wrong += 1
        same_family = other.family == item.family
        same_template = same_family or groups.get(item.family, -1) == groups.get(other.family, -2)
        result.wrong_same_template += same_template
        example = {
            "key": item.key,
            "match": other.key,
            "distance": outcome.distance,
            "kind": outcome.match_kind,
            "stage": outcome.stage,
            "similarity": outcome.similarity,
            "normalized_length": outcome.normalized_length,
            "same_template": same_template,
            "text": item.text[:80],
            "match_text": other.text[:80],
        }
        result.wrong_examples.append(example)
        if same_family:
            result.sibling_false_flags += 1
            result.sibling_examples.append(example)
    originals = {item.base: item for item in stream if item.kind == ORIGINAL}
    for item in stream:
        original = originals.get(item.base)
        if item.kind == ORIGINAL or original is None:
            continue
        copy_outcome, original_outcome = by_key[item.key], by_key[original.key]
        result.positives[item.kind] += 1
        later = item if position[item.key] > position[original.key] else original
        later_outcome = by_key[later.key]
        matched = items[later_outcome.match] if later_outcome.match is not None else None
        found = matched is not None and (
            matched.base == item.base
            or related(matched, item)
            or sizeless_copy_and_sibling(matched, item)
        )
        result.found[item.kind] += found
        folder = item.base.partition("/")[0]
        result.positives_by_folder[folder] += 1
        result.found_by_folder[folder] += found
        if order_free and within_rule(copy_outcome, original_outcome, copy_outcome.threshold):
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
                    "why": explain_miss(later_outcome, by_key[earlier.key], by_key),
                }
            )
    result.largest_positives.sort(key=lambda example: -example["distance"])
    del result.largest_positives[EXAMPLES:]
    if order_free:
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
    extends = np.array(
        [base_numbers.get(item.extends, -1) if item.extends else -1 for item in stream]
    )
    sizeless = np.array([item.sizeless for item in stream])
    resized = np.array([item.kind == SIBLING and not item.extends for item in stream])
    # pages of one family (a base page, its copies and siblings) share a template
    family_numbers: dict[str, int] = {}
    for item in stream:
        family_numbers.setdefault(item.family, len(family_numbers))
    families = np.array([family_numbers[item.family] for item in stream])
    template = np.array(
        [groups.get(item.family, -1 - family_numbers[item.family]) for item in stream]
    )
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
        # a page and a sibling that adds a spec line to it are not judged
        one_family = families == families[number]
        other_base = (
            (bases != bases[number])
            & (extends != bases[number])
            & (bases != extends[number])
            & ~(one_family & ((sizeless[number] & resized) | (resized[number] & sizeless)))
        )
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
    facts = shared_machine_facts("numpy", "simhash", "trafilatura", "lxml")
    try:
        facts["datasketch"] = version("datasketch")
    except PackageNotFoundError:
        facts["datasketch"] = None
    return facts


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
    #: The same columns on the stream without the siblings.
    without_siblings: list[Evaluation]
    kind_facts: dict[str, dict[str, Any]]
    control: dict[str, Any]
    items: list[dict[str, Any]]

    def evaluation(self, name: str) -> Evaluation | None:
        """The evaluation of column *name*, ``None`` when it did not run."""
        return next((e for e in self.evaluations if e.name == name), None)

    def to_json(self) -> dict[str, Any]:
        figures = asdict(self)
        figures["evaluations"] = [evaluation.summary() for evaluation in self.evaluations]
        figures["without_siblings"] = [evaluation.summary() for evaluation in self.without_siblings]
        figures["kind_facts"] = {
            kind: {**facts, "how": dict(facts["how"])} for kind, facts in self.kind_facts.items()
        }
        return figures


def print_report(report: Report) -> None:
    ours, package = report.evaluation(FIRST_STAGE), report.evaluation(PACKAGE)
    assert ours is not None and package is not None
    counts = report.counts
    facts, code = report.facts, report.code
    print("# Near-duplicate detection quality on perturbed real pages\n")
    print(f"Command: `{report.command}`  ")
    print(
        f"Python {facts['python']}, numpy {facts['numpy']}, simhash {facts['simhash']}, "
        f"datasketch {facts['datasketch'] or 'not installed'}, trafilatura "
        f"{facts['trafilatura']}, lxml {facts['lxml']}; {facts['cpu_count']} CPUs "
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
    for note in counts["detector_notes"]:
        print(f"**Note: {note}.**  ")
    if not counts["datasketch"]:
        print(
            "**Note: datasketch is not installed (`.venv/bin/pip install -e '.[bench]'`): the "
            "MinHash LSH column is left out.**  "
        )
    positives = sum(ours.positives.values())
    siblings = report.kind_facts[SIBLING]["built"]
    print(
        f"\nStream: {counts['base_pages']:,} base pages ({counts['wcxb']:,} WCXB, "
        f"{counts['netease']:,} NetEase), {positives:,} copies and {siblings:,} same-template "
        f"siblings, {counts['items']:,} items (seed {report.seed}); "
        f"{counts['copies_first']:,} copies arrive before their original. Negative pairs: "
        f"{ours.negative_pairs:,}, of which {ours.same_template_pairs:,} between pages of one "
        f"site or template ({len(report.groups)} groups, "
        f"{sum(len(group) for group in report.groups):,} base pages; a page, its copies and "
        f"its siblings count as one template: {counts['family_pairs']:,} pairs with a sibling)."
        "\n"
    )

    print_quality_table(report)
    print(f"\naim: {TARGETS}:\n")
    print_target_lines(report.evaluations)
    print_without_siblings(report)
    if counts["package_failures"]:
        print(
            f"`simhash.Simhash(text)` raised on {counts['package_failures']:,} of "
            f"{counts['items']:,} items ({counts['package_error']}): NumPy 2 refuses a feature "
            "weight over 255 (simhash issue #74). Those items get the exact check only; the "
            "column 'weights over 255 as float' passes such weights as float.\n"
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
    if counts["datasketch"]:
        print(
            f"MinHash LSH: {counts['minhash_without_shingles']:,} items without a shingle "
            "(judged new, not kept).\n"
        )

    print("## Hamming distances\n")
    print(
        "Ours: the SimHash of the first stage (the verified stages start from the same "
        "fingerprint). Positives: each copy against its original. Nearest negative: for each "
        f"item with at least {MIN_CHARS} characters of normalized text, the closest such item "
        f"of another base page. Our threshold is {LONG_THRESHOLD} ({SHORT_THRESHOLD} under "
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
    print_siblings(report)
    print_examples(report)


TARGETS: Final = (
    f"recall >= {TARGET_RECALL}"
    + "".join(f", {kind} >= {target}" for kind, target in TARGET_RECALL_BY_KIND.items())
    + f", precision >= {TARGET_PRECISION}, false flags among same-template siblings: "
    f"{TARGET_SIBLING_FALSE_FLAGS}"
)


def target_failures(evaluation: Evaluation) -> list[str]:
    """The targets (:data:`TARGETS`) that *evaluation* misses, each with its figure."""
    failures = []
    if evaluation.recall < TARGET_RECALL:
        failures.append(f"recall {evaluation.recall:.3f}")
    for kind, target in TARGET_RECALL_BY_KIND.items():
        if evaluation.recall_of(kind) < target:
            failures.append(f"{kind} {evaluation.recall_of(kind):.3f}")
    if evaluation.precision < TARGET_PRECISION:
        failures.append(f"precision {evaluation.precision:.4f}")
    if evaluation.sibling_false_flags > TARGET_SIBLING_FALSE_FLAGS:
        failures.append(f"{evaluation.sibling_false_flags:,} sibling false flags")
    return failures


def print_target_lines(evaluations: Sequence[Evaluation]) -> None:
    for evaluation in evaluations:
        failures = target_failures(evaluation)
        print(
            f"- {COLUMN_TITLES[evaluation.name]}: **{'FAIL' if failures else 'PASS'}**"
            + (f" ({'; '.join(failures)})" if failures else "")
        )
    print()


def print_without_siblings(report: Report) -> None:
    evaluations = report.without_siblings
    print(
        "The same columns on the stream without the siblings (the other items in the same "
        "order): how much of each column's recall the siblings cost, as they take the place "
        "of an original or a copy.\n"
    )

    def row(label: str, cell: Callable[[Evaluation], str]) -> list[str]:
        return [label, *(cell(evaluation) for evaluation in evaluations)]

    def recall_of(kind: str) -> Callable[[Evaluation], str]:
        return lambda e: share(e.found[kind], e.positives[kind])

    rows = [
        row("precision", lambda e: f"{e.precision:.4f} ({e.correct:,}/{e.decisions:,})"),
        row("recall", lambda e: share(sum(e.found.values()), sum(e.positives.values()))),
        *(row(f"recall: {kind}", recall_of(kind)) for kind in KINDS),
    ]
    names = [COLUMN_TITLES[evaluation.name] for evaluation in evaluations]
    print(markdown_table(["without siblings", *names], rows))
    print("\naim without siblings:\n")
    print_target_lines(evaluations)


def print_quality_table(report: Report) -> None:
    counts = report.counts
    evaluations = report.evaluations
    positives = sum(evaluations[0].positives.values())
    names = [COLUMN_TITLES[evaluation.name] for evaluation in evaluations]

    def row(label: str, cell: Callable[[Evaluation], str]) -> list[str]:
        return [label, *(cell(evaluation) for evaluation in evaluations)]

    def order_free_row(label: str, cell: Callable[[Evaluation], str]) -> list[str]:
        return row(label, lambda e: cell(e) if e.order_free else "n/a")

    def same(label: str, cell: str) -> list[str]:
        return [label, *([cell] * len(evaluations))]

    def decisions(e: Evaluation) -> str:
        return f"{e.decisions:,} ({e.exact_decisions:,} + {e.decisions - e.exact_decisions:,})"

    def stages(e: Evaluation) -> str:
        return ", ".join(f"{stage} {count:,}" for stage, count in sorted(e.stages.items()))

    def precision(e: Evaluation) -> str:
        return f"**{e.precision:.4f} ({e.correct:,}/{e.decisions:,})**"

    def recall_of(kind: str) -> Callable[[Evaluation], str]:
        return lambda e: share(e.found[kind], e.positives[kind])

    def recall_in(folder: str) -> Callable[[Evaluation], str]:
        return lambda e: share(e.found_by_folder[folder], e.positives_by_folder[folder])

    rows = [
        row("duplicate decisions (exact + near)", decisions),
        row("duplicate decisions by stage", stages),
        row(
            "decisions between a page and its spec-line sibling (not judged)",
            lambda e: f"{e.not_judged:,}",
        ),
        row(
            "decisions between a sibling and a copy that lost every size it changes (not judged)",
            lambda e: f"{e.not_judged_sizeless:,}",
        ),
        row(
            "matches rejected by verification: all / of another base page / of its own",
            lambda e: f"{e.rejected:,} / {e.rejected_other_base:,} / {e.rejected_same_base:,}",
        ),
        row("**precision**", precision),
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
            "**false flags among same-template siblings**",
            lambda e: f"**{e.sibling_false_flags:,}**",
        ),
        row(
            "wrong decisions: all / same site or template",
            lambda e: f"{e.wrong:,} / {e.wrong_same_template:,}",
        ),
        order_free_row(
            "recall, order-free (pair within the rule)",
            lambda e: share(sum(e.within_rule.values()), positives),
        ),
        order_free_row(
            "negative pairs within the rule, order-free: all / same site or template",
            lambda e: f"{e.negative_pairs_within_rule:,} / {e.same_template_pairs_within_rule:,}",
        ),
        row(
            "items without fingerprint (package raised: exact check only) or shingle (MinHash)",
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
            "copies and siblings not built (perturbation not applicable)",
            f"{sum(counts['not_applicable'].values()):,}",
        ),
    ]
    print(markdown_table(["measure", *names], rows))


def print_kind_table(report: Report) -> None:
    ours, verified = report.evaluation(FIRST_STAGE), report.evaluation(VERIFIED)
    assert ours is not None and verified is not None
    counts = report.counts
    print("## By perturbation (ours: distances of the first stage's SimHash)\n")
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
                share(verified.found[kind], verified.positives[kind]),
            ]
        )
    header = ["kind", "copies", "not applicable", "main text unchanged: raw / normalized"]
    header += ["median length change", "median distance", f"distance {HISTOGRAM_BINS}+"]
    header += [f"copies under {MIN_CHARS} chars", "within rule", "found: first stage"]
    header += ["found: verified"]
    print(markdown_table(header, rows))
    print(
        f"\nprinted: {ours.positives['printed']:,} printer-friendly copies, made of the "
        f"{counts['printed_eligible']:,} base pages (of {counts['base_pages']:,}) whose main "
        f"text has {PRINTED_MIN_CHARS:,} to {PRINTED_MAX_CHARS:,} characters.\n"
    )
    print("How the edits were applied (and why not):\n")
    for kind in KINDS:
        how = report.kind_facts[kind]["how"]
        not_applied = counts["not_applicable_reasons"].get(kind, {})
        print(
            f"- {kind}: "
            + "; ".join(f"{note} ({count:,})" for note, count in how.most_common(4))
            + "".join(
                f"; not applied, {reason} ({count:,})"
                for reason, count in list(not_applied.items())[:3]
            )
        )
    control = report.control
    print(
        f"\nControl: re-serializing a page with lxml, without an edit, changed its normalized "
        f"main text on {control['changed']:,} of {control['pages']:,} pages.\n"
    )


def print_siblings(report: Report) -> None:
    facts, counts = report.kind_facts[SIBLING], report.counts
    print("## Same-template siblings (negatives)\n")
    not_applied = counts["not_applicable_reasons"].get(SIBLING, {})
    print(
        f"{facts['built']:,} siblings, {SIBLINGS_PER_PAGE} a base page, each a base page of its "
        "own: "
        + "; ".join(f"{note} ({count:,})" for note, count in facts["how"].most_common(4))
        + ". Not built: "
        + ("; ".join(f"{reason} ({count:,})" for reason, count in not_applied.items()) or "none")
        + f"; left out, main text unchanged by the edit: {facts['equal_raw']:,}; main text "
        f"empty: {facts['empty']:,}; left out, normalized main text equal to the original's: "
        f"{facts['equal_normalized']:,}, to the other sibling's: "
        f"{facts['equal_normalized_siblings']:,} (one text to every detector: an exact "
        f"copy). Under {MIN_CHARS} characters: {facts['short']:,}.\n"
    )
    rows = []
    for evaluation in report.evaluations:
        by_stage = Counter(example["stage"] or "unknown" for example in evaluation.sibling_examples)
        rows.append(
            [
                COLUMN_TITLES[evaluation.name],
                f"{evaluation.sibling_false_flags:,}",
                ", ".join(f"{stage} {count:,}" for stage, count in sorted(by_stage.items())),
            ]
        )
    header = ["detector", "false flags among same-template siblings", "by stage"]
    print(markdown_table(header, rows))
    verified = report.evaluation(VERIFIED)
    assert verified is not None
    print(f"\nExamples, {COLUMN_TITLES[VERIFIED]}:\n")
    if not verified.sibling_examples:
        print("- none")
    for example in verified.sibling_examples[:EXAMPLES]:
        print(
            f"- `{example['key']}` reported as duplicate of `{example['match']}` "
            f"({example['stage']}, distance {example['distance']}, similarity "
            f"{example['similarity']})"
        )
    print()


def print_examples(report: Report) -> None:
    ours, first_stage = report.evaluation(VERIFIED), report.evaluation(FIRST_STAGE)
    assert ours is not None and first_stage is not None
    print(f"## Examples: {COLUMN_TITLES[VERIFIED]}\n")
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
    print("\nWrong decisions, siblings apart:\n")
    wrong_examples = [wrong for wrong in ours.wrong_examples if wrong not in ours.sibling_examples]
    if not wrong_examples:
        print("- none")
    for wrong in wrong_examples[: EXAMPLES * 2]:
        print(
            f"- `{wrong['key']}` reported as {wrong['kind']} duplicate of `{wrong['match']}` at "
            f"distance {wrong['distance']} ({wrong['stage']}, {wrong['normalized_length']:,} "
            f"chars{', same site or template' if wrong['same_template'] else ''}): "
            f"{wrong['text']!r} / {wrong['match_text']!r}"
        )
    print("\nClosest pairs of different base pages (first stage's SimHash):\n")
    for pair in first_stage.closest_negatives:
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
    """The stream's items; the counts of what was left out; facts by kind (and for the
    siblings); the control.

    A sibling whose main text came out equal to the original's (the edit did not reach
    it) is left out and counted: it would not be a distinct document.
    """
    items: list[Item] = []
    not_applicable: Counter[str] = Counter()
    not_applicable_reasons: dict[str, Counter[str]] = defaultdict(Counter)
    counts: dict[str, Any] = {"empty_bases": 0, "empty_copies": 0, "wcxb": 0, "netease": 0}
    counts["printed_eligible"] = 0
    kind_facts: dict[str, dict[str, Any]] = {
        kind: {"equal_normalized": 0, "equal_raw": 0, "short": 0, "how": Counter()}
        for kind in (*KINDS, SIBLING)
    }
    kind_facts[SIBLING].update(built=0, empty=0, equal_normalized_siblings=0)
    control_distances: list[int] = []
    control_changed = 0
    for page in pages:
        survey = surveys[page.page_id]
        if not survey.text:
            counts["empty_bases"] += 1
            continue
        counts["netease" if page.chinese else "wcxb"] += 1
        main_chars = len(collapse_spaces(survey.text))
        counts["printed_eligible"] += PRINTED_MIN_CHARS <= main_chars <= PRINTED_MAX_CHARS
        items.append(
            Item(
                page.page_id,
                page.page_id,
                ORIGINAL,
                survey.text,
                page.page_id,
                page_chars=survey.page_chars,
            )
        )
        original_normalized = normalize_text(survey.text)
        original_names_sizes = bool(sibling_text(survey.text, 1)[1])
        sibling_texts: list[str] = []
        for variant in variants[page.page_id]:
            if variant.skipped:
                if variant.kind != CONTROL:
                    not_applicable[variant.kind] += 1
                    not_applicable_reasons[variant.kind][_DIGIT_RUN.sub("N", variant.skipped)] += 1
                continue
            if not variant.text:
                if variant.kind == SIBLING:
                    kind_facts[SIBLING]["empty"] += 1
                else:
                    counts["empty_copies"] += variant.kind != CONTROL
                continue
            normalized = normalize_text(variant.text)
            if variant.kind == SIBLING:
                facts = kind_facts[SIBLING]
                if variant.text == survey.text:
                    facts["equal_raw"] += 1
                    continue
                if normalized == original_normalized or normalized in sibling_texts:
                    # one text to every detector: an equal text is an exact copy
                    facts["equal_normalized"] += normalized == original_normalized
                    facts["equal_normalized_siblings"] += normalized in sibling_texts
                    continue
                facts["built"] += 1
                facts["short"] += len(normalized) < MIN_CHARS
                facts["how"][_DIGIT_RUN.sub("N", variant.note)] += 1
                sibling_texts.append(normalized)
                key = f"{page.page_id}~{SIBLING}{variant.sibling}"
                adds_a_line = variant.note.startswith("added a spec line")
                items.append(
                    Item(
                        key,
                        key,
                        SIBLING,
                        variant.text,
                        page.page_id,
                        extends=page.page_id if adds_a_line else "",
                        page_chars=variant.page_chars,
                    )
                )
                continue
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
                Item(
                    f"{page.page_id}~{variant.kind}",
                    page.page_id,
                    variant.kind,
                    variant.text,
                    page.page_id,
                    page_chars=variant.page_chars,
                    sizeless=original_names_sizes and not sibling_text(variant.text, 1)[1],
                )
            )
    counts["not_applicable"] = dict(not_applicable)
    counts["not_applicable_reasons"] = {
        kind: dict(reasons.most_common()) for kind, reasons in not_applicable_reasons.items()
    }
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
    detector, _ = make_detector(DETECTOR_OPTIONS[FIRST_STAGE])
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
    parser.add_argument(
        "--extractor",
        choices=EXTRACTORS,
        default=DEDUP_EXTRACTOR,
        help=f"the main-text extractor of every page (DEDUP_EXTRACTOR; default: {DEDUP_EXTRACTOR})",
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


@dataclass
class Signatures:
    """What the columns other than ours need of each item, computed once for the stream."""

    normalized: list[str]
    package: list[PackageFingerprint]
    #: The MinHash of each item; ``None`` without datasketch.
    minhashes: list[Any | None] | None

    def subset(self, numbers: Sequence[int]) -> Signatures:
        """The signatures of the items at *numbers* (positions in the stream), in order."""
        return Signatures(
            [self.normalized[number] for number in numbers],
            [self.package[number] for number in numbers],
            None if self.minhashes is None else [self.minhashes[number] for number in numbers],
        )


def run_columns(
    stream: Sequence[Item], signatures: Signatures
) -> tuple[dict[str, list[Outcome]], dict[str, list[str]]]:
    """Every column's outcomes on *stream*, each detector new; and, for our detector's
    columns, the options the installed detector does not accept."""
    outcomes: dict[str, list[Outcome]] = {}
    dropped: dict[str, list[str]] = {}
    for column, options in DETECTOR_OPTIONS.items():
        detector, dropped[column] = make_detector(options)
        outcomes[column] = run_detector(stream, detector)
    normalized_lengths = [len(text) for text in signatures.normalized]
    package = signatures.package
    outcomes[PACKAGE] = run_anchor(stream, [result.value for result in package], normalized_lengths)
    if any(result.value is None for result in package):
        outcomes[PACKAGE_FLOAT] = run_anchor(
            stream,
            [
                result.value if result.value is not None else result.float_weights
                for result in package
            ],
            normalized_lengths,
        )
    if signatures.minhashes is not None:
        outcomes[MINHASH] = run_minhash(stream, signatures.minhashes, signatures.normalized)
    return outcomes, dropped


def evaluate_columns(
    stream: Sequence[Item],
    outcomes: dict[str, list[Outcome]],
    signatures: Signatures,
    groups: dict[str, int],
    *,
    order_free: bool,
) -> list[Evaluation]:
    """Score every column; the order-free figures only for the SimHash columns that
    have a rule alone (today's first stage, the anchors) and when *order_free*."""
    minhashes = dict(zip((item.key for item in stream), signatures.minhashes or (), strict=False))
    evaluations = []
    for name, results in outcomes.items():
        if name == MINHASH:
            evaluation = evaluate(
                name,
                stream,
                results,
                groups,
                order_free=False,
                explain_miss=minhash_miss_reason(minhashes),
            )
            evaluation.fingerprint_failures = sum(
                signature is None for signature in minhashes.values()
            )
        else:
            evaluation = evaluate(
                name, stream, results, groups, order_free=order_free and name != VERIFIED
            )
            evaluation.fingerprint_failures = (
                sum(result.value is None for result in signatures.package) if name == PACKAGE else 0
            )
        evaluations.append(evaluation)
    return evaluations


def evaluate_detectors(
    stream: Sequence[Item], groups: dict[str, int], workers: int, counts: dict[str, Any]
) -> tuple[list[Evaluation], list[Evaluation], dict[str, list[Outcome]]]:
    """Run every column on the stream and score it: our detector's first stage and its
    verified stages, the anchor (and, if the package raised, the float-weights anchor),
    and MinHash LSH when datasketch is installed; then again on the stream without the
    siblings (same order), to tell what the siblings cost. Adds the package's failures
    and checks, the notes on the detector's API and the MinHash facts to *counts*."""
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
    counts["datasketch"] = load_datasketch() is not None
    minhashes = None
    if counts["datasketch"]:
        minhashes = list(pooled(minhash_of, [item.text for item in stream], workers))
        counts["minhash_without_shingles"] = sum(minhash is None for minhash in minhashes)
    signatures = Signatures([normalize_text(item.text) for item in stream], package, minhashes)

    outcomes, dropped = run_columns(stream, signatures)
    counts["detector_notes"] = detector_api_notes(dropped)
    evaluations = evaluate_columns(stream, outcomes, signatures, groups, order_free=True)

    kept = [number for number, item in enumerate(stream) if item.kind != SIBLING]
    without_siblings = [stream[number] for number in kept]
    kept_signatures = signatures.subset(kept)
    kept_outcomes, _ = run_columns(without_siblings, kept_signatures)
    evaluations_without_siblings = evaluate_columns(
        without_siblings, kept_outcomes, kept_signatures, groups, order_free=False
    )
    return evaluations, evaluations_without_siblings, outcomes


def family_pairs(stream: Sequence[Item]) -> int:
    """Pairs of items of one family (a base page, its copies, its siblings) and of
    different base pages: the negatives the siblings make."""
    families: dict[str, Counter[str]] = defaultdict(Counter)
    for item in stream:
        families[item.family][item.base] += 1
    pairs = 0
    for bases in families.values():
        members = sum(bases.values())
        pairs += (members * members - sum(count * count for count in bases.values())) // 2
    return pairs


def main(argv: Sequence[str] | None = None) -> None:
    arguments = parse_args(argv)
    started = time.perf_counter()
    check_rule_matches_detector()
    try:
        pages = load_pages(resolve_corpus_dir(arguments.corpus), arguments.pages)
    except FileNotFoundError as error:
        raise SystemExit(f"{error} (set --corpus or ${CORPUS_ENV_VAR})") from None

    extraction_started = time.perf_counter()
    survey = functools.partial(survey_page, extractor=arguments.extractor)
    surveys = {
        page.page_id: found
        for page, found in zip(pages, pooled(survey, pages, arguments.workers), strict=True)
    }
    jobs = [
        replace(job, extractor=arguments.extractor)
        for job in perturbation_jobs(pages, surveys, arguments.seed)
    ]
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
        elif item.kind != SIBLING:
            copies_first += item.base not in seen_originals
    counts.update(
        items=len(stream),
        copies_first=copies_first,
        family_pairs=family_pairs(stream),
        workers=max(arguments.workers, 1),
        extractions=len(pages)
        + sum(1 for page_variants in variants.values() for v in page_variants if not v.skipped),
    )

    evaluations, without_siblings, outcomes = evaluate_detectors(
        stream, groups, arguments.workers, counts
    )

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
        without_siblings=without_siblings,
        kind_facts=kind_facts,
        control=control,
        items=[
            {
                "key": item.key,
                "base": item.base,
                "kind": item.kind,
                "family": item.family,
                "normalized_length": outcomes[FIRST_STAGE][number].normalized_length,
                "decisions": {
                    name: [
                        results[number].match,
                        results[number].distance,
                        results[number].stage,
                        results[number].similarity,
                        results[number].rejected,
                    ]
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
