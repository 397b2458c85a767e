"""Which of two copies of one page a reader would keep.

A printer-friendly copy or a mirror is often linked before its article, so the content level
meets it first, keeps it, and then finds the article a copy of it. The page to keep is the
article. Of two URLs of one text, the better representative is, in this order:

1. the URL the kept page declares as its own (``rel="canonical"``), or the URL the kept page's
   address now redirects to;
2. on one site, an ``https`` URL before an ``http`` one;
3. a URL without a copy marker before one with (:data:`COPY_MARKERS`: a ``print``, ``amp``,
   ``mobile`` or ``mirror`` path segment, query parameter or subdomain...);
4. on one site, the shorter URL.

"One site": the same host but for a first label ``www`` or a copy marker (``m.``, ``amp.``).
Across sites, which copy is shorter or served over ``https`` says nothing of which is the
original.

URLs are compared in canonical form (:func:`crawler.urls.canonicalize_url`): a tracking
parameter neither marks a copy nor makes a URL longer. Otherwise the page met first stays
the representative. Nothing here imports Scrapy.
"""

from __future__ import annotations

import re
from typing import Final
from urllib.parse import parse_qsl, urlsplit

from crawler.urls import canonicalize_url

#: Words that mark a copy of a page, as a path segment (``/print``, ``/amp/...``,
#: ``/article.amp``, ``/printer-friendly``), a query parameter's name or value (``?print=1``,
#: ``?output=amp``, ``?view=print``) or the first label of the host (``m.``, ``amp.``,
#: ``mobile.``).
COPY_MARKERS: Final = frozenset(
    {"amp", "print", "printable", "printer", "printview", "mobile", "mirror", "lite", "m"}
)
_WORDS = re.compile(r"[a-z]+")


def has_copy_marker(url: str) -> bool:
    """Whether *url* names a copy of a page (:data:`COPY_MARKERS`).

    >>> has_copy_marker("https://news.example/articles/river/print")
    True
    >>> has_copy_marker("https://news.example/amp/articles/river")
    True
    >>> has_copy_marker("https://news.example/articles/river?output=amp")
    True
    >>> has_copy_marker("https://m.news.example/articles/river")
    True
    >>> has_copy_marker("https://news.example/articles/amplifiers-in-print-shops")
    False
    """
    parts = urlsplit(url.lower())
    first_label = (parts.hostname or "").split(".", 1)[0]
    if first_label in COPY_MARKERS:
        return True
    for segment in parts.path.split("/"):
        stem, _, extension = segment.rpartition(".")
        if segment in COPY_MARKERS or extension in COPY_MARKERS or stem in COPY_MARKERS:
            return True
        if segment.endswith("-friendly") and _WORDS.findall(segment)[0] in COPY_MARKERS:
            return True
    for name, value in parse_qsl(parts.query, keep_blank_values=True):
        if name in COPY_MARKERS or value in COPY_MARKERS:
            return True
    return False


def better_representative(
    candidate: str,
    kept: str,
    *,
    kept_declares: str | None = None,
    candidate_came_from: tuple[str, ...] = (),
) -> str | None:
    """Why *candidate* represents a text better than *kept*, the URL of the copy kept
    first, or ``None`` when it does not (see the module's documentation). *kept_declares*:
    the ``rel="canonical"`` URL the kept page declared; *candidate_came_from*: the URLs
    that redirected to *candidate*.

    >>> better_representative("https://a.example/story", "https://a.example/story/print")
    'no_copy_marker'
    >>> better_representative("https://a.example/story", "http://a.example/story")
    'https'
    >>> better_representative("https://a.example/s", "https://a.example/story")
    'shorter'
    >>> better_representative("https://b.example/s", "https://a.example/story") is None
    True
    >>> better_representative("https://a.example/story/print", "https://a.example/story") is None
    True
    >>> better_representative(
    ...     "https://a.example/p?id=7", "https://a.example/p7", kept_declares="https://a.example/p?id=7"
    ... )
    'declared_canonical'
    """
    candidate, kept = _canonical(candidate), _canonical(kept)
    if candidate == kept:
        return None
    if (
        kept_declares is not None
        and _same(kept_declares, candidate)
        and not _same(kept_declares, kept)
    ):
        return "declared_canonical"
    if any(_same(source, kept) for source in candidate_came_from):
        return "redirect_target"
    same_site = _site(candidate) == _site(kept)
    for reason, rank, across_sites in (
        ("https", _not_https, False),
        ("no_copy_marker", has_copy_marker, True),
        ("shorter", len, False),
    ):
        if not (same_site or across_sites):
            continue
        candidate_rank, kept_rank = rank(candidate), rank(kept)
        if candidate_rank != kept_rank:
            return reason if candidate_rank < kept_rank else None
    return None


def _site(url: str) -> str:
    """*url*'s host without a first label that marks a copy or says ``www``."""
    host = (urlsplit(url).hostname or "").lower()
    first, _, rest = host.partition(".")
    return rest if rest and (first == "www" or first in COPY_MARKERS) else host


def may_be_superseded(url: str, *, declares: str | None = None) -> bool:
    """Whether a later copy is likely to represent the text of *url* better: *url* has a
    copy marker, or its page declares another URL as its own. (An ``http`` URL is not
    enough: on a site served over ``http`` only, every page would be.)

    >>> may_be_superseded("https://a.example/story"), may_be_superseded("http://a.example/s")
    (False, False)
    >>> may_be_superseded("https://a.example/story/print")
    True
    >>> may_be_superseded("https://a.example/s?p=2", declares="https://a.example/s")
    True
    """
    return has_copy_marker(_canonical(url)) or (declares is not None and not _same(declares, url))


def _not_https(url: str) -> bool:
    return urlsplit(url).scheme.lower() != "https"


def _same(first: str, second: str) -> bool:
    return _canonical(first) == _canonical(second)


def _canonical(url: str) -> str:
    """*url* in canonical form (:func:`~crawler.urls.canonicalize_url`: no tracking
    parameter, so that ``?utm_source=mirror`` marks no copy and adds no length)."""
    try:
        return canonicalize_url(url)
    except ValueError:
        return url
