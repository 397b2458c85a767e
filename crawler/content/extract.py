"""Main-text extraction: the words of a page that its readers came for.

:func:`extract` turns a downloaded page (``bytes`` as received, or ``str``) into its main
text with trafilatura, without navigation, boilerplate or comments, and says what happened
(:class:`Extraction`); :func:`main_text` returns just the text. Both accept anything a crawl
can download, including broken HTML, unknown or wrong charsets, binary files and huge pages,
and never raise on it.

Decoding ``bytes`` follows the order of the WHATWG Encoding Standard, as browsers and Scrapy
do, with the label rules of :mod:`w3lib.encoding` (``gb2312`` and ``gbk`` are read as their
superset ``gb18030``, ``iso-8859-1`` and ``ascii`` as ``cp1252``):

1. a byte order mark (UTF-8, UTF-16, UTF-32);
2. the *encoding* argument (the charset of the HTTP ``Content-Type`` header);
3. the document's own declaration: ``<meta charset>``, ``<meta http-equiv="Content-Type">``
   or ``<?xml encoding?>``, unless it names another encoding than UTF-8 while the bytes
   are valid UTF-8 with non-ASCII characters (a page converted to UTF-8 that kept its old
   declaration);
4. UTF-8, when the bytes are valid UTF-8;
5. detection by charset-normalizer on the first 64 KiB, among the legacy encodings browsers
   support (``cp1252`` when it is as likely as the best guess, as browsers default to it);
6. ``cp1252``, which decodes any byte.

A declared encoding (2, 3) is used unless it is unknown or fails to decode: more than one
undecodable sequence per 1000 characters sends the decoder to the next step.

Nothing here imports Scrapy.
"""

from __future__ import annotations

import functools
import importlib.util
import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, Literal

from charset_normalizer import from_bytes as detect_charsets
from w3lib.encoding import (
    html_body_declared_encoding,
    http_content_type_encoding,
    read_bom,
    resolve_encoding,
    to_unicode,
)

from crawler.content.agreement import agreed_lines
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

# Leading bytes of file formats a crawler downloads by mistake; none of them is a page.
_BINARY_SIGNATURES: Final = (
    b"\x89PNG\r\n\x1a\n",
    b"%PDF-",
    b"GIF87a",
    b"GIF89a",
    b"\xff\xd8\xff",  # JPEG
    b"PK\x03\x04",  # ZIP, and the formats built on it (docx, xlsx, epub, jar)
    b"PK\x05\x06",  # empty ZIP
    b"\x1f\x8b",  # gzip (a body left compressed)
)
_SNIFF_BYTES: Final = 4096
_DETECTION_BYTES: Final = 64 * 1024
_MAX_DECODING_ERRORS_PER_CHAR: Final = 0.001
# The legacy encodings of the WHATWG Encoding Standard, as Python codecs: what detection may
# choose from (a page cannot be in an encoding no browser reads).
_DETECTABLE_CODECS: Final = (
    "cp1252",
    "cp1250",
    "cp1251",
    "cp1253",
    "cp1254",
    "cp1255",
    "cp1256",
    "cp1257",
    "cp1258",
    "cp866",
    "cp874",
    "iso8859_2",
    "iso8859_4",
    "iso8859_5",
    "iso8859_6",
    "iso8859_7",
    "iso8859_8",
    "iso8859_10",
    "iso8859_13",
    "iso8859_14",
    "iso8859_15",
    "iso8859_16",
    "koi8_r",
    "koi8_u",
    "mac_roman",
    "gb18030",
    "big5",
    "euc_jp",
    "shift_jis",
    "euc_kr",
)
# WHATWG labels that Python's codec registry does not know
_EXTRA_LABELS: Final = {"x-gbk": "gb18030"}


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
        if _is_binary(html):
            return Extraction("", "binary")
        truncated = max_bytes is not None and len(html) > max_bytes
        if truncated:
            codec, page = decode_html(html[:max_bytes], encoding, html[:_DETECTION_BYTES])
            # the cut may have split a tag or a character: drop what follows the last "<"
            page = _cut_at_tag(page, len(page))
        else:
            codec, page = decode_html(html, encoding)
    elif isinstance(html, str):
        if _is_binary_text(html):
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
        landmark = landmark_text(tree)
        if landmark.strip() and not kept_little(landmark, page_chars):
            text = landmark
        else:
            second = _attempt("trafilatura", page, url, _fast_trafilatura_text)
            if second is not None and second[0].strip():
                text = second[0]
    return without_url_lines(text), page_chars


def landmark_text(tree: HTMLTree) -> str:
    """The whole text of the largest element of a parsed page that :data:`MAIN_LANDMARKS`
    selects (by the length of its text), in resiliparse's layout; ``""`` when there is none.

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
    return max(texts, key=len, default="")


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


def decode_html(
    data: bytes, encoding: str | None = None, sample: bytes | None = None
) -> tuple[str, str]:
    """Decode the bytes of a page; return the codec used and the text.

    - The steps and their order are those of the module documentation: byte order mark,
      *encoding* (a label or a ``Content-Type`` value), the page's declaration, valid
      UTF-8, detection, ``cp1252``.
    - A declared encoding is skipped when unknown or when more than one sequence per 1000
      characters does not decode with it; the codec finally used replaces undecodable
      sequences with U+FFFD.
    - Bytes without a byte order mark whose NULs alternate like UTF-16 are read as
      UTF-16 of that byte order.
    - *sample* (default: the start of *data*) is where the declaration and detection look;
      pass the start of the full page when *data* is a cut of it.
    - The byte order mark is not part of the text. Never raises.

    >>> decode_html('<meta charset="gb2312"><p>中文'.encode("gbk"))
    ('gb18030', '<meta charset="gb2312"><p>中文')
    """
    bom_codec, bom = read_bom(data)
    if bom_codec is not None and bom is not None:
        return bom_codec, to_unicode(data[len(bom) :], bom_codec)
    head = data[:_DETECTION_BYTES] if sample is None else sample
    utf16 = _utf16_byte_order(head[:_SNIFF_BYTES])
    if utf16 is not None:
        return utf16, to_unicode(data, utf16)

    declared = _ascii_compatible(_resolve_label(encoding), head)
    if declared is not None:
        text = _decode_tolerantly(data, declared)
        if text is not None:
            return declared, text
        logger.debug("bytes do not decode as the declared %(encoding)s", {"encoding": declared})
    declared = _declared_in_page(head)
    if declared is not None:
        if declared != "utf-8" and not data.isascii():
            # a page converted to UTF-8 that kept its old declaration
            try:
                return "utf-8", data.decode("utf-8")
            except UnicodeDecodeError:
                pass
        text = _decode_tolerantly(data, declared)
        if text is not None:
            return declared, text
        logger.debug("bytes do not decode as the declared %(encoding)s", {"encoding": declared})
    try:
        return "utf-8", data.decode("utf-8")
    except UnicodeDecodeError:
        pass
    detected = _detect(head)
    if detected is not None:
        text = _decode_tolerantly(data, detected)
        if text is not None:
            return detected, text
    return "cp1252", to_unicode(data, "cp1252")


def _resolve_label(label: str | None) -> str | None:
    if not label:
        return None
    label = label.strip().strip("\"'").lower()
    if label in _EXTRA_LABELS:
        return _EXTRA_LABELS[label]
    if "=" in label or ";" in label or "/" in label:
        resolved = http_content_type_encoding(label)
        return _EXTRA_LABELS.get(resolved or "", resolved)
    try:
        return resolve_encoding(label)
    except Exception:  # a label that trips the codec registry is no label
        return None


def _declared_in_page(head: bytes) -> str | None:
    # a declaration readable as ASCII is not in UTF-16 or UTF-32 (WHATWG: read UTF-8)
    return _ascii_compatible(html_body_declared_encoding(head), head)


def _ascii_compatible(codec: str | None, head: bytes) -> str | None:
    if codec is not None and codec.startswith(("utf-16", "utf-32")) and b"\x00" not in head:
        return "utf-8"
    return codec


def _decode_tolerantly(data: bytes, codec: str) -> str | None:
    try:
        return data.decode(codec)
    except UnicodeDecodeError:
        pass
    except LookupError:
        return None
    text = to_unicode(data, codec)
    errors = text.count("\ufffd")
    if errors > max(1, len(text) * _MAX_DECODING_ERRORS_PER_CHAR):
        return None
    return text


def _detect(head: bytes) -> str | None:
    try:
        matches = detect_charsets(head, cp_isolation=list(_DETECTABLE_CODECS))
    except Exception:
        logger.debug("charset detection failed", exc_info=True)
        return None
    best = matches.best()
    if best is None:
        return None
    for match in matches:
        # between equally likely readings, the one browsers default to (WHATWG)
        tied = (match.chaos, match.coherence) == (best.chaos, best.coherence)
        if tied and "cp1252" in match.could_be_from_charset:
            return "cp1252"
    return resolve_encoding(best.encoding)


def _is_binary(data: bytes) -> bool:
    if data.startswith(_BINARY_SIGNATURES) or (data[8:12] == b"WEBP" and data.startswith(b"RIFF")):
        return True
    head = data[:_SNIFF_BYTES]
    if b"\x00" not in head:
        return False
    return read_bom(head)[0] is None and _utf16_byte_order(head) is None


def _is_binary_text(page: str) -> bool:
    """Binary data that reached us as ``str`` (decoded as Latin-1, say)."""
    head = page[:_SNIFF_BYTES]
    return "\x00" in head or head.encode("latin-1", "replace").startswith(_BINARY_SIGNATURES)


def _utf16_byte_order(head: bytes) -> str | None:
    """UTF-16 without a byte order mark: markup is ASCII, so every other byte is NUL."""
    pairs = len(head) // 2
    if pairs < 2 or b"\x00" not in head:
        return None
    nul_even = head[0 : 2 * pairs : 2].count(0)
    nul_odd = head[1 : 2 * pairs : 2].count(0)
    if nul_odd >= pairs * 0.4 and nul_even <= pairs * 0.02:
        return "utf-16-le"
    if nul_even >= pairs * 0.4 and nul_odd <= pairs * 0.02:
        return "utf-16-be"
    return None


def _cut_at_tag(page: str, limit: int) -> str:
    # at the last tag, unless that loses more than half: a page of one giant paragraph
    # keeps its head rather than nothing
    cut = page.rfind("<", 0, limit)
    return page[:cut] if cut > limit // 2 else page[:limit]


def _as_document(page: str) -> str:
    # trafilatura rejects a fragment (markup without an <html> element) as "not HTML"
    if "<html" in page[:_SNIFF_BYTES].lower():
        return page
    return "<html><body>" + page + "</body></html>"
