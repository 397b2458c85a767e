"""URLDupeFilter on the shared Redis backends, against a real redis-server."""

from __future__ import annotations

import asyncio
import logging
import pickle

import pytest
import redis
from scrapy import Request, Spider
from scrapy import signals as scrapy_signals
from scrapy.exceptions import DontCloseSpider
from scrapy.utils.misc import build_from_crawler
from scrapy.utils.test import get_crawler
from scrapy_redis.scheduler import Scheduler as RedisScheduler

from crawler.dupefilters import URLDupeFilter
from crawler.redis.connection import RedisSignatureMismatch
from tests.conftest import ManualClock


class NamedSpider(Spider):
    name = "named"


@pytest.fixture(params=["redis", "redis-bloom"])
def backend(request):
    return request.param


def worker(redis_server, backend: str, **settings) -> URLDupeFilter:
    crawler = get_crawler(
        NamedSpider,
        {
            "DEDUP_URL_BACKEND": backend,
            "DEDUP_URL_CAPACITY": 10_000,
            "REDIS_URL": redis_server.url,
            **settings,
        },
    )
    crawler.spider = crawler._create_spider()
    return build_from_crawler(URLDupeFilter, crawler)


def test_workers_share_one_memory(redis_server, backend):
    first, second = worker(redis_server, backend), worker(redis_server, backend)
    first.open()
    second.open()
    assert not first.request_seen(Request("http://a.test/page?id=1"))
    assert second.request_seen(Request("HTTP://A.TEST/page/?id=1&utm_source=x"))
    assert not second.request_seen(Request("http://a.test/other"))
    assert first.request_seen(Request("http://a.test/other#top"))
    first.close("finished")
    # closing a worker keeps what the others still use
    third = worker(redis_server, backend)
    third.open()
    assert third.request_seen(Request("http://a.test/page?id=1"))


def test_keys_follow_scrapy_redis_layout(redis_server, backend):
    dupefilter = worker(redis_server, backend)
    dupefilter.open()
    dupefilter.request_seen(Request("http://a.test/"))
    dupefilter.close("finished")  # adds the Bloom filter's uncounted entries to its count
    keys = {key.decode() for key in dupefilter.seen.connection.client.keys("*")}
    expected = {
        "redis": {"named:dupefilter", "{named:dupefilter}:signature"},
        "redis-bloom": {
            "{named:dupefilter}:bloom:0",
            "{named:dupefilter}:count",
            "{named:dupefilter}:signature",
        },
    }
    assert keys == expected[backend]


def test_a_start_request_is_recorded_in_the_shared_store(redis_server, backend):
    first, second = worker(redis_server, backend), worker(redis_server, backend)
    first.open()
    second.open()
    start = Request("http://a.test/docs/", dont_filter=True, meta={"is_start_request": True})
    first.crawler.signals.send_catch_log(
        scrapy_signals.request_scheduled, request=start, spider=first.crawler.spider
    )
    assert first.crawler.stats.get_value("dedup/url/start_recorded") == 1
    assert first.request_seen(Request("http://a.test/docs"))
    assert second.request_seen(Request("http://a.test/docs/?utm_medium=mail"))


def test_worker_with_other_rules_refuses_to_start(redis_server, backend):
    worker(redis_server, backend).open()
    other = worker(redis_server, backend, DEDUP_URL_LOWERCASE_PATH=True)
    with pytest.raises(RedisSignatureMismatch, match="DEDUP_URL_LOWERCASE_PATH: False -> True"):
        other.open()


def open_spider(dupefilter: URLDupeFilter) -> None:
    dupefilter.crawler.signals.send_catch_log(
        scrapy_signals.spider_opened, spider=dupefilter.crawler.spider
    )


def test_clear_at_start_only(redis_server, backend):
    first = worker(redis_server, backend)
    first.open()
    open_spider(first)
    first.request_seen(Request("http://a.test/1"))
    idle = worker(redis_server, backend)  # a worker that closes before checking anything
    idle.open()
    open_spider(idle)
    for closing in (first, idle):
        closing.clear()  # as scrapy-redis does at close without SCHEDULER_PERSIST: ignored
    assert worker(redis_server, backend).request_seen(Request("http://a.test/1"))
    second = worker(redis_server, backend)
    second.clear()  # SCHEDULER_FLUSH_ON_START: before the spider opens, honoured
    second.open()
    assert not second.request_seen(Request("http://a.test/1"))


def test_under_scrapy_redis_scheduler(redis_server, backend):
    crawler = get_crawler(
        NamedSpider,
        {
            "DUPEFILTER_CLASS": "crawler.dupefilters.URLDupeFilter",
            "DEDUP_URL_BACKEND": backend,
            "DEDUP_URL_CAPACITY": 10_000,
            "REDIS_URL": redis_server.url,
            "SCHEDULER_PERSIST": True,
        },
    )
    spider = crawler._create_spider()
    crawler.spider = spider
    scheduler = RedisScheduler.from_crawler(crawler)
    scheduler.open(spider)
    assert isinstance(scheduler.df, URLDupeFilter)
    assert scheduler.enqueue_request(Request("http://a.test/x"))
    assert not scheduler.enqueue_request(Request("http://a.test/x/?fbclid=1"))
    assert len(scheduler) == 1
    scheduler.close("finished")


@pytest.mark.parametrize(("policy", "seen"), [("allow", False), ("stop", True)])
def test_redis_going_away_follows_the_policy(redis_server, policy, seen, caplog):
    dupefilter = worker(
        redis_server,
        "redis",
        DEDUP_REDIS_ON_ERROR=policy,
        REDIS_PARAMS={"socket_timeout": 1, "socket_connect_timeout": 1},
    )
    dupefilter.open()
    dupefilter.seen.connection.retries = 1
    dupefilter.seen.connection.backoff = 0.01
    assert not dupefilter.request_seen(Request("http://a.test/before"))
    redis_server.stop()
    request = Request("http://a.test/during")
    assert dupefilter.request_seen(request) is seen
    stats = dupefilter.crawler.stats
    assert (
        stats.get_value(f"dedup/redis/{'allowed' if policy == 'allow' else 'stopped'}_unchecked")
        == 1
    )
    assert "did not answer after 1 retries" in caplog.text
    if seen:  # the scheduler logs what request_seen held back
        dupefilter.log(request, dupefilter.crawler.spider)
    assert stats.get_value("dupefilter/filtered") is None


def test_bad_redis_error_policy_names_the_setting(redis_server):
    with pytest.raises(ValueError, match="DEDUP_REDIS_ON_ERROR='ignore' is not a policy"):
        worker(redis_server, "redis", DEDUP_REDIS_ON_ERROR="ignore")


def test_ttl_shared_by_workers(redis_server, backend):
    clock = ManualClock(36_000.0)
    first = worker(redis_server, backend, DEDUP_URL_TTL=3600)
    second = worker(redis_server, backend, DEDUP_URL_TTL=3600)
    first.seen.store.generations.clock = second.seen.store.generations.clock = clock
    first.open()
    second.open()
    assert not first.request_seen(Request("http://a.test/news"))
    clock.now += 3000
    assert second.request_seen(Request("http://a.test/news#top"))
    clock.now += 1500
    assert not second.request_seen(Request("http://a.test/news"))
    assert first.request_seen(Request("http://a.test/news"))


def test_ttl_must_agree_across_workers(redis_server, backend):
    worker(redis_server, backend, DEDUP_URL_TTL=3600).open()
    with pytest.raises(RedisSignatureMismatch, match="DEDUP_URL_TTL"):
        worker(redis_server, backend, DEDUP_URL_TTL=60).open()


def test_a_key_template_with_stray_braces_names_the_setting(redis_server, backend):
    with pytest.raises(ValueError, match=r"DEDUP_REDIS_KEY='odd\{\}:%\(spider\)s'"):
        worker(redis_server, backend, DEDUP_REDIS_KEY="odd{}:%(spider)s")


def test_an_add_retried_after_a_lost_reply_lets_the_request_through(redis_server):
    """A timeout after the server applied SADD makes the retry answer "seen": the
    request must not be filtered on that answer (a page never crawled)."""
    dupefilter = worker(redis_server, "redis")
    dupefilter.open()
    client = dupefilter.seen.connection.client
    dupefilter.seen.connection.backoff = 0.01
    real_sadd = client.sadd
    calls = []

    def sadd_reply_lost_once(*args):
        result = real_sadd(*args)
        calls.append(result)
        if len(calls) == 1:
            raise redis.ConnectionError("reply lost")
        return result

    client.sadd = sadd_reply_lost_once
    assert not dupefilter.request_seen(Request("http://a.test/once"))
    assert calls == [1, 0]  # applied, then "seen" on the retry
    assert dupefilter.stats.get_value("dedup/redis/retried_let_through") == 1
    assert dupefilter.request_seen(Request("http://a.test/once"))  # later repeats: filtered
    dupefilter.close("finished")
    assert dupefilter.stats.get_value("dedup/redis/retries") == 1


def test_close_with_redis_gone_logs_what_it_knows(redis_server_factory, caplog):
    caplog.set_level(logging.INFO)
    server = redis_server_factory()
    dupefilter = worker(server, "redis-bloom", DEDUP_REDIS_ON_ERROR="allow")
    dupefilter.open()
    dupefilter.request_seen(Request("http://a.test/1"))
    dupefilter.seen.connection.retries = 1
    dupefilter.seen.connection.backoff = 0.01
    server.stop()
    dupefilter.close("finished")
    assert "the shared store's figures are unknown" in caplog.text


def test_while_redis_is_away_allow_lets_each_url_through_once(redis_server):
    """The allow policy lets requests through unchecked while Redis is away, but not the
    same URL again: links in a circle would otherwise be crawled until Redis is back."""
    dupefilter = worker(
        redis_server,
        "redis",
        DEDUP_REDIS_ON_ERROR="allow",
        REDIS_PARAMS={"socket_timeout": 1, "socket_connect_timeout": 1},
    )
    dupefilter.open()
    dupefilter.seen.connection.retries = 1
    dupefilter.seen.connection.backoff = 0.01
    redis_server.stop()
    assert not dupefilter.request_seen(Request("http://a.test/during"))
    assert not dupefilter.request_seen(Request("http://a.test/other"))
    assert dupefilter.request_seen(Request("http://a.test/during?utm_source=x"))
    stats = dupefilter.crawler.stats
    assert stats.get_value("dedup/redis/allowed_unchecked") == 2
    assert stats.get_value("dedup/redis/filtered_locally") == 1


def test_a_request_held_back_when_its_add_may_have_landed_is_resumed(redis_server, tmp_path):
    """The server applies an SADD and dies before its reply (a SIGKILL mid-crawl): under
    "stop" the request is held back, and its key is in Redis. The restart must crawl it
    from the journal; found again through its parent, it would meet its key as seen."""
    jobdir = str(tmp_path / "job")
    dupefilter = worker(redis_server, "redis", JOBDIR=jobdir, DEDUP_REDIS_ON_ERROR="stop")
    dupefilter.open()
    connection = dupefilter.seen.connection
    connection.retries = 0
    real_sadd = connection.client.sadd

    def sadd_then_server_gone(*args):
        real_sadd(*args)
        raise redis.ConnectionError("Connection closed by server.")

    connection.client.sadd = sadd_then_server_gone
    assert dupefilter.request_seen(Request("http://a.test/held"))  # held back: not crawled
    assert dupefilter.stats.get_value("dedup/redis/stopped_unchecked") == 1
    dupefilter.close("dedup_redis_unavailable")

    restarted = worker(redis_server, "redis", JOBDIR=jobdir)
    restarted.open()
    resumed = [pickle.loads(serialized)["url"] for serialized in restarted.resumed.pending]
    assert resumed == ["http://a.test/held"]
    assert restarted.request_seen(Request("http://a.test/held"))  # its key is in Redis
    restarted.close("finished")


@pytest.mark.usefixtures("on_reactor_thread")
@pytest.mark.parametrize("policy", ["stop", "allow"])
def test_requests_met_while_redis_fails_are_held_not_decided(redis_server, policy):
    """On the reactor's thread the dupefilter never waits for Redis: a request met while it
    fails is held (neither recorded, nor scheduled, nor counted as a duplicate), the next
    ones are held without asking Redis, and the spider stays open meanwhile; the policy is
    not applied before the fault budget is spent."""
    dupefilter = worker(
        redis_server, "redis", DEDUP_REDIS_ON_ERROR=policy, DEDUP_REDIS_FAULT_BUDGET=5
    )
    dupefilter.open()
    redis_server.stop()
    stats = dupefilter.crawler.stats
    first, second = Request("http://a.test/1"), Request("http://a.test/2")

    async def hold_both() -> None:  # the hand-back timer needs a running loop
        assert dupefilter.request_seen(first) is True
        failures = dupefilter.seen.connection.retried
        assert dupefilter.request_seen(second) is True
        assert dupefilter.seen.connection.retried == failures  # held without a call
        for request in (first, second):
            dupefilter.log(request, dupefilter.crawler.spider)  # as the scheduler does
        idle = dupefilter.crawler.signals.send_catch_log(
            scrapy_signals.spider_idle, spider=dupefilter.crawler.spider
        )
        assert any(
            isinstance(getattr(outcome, "value", None), DontCloseSpider) for _, outcome in idle
        )
        dupefilter.close("shutdown")  # before the timer: no engine here to hand them to

    asyncio.run(hold_both())
    assert stats.get_value("dedup/redis/held") == 2
    assert stats.get_value("dupefilter/filtered") is None
    assert stats.get_value("dedup/redis/allowed_unchecked") is None
    assert len(dupefilter.redis_faults.held) == 0
    assert stats.get_value("dedup/redis/stopped_unchecked") == 2  # released at close


def _counted_calls(dupefilter: URLDupeFilter) -> list[object]:
    """Every Redis call of *dupefilter* from now on, on its seen store's connection and on
    its recrawl records' (one round trip each)."""
    assert dupefilter.recrawl is not None
    calls: list[object] = []
    connections = (dupefilter.seen.connection, dupefilter.recrawl.store.connection)
    for connection in {id(each): each for each in connections}.values():
        original = connection.call

        def counted(command, *args, original=original, **kwargs):
            calls.append(command)
            return original(command, *args, **kwargs)

        connection.call = counted
    return calls


def test_with_the_recrawl_schedule_a_request_costs_one_redis_call(redis_server, backend):
    from crawler.url.recrawl_records import RecrawlRecord
    from crawler.url.request_keys import request_key

    first, second = (worker(redis_server, backend, DEDUP_RECRAWL=True) for _ in range(2))
    for dupefilter in (first, second):
        dupefilter.open()
        dupefilter.recrawl.open()
    calls = _counted_calls(second)

    def checked(url: str) -> tuple[bool, int]:
        before = len(calls)
        filtered = second.request_seen(Request(url))
        return filtered, len(calls) - before

    records = first.recrawl.store
    key = request_key("GET", "http://a.test/page")
    now = first.recrawl.now()
    assert not first.request_seen(Request("http://a.test/page"))
    assert checked("http://a.test/new") == (False, 1)
    records.put(key, "http://a.test/page", RecrawlRecord(now - 10, 3600))
    assert checked("http://a.test/page") == (True, 1)  # seen, not due
    records.put(key, "http://a.test/page", RecrawlRecord(now - 7200, 3600))
    assert checked("http://a.test/page") == (False, 1)  # due: claimed for every worker
    assert records.get(key).interval == 600  # the lease
    assert checked("http://a.test/page") == (True, 1)  # claimed in this run: filtered
    assert first.request_seen(Request("http://a.test/page"))  # claimed by the other worker
