"""The demo site: routing of URL variants, generated content, and the HTTP server."""

from __future__ import annotations

import hashlib
import html
import http.client
import itertools
import json
import os
import re
import struct
import subprocess
import sys
import zlib
from collections import deque
from html.parser import HTMLParser
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urljoin, urlsplit

import pytest
from simhash import Simhash

from crawler.content.extract import main_text
from crawler.demo.server import DemoServer
from crawler.demo.site import (
    FBCLID_VALUE,
    GCLID_VALUE,
    LISTING_PAGE_SIZE,
    MONTHS,
    SITE_NAME,
    Variant,
    build_site,
    extract_hrefs,
)

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

    from crawler.demo.site import DemoSite
    from tests.conftest import DemoSiteProcess

REPO_ROOT = Path(__file__).resolve().parent.parent

BROKEN_LINKS = {"/articles/deleted-story", "/files/brochure-2019.pdf"}
PRINTED_LINE = re.compile(
    r"Printed on (\d{1,2}) (January|February|March|April|May|June|July|August|September"
    r"|October|November|December) (\d{4}) at ([01]\d|2[0-3]):[0-5]\d UTC from (\S+)"
)


@pytest.fixture(scope="module")
def site() -> DemoSite:
    return build_site(port=8080)


def target_of(url: str) -> str:
    """The request target (path and query) a client sends for ``url``."""
    parts = urlsplit(url)
    return parts.path + (f"?{parts.query}" if parts.query else "")


def without_views(body: bytes) -> bytes:
    return re.sub(rb"\d+ views", b"N views", body)


class _ParagraphCollector(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.paragraphs: list[str] = []
        self._open = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "p":
            self._open = True
            self.paragraphs.append("")

    def handle_endtag(self, tag: str) -> None:
        if tag == "p":
            self._open = False

    def handle_data(self, data: str) -> None:
        if self._open:
            self.paragraphs[-1] += data


def paragraphs_of(body: bytes) -> list[str]:
    collector = _ParagraphCollector()
    collector.feed(body.decode("utf-8"))
    return collector.paragraphs


def reachable(site: DemoSite, blocked: frozenset[str] = frozenset()) -> set[str]:
    """Resource ids reachable from ``/`` when the resources in ``blocked`` are never fetched."""
    queue, seen, found = deque([site.base_url]), {site.base_url}, set()
    while queue:
        url = queue.popleft()
        resolution = site.resolve(target_of(url))
        if resolution.resource_id in blocked:
            continue
        if resolution.location is not None:
            hrefs = [resolution.location]
        else:
            if resolution.resource_id is not None:
                found.add(resolution.resource_id)
            hrefs = site.links_on(target_of(url))
        for href in hrefs:
            next_url = urljoin(url, href).partition("#")[0]
            host = urlsplit(next_url).hostname
            if host == "localhost" and next_url.lower() not in seen:
                seen.add(next_url.lower())
                queue.append(next_url)
    return found


# -- routing ----------------------------------------------------------------------------------


def test_every_resource_id_serves_itself(site: DemoSite) -> None:
    for resource_id in site.resources:
        resolution = site.resolve(resource_id)
        assert (resolution.status, resolution.resource_id) == (200, resource_id)


def test_resources_are_every_page_of_the_model(site: DemoSite) -> None:
    articles = [article.path for article in site.articles]
    listings = [f"/articles?page={n}&sort=new" for n in range(1, 5)]
    assert list(site.listing_pages) == listings
    expected = {
        "/",
        "/about",
        "/contact",
        "/docs/",
        "/docs/install",
        "/docs/configuration",
        "/docs/faq",
        "/guides/",
        "/guides/first-crawl",
        "/guides/deployment",
        "/files/report-2024.pdf",
        "/img/logo.png",
        *articles,
        *listings,
        *site.near_duplicates,
    }
    assert site.resources == expected
    assert len(site.resources) == 55


@pytest.mark.parametrize(
    "query",
    [
        "utm_source=newsletter&utm_medium=email",
        f"fbclid={FBCLID_VALUE}",
        f"gclid={GCLID_VALUE}",
        "utm_source=x&page=3&gclid=y",
    ],
)
def test_tracking_parameters_are_ignored(site: DemoSite, query: str) -> None:
    path = site.articles[4].path
    plain, tracked = site.resolve(path), site.resolve(f"{path}?{query}")
    assert tracked.resource_id == path
    assert without_views(tracked.body) == without_views(plain.body)


def test_variants_differ_only_in_the_view_counter(site: DemoSite) -> None:
    path = site.articles[0].path
    plain, tracked = site.resolve(path), site.resolve(f"{path}?utm_source=a")
    assert plain.body != tracked.body
    assert without_views(plain.body) == without_views(tracked.body)


def test_trailing_slash_is_accepted_on_pages(site: DemoSite) -> None:
    for path in [site.articles[2].path, "/about", f"{site.articles[1].path}/print"]:
        assert site.resolve(f"{path}/").resource_id == path


@pytest.mark.parametrize(
    "suffix", [";jsessionid=ABC123", ";JSESSIONID=0F9E8D", ";jsessionid=ABC123?utm_source=x"]
)
def test_session_ids_in_the_path_are_ignored(site: DemoSite, suffix: str) -> None:
    path = site.articles[3].path
    assert site.resolve(path + suffix).resource_id == path


def test_listing_serves_page_and_sort_in_any_order(site: DemoSite) -> None:
    canonical = site.resolve("/articles?page=2&sort=new")
    reordered = site.resolve("/articles?sort=new&page=2")
    assert canonical.resource_id == reordered.resource_id == "/articles?page=2&sort=new"
    assert canonical.body == reordered.body
    assert site.resolve("/articles?page=2").resource_id == canonical.resource_id
    assert site.resolve("/articles").resource_id == "/articles?page=1&sort=new"


@pytest.mark.parametrize(
    "target", ["/articles?page=5", "/articles?page=0", "/articles?page=two", "/articles?sort=old"]
)
def test_listing_rejects_pages_it_does_not_have(site: DemoSite, target: str) -> None:
    assert site.resolve(target).status == 404


def test_fragments_are_ignored(site: DemoSite) -> None:
    path = site.articles[5].path
    assert site.resolve(f"{path}#comments").resource_id == path


def test_host_case_variant_links_resolve_on_the_site(site: DemoSite) -> None:
    urls = site.variant_links()[Variant.HOST_CASE]
    assert urls
    for url in urls:
        assert urlsplit(url).netloc == "LocalHost:8080"
        assert site.resolve(target_of(url)).status == 200


@pytest.mark.parametrize(
    ("source", "location"),
    [
        ("/docs", "/docs/"),
        ("/guides", "/guides/"),
        ("/old-home", "/"),
        ("/docs?utm_source=x", "/docs/?utm_source=x"),
        ("/docs;jsessionid=ABC123", "/docs/"),
    ],
)
def test_redirects_answer_301_with_location(site: DemoSite, source: str, location: str) -> None:
    resolution = site.resolve(source)
    assert (resolution.status, resolution.location, resolution.resource_id) == (
        301,
        location,
        None,
    )
    assert resolution.headers["Location"] == location


def test_redirects_property_lists_every_redirect(site: DemoSite) -> None:
    assert site.redirects == {"/docs": "/docs/", "/guides": "/guides/", "/old-home": "/"}
    for source, target in site.redirects.items():
        assert site.resolve(source).location == target
        assert site.resolve(target).status == 200


@pytest.mark.parametrize(
    "target", ["/articles/deleted-story", "/files/brochure-2019.pdf", "/nope", "/docs/nope"]
)
def test_unknown_paths_are_404_html(site: DemoSite, target: str) -> None:
    resolution = site.resolve(target)
    assert (resolution.status, resolution.resource_id) == (404, None)
    assert resolution.content_type == "text/html; charset=utf-8"


def test_pdf_is_served_as_pdf(site: DemoSite) -> None:
    resolution = site.resolve("/files/report-2024.pdf?utm_source=article")
    assert resolution.content_type == "application/pdf"
    assert resolution.body.startswith(b"%PDF-1.")
    assert resolution.body.rstrip().endswith(b"%%EOF")
    startxref = int(resolution.body.rsplit(b"startxref", 1)[1].split()[0])
    assert resolution.body[startxref:].startswith(b"xref")


def test_png_is_a_real_png(site: DemoSite) -> None:
    resolution = site.resolve("/img/logo.png")
    body = resolution.body
    assert resolution.content_type == "image/png"
    assert body[:8] == b"\x89PNG\r\n\x1a\n"
    position, kinds = 8, []
    while position < len(body):
        (length,) = struct.unpack(">I", body[position : position + 4])
        kind, data = body[position + 4 : position + 8], body[position + 8 : position + 8 + length]
        (crc,) = struct.unpack(">I", body[position + 8 + length : position + 12 + length])
        assert crc == zlib.crc32(kind + data)
        kinds.append(kind)
        position += 12 + length
    assert kinds == [b"IHDR", b"IDAT", b"IEND"]


def test_links_on_are_the_hrefs_written_in_the_page(site: DemoSite) -> None:
    for resource_id in site.resources:
        resolution = site.resolve(resource_id)
        expected = extract_hrefs(resolution.body.decode()) if resolution.is_html else []
        assert site.links_on(resource_id) == expected
    assert site.links_on("/docs") == []
    assert site.links_on("/articles/deleted-story") == []


def test_every_link_works_except_the_deliberately_broken_ones(site: DemoSite) -> None:
    broken = set()
    for resource_id in site.resources:
        for href in site.links_on(resource_id):
            url = urljoin(site.url(resource_id), href)
            if urlsplit(url).hostname == "localhost" and site.resolve(target_of(url)).status == 404:
                broken.add(target_of(url))
    assert broken == BROKEN_LINKS


def test_control_endpoints_are_never_linked(site: DemoSite) -> None:
    hrefs = [href for page in site.resources for href in site.links_on(page)]
    assert hrefs
    assert not [href for href in hrefs if "__demo" in href]


def test_every_variant_kind_is_linked(site: DemoSite) -> None:
    variant_links = site.variant_links()
    assert set(variant_links) == set(Variant)
    for kind, urls in variant_links.items():
        assert urls, kind
        for url in urls:
            expected = 404 if target_of(url) in BROKEN_LINKS else 200
            assert site.resolve(target_of(url)).status in (expected, 301), url


def test_variant_spellings(site: DemoSite) -> None:
    links = site.variant_links()
    assert any(
        url.endswith("?utm_source=newsletter&utm_medium=email") for url in links[Variant.UTM]
    )
    assert all(";jsessionid=ABC123" in url for url in links[Variant.SESSION_ID])
    assert all(url.endswith("/") for url in links[Variant.TRAILING_SLASH])
    assert all("?sort=new&page=" in url for url in links[Variant.QUERY_ORDER])
    assert "#comments" in "".join(links[Variant.FRAGMENT])
    assert all(url.startswith("http://localhost:8080/") for url in links[Variant.ABSOLUTE])


def test_absolute_links_follow_the_port_set_after_building() -> None:
    site = build_site()
    assert "http://localhost/articles/" in " ".join(site.links_on("/"))
    site.port = 43210
    assert f"http://localhost:43210{site.articles[0].path}" in site.links_on("/")
    assert "http://LocalHost:43210/contact" in site.links_on("/")


def test_losing_a_listing_page_loses_the_articles_after_it(site: DemoSite) -> None:
    assert reachable(site) == set(site.resources)
    without_page_2 = reachable(site, blocked=frozenset({"/articles?page=2&sort=new"}))
    lost = {article.path for article in site.articles if article.listing_page >= 2}
    assert lost
    assert not lost & without_page_2
    assert {article.path for article in site.articles[:LISTING_PAGE_SIZE]} <= without_page_2


# -- content ----------------------------------------------------------------------------------


def _site_digest(site: DemoSite) -> str:
    digest = hashlib.sha256()
    for resource_id in sorted(site.resources):
        digest.update(resource_id.encode() + b"\0" + site.resolve(resource_id).body)
    return digest.hexdigest()


def test_same_seed_gives_the_same_bytes_in_another_process(site: DemoSite) -> None:
    script = (
        "import hashlib\n"
        "from crawler.demo.site import build_site\n"
        "site = build_site(port=8080)\n"
        "digest = hashlib.sha256()\n"
        "for rid in sorted(site.resources):\n"
        "    digest.update(rid.encode() + b'\\0' + site.resolve(rid).body)\n"
        "print(digest.hexdigest())\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", script],
        cwd=REPO_ROOT,
        env={**os.environ, "PYTHONHASHSEED": "12345"},
        capture_output=True,
        text=True,
        check=True,
    )
    assert result.stdout.strip() == _site_digest(site) == _site_digest(build_site(port=8080))


def test_another_seed_gives_other_text(site: DemoSite) -> None:
    other = build_site(port=8080, seed=8)
    assert [a.paragraphs for a in other.articles] != [a.paragraphs for a in site.articles]
    assert not {a.paragraphs[0] for a in other.articles} & {a.paragraphs[0] for a in site.articles}


def test_articles_are_long_distinct_texts(site: DemoSite) -> None:
    assert len(site.articles) == 24
    assert len({article.slug for article in site.articles}) == 24
    for article in site.articles:
        assert 250 <= article.word_count <= 600, article.slug
        assert len(article.paragraphs) >= 3
    vocabulary = {
        word.strip('.,:"').lower()
        for article in site.articles
        for paragraph in article.paragraphs
        for word in paragraph.split()
    }
    assert len(vocabulary) > 500


def test_simhash_tells_articles_apart(site: DemoSite) -> None:
    fingerprints = [Simhash(" ".join(article.paragraphs)) for article in site.articles]
    distances = [a.distance(b) for a, b in itertools.combinations(fingerprints, 2)]
    assert min(distances) > 6


def test_article_page_shows_title_date_views_and_template(site: DemoSite) -> None:
    article = site.articles[0]
    page = site.resolve(article.path).body.decode()
    assert f"<title>{article.title} | The Lantern Gazette</title>" in page
    assert f'<time datetime="{article.published.isoformat()}">' in page
    assert re.search(r"\d+ views", page)
    for landmark in ("<header>", "<nav>", "<aside>", "<footer>"):
        assert landmark in page
    assert paragraphs_of(site.resolve(article.path).body)[1 : 1 + len(article.paragraphs)] == list(
        article.paragraphs
    )


def test_copies_share_the_article_paragraphs(site: DemoSite) -> None:
    copies = site.near_duplicates
    assert sum(path.endswith("/print") for path in copies) == 6
    assert sum(path.startswith("/mirror/") for path in copies) == 5
    assert sum(path.startswith("/amp/") for path in copies) == 4
    by_path = {article.path: article for article in site.articles}
    for copy, original in copies.items():
        article = by_path[original]
        copy_paragraphs = paragraphs_of(site.resolve(copy).body)
        assert [p for p in copy_paragraphs if p in article.paragraphs] == list(article.paragraphs)
        assert original in site.resources and copy in site.resources


def test_copies_use_other_templates(site: DemoSite) -> None:
    for copy in site.near_duplicates:
        page = site.resolve(copy).body.decode()
        assert "<aside>" not in page
        if copy.startswith("/mirror/"):
            assert "Syndicate Weekly" in page
            assert '<div class="ad">Advertisement.' in page


def test_copies_are_linked_only_from_their_original(site: DemoSite) -> None:
    """A crawl meets a copy only after its original: what lets a crawl test predict
    which member of each group is kept."""
    linked_from: dict[str, set[str]] = {copy: set() for copy in site.near_duplicates}
    for resource_id in site.resources:
        for href in site.links_on(resource_id):
            target = site.resolve(target_of(urljoin(site.url(resource_id), href))).resource_id
            if target in linked_from:
                linked_from[target].add(resource_id)
    assert linked_from == {copy: {original} for copy, original in site.near_duplicates.items()}


def test_the_copies_first_site_links_every_copy_from_its_home_page_too(site: DemoSite) -> None:
    """``--site copies-first``: the home page links each copy (a crawl meets most copies
    before their articles); every other page is the default site's, byte for byte."""
    first = build_site(port=8080, copies_first=True)
    assert first.near_duplicates == site.near_duplicates
    linked = {
        site.resolve(target_of(urljoin(first.url("/"), href))).resource_id
        for href in first.links_on("/")
    }
    assert set(first.near_duplicates) <= linked
    assert not set(site.near_duplicates) & {
        site.resolve(target_of(urljoin(site.url("/"), href))).resource_id
        for href in site.links_on("/")
    }
    for resource_id in site.resources - {"/"}:
        assert first.resolve(resource_id).body == site.resolve(resource_id).body, resource_id


@pytest.mark.parametrize("port", [8080, 65535])
def test_print_copies_carry_one_printed_on_line(port: int) -> None:
    site = build_site(port=port)
    by_path = {article.path: article for article in site.articles}
    prints = {copy: path for copy, path in site.near_duplicates.items() if copy.endswith("/print")}
    assert prints
    for copy, original in prints.items():
        page = site.resolve(copy).body.decode()
        (line,) = [m for m in map(PRINTED_LINE.search, paragraphs_of(page.encode())) if m]
        assert 60 <= len(line.group(0)) <= 150
        assert line.group(5) == site.url(original)
        day, month, year = int(line.group(1)), line.group(2), int(line.group(3))
        printed = (year, MONTHS.index(month) + 1, day)
        published = by_path[original].published
        assert printed >= (published.year, published.month, published.day)
        assert page.index(line.group(0)) > page.index("<article>")


def test_the_printed_on_line_is_all_an_extractor_sees_added(site: DemoSite) -> None:
    for copy, original in site.near_duplicates.items():
        if not copy.endswith("/print"):
            continue
        first, *rest = main_text(site.resolve(copy).body, site.url(copy)).splitlines()
        assert PRINTED_LINE.fullmatch(first)
        assert rest == main_text(site.resolve(original).body, site.url(original)).splitlines()


def test_print_lines_are_the_same_in_every_build_and_differ_between_copies(
    site: DemoSite,
) -> None:
    def lines(of: DemoSite) -> list[str]:
        found = []
        for copy in sorted(of.near_duplicates):
            match = PRINTED_LINE.search(of.resolve(copy).body.decode())
            if match:
                found.append(match.group(0))
        return found

    assert lines(site) == lines(build_site(port=8080))
    assert len(set(lines(site))) == len(lines(site)) == 6


def test_listing_pages_are_a_chronological_index(site: DemoSite) -> None:
    pages = site.listing_pages
    for number, listing in enumerate(pages, start=1):
        page = site.resolve(listing).body.decode()
        assert f"<title>All articles, page {number} of {len(pages)} | {SITE_NAME}</title>" in page
        entries = [part.partition("</section>")[0] for part in page.split('class="teaser">')[1:]]
        listed = [article for article in site.articles if article.listing_page == number]
        assert len(entries) == len(listed) and 1 <= len(listed) <= LISTING_PAGE_SIZE
        for entry, article in zip(entries, listed, strict=True):
            published = article.published
            (headline,) = re.findall(r"<h2>(.*?)</h2>", entry)
            (href,) = extract_hrefs(headline)
            assert site.resolve(target_of(urljoin(site.url(listing), href))).resource_id == (
                article.path
            )
            assert f">{html.escape(article.title)}</a>" in headline
            assert f"{MONTHS[published.month - 1]} {published.day}, {published.year}" in entry
            assert f"By {article.author}" in entry
            assert f"<p>{html.escape(article.paragraphs[0].split('. ')[0])}" in entry
            assert f">Read more</a> (in section {article.section})</p>" in entry
        assert [a.published for a in listed] == sorted((a.published for a in listed), reverse=True)


@pytest.mark.parametrize(("listing_size", "pages"), [(20, [20, 4]), (24, [24]), (1, [1] * 24)])
def test_a_listing_page_holds_listing_size_stories(listing_size: int, pages: list[int]) -> None:
    site = build_site(articles=24, listing_size=listing_size)
    teasers = [
        site.resolve(listing).body.decode().count('class="teaser">')
        for listing in site.listing_pages
    ]
    assert teasers == pages


def test_a_listing_size_below_one_names_the_argument() -> None:
    with pytest.raises(ValueError, match="listing_size must be at least 1, got 0"):
        build_site(listing_size=0)


def test_listing_pages_share_boilerplate_but_list_different_articles(site: DemoSite) -> None:
    """What an extractor keeps of the index pages: the same intro and entry shape on
    every page, and on each page the opening sentences of other articles."""
    texts = [main_text(site.resolve(p).body, site.url(p)).splitlines() for p in site.listing_pages]
    shared = set.intersection(*map(set, texts))
    assert [line for line in shared if line.startswith(f"Every story published in {SITE_NAME}")]
    openings = []
    for lines in texts:
        assert sum(line.startswith("Read more (in section ") for line in lines) == LISTING_PAGE_SIZE
        openings.append({line for line in lines if line.endswith(".") and line not in shared})
    for one, other in itertools.combinations(openings, 2):
        assert len(one) >= LISTING_PAGE_SIZE and not one & other


# -- the HTTP server --------------------------------------------------------------------------


def fetch(
    port: int, target: str, host: str | None = None, method: str = "GET"
) -> tuple[int, dict[str, str], bytes]:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        headers = {"Host": host} if host else {}
        connection.request(method, target, headers=headers)
        response = connection.getresponse()
        return response.status, dict(response.getheaders()), response.read()
    finally:
        connection.close()


@pytest.fixture
def server(demo_site_server: DemoSiteProcess) -> Iterator[DemoSiteProcess]:
    demo_site_server.reset()
    yield demo_site_server
    demo_site_server.reset()


def test_server_prints_ready_line(demo_site_server: DemoSiteProcess) -> None:
    assert demo_site_server.ready_line == f"READY http://localhost:{demo_site_server.port}/"


def test_server_serves_the_model(server: DemoSiteProcess, demo_site_model: DemoSite) -> None:
    for target in ["/", "/articles?sort=new&page=3", "/img/logo.png", "/docs", "/nope"]:
        status, headers, body = fetch(server.port, target)
        expected = demo_site_model.resolve(target)
        assert (status, headers["Content-Type"], body) == (
            expected.status,
            expected.content_type,
            expected.body,
        )
        assert headers["Content-Length"] == str(len(body))
    status, headers, _ = fetch(server.port, "/guides?utm_source=x")
    assert (status, headers["Location"]) == (301, "/guides/?utm_source=x")


def test_server_counts_hits(server: DemoSiteProcess, demo_site_model: DemoSite) -> None:
    article = demo_site_model.articles[0].path
    targets = [article, f"{article}?utm_source=a", f"{article}/", "/docs", "/missing"]
    for target in targets:
        fetch(server.port, target)
    fetch(server.port, article, host=f"LocalHost:{server.port}")
    fetch(server.port, "/__demo/hits")
    hits = server.hits()
    assert hits["total"] == 6
    assert hits["by_target"] == {
        article: 2,
        f"{article}?utm_source=a": 1,
        f"{article}/": 1,
        "/docs": 1,
        "/missing": 1,
    }
    assert hits["by_resource"] == {article: 4}
    assert hits["by_host"] == {f"127.0.0.1:{server.port}": 5, f"LocalHost:{server.port}": 1}
    assert hits["by_status"] == {"200": 4, "301": 1, "404": 1}


def test_server_reset_zeroes_counts(server: DemoSiteProcess) -> None:
    fetch(server.port, "/")
    assert server.hits()["total"] == 1
    server.reset()
    assert server.hits() == {
        "total": 0,
        "body_bytes": 0,
        "by_target": {},
        "by_resource": {},
        "by_host": {},
        "by_status": {},
    }
    status, _, body = fetch(server.port, "/__demo/reset", method="POST")
    assert status == 200 and json.loads(body)["total"] == 0


def test_unknown_control_endpoint_is_404(server: DemoSiteProcess) -> None:
    status, headers, _ = fetch(server.port, "/__demo/nothing")
    assert (status, headers["Content-Type"]) == (404, "application/json")
    assert server.hits()["total"] == 0


def test_server_process_options_and_clean_exit(
    demo_site_process_factory: Callable[..., DemoSiteProcess],
) -> None:
    process = demo_site_process_factory(articles=6, seed=3, host_name="127.0.0.1")
    assert process.ready_line == f"READY http://127.0.0.1:{process.port}/"
    model = build_site(host="127.0.0.1", port=process.port, articles=6, seed=3)
    assert fetch(process.port, "/")[2] == model.resolve("/").body
    assert fetch(process.port, "/articles?page=2")[0] == 404
    assert process.stop() == 0


def test_in_process_server() -> None:
    with DemoServer(articles=6) as server:
        url = server.start()
        assert url == server.url == f"http://localhost:{server.port}/"
        assert server.site.port == server.port
        status, _, _ = fetch(server.port, "/about?fbclid=1")
        assert status == 200
        assert server.hits()["by_resource"] == {"/about": 1}
        server.reset()
        assert server.hits()["total"] == 0
        port = server.port
    with pytest.raises(ConnectionRefusedError):
        fetch(port, "/")
    with pytest.raises(RuntimeError, match="not running"):
        server.hits()
