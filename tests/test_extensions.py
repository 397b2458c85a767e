"""The periodic dedup log line: its figures, its settings, and a real crawl."""

from __future__ import annotations

import logging
import re
import time

import pytest
from scrapy import Spider, signals
from scrapy.exceptions import DontCloseSpider, NotConfigured
from scrapy.utils.test import get_crawler

from crawler.extensions import DedupLogStats
from tests.conftest import final_stat, run_scrapy, scrapy_crawl_command

LINE = re.compile(
    r"\[crawler\.extensions\] INFO: Dedup: filtered (?P<filtered>\d+) of (?P<seen>\d+) requests "
    r"\((?P<share>[\d.]+)%, at (?P<request_rate>\d+) requests/min\); dropped (?P<exact>\d+) "
    r"exact and (?P<near>\d+) near duplicate items \(at (?P<item_rate>\d+) items/min\)$"
)


class NamedSpider(Spider):
    name = "named"


def make_extension(settings: dict) -> DedupLogStats:
    crawler = get_crawler(NamedSpider, settings)
    return DedupLogStats.from_crawler(crawler)


def test_line_reports_counts_share_and_rates_of_the_last_interval(caplog):
    extension = make_extension({"LOGSTATS_INTERVAL": 30.0})
    stats = extension.stats
    stats.set_value("dupefilter/filtered", 30)
    stats.set_value("scheduler/enqueued", 10)
    stats.set_value("dedup/content/exact", 2)
    with caplog.at_level(logging.INFO, logger="crawler.extensions"):
        extension.log()
        stats.inc_value("dupefilter/filtered", 15)
        stats.inc_value("scheduler/enqueued", 5)
        stats.set_value("dedup/content/near", 1)
        extension.log()
    assert [record.getMessage() for record in caplog.records] == [
        "Dedup: filtered 30 of 40 requests (75.0%, at 60 requests/min); "
        "dropped 2 exact and 0 near duplicate items (at 4 items/min)",
        "Dedup: filtered 45 of 60 requests (75.0%, at 30 requests/min); "
        "dropped 2 exact and 1 near duplicate items (at 2 items/min)",
    ]


def test_line_counts_items_dropped_for_their_key(caplog):
    extension = make_extension({"LOGSTATS_INTERVAL": 60.0})
    extension.stats.set_value("dedup/content/near", 1)
    extension.stats.set_value("dedup/item/dropped", 4)
    with caplog.at_level(logging.INFO, logger="crawler.extensions"):
        extension.log()
    assert caplog.records[0].getMessage() == (
        "Dedup: filtered 0 of 0 requests (0.0%, at 0 requests/min); dropped 0 exact and "
        "1 near duplicate items, dropped 4 items whose key was seen (at 5 items/min)"
    )


def test_line_before_any_request_and_with_mark(caplog):
    extension = make_extension({"DEDUP_LOG_INTERVAL": 60, "DEDUP_CONTENT_ACTION": "mark"})
    with caplog.at_level(logging.INFO, logger="crawler.extensions"):
        extension.log()
    assert caplog.records[0].getMessage() == (
        "Dedup: filtered 0 of 0 requests (0.0%, at 0 requests/min); "
        "marked 0 exact and 0 near duplicate items (at 0 items/min)"
    )


def test_scrapy_redis_scheduler_counts_are_used(caplog):
    extension = make_extension({})
    extension.stats.set_value("dupefilter/filtered", 1)
    extension.stats.set_value("scheduler/enqueued/redis", 3)
    with caplog.at_level(logging.INFO, logger="crawler.extensions"):
        extension.log()
    assert "filtered 1 of 4 requests (25.0%" in caplog.records[0].getMessage()


def test_interval_follows_logstats_unless_set():
    assert make_extension({"LOGSTATS_INTERVAL": 7.5}).interval == 7.5
    assert make_extension({"LOGSTATS_INTERVAL": 7.5, "DEDUP_LOG_INTERVAL": "2"}).interval == 2.0


@pytest.mark.parametrize(
    ("settings", "reason"),
    [
        ({"DEDUP_LOG_INTERVAL": 0}, "DEDUP_LOG_INTERVAL is 0"),
        ({"LOGSTATS_INTERVAL": 0}, "LOGSTATS_INTERVAL is 0"),
        ({"LOGSTATS_INTERVAL": 60, "DEDUP_LOG_INTERVAL": 0.0}, "DEDUP_LOG_INTERVAL is 0"),
    ],
)
def test_zero_switches_it_off(settings, reason):
    with pytest.raises(NotConfigured, match=reason):
        make_extension(settings)


@pytest.mark.parametrize("value", [-1, "soon", "nan"])
def test_bad_interval_names_the_setting(value):
    with pytest.raises(ValueError, match=r"DEDUP_LOG_INTERVAL=.* must be a number of seconds"):
        make_extension({"DEDUP_LOG_INTERVAL": value})


def test_the_action_is_checked_only_when_the_content_level_is_on():
    # the pipeline that acts is not built then: a value left in settings.py stops nothing
    off = {"DEDUP_CONTENT_ENABLED": False, "DEDUP_CONTENT_ACTION": "skip"}
    assert make_extension(off).verb == "dropped"
    with pytest.raises(ValueError, match="DEDUP_CONTENT_ACTION='skip' is not an action"):
        make_extension({"DEDUP_CONTENT_ACTION": "skip"})


class LingerWhenIdle:
    """Keep an idle spider open a few seconds (until the engine's next idle check), so
    that periodic lines are logged once every request and item has been handled."""

    def __init__(self) -> None:
        self.idle_since: float | None = None

    @classmethod
    def from_crawler(cls, crawler):
        extension = cls()
        crawler.signals.connect(extension.spider_idle, signal=signals.spider_idle)
        return extension

    def spider_idle(self) -> None:
        if self.idle_since is None:
            self.idle_since = time.monotonic()
        if time.monotonic() - self.idle_since < 1:
            raise DontCloseSpider


def test_crawl_logs_the_line_periodically_and_agrees_with_final_stats(demo_site_server):
    interval = 0.2
    log = run_scrapy(
        scrapy_crawl_command(
            demo_site_server.url,
            *("-s", f"LOGSTATS_INTERVAL={interval}", "-s", "DOWNLOAD_DELAY=0.01"),
            *("-s", 'EXTENSIONS={"tests.test_extensions.LingerWhenIdle": 0}'),
            # exact and near copies both (test_report.py says why this extractor)
            *("-s", "DEDUP_EXTRACTOR=trafilatura+resiliparse"),
        )
    )
    lines = [match.groupdict() for match in map(LINE.search, log.splitlines()) if match]
    figures = [{name: float(value) for name, value in line.items()} for line in lines]
    assert len(figures) >= 5
    previous = {"filtered": 0, "exact": 0, "near": 0, "seen": 0}
    for figure in figures:
        for name in ("filtered", "seen", "exact", "near"):
            assert figure[name] >= previous[name]
        assert figure["share"] == round(100 * figure["filtered"] / figure["seen"], 1)
        assert figure["request_rate"] == int(
            (figure["filtered"] - previous["filtered"]) * 60 / interval
        )
        duplicates = figure["exact"] + figure["near"]
        assert figure["item_rate"] == int(
            (duplicates - previous["exact"] - previous["near"]) * 60 / interval
        )
        previous = figure
    filtered = final_stat(log, "dupefilter/filtered")
    final = {
        "filtered": filtered,
        "seen": filtered + final_stat(log, "scheduler/enqueued"),
        "exact": final_stat(log, "dedup/content/exact"),
        "near": final_stat(log, "dedup/content/near"),
    }
    assert final["filtered"] > 500 and final["exact"] and final["near"]
    # mid-crawl lines, then (while the idle spider lingers) lines with the final figures
    assert any(0 < figure["filtered"] < final["filtered"] for figure in figures)
    assert {name: figures[-1][name] for name in final} == final
    # the close summaries, once each (a worker process started says so on a line of its own)
    assert log.count("URL dedup: ") == 1
    assert len(re.findall(r"Content dedup: \d+ items dropped", log)) == 1
