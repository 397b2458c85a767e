"""The dedup report: aggregation of audit records, HTML rendering, the command, and the
page as a real browser (Debian's chromium) renders it."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections import Counter

import pytest
from lxml import html as lxml_html

from crawler.report import render_html, summarize
from tests.conftest import _child_env, final_stat, run_scrapy, scrapy_crawl_command


def url_record(url, canonical, rules, params=()):
    return {
        "level": "url",
        "url": url,
        "decision": "filtered",
        "canonical_url": canonical,
        "rules": rules,
        "stripped_params": list(params),
        "method": "GET",
        "referer": None,
    }


def content_record(url, reason, matched_url=None, distance=None, decision=None):
    return {
        "level": "content",
        "url": url,
        "decision": decision or ("kept" if matched_url is None else "dropped"),
        "reason": reason,
        "matched_url": matched_url,
        "distance": distance,
        "simhash": "0" * 16,
        "matched_simhash": None,
        "text_length": 900,
        "threshold": 3,
    }


def lines_of(*records):
    return [json.dumps(record) + "\n" for record in records]


def test_counts_by_level_rule_parameter_reason_and_distance():
    summary = summarize(
        lines_of(
            url_record("http://a.test/x/", "http://a.test/x", ["strip-trailing-slash"]),
            url_record(
                "http://a.test/x?utm_source=m&utm_source=n&gclid=1#top",
                "http://a.test/x",
                ["drop-fragment", "strip-tracking-params"],
                ["utm_source", "utm_source", "gclid"],
            ),
            url_record("http://a.test/y?utm_source=m", "http://a.test/y", [], ["utm_source"]),
            content_record("http://a.test/x", "unique"),
            content_record("http://a.test/empty", "no_text"),
            content_record("http://a.test/x/print", "exact", "http://a.test/x", 0),
            content_record("http://b.test/x", "near", "http://a.test/x", 3, "marked"),
        )
    )
    assert (summary.records, summary.malformed_lines, summary.url_filtered) == (7, 0, 3)
    assert summary.url_rules == Counter(
        {"strip-trailing-slash": 1, "drop-fragment": 1, "strip-tracking-params": 1, "repeat": 1}
    )
    assert summary.stripped_params == Counter({"utm_source": 2, "gclid": 1})
    assert summary.content_reasons == Counter({"unique": 1, "no_text": 1, "exact": 1, "near": 1})
    assert summary.content_decisions == Counter({"kept": 2, "dropped": 1, "marked": 1})
    assert summary.distances == Counter({0: 1, 3: 1})
    assert summary.content_decided == 4


def test_items_kept_unchecked_are_counted_by_reason_and_say_which_setting_checks_them():
    """The pipeline writes ``no_page``, ``timeout`` and ``unchecked`` (Redis away) records;
    the report counted them as malformed lines before."""
    reasons = ("no_page", "timeout", "unchecked")
    summary = summarize(lines_of(*(content_record(f"http://a.test/{r}", r) for r in reasons)))
    assert summary.malformed_lines == 0
    assert summary.content_reasons == Counter(dict.fromkeys(reasons, 1))
    assert summary.content_decisions == Counter({"kept": 3})
    page = render_html(summary, "audit.jsonl")
    for setting in ("DEDUP_HTML_FIELD", "DEDUP_EXTRACT_TIMEOUT", "DEDUP_REDIS_ON_ERROR"):
        assert setting in page


def test_clusters_join_duplicates_through_their_matches_largest_first():
    summary = summarize(
        lines_of(
            content_record("http://a.test/1/print", "exact", "http://a.test/1", 0),
            content_record("http://a.test/2/print", "exact", "http://a.test/2", 0),
            content_record("http://mirror.test/1", "near", "http://a.test/1", 2),
            # a later run matched an earlier copy: still the same cluster
            content_record("http://b.test/1", "near", "http://mirror.test/1", 1),
            content_record("http://a.test/3/print", "exact", "http://a.test/3", 0),
        ),
        max_clusters=2,
    )
    assert summary.cluster_count == 3
    first, second = summary.clusters
    assert first.original == "http://a.test/1"
    assert [(c.url, c.kind, c.distance) for c in first.copies] == [
        ("http://a.test/1/print", "exact", 0),
        ("http://b.test/1", "near", 1),
        ("http://mirror.test/1", "near", 2),
    ]
    assert first.copies[1].matched_url == "http://mirror.test/1"
    assert (second.original, second.size) == ("http://a.test/2", 2)


def test_malformed_lines_are_skipped_and_counted():
    good = lines_of(url_record("http://a.test/", "http://a.test/", ["repeat"]))[0]
    lines = [
        good.encode(),
        b"\n",
        b'{"level": "url", "url": "http://a.test/", "rules": ["rep',  # cut by a crash
        b"\xff\xfe not utf-8\n",
        b"[1, 2]\n",
        b'{"level": "robots", "url": "http://a.test/"}\n',
        b'{"level": "url", "url": 7}\n',
        b'{"level": "content", "url": "http://a.test/", "reason": "near", "decision": "x"}\n',
        json.dumps({"url": "http://old.test/", "decision": "kept", "reason": "unique"}).encode(),
    ]
    summary = summarize(lines)
    assert (summary.records, summary.malformed_lines, summary.first_malformed_line) == (2, 6, 3)
    assert summary.content_reasons == Counter({"unique": 1})  # a record without a level


@pytest.mark.parametrize("distance", [65, 1_000_000, 10**12, -1, 2.5, True])
def test_a_distance_no_fingerprint_can_have_is_a_malformed_record(distance):
    """A foreign or edited audit file: its histogram would be as wide as the distance."""
    lines = lines_of(
        content_record("http://a.test/x/print", "near", "http://a.test/x", 3),
        content_record("http://a.test/y/print", "near", "http://a.test/y", distance),
    )
    summary = summarize(lines)
    assert (summary.records, summary.malformed_lines) == (1, 1)
    assert summary.distances == Counter({3: 1})
    assert len(render_html(summary, source="edited.jsonl")) < 100_000


def test_summarize_streams_its_input():
    consumed = 0

    def records():
        nonlocal consumed
        for number in range(50_000):
            consumed += 1
            yield json.dumps(url_record(f"http://a.test/{number}", "", ["repeat"]))

    assert summarize(records()).url_filtered == consumed == 50_000


def test_urls_and_names_are_escaped():
    evil = 'http://a.test/<script>alert("x")</script>?q=<b>'
    summary = summarize(
        lines_of(
            url_record(evil, "http://a.test/", ["<i>rule</i>"], ["<script>p</script>"]),
            content_record(evil, "exact", "javascript:alert(1)", 0),
        )
    )
    page = render_html(summary, source="<script>audit</script>.jsonl")
    assert "<script" not in page
    assert 'href="javascript:' not in page
    assert "<i>" not in page
    document = lxml_html.fromstring(page)
    assert document.xpath("//script") == []
    assert document.xpath("//tr/@data-copy") == [evil]
    assert document.xpath("//tr[@data-copy]//a/@href") == [evil]
    assert document.xpath("//tr[@data-copy]//a")[0].text_content() == evil
    assert document.xpath("//tr[@data-param]/td[1]")[0].text_content() == "<script>p</script>"
    assert document.xpath("//tr[@data-rule]/td[1]")[0].text_content() == "<i>rule</i>"
    assert "From <script>audit</script>.jsonl" in document.text_content()
    assert document.xpath("//h3/@data-original") == ["javascript:alert(1)"]


def test_empty_audit_file_renders_a_report_saying_so():
    page = render_html(summarize([]), source="empty.jsonl")
    document = lxml_html.fromstring(page)
    assert document.get_element_by_id("total-url-filtered").text_content() == "0"
    assert "No duplicate pages in this audit file." in page


# The command


def dedup_report(*arguments, cwd):
    return subprocess.run(
        [sys.executable, "-m", "scrapy", "dedup-report", *map(str, arguments)],
        cwd=cwd,
        env=_child_env(),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_command_writes_the_report_outside_a_project(tmp_path):
    audit = tmp_path / "audit.jsonl"
    audit.write_text(
        "".join(
            lines_of(
                url_record("http://a.test/x?fbclid=1", "http://a.test/x", [], ["fbclid"]),
                content_record("http://a.test/x/print", "exact", "http://a.test/x", 0),
            )
        )
        + "not json\n",
        encoding="utf-8",
    )
    report = tmp_path / "report.html"
    completed = dedup_report(audit, "-o", report, cwd=tmp_path)
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout == (
        f"Wrote {report}: 1 filtered requests, 1 content decisions, 1 clusters of duplicates\n"
    )
    assert f"Skipped 1 malformed lines of {audit} (the first is line 3)" in completed.stderr
    document = lxml_html.fromstring(report.read_text("utf-8"))
    assert document.xpath("//tr[@data-param]/@data-param") == ["fbclid"]
    assert document.get_element_by_id("malformed").text_content() == "1 malformed lines skipped"


def test_command_names_a_missing_audit_file(tmp_path):
    completed = dedup_report(tmp_path / "nope.jsonl", "-o", tmp_path / "r.html", cwd=tmp_path)
    assert completed.returncode == 1
    assert f"Cannot read the audit file {tmp_path / 'nope.jsonl'}" in completed.stderr
    assert not (tmp_path / "r.html").exists()


def test_command_requires_an_output_file(tmp_path):
    completed = dedup_report(tmp_path / "audit.jsonl", cwd=tmp_path)
    assert completed.returncode == 2
    assert "-o/--output" in completed.stderr


# A real crawl's report in a real browser

CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@pytest.fixture
def chromium():
    path = shutil.which("chromium") or shutil.which("chromium-browser")
    if path is None:
        message = "chromium is not installed (Debian package chromium)"
        if os.environ.get("CI") == "true":
            pytest.fail(message)
        pytest.skip(message)
    return path


def run_chromium(chromium, profile, *arguments):
    completed = subprocess.run(
        [chromium, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", *map(str, arguments)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert completed.returncode == 0, completed.stderr[-2000:]
    return completed.stdout


def test_report_of_a_real_crawl_renders_in_chromium(
    chromium, demo_site_server, demo_site_model, tmp_path
):
    audit = tmp_path / "audit.jsonl"
    # the former default extractor: its text of the demo's lightweight copies is their
    # article's, so the report has exact copies to show beside near ones ("auto" keeps a
    # byline and a share line those copies leave out: near copies only)
    log = run_scrapy(
        scrapy_crawl_command(
            demo_site_server.url,
            *("-s", f"DEDUP_AUDIT_FILE={audit}", "-s", "LOG_LEVEL=INFO"),
            *("-s", "DEDUP_EXTRACTOR=trafilatura+resiliparse"),
        )
    )
    records = [json.loads(line) for line in audit.read_text("utf-8").splitlines()]
    duplicates = [r for r in records if r["level"] == "content" and r["matched_url"]]
    report = tmp_path / "report.html"
    completed = dedup_report(audit, "-o", report, cwd=tmp_path)
    assert completed.returncode == 0, completed.stderr

    dom = run_chromium(chromium, tmp_path / "profile", "--dump-dom", report.as_uri())
    document = lxml_html.fromstring(dom)

    def total(key):
        return int(document.get_element_by_id(f"total-{key}").text_content().replace(",", ""))

    filtered = final_stat(log, "dupefilter/filtered")
    assert filtered > 500
    assert total("url-filtered") == filtered
    assert total("content-exact") == final_stat(log, "dedup/content/exact") > 0
    assert total("content-near") == final_stat(log, "dedup/content/near") > 0
    assert total("content-decided") == sum(
        final_stat(log, f"dedup/content/{reason}")
        for reason in ("unique", "exact", "near", "no_text")
    )
    rule_counts = {
        row.get("data-rule"): int(row.xpath("td[2]")[0].text_content().replace(",", ""))
        for row in document.xpath("//tr[@data-rule]")
    }
    assert rule_counts == {
        name.removeprefix("dedup/url/filtered/"): final_stat(log, name)
        for name in {f"dedup/url/filtered/{rule}" for rule in rule_counts}
    }
    assert rule_counts["repeat"] > 0 and rule_counts["strip-tracking-params"] > 0
    params = document.xpath("//tr[@data-param]/@data-param")
    assert {"utm_source", "utm_medium", "fbclid", "gclid"} <= set(params)
    # every copy is shown under the page it matched (the site's clusters are that small)
    copies = {row.get("data-copy"): row for row in document.xpath("//tr[@data-copy]")}
    assert set(copies) == {r["url"] for r in duplicates}
    for record in duplicates:
        cluster = copies[record["url"]].xpath("ancestor::div[@class='cluster']")[0]
        assert cluster.xpath("h3/@data-original") == [record["matched_url"]]
    histogram = {
        int(bar.get("data-distance")): int(bar.get("data-count"))
        for bar in document.xpath("//*[local-name()='g'][@data-distance]")
    }
    # one bar for each distance from 0 to the farthest copy's (the second stage's reach past 3)
    farthest = max(3, *(r["distance"] for r in duplicates))
    assert histogram == {
        distance: sum(r["distance"] == distance for r in duplicates)
        for distance in range(farthest + 1)
    }
    assert farthest > 3

    screenshot = tmp_path / "report.png"
    run_chromium(
        chromium,
        tmp_path / "profile",
        f"--screenshot={screenshot}",
        "--window-size=1280,1800",
        report.as_uri(),
    )
    assert screenshot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert screenshot.stat().st_size > 20_000  # a page with text and charts, not a blank one


def test_items_dropped_by_key_are_counted_and_shown():
    item_record = {
        "level": "item",
        "url": "https://shop.test/b",
        "decision": "dropped",
        "reason": "item_key",
        "key": {"sku": "1"},
    }
    summary = summarize(lines_of(item_record, item_record, content_record("http://a/", "unique")))
    assert (summary.items_dropped_by_key, summary.malformed_lines, summary.records) == (2, 0, 3)
    page = lxml_html.fromstring(render_html(summary, "audit.jsonl"))
    assert page.get_element_by_id("total-item-key").text_content() == "2"
    without = lxml_html.fromstring(render_html(summarize([]), "a"))
    assert without.get_element_by_id("total-item-key", None) is None
