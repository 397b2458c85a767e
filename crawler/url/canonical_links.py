"""``rel="canonical"``: the URL a page declares as its own, in an HTTP ``Link`` header or a
``<link rel="canonical">`` of its ``<head>``, and whether to believe it.

A declaration is taken only as an *alias*: the page at ``/a?ref=nav`` that declares
``/a`` says that ``/a`` serves what was just downloaded, so a later link to ``/a`` need not
be downloaded. Sites get this wrong in ways that would lose pages if it were believed
blindly (every page declaring the home page, page 2 of a listing declaring page 1, a
template copied from another site), so only a declaration that *removes query parameters*
from the page's own URL is believed: same scheme, host and path once both are canonical,
and every parameter of the declared URL present in the page's URL with the same value.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING
from urllib.parse import parse_qsl, urljoin, urlsplit

from scrapy.http import HtmlResponse

if TYPE_CHECKING:
    from scrapy.http import Response

#: How much of a body is searched for ``<link rel="canonical">``: the head of any page.
HEAD_BYTES = 65_536

_LINK_TAG = re.compile(rb"<link\b[^>]*>", re.IGNORECASE)
_REL_CANONICAL = re.compile(
    rb"""\brel\s*=\s*(?:"[^"]*\bcanonical\b[^"]*"|'[^']*\bcanonical\b[^']*'|canonical\b)""",
    re.IGNORECASE,
)
_HREF = re.compile(rb"""\bhref\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s>]+))""", re.IGNORECASE)
_HEADER_LINK = re.compile(r"<([^>]*)>\s*;([^,]*)")
_HEADER_REL_CANONICAL = re.compile(
    r"""\brel\s*=\s*(?:"[^"]*\bcanonical\b[^"]*"|canonical\b)""", re.IGNORECASE
)


def from_link_headers(values: list[str], base_url: str) -> str | None:
    """The URL of the first ``rel="canonical"`` link of HTTP ``Link`` header *values*.

    >>> from_link_headers(['<https://a.example/x>; rel="canonical"'], "https://a.example/x?y=1")
    'https://a.example/x'
    >>> from_link_headers(['</style.css>; rel=preload'], "https://a.example/") is None
    True
    """
    for value in values:
        for target, parameters in _HEADER_LINK.findall(value):
            if _HEADER_REL_CANONICAL.search(parameters):
                return urljoin(base_url, target.strip())
    return None


def from_html(body: bytes, base_url: str, encoding: str = "utf-8") -> str | None:
    """The URL of the first ``<link rel="canonical" href>`` in the first
    :data:`HEAD_BYTES` of *body*, relative to *base_url*.

    >>> from_html(b'<head><link href="/a" rel="canonical"></head>', "http://s.example/a?r=1")
    'http://s.example/a'
    """
    for tag in _LINK_TAG.findall(body[:HEAD_BYTES]):
        if not _REL_CANONICAL.search(tag):
            continue
        href = _HREF.search(tag)
        if href is None:
            return None
        raw = next(group for group in href.groups() if group is not None)
        text = raw.decode(encoding, "replace").strip()
        return urljoin(base_url, text.replace("&amp;", "&")) if text else None
    return None


def declared_by(response: Response) -> str | None:
    """The canonical URL *response* declares, absolute: its ``Link`` headers' first, else
    (an HTML page) its head's; ``None`` when it declares none."""
    declared = from_link_headers(
        [value.decode("latin-1") for value in response.headers.getlist(b"Link")],
        response.url,
    )
    if declared is None and isinstance(response, HtmlResponse):
        declared = from_html(response.body, response.url, response.encoding)
    return declared


def refusal(page: str, declared: str) -> str | None:
    """Why the canonical URL *declared* by the page at *page* is not believed (both URLs
    canonical already), or ``None`` when it is: it only removes query parameters.

    >>> refusal("http://s.example/a?ref=nav&id=3", "http://s.example/a?id=3") is None
    True
    >>> refusal("http://s.example/list?page=2", "http://s.example/list?page=1")
    'other-query'
    >>> refusal("http://s.example/b", "http://s.example/")
    'other-path'
    """
    if declared == page:
        return "same-url"
    page_parts, declared_parts = urlsplit(page), urlsplit(declared)
    if declared_parts.scheme not in ("http", "https"):
        return "not-http"
    if (declared_parts.scheme, declared_parts.netloc) != (page_parts.scheme, page_parts.netloc):
        return "other-host"
    if declared_parts.path != page_parts.path:
        return "other-path"
    page_query = set(parse_qsl(page_parts.query, keep_blank_values=True))
    if not set(parse_qsl(declared_parts.query, keep_blank_values=True)) < page_query:
        return "other-query"
    return None
