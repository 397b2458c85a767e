from __future__ import annotations

import json
import logging

import pytest
from scrapy import Request, Spider
from scrapy import signals as scrapy_signals
from scrapy.core.scheduler import Scheduler
from scrapy.spiders import CrawlSpider
from scrapy.utils.misc import build_from_crawler
from scrapy.utils.test import get_crawler

from crawler import signals as dedup_signals
from crawler.dupefilters import META_KEY, URLDupeFilter, request_to_dict
from crawler.pipelines import NearDuplicatePipeline
from crawler.state.persistence import StateFileError
from tests.conftest import ManualClock

BACKENDS = ["bloom", "memory"]


class NamedSpider(Spider):
    name = "named"


def make_dupefilter(settings: dict | None = None) -> URLDupeFilter:
    crawler = get_crawler(NamedSpider, {"DEDUP_URL_CAPACITY": 10_000, **(settings or {})})
    crawler.spider = crawler._create_spider()
    return build_from_crawler(URLDupeFilter, crawler)


@pytest.fixture(params=BACKENDS)
def backend(request):
    return request.param


def test_from_crawler_with_scheduler(backend):
    crawler = get_crawler(
        NamedSpider,
        {
            "DUPEFILTER_CLASS": URLDupeFilter,
            "DUPEFILTER_DEBUG": True,
            "DEDUP_URL_BACKEND": backend,
            "DEDUP_URL_CAPACITY": 1000,
        },
    )
    scheduler = Scheduler.from_crawler(crawler)
    assert isinstance(scheduler.df, URLDupeFilter)
    assert scheduler.df.debug
    assert scheduler.df.seen_kind == backend


def test_filter(backend):
    dupefilter = make_dupefilter({"DEDUP_URL_BACKEND": backend})
    dupefilter.open()
    assert not dupefilter.request_seen(Request("http://scrapytest.org/1"))
    assert dupefilter.request_seen(Request("http://scrapytest.org/1"))
    assert not dupefilter.request_seen(Request("http://scrapytest.org/2"))
    # canonical variants of a seen URL are seen
    assert dupefilter.request_seen(Request("HTTP://ScrapyTest.org:80/2/?utm_source=x#top"))
    # method and body make a request different
    assert not dupefilter.request_seen(Request("http://scrapytest.org/1", method="HEAD"))
    post = Request("http://scrapytest.org/1", method="POST", body=b"a=1")
    assert not dupefilter.request_seen(post)
    assert dupefilter.request_seen(post.replace())
    assert not dupefilter.request_seen(post.replace(body=b"a=2"))
    dupefilter.close("finished")


def test_state_dir_persists_across_instances(tmp_path, backend):
    settings = {"DEDUP_URL_BACKEND": backend, "JOBDIR": str(tmp_path)}
    first = make_dupefilter(settings)
    first.open()
    assert not first.request_seen(Request("http://scrapytest.org/1"))
    first.close("finished")

    second = make_dupefilter(settings)
    second.open()
    assert second.request_seen(Request("http://scrapytest.org/1/"))
    assert not second.request_seen(Request("http://scrapytest.org/2"))
    second.close("finished")
    assert (tmp_path / "seen-urls.snapshot").exists()


@pytest.mark.parametrize("setting", ["DEDUP_STATE_DIR", "JOBDIR"])
def test_a_state_dir_that_is_a_file_is_refused_naming_the_setting(tmp_path, setting):
    a_file = tmp_path / "state"
    a_file.write_text("not a directory")
    with pytest.raises(ValueError, match=f"{setting}=.*state' is a file"):
        make_dupefilter({setting: str(a_file)})
    with pytest.raises(ValueError, match=f"{setting}=.*state' is a file"):
        build_from_crawler(NearDuplicatePipeline, get_crawler(Spider, {setting: str(a_file)}))


def test_dedup_state_dir_wins_over_jobdir(tmp_path):
    dupefilter = make_dupefilter(
        {"JOBDIR": str(tmp_path / "job"), "DEDUP_STATE_DIR": str(tmp_path / "state")}
    )
    dupefilter.open()
    dupefilter.close("finished")
    assert (tmp_path / "state" / "seen-urls.snapshot").exists()
    assert not (tmp_path / "job" / "seen-urls.snapshot").exists()


def test_killed_process_loses_no_seen_url(tmp_path, backend):
    settings = {"DEDUP_URL_BACKEND": backend, "DEDUP_STATE_DIR": str(tmp_path)}
    first = make_dupefilter(settings)
    first.open()
    for i in range(50):
        first.request_seen(Request(f"http://scrapytest.org/{i}"))
    # no close(): the journal alone must carry the 50 URLs
    second = make_dupefilter(settings)
    second.open()
    assert all(second.request_seen(Request(f"http://scrapytest.org/{i}")) for i in range(50))


def test_state_written_with_other_rules_stops_the_crawl(tmp_path):
    first = make_dupefilter({"DEDUP_STATE_DIR": str(tmp_path)})
    first.open()
    first.close("finished")
    other = make_dupefilter({"DEDUP_STATE_DIR": str(tmp_path), "DEDUP_URL_LOWERCASE_PATH": True})
    with pytest.raises(StateFileError, match="DEDUP_URL_LOWERCASE_PATH: False -> True"):
        other.open()
    resized = make_dupefilter({"DEDUP_STATE_DIR": str(tmp_path), "DEDUP_URL_CAPACITY": 20_000})
    with pytest.raises(StateFileError, match="DEDUP_URL_CAPACITY: 10000 -> 20000"):
        resized.open()


def test_failed_open_leaves_the_state_dir_untouched(tmp_path):
    """Scrapy still calls close() after open() raised: it must not rewrite the state."""
    first = make_dupefilter({"DEDUP_STATE_DIR": str(tmp_path)})
    first.open()
    first.request_seen(Request("http://scrapytest.org/1"))
    first.close("finished")
    before = {path.name: path.read_bytes() for path in tmp_path.iterdir()}
    other = make_dupefilter({"DEDUP_STATE_DIR": str(tmp_path), "DEDUP_URL_LOWERCASE_PATH": True})
    with pytest.raises(StateFileError):
        other.open()
    other.close("shutdown")
    assert {path.name: path.read_bytes() for path in tmp_path.iterdir()} == before


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"DEDUP_URL_BACKEND": "sqlite"}, "DEDUP_URL_BACKEND='sqlite' is not a URL store"),
        ({"DEDUP_URL_CAPACITY": 0}, "DEDUP_URL_CAPACITY=0 must be a positive"),
        ({"DEDUP_URL_ERROR_RATE": 2}, "DEDUP_URL_ERROR_RATE=2.0 must be a probability"),
    ],
)
def test_bad_settings_name_the_setting(settings, message):
    with pytest.raises(ValueError, match=message):
        make_dupefilter(settings)


def test_memory_only_is_said_once_at_info(caplog):
    with caplog.at_level(logging.INFO, logger="crawler.dupefilters"):
        make_dupefilter()
    assert [r.getMessage() for r in caplog.records if "memory only" in r.getMessage()] == [
        "URL dedup (bloom) keeps its state in memory only: set DEDUP_STATE_DIR or "
        "JOBDIR to persist it across runs"
    ]


def test_log_once(caplog, backend):
    dupefilter = make_dupefilter({"DEDUP_URL_BACKEND": backend})
    spider = dupefilter.crawler.spider
    dupefilter.open()
    request = Request("http://scrapytest.org/index.html")
    dupefilter.request_seen(request)
    with caplog.at_level(logging.DEBUG, logger="crawler.dupefilters"):
        for _ in range(2):
            assert dupefilter.request_seen(request)
            dupefilter.log(request, spider)
    assert caplog.record_tuples == [
        (
            "crawler.dupefilters",
            logging.DEBUG,
            "Filtered duplicate request: <GET http://scrapytest.org/index.html> - no more"
            " duplicates will be shown (see DUPEFILTER_DEBUG to show all duplicates)",
        )
    ]
    assert dupefilter.crawler.stats.get_value("dupefilter/filtered") == 2
    dupefilter.close("finished")  # reasons are published every 1000 and at close
    assert dupefilter.crawler.stats.get_value("dedup/url/filtered/repeat") == 2


def test_log_debug_with_referer(caplog, backend):
    dupefilter = make_dupefilter({"DEDUP_URL_BACKEND": backend, "DUPEFILTER_DEBUG": True})
    spider = dupefilter.crawler.spider
    dupefilter.open()
    first = Request("http://scrapytest.org/index.html")
    second = Request(
        "http://scrapytest.org/index.html?utm_source=feed",
        headers={"Referer": "http://scrapytest.org/INDEX.html"},
    )
    dupefilter.request_seen(first)
    with caplog.at_level(logging.DEBUG, logger="crawler.dupefilters"):
        for request in (first, second):
            assert dupefilter.request_seen(request)
            dupefilter.log(request, spider)
    assert [message for _, _, message in caplog.record_tuples] == [
        "Filtered duplicate request: <GET http://scrapytest.org/index.html> (referer: None)",
        "Filtered duplicate request: <GET http://scrapytest.org/index.html?utm_source=feed>"
        " (referer: http://scrapytest.org/INDEX.html)",
    ]
    stats = dupefilter.crawler.stats
    assert stats.get_value("dupefilter/filtered") == 2
    dupefilter.close("finished")
    assert stats.get_value("dedup/url/filtered/repeat") == 1
    assert stats.get_value("dedup/url/filtered/strip-tracking-params") == 1


def test_stats_and_summary_at_close(caplog, backend):
    dupefilter = make_dupefilter({"DEDUP_URL_BACKEND": backend})
    spider = dupefilter.crawler.spider
    dupefilter.open()
    for url in ("http://a.test/x", "http://a.test/y", "http://a.test/x#top"):
        request = Request(url)
        if dupefilter.request_seen(request):
            dupefilter.log(request, spider)
    with caplog.at_level(logging.INFO, logger="crawler.dupefilters"):
        dupefilter.close("finished")
    stats = dupefilter.crawler.stats
    assert stats.get_value("dedup/url/new") == 2
    assert stats.get_value(f"dedup/{backend}/entries") == 2
    summary = caplog.records[-1].getMessage()
    assert summary.startswith(
        "URL dedup: 1 requests filtered (drop-fragment: 1), 2 new URLs; "
        f"{backend} store holds 2 URLs"
    )
    if backend == "bloom":
        assert stats.get_value("dedup/bloom/fill_ratio") == pytest.approx(2 / 10_000)
        assert "0.0% of capacity, estimated false-positive rate" in summary


def test_filtered_requests_are_audited_with_their_canonical_url(tmp_path):
    audit = tmp_path / "audit" / "dedup.jsonl"
    dupefilter = make_dupefilter({"DEDUP_URL_BACKEND": "memory", "DEDUP_AUDIT_FILE": str(audit)})
    spider = dupefilter.crawler.spider
    dupefilter.open()
    urls = [
        "http://a.test/x?id=1",
        "http://a.test/x?utm_source=mail&id=1&fbclid=abc#top",
        "http://a.test/x?id=1",
        "http://a.test/y",
    ]
    for url in urls:
        request = Request(url, headers={"Referer": "http://a.test/"})
        if dupefilter.request_seen(request):
            dupefilter.log(request, spider)
    dupefilter.close("finished")
    dupefilter.crawler.signals.send_catch_log(
        scrapy_signals.spider_closed, spider=spider, reason="finished"
    )
    assert dupefilter.report._audit is not None
    assert dupefilter.report._audit._file.closed
    records = [json.loads(line) for line in audit.read_text("utf-8").splitlines()]
    assert records == [
        {
            "level": "url",
            "url": "http://a.test/x?utm_source=mail&id=1&fbclid=abc#top",
            "decision": "filtered",
            "canonical_url": "http://a.test/x?id=1",
            "rules": ["drop-fragment", "strip-tracking-params"],
            "stripped_params": ["utm_source", "fbclid"],
            "method": "GET",
            "referer": "http://a.test/",
        },
        {
            "level": "url",
            "url": "http://a.test/x?id=1",
            "decision": "filtered",
            "canonical_url": "http://a.test/x?id=1",
            "rules": ["repeat"],
            "stripped_params": [],
            "method": "GET",
            "referer": "http://a.test/",
        },
    ]
    assert dupefilter.crawler.stats.get_value("dupefilter/filtered") == len(records)


def test_no_audit_file_without_the_setting(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    dupefilter = make_dupefilter({"DEDUP_URL_BACKEND": "memory"})
    for _ in range(2):
        request = Request("http://a.test/x")
        if dupefilter.request_seen(request):
            dupefilter.log(request, dupefilter.crawler.spider)
    assert dupefilter.filtered == 1
    assert dupefilter.report._audit is None
    assert list(tmp_path.iterdir()) == []


def test_bloom_warns_once_when_nearly_full(caplog):
    dupefilter = make_dupefilter({"DEDUP_URL_CAPACITY": 1000})
    dupefilter.open()
    with caplog.at_level(logging.WARNING, logger="crawler.dupefilters"):
        for i in range(2500):
            dupefilter.request_seen(Request(f"http://a.test/{i}"))
        dupefilter.close("finished")
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 2
    assert "of DEDUP_URL_CAPACITY" in warnings[0]
    assert "outgrew DEDUP_URL_CAPACITY" in warnings[1]


def test_redirect_to_the_same_canonical_page_is_followed(backend):
    dupefilter = make_dupefilter({"DEDUP_URL_BACKEND": backend})
    dupefilter.open()
    source = Request("http://a.test/docs")
    assert not dupefilter.request_seen(source)
    # what RedirectMiddleware builds for "301 Location: /docs/"
    target = source.replace(url="http://a.test/docs/")
    target.meta["redirect_urls"] = [source.url]
    assert not dupefilter.request_seen(target)
    assert dupefilter.crawler.stats.get_value("dedup/url/redirect_same_page") == 1
    # a link to either form is still a duplicate
    assert dupefilter.request_seen(Request("http://a.test/docs/"))
    assert dupefilter.request_seen(Request("http://a.test/docs"))


def test_redirect_to_a_seen_page_is_filtered(backend):
    dupefilter = make_dupefilter({"DEDUP_URL_BACKEND": backend})
    dupefilter.open()
    assert not dupefilter.request_seen(Request("http://a.test/"))
    source = Request("http://a.test/old-home")
    assert not dupefilter.request_seen(source)
    target = source.replace(url="http://a.test/")
    target.meta["redirect_urls"] = [source.url]
    assert dupefilter.request_seen(target)


def test_copied_meta_does_not_bypass_the_filter(backend):
    """A spider passing meta=response.meta to a request for the same URL."""
    dupefilter = make_dupefilter({"DEDUP_URL_BACKEND": backend})
    dupefilter.open()
    first = Request("http://a.test/page")
    assert not dupefilter.request_seen(first)
    again = Request("http://a.test/page", meta=dict(first.meta))
    assert dupefilter.request_seen(again)


def test_unfinished_requests_are_resumed_after_a_kill(tmp_path):
    settings = {"DEDUP_STATE_DIR": str(tmp_path)}
    first = make_dupefilter(settings)
    first.open()
    requests = [
        Request(f"http://a.test/{i}", callback=first.crawler.spider.parse) for i in range(3)
    ]
    for request in requests:
        assert not first.request_seen(request)
    first.crawler.signals.send_catch_log(dedup_signals.request_finished, request=requests[1])
    # killed here: no close()

    second = make_dupefilter(settings)
    second.open()
    assert [r.url for r in _resumed(second)] == ["http://a.test/0", "http://a.test/2"]


def _resumed(dupefilter: URLDupeFilter) -> list[Request]:
    from crawler.url.frontier import Frontier

    assert dupefilter.frontier is not None
    scheduled: list[Request] = []

    class Engine:
        def crawl(self, request: Request) -> None:
            scheduled.append(request)

    dupefilter.crawler.engine = Engine()  # type: ignore[assignment]
    assert dupefilter.resumed is not None
    dupefilter.resumed.schedule(dupefilter.crawler.spider)
    assert isinstance(dupefilter.frontier, Frontier)
    # resumed requests pass the filter once, then are duplicates again
    for request in scheduled:
        assert not dupefilter.request_seen(request)
        assert dupefilter.request_seen(request.replace())
    return scheduled


def test_finished_crawl_resumes_nothing(tmp_path):
    settings = {"DEDUP_STATE_DIR": str(tmp_path)}
    first = make_dupefilter(settings)
    first.open()
    first.request_seen(Request("http://a.test/0"))
    first.close("finished")
    second = make_dupefilter(settings)
    second.open()
    assert second.resumed.pending == []


def schedule(dupefilter: URLDupeFilter, request: Request) -> None:
    """What the engine does with a request, for the dupefilter: it sends request_scheduled,
    then the scheduler asks request_seen, unless the request has dont_filter."""
    dupefilter.crawler.signals.send_catch_log(
        scrapy_signals.request_scheduled, request=request, spider=dupefilter.crawler.spider
    )
    if not request.dont_filter:
        assert not dupefilter.request_seen(request)


def start_request(url: str) -> Request:
    """A start request as Scrapy makes one of ``start_urls`` (StartSpiderMiddleware)."""
    return Request(url, dont_filter=True, meta={"is_start_request": True})


def test_a_start_request_is_recorded_as_seen(tmp_path, backend):
    settings = {"DEDUP_URL_BACKEND": backend, "DEDUP_STATE_DIR": str(tmp_path)}
    dupefilter = make_dupefilter(settings)
    dupefilter.open()
    schedule(dupefilter, start_request("http://a.test/docs/"))
    # links back to it, and their canonical variants, are filtered
    assert dupefilter.request_seen(Request("http://a.test/docs/"))
    assert dupefilter.request_seen(Request("HTTP://A.test:80/docs?utm_source=x#top"))
    assert dupefilter.crawler.stats.get_value("dedup/url/start_recorded") == 1
    # a start request again (a retry, a second spider run): nothing new is recorded
    schedule(dupefilter, start_request("http://a.test/docs/"))
    assert dupefilter.crawler.stats.get_value("dedup/url/start_recorded") == 1
    assert dupefilter.new_urls == 1
    # killed here: journaled, so the restart filters links back to it; not in the
    # frontier, since every start schedules its start requests again
    resumed = make_dupefilter(settings)
    resumed.open()
    assert resumed.request_seen(Request("http://a.test/docs"))
    assert resumed.resumed.pending == []


class CrawlingSpider(CrawlSpider):
    name = "crawling"
    rules = ()


def test_a_link_back_to_a_start_page_for_another_callback_is_downloaded_once(tmp_path, backend):
    """A CrawlSpider gives its start page's response to parse_start_url, and makes its
    item only from a link back to it, which its rules handle: that link passes once."""
    settings = {"DEDUP_URL_BACKEND": backend, "DEDUP_STATE_DIR": str(tmp_path)}

    def crawling_dupefilter() -> URLDupeFilter:
        crawler = get_crawler(CrawlingSpider, {"DEDUP_URL_CAPACITY": 10_000, **settings})
        crawler.spider = crawler._create_spider()
        dupefilter = build_from_crawler(URLDupeFilter, crawler)
        dupefilter.open()
        return dupefilter

    dupefilter = crawling_dupefilter()
    spider = dupefilter.crawler.spider
    schedule(dupefilter, start_request("http://a.test/docs/"))
    assert dupefilter.request_seen(Request("http://a.test/docs/"))  # the start's callback
    assert dupefilter.seen_before(Request("http://a.test/docs/"))
    link = Request("http://a.test/docs/?utm_source=x", callback=spider._callback)
    assert not dupefilter.seen_before(link)  # request_seen decides (LeasingScheduler)
    assert not dupefilter.request_seen(link)
    assert dupefilter.crawler.stats.get_value("dedup/url/start_page_again") == 1
    assert dupefilter.request_seen(link.replace())
    other = Request("http://a.test/other", callback=spider._callback)
    assert not dupefilter.request_seen(other)
    assert dupefilter.request_seen(other.replace())  # a repeat of a page no start request had
    assert dupefilter.crawler.stats.get_value("dedup/url/start_page_again") == 1
    dupefilter.close("finished")
    # the next start downloads its start page again, and not the link
    again = crawling_dupefilter()
    schedule(again, start_request("http://a.test/docs/"))
    assert again.request_seen(link.replace())
    assert again.crawler.stats.get_value("dedup/url/start_page_again") is None


def test_other_dont_filter_requests_are_not_recorded(backend):
    dupefilter = make_dupefilter({"DEDUP_URL_BACKEND": backend})
    dupefilter.open()
    # asked for outside dedup by a callback (a refresh, a page for another callback)
    schedule(dupefilter, Request("http://a.test/refresh", dont_filter=True))
    # a start request that is not dont_filter goes through request_seen as any other
    schedule(dupefilter, Request("http://a.test/start", meta={"is_start_request": True}))
    assert not dupefilter.request_seen(Request("http://a.test/refresh"))
    assert dupefilter.request_seen(Request("http://a.test/start"))
    assert dupefilter.crawler.stats.get_value("dedup/url/start_recorded") is None


def test_request_key_is_kept_in_meta(backend):
    dupefilter = make_dupefilter({"DEDUP_URL_BACKEND": backend})
    dupefilter.open()
    request = Request("http://a.test/x")
    dupefilter.request_seen(request)
    assert len(request.meta[META_KEY]) == 16


def test_request_serialization_matches_scrapys():
    dupefilter = make_dupefilter()
    spider = dupefilter.crawler.spider
    request = Request("http://a.test/x", callback=spider.parse, errback=spider.parse, meta={"a": 1})
    assert request_to_dict(request, spider) == request.to_dict(spider=spider)
    assert request.callback == spider.parse  # restored
    plain = Request("http://a.test/y")
    assert request_to_dict(plain, spider) == plain.to_dict(spider=spider)
    with pytest.raises(ValueError, match="is not an instance method"):
        request_to_dict(Request("http://a.test/z", callback=lambda response: None), spider)


def test_unserializable_request_is_counted_and_still_crawled(tmp_path, caplog):
    dupefilter = make_dupefilter({"DEDUP_STATE_DIR": str(tmp_path)})
    dupefilter.open()
    request = Request("http://a.test/z", callback=lambda response: None)
    with caplog.at_level(logging.WARNING, logger="crawler.dupefilters"):
        assert not dupefilter.request_seen(request)
    assert dupefilter.crawler.stats.get_value("dedup/url/unresumable") == 1
    assert "Cannot record <GET http://a.test/z> for crash-safe resume" in caplog.text


def _generations(dupefilter: URLDupeFilter):
    seen = dupefilter.seen
    return getattr(seen, "seen", seen).generations


@pytest.mark.parametrize("backend", ["bloom", "memory"])
def test_ttl_lets_a_url_through_again_after_it(backend, tmp_path):
    settings = {"DEDUP_URL_BACKEND": backend, "DEDUP_URL_TTL": 3600, "DEDUP_STATE_DIR": tmp_path}
    dupefilter = make_dupefilter(settings)
    clock = _generations(dupefilter).clock = ManualClock(7200.0)
    dupefilter.open()
    assert not dupefilter.request_seen(Request("http://a.test/news"))
    clock.now += 3599
    assert dupefilter.request_seen(Request("http://a.test/news?utm_source=x"))
    dupefilter.close("finished")

    restarted = make_dupefilter(settings)
    _generations(restarted).clock = clock
    restarted.open()
    assert restarted.request_seen(Request("http://a.test/news"))
    clock.now += 900  # 4499 s after the first request, recorded at the start of a 900 s slice
    assert restarted.request_seen(Request("http://a.test/news"))  # at most one slice late
    clock.now += 1
    assert not restarted.request_seen(Request("http://a.test/news"))
    assert restarted.request_seen(Request("http://a.test/news"))
    restarted.close("finished")
    assert restarted.stats.get_value(f"dedup/{backend}/generations") == 1


def test_ttl_change_refuses_the_state_dir(tmp_path):
    dupefilter = make_dupefilter({"DEDUP_STATE_DIR": tmp_path, "DEDUP_URL_TTL": 3600})
    dupefilter.open()
    dupefilter.close("finished")
    changed = make_dupefilter({"DEDUP_STATE_DIR": tmp_path, "DEDUP_URL_TTL": 7200})
    with pytest.raises(StateFileError, match=r"DEDUP_URL_TTL: 3600\.0 -> 7200\.0"):
        changed.open()


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"DEDUP_URL_TTL": -1}, "DEDUP_URL_TTL=-1.0 must be 0"),
        ({"DEDUP_URL_TTL": 60, "DEDUP_URL_TTL_GENERATIONS": 0}, "DEDUP_URL_TTL_GENERATIONS=0"),
    ],
)
def test_bad_ttl_settings_name_the_setting(settings, message):
    with pytest.raises(ValueError, match=message):
        make_dupefilter(settings)


def test_snapshot_interval_must_be_positive(tmp_path):
    with pytest.raises(ValueError, match="DEDUP_SNAPSHOT_EVERY=0"):
        make_dupefilter({"DEDUP_STATE_DIR": tmp_path, "DEDUP_SNAPSHOT_EVERY": 0})


def test_no_local_frontier_under_a_shared_queue(tmp_path):
    """Under scrapy-redis's scheduler another worker may crawl what this one
    scheduled: a local frontier would bring those requests back twice."""
    shared = make_dupefilter(
        {"DEDUP_STATE_DIR": tmp_path, "SCHEDULER": "scrapy_redis.scheduler.Scheduler"}
    )
    assert shared.frontier is None
    assert make_dupefilter({"DEDUP_STATE_DIR": tmp_path}).frontier is not None


def test_spider_closed_closes_a_dupefilter_whose_scheduler_never_does(tmp_path):
    dupefilter = make_dupefilter({"DEDUP_STATE_DIR": tmp_path})
    dupefilter.open()
    dupefilter.request_seen(Request("http://a.test/"))
    dupefilter.crawler.signals.send_catch_log(
        signal=scrapy_signals.spider_closed, spider=dupefilter.crawler.spider, reason="finished"
    )
    assert (tmp_path / "seen-urls.snapshot").exists()
    assert dupefilter.stats.get_value("dedup/url/new") == 1


def test_with_a_ttl_each_slice_gets_its_share_of_the_error_rate(tmp_path):
    """A look-up consults every live slice: 5 slices at 0.001 each would err 5 times as often."""
    dupefilter = make_dupefilter({"DEDUP_URL_TTL": 3600, "DEDUP_URL_ERROR_RATE": 0.001})
    seen = dupefilter.seen.seen  # the set behind the store kept in memory only
    assert len(seen.generations.live()) == 5
    assert seen.params()["error_rate"] == pytest.approx(0.001 / 5)


def test_a_crawl_longer_than_its_ttl_is_told_once(caplog):
    dupefilter = make_dupefilter({"DEDUP_URL_TTL": 3600})
    # a whole-number start: monotonic() + 3600 - monotonic() can round to just over 3600
    clock = dupefilter.report.clock = ManualClock()
    dupefilter.report.started_at = clock.now
    dupefilter.open()
    with caplog.at_level(logging.WARNING, logger="crawler.dupefilter_report"):
        clock.now += 3600
        for number in range(2000):  # the figures are published every 1000 new URLs
            assert not dupefilter.request_seen(Request(f"http://a.test/{number}"))
        assert "longer than DEDUP_URL_TTL" not in caplog.text
        clock.now += 1
        for number in range(2000, 4000):
            assert not dupefilter.request_seen(Request(f"http://a.test/{number}"))
        dupefilter.close("finished")
    assert caplog.text.count("This crawl has run 3601s, longer than DEDUP_URL_TTL=3600") == 1
    assert dupefilter.stats.get_value("dedup/url/ttl_shorter_than_crawl") == 1
