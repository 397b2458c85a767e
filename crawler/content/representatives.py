"""Which of two copies of one page a reader would keep.

A printer-friendly copy or a mirror is often linked before its article, so the content level
meets it first, keeps it, and then finds the article a copy of it. The page to keep is the
article. Of two URLs of one text, the better representative is, in this order:

1. the URL the kept page declares as its own (``rel="canonical"``);
2. the URL the kept page's URL redirects to now (a page moved, a copy retired), and never
   the URL that redirected to the kept page;
3. on one site, an ``https`` URL before an ``http`` one;
4. a URL without a copy marker before one with (:func:`has_copy_marker`: ``/print``,
   ``/amp/...``, ``?output=amp``, ``m.`` ...);
5. on one site, the shorter URL.

"One site": the same host but for a first label ``www`` or a copy marker (``m.``, ``amp.``).
Across sites, which copy is shorter or served over ``https`` says nothing of which is the
original. The first, second and fourth reasons are :data:`STRONG_REASONS`: they say which
URL is a copy; the others only prefer one of two ordinary URLs.

URLs are compared in canonical form (:func:`crawler.url.canonical.canonicalize_url`): a tracking
parameter neither marks a copy nor makes a URL longer. A URL that cannot be parsed is
never better, nor a copy. Otherwise the page met first stays the representative. Nothing
here imports Scrapy.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final
from urllib.parse import parse_qsl, urlsplit

from crawler.url.canonical import canonicalize_url

if TYPE_CHECKING:
    from collections.abc import Sequence

#: Words that mark a copy as the first segment of a URL's path (``/amp/...``,
#: ``/mirror/...``), as a segment's extension (``/story.amp``), or as a query parameter's
#: name (``?print=1``); ``...-friendly`` counts as its first word (``/printer-friendly``).
COPY_MARKERS: Final = frozenset(
    {"amp", "print", "printable", "printer", "printview", "mobile", "mirror", "lite"}
)
#: ... and these as the last segment (``/story/print``, ``/2024/05/story/amp``), where
#: ``mobile`` or ``mirror`` name a shop's category more often than a copy.
LAST_SEGMENT_MARKERS: Final = frozenset({"amp", "print", "printable", "printer", "printview"})
#: ... and as the value of these parameters (``?output=amp``, ``?view=print``).
COPY_VALUE_PARAMETERS: Final = frozenset(
    {"output", "outputtype", "view", "format", "version", "mode", "type"}
)
#: ... and as the first label of a host of three labels or more (``m.news.example``).
COPY_HOST_LABELS: Final = frozenset({"m", "amp", "mobile"})
#: The reasons that say which of two URLs is a copy.
STRONG_REASONS: Final = frozenset({"declared_canonical", "redirect_target", "no_copy_marker"})


def has_copy_marker(url: str) -> bool:
    """Whether *url* names a copy of a page.

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
    >>> has_copy_marker("https://shop.example/category/mobile?size=m")
    False
    """
    try:
        parts = urlsplit(url.lower())
        host = parts.hostname or ""
    except ValueError:
        return False
    if _host_marker(host) is not None:
        return True
    segments = [segment for segment in parts.path.split("/") if segment]
    if len(segments) > 1 and (_marks(segments[0]) or _marks(segments[-1], LAST_SEGMENT_MARKERS)):
        return True
    if any(segment.rpartition(".")[2] in COPY_MARKERS for segment in segments if "." in segment):
        return True
    return any(
        name in COPY_MARKERS or (name in COPY_VALUE_PARAMETERS and value in COPY_MARKERS)
        for name, value in parse_qsl(parts.query, keep_blank_values=True)
    )


def better_representative(
    candidate: str,
    kept: str,
    *,
    kept_declares: str | None = None,
    candidate_redirected_from: Sequence[str] = (),
    kept_redirected_from: Sequence[str] = (),
) -> str | None:
    """Why *candidate* represents a text better than *kept*, the URL of the copy kept
    first, or ``None`` when it does not (see the module's documentation). *kept_declares*:
    the ``rel="canonical"`` URL the kept page declared; ``*_redirected_from``: the URLs
    that redirected to each page before it was downloaded (Scrapy's ``redirect_urls``).

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
    >>> better_representative(
    ...     "https://new.example/news/story",
    ...     "http://old.example/story",
    ...     candidate_redirected_from=["http://old.example/story"],
    ... )
    'redirect_target'
    """
    candidate, kept = _canonical(candidate), _canonical(kept)
    if candidate == kept:
        return None
    if kept_declares is not None and same_page(kept_declares, candidate):
        return "declared_canonical"
    if any(_canonical(source) == kept for source in candidate_redirected_from):
        return "redirect_target"
    if any(_canonical(source) == candidate for source in kept_redirected_from):
        return None  # the candidate's URL leads to the kept page
    try:
        same_site = _site(candidate) == _site(kept)
    except ValueError:
        return None
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
    if declares is not None and not same_page(declares, url):
        return True
    return has_copy_marker(_canonical(url))


def same_page(first: str, second: str) -> bool:
    """Whether two URLs are one in canonical form
    (:func:`~crawler.url.canonical.canonicalize_url`)."""
    return _canonical(first) == _canonical(second)


def _marks(segment: str, markers: frozenset[str] = COPY_MARKERS) -> bool:
    """Whether one path segment is a copy marker (``print``, ``printer-friendly``)."""
    if segment in markers:
        return True
    return segment.endswith("-friendly") and segment.split("-", 1)[0] in markers


def _host_marker(host: str) -> str | None:
    """The first label of *host* when it marks a copy (``m.`` of ``m.news.example``) and is
    not the name of the site itself (``mobile.example``, ``m.co.uk``)."""
    labels = host.split(".")
    if len(labels) < 3 or labels[0] not in COPY_HOST_LABELS:
        return None
    if len(labels) == 3 and len(labels[1]) <= 3 and len(labels[2]) == 2:
        return None  # the site's own name under a suffix such as co.uk
    return labels[0]


def _not_https(url: str) -> bool:
    return urlsplit(url).scheme.lower() != "https"


def _site(url: str) -> str:
    """*url*'s host without a first label ``www`` or one that marks a copy."""
    host = (urlsplit(url).hostname or "").lower()
    first, _, rest = host.partition(".")
    if first == "www" and rest.count(".") >= 1:
        return rest
    return rest if _host_marker(host) is not None else host


def _canonical(url: str) -> str:
    """*url* in canonical form (:func:`~crawler.url.canonical.canonicalize_url`: no tracking
    parameter, so that ``?utm_source=mirror`` marks no copy and adds no length)."""
    try:
        return canonicalize_url(url)
    except ValueError:
        return url
