"""Main-text extraction: the words of a page that its readers came for.

:func:`extract` turns a downloaded page (``bytes`` as received, or ``str``) into its main
text with trafilatura, without navigation, boilerplate or comments, and says what happened
(:class:`Extraction`); :func:`main_text` returns just the text. Both accept anything a crawl
can download, including broken HTML, unknown or wrong charsets, binary files and huge pages,
and never raise on it.

Bytes are decoded as :mod:`crawler.content.decoding` says.

Nothing here imports Scrapy.
"""

from __future__ import annotations

import functools
import importlib.util
import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, Literal

from crawler.content.agreement import agreed_lines
from crawler.content.decoding import (
    DETECTION_BYTES,
    SNIFF_BYTES,
    decode_html,
    is_binary,
    is_binary_text,
)
from crawler.content.page_size import markup_text_chars

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

    from lxml.html import HtmlElement
    from resiliparse.parse.html import HTMLTree

__all__ = [
    "AUTO_TRAFILATURA_OPTIONS",
    "DEFAULT_MAX_BYTES",
    "EXTRACTORS",
    "MAIN_LANDMARKS",
    "RESILIPARSE_OPTIONS",
    "TRAFILATURA_OPTIONS",
    "Extraction",
    "ExtractionStatus",
    "Extractor",
    "check_extractor",
    "decode_html",
    "extract",
    "kept_little",
    "landmark_text",
    "load_extractor",
    "main_text",
    "without_url_lines",
]

logger = logging.getLogger(__name__)

ExtractionStatus = Literal["ok", "truncated", "no_text", "binary", "failed"]
Extractor = Literal["trafilatura", "resiliparse", "trafilatura+resiliparse", "auto"]
#: The main-text extractors: trafilatura (most accurate), resiliparse (about ten times
#: faster), trafilatura's lines that resiliparse agrees with
#: (:func:`crawler.content.agreement.agreed_lines`: what copies of a page have in common, for
#: their fingerprints), and ``"auto"``: resiliparse, and on a page of which resiliparse kept
#: little (:data:`AUTO_MIN_SHARE`) the page's main landmark (:data:`MAIN_LANDMARKS`) or
#: trafilatura.
EXTRACTORS: Final[tuple[Extractor, ...]] = (
    "trafilatura",
    "resiliparse",
    "trafilatura+resiliparse",
    "auto",
)

#: ``"auto"`` looks further when resiliparse's main text holds less than this share of
#: the page's text: resiliparse then missed the article (kept a byline, a menu, nothing),
#: and pages of one template would compare by what the template holds.
AUTO_MIN_SHARE: Final = 0.15
#: ... and the page holds at least this many characters of text (a smaller page has little
#: to miss), unless resiliparse found no main text at all.
AUTO_MIN_PAGE_CHARS: Final = 500
#: resiliparse's walk of a whole page counts its text where the count from its markup is
#: less than this many times what :func:`kept_little` needs: the markup count is no more
#: than 11% under the walk's on the 474 corpus pages (above it where a page hides text with
#: attributes or styles, as for 21 of them), and takes a quarter of its time.
EXACT_COUNT_MARGIN: Final = 1.5
#: Where ``"auto"`` looks first on a page resiliparse kept little of: the elements its author
#: marked as the main content (HTML's ``<main>`` and ``<article>``, ARIA's ``role="main"``).
#: The largest one's whole text is the page's main text when it is no small share of the
#: page (:func:`kept_little`); trafilatura reads the page otherwise. On the 400 WCXB
#: development pages it answers 9 of the 15 pages in doubt, each in a tenth of trafilatura's
#: time, with the same quality on the benches (docs/content-dedup.md).
MAIN_LANDMARKS: Final = "main, [role=main], article"

#: Pages larger than this (bytes, or characters for ``str`` input) are cut before extraction.
DEFAULT_MAX_BYTES: Final = 5 * 1024 * 1024

#: Keyword arguments of every ``trafilatura.extract`` call. On the 400 pages of the WCXB
#: development set, trafilatura's default balance gives a mean token F1 of 0.910 against
#: the human-checked main text, ``favor_precision=True`` 0.876, ``include_tables=False``
#: 0.899 and ``fast=True`` 0.882 (``bench/content.py --choices``).
TRAFILATURA_OPTIONS: Final[Mapping[str, Any]] = {
    "include_comments": False,
    "include_tables": True,
    "favor_precision": False,
    "favor_recall": False,
    "fast": False,
    "deduplicate": False,
    "with_metadata": False,
    "output_format": "txt",
}

#: trafilatura's options where ``"auto"`` asks it (a page of which resiliparse kept little):
#: without its second opinions (justext's and readability's). They take half of its time
#: there (47.6 ms a page against 25.7 on the 21 such pages of the WCXB development set,
#: 17 of which come out the same), and justext builds a set of every language's stop words
#: again on each call: 14 MiB that a worker keeps and 20 MiB more while it runs.
AUTO_TRAFILATURA_OPTIONS: Final[Mapping[str, Any]] = {**TRAFILATURA_OPTIONS, "fast": True}

#: Keyword arguments of every ``resiliparse.extract.html2text.extract_plain_text`` call:
#: its main-content heuristics, paragraphs on lines of their own, nothing but the text.
RESILIPARSE_OPTIONS: Final[Mapping[str, Any]] = {
    "main_content": True,
    "preserve_formatting": True,
    "list_bullets": False,
    "alt_texts": False,
    "links": False,
    "form_fields": False,
    "noscript": False,
    "comments": False,
}


@dataclass(frozen=True)
class Extraction:
    """What :func:`extract` found in a page.

    ``status`` says what happened, one of:

    - ``"ok"``: ``text`` is the main text;
    - ``"truncated"``: the page was larger than ``max_bytes`` and was cut at the last tag
      that starts before the limit; ``text`` is the main text of that part;
    - ``"no_text"``: empty input, or a page without main text (a bare listing, a login
      form); ``text`` is ``""``;
    - ``"binary"``: not text (an image, a PDF, an archive: a known signature, or NUL bytes
      that are not UTF-16); ``text`` is ``""``;
    - ``"failed"``: trafilatura raised on the page (logged at DEBUG); ``text`` is ``""``.

    ``text`` is non-empty exactly when ``status`` is ``"ok"`` or ``"truncated"``; ``fallback``
    says the extractor asked for raised on the page and the other one's text is given.
    ``encoding`` is the Python codec the bytes were decoded with, ``None`` for ``str``
    input and for input that was not decoded (empty, binary). ``page_chars`` is how much
    text the whole page holds (the body's, whitespace collapsed, without scripts and
    styles), ``0`` when the page was not parsed: with it, the main text's share of the
    page is known.
    """

    text: str
    status: ExtractionStatus
    encoding: str | None = None
    page_chars: int = 0
    fallback: bool = False


def main_text(html: str | bytes | None, url: str | None = None) -> str:
    """Return the main text of a page, ``""`` when it has none.

    The same as ``extract(html, url).text``: see :func:`extract` for the input accepted and
    the decoding rules. Never raises on the page content.

    >>> main_text(b"\\x89PNG\\r\\n\\x1a\\n...")
    ''
    """
    return extract(html, url).text


def extract(
    html: str | bytes | None,
    url: str | None = None,
    *,
    encoding: str | None = None,
    max_bytes: int | None = DEFAULT_MAX_BYTES,
    extractor: Extractor = "trafilatura",
) -> Extraction:
    """Return the main text of a page and how it was obtained.

    - *html* is the page as downloaded (``bytes``, decoded as the module documentation
      says) or already decoded (``str``); ``None``, empty or blank input gives
      ``"no_text"``, as does any other type.
    - *url* is the page's address, passed to trafilatura (it helps with relative links
      and metadata); it does not change which text counts as main.
    - *encoding* is the charset the server declared (``"gbk"``, or a whole
      ``Content-Type`` value such as ``"text/html; charset=gbk"``); it wins over the
      page's own declaration and detection unless it is unknown or fails to decode.
    - A page larger than *max_bytes* (bytes; characters for ``str`` input) is cut at the
      last ``<`` before the limit and extracted: status ``"truncated"``. ``None`` means no
      limit. A *max_bytes* below 1 raises :exc:`ValueError`.
    - Comments, navigation and boilerplate are left out (as trafilatura judges them);
      tables are kept. Paragraphs are separated by newlines.
    - *extractor* is one of :data:`EXTRACTORS`. When it raises on the page, the other one
      (resiliparse when trafilatura raised, if installed) extracts it (``fallback``); when
      both raise, ``"failed"``. ``"trafilatura+resiliparse"`` gives trafilatura's whole text
      when only resiliparse raises; ``"auto"`` gives resiliparse's text when trafilatura
      raises on a page resiliparse kept little of. Never raises on the page content.

    >>> page = "<html><body><article><p>" + "Real words of an article. " * 20
    >>> result = extract(page.encode("utf-8"))
    >>> result.status, result.encoding, result.text.startswith("Real words")
    ('ok', 'utf-8', True)
    >>> extract(b"%PDF-1.7 ...")
    Extraction(text='', status='binary', encoding=None, page_chars=0, fallback=False)
    """
    if max_bytes is not None and max_bytes < 1:
        raise ValueError(f"max_bytes must be 1 or more (or None), got {max_bytes!r}")
    check_extractor(extractor)
    if isinstance(html, (bytearray, memoryview)):
        html = bytes(html)
    codec: str | None = None
    if isinstance(html, bytes):
        if not html.strip():
            return Extraction("", "no_text")
        if is_binary(html):
            return Extraction("", "binary")
        truncated = max_bytes is not None and len(html) > max_bytes
        if truncated:
            codec, page = decode_html(html[:max_bytes], encoding, html[:DETECTION_BYTES])
            # the cut may have split a tag or a character: drop what follows the last "<"
            page = _cut_at_tag(page, len(page))
        else:
            codec, page = decode_html(html, encoding)
    elif isinstance(html, str):
        if is_binary_text(html):
            return Extraction("", "binary")
        truncated = max_bytes is not None and len(html) > max_bytes
        page = _cut_at_tag(html, max_bytes) if max_bytes is not None and truncated else html
    else:
        return Extraction("", "no_text")

    page = page.lstrip("\ufeff")
    if not page.strip():
        return Extraction("", "no_text", codec)
    fallback = False
    outcome = _attempt(extractor, page, url)
    if outcome is None:
        other = _FALLBACK[extractor]
        if not all(_installed(package) for package in _REQUIRES[other]):
            return Extraction("", "failed", codec)
        fallback = True
        outcome = _attempt(other, page, url)
        if outcome is None:
            return Extraction("", "failed", codec, fallback=True)
    text, page_chars = outcome
    text = text.strip()
    if not text:
        return Extraction("", "no_text", codec, page_chars, fallback)
    return Extraction(text, "truncated" if truncated else "ok", codec, page_chars, fallback)


def _attempt(
    extractor: Extractor,
    page: str,
    url: str | None,
    extract: Callable[[str, str | None], tuple[str, int]] | None = None,
) -> tuple[str, int] | None:
    """*extractor*'s main text of *page* and the page's text size (or *extract*'s, named
    *extractor* in the log); ``None`` when it raised (logged at DEBUG)."""
    try:
        return (extract or _EXTRACT[extractor])(page, url)
    except Exception:
        logger.debug(
            "%(extractor)s failed on %(url)s",
            {"extractor": extractor, "url": url or "<no url>"},
            exc_info=True,
        )
        return None


def check_extractor(extractor: str) -> None:
    """Raise :exc:`ValueError` unless *extractor* is one of :data:`EXTRACTORS` and installed.

    >>> check_extractor("trafilatura")
    >>> check_extractor("boilerpipe")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: unknown extractor 'boilerpipe': choose one of 'trafilatura', 'resiliparse', ...
    """
    if extractor not in EXTRACTORS:
        choices = ", ".join(repr(name) for name in EXTRACTORS)
        raise ValueError(f"unknown extractor {extractor!r}: choose one of {choices}")
    missing = [package for package in _REQUIRES[extractor] if not _installed(package)]
    if missing:
        raise ValueError(
            f"the {extractor} extractor needs {' and '.join(missing)}, which this Python "
            "cannot import: reinstall scrapy-crawl-dedup"
        )


@functools.cache
def _installed(package: str) -> bool:
    return importlib.util.find_spec(package) is not None


def load_extractor(extractor: str) -> None:
    """Import the packages *extractor* needs for every page now rather than on the first
    page (which :func:`extract` does on its own; ``"auto"`` imports trafilatura on the
    first page that needs it); :func:`check_extractor` says what it raises."""
    check_extractor(extractor)
    for package in _PRELOADED[extractor]:
        importlib.import_module(_MODULES[package])


def _trafilatura_text(
    page: str,
    url: str | None,
    options: Mapping[str, Any] = TRAFILATURA_OPTIONS,
    *,
    count_page: bool = True,
) -> tuple[str, int]:
    """trafilatura's main text of *page*, and the characters of text the page holds
    (``0`` unless *count_page*: 1 ms on a page of 240 kB)."""
    # imported here, as resiliparse is: a worker process of the other extractor is
    # spared its import time and about 40 MiB
    import trafilatura
    from trafilatura.utils import load_html

    document: str | HtmlElement = _as_document(page)
    # parsed once, as trafilatura parses (it extracts from a copy of the tree)
    tree = load_html(document)
    page_chars = 0
    if tree is not None:
        page_chars = _page_text_chars(tree) if count_page else 0
        document = tree
    text = trafilatura.extract(document, url=url, **options)
    return text or "", page_chars


def _resiliparse_text(page: str, url: str | None) -> tuple[str, int]:
    """resiliparse's main text of *page*, and the characters of text the page holds: counted
    from its markup (:func:`~crawler.content.page_size.markup_text_chars`), or by resiliparse's
    walk of the whole page where that count could leave :func:`kept_little` in doubt."""
    from resiliparse.parse.html import HTMLTree  # the optional extra

    return _resiliparse_tree_text(HTMLTree.parse(page), page)


def _resiliparse_tree_text(tree: HTMLTree, page: str) -> tuple[str, int]:
    """:func:`_resiliparse_text` of *page* parsed as *tree*."""
    from resiliparse.extract.html2text import extract_plain_text

    text = extract_plain_text(tree, **RESILIPARSE_OPTIONS)
    page_chars = markup_text_chars(page)
    kept = len(text.strip())
    if not kept or kept < AUTO_MIN_SHARE * EXACT_COUNT_MARGIN * page_chars:
        whole = extract_plain_text(
            tree, preserve_formatting=False, list_bullets=False, alt_texts=False
        )
        page_chars = len(whole)
    return text, page_chars


def _agreed_text(page: str, url: str | None) -> tuple[str, int]:
    """trafilatura's main text of *page* cut to the lines resiliparse's agrees with (all of
    it when resiliparse raises), and the characters of text the page holds."""
    text, page_chars = _trafilatura_text(page, url)
    second = _attempt("resiliparse", page, url)
    if second is None:
        return text, page_chars
    return agreed_lines(text, second[0]), page_chars


def kept_little(text: str, page_chars: int) -> bool:
    """Whether a main text is a small share of its page's text: none of a page that has
    text, or under :data:`AUTO_MIN_SHARE` of a page of :data:`AUTO_MIN_PAGE_CHARS` or more
    (where ``"auto"`` asks trafilatura instead of resiliparse).

    >>> kept_little("By Jane Doe", 4000), kept_little("By Jane Doe", 60), kept_little("", 60)
    (True, False, True)
    """
    kept = len(text.strip())
    if not kept:
        return page_chars > 0
    return page_chars >= AUTO_MIN_PAGE_CHARS and kept < AUTO_MIN_SHARE * page_chars


def _auto_text(page: str, url: str | None) -> tuple[str, int]:
    """resiliparse's main text of *page*; when it is a small share of the page's
    (:func:`kept_little`), the page's main landmark's (:func:`landmark_text`) unless that is
    one too, else trafilatura's; without the lines that write out a URL; and the characters
    of text the page holds, as resiliparse counts them."""
    from resiliparse.parse.html import HTMLTree

    tree = HTMLTree.parse(page)
    text, page_chars = _resiliparse_tree_text(tree, page)
    if kept_little(text, page_chars):
        landmark = landmark_text(tree, page_chars)
        if landmark:
            text = landmark
        else:
            second = _attempt("trafilatura", page, url, _fast_trafilatura_text)
            if second is not None and second[0].strip():
                text = second[0]
    return without_url_lines(text), page_chars


def landmark_text(tree: HTMLTree, page_chars: int = 0) -> str:
    """The whole text of the largest element of a parsed page that :data:`MAIN_LANDMARKS`
    selects (by the length of its text), in resiliparse's layout; ``""`` when there is none,
    or when its text is little of the page's *page_chars* characters (:func:`kept_little`).

    >>> from resiliparse.parse.html import HTMLTree
    >>> page = "<nav>Home</nav><main><h1>Title</h1><ul><li>One</li></ul></main><footer>F</footer>"
    >>> landmark_text(HTMLTree.parse(page)).split()
    ['Title', 'One']
    """
    from resiliparse.extract.html2text import extract_plain_text

    if tree.body is None:
        return ""
    options = {**RESILIPARSE_OPTIONS, "main_content": False}
    texts = (
        extract_plain_text(node.html, **options)
        for node in tree.body.query_selector_all(MAIN_LANDMARKS)
    )
    text = max(texts, key=len, default="")
    return text if text.strip() and not kept_little(text, page_chars) else ""


def _fast_trafilatura_text(page: str, url: str | None) -> tuple[str, int]:
    """trafilatura's text for ``"auto"``, which counts the page with resiliparse (``0`` here)."""
    return _trafilatura_text(page, url, AUTO_TRAFILATURA_OPTIONS, count_page=False)


def without_url_lines(text: str) -> str:
    """*text* without its lines that write out an ``http://`` or ``https://`` URL: the
    address a printed copy names, the source a mirror credits, a "read more" link; an
    article's own prose seldom holds one.

    >>> without_url_lines("The river rose.\\nPrinted from https://news.example/river")
    'The river rose.'
    """
    if "://" not in text:
        return text
    return "\n".join(
        line for line in text.splitlines() if "http://" not in line and "https://" not in line
    )


_EXTRACT: Final = {
    "trafilatura": _trafilatura_text,
    "resiliparse": _resiliparse_text,
    "trafilatura+resiliparse": _agreed_text,
    "auto": _auto_text,
}
#: What each extractor imports, and which extractor takes over a page it raised on.
_REQUIRES: Final[Mapping[str, tuple[str, ...]]] = {
    "trafilatura": ("trafilatura",),
    "resiliparse": ("resiliparse",),
    "trafilatura+resiliparse": ("trafilatura", "resiliparse"),
    "auto": ("resiliparse", "trafilatura"),
}
#: What :func:`load_extractor` imports: what every page needs.
_PRELOADED: Final[Mapping[str, tuple[str, ...]]] = {**_REQUIRES, "auto": ("resiliparse",)}
_MODULES: Final[Mapping[str, str]] = {
    "trafilatura": "trafilatura",
    "resiliparse": "resiliparse.extract.html2text",
}
_FALLBACK: Final[Mapping[Extractor, Extractor]] = {
    "trafilatura": "resiliparse",
    "resiliparse": "trafilatura",
    "trafilatura+resiliparse": "resiliparse",
    "auto": "trafilatura",
}


def _page_text_chars(tree: HtmlElement) -> int:
    body = tree.find("body")
    root = tree if body is None else body
    chars = _collapsed_length(root.xpath("string()"))
    for element in root.iter("script", "style", "noscript", "template"):
        chars -= _collapsed_length(element.text_content())
    return max(chars, 0)


def _collapsed_length(text: str) -> int:
    return len(" ".join(text.split()))


def _cut_at_tag(page: str, limit: int) -> str:
    # at the last tag, unless that loses more than half: a page of one giant paragraph
    # keeps its head rather than nothing
    cut = page.rfind("<", 0, limit)
    return page[:cut] if cut > limit // 2 else page[:limit]


def _as_document(page: str) -> str:
    # trafilatura rejects a fragment (markup without an <html> element) as "not HTML"
    if "<html" in page[:SNIFF_BYTES].lower():
        return page
    return "<html><body>" + page + "</body></html>"
