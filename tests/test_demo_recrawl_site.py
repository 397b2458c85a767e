"""The site that changes between crawls (crawler/demo/recrawl_site.py), and the demo server's
answers to conditional requests."""

from __future__ import annotations

import json
import re
import urllib.error
import urllib.request
from collections import deque

import pytest

from crawler.demo.recrawl_site import (
    IGNORES_VALIDATORS,
    STALE_ETAG,
    STAMPED,
    RecrawlSite,
    not_modified,
)
from crawler.demo.server import DemoServer
from crawler.demo.site import Resolution

HREF = re.compile(rb'href="([^"]+)"')


def reachable(site: RecrawlSite) -> set[str]:
    """Every path reached from ``/`` by following links."""
    found, queue = {"/"}, deque(["/"])
    while queue:
        for href in HREF.findall(site.resolve(queue.popleft()).body):
            path = href.decode()
            if path not in found:
                found.add(path)
                queue.append(path)
    return found


def test_every_page_is_reachable_from_the_home_page_in_every_round() -> None:
    site = RecrawlSite(pages=300)
    for _ in range(3):
        assert reachable(site) == set(site.resources)
        assert all(site.resolve(path).status == 200 for path in site.resources)
        site.advance()


def test_a_round_changes_adds_and_removes_its_shares_of_the_pages() -> None:
    site = RecrawlSite(pages=2000)
    before = {path: site.resolve(path).body for path in site.resources}
    moved = site.advance()
    assert (len(moved["changed"]), len(moved["added"]), len(moved["removed"])) == (100, 20, 20)
    after = {path: site.resolve(path).body for path in site.resources}
    assert all(before[path] != after[path] for path in moved["changed"])
    assert set(moved["added"]) == {p for p in set(after) - set(before) if p.startswith("/p/")}
    assert set(moved["removed"]) == set(before) - set(after)
    assert all(site.resolve(path).status == 404 for path in moved["removed"])
    # most pages are linked from pages that did not change (but for the footer of one in 5)
    unchanged = {path for path in after if path in before and before[path] == after[path]}
    stamped = {path for path in after if path[:3] == "/p/" and int(path[3:]) % 5 == STAMPED}
    # 5% changed, 1% added, about 3% linking a removed page, the listings of both: under 15%
    assert len(unchanged) > 0.85 * len(set(after) - stamped)


def test_the_same_arguments_and_rounds_give_the_same_site() -> None:
    first, second = RecrawlSite(pages=200, seed=3), RecrawlSite(pages=200, seed=3)
    assert first.advance() == second.advance()
    assert all(first.resolve(p).body == second.resolve(p).body for p in first.resources)
    assert RecrawlSite(pages=200, seed=4).resolve("/p/5").body != first.resolve("/p/5").body


def test_a_third_of_the_pages_send_an_etag_a_third_last_modified_the_rest_neither() -> None:
    site = RecrawlSite(pages=300)
    headers = [site.resolve(f"/p/{number}").headers for number in range(300)]
    assert sum("ETag" in h and "Last-Modified" not in h for h in headers) == 100
    assert sum("Last-Modified" in h and "ETag" not in h for h in headers) == 100
    assert sum("ETag" not in h and "Last-Modified" not in h for h in headers) == 100
    ignoring = [n for n, h in enumerate(headers) if "X-Demo-Ignores-Validators" in h]
    assert ignoring == list(range(0, 300, IGNORES_VALIDATORS))


@pytest.mark.parametrize(
    ("request_headers", "answer"),
    [
        ({"If-None-Match": '"a1"'}, True),
        ({"If-None-Match": 'W/"a1"'}, True),  # weak comparison
        ({"If-None-Match": '"b2", "a1"'}, True),
        ({"If-None-Match": "*"}, True),
        ({"If-None-Match": '"b2"'}, False),
        # If-None-Match decides when sent, even with a date that would match
        ({"If-None-Match": '"b2"', "If-Modified-Since": "Sun, 06 Nov 1994 08:49:37 GMT"}, False),
        ({"If-Modified-Since": "Sun, 06 Nov 1994 08:49:37 GMT"}, True),
        ({"If-Modified-Since": "Mon, 07 Nov 1994 08:49:37 GMT"}, True),
        ({"If-Modified-Since": "Sat, 05 Nov 1994 08:49:37 GMT"}, False),
        ({"If-Modified-Since": "never"}, False),
        ({}, False),
    ],
)
def test_a_conditional_get_is_answered_as_rfc_9110_says(
    request_headers: dict[str, str], answer: bool
) -> None:
    page = Resolution(
        200, {"ETag": '"a1"', "Last-Modified": "Sun, 06 Nov 1994 08:49:37 GMT"}, b"", "/p/1"
    )
    assert not_modified(page, request_headers) is answer


def test_a_page_that_ignores_validators_or_is_missing_is_never_not_modified() -> None:
    ignoring = Resolution(200, {"ETag": '"a1"', "X-Demo-Ignores-Validators": "1"}, b"", "/p/0")
    assert not not_modified(ignoring, {"If-None-Match": '"a1"'})
    missing = Resolution(404, {"ETag": '"a1"'}, b"", None)
    assert not not_modified(missing, {"If-None-Match": '"a1"'})


def get(url: str, **headers: str) -> tuple[int, dict[str, str], bytes]:
    request = urllib.request.Request(url, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, dict(response.headers), response.read()
    except urllib.error.HTTPError as error:
        return error.code, dict(error.headers), error.read()


def test_the_server_answers_304_until_the_page_changes() -> None:
    with DemoServer(articles=300, site="recrawl") as server:
        url = server.url
        status, headers, body = get(f"{url}p/3")
        assert status == 200 and body and "ETag" in headers
        status, again, body = get(f"{url}p/3", **{"If-None-Match": headers["ETag"]})
        assert (status, body, again["ETag"]) == (304, b"", headers["ETag"])
        moved = json.loads(get(f"{url}__demo/advance")[2])
        # a page changed in the round no longer matches its old ETag
        numbers = [int(path.rsplit("/", 1)[1]) for path in moved["changed"]]
        changed = next(
            f"/p/{n}"
            for n in numbers
            if n % 3 == 0 and n % IGNORES_VALIDATORS != 0 and n % 41 != STALE_ETAG
        )
        old = RecrawlSite(pages=300).resolve(changed).headers["ETag"]
        assert get(f"{url}{changed[1:]}", **{"If-None-Match": old})[0] == 200
        assert server.hits()["by_status"] == {"200": 2, "304": 1}


def test_a_page_changed_alone_moves_its_validators_unless_its_etag_is_stale() -> None:
    site = RecrawlSite(pages=60)
    fresh, stale, dated = site.resolve("/p/3"), site.resolve("/p/9"), site.resolve("/p/4")
    assert site.change(3) == {"changed": ["/p/3"], "added": [], "removed": []}
    site.change(9)
    site.change(4)
    assert site.resolve("/p/3").headers["ETag"] != fresh.headers["ETag"]
    # page 9 sends an ETag made from its path: the same, though the page changed
    assert site.resolve("/p/9").headers["ETag"] == stale.headers["ETag"]
    assert site.resolve("/p/9").body != stale.body
    assert site.resolve("/p/4").headers["Last-Modified"] != dated.headers["Last-Modified"]
    assert site.resolve("/p/5").body == RecrawlSite(pages=60).resolve("/p/5").body
    with pytest.raises(KeyError):
        site.change(60)


def test_the_server_changes_one_page_on_demand() -> None:
    with DemoServer(articles=60, site="recrawl") as server:
        before = get(f"{server.url}p/3")[2]
        status, _, body = get(f"{server.url}__demo/change/3")
        assert (status, json.loads(body)["changed"]) == (200, ["/p/3"])
        assert get(f"{server.url}p/3")[2] != before
        assert get(f"{server.url}__demo/change/600")[0] == 404
