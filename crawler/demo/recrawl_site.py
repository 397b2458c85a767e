"""A generated site that changes between crawls, for measuring recrawls (issue 33).

Serve it with ``python -m crawler.demo.server --site recrawl --articles N`` (N pages, at least
1); ``GET /__demo/advance`` moves it to its next round, in which :data:`CHANGED` of its pages
change, :data:`ADDED` new ones appear and :data:`REMOVED` go (404, and every link to them goes).

* ``/`` links every listing page ``/list/K``; ``/list/K`` links the pages ``/p/N`` whose
  numbers are ``K * LISTING_SIZE`` to ``(K + 1) * LISTING_SIZE - 1``; each page links three
  related pages. A listing page changes only when one of its pages is added or removed, so
  most pages are linked from pages that did not change.
* Validators, by page number: one page in three sends an ``ETag``, one in three a
  ``Last-Modified`` (the round it last changed, as a day after :data:`EPOCH`), the rest
  neither; listing pages and the home page send an ``ETag``. A page whose number is a multiple
  of :data:`IGNORES_VALIDATORS` answers 200 to every conditional request, as some servers do;
  a page that sends an ``ETag`` and whose number is :data:`STALE_ETAG` more than a multiple of
  41 (9, 132, 255...) keeps the same ``ETag`` when it changes, as a server that makes its
  ETags from the path does. The others answer ``304 Not Modified`` when the validators match
  (:func:`not_modified`).
* A page whose number is :data:`STAMPED` more than a multiple of 5 ends with a footer
  naming the round it is served in: its bytes change at every round, its main text only
  when the page does (a date or an advert around the same article).
* ``GET /__demo/change/N`` changes page ``N`` alone, in a round of its own (tests).

The same arguments and round give the same site, byte for byte. Nothing here imports Scrapy.
"""

from __future__ import annotations

import hashlib
import html
import random
from dataclasses import dataclass, field
from email.utils import formatdate, parsedate_to_datetime
from typing import Protocol

from crawler.demo.site import Resolution

__all__ = [
    "ADDED",
    "CHANGED",
    "EPOCH",
    "IGNORES_VALIDATORS",
    "LISTING_SIZE",
    "REMOVED",
    "STALE_ETAG",
    "STAMPED",
    "RecrawlSite",
    "not_modified",
]

#: Shares of the pages that change, are added and are removed at each round.
CHANGED, ADDED, REMOVED = 0.05, 0.01, 0.01
#: Pages a listing page links.
LISTING_SIZE = 50
#: A page whose number is a multiple of this answers 200 to conditional requests.
IGNORES_VALIDATORS = 37
#: A page that sends an ETag and whose number is this much more than a multiple of 41
#: keeps its ETag when it changes.
STALE_ETAG = 9
#: A page whose number is this much more than a multiple of 5 names its round in a footer.
STAMPED = 1
#: ``Last-Modified`` of round 0 (2026-01-01T00:00:00Z); each round is one day later.
EPOCH = 1_767_225_600
_DAY = 86_400
_HTML = {"Content-Type": "text/html; charset=utf-8"}
#: Syllables of the generated words: pages of distinct text, never near copies of each other.
_SYLLABLES = tuple(f"{consonant}{vowel}" for consonant in "bdklmnrst" for vowel in "aeiou")


@dataclass
class _Page:
    version: int = 0
    changed_in: int = 0


@dataclass
class RecrawlSite:
    """The site at its current :attr:`round` (see the module's documentation)."""

    pages: int = 2000
    seed: int = 7
    host: str = "localhost"
    port: int = 0
    round: int = 0
    _live: dict[int, _Page] = field(default_factory=dict, repr=False)
    _next_number: int = 0

    def __post_init__(self) -> None:
        if self.pages < 1:
            raise ValueError(f"a recrawl site needs at least 1 page, got {self.pages!r}")
        self._live = {number: _Page() for number in range(self.pages)}
        self._next_number = self.pages

    @property
    def base_url(self) -> str:
        """The URL of the home page (the site's links are relative)."""
        return f"http://{self.host}:{self.port}/"

    # rounds

    def advance(self) -> dict[str, list[str]]:
        """Move to the next round; the paths of the pages that changed, were added and were
        removed in it."""
        self.round += 1
        rng = random.Random(f"{self.seed}:round:{self.round}")
        numbers = sorted(self._live)
        count = len(numbers)
        removed = rng.sample(numbers, max(1, round(count * REMOVED)) if count > 1 else 0)
        for number in removed:
            del self._live[number]
        kept = sorted(self._live)
        changed = rng.sample(kept, min(len(kept), max(1, round(count * CHANGED))))
        for number in changed:
            page = self._live[number]
            page.version += 1
            page.changed_in = self.round
        added = list(range(self._next_number, self._next_number + max(1, round(count * ADDED))))
        for number in added:
            self._live[number] = _Page(changed_in=self.round)
        self._next_number += len(added)
        return {
            "changed": [_path(number) for number in changed],
            "added": [_path(number) for number in added],
            "removed": [_path(number) for number in removed],
        }

    def change(self, number: int) -> dict[str, list[str]]:
        """Change page *number* alone, in a round of its own (``KeyError`` when it is not
        served); the paths changed, as :meth:`advance` gives them."""
        page = self._live[number]
        self.round += 1
        page.version += 1
        page.changed_in = self.round
        return {"changed": [_path(number)], "added": [], "removed": []}

    @property
    def resources(self) -> frozenset[str]:
        """The paths of every page served now (home, listing pages and pages)."""
        listings = {f"/list/{number // LISTING_SIZE}" for number in self._live}
        return frozenset({"/", *listings, *map(_path, self._live)})

    # serving

    def resolve(self, target: str) -> Resolution:
        """The answer to a GET of *target* (no validators: see :func:`not_modified`)."""
        path = target.split("?", 1)[0].split("#", 1)[0]
        if path == "/":
            listings = sorted({number // LISTING_SIZE for number in self._live})
            links = "".join(f'<li><a href="/list/{k}">Listing {k}</a></li>' for k in listings)
            return self._document("/", "Every page", f"<ul>{links}</ul>", etag=True)
        if path.startswith("/list/") and path[6:].isdigit():
            listing = int(path[6:])
            listed = [n for n in sorted(self._live) if n // LISTING_SIZE == listing]
            if listed:
                links = "".join(f'<li><a href="{_path(n)}">Page {n}</a></li>' for n in listed)
                return self._document(path, f"Listing {listing}", f"<ul>{links}</ul>", etag=True)
        if path.startswith("/p/") and path[3:].isdigit() and int(path[3:]) in self._live:
            return self._page(int(path[3:]))
        return Resolution(404, _HTML, b"<html><body><h1>Not found</h1></body></html>", None)

    def _page(self, number: int) -> Resolution:
        page = self._live[number]
        rng = random.Random(f"{self.seed}:page:{number}:{page.version}")
        paragraphs = "".join(f"<p>{_sentence(rng, 60)}.</p>" for _ in range(4))
        # the same three while they live: a page changes when a page it links goes
        candidates = random.Random(f"{self.seed}:related:{number}").sample(
            range(self.pages), min(8, self.pages)
        )
        related = [n for n in candidates if n in self._live and n != number][:3]
        links = "".join(f'<a href="{_path(n)}">Page {n}</a> ' for n in related)
        body = f"<article>{paragraphs}</article><nav>Related: {links}</nav>"
        if number % 5 == STAMPED:
            body += f"<footer>Served in round {self.round}.</footer>"
        kind = number % 3
        return self._document(
            _path(number),
            self._title(number),
            body,
            etag=kind == 0,
            etag_from=_path(number) if number % 41 == STALE_ETAG else None,
            last_modified=EPOCH + page.changed_in * _DAY if kind == 1 else None,
            honours=number % IGNORES_VALIDATORS != 0,
        )

    def _title(self, number: int) -> str:
        return f"Page {number}, version {self._live[number].version}"

    def _document(
        self,
        path: str,
        title: str,
        body: str,
        *,
        etag: bool = False,
        etag_from: str | None = None,
        last_modified: int | None = None,
        honours: bool = True,
    ) -> Resolution:
        document = (
            f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>'
            f"{html.escape(title)}</title></head>\n<body><h1>{html.escape(title)}</h1>\n"
            f"{body}\n</body></html>\n"
        ).encode()
        headers = dict(_HTML)
        if etag:
            source = document if etag_from is None else etag_from.encode()
            headers["ETag"] = f'"{hashlib.blake2b(source, digest_size=8).hexdigest()}"'
        if last_modified is not None:
            headers["Last-Modified"] = formatdate(last_modified, usegmt=True)
        if not honours:
            headers["X-Demo-Ignores-Validators"] = "1"
        return Resolution(200, headers, document, path)


class RequestHeaders(Protocol):
    """A request's headers by name (a ``dict``, or an ``http.server`` request's)."""

    def get(self, name: str, /) -> str | None: ...


def not_modified(resolution: Resolution, request_headers: RequestHeaders) -> bool:
    """Whether a server answers ``304 Not Modified`` to a conditional GET of *resolution*
    (RFC 9110, 13.2.2): ``If-None-Match`` decides when it is sent (a weak comparison, ``*``
    matching any page), else ``If-Modified-Since`` against ``Last-Modified``. A page served
    with ``X-Demo-Ignores-Validators`` never is.

    >>> page = Resolution(200, {"ETag": '"a1"'}, b"", "/p/1")
    >>> not_modified(page, {"If-None-Match": 'W/"a1", "b2"'}), not_modified(page, {})
    (True, False)
    """
    if resolution.status != 200 or "X-Demo-Ignores-Validators" in resolution.headers:
        return False
    if_none_match = request_headers.get("If-None-Match")
    if if_none_match is not None:
        etag = resolution.headers.get("ETag")
        if etag is None:
            return False
        sent = {tag.strip().removeprefix("W/") for tag in if_none_match.split(",")}
        return "*" in sent or etag.removeprefix("W/") in sent
    if_modified_since = request_headers.get("If-Modified-Since")
    last_modified = resolution.headers.get("Last-Modified")
    if if_modified_since is None or last_modified is None:
        return False
    try:
        return parsedate_to_datetime(last_modified) <= parsedate_to_datetime(if_modified_since)
    except (TypeError, ValueError):
        return False


def _path(number: int) -> str:
    return f"/p/{number}"


def _sentence(rng: random.Random, words: int) -> str:
    return " ".join(
        "".join(rng.choice(_SYLLABLES) for _ in range(rng.randint(2, 3))) for _ in range(words)
    )
