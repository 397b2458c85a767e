"""``rel="canonical"``: what a page declares, when it is believed, and real crawls of a
small site whose pages declare canonical URLs, right and wrong."""

from __future__ import annotations

import threading
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING

import pytest

from crawler.url.canonical_links import from_html, from_link_headers, refusal
from tests.conftest import final_stat, run_scrapy, scrapy_crawl_command

if TYPE_CHECKING:
    from collections.abc import Iterator


@pytest.mark.parametrize(
    "head",
    [
        b'<link rel="canonical" href="/a">',
        b"<LINK REL=canonical HREF=/a>",
        b"<link href='/a' rel='nofollow canonical'>",
        b'<link rel="stylesheet" href="/s.css"><link rel="canonical" href="  /a ">',
    ],
)
def test_the_canonical_link_of_a_head(head):
    body = b"<html><head><title>A</title>" + head + b"</head><body>text</body></html>"
    assert from_html(body, "http://s.example/a?ref=nav") == "http://s.example/a"


def test_no_canonical_link_past_the_head_or_without_href():
    late = b"<html><body>" + b"x" * 70_000 + b'<link rel="canonical" href="/a"></body>'
    assert from_html(late, "http://s.example/") is None
    assert from_html(b'<link rel="canonical">', "http://s.example/") is None
    assert from_html(b'<link rel="alternate" href="/fr">', "http://s.example/") is None


def test_the_canonical_link_of_http_headers():
    headers = ['</s.css>; rel=preload, <https://s.example/a>; rel="canonical"']
    assert from_link_headers(headers, "https://s.example/a?x=1") == "https://s.example/a"
    assert (
        from_link_headers(["<https://s.example/fr>; rel=alternate"], "https://s.example/") is None
    )


@pytest.mark.parametrize(
    ("page", "declared", "reason"),
    [
        ("http://s.example/a?ref=nav", "http://s.example/a", None),
        ("http://s.example/a?id=3&ref=nav", "http://s.example/a?id=3", None),
        ("http://s.example/a", "http://s.example/a", "same-url"),
        ("http://s.example/list?page=2", "http://s.example/list?page=1", "other-query"),
        ("http://s.example/a?id=3", "http://s.example/a?id=4", "other-query"),
        ("http://s.example/a", "http://s.example/a?id=4", "other-query"),  # adds one
        ("http://s.example/b", "http://s.example/", "other-path"),  # everything -> home
        ("http://s.example/amp/a", "http://s.example/a", "other-path"),
        ("http://s.example/a?r=1", "http://other.example/a", "other-host"),
        ("http://s.example/a?r=1", "https://s.example/a", "other-host"),
        ("http://s.example/a?r=1", "ftp://s.example/a", "not-http"),
    ],
)
def test_only_a_declaration_that_removes_parameters_is_believed(page, declared, reason):
    assert refusal(page, declared) == reason


# A small site: "/" links to pages whose declarations are right or wrong, and each of those
# links to the URL it declared, so that only the declaration can spare its download.
PAGES = {
    "/": ("", ["/a?ref=nav", "/c?from=feed", "/list?page=2", "/b"]),
    "/a?ref=nav": ('<link rel="canonical" href="/a">', ["/a"]),
    "/a": ('<link rel="canonical" href="/a">', []),
    "/c?from=feed": ("", ["/c"]),  # declared in a Link header
    "/c": ("", []),
    "/list?page=2": ('<link rel="canonical" href="/list?page=1">', ["/list?page=1"]),
    "/list?page=1": ("", []),
    "/b": ('<link rel="canonical" href="/">', ["/b/more"]),
    "/b/more": ("", []),
}


@pytest.fixture
def canonical_site() -> Iterator[tuple[str, Counter[str]]]:
    hits: Counter[str] = Counter()

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            hits[self.path] += 1
            if self.path not in PAGES:
                self.send_error(404)
                return
            head, links = PAGES[self.path]
            body = (
                f"<html><head><title>{self.path}</title>{head}</head><body><p>The page at "
                f"{self.path}.</p>" + "".join(f'<a href="{link}">{link}</a>' for link in links)
            ).encode() + b"</body></html>"
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            if self.path == "/c?from=feed":
                self.send_header("Link", '</c>; rel="canonical"')
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/", hits
    finally:
        server.shutdown()
        server.server_close()


ONE_AT_A_TIME = [
    "-s",
    "CONCURRENT_REQUESTS=1",
    "-s",
    "LOG_LEVEL=INFO",
    "-s",
    "ROBOTSTXT_OBEY=False",
]


def test_a_believed_declaration_spares_a_download(canonical_site, tmp_path):
    url, hits = canonical_site
    log = run_scrapy(scrapy_crawl_command(url, *ONE_AT_A_TIME, "-s", f"JOBDIR={tmp_path}"))
    assert hits["/a"] == 0 and hits["/c"] == 0  # declared by a page that removed a parameter
    assert hits["/list?page=1"] == 1  # page 2 declared page 1: not believed
    assert hits["/b/more"] == 1
    assert all(count == 1 for path, count in hits.items() if path not in ("/a", "/c")), hits
    assert final_stat(log, "dedup/url/canonical_recorded") == 2
    assert final_stat(log, "dedup/url/canonical_ignored/other-query") == 1
    assert final_stat(log, "dedup/url/canonical_ignored/other-path") == 1


def test_the_setting_switches_it_off(canonical_site, tmp_path):
    url, hits = canonical_site
    run_scrapy(scrapy_crawl_command(url, *ONE_AT_A_TIME, "-s", "DEDUP_URL_REL_CANONICAL=False"))
    assert hits["/a"] == 1 and hits["/c"] == 1
