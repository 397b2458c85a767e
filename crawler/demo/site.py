"""A deterministic demo news/docs site with URL variants and near-duplicate pages.

The site exists to show both levels of crawl deduplication and to let tests predict exact
download counts:

- its pages link to the same resources through many *URL variants* (tracking parameters, host
  case, trailing slash, ``;jsessionid=`` path parameters, query order, fragments, absolute and
  relative hrefs), all of which :meth:`DemoSite.resolve` maps back to one resource;
- some articles have a printer-friendly copy (the same paragraphs under a one-line
  ``Printed on 17 July 2024 at 19:46 UTC from http://localhost:PORT/articles/<slug>``
  header) and a mirrored copy on a partner template (the same paragraphs around an
  advertisement): near duplicates of content at other URLs; and some a lightweight
  (mobile) copy, other markup around the very same text: an exact duplicate of content;
- the listing pages are a chronological index (headline, date, author, opening sentence,
  "Read more (in section X)" for each article): they share boilerplate and phrasing, but
  are distinct documents.

Everything here is pure: no sockets, no Scrapy. :mod:`crawler.demo.server` serves it over HTTP.
"""

from __future__ import annotations

import hashlib
import html
import random
import re
import struct
import zlib
from collections import deque
from dataclasses import dataclass, field
from datetime import date, timedelta
from enum import Enum
from html.parser import HTMLParser
from typing import TYPE_CHECKING, TypeAlias
from urllib.parse import parse_qsl, unquote, urlencode, urljoin, urlsplit

if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator, Mapping

__all__ = ["Article", "DemoSite", "Resolution", "Variant", "build_site", "extract_hrefs"]

SITE_NAME = "The Lantern Gazette"
PARTNER_NAME = "Syndicate Weekly"
LISTING_PAGE_SIZE = 6
SESSION_TOKEN = "ABC123"
FBCLID_VALUE = "IwAR2xTq9Lm4vDemoClickId"
GCLID_VALUE = "Cj0KCQjwDemoAdsClickId_BwE"

HTML_TYPE = "text/html; charset=utf-8"
PDF_TYPE = "application/pdf"
PNG_TYPE = "image/png"


class Variant(str, Enum):
    """How a link spells the URL of the resource it points to."""

    PLAIN = "plain"
    """Root-relative canonical path: ``/articles/<slug>``."""
    RELATIVE = "relative"
    """Document-relative href: ``install``, ``../guides/``, ``?page=2&sort=new``, ``#comments``."""
    ABSOLUTE = "absolute"
    """``http://localhost:PORT/...`` with the site's own host spelling."""
    HOST_CASE = "host_case"
    """Absolute, with the host in mixed case: ``http://LocalHost:PORT/...``."""
    UTM = "utm"
    """``utm_*`` tracking parameters: ``?utm_source=newsletter&utm_medium=email``."""
    FBCLID = "fbclid"
    """A Facebook click id: ``?fbclid=...``."""
    GCLID = "gclid"
    """A Google Ads click id: ``?gclid=...``."""
    TRAILING_SLASH = "trailing_slash"
    """A trailing slash on a page that lives without one: ``/articles/<slug>/``."""
    SESSION_ID = "session_id"
    """A session id path parameter: ``/articles/<slug>;jsessionid=ABC123``."""
    QUERY_ORDER = "query_order"
    """The resource's own query parameters in non-canonical order: ``?sort=new&page=2``."""
    FRAGMENT = "fragment"
    """A fragment: ``#comments``."""


@dataclass(frozen=True)
class Resolution:
    """What the site answers to one request target.

    ``resource_id`` is the canonical path-and-query of the resource served, or ``None`` for a
    redirect or a 404. ``location`` is the ``Location`` header of a redirect, else ``None``.
    """

    status: int
    headers: Mapping[str, str]
    body: bytes
    resource_id: str | None
    location: str | None = None

    @property
    def content_type(self) -> str:
        """The ``Content-Type`` header value."""
        return self.headers["Content-Type"]

    @property
    def is_html(self) -> bool:
        """Whether the body is an HTML document."""
        return self.content_type.startswith("text/html")


@dataclass(frozen=True)
class Article:
    """One generated article; its canonical path is ``/articles/<slug>``."""

    index: int
    slug: str
    title: str
    author: str
    published: date
    section: str
    paragraphs: tuple[str, ...]
    comments: int
    listing_size: int = LISTING_PAGE_SIZE

    @property
    def path(self) -> str:
        """The canonical path of the article page."""
        return f"/articles/{self.slug}"

    @property
    def listing_page(self) -> int:
        """The number of the listing page (``/articles?page=N``) that lists this article."""
        return self.index // self.listing_size + 1

    @property
    def word_count(self) -> int:
        """The number of words in the article's paragraphs."""
        return sum(len(paragraph.split()) for paragraph in self.paragraphs)


@dataclass(frozen=True)
class _Link:
    """An ``<a href>`` a page carries: its target, and how the href spells it."""

    path: str
    text: str
    variants: frozenset[Variant] = frozenset()
    params: tuple[tuple[str, str], ...] = ()
    tracking: tuple[tuple[str, str], ...] = ()
    fragment: str = ""
    relative: str | None = None

    def kinds(self) -> frozenset[Variant]:
        """The variant kinds this href exhibits (``PLAIN`` when it exhibits none)."""
        kinds = set(self.variants)
        keys = {key for key, _ in self.tracking}
        if any(key.startswith("utm_") for key in keys):
            kinds.add(Variant.UTM)
        if "fbclid" in keys:
            kinds.add(Variant.FBCLID)
        if "gclid" in keys:
            kinds.add(Variant.GCLID)
        if self.fragment:
            kinds.add(Variant.FRAGMENT)
        return frozenset(kinds or {Variant.PLAIN})


def _link(
    path: str,
    text: str,
    *variants: Variant,
    params: Iterable[tuple[str, str]] = (),
    tracking: Iterable[tuple[str, str]] = (),
    fragment: str = "",
    relative: str | None = None,
) -> _Link:
    return _Link(
        path=path,
        text=text,
        variants=frozenset(variants),
        params=tuple(params),
        tracking=tuple(tracking),
        fragment=fragment,
        relative=relative,
    )


def _external(url: str, text: str) -> _Link:
    return _Link(path=url, text=text, relative=url)


def _utm(source: str = "newsletter", medium: str = "email") -> tuple[tuple[str, str], ...]:
    return (("utm_source", source), ("utm_medium", medium))


FBCLID = (("fbclid", FBCLID_VALUE),)
GCLID = (("gclid", GCLID_VALUE),)


class _ViewCounter:
    """Stands for the view counter, which depends on the exact request target."""


_VIEWS = _ViewCounter()


@dataclass(frozen=True)
class _Address:
    """Stands for the absolute URL of ``path``, spelled with the site's current host and port.

    It is text, not a link: a crawler follows nothing from it.
    """

    path: str


_Chunk: TypeAlias = "str | _Link | _ViewCounter | _Address"


@dataclass
class _Page:
    resource_id: str
    content_type: str
    chunks: list[_Chunk] = field(default_factory=list)
    data: bytes = b""


def mixed_case_host(host: str) -> str:
    """Spell ``host`` with the first and the middle letter of each label upper-cased.

    >>> mixed_case_host("localhost")
    'LocalHost'
    """
    labels: list[str] = []
    for label in host.split("."):
        middle = (len(label) + 1) // 2
        labels.append(
            label[:1].upper()
            + label[1:middle]
            + label[middle : middle + 1].upper()
            + label[middle + 1 :]
        )
    return ".".join(labels)


class _HrefCollector(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.hrefs: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "a":
            href = dict(attrs).get("href")
            if href is not None:
                self.hrefs.append(href)


def extract_hrefs(document: str) -> list[str]:
    """Return the ``href`` of every ``<a>`` in ``document``, in order, entities decoded."""
    collector = _HrefCollector()
    collector.feed(document)
    collector.close()
    return collector.hrefs


class DemoSite:
    """The demo site: pages, redirects, near-duplicate copies, and the routing between them.

    Build it with :func:`build_site`. ``port`` may be changed at any time (a server binds port 0
    first and sets the real port afterwards): absolute hrefs are rendered with the current
    ``host`` and ``port`` on every call.
    """

    def __init__(
        self,
        *,
        host: str,
        port: int,
        seed: int,
        pages: dict[str, _Page],
        directories: frozenset[str],
        redirects: dict[str, str],
        near_duplicates: dict[str, str],
        articles: tuple[Article, ...],
    ) -> None:
        self.host = host
        self.port = port
        self.seed = seed
        self.articles = articles
        self._pages = pages
        self._directories = directories
        self._redirects = redirects
        self._near_duplicates = near_duplicates
        self._resources: frozenset[str] | None = None

    # -- addresses ---------------------------------------------------------------------------

    @property
    def netloc(self) -> str:
        """``host:port`` as absolute links spell it (no port when it is 0 or 80)."""
        return self.host if self.port in (0, 80) else f"{self.host}:{self.port}"

    @property
    def base_url(self) -> str:
        """The URL of the home page, e.g. ``http://localhost:8080/``."""
        return f"http://{self.netloc}/"

    def url(self, path_and_query: str) -> str:
        """The absolute URL of ``path_and_query`` on this site."""
        return urljoin(self.base_url, path_and_query)

    # -- model for tests ---------------------------------------------------------------------

    @property
    def redirects(self) -> dict[str, str]:
        """Redirecting paths: source path -> target path (each answers ``301``)."""
        return dict(self._redirects)

    @property
    def near_duplicates(self) -> dict[str, str]:
        """Printer-friendly, mirrored and lightweight copies: copy path -> original article
        path.

        A copy is linked only from its original article. A printer-friendly copy adds one
        line to the article's text (``Printed on ... from <the article's URL>``); a mirror
        adds an advertisement and a credit line; a lightweight copy has the same text.
        """
        return dict(self._near_duplicates)

    @property
    def listing_pages(self) -> tuple[str, ...]:
        """Resource ids of the index pages (``/articles?page=N&sort=new``), in page order.

        They share their boilerplate and the shape of every entry, but list different
        articles: distinct documents, not copies of each other.
        """
        count = max(article.listing_page for article in self.articles)
        return tuple(_listing_path(number) for number in range(1, count + 1))

    @property
    def resources(self) -> frozenset[str]:
        """Ids of every resource reachable from ``/`` by following links and redirects.

        Links to other hosts are not followed; 404s are not resources. Every id is the
        resource's canonical path-and-query, so ``resolve(resource_id)`` serves that resource.
        """
        if self._resources is None:
            self._resources = frozenset(self._reachable())
        return self._resources

    def links_on(self, path_and_query: str) -> list[str]:
        """The hrefs of every ``<a>`` on the page at ``path_and_query``, exactly as written.

        Returns ``[]`` for anything but a ``200`` HTML page (redirects, 404s, files): a crawler
        follows no links from those.
        """
        resolution = self.resolve(path_and_query)
        if resolution.resource_id is None or not resolution.is_html:
            return []
        page = self._pages[resolution.resource_id]
        return [self._href(chunk) for chunk in page.chunks if isinstance(chunk, _Link)]

    def variant_links(self) -> dict[Variant, frozenset[str]]:
        """For each variant kind, the distinct URLs on this site that links of that kind name.

        Relative hrefs are resolved against the canonical URL of the page carrying them;
        fragments are kept, so ``#comments`` links count. Links to other hosts are left out.
        """
        found: dict[Variant, set[str]] = {kind: set() for kind in Variant}
        for resource_id, page in self._pages.items():
            for chunk in page.chunks:
                if not isinstance(chunk, _Link):
                    continue
                target = urljoin(self.url(resource_id), self._href(chunk))
                if self._is_own(target):
                    for kind in chunk.kinds():
                        found[kind].add(target)
        return {kind: frozenset(urls) for kind, urls in found.items()}

    # -- routing -----------------------------------------------------------------------------

    def resolve(self, path_and_query: str) -> Resolution:
        """Answer a request for ``path_and_query`` (a request target such as ``/a?b=c``).

        - ``;jsessionid=...`` path parameters are ignored, in any segment, in any case;
        - query parameters a resource does not use (tracking parameters...) are ignored; the
          listing uses ``page`` (1 to the last page) and ``sort`` (only ``new``), in any order;
        - a page that lives without a trailing slash is served with one too;
        - a directory page requested without its slash, and a retired path, answer ``301``
          with a relative ``Location`` that keeps the query string;
        - anything else is a ``404`` HTML page; a fragment, if sent, is ignored.

        The same target always gets the same bytes. Targets naming the same resource get the
        same page, except for its view counter.
        """
        raw_path, _, query = path_and_query.partition("#")[0].partition("?")
        path = unquote(re.sub(r";jsessionid=[^/]*", "", raw_path, flags=re.IGNORECASE)) or "/"
        if path in self._redirects:
            return self._redirect(self._redirects[path] + (f"?{query}" if query else ""))
        if path != "/" and path.endswith("/") and path not in self._directories:
            path = path.rstrip("/") or "/"
        if path == "/articles":
            resource_id = self._listing_id(query)
        elif path in self._pages and "?" not in path:
            resource_id = path
        else:
            resource_id = None
        if resource_id is None:
            return self._not_found(path_and_query)
        page = self._pages[resource_id]
        return Resolution(
            status=200,
            headers={"Content-Type": page.content_type},
            body=page.data or self._render(page, path_and_query),
            resource_id=resource_id,
        )

    def _listing_id(self, query: str) -> str | None:
        params: dict[str, str] = {}
        for key, value in parse_qsl(query, keep_blank_values=True):
            params.setdefault(key, value)
        page, sort = params.get("page", "1"), params.get("sort", "new")
        if sort != "new" or not page.isdigit():
            return None
        resource_id = _listing_path(int(page))
        return resource_id if resource_id in self._pages else None

    def _redirect(self, location: str) -> Resolution:
        target = html.escape(location)
        body = (
            "<!DOCTYPE html>\n<html><head><title>Moved Permanently</title></head>"
            f'<body><p>This page has moved to <a href="{target}">{target}</a>.</p></body></html>\n'
        )
        return Resolution(
            status=301,
            headers={"Content-Type": HTML_TYPE, "Location": location},
            body=body.encode("utf-8"),
            resource_id=None,
            location=location,
        )

    def _not_found(self, path_and_query: str) -> Resolution:
        body = (
            '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
            f"<title>Page not found | {SITE_NAME}</title></head><body><h1>Page not found</h1>"
            f"<p>Nothing lives at <code>{html.escape(path_and_query)}</code>. "
            "It may have been moved or deleted.</p></body></html>\n"
        )
        return Resolution(
            status=404,
            headers={"Content-Type": HTML_TYPE},
            body=body.encode("utf-8"),
            resource_id=None,
        )

    # -- rendering ---------------------------------------------------------------------------

    def _href(self, link: _Link) -> str:
        if link.relative is not None:
            return link.relative
        path = link.path
        if Variant.TRAILING_SLASH in link.variants:
            path += "/"
        if Variant.SESSION_ID in link.variants:
            path += f";jsessionid={SESSION_TOKEN}"
        params = list(link.params)
        if Variant.QUERY_ORDER in link.variants:
            params.reverse()
        query = urlencode(params + list(link.tracking))
        href = (
            path + (f"?{query}" if query else "") + (f"#{link.fragment}" if link.fragment else "")
        )
        if Variant.HOST_CASE in link.variants:
            netloc = mixed_case_host(self.host) + self.netloc[len(self.host) :]
            return f"http://{netloc}{href}"
        if Variant.ABSOLUTE in link.variants:
            return f"http://{self.netloc}{href}"
        return href

    def _render(self, page: _Page, path_and_query: str) -> bytes:
        parts: list[str] = []
        for chunk in page.chunks:
            if isinstance(chunk, _Link):
                href, text = html.escape(self._href(chunk)), html.escape(chunk.text)
                parts.append(f'<a href="{href}">{text}</a>')
            elif isinstance(chunk, _ViewCounter):
                parts.append(f"{self._views(path_and_query)} views")
            elif isinstance(chunk, _Address):
                parts.append(html.escape(self.url(chunk.path)))
            else:
                parts.append(chunk)
        return "".join(parts).encode("utf-8")

    def _views(self, path_and_query: str) -> int:
        digest = hashlib.sha256(f"{self.seed}|{path_and_query}".encode()).digest()
        return 120 + int.from_bytes(digest[:4], "big") % 48000

    # -- reachability ------------------------------------------------------------------------

    def _reachable(self) -> Iterator[str]:
        queue = deque([self.base_url])
        visited = {_visit_key(self.base_url)}
        while queue:
            url = queue.popleft()
            parts = urlsplit(url)
            target = parts.path + (f"?{parts.query}" if parts.query else "")
            resolution = self.resolve(target)
            if resolution.location is not None:
                hrefs = [resolution.location]
            elif resolution.resource_id is not None:
                yield resolution.resource_id
                hrefs = self.links_on(target)
            else:
                hrefs = []
            for href in hrefs:
                next_url = urljoin(url, href)
                key = _visit_key(next_url)
                if self._is_own(next_url) and key not in visited:
                    visited.add(key)
                    queue.append(next_url)

    def _is_own(self, url: str) -> bool:
        parts = urlsplit(url)
        return parts.scheme == "http" and parts.netloc.lower() == self.netloc.lower()


def _visit_key(url: str) -> str:
    parts = urlsplit(url)
    return parts._replace(netloc=parts.netloc.lower(), fragment="").geturl()


def _listing_path(page: int) -> str:
    return f"/articles?page={page}&sort=new"


def _listing_link(page: int, text: str, *variants: Variant) -> _Link:
    params = (("page", str(page)), ("sort", "new"))
    return _link("/articles", text, *variants, params=params)


# -- prose ------------------------------------------------------------------------------------


def _words(text: str) -> tuple[str, ...]:
    return tuple(text.split())


NOUNS = _words(
    "analysis archive audience balance bridge budget canal career ceremony channel chapter "
    "circuit coalition committee community compass concert corridor council courtyard craft "
    "crew current customer dashboard deadline debate decade delivery district draft engine "
    "estimate evening exhibit factory festival field forecast formula foundation framework "
    "gallery garden generation habit harbor harvest highway horizon household incident index "
    "initiative inventory island journey junction kitchen ladder landmark lantern lecture "
    "ledger library lighthouse margin market meadow measure memory method migration milestone "
    "mission moment neighborhood network notebook observatory orchard orchestra outline "
    "package pattern pavilion pipeline platform policy portfolio prototype puzzle quarter "
    "question railway recipe record region rehearsal reservoir ritual river routine schedule "
    "season sequence shelter signal sketch skyline solution spreadsheet square stadium station "
    "strategy studio summit survey symphony system tactic terminal theory threshold timeline "
    "tradition tunnel valley venture village voyage warehouse window workshop yard"
)

VERBS = _words(
    "accelerates adjusts anchors balances borrows captures challenges clarifies collects "
    "combines compresses connects considers delays delivers describes divides doubles drafts "
    "echoes expands explains exposes favors filters follows gathers guides handles highlights "
    "ignores improves inspires invites joins launches limits maps measures mirrors moves "
    "narrows nudges outlines outpaces preserves predicts questions raises reaches rebuilds "
    "records reduces reframes rejects renews reshapes reveals revisits rewards sharpens shifts "
    "simplifies slows sorts sparks splits steadies strengthens supports surprises tests tracks "
    "transforms trims uncovers unlocks updates weighs widens"
)

ADJECTIVES = _words(
    "ambitious ancient awkward brisk careful cautious cheerful clever compact complex crowded "
    "curious daring delicate dense distant durable eager early elaborate elegant familiar "
    "fragile frequent generous gentle gradual hidden honest humble idle intricate lasting "
    "lively local loyal massive modest narrow nimble noisy obscure ordinary patient peculiar "
    "plain practical precise quiet rapid rare reliable remote restless robust rough rural "
    "seasonal serene shallow sharp silent simple sizable sleek slow smooth sober spare stable "
    "steady sturdy subtle sudden swift tangled tentative thorough tidy timely uneven unusual "
    "urban vast vibrant vivid weathered wide wiry youthful"
)

ADVERBS = _words(
    "briefly carefully clearly closely eventually finally frankly gradually largely lately "
    "mostly narrowly notably openly partly plainly possibly quickly quietly rarely recently "
    "roughly sharply simply slowly steadily suddenly surely typically usually"
)

PEOPLE = _words(
    "residents engineers volunteers editors farmers researchers commuters students coaches "
    "analysts musicians gardeners teachers shopkeepers planners historians nurses pilots chefs "
    "developers"
)

ROLES = _words(
    "engineer volunteer editor farmer researcher commuter student coach analyst musician "
    "gardener teacher shopkeeper planner historian nurse pilot chef developer"
)

PLACES = _words(
    "Ashford Brightwater Calderpoint Dunmore Elmhollow Fairhaven Glenrock Harrowbay "
    "Ironbridge Juniperfalls Kestrelridge Larkspur Millbrook Northgate Oakmere Pinecrest "
    "Quarryhill Redfield Stonebury Thornwick Uptonmarsh Valewood Westmoor Yarrowglen"
)

FIRST_NAMES = _words(
    "Amara Bruno Celia Dmitri Elena Farid Greta Hugo Ines Jonas Keiko Lars Mina Nadia Oscar "
    "Priya Quentin Rosa Soren Talia Umar Vera Wendel Ximena Yusuf Zora"
)

LAST_NAMES = _words(
    "Abernathy Bellweather Castellan Draycott Everly Fairbanks Galloway Hartwell Iverson "
    "Jessup Kowalczyk Lindqvist Marchetti Nakamura Okonkwo Pellegrino Quist Rasmussen "
    "Santorini Thistlewood Underhill Valdivia Whitcombe Yamamoto Zeller"
)

MONTHS = _words(
    "January February March April May June July August September October November December"
)

TOPICS: dict[str, tuple[str, ...]] = {
    "Transit": _words(
        "tram ferry timetable fare depot commute railcar bus lane interchange viaduct ticket "
        "gate conductor shuttle"
    ),
    "Gardening": _words(
        "compost seedling trellis greenhouse mulch perennial hedge allotment cutting "
        "pollinator soil bulb pruning orchard"
    ),
    "Astronomy": _words(
        "telescope comet nebula eclipse orbit meteor constellation satellite planetarium "
        "aurora galaxy lens equinox"
    ),
    "Food": _words(
        "bakery sourdough spice broth noodle pastry vineyard harvest cheese ferment oven menu apron"
    ),
    "Finance": _words(
        "interest dividend mortgage savings tariff invoice auditor bond pension inflation "
        "ledger loan currency"
    ),
    "Climate": _words(
        "drought glacier flood monsoon wildfire emission heatwave wetland coastline rainfall "
        "carbon storm tide"
    ),
    "Sport": _words(
        "marathon referee stadium sprint league goalkeeper relay tournament coach scoreboard "
        "dugout rowing cyclist"
    ),
    "Music": _words(
        "cello chorus vinyl rehearsal conductor melody drummer festival ballad quartet "
        "soundcheck encore harmony"
    ),
    "Health": _words(
        "clinic vaccine pharmacy therapy ward sleep nutrition midwife screening ambulance "
        "clinician posture fitness"
    ),
    "Education": _words(
        "classroom curriculum tutor semester exam scholarship campus syllabus playground "
        "graduate homework lecture literacy"
    ),
    "Software": _words(
        "compiler release patch crawler scheduler cache parser bug plugin terminal benchmark "
        "repository changelog"
    ),
    "Heritage": _words(
        "museum manuscript castle mosaic archive fresco chapel monument ruin curator tapestry "
        "excavation artifact"
    ),
}

SENTENCES = (
    "The {adj} {noun} {adv} {verb} the {adj2} {topic}.",
    "{People} in {place} say the {topic} {verb} every {noun} it touches.",
    "According to {people}, {a_adj} {topic} rarely {verb} the {noun} on its own.",
    "{Adv}, the {noun} of {place} {verb} {a_adj} {topic} and {verb2} the {noun2}.",
    "What {verb} the {topic} is not the {noun} but the {adj} {noun2} behind it.",
    "For {people}, the question is whether the {adj} {topic} still {verb} the {noun}.",
    "In {month}, the {topic} {verb} the {adj} {noun} for the first time since {year}.",
    "Each {noun} {verb} {a_adj} {topic}, and each {topic2} {verb2} {a_adj2} {noun2}.",
    "The {topic} {verb} {number} {people}, {adv} more than the {noun} of {place}.",
    '"The {topic} {verb} the {noun}," said {name}, {a_adj} {role} from {place}.',
    "Critics argue that the {adj} {noun} {adv} {verb} the {topic} instead.",
    "That {verb} {a_adj} {noun}, which in turn {verb2} the {topic} near {place}.",
    "Nobody in {place} expected {a_topic} so {adj} to matter this much to {people}.",
    "Still, the {adj} {topic2} {verb} the {noun} while the {noun2} {verb2} {adv}.",
    "{name} has watched the {topic} for {number} seasons and calls it {adj}.",
)

TITLES = (
    "How the {adj} {topic} {verb} {place}",
    "{Adj} {topic}: what the {noun} tells us",
    "The {adj} {topic} nobody in {place} expected",
    "Inside the {topic} {noun} of {place}",
    "Why {people} keep returning to the {adj} {topic}",
    "{A_adj} {noun} for the {topic} in {place}",
)


def _with_article(word: str) -> str:
    return f"an {word}" if word[0] in "aeiou" else f"a {word}"


def _fill(rng: random.Random, template: str, topic_words: tuple[str, ...]) -> str:
    adjective, adjective2 = rng.choice(ADJECTIVES), rng.choice(ADJECTIVES)
    adverb, people, topic = rng.choice(ADVERBS), rng.choice(PEOPLE), rng.choice(topic_words)
    return template.format(
        adj=adjective,
        Adj=adjective.capitalize(),
        a_adj=_with_article(adjective),
        A_adj=_with_article(adjective).capitalize(),
        adj2=adjective2,
        a_adj2=_with_article(adjective2),
        noun=rng.choice(NOUNS),
        noun2=rng.choice(NOUNS),
        verb=rng.choice(VERBS),
        verb2=rng.choice(VERBS),
        adv=adverb,
        Adv=adverb.capitalize(),
        topic=topic,
        a_topic=_with_article(topic),
        topic2=rng.choice(topic_words),
        people=people,
        People=people.capitalize(),
        place=rng.choice(PLACES),
        month=rng.choice(MONTHS),
        year=rng.randint(1962, 2021),
        number=rng.randint(3, 480),
        name=f"{rng.choice(FIRST_NAMES)} {rng.choice(LAST_NAMES)}",
        role=rng.choice(ROLES),
    )


def _prose(rng: random.Random, topic_words: tuple[str, ...], min_words: int) -> list[str]:
    """Paragraphs of 3 to 6 sentences, ending with the sentence that reaches ``min_words``."""
    paragraphs: list[str] = []
    words = 0
    while words < min_words:
        sentences: list[str] = []
        for _ in range(rng.randint(3, 6)):
            sentences.append(_fill(rng, rng.choice(SENTENCES), topic_words))
            words += len(sentences[-1].split())
            if words >= min_words:
                break
        paragraphs.append(" ".join(sentences))
    return paragraphs


def _slugify(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def _make_articles(count: int, seed: int, listing_size: int) -> tuple[Article, ...]:
    sections = list(TOPICS)
    articles: list[Article] = []
    slugs = {"deleted-story"}
    published = date(2024, 6, 28)
    for index in range(count):
        rng = random.Random(f"{seed}:article:{index}")
        section = sections[(index * 5 + seed) % len(sections)]
        topic_words = TOPICS[section]
        title = _fill(rng, rng.choice(TITLES), topic_words)
        slug = _slugify(title)
        if slug in slugs:
            slug = f"{slug}-{index}"
        slugs.add(slug)
        articles.append(
            Article(
                index=index,
                slug=slug,
                title=title,
                author=f"{rng.choice(FIRST_NAMES)} {rng.choice(LAST_NAMES)}",
                published=published,
                section=section,
                paragraphs=tuple(_prose(rng, topic_words, rng.randint(300, 520))),
                comments=rng.randint(0, 48),
                listing_size=listing_size,
            )
        )
        published -= timedelta(days=rng.randint(1, 4))
    return tuple(articles)


# -- files ------------------------------------------------------------------------------------


def _png_bytes() -> bytes:
    """A real 32x32 RGB PNG: an orange disc on a dark blue square."""
    size = 32
    rows = bytearray()
    for y in range(size):
        rows.append(0)  # scanline filter type: None
        for x in range(size):
            inside = (x - 15.5) ** 2 + (y - 15.5) ** 2 <= 121
            rows.extend((240, 150, 40) if inside else (20, 30, 70))

    def chunk(kind: bytes, data: bytes) -> bytes:
        checksum = zlib.crc32(kind + data) & 0xFFFFFFFF
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", checksum)

    header = struct.pack(">IIBBBBB", size, size, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(bytes(rows), 9))
        + chunk(b"IEND", b"")
    )


def _pdf_bytes(title: str) -> bytes:
    """A small, valid, one-page PDF showing ``title`` (ASCII without parentheses)."""
    stream = f"BT /F1 18 Tf 72 720 Td ({title}) Tj ET".encode("ascii")
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] "
        b"/Contents 4 0 R /Resources << /Font << /F1 5 0 R >> >> >>",
        b"<< /Length %d >>\nstream\n%s\nendstream" % (len(stream), stream),
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    out = bytearray(b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n%s\nendobj\n" % (number, body)
    xref_at = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    for offset in offsets:
        out += b"%010d 00000 n \n" % offset
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\n" % (len(objects) + 1)
    out += b"startxref\n%d\n%%%%EOF\n" % xref_at
    return bytes(out)


# -- templates --------------------------------------------------------------------------------

STYLE = (
    "<style>body{font-family:Georgia,serif;margin:0;color:#222}"
    "header,footer{background:#1b2a4a;color:#f4f1ea;padding:.8em 2em}"
    "header a,footer a{color:#f6b756;margin-right:1em}"
    "main{display:flex;gap:2em;padding:1em 2em}article{flex:3}aside{flex:1;font-size:.9em}"
    ".meta{color:#666;font-size:.85em}</style>"
)

PARTNER_STYLE = (
    "<style>body{font-family:Helvetica,Arial,sans-serif;margin:2em auto;max-width:46em}"
    ".partner-bar{border-bottom:3px solid #7a1f3d;padding-bottom:.5em}"
    ".ad{background:#fff6d8;padding:.6em;margin:1.2em 0}</style>"
)

ADS = (
    "Advertisement. Upgrade your kitchen with the Harbor Line cast iron range, now twenty "
    "percent off at participating stores this weekend only.",
    "Advertisement. Fly direct to the coast with Meridian Air and earn double points on every "
    "booking made before the end of the month.",
    "Advertisement. The Pinecrest Savings account pays a generous rate with no monthly fees, "
    "and opening one takes five minutes online.",
)


def _document_head(title: str, style: str) -> str:
    return (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>{html.escape(title)}</title>\n{style}\n</head>\n<body>\n"
    )


def _separated(chunks: list[_Chunk], separator: str) -> list[_Chunk]:
    separated: list[_Chunk] = []
    for chunk in chunks:
        separated += [separator, chunk] if separated else [chunk]
    return separated


def _paragraphs(paragraphs: Iterable[str]) -> list[_Chunk]:
    return [f"<p>{html.escape(paragraph)}</p>\n" for paragraph in paragraphs]


def _first_sentence(paragraph: str) -> str:
    end = paragraph.find(". ")
    return paragraph if end < 0 else paragraph[: end + 1]


def _long_date(day: date) -> str:
    return f"{MONTHS[day.month - 1]} {day.day}, {day.year}"


def _day_month_year(day: date) -> str:
    return f"{day.day} {MONTHS[day.month - 1]} {day.year}"


def _copy_paths(article: Article) -> list[str]:
    """The paths of *article*'s copies on the site (see :attr:`DemoSite.near_duplicates`)."""
    paths = []
    if article.index % 4 == 1:
        paths.append(f"{article.path}/print")
    if article.index % 5 == 2:
        paths.append(f"/mirror/{article.slug}")
    if article.index % 6 == 3:
        paths.append(f"/amp{article.path}")
    return paths


class _SiteBuilder:
    """Generates every page of the site from the article count and the seed."""

    def __init__(
        self,
        article_count: int,
        seed: int,
        *,
        copies_first: bool = False,
        listing_size: int = LISTING_PAGE_SIZE,
    ) -> None:
        self.seed = seed
        self.copies_first = copies_first
        self.listing_size = listing_size
        self.articles = _make_articles(article_count, seed, listing_size)
        self.listing_pages = -(-article_count // listing_size)
        self.pages: dict[str, _Page] = {}
        self.near_duplicates: dict[str, str] = {}
        self.redirects = {"/docs": "/docs/", "/guides": "/guides/", "/old-home": "/"}
        self.directories = frozenset({"/docs/", "/guides/"})

    def article(self, index: int) -> Article:
        """The article at ``index``, or the last one when there are fewer."""
        return self.articles[min(index, len(self.articles) - 1)]

    def prose(self, name: str, topic: str, min_words: int) -> list[_Chunk]:
        rng = random.Random(f"{self.seed}:{name}")
        return _paragraphs(_prose(rng, TOPICS[topic], min_words))

    def build(self, host: str, port: int) -> DemoSite:
        self.add_home()
        for number in range(1, self.listing_pages + 1):
            self.add_listing(number)
        for article in self.articles:
            self.add_article(article)
            if article.index % 4 == 1:
                self.add_print_copy(article)
            if article.index % 5 == 2:
                self.add_mirror_copy(article)
            if article.index % 6 == 3:
                self.add_lightweight_copy(article)
        self.add_about()
        self.add_contact()
        self.add_docs()
        self.add_guides()
        report = _pdf_bytes(f"{SITE_NAME} annual report 2024")
        self.pages["/files/report-2024.pdf"] = _Page(
            "/files/report-2024.pdf", PDF_TYPE, data=report
        )
        self.pages["/img/logo.png"] = _Page("/img/logo.png", PNG_TYPE, data=_png_bytes())
        return DemoSite(
            host=host,
            port=port,
            seed=self.seed,
            pages=self.pages,
            directories=self.directories,
            redirects=self.redirects,
            near_duplicates=self.near_duplicates,
            articles=self.articles,
        )

    # -- the shared template -----------------------------------------------------------------

    def header(self) -> list[_Chunk]:
        return [
            '<header>\n<img src="/img/logo.png" alt="" width="32" height="32">\n'
            f"<strong>{SITE_NAME}</strong>\n<nav>",
            *_separated(
                [
                    _link("/", "Home"),
                    _listing_link(1, "Articles"),
                    _link("/docs/", "Docs"),
                    _link("/guides/", "Guides"),
                    _link("/about", "About"),
                    _link("/contact", "Contact"),
                ],
                "\n",
            ),
            "</nav>\n</header>\n<main>\n",
        ]

    def sidebar(self) -> list[_Chunk]:
        first, second, third = self.article(0), self.article(1), self.article(2)
        return [
            "<aside>\n<h2>Latest</h2>\n<ul>\n<li>",
            _link(first.path, first.title, Variant.ABSOLUTE),
            "</li>\n<li>",
            _link(second.path, second.title, fragment="comments"),
            "</li>\n<li>",
            _link(third.path, third.title),
            "</li>\n</ul>\n<h2>Sections</h2>\n<ul>\n<li>",
            _link("/docs/", "Documentation"),
            "</li>\n<li>",
            _link("/guides", "Guides"),
            "</li>\n</ul>\n<h2>Newsletter</h2>\n<p>",
            _link("/contact", "Sign up for the weekly letter", tracking=_utm("sidebar", "web")),
            "</p>\n</aside>\n</main>\n",
        ]

    def footer(self) -> list[_Chunk]:
        return [
            f"<footer>\n<p>&copy; 2024 {SITE_NAME}.\n",
            *_separated(
                [
                    _link("/about", "About us"),
                    _link("/contact", "Contact", Variant.HOST_CASE),
                    _link("/docs", "Documentation"),
                    _link("/old-home", "Classic home page"),
                    _external("https://www.example.org/partners", "Our partners"),
                ],
                " &middot;\n",
            ),
            "</p>\n</footer>\n</body>\n</html>\n",
        ]

    def full_page(self, resource_id: str, title: str, body: list[_Chunk]) -> None:
        """Add a page on the site's own template: header, main column, sidebar, footer."""
        self.pages[resource_id] = _Page(
            resource_id,
            HTML_TYPE,
            [
                _document_head(f"{title} | {SITE_NAME}", STYLE),
                *self.header(),
                "<article>\n",
                *body,
                "</article>\n",
                *self.sidebar(),
                *self.footer(),
            ],
        )

    # -- pages -------------------------------------------------------------------------------

    def add_home(self) -> None:
        body: list[_Chunk] = [f"<h1>Today at {SITE_NAME}</h1>\n"]
        body += self.prose("home", "Heritage", 60)
        if self.copies_first:
            body.append("<h2>Print, partner and lightweight editions</h2>\n<ul>\n")
            for article in self.articles:
                for path in _copy_paths(article):
                    body += ["<li>", _link(path, f"{article.title} ({path})"), "</li>\n"]
            body.append("</ul>\n")
        body.append("<h2>Featured</h2>\n<ul>\n")
        for article in self.articles[: self.listing_size]:
            body += ["<li>", _link(article.path, article.title), "</li>\n"]
        newsletter, trending, sponsored = self.article(3), self.article(4), self.article(5)
        body += [
            "</ul>\n<h2>From the newsletter</h2>\n<p>",
            _link(newsletter.path, newsletter.title, tracking=_utm()),
            "</p>\n<h2>Trending on social media</h2>\n<p>",
            _link(trending.path, trending.title, tracking=FBCLID),
            "</p>\n<h2>Sponsored</h2>\n<p>",
            _link(sponsored.path, sponsored.title, tracking=GCLID),
            "</p>\n<p>",
            _listing_link(1, "All articles", Variant.QUERY_ORDER),
            " &middot; ",
            _link("/files/report-2024.pdf", "Annual report 2024 (PDF)"),
            " &middot; ",
            _link("/guides/first-crawl", "New here? Start with a guide", Variant.ABSOLUTE),
            "</p>\n",
        ]
        self.full_page("/", "Home", body)

    def add_listing(self, number: int) -> None:
        """A page of the chronological index: ``listing_size`` entries, each a headline
        linking to the article, its date, author and opening sentence, and the same
        boilerplate on every page."""
        first = (number - 1) * self.listing_size
        listed = self.articles[first : first + self.listing_size]
        title = f"All articles, page {number} of {self.listing_pages}"
        body: list[_Chunk] = [
            f"<h1>{title}</h1>\n"
            f'<p class="intro">Every story published in {SITE_NAME}, newest first, '
            f"{self.listing_size} to a page. Each entry gives the headline, the date, the author "
            "and the opening sentence; follow Read more for the whole story.</p>\n"
            f'<p class="range">Stories {first + 1} to {first + len(listed)} of '
            f"{len(self.articles)}, published from {_day_month_year(listed[-1].published)} "
            f"to {_day_month_year(listed[0].published)}.</p>\n"
        ]
        for article in listed:
            body += [
                '<section class="teaser">\n<h2>',
                self.teaser_title(article),
                f'</h2>\n<p class="meta">{_long_date(article.published)} &middot; '
                f"By {html.escape(article.author)} &middot; ",
                _link(article.path, f"{article.comments} comments", fragment="comments"),
                f"</p>\n<p>{html.escape(_first_sentence(article.paragraphs[0]))}</p>\n"
                '<p class="more">',
                _link(article.path, "Read more"),
                f" (in section {article.section})</p>\n</section>\n",
            ]
        body.append(f'<nav class="pagination">Page {number} of {self.listing_pages}: ')
        if number == 3:
            body.append(_listing_link(2, "Previous", Variant.HOST_CASE, Variant.QUERY_ORDER))
        elif number > 1:
            query = f"?page={number - 1}&sort=new"
            body.append(_link("/articles", "Previous", Variant.RELATIVE, relative=query))
        if number < self.listing_pages:
            order = (Variant.QUERY_ORDER,) if number % 2 == 0 else ()
            body.append(_listing_link(number + 1, "Next", *order))
        body.append("</nav>\n")
        self.full_page(_listing_path(number), title, body)

    def teaser_title(self, article: Article) -> _Link:
        """The title link of a listing teaser: its spelling rotates through the variants."""
        rotation = article.index % 6
        if rotation == 0:
            return _link(article.path, article.title, Variant.RELATIVE, relative=article.path[1:])
        if rotation == 1:
            return _link(article.path, article.title, tracking=_utm())
        if rotation == 2:
            return _link(article.path, article.title, Variant.TRAILING_SLASH)
        if rotation == 3:
            return _link(article.path, article.title, Variant.SESSION_ID)
        if rotation == 4:
            return _link(article.path, article.title, tracking=FBCLID)
        return _link(article.path, article.title, Variant.ABSOLUTE)

    def related_link(self, article: Article) -> list[_Chunk]:
        """A link to the next article listed on the same listing page, if there is one."""
        first = (article.listing_page - 1) * self.listing_size
        group = self.articles[first : first + self.listing_size]
        if len(group) < 2:
            return []
        related = group[(article.index - first + 1) % len(group)]
        rotation = article.index % 4
        if rotation == 0:
            link = _link(related.path, related.title, Variant.TRAILING_SLASH)
        elif rotation == 1:
            link = _link(related.path, related.title, tracking=GCLID)
        elif rotation == 2:
            link = _link(related.path, related.title)
        else:
            link = _link(related.path, related.title, Variant.HOST_CASE)
        return ['<p class="related">Related: ', link, "</p>\n"]

    def add_article(self, article: Article) -> None:
        published = article.published
        body: list[_Chunk] = [
            '<nav class="breadcrumb">',
            _link("/", "Home"),
            " / ",
            _listing_link(article.listing_page, article.section),
            f"</nav>\n<h1>{html.escape(article.title)}</h1>\n",
            f'<p class="meta">By {html.escape(article.author)} &middot; '
            f'<time datetime="{published.isoformat()}">{_long_date(published)}</time> &middot; ',
            _VIEWS,
            " &middot; ",
            _link(
                article.path,
                f"{article.comments} comments",
                Variant.RELATIVE,
                fragment="comments",
                relative="#comments",
            ),
            "</p>\n",
            *_paragraphs(article.paragraphs),
        ]
        tools: list[_Chunk] = []
        if article.index % 3 == 0:
            tools.append(_link(article.path, "Share", tracking=_utm("share", "social")))
        elif article.index % 3 == 1:
            tools.append(_link(article.path, "Permalink", Variant.SESSION_ID))
        if article.index % 4 == 1:
            tools.append(_link(f"{article.path}/print", "Print this article"))
        if article.index % 5 == 2:
            mirror = f"/mirror/{article.slug}"
            tools.append(_link(mirror, f"Read it on {PARTNER_NAME}", Variant.ABSOLUTE))
        if article.index % 6 == 3:
            tools.append(_link(f"/amp{article.path}", "Lightweight version"))
        body += ['<p class="tools">', *_separated(tools, " &middot; "), "</p>\n"]
        body += self.related_link(article)
        body += self.odd_links(article)
        # the comment widget fills this in with JavaScript
        body.append(f'<section id="comments" data-thread="{article.slug}"></section>\n')
        self.full_page(article.path, article.title, body)

    def odd_links(self, article: Article) -> list[_Chunk]:
        """Links a few articles carry: two broken ones, and the report with tracking."""
        chunks: list[_Chunk] = []
        if article is self.article(3):
            chunks += [
                '<p class="note">An earlier story on this ',
                _link("/articles/deleted-story", "was withdrawn"),
                ".</p>\n",
            ]
        if article is self.article(8):
            chunks += [
                '<p class="note">Background: ',
                _link("/files/brochure-2019.pdf", "our 2019 brochure (PDF)"),
                ".</p>\n",
            ]
        if article is self.article(10):
            chunks += [
                '<p class="note">Figures come from the ',
                _link("/files/report-2024.pdf", "annual report", tracking=_utm("article", "web")),
                ".</p>\n",
            ]
        return chunks

    def add_print_copy(self, article: Article) -> None:
        path = f"{article.path}/print"
        title = html.escape(article.title)
        self.pages[path] = _Page(
            path,
            HTML_TYPE,
            [
                _document_head(f"{article.title} (print)", ""),
                f'<article>\n<p class="printed">Printed on {self.print_time(article)} from ',
                _Address(article.path),
                f"</p>\n<h1>{title}</h1>\n",
                *_paragraphs(article.paragraphs),
                f"</article>\n<p>By {html.escape(article.author)}, {_long_date(article.published)}."
                f" Printed from {SITE_NAME}. ",
                _link(article.path, "Back to the article"),
                "</p>\n</body>\n</html>\n",
            ],
        )
        self.near_duplicates[path] = article.path

    def add_lightweight_copy(self, article: Article) -> None:
        """The article on a stripped-down mobile template (as AMP pages are): other markup
        around the very same headline and paragraphs, an exact copy of its text."""
        path = f"/amp{article.path}"
        self.pages[path] = _Page(
            path,
            HTML_TYPE,
            [
                _document_head(f"{article.title} | {SITE_NAME} Lite", ""),
                '<header class="lite">',
                _link("/", SITE_NAME),
                f"</header>\n<article>\n<h1>{html.escape(article.title)}</h1>\n",
                *_paragraphs(article.paragraphs),
                '</article>\n<footer class="lite">',
                _link(article.path, "Full version"),
                "</footer>\n</body>\n</html>\n",
            ],
        )
        self.near_duplicates[path] = article.path

    def print_time(self, article: Article) -> str:
        """When the printer-friendly copy of ``article`` says it was printed, e.g.
        ``12 March 2024 at 14:05 UTC``: a time in the weeks after publication, from the seed."""
        rng = random.Random(f"{self.seed}:print:{article.index}")
        printed = article.published + timedelta(days=rng.randint(0, 40))
        hour, minute = rng.randrange(24), rng.randrange(60)
        return f"{_day_month_year(printed)} at {hour:02d}:{minute:02d} UTC"

    def add_mirror_copy(self, article: Article) -> None:
        path = f"/mirror/{article.slug}"
        paragraphs = _paragraphs(article.paragraphs)
        middle = max(1, len(paragraphs) // 2)
        ad_link = f"https://ads.example.net/click?campaign={article.index}"
        self.pages[path] = _Page(
            path,
            HTML_TYPE,
            [
                _document_head(f"{article.title} | {PARTNER_NAME}", PARTNER_STYLE),
                f'<div class="partner-bar"><b>{PARTNER_NAME}</b>: stories from the region. ',
                _link("/", "Home"),
                f"</div>\n<article>\n<h1>{html.escape(article.title)}</h1>\n",
                f'<p class="byline">{html.escape(article.author)} for {SITE_NAME} &middot; ',
                _VIEWS,
                "</p>\n",
                *paragraphs[:middle],
                f'<div class="ad">{html.escape(ADS[article.index % len(ADS)])} ',
                _external(ad_link, "Learn more"),
                "</div>\n",
                *paragraphs[middle:],
                f"<p><i>This story first appeared in {SITE_NAME}.</i></p>\n",
                '</article>\n<div class="partner-footer"><p>Syndicated with permission. ',
                _link(article.path, "Read the original", tracking=_utm("mirror", "referral")),
                f"</p><p>&copy; 2024 {PARTNER_NAME} Media Group.</p></div>\n</body>\n</html>\n",
            ],
        )
        self.near_duplicates[path] = article.path

    def add_about(self) -> None:
        body: list[_Chunk] = [f"<h1>About {SITE_NAME}</h1>\n"]
        body += self.prose("about", "Heritage", 90)
        body += [
            "<p>Press kit: ",
            _link("/img/logo.png", "our logo (PNG)"),
            ". Our accounts are public: ",
            _link("/files/report-2024.pdf", "annual report 2024", Variant.ABSOLUTE),
            '.</p>\n<h2 id="team">The team</h2>\n',
        ]
        body += self.prose("about:team", "Education", 40)
        self.full_page("/about", "About", body)

    def add_contact(self) -> None:
        body: list[_Chunk] = ["<h1>Contact</h1>\n"]
        body += self.prose("contact", "Education", 50)
        body += [
            "<p>Write to newsroom@lantern-gazette.example, or meet ",
            _link("/about", "the team", fragment="team"),
            ".</p>\n",
        ]
        self.full_page("/contact", "Contact", body)

    def add_docs(self) -> None:
        chapters = [("install", "Installation"), ("configuration", "Configuration"), ("faq", "FAQ")]
        body: list[_Chunk] = ["<h1>Documentation</h1>\n", *self.prose("docs", "Software", 60)]
        body.append("<ul>\n")
        for slug, title in chapters:
            body += [
                "<li>",
                _link(f"/docs/{slug}", title, Variant.RELATIVE, relative=slug),
                "</li>\n",
            ]
        body += [
            "</ul>\n<p>See also ",
            _link("/guides/", "the guides", Variant.RELATIVE, relative="../guides/"),
            ".</p>\n",
        ]
        self.full_page("/docs/", "Documentation", body)
        for position, (slug, title) in enumerate(chapters):
            body = [f'<h1>{title}</h1>\n<h2 id="settings">Overview</h2>\n']
            body += self.prose(f"docs:{slug}", "Software", 140)
            body += [
                "<p>",
                _link("/docs/", "Back to the documentation", Variant.RELATIVE, relative="./"),
            ]
            if position + 1 < len(chapters):
                following, following_title = chapters[position + 1]
                body += [
                    " &middot; Next: ",
                    _link(
                        f"/docs/{following}", following_title, Variant.RELATIVE, relative=following
                    ),
                ]
            body.append("</p>\n")
            self.full_page(f"/docs/{slug}", title, body)

    def add_guides(self) -> None:
        body: list[_Chunk] = ["<h1>Guides</h1>\n", *self.prose("guides", "Software", 50), "<ul>\n"]
        for slug, title in [("first-crawl", "Your first crawl"), ("deployment", "Deploying")]:
            body += [
                "<li>",
                _link(f"/guides/{slug}", title, Variant.RELATIVE, relative=slug),
                "</li>\n",
            ]
        body.append("</ul>\n")
        self.full_page("/guides/", "Guides", body)
        body = ["<h1>Your first crawl</h1>\n", *self.prose("guides:first-crawl", "Software", 160)]
        body += [
            "<p>Every option is described in ",
            _link("/docs/configuration", "the configuration chapter", fragment="settings"),
            ".</p>\n",
        ]
        self.full_page("/guides/first-crawl", "Your first crawl", body)
        body = ["<h1>Deploying a crawler</h1>\n", *self.prose("guides:deployment", "Software", 160)]
        body += [
            "<p>Stuck? Read ",
            _link("/docs/faq", "the FAQ", tracking=_utm("guides", "web")),
            ".</p>\n",
        ]
        self.full_page("/guides/deployment", "Deploying a crawler", body)


def build_site(
    host: str = "localhost",
    port: int = 0,
    articles: int = 24,
    seed: int = 7,
    *,
    copies_first: bool = False,
    listing_size: int = LISTING_PAGE_SIZE,
) -> DemoSite:
    """Generate the demo site.

    - The same arguments always give the same site, byte for byte, in any process.
    - ``host`` and ``port`` only appear in absolute hrefs; set ``site.port`` later when the real
      port is known only after binding.
    - ``articles`` (at least 1) is the number of articles; listing pages hold
      ``listing_size`` (at least 1; 6 by default) each, newest first, and only page N links to
      page N+1.
    - ``copies_first``: the home page also links every printer-friendly, mirrored and
      lightweight copy, so that a crawl meets most copies before their articles.

    >>> site = build_site(articles=12)
    >>> site.resolve("/docs").status, site.resolve("/docs").location
    (301, '/docs/')
    """
    if articles < 1:
        raise ValueError(f"articles must be at least 1, got {articles!r}")
    if listing_size < 1:
        raise ValueError(f"listing_size must be at least 1, got {listing_size!r}")
    builder = _SiteBuilder(articles, seed, copies_first=copies_first, listing_size=listing_size)
    return builder.build(host, port)
