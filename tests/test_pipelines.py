from __future__ import annotations

import asyncio
import errno
import gc
import json
import logging
import math
import os
import random
import re
import signal
import string
import subprocess
import sys
import threading
import time
import warnings
from pathlib import Path

import pytest
from scrapy import Spider
from scrapy.exceptions import DropItem, NotConfigured
from scrapy.http import HtmlResponse
from scrapy.utils.misc import build_from_crawler
from scrapy.utils.test import get_crawler

import crawler.content.extract
import crawler.content.page_fingerprinter
import crawler.pipeline_decisions
import crawler.pipelines
from crawler.content import pages, speedups
from crawler.content.extract import EXTRACTORS
from crawler.content.item_pages import ItemPage, item_pages
from crawler.content.loop_worker_processes import LoopWorkerProcesses
from crawler.content.pages import (
    PageFingerprint,
    ResponseBody,
    fingerprint_page,
    fingerprint_page_within,
)
from crawler.content.worker_processes import WorkerProcesses
from crawler.middlewares import ItemPageMiddleware
from crawler.pipelines import NearDuplicatePipeline
from crawler.state.persistence import StateFileError
from tests.conftest import REPO_ROOT

PARAGRAPHS = [
    f"Paragraph {i}: the harbour authority met on Tuesday to discuss the cranes, the "
    f"tides and the new ferry timetable, and residents of district {i} asked about noise."
    for i in range(10)
]


def page(paragraphs: list[str], navigation: str = "Home | News | About") -> str:
    body = "".join(f"<p>{text}</p>" for text in paragraphs)
    return (
        f"<html><head><title>Harbour news</title></head><body><nav>{navigation}</nav>"
        f"<article><h1>Harbour news</h1>{body}</article><footer>(c) 2026 Port Gazette"
        "</footer></body></html>"
    )


class NamedSpider(Spider):
    name = "named"


def make_pipeline(settings: dict | None = None) -> NearDuplicatePipeline:
    crawler = get_crawler(NamedSpider, settings or {})
    pipeline = build_from_crawler(NearDuplicatePipeline, crawler)
    pipeline.open_spider()
    return pipeline


def process(pipeline: NearDuplicatePipeline, item: dict) -> dict:
    return asyncio.run(pipeline.process_item(item))


def stats(pipeline: NearDuplicatePipeline) -> dict:
    return {
        name: value
        for name, value in pipeline.crawler.stats.get_stats().items()
        if name.startswith("dedup/")
        # how long and where: not outcomes
        and name
        not in (
            "dedup/content/seconds",
            "dedup/extract/backlog_max",
            "dedup/extract/in_process",
            "dedup/extract/extractor_cpu_seconds",
            "dedup/extract/fingerprints_cpu_seconds",
            "dedup/extract/worker_start_cpu_seconds",
        )
    }


def test_exact_copy_is_dropped_naming_the_original():
    pipeline = make_pipeline()
    first = process(pipeline, {"url": "https://a.test/story", "html": page(PARAGRAPHS)})
    assert first == {"url": "https://a.test/story"}  # html removed from the item
    copy = page(PARAGRAPHS, navigation="Start | Sport | Weather")  # other template around it
    with pytest.raises(DropItem) as excinfo:
        process(pipeline, {"url": "https://b.test/copy", "html": copy})
    assert str(excinfo.value) == (
        "Exact duplicate of https://a.test/story (Hamming distance 0): https://b.test/copy"
    )
    assert excinfo.value.log_level == "INFO"
    assert stats(pipeline) == {"dedup/content/unique": 1, "dedup/content/exact": 1}


def test_near_copy_is_dropped_and_a_different_article_kept():
    pipeline = make_pipeline()
    process(pipeline, {"url": "https://a.test/story", "html": page(PARAGRAPHS)})
    edited = [*PARAGRAPHS[:4], PARAGRAPHS[4].replace("Tuesday", "Wednesday"), *PARAGRAPHS[5:]]
    with pytest.raises(DropItem, match=r"^Near duplicate of https://a.test/story \(Hamming"):
        process(pipeline, {"url": "https://a.test/story-updated", "html": page(edited)})
    other = [
        f"Section {i}: the orchestra rehearsed a new symphony in the old town hall while "
        f"volunteers painted scenery for the winter festival in quarter {i}."
        for i in range(10)
    ]
    assert process(pipeline, {"url": "https://a.test/music", "html": page(other)})
    assert stats(pipeline) == {"dedup/content/unique": 2, "dedup/content/near": 1}


def test_mark_keeps_the_item_and_says_what_it_duplicates():
    pipeline = make_pipeline({"DEDUP_CONTENT_ACTION": "mark", "DEDUP_KEEP_HTML": True})
    process(pipeline, {"url": "https://a.test/1", "html": page(PARAGRAPHS)})
    item = process(pipeline, {"url": "https://a.test/2", "html": page(PARAGRAPHS)})
    assert item["duplicate_of"] == "https://a.test/1"
    assert item["distance"] == 0
    assert len(item["simhash"]) == 16
    assert "html" in item


def test_text_field_wins_over_html():
    pipeline = make_pipeline()
    text = " ".join(PARAGRAPHS)
    process(pipeline, {"url": "https://a.test/1", "text": text, "html": "<p>ignored</p>"})
    with pytest.raises(DropItem, match=re.escape("Exact duplicate of https://a.test/1")):
        process(pipeline, {"url": "https://a.test/2", "text": text})


@pytest.mark.parametrize(
    ("html", "stat"),
    [
        (b"\x89PNG\r\n\x1a\n" + bytes(range(256)), "dedup/extract/binary"),
        ("", "dedup/extract/no_text"),
        ("<html><head><title>Empty</title></head><body></body></html>", "dedup/extract/no_text"),
    ],
)
def test_pages_without_text_pass_and_are_counted(html, stat):
    pipeline = make_pipeline()
    item = process(pipeline, {"url": "https://a.test/x", "html": html})
    assert item == {"url": "https://a.test/x"}
    assert stats(pipeline) == {"dedup/content/no_text": 1, stat: 1}


def test_items_without_a_page_pass_untouched_counted_and_named_at_close(caplog):
    pipeline = make_pipeline()
    assert process(pipeline, {"sku": 1}) == {"sku": 1}
    assert stats(pipeline) == {"dedup/content/no_page": 1}
    with caplog.at_level(logging.INFO, logger="crawler.pipelines"):
        pipeline.close_spider()
    assert (
        "1 unchecked without a page: give items a 'html' field (DEDUP_HTML_FIELD) or a "
        "'text' field (DEDUP_TEXT_FIELD), or enable crawler.middlewares.ItemPageMiddleware"
    ) in caplog.text


def test_an_item_without_page_fields_is_checked_on_the_page_it_came_from():
    pipeline = make_pipeline()
    pages = item_pages(pipeline.crawler)
    first, copy = {"title": "Bridge", "body": "..."}, {"title": "Bridge", "body": "..."}
    body = page(PARAGRAPHS).encode("cp1252")
    pages.put(first, ItemPage("https://a.test/1", 0, body, "cp1252"))
    assert process(pipeline, first) == {"title": "Bridge", "body": "..."}  # unchanged
    pages.put(copy, ItemPage("https://a.test/1/print", 0, body + b"<p>Printed</p>", "cp1252"))
    with pytest.raises(DropItem, match=re.escape("duplicate of https://a.test/1 ")):
        process(pipeline, copy)
    assert stats(pipeline)["dedup/content/from_response"] == 2
    assert len(pages) == 0


def test_items_that_share_a_page_are_compared_by_their_own_text():
    pipeline = make_pipeline()
    pages = item_pages(pipeline.crawler)
    listing = [{"name": f"Drive {size} GB", "price": f"{size / 10:.2f}"} for size in (250, 500)]
    again = [{"name": "Drive 500 GB", "price": "50.00"}]
    for index, item in enumerate(listing):
        pages.put(item, ItemPage("https://a.test/list", index))
        assert process(pipeline, item) == item  # one page, two products: both kept
    pages.put(again[0], ItemPage("https://a.test/list?page=2", 0))
    with pytest.raises(DropItem, match=re.escape("duplicate of https://a.test/list#item-1")):
        process(pipeline, again[0])
    assert stats(pipeline)["dedup/content/from_item_fields"] == 3


def test_audit_file_has_one_line_per_decision(tmp_path):
    audit = tmp_path / "audit" / "content.jsonl"
    pipeline = make_pipeline({"DEDUP_AUDIT_FILE": str(audit)})
    process(pipeline, {"url": "https://a.test/1", "html": page(PARAGRAPHS)})
    with pytest.raises(DropItem):
        process(pipeline, {"url": "https://a.test/2", "html": page(PARAGRAPHS)})
    pipeline.close_spider()
    kept, dropped = (json.loads(line) for line in audit.read_text("utf-8").splitlines())
    assert kept["level"] == dropped["level"] == "content"
    assert kept["url"] == "https://a.test/1"
    assert (kept["decision"], kept["reason"], kept["matched_url"]) == ("kept", "unique", None)
    assert (dropped["decision"], dropped["reason"]) == ("dropped", "exact")
    assert (dropped["matched_url"], dropped["distance"]) == ("https://a.test/1", 0)
    assert dropped["simhash"] == dropped["matched_simhash"] == kept["simhash"]
    assert dropped["text_length"] == kept["text_length"] > 500
    assert dropped["threshold"] == 3


def test_state_dir_remembers_documents_across_runs(tmp_path):
    first = make_pipeline({"DEDUP_STATE_DIR": str(tmp_path)})
    process(first, {"url": "https://a.test/1", "html": page(PARAGRAPHS)})
    first.close_spider()
    second = make_pipeline({"DEDUP_STATE_DIR": str(tmp_path)})
    with pytest.raises(DropItem, match=re.escape("Exact duplicate of https://a.test/1")):
        process(second, {"url": "https://a.test/2", "html": page(PARAGRAPHS)})


def test_a_page_fetched_again_in_one_crawl_yields_no_second_item(tmp_path):
    """Within one crawl, the same text at the same URL is dropped (or marked); in the next
    run (a recrawl after DEDUP_URL_TTL, a resume) it is kept, as a re-fetch."""
    settings = {"DEDUP_STATE_DIR": str(tmp_path), "DEDUP_AUDIT_FILE": str(tmp_path / "a.jsonl")}
    first = make_pipeline(settings)
    item = {"url": "https://a.test/1", "html": page(PARAGRAPHS)}
    process(first, dict(item))
    with pytest.raises(DropItem, match=re.escape("Fetched again in this crawl")):
        process(first, dict(item))
    # changed since: a new version of the page, kept
    process(first, {"url": "https://a.test/1", "html": page(PARAGRAPHS[1:])})
    assert stats(first)["dedup/content/refetched"] == 2
    assert stats(first)["dedup/content/refetched_in_crawl"] == 1
    first.close_spider()
    decisions = [
        (line["decision"], line["reason"])
        for line in map(json.loads, (tmp_path / "a.jsonl").read_text().splitlines())
    ]
    assert decisions == [("kept", "unique"), ("dropped", "refetched"), ("kept", "refetched")]
    second = make_pipeline(settings)
    assert process(second, dict(item))["url"] == "https://a.test/1"
    assert stats(second)["dedup/content/refetched"] == 1
    assert "dedup/content/refetched_in_crawl" not in stats(second)


def test_a_page_fetched_again_in_one_crawl_is_marked_with_mark():
    pipeline = make_pipeline({"DEDUP_CONTENT_ACTION": "mark"})
    process(pipeline, {"url": "https://a.test/1", "html": page(PARAGRAPHS)})
    again = process(pipeline, {"url": "https://a.test/1", "html": page(PARAGRAPHS)})
    assert (again["duplicate_of"], again["distance"]) == ("https://a.test/1", 0)


@pytest.mark.parametrize("extractor", EXTRACTORS)
def test_either_extractor_drops_a_copy(extractor):
    pipeline = make_pipeline({"DEDUP_EXTRACTOR": extractor})
    process(pipeline, {"url": "https://a.test/1", "html": page(PARAGRAPHS)})
    with pytest.raises(DropItem, match=re.escape("Exact duplicate of https://a.test/1")):
        process(pipeline, {"url": "https://a.test/2", "html": page(PARAGRAPHS)})
    assert pipeline.detector.signature["extractor"] == extractor


def test_a_state_dir_of_the_other_extractor_is_refused(tmp_path):
    first = make_pipeline({"DEDUP_STATE_DIR": str(tmp_path)})
    process(first, {"url": "https://a.test/1", "html": page(PARAGRAPHS)})
    first.close_spider()
    other_rules = "extractor: 'auto' -> 'resiliparse'"
    with pytest.raises(StateFileError, match=other_rules):
        make_pipeline({"DEDUP_STATE_DIR": str(tmp_path), "DEDUP_EXTRACTOR": "resiliparse"})


def test_a_page_trafilatura_cannot_read_is_extracted_by_resiliparse(monkeypatch):
    def explode(*args, **kwargs):
        raise RecursionError("maximum recursion depth exceeded")

    monkeypatch.setattr("trafilatura.extract", explode)
    pipeline = make_pipeline({"DEDUP_CONTENT_WORKERS": 0, "DEDUP_EXTRACTOR": "trafilatura"})
    process(pipeline, {"url": "https://a.test/1", "html": page(PARAGRAPHS)})
    with pytest.raises(DropItem, match=re.escape("Exact duplicate of https://a.test/1")):
        process(pipeline, {"url": "https://a.test/2", "html": page(PARAGRAPHS) + "\n"})
    assert pipeline.stats.get_value("dedup/extract/fallback") == 2
    assert pipeline.stats.get_value("dedup/extract/failed") is None


@pytest.fixture
def extractions(monkeypatch):
    """The keyword arguments of every page the pipeline extracts (in this process)."""
    calls = []

    def counted(*args, **kwargs):
        calls.append(kwargs)
        return fingerprint_page(*args, **kwargs)

    monkeypatch.setattr(crawler.content.page_fingerprinter, "fingerprint_page", counted)
    return calls


def test_a_body_seen_before_is_not_extracted_again(extractions):
    pipeline = make_pipeline({"DEDUP_CONTENT_WORKERS": 0})
    body = page(PARAGRAPHS).encode()
    process(pipeline, {"url": "https://a.test/1", "html": body})
    with pytest.raises(DropItem, match=re.escape("Exact duplicate of https://a.test/1")):
        process(pipeline, {"url": "https://a.test/1?print", "html": body})
    # the same page fetched again is a re-fetch, decided without extraction too
    with pytest.raises(DropItem, match=re.escape("Fetched again in this crawl")):
        process(pipeline, {"url": "https://a.test/1", "html": body})
    # other bytes, the same text: extracted, then an exact copy
    with pytest.raises(DropItem, match=re.escape("Exact duplicate of https://a.test/1")):
        process(pipeline, {"url": "https://a.test/2", "html": body + b"\n"})
    assert [call["url"] for call in extractions] == ["https://a.test/1", "https://a.test/2"]
    assert pipeline.stats.get_value("dedup/extract/same_body") == 2
    assert stats(pipeline)["dedup/content/refetched"] == 1


def test_a_body_arriving_while_its_twin_is_extracted_waits_for_it(monkeypatch):
    started, finish = threading.Event(), threading.Event()
    calls = []

    def slow(*args, **kwargs):
        calls.append(kwargs["url"])
        started.set()
        finish.wait(10)
        return fingerprint_page(*args, **kwargs)

    monkeypatch.setattr(crawler.content.page_fingerprinter, "fingerprint_page", slow)
    fingerprinter = make_pipeline({"DEDUP_CONTENT_WORKERS": 0}).fingerprinter
    body = page(PARAGRAPHS).encode()
    results = {}

    def fingerprint(url: str) -> None:
        results[url] = fingerprinter.fingerprint(url, None, body, None)

    first = threading.Thread(target=fingerprint, args=("https://a.test/1",))
    first.start()
    assert started.wait(10)
    twin = threading.Thread(target=fingerprint, args=("https://a.test/2",))
    twin.start()
    twin.join(0.2)
    assert twin.is_alive()  # waiting for the first, not extracting
    finish.set()
    first.join(10)
    twin.join(10)
    assert calls == ["https://a.test/1"]
    assert results["https://a.test/1"] == (results["https://a.test/2"][0], False)
    assert results["https://a.test/2"][1] is True
    # then remembered by its fingerprints, not their future (2.4 kB an entry against 0.8)
    assert fingerprinter.fingerprint("https://a.test/3", None, body, None) == (
        results["https://a.test/1"][0],
        True,
    )
    assert calls == ["https://a.test/1"]
    (remembered,) = fingerprinter._bodies._cache._pages.values()
    assert isinstance(remembered, PageFingerprint)


def test_a_body_read_in_another_charset_is_extracted_again(extractions):
    pipeline = make_pipeline({"DEDUP_CONTENT_WORKERS": 0})
    body = page(PARAGRAPHS).encode()
    process(pipeline, {"url": "https://a.test/1", "html": body})
    with pytest.raises(DropItem):
        process(pipeline, {"url": "https://a.test/2", "html": body, "encoding": "cp1252"})
    assert [call["encoding"] for call in extractions] == [None, "cp1252"]


def test_a_page_that_takes_too_long_passes_unchecked_and_later_pages_are_checked(caplog):
    # trafilatura parses a page of 100,000 tags never closed for minutes (resiliparse: 0.1 s)
    pipeline = make_pipeline(
        {"DEDUP_CONTENT_WORKERS": 1, "DEDUP_EXTRACT_TIMEOUT": 3, "DEDUP_EXTRACTOR": "trafilatura"}
    )
    pipeline.fingerprinter.processes.submit(int).result()  # the worker has started
    # 100,000 unclosed paragraphs: trafilatura takes tens of seconds over it
    flood = "<html><body>" + "".join(f"<p>word {n} here" for n in range(100_000))
    started = time.monotonic()
    with caplog.at_level(logging.WARNING, logger="crawler.content.page_fingerprinter"):
        item = process(pipeline, {"url": "https://a.test/flood", "html": flood})
    assert time.monotonic() - started < 3 + 5
    assert item["url"] == "https://a.test/flood"  # kept, unchecked
    assert stats(pipeline)["dedup/content/timeout"] == 1
    # given up by its worker, or its worker replaced when stuck in one call into C code
    assert "DEDUP_EXTRACT_TIMEOUT (3.0 s)" in caplog.text
    pipeline.fingerprinter.processes.submit(int).result()
    process(pipeline, {"url": "https://a.test/1", "html": page(PARAGRAPHS)})
    with pytest.raises(DropItem, match=re.escape("Exact duplicate of https://a.test/1")):
        process(pipeline, {"url": "https://a.test/2", "html": page(PARAGRAPHS) + "\n"})
    pipeline.close_spider()
    assert pipeline.summary().endswith("1 unchecked (extraction too slow)")


def test_text_given_in_the_item_is_cut_to_its_head():
    pipeline = make_pipeline({"DEDUP_MAX_PAGE_BYTES": 1_000, "DEDUP_CONTENT_WORKERS": 0})
    text = " ".join(PARAGRAPHS) * 50
    process(pipeline, {"url": "https://a.test/1", "text": text})
    with pytest.raises(DropItem, match=re.escape("Exact duplicate of https://a.test/1")):
        process(pipeline, {"url": "https://a.test/2", "text": text[:1_000] + " other tail"})
    assert stats(pipeline)["dedup/extract/truncated"] == 2


def test_close_summary(caplog):
    pipeline = make_pipeline()
    process(pipeline, {"url": "https://a.test/1", "html": page(PARAGRAPHS)})
    with pytest.raises(DropItem):
        process(pipeline, {"url": "https://a.test/2", "html": page(PARAGRAPHS)})
    with caplog.at_level(logging.INFO, logger="crawler.pipelines"):
        pipeline.close_spider()
    assert caplog.record_tuples[-1] == (
        "crawler.pipelines",
        logging.INFO,
        "Content dedup: 1 items dropped (exact: 1, near: 0), 1 unique, 0 without text",
    )


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"DEDUP_CONTENT_ACTION": "delete"}, "DEDUP_CONTENT_ACTION='delete' is not an action"),
        ({"DEDUP_CONTENT_BACKEND": "sqlite"}, "DEDUP_CONTENT_BACKEND='sqlite' is not a"),
        ({"DEDUP_LONG_THRESHOLD": 5}, "DEDUP_LONG_THRESHOLD=5 must be a Hamming distance"),
        ({"DEDUP_EXTRACTOR": "readability"}, "DEDUP_EXTRACTOR='readability': unknown extractor"),
        ({"DEDUP_MAX_PAGE_BYTES": 0}, "DEDUP_MAX_PAGE_BYTES=0 must be a number of bytes"),
        ({"DEDUP_MIN_TEXT_CHARS": -1}, "DEDUP_MIN_TEXT_CHARS=-1 must be a number of characters"),
        ({"DEDUP_HTML_FIELD": ""}, "DEDUP_HTML_FIELD='' must be the name of an item field"),
        ({"DEDUP_TEXT_FIELD": 5}, "DEDUP_TEXT_FIELD=5 must be the name of an item field"),
        (
            {"DEDUP_ITEM_TEXT_FIELDS": ["title", ""]},
            re.escape("DEDUP_ITEM_TEXT_FIELDS=['title', ''] must be a list of item field names"),
        ),
    ],
)
def test_bad_settings_name_the_setting(settings, message):
    with pytest.raises(ValueError, match=message):
        make_pipeline(settings)


def test_switched_off():
    crawler = get_crawler(NamedSpider, {"DEDUP_CONTENT_ENABLED": False})
    with pytest.raises(NotConfigured, match="DEDUP_CONTENT_ENABLED"):
        build_from_crawler(NearDuplicatePipeline, crawler)


def test_redis_backend_is_shared_by_workers(redis_server):
    settings = {"DEDUP_CONTENT_BACKEND": "redis", "DEDUP_REDIS_URL": redis_server.url}
    worker_a, worker_b = make_pipeline(settings), make_pipeline(settings)
    process(worker_a, {"url": "https://a.test/1", "html": page(PARAGRAPHS)})
    with pytest.raises(DropItem, match=re.escape("Exact duplicate of https://a.test/1")):
        process(worker_b, {"url": "https://b.test/1", "html": page(PARAGRAPHS)})
    assert len(worker_a.detector) == 1


@pytest.mark.parametrize(
    ("failing", "error", "closes"),
    [
        ("detector.check_fingerprinted", OSError(errno.ENOSPC, "No space left on device"), True),
        ("fingerprinter.fingerprint", OSError(errno.EBADF, "Bad file descriptor"), False),
    ],
)
def test_only_a_state_write_refused_closes_the_spider(monkeypatch, failing, error, closes):
    """A write the state directory refused keeps the item unchecked and closes the spider;
    an ``OSError`` of fingerprinting is no such thing (a descriptor closed under a thread
    once reached the pipeline as ``EBADF``): it reaches Scrapy as any other error."""
    closed = []
    monkeypatch.setattr(crawler.pipelines, "close_spider", lambda _, reason: closed.append(reason))
    pipeline = make_pipeline()
    owner, name = failing.split(".")

    def fails(*args):
        raise error

    monkeypatch.setattr(getattr(pipeline, owner), name, fails)
    item = {"url": "https://a.test/page", "html": page(["A paragraph long enough. " * 8])}
    if closes:
        assert process(pipeline, item) is item
    else:
        with pytest.raises(OSError, match=error.strerror):
            process(pipeline, item)
    assert closed == (["dedup_state_unwritable"] if closes else [])
    assert pipeline.crawler.stats.get_value("dedup/content/unchecked") == (1 if closes else None)


def test_redis_away_keeps_items_unchecked(redis_server_factory, caplog):
    server = redis_server_factory()
    pipeline = make_pipeline({"DEDUP_CONTENT_BACKEND": "redis", "DEDUP_REDIS_URL": server.url})
    process(pipeline, {"url": "https://a.test/1", "html": page(PARAGRAPHS)})
    connection = pipeline.detector.shared_index.connection
    connection.retries, connection.backoff = 1, 0.01
    server.stop()
    item = {"url": "https://a.test/2", "html": page(PARAGRAPHS)}
    assert process(pipeline, item)["url"] == "https://a.test/2"  # kept, not lost
    assert pipeline.crawler.stats.get_value("dedup/content/unchecked") == 1
    assert "items are kept unchecked" in caplog.text
    assert pipeline.summary().endswith(", 1 unchecked (Redis away)")


def test_content_workers_are_at_most_one_per_core_but_one_on_demand_unless_set(monkeypatch):
    """The crawl process keeps a core busy when pages wait for the workers."""

    def built(settings: dict) -> NearDuplicatePipeline:
        return build_from_crawler(NearDuplicatePipeline, get_crawler(NamedSpider, settings))

    assert built({}).fingerprinter.workers == max(1, len(os.sched_getaffinity(0)) - 1)
    for allowed, workers in ((range(8), 7), (range(2), 1), (range(1), 1)):
        monkeypatch.setattr(os, "sched_getaffinity", lambda pid, allowed=allowed: set(allowed))
        assert built({}).fingerprinter.workers == workers
    monkeypatch.undo()
    auto = built({"DEDUP_CONTENT_WORKERS": "auto"})
    assert built({}).fingerprinter.workers == auto.fingerprinter.workers
    assert built({"DEDUP_CONTENT_WORKERS": 0}).fingerprinter.workers == 0
    assert built({"DEDUP_CONTENT_WORKERS": "3"}).fingerprinter.workers == 3
    for wrong in (-1, "many"):
        with pytest.raises(ValueError, match=f"DEDUP_CONTENT_WORKERS={wrong!r}"):
            built({"DEDUP_CONTENT_WORKERS": wrong})


def imported(module: str) -> bool:
    return module in sys.modules


@pytest.mark.parametrize(
    ("extractor", "loaded", "not_loaded"),
    [
        ("trafilatura", "trafilatura", "resiliparse"),
        ("resiliparse", "resiliparse", "trafilatura"),
        ("trafilatura+resiliparse", "resiliparse", None),
        ("trafilatura+resiliparse", "trafilatura", None),
        ("auto", "resiliparse", "trafilatura"),
    ],
)
def test_worker_processes_start_with_the_spider_and_load_only_the_chosen_extractor(
    extractor, loaded, not_loaded
):
    earlier = running_children()
    pipeline = make_pipeline({"DEDUP_CONTENT_WORKERS": 2, "DEDUP_EXTRACTOR": extractor})

    def workers() -> set[int]:
        return running_children() - earlier

    try:
        deadline = time.monotonic() + 30
        while len(workers()) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(workers()) == 2  # before any item
        answers = [pipeline.fingerprinter.processes.submit(imported, loaded) for _ in range(4)]
        assert all(answer.result() for answer in answers)
        if not_loaded is not None:
            assert not pipeline.fingerprinter.processes.submit(imported, not_loaded).result()
    finally:
        pipeline.close_spider()
    assert not workers()


@pytest.mark.skipif(speedups.compiled is None, reason="the pure-Python forms need NumPy")
def test_a_worker_process_fingerprints_pages_without_importing_numpy():
    """NumPy costs each worker 15 MiB of resident memory and 60 ms to import: the compiled
    forms need none of it, the index (in the crawl process) does."""
    pipeline = make_pipeline({"DEDUP_CONTENT_WORKERS": 1})
    text = " ".join(f"Paragraph {number} of a long article about rivers." for number in range(80))
    try:
        workers = pipeline.fingerprinter.processes
        result = workers.submit(pages.fingerprint_page, page([text]), extractor="auto")
        assert result.result(timeout=60).fingerprint is not None
        # a function of this module would import it (and NumPy) in the worker to run
        in_worker = workers.submit(eval, "'numpy' in __import__('sys').modules")
        assert in_worker.result(timeout=60) is False
    finally:
        pipeline.close_spider()


@pytest.mark.parametrize("user_set", [None, "2"])
def test_worker_processes_start_with_one_blas_thread_unless_the_user_chose(monkeypatch, user_set):
    if user_set is None:
        monkeypatch.delenv("OPENBLAS_NUM_THREADS", raising=False)
    else:
        monkeypatch.setenv("OPENBLAS_NUM_THREADS", user_set)
    pipeline = make_pipeline({"DEDUP_CONTENT_WORKERS": 1})
    try:
        in_worker = pipeline.fingerprinter.processes.submit(
            os.getenv, "OPENBLAS_NUM_THREADS"
        ).result(timeout=30)
    finally:
        pipeline.close_spider()
    assert in_worker == (user_set or "1")
    assert os.environ.get("OPENBLAS_NUM_THREADS") == user_set  # the crawl process's own


def test_a_worker_process_start_is_counted_once_as_what_it_cost():
    """The first page a worker process returns carries the CPU its start took (importing
    the extractor): counted once, and a body seen again does not count it twice."""
    pipeline = make_pipeline({"DEDUP_CONTENT_WORKERS": 1, "DEDUP_EXTRACTOR": "resiliparse"})
    articles = distinct_articles(3)
    fingerprinter = pipeline.fingerprinter
    try:
        pages = [
            fingerprinter.fingerprint(f"https://a.test/{n}", None, html, "utf-8")[0]
            for n, html in enumerate(articles)
        ]
        for n, html in enumerate(articles):
            process(pipeline, {"url": f"https://b.test/{n}", "html": html})
        with pytest.raises(DropItem):
            process(pipeline, {"url": "https://c.test/0", "html": articles[0]})
        since_start = fingerprinter.processes.submit(time.process_time).result(timeout=30)
    finally:
        pipeline.close_spider()
    assert [page.worker_start_cpu > 0 for page in pages] == [True, False, False]
    # an interpreter that imported NumPy and resiliparse, and less than all its work
    assert 0.01 < pages[0].worker_start_cpu < since_start
    # the pipeline's items met bodies fingerprinted above: no page of a new start
    assert pipeline.crawler.stats.get_value("dedup/extract/worker_start_cpu_seconds") is None


def test_the_pipeline_counts_a_worker_process_start():
    pipeline = make_pipeline({"DEDUP_CONTENT_WORKERS": 1, "DEDUP_EXTRACTOR": "resiliparse"})
    try:
        for n, html in enumerate(distinct_articles(2)):
            process(pipeline, {"url": f"https://a.test/{n}", "html": html})
        since_start = pipeline.fingerprinter.processes.submit(time.process_time).result(30)
    finally:
        pipeline.close_spider()
    counted = pipeline.crawler.stats.get_value("dedup/extract/worker_start_cpu_seconds")
    assert 0.01 < counted < since_start


@pytest.mark.parametrize("workers", [1, "auto"])
def test_a_page_given_as_response_text_is_sent_as_downloaded_and_checked_alike(
    monkeypatch, workers
):
    """An item holding ``response.text`` (recorded by ItemPageMiddleware) reaches the
    workers as the response's body, not encoded again; its fingerprints are those of the
    same text given without the response, and a copy of it is dropped."""
    pipeline = make_pipeline({"DEDUP_CONTENT_WORKERS": workers})
    middleware = ItemPageMiddleware.from_crawler(pipeline.crawler)
    body = page(PARAGRAPHS).replace("<p>", "<p>Caf\u00e9 ", 1).encode("cp1252")
    response = HtmlResponse("https://a.test/1", body=body, encoding="cp1252")
    item = {"url": response.url, "html": response.text}
    list(middleware.process_spider_output(response, [item]))
    sent, results = [], []
    fingerprint = pipeline.fingerprinter.fingerprint

    def recorded(*args, **kwargs):
        sent.append(args[4] if len(args) > 4 else kwargs.get("downloaded"))
        results.append(fingerprint(*args, **kwargs)[0])
        return results[-1], False

    monkeypatch.setattr(pipeline.fingerprinter, "fingerprint", recorded)
    monkeypatch.setattr(crawler.content.page_fingerprinter.EncodedPage, "of", None)
    assert process(pipeline, item)["url"] == "https://a.test/1"
    assert sent == [ResponseBody(body, "cp1252")]
    monkeypatch.undo()
    with pytest.raises(DropItem, match=re.escape("Exact duplicate of https://a.test/1")):
        process(pipeline, {"url": "https://a.test/2", "html": response.text + "\n"})
    alone = make_pipeline({"DEDUP_CONTENT_WORKERS": 0})
    given, _ = alone.fingerprinter.fingerprint("https://a.test/1", None, response.text, None)
    assert results[0].status == given.status == "ok"
    assert results[0].fingerprint == given.fingerprint
    for each in (pipeline, alone):
        each.close_spider()


def test_a_worker_fingerprints_a_decoded_page_as_the_crawl_process_does(monkeypatch):
    # the page crosses to the worker as UTF-8 bytes; non-ASCII letters and a lone
    # surrogate (a str may hold one) come back as they were
    first = "Caf\u00e9 cr\u00e8me \u2014 \u4e2d\u6587 \udc80 " + PARAGRAPHS[0]
    html = page([first, *PARAGRAPHS[1:]])
    sent: list = []
    run = crawler.content.page_fingerprinter.WorkerProcesses.run

    def recorded(pool, function, arguments=(), options=None, **keywords):
        sent.append(arguments)
        return run(pool, function, arguments, options, **keywords)

    monkeypatch.setattr(crawler.content.page_fingerprinter.WorkerProcesses, "run", recorded)
    in_process = make_pipeline({"DEDUP_CONTENT_WORKERS": 0}).fingerprinter
    workers = make_pipeline({"DEDUP_CONTENT_WORKERS": 1})
    try:
        expected, _ = in_process.fingerprint("https://a.test/", None, html, None)
        found, _ = workers.fingerprinter.fingerprint("https://a.test/", None, html, None)
        given, _ = workers.fingerprinter.fingerprint("https://a.test/t", "Some text.", html, None)
    finally:
        workers.close_spider()
    assert expected.fingerprint is not None
    assert found == expected
    assert given.fingerprint is not None
    page_sent, text_sent = sent[-2][1:3], sent[-1][1:3]
    assert page_sent[0].data == html.encode("utf-8", "surrogatepass")
    assert page_sent[1] is None
    assert text_sent == (None, "Some text.")


@pytest.mark.parametrize("workers", [0, 1])
def test_the_cpu_time_of_extraction_and_fingerprints_is_counted_apart(workers):
    pipeline = make_pipeline({"DEDUP_CONTENT_WORKERS": workers})

    def counted() -> tuple[float, float]:
        values = pipeline.crawler.stats.get_stats()
        return (
            values.get("dedup/extract/extractor_cpu_seconds", 0.0),
            values.get("dedup/extract/fingerprints_cpu_seconds", 0.0),
        )

    html = page(PARAGRAPHS)
    try:
        process(pipeline, {"url": "https://a.test/one", "html": html})
        extractor, fingerprints = counted()
        assert extractor > 0 and fingerprints > 0
        # the same body again is not extracted: nothing more is counted
        with pytest.raises(DropItem):
            process(pipeline, {"url": "https://a.test/two", "html": html})
        assert counted() == (extractor, fingerprints)
        # given text is not extracted: what it costs is its fingerprints'
        words = " ".join(f"word{n} text{n * 7 % 1000}" for n in range(20_000))
        process(pipeline, {"url": "https://a.test/three", "text": words})
        more_extractor, more_fingerprints = counted()
        fingerprinted = more_fingerprints - fingerprints
        assert fingerprinted > 0.001
        assert more_extractor - extractor < fingerprinted / 10
    finally:
        pipeline.close_spider()


def test_the_items_waiting_for_extraction_at_most_are_counted():
    pipeline = make_pipeline({"DEDUP_CONTENT_WORKERS": 0})
    process(pipeline, {"url": "https://a.test/alone", "html": page(PARAGRAPHS)})
    assert pipeline.stats.get_value("dedup/extract/backlog_max") == 1

    async def together() -> list:
        articles = [
            {"url": f"https://b.test/{n}", "html": page([f"{n} {p}" for p in PARAGRAPHS])}
            for n in ("one", "two", "three")
        ]
        items = [pipeline.process_item(article) for article in articles]
        return await asyncio.gather(*items, return_exceptions=True)

    asyncio.run(together())
    assert pipeline.stats.get_value("dedup/extract/backlog_max") == 3


def running_children() -> set[int]:
    """The processes this one started that have not exited, read from ``/proc``."""
    children = set()
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            state, parent = stat.read_text().rsplit(")", 1)[1].split()[:2]
        except (OSError, IndexError):
            continue  # exited meanwhile
        if int(parent) == os.getpid() and state != "Z":
            children.add(int(stat.parent.name))
    return children


OPEN_AND_WAIT = """
import time
from scrapy import Spider
from scrapy.utils.misc import build_from_crawler
from scrapy.utils.test import get_crawler
from crawler.pipelines import NearDuplicatePipeline

class Named(Spider):
    name = "named"

if __name__ == "__main__":
    crawler = get_crawler(Named, {"DEDUP_CONTENT_WORKERS": 2})
    pipeline = build_from_crawler(NearDuplicatePipeline, crawler)
    pipeline.open_spider()
    pipeline.fingerprinter.processes.submit(int).result()
    while len(pipeline.fingerprinter.processes.processes()) < 2:
        time.sleep(0.05)
    print(*(child.pid for child in pipeline.fingerprinter.processes.processes()), flush=True)
    time.sleep(120)
"""


def alive(pid: int) -> bool:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return False
    return "\nState:\tZ" not in status  # a zombie has exited


def test_worker_processes_exit_when_the_crawl_is_killed(tmp_path):
    """kill -9 cannot let a crawl stop its workers: they go on their own, not left to wait
    for pages forever."""
    script = tmp_path / "open_and_wait.py"
    script.write_text(OPEN_AND_WAIT)
    crawl = subprocess.Popen(
        [sys.executable, str(script)], stdout=subprocess.PIPE, text=True, cwd=tmp_path
    )
    try:
        assert crawl.stdout is not None
        workers = [int(pid) for pid in crawl.stdout.readline().split()]
        assert len(workers) == 2 and all(alive(pid) for pid in workers)
    finally:
        crawl.send_signal(signal.SIGKILL)
        crawl.wait()
    deadline = time.monotonic() + 15
    while any(alive(pid) for pid in workers) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not [pid for pid in workers if alive(pid)]


def exit_worker(*args: object, **kwargs: object) -> None:
    """In place of the page's fingerprints: the worker process dies (a crash in an
    extractor, or a kill by the system)."""
    os._exit(1)


def test_a_worker_that_dies_on_a_page_loses_no_item(monkeypatch, caplog):
    """A worker process that dies (not one replaced for a timeout) breaks the pool: the item
    is kept unchecked and counted, and later pages go to new workers (before: the item
    failed with BrokenProcessPool, and the pool stayed broken)."""
    pipeline = make_pipeline({"DEDUP_CONTENT_WORKERS": 1})
    pipeline.fingerprinter.processes.submit(int).result()
    monkeypatch.setattr(crawler.content.page_fingerprinter, "fingerprint_page_within", exit_worker)
    with caplog.at_level(logging.WARNING, logger="crawler.content.page_fingerprinter"):
        item = process(pipeline, {"url": "https://a.test/crash", "html": page(PARAGRAPHS)})
    assert item["url"] == "https://a.test/crash"
    assert stats(pipeline)["dedup/content/timeout"] == 1
    assert "a worker process died while extracting https://a.test/crash" in caplog.text
    monkeypatch.undo()
    process(pipeline, {"url": "https://a.test/1", "html": page(PARAGRAPHS)})
    with pytest.raises(DropItem, match=re.escape("Exact duplicate of https://a.test/1")):
        process(pipeline, {"url": "https://a.test/2", "html": page(PARAGRAPHS) + "\n"})
    pipeline.close_spider()


def test_a_page_waiting_behind_slow_ones_has_its_own_time_limit():
    """With one worker, a page given to the workers while two slow pages run or wait is
    checked: each page's time limit counts in the worker, from when it starts there (it
    used to count from the hand-over, so the page timed out with the second slow one,
    unchecked)."""
    pipeline = make_pipeline(
        {"DEDUP_CONTENT_WORKERS": 1, "DEDUP_EXTRACT_TIMEOUT": 2, "DEDUP_EXTRACTOR": "trafilatura"}
    )
    pipeline.fingerprinter.processes.submit(int).result()
    flood = "<html><body>" + "".join(f"<p>word {n} here" for n in range(100_000))
    items = [{"url": f"https://a.test/flood-{n}", "html": flood + f"<p>{n}"} for n in (1, 2)]
    items.append({"url": "https://a.test/article", "html": page(PARAGRAPHS)})

    async def crawl() -> list:
        started = []
        for item in items:  # in this order
            started.append(asyncio.ensure_future(pipeline.process_item(item)))
            await asyncio.sleep(0.2)
        return list(await asyncio.gather(*started))

    assert [item["url"] for item in asyncio.run(crawl())] == [item["url"] for item in items]
    counts = stats(pipeline)
    assert counts["dedup/content/timeout"] == 2
    assert counts["dedup/content/unique"] == 1  # the article was checked
    pipeline.close_spider()


def test_fingerprint_page_within_gives_a_slow_page_up_and_leaves_no_timer():
    flood = "<html><body>" + "".join(f"<p>word {n} here" for n in range(100_000))
    handler = signal.getsignal(signal.SIGALRM)  # pytest-timeout's, in CI
    signal.setitimer(signal.ITIMER_REAL, 600)  # a timer of the caller's own
    started = time.monotonic()
    try:
        assert fingerprint_page_within(0.5, flood, extractor="trafilatura").status == "timeout"
        assert time.monotonic() - started < 0.5 + 2
        assert signal.getsignal(signal.SIGALRM) is handler
        assert 590 < signal.getitimer(signal.ITIMER_REAL)[0] <= 600  # set again, not reset
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
    ok = fingerprint_page_within(5, page(PARAGRAPHS))
    assert ok.status == "ok" and ok.fingerprint is not None


def test_a_timeout_swallowed_where_python_ignores_exceptions_fires_again(monkeypatch):
    """An exception raised while a garbage-collector callback runs is printed and dropped:
    the timer fires again until the page is given up."""
    swallowed = []

    def slow_callback(phase: str, info: dict) -> None:
        if phase == "stop" and not swallowed:
            swallowed.append(True)
            deadline = time.monotonic() + 0.4
            while time.monotonic() < deadline:  # the 0.2 s timer fires in here
                pass

    def slow_page(*args: object, **kwargs: object) -> PageFingerprint:
        gc.callbacks.append(slow_callback)
        try:
            gc.collect()
        finally:
            gc.callbacks.remove(slow_callback)
        deadline = time.monotonic() + 2
        while time.monotonic() < deadline:
            pass
        return PageFingerprint("ok", None)

    monkeypatch.setattr(pages, "fingerprint_page", slow_page)
    timer_before = signal.getitimer(signal.ITIMER_REAL)  # pytest-timeout's, in CI
    started = time.monotonic()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # pytest reports the swallowed exception
        assert pages.fingerprint_page_within(0.2, "<p>x</p>").status == "timeout"
    assert swallowed and time.monotonic() - started < 1.5
    assert signal.getitimer(signal.ITIMER_REAL)[1] == timer_before[1]  # no repeat left set


CONSOLE_SCRIPT_LIKE_MAIN = """
import json
from scrapy.cmdline import execute  # what Scrapy's console script imports
from scrapy import Spider
from scrapy.utils.misc import build_from_crawler
from scrapy.utils.test import get_crawler
from crawler.pipelines import NearDuplicatePipeline
from tests.probes.worker_probe import imported

class NamedSpider(Spider):
    name = "named"

if __name__ == "__main__":
    crawler = get_crawler(NamedSpider, {"DEDUP_CONTENT_WORKERS": 1})
    pipeline = build_from_crawler(NearDuplicatePipeline, crawler)
    pipeline.open_spider()
    names = ["scrapy", "twisted", "crawler.content.pages"]
    print(json.dumps(pipeline.fingerprinter.processes.submit(imported, names).result()))
    pipeline.close_spider()
"""


def test_workers_do_not_run_the_crawls_main_script(tmp_path):
    """``scrapy crawl``'s main script imports Scrapy; a spawned worker that ran it again
    would hold Scrapy and Twisted in memory for nothing (about 20 MB each)."""
    main = tmp_path / "scrapy_like_main.py"
    main.write_text(CONSOLE_SCRIPT_LIKE_MAIN)
    result = subprocess.run(
        [sys.executable, str(main)],
        cwd=REPO_ROOT,
        env={**os.environ, "PYTHONPATH": str(REPO_ROOT)},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert json.loads(result.stdout) == {
        "scrapy": False,
        "twisted": False,
        "crawler.content.pages": True,
    }


def distinct_articles(count: int, paragraphs: int = 60) -> list[str]:
    """*count* pages of *paragraphs* paragraphs of random words each (the same on every
    run): no two of them near copies."""
    draw = random.Random(0)
    words = [
        "".join(draw.choices(string.ascii_lowercase, k=draw.randint(2, 9))) for _ in range(9999)
    ]
    return [
        page([" ".join(draw.choices(words, k=40)) + "." for _ in range(paragraphs)])
        for _ in range(count)
    ]


def processed_at_once(pipeline: NearDuplicatePipeline, articles: list[str]) -> list:
    """The items of *articles* (at ``https://a.test/<n>``) handed to *pipeline* all at once,
    as a burst of responses' items reaches it; the items kept."""

    async def all_at_once() -> list:
        items = [{"url": f"https://a.test/{n}", "html": html} for n, html in enumerate(articles)]
        return await asyncio.gather(*map(pipeline.process_item, items))

    return asyncio.run(all_at_once())


def burst_of_pages(pages: int) -> tuple[NearDuplicatePipeline, list[str], list[str]]:
    """A pipeline (trafilatura, no limit on the pages held) that extracted a first page in
    the crawl process; *pages* articles for a burst, and three more for later."""
    articles = distinct_articles(pages + 4, paragraphs=200)
    later = [articles.pop() for _ in range(3)]
    pipeline = make_pipeline(
        {"DEDUP_EXTRACTOR": "trafilatura", "SCRAPER_SLOT_MAX_ACTIVE_SIZE": 10**9}
    )
    process(pipeline, {"url": "https://a.test/first", "html": articles.pop()})
    return pipeline, articles, later


def later_pages_go_to_the_worker(pipeline: NearDuplicatePipeline, later: list[str]) -> None:
    """Once the worker process has answered, the pages of *later* go to it, none to the
    crawl process's thread (which took pages while the worker started)."""
    pipeline.fingerprinter._first_started.result(timeout=60)
    in_process = pipeline.crawler.stats.get_value("dedup/extract/in_process")
    for n, html in enumerate(later):
        process(pipeline, {"url": f"https://later.test/{n}", "html": html})
    assert pipeline.crawler.stats.get_value("dedup/extract/in_process") == in_process


def test_by_default_pages_are_extracted_in_the_crawl_process_while_it_keeps_up():
    pipeline = make_pipeline()
    process(pipeline, {"url": "https://a.test/1", "html": page(PARAGRAPHS)})
    with pytest.raises(DropItem, match=re.escape("Exact duplicate of https://a.test/1")):
        process(pipeline, {"url": "https://a.test/2", "html": page(PARAGRAPHS) + "\n"})
    assert pipeline.fingerprinter.processes is None
    assert pipeline.crawler.stats.get_value("dedup/extract/in_process") == 2
    assert pipeline.crawler.stats.get_value("dedup/extract/workers_started") is None
    pipeline.close_spider()


def test_by_default_a_spare_worker_waits_and_stops_once_the_crawl_process_kept_up(monkeypatch):
    monkeypatch.setattr(crawler.content.page_fingerprinter, "AUTO_SPARE_SECONDS", math.inf)
    pipeline = make_pipeline()
    spare = pipeline.fingerprinter._spare.processes
    assert spare is not None
    spare.started.result(timeout=60)
    (child,) = spare.processes()
    first, second = distinct_articles(2)
    process(pipeline, {"url": "https://a.test/1", "html": first})
    assert pipeline.fingerprinter._spare.processes is spare  # still waiting
    monkeypatch.setattr(crawler.content.page_fingerprinter, "AUTO_SPARE_SECONDS", 0.0)
    process(pipeline, {"url": "https://a.test/2", "html": second})
    assert pipeline.fingerprinter._spare.processes is None
    assert child.poll() == 0  # stopped, not killed
    assert pipeline.fingerprinter.processes is None
    assert pipeline.crawler.stats.get_value("dedup/extract/in_process") == 2
    pipeline.close_spider()


def test_by_default_worker_processes_start_once_pages_wait_for_the_crawl_process(
    caplog, monkeypatch
):
    """Pages waiting for the crawl process's extraction that reach
    SCRAPER_SLOT_MAX_ACTIVE_SIZE (here ten pages' worth) a quarter of AUTO_WORKERS_AFTER
    (here 0.2 s) start the worker processes, which take every later page; each page is
    checked once, wherever it ran. 48 pages arrive at once: more than ten wait while 38
    are extracted, 0.6 s with trafilatura (17 ms a page on a 2-core Xeon of 2026), twelve
    times the 0.05 s needed. The other signs are left out."""
    monkeypatch.setattr(crawler.content.page_fingerprinter, "AUTO_WORKERS_AFTER", 0.2)
    monkeypatch.setattr(crawler.content.page_fingerprinter, "AUTO_WORKERS_CPU_SHARE", 3.0)
    monkeypatch.setattr(crawler.content.page_fingerprinter, "AUTO_EXTRACTION_SHARE", 3.0)
    monkeypatch.setattr(crawler.content.page_fingerprinter, "AUTO_SPARE_SECONDS", math.inf)
    articles = distinct_articles(51, paragraphs=200)
    later = [articles.pop() for _ in range(3)]
    pipeline = make_pipeline(
        {"DEDUP_EXTRACTOR": "trafilatura", "SCRAPER_SLOT_MAX_ACTIVE_SIZE": 10 * len(articles[0])}
    )
    spare = pipeline.fingerprinter._spare.processes
    assert spare is not None

    async def all_at_once() -> list:
        items = [{"url": f"https://a.test/{n}", "html": html} for n, html in enumerate(articles)]
        copy = {"url": "https://b.test/0", "html": articles[0] + "\n"}
        kept = await asyncio.gather(*map(pipeline.process_item, items))
        try:
            await pipeline.process_item(copy)
        except DropItem:
            return kept
        raise AssertionError("the copy was kept")

    with caplog.at_level(logging.INFO, logger="crawler.content.page_fingerprinter"):
        kept = asyncio.run(all_at_once())
    assert [item["url"] for item in kept] == [f"https://a.test/{n}" for n in range(48)]
    # one worker first: the pages left after it started were not enough to hold the crawl
    # back for it too (the next test)
    assert pipeline.crawler.stats.get_value("dedup/extract/workers_started") == 1
    assert pipeline.fingerprinter.started == 1
    assert pipeline.fingerprinter.processes is spare  # ready since the spider opened
    assert pipeline.fingerprinter._spare.processes is None
    assert (
        "the crawl process's extraction fell behind (the pages waiting for it reached "
        "SCRAPER_SLOT_MAX_ACTIVE_SIZE, where Scrapy stops downloading, 25% of 0.2 s)"
    ) in caplog.text
    assert pipeline.crawler.stats.get_value("dedup/extract/in_process") > 0
    later_pages_go_to_the_worker(pipeline, later)
    assert stats(pipeline)["dedup/content/unique"] == 51
    pipeline.close_spider()


def test_by_default_pages_that_do_not_stop_scrapys_downloads_keep_the_lane_open(
    monkeypatch,
):
    """60 pages at once keep the crawl process's extraction busy for about a second, twice
    AUTO_WORKERS_AFTER (here 0.5 s), but they hold 2.9 MB, less than Scrapy's
    SCRAPER_SLOT_MAX_ACTIVE_SIZE (5 MB), so Scrapy would not have stopped downloading for
    them: by that sign alone (the crawl process's load is the next test's) no worker
    process starts. No page waits for the lane 0.5 s: six threads take
    pages to it, each behind five others at most (0.1 s), once a first page has loaded
    trafilatura (its first call took 0.3 s more, and a page behind it waited 0.5 s in one
    run of three)."""
    monkeypatch.setattr(crawler.content.page_fingerprinter, "AUTO_WORKERS_AFTER", 0.5)
    # more than the two cores a process of this machine can keep busy: never reached
    monkeypatch.setattr(crawler.content.page_fingerprinter, "AUTO_WORKERS_CPU_SHARE", 3.0)
    monkeypatch.setattr(crawler.content.page_fingerprinter, "AUTO_EXTRACTION_SHARE", 3.0)
    threads = set()
    extract = crawler.content.page_fingerprinter.fingerprint_page

    def fingerprint_page(*args, **kwargs):
        threads.add(threading.current_thread().name)
        return extract(*args, **kwargs)

    monkeypatch.setattr(crawler.content.page_fingerprinter, "fingerprint_page", fingerprint_page)
    articles = distinct_articles(61, paragraphs=200)
    assert sum(map(len, articles)) < 5_000_000
    pipeline = make_pipeline({"DEDUP_EXTRACTOR": "trafilatura"})
    process(pipeline, {"url": "https://a.test/first", "html": articles.pop()})

    started = time.perf_counter()
    kept = processed_at_once(pipeline, articles)
    assert time.perf_counter() - started > 0.5  # the lane was busy longer than the window
    assert len(kept) == 60
    assert pipeline.crawler.stats.get_value("dedup/extract/in_process") == 61
    # one thread, so one of glibc's heaps holds what the pages' parses leave behind
    assert len(threads) == 1, threads
    assert pipeline.crawler.stats.get_value("dedup/extract/workers_started") is None
    assert pipeline.fingerprinter.processes is None
    pipeline.close_spider()


def test_by_default_a_crawl_process_kept_busy_starts_a_worker(caplog, monkeypatch):
    """The same 60 pages at once, which keep the crawl process's extraction busy (a core)
    for about a second: past AUTO_WORKERS_AFTER (here 0.5 s) at 80% of a core or more, the
    worker process starts, and takes the later pages once it has (the crawl process goes
    on extracting meanwhile: all 60 were done there before it answered in 2 runs of 12);
    each page is checked once, wherever it ran. The other signs are left out."""
    monkeypatch.setattr(crawler.content.page_fingerprinter, "AUTO_WORKERS_AFTER", 0.5)
    monkeypatch.setattr(crawler.content.page_fingerprinter, "AUTO_EXTRACTION_SHARE", 3.0)
    pipeline, articles, later = burst_of_pages(60)

    with caplog.at_level(logging.INFO, logger="crawler.content.page_fingerprinter"):
        kept = processed_at_once(pipeline, articles)
    assert len(kept) == 60
    assert (
        "the crawl process's extraction fell behind (the crawl process kept 80% of a core "
        "busy over 0.5 s)"
    ) in caplog.text
    assert pipeline.crawler.stats.get_value("dedup/extract/workers_started") == 1
    assert pipeline.crawler.stats.get_value("dedup/extract/in_process") > 0
    later_pages_go_to_the_worker(pipeline, later)
    assert stats(pipeline)["dedup/content/unique"] == 64
    pipeline.close_spider()


def test_by_default_pages_taking_a_quarter_of_a_core_start_a_worker_and_stay_until_it_answers(
    caplog, monkeypatch
):
    """60 pages at once: extracted in the crawl process, they take a whole core
    (17 ms a page with trafilatura), four times AUTO_EXTRACTION_SHARE of it: within
    AUTO_EXTRACTION_WINDOW (0.5 s), after about eight pages, long before the pages held or
    the whole process's load (both left out here) would say so. The worker process takes a
    few tenths of a second to start (its interpreter and imports); meanwhile pages are
    still extracted in the crawl process rather than wait for it. Each page is checked
    once."""
    monkeypatch.setattr(crawler.content.page_fingerprinter, "AUTO_WORKERS_CPU_SHARE", 3.0)
    pipeline, articles, later = burst_of_pages(60)
    fingerprinter = pipeline.fingerprinter
    at_the_start: list[int] = []
    start_workers = fingerprinter._start_workers

    def counted_start_workers(why: str) -> None:
        at_the_start.append(pipeline.crawler.stats.get_value("dedup/extract/in_process"))
        start_workers(why)

    monkeypatch.setattr(fingerprinter, "_start_workers", counted_start_workers)

    with caplog.at_level(logging.INFO, logger="crawler.content.page_fingerprinter"):
        kept = processed_at_once(pipeline, articles)
    assert len(kept) == 60
    assert (
        "the crawl process's extraction fell behind (the pages extracted there took 25% of "
        "a core over 0.5 s)"
    ) in caplog.text
    assert pipeline.crawler.stats.get_value("dedup/extract/workers_started") == 1
    assert 5 <= at_the_start[0] < 30  # 0.5 s of pages at most, and the first one
    # more while the worker started
    assert pipeline.crawler.stats.get_value("dedup/extract/in_process") > at_the_start[0]
    later_pages_go_to_the_worker(pipeline, later)
    assert stats(pipeline)["dedup/content/unique"] == 64
    pipeline.close_spider()


def test_by_default_a_page_of_tags_never_closed_goes_to_a_worker_process_and_its_time_limit():
    pipeline = make_pipeline({"DEDUP_EXTRACT_TIMEOUT": 2, "DEDUP_EXTRACTOR": "trafilatura"})
    # 100,000 paragraphs never closed: trafilatura takes tens of seconds over it
    flood = "<html><body>" + "".join(f"<p>word {n} here" for n in range(100_000))
    item = process(pipeline, {"url": "https://a.test/flood", "html": flood})
    assert item["url"] == "https://a.test/flood"  # kept, unchecked
    assert stats(pipeline)["dedup/content/timeout"] == 1
    assert pipeline.crawler.stats.get_value("dedup/extract/in_process") is None
    assert pipeline.crawler.stats.get_value("dedup/extract/workers_started") == 1
    pipeline.close_spider()


def with_one_worker_of_three(monkeypatch, page_size: int) -> NearDuplicatePipeline:
    """A pipeline of ``"auto"`` workers on four cores whose first worker a page of nested
    tags started; the crawl stops downloading at ten pages of *page_size* held, and the
    window of AUTO_WORKERS_AFTER is 0.2 s."""
    monkeypatch.setattr(crawler.content.page_fingerprinter, "AUTO_WORKERS_AFTER", 0.2)
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1, 2, 3})
    pipeline = make_pipeline(
        {"DEDUP_EXTRACTOR": "trafilatura", "SCRAPER_SLOT_MAX_ACTIVE_SIZE": 10 * page_size}
    )
    nested = "<html><body>" + "<div>" * 2_000 + "A page of nested tags."
    process(pipeline, {"url": "https://a.test/nested", "html": nested})
    assert pipeline.fingerprinter.started == 1
    return pipeline


def test_by_default_the_other_worker_processes_start_once_pages_wait_for_the_first(
    caplog, monkeypatch
):
    """A worker process that falls behind in turn, by the same sign as the crawl process
    (pages held reached SCRAPER_SLOT_MAX_ACTIVE_SIZE, here ten pages' worth, a quarter of
    AUTO_WORKERS_AFTER, here 0.2 s), is joined by the others, one per core but one in all
    (three of four here). A page too deeply nested starts the first worker; then 96 pages
    arrive at once: one worker needs 1.6 s for them (17 ms a page with trafilatura), eight
    times the 0.2 s of the window.
    Every page is checked once, wherever it ran."""
    articles = distinct_articles(96, paragraphs=200)
    pipeline = with_one_worker_of_three(monkeypatch, len(articles[0]))

    with caplog.at_level(logging.INFO, logger="crawler.content.page_fingerprinter"):
        kept = processed_at_once(pipeline, articles)
    assert [item["url"] for item in kept] == [f"https://a.test/{n}" for n in range(96)]
    assert pipeline.fingerprinter.started == 3
    assert pipeline.crawler.stats.get_value("dedup/extract/workers_started") == 3
    assert "the worker process fell behind in turn" in caplog.text
    assert "3 worker processes extract pages from now on" in caplog.text
    assert stats(pipeline)["dedup/content/unique"] == 96
    pipeline.close_spider()


def test_by_default_pages_that_never_wait_for_the_first_worker_start_no_other(monkeypatch):
    """The same pages one at a time, after a page too deeply nested started a worker: none
    waits for another, so the pages held never reach the limit and one worker does it all."""
    articles = distinct_articles(24, paragraphs=200)
    pipeline = with_one_worker_of_three(monkeypatch, len(articles[0]))
    for number, html in enumerate(articles):
        process(pipeline, {"url": f"https://a.test/{number}", "html": html})
    assert pipeline.fingerprinter.started == 1
    assert pipeline.crawler.stats.get_value("dedup/extract/workers_started") == 1
    assert stats(pipeline)["dedup/content/unique"] == 24
    pipeline.close_spider()


def test_a_page_queued_behind_a_stuck_worker_is_checked_by_the_new_workers():
    """One worker, stuck in one call into C code on a page (20,000 nested tags never closed:
    resiliparse's main-content walk takes minutes and no signal stops it), is replaced;
    the pages waiting for a worker go to the new one and are checked. (With a process
    pool, the page queued behind it had its future cancelled, which reached asyncio as a
    cancellation, and the item vanished from the crawl: no item, no drop, no error; met in
    tests/crawls/test_hostile_pages.py.)"""
    pipeline = make_pipeline(
        {"DEDUP_CONTENT_WORKERS": 1, "DEDUP_EXTRACT_TIMEOUT": 1, "DEDUP_EXTRACTOR": "resiliparse"}
    )
    pipeline.fingerprinter.processes.submit(int).result()
    unclosed = "<html><body>" + "<div><span><b>deep " * 20_000

    stories = distinct_articles(3, paragraphs=10)

    async def all_of_them() -> list:
        items = [{"url": "https://a.test/unclosed", "html": unclosed}]
        items += [{"url": f"https://a.test/{n}", "html": html} for n, html in enumerate(stories)]
        return await asyncio.gather(*map(pipeline.process_item, items))

    kept = asyncio.run(all_of_them())
    assert [item["url"] for item in kept] == [
        "https://a.test/unclosed",
        *(f"https://a.test/{n}" for n in range(3)),
    ]
    # the page the stuck worker held runs out of time (given up, counted); the pages that
    # waited for a worker, or went before it, are checked
    outcomes = stats(pipeline)
    assert outcomes["dedup/content/timeout"] == 1
    assert outcomes["dedup/content/unique"] == 3
    pipeline.close_spider()


@pytest.fixture
def threads_used(monkeypatch) -> list[str]:
    """The names of the functions the content pipeline's decisions ran in threads."""
    used: list[str] = []
    original = crawler.pipeline_decisions.in_thread

    async def counted(function, *args):
        used.append(function.__name__)
        return await original(function, *args)

    monkeypatch.setattr(crawler.pipeline_decisions, "in_thread", counted)
    return used


def test_pages_go_to_the_workers_from_the_event_loop_and_are_decided_as_from_threads(
    threads_used,
):
    articles = distinct_articles(5)
    items = [
        *({"url": f"https://a.test/{n}", "html": html} for n, html in enumerate(articles)),
        {"url": "https://a.test/0-again", "html": articles[0]},  # the same body
        {"url": "https://a.test/1-copy", "html": articles[1].replace("<body>", "<body>Print")},
        {"url": "https://a.test/given-text", "text": "a few words given as text " * 20},
    ]

    async def decided(pipeline: NearDuplicatePipeline) -> list[str]:
        await asyncio.wrap_future(pipeline.fingerprinter.processes.started)
        outcomes = []
        for item in items:
            try:
                await pipeline.process_item(dict(item))
                outcomes.append("kept")
            except DropItem as exc:
                outcomes.append(str(exc))
        return outcomes

    from_threads = make_pipeline({"DEDUP_CONTENT_WORKERS": 1})
    assert isinstance(from_threads.fingerprinter.processes, WorkerProcesses)
    threaded = asyncio.run(decided(from_threads))
    from_threads.close_spider()
    assert len(threads_used) == len(items)

    async def on_the_loop() -> tuple[list[str], dict, bool]:
        pipeline = make_pipeline({"DEDUP_CONTENT_WORKERS": 1})  # opened on a running loop
        assert isinstance(pipeline.fingerprinter.processes, LoopWorkerProcesses)
        try:
            outcomes = await decided(pipeline)
            return outcomes, stats(pipeline), pipeline.fingerprinter.on_loop()
        finally:
            pipeline.close_spider()

    threads_used.clear()
    outcomes, loop_stats, on_loop = asyncio.run(on_the_loop())
    assert on_loop
    assert threads_used == []  # no thread between the loop and the worker, nor for the index
    assert outcomes == threaded
    assert outcomes[:5] == ["kept"] * 5
    assert outcomes[5].startswith("Exact duplicate of https://a.test/0 ")
    assert outcomes[6].startswith("Near duplicate of https://a.test/1 ")
    assert outcomes[7] == "kept"
    assert loop_stats == stats(from_threads)
    assert loop_stats["dedup/extract/same_body"] == 1


def test_a_look_up_that_writes_the_whole_snapshot_is_made_in_a_thread_not_on_the_loop(
    tmp_path, threads_used
):
    settings = {"DEDUP_CONTENT_WORKERS": 1, "JOBDIR": str(tmp_path), "DEDUP_SNAPSHOT_EVERY": 3}

    async def crawl() -> None:
        pipeline = make_pipeline(settings)
        await asyncio.wrap_future(pipeline.fingerprinter.processes.started)
        for n, html in enumerate(distinct_articles(7)):
            await pipeline.process_item({"url": f"https://a.test/{n}", "html": html})
        pipeline.close_spider()

    asyncio.run(crawl())
    assert threads_used == ["_decision", "_decision"]  # the 3rd and the 6th document
