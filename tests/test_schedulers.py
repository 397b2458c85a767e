"""LeasingScheduler wiring, against a real redis-server (whole crawls: test_distributed_resume)."""

from __future__ import annotations

import asyncio
import functools
import re
import threading
import time
import warnings

import pytest
import redis
from scrapy import Request, Spider, signals
from scrapy.exceptions import CloseSpider, ScrapyDeprecationWarning
from scrapy.http import HtmlResponse
from scrapy.utils.test import get_crawler
from scrapy_redis.queue import Base
from twisted.python.failure import Failure

from crawler import signals as dedup_signals
from crawler.redis.connection import RedisStartRefused
from crawler.schedulers import META_LEASE, LeasingScheduler
from crawler.url.request_meta import META_KEY, META_URL

QUEUE = "leasing:requests"
FRONTIER = {"crawler.middlewares.FrontierMiddleware": 25}


class LeasingSpider(Spider):
    name = "leasing"


class SetQueue(Base):
    """A queue layout the leases do not know."""

    def __len__(self):
        return self.server.scard(self.key)


def leasing_crawler(redis_server, *, shared_seen_store=True, **settings):
    """A crawler of LeasingSpider with the leasing scheduler on *redis_server* (and the
    URL level's seen store there too, for worker ``w1``, unless not *shared_seen_store*),
    and its spider."""
    store = {"DEDUP_URL_BACKEND": "redis", "DEDUP_WORKER_ID": "w1"} if shared_seen_store else {}
    crawler = get_crawler(
        LeasingSpider,
        {
            "SCHEDULER": "crawler.schedulers.LeasingScheduler",
            "DUPEFILTER_CLASS": "crawler.dupefilters.URLDupeFilter",
            "REDIS_URL": redis_server.url,
            "SPIDER_MIDDLEWARES": FRONTIER,
            "DOWNLOADER_MIDDLEWARES": FRONTIER,
            **store,
            **settings,
        },
    )
    spider = LeasingSpider.from_crawler(crawler)
    crawler.spider = spider
    return crawler, spider


def open_scheduler(redis_server, **settings):
    crawler, spider = leasing_crawler(redis_server, **settings)
    scheduler = LeasingScheduler.from_crawler(crawler)
    scheduler.open(spider)
    return crawler, scheduler


def in_event_loop(test):
    """Run *test* inside a running asyncio loop, as the scheduler runs in a crawl."""

    @functools.wraps(test)
    def run(*args, **kwargs):
        async def body():
            return test(*args, **kwargs)

        return asyncio.run(body())

    return run


@pytest.fixture
def client(redis_server):
    with redis.Redis.from_url(redis_server.url) as client:
        yield client


@in_event_loop
def test_a_redirect_hands_its_lease_over_a_child_does_not(redis_server, client):
    crawler, scheduler = open_scheduler(redis_server)
    scheduler.enqueue_request(Request("http://example.com/a"))
    scheduler.enqueue_request(Request("http://example.com/b"))
    first, second = scheduler.next_request(), scheduler.next_request()
    assert client.hlen(f"{QUEUE}:leases:w1") == 2

    # the downloader hands back a redirect (meta copied, no response yet)
    redirect = first.replace(url="http://example.com/a2")
    assert scheduler.enqueue_request(redirect)
    assert META_LEASE not in redirect.meta
    assert client.hlen(f"{QUEUE}:leases:w1") == 1
    assert crawler.stats.get_value("dedup/lease/released") == 1

    # a response came: a request with its meta copied is a child, not a replacement
    response = HtmlResponse(second.url, body=b"<html></html>", request=second)
    crawler.signals.send_catch_log(signals.response_received, response=response, request=second)
    child = Request("http://example.com/b/child", meta=dict(second.meta))
    assert scheduler.enqueue_request(child)
    assert client.hlen(f"{QUEUE}:leases:w1") == 1
    crawler.signals.send_catch_log(dedup_signals.request_finished, request=second)
    assert client.hlen(f"{QUEUE}:leases:w1") == 0
    assert crawler.stats.get_value("dedup/lease/released") == 2
    assert crawler.stats.get_value("dedup/lease/taken") == 2
    scheduler.close("finished")


@in_event_loop
def test_close_puts_unfinished_leases_back(redis_server, client):
    crawler, scheduler = open_scheduler(redis_server, SCHEDULER_PERSIST=True)
    for path in ("a", "b", "c"):
        scheduler.enqueue_request(Request(f"http://example.com/{path}"))
    taken = scheduler.next_request()
    crawler.signals.send_catch_log(dedup_signals.request_finished, request=taken)
    scheduler.next_request()

    scheduler.close("shutdown")

    assert client.zcard(QUEUE) == 2
    assert client.exists(f"{QUEUE}:leases:w1") == 0
    assert crawler.stats.get_value("dedup/lease/returned") == 1


@in_event_loop
def test_close_without_persist_keeps_the_shared_queue(redis_server, client, caplog):
    _, other = open_scheduler(redis_server, DEDUP_WORKER_ID="other")
    other.enqueue_request(Request("http://example.com/for-other-workers"))
    _, closing = open_scheduler(redis_server, SCHEDULER_PERSIST=False)
    closing.enqueue_request(Request("http://example.com/mine"))
    closing.next_request()

    closing.close("finished")

    assert client.zcard(QUEUE) == 2  # the other worker's request and the one put back
    assert "Not emptying the shared queue" in caplog.text
    other.close("finished")


@in_event_loop
def test_flush_on_start_forgets_the_leases_of_the_last_crawl(redis_server, client):
    _, killed = open_scheduler(redis_server, DEDUP_WORKER_ID="killed", DEDUP_LEASE_TTL=1)
    killed.enqueue_request(Request("http://example.com/a"))
    killed.next_request()  # and never released: the worker is gone

    _, fresh = open_scheduler(redis_server, SCHEDULER_FLUSH_ON_START=True)

    assert client.exists(f"{QUEUE}:leases:killed") == 0
    assert not fresh.has_pending_requests()
    fresh.close("finished")


@in_event_loop
def test_an_unreadable_request_is_set_aside(redis_server, client):
    client.zadd(QUEUE, {b"not a pickle": -1})
    crawler, scheduler = open_scheduler(redis_server)
    scheduler.enqueue_request(Request("http://example.com/a"))

    request = scheduler.next_request()

    assert request.url == "http://example.com/a"
    assert client.lrange(f"{QUEUE}:undecodable", 0, -1) == [b"not a pickle"]
    assert crawler.stats.get_value("dedup/lease/undecodable") == 1
    scheduler.close("finished")


@in_event_loop
def test_other_workers_leases_keep_the_spider_busy(redis_server):
    _, mine = open_scheduler(redis_server)
    _, other = open_scheduler(redis_server, DEDUP_WORKER_ID="w2")
    assert not mine.has_pending_requests()
    mine.enqueue_request(Request("http://example.com/a"))
    assert other.has_pending_requests()
    other.next_request()
    assert mine.has_pending_requests()  # w2's request may still add links
    assert not other.has_pending_requests()  # its own leases are its engine's business
    other.close("finished")
    mine.close("finished")


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"DEDUP_LEASE_TTL": 0}, "DEDUP_LEASE_TTL=0.0 must be at least 1 second"),
        ({"DEDUP_WORKER_ID": " "}, "DEDUP_WORKER_ID=' ' must be a non-empty string"),
        ({"SPIDER_MIDDLEWARES": {}}, "FrontierMiddleware in SPIDER_MIDDLEWARES"),
        ({"DOWNLOADER_MIDDLEWARES": {}}, "FrontierMiddleware in DOWNLOADER_MIDDLEWARES"),
        (
            {"SCHEDULER_QUEUE_CLASS": "tests.test_schedulers.SetQueue"},
            "SCHEDULER_QUEUE_CLASS=tests.test_schedulers.SetQueue is not supported",
        ),
    ],
)
@in_event_loop
def test_bad_settings_are_named(redis_server, settings, message):
    with pytest.raises(ValueError, match=message):
        open_scheduler(redis_server, **settings)


@in_event_loop
def test_scrapy_redis_calls_deprecated_by_scrapy_warn_no_more(redis_server, client):
    _, earlier = open_scheduler(redis_server, DEDUP_WORKER_ID="earlier")
    earlier.enqueue_request(Request("http://example.com/left-in-the-queue"))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        crawler, scheduler = open_scheduler(redis_server)  # "Resuming crawl": Spider.log()
        scheduler.enqueue_request(Request("http://example.com/a"))  # stats with spider=
        assert scheduler.next_request() is not None
    assert [str(w.message) for w in caught if w.category is ScrapyDeprecationWarning] == []
    assert crawler.stats.get_value("scheduler/enqueued/redis") == 1
    assert crawler.stats.get_value("scheduler/dequeued/redis") == 1
    scheduler.close("finished")
    earlier.close("finished")


class WorkerKilled(BaseException):
    """Stands for SIGKILL: nothing after the call it interrupts runs."""


@in_event_loop
def test_a_kill_right_after_the_key_is_recorded_loses_no_request(redis_server, client):
    _, scheduler = open_scheduler(redis_server, SCHEDULER_PERSIST=True)
    record = scheduler.df.request_seen

    def record_then_killed(request):
        record(request)
        raise WorkerKilled

    scheduler.df.request_seen = record_then_killed
    with pytest.raises(WorkerKilled):
        scheduler.enqueue_request(Request("http://example.com/a"))

    restarted_crawler, restarted = open_scheduler(redis_server, SCHEDULER_PERSIST=True)
    assert restarted_crawler.stats.get_value("dedup/lease/reclaimed") == 1
    taken = restarted.next_request()
    assert taken.url == "http://example.com/a"
    # queued with the meta the dupefilter gives a request it records (redirects need it)
    assert taken.meta[META_URL] == "http://example.com/a"
    assert taken.meta[META_KEY]
    assert not restarted.enqueue_request(Request("http://example.com/a?"))
    assert restarted.next_request() is None
    restarted.close("finished")


@in_event_loop
def test_a_request_is_queued_once_and_its_lease_ended(redis_server, client):
    crawler, scheduler = open_scheduler(redis_server)
    assert scheduler.enqueue_request(Request("http://example.com/a"))
    assert not scheduler.enqueue_request(Request("http://example.com/a#top"))
    assert client.zcard(QUEUE) == 1
    assert client.hlen(f"{QUEUE}:leases:w1") == 0
    assert crawler.stats.get_value("scheduler/enqueued/redis") == 1
    assert crawler.stats.get_value("dupefilter/filtered") == 1
    scheduler.close("finished")


@pytest.mark.parametrize("queue_class", ["PriorityQueue", "FifoQueue", "LifoQueue"])
@in_event_loop
def test_a_url_another_worker_queues_in_between_is_queued_once(redis_server, client, queue_class):
    queue_settings = {"SCHEDULER_QUEUE_CLASS": f"scrapy_redis.queue.{queue_class}"}
    crawler, scheduler = open_scheduler(redis_server, **queue_settings)
    _, other = open_scheduler(redis_server, DEDUP_WORKER_ID="w2", **queue_settings)
    stage = scheduler.leases.stage

    def stage_while_the_other_worker_queues(payload, score):
        lease_id = stage(payload, score)
        assert other.enqueue_request(Request("http://example.com/b"))
        return lease_id

    scheduler.leases.stage = stage_while_the_other_worker_queues
    assert not scheduler.enqueue_request(Request("http://example.com/b"))

    length = client.zcard(QUEUE) if queue_class == "PriorityQueue" else client.llen(QUEUE)
    assert length == 1
    assert crawler.stats.get_value("scheduler/enqueued/redis") is None
    assert client.hlen(f"{QUEUE}:leases:w1") == 0
    assert int(client.hget(f"{QUEUE}:leases", "held")) == 0
    assert crawler.stats.get_value("dupefilter/filtered") == 1
    other.close("finished")
    scheduler.close("finished")


@in_event_loop
@pytest.mark.usefixtures("on_reactor_thread")
def test_a_lease_redis_failed_to_give_up_is_given_up_with_the_next_heartbeat(
    redis_server_factory,
):
    """A request finishes while Redis fails for a moment: on the reactor's thread the
    release fails at once (no wait, no traceback in a signal handler); the next heartbeat
    gives the lease up, so that no worker waits for it and nobody crawls it again."""
    server = redis_server_factory(appendonly=True)
    crawler, scheduler = open_scheduler(server, SCHEDULER_PERSIST=True)
    scheduler.enqueue_request(Request("http://example.com/a"))
    server.stop()
    assert scheduler.next_request() is None  # nothing taken meanwhile, nothing raised
    server.start()
    taken = next(filter(None, (scheduler.next_request() for _ in range(3))))  # reconnects
    server.stop()
    outcomes = crawler.signals.send_catch_log(dedup_signals.request_finished, request=taken)
    assert [outcome for _, outcome in outcomes if hasattr(outcome, "value")] == []
    server.start()
    client = redis.Redis.from_url(server.url)
    assert client.hlen(f"{QUEUE}:leases:w1") == 1  # Redis never heard of the release
    scheduler._beat()
    assert client.hlen(f"{QUEUE}:leases:w1") == 0
    assert crawler.stats.get_value("dedup/lease/released") == 1
    scheduler.close("finished")
    assert crawler.stats.get_value("dedup/lease/returned") is None
    client.close()


#: The outage a scheduler meets at start-up in these tests, and the budget it waits within:
#: ample for a redis-server to start again (~0.05 s here).
OUTAGE = 0.5
START_BUDGET = 5.0


@pytest.mark.parametrize("meets_it_in", ["from_crawler", "open"])
@in_event_loop
def test_a_queue_whose_redis_comes_back_within_the_budget_opens(
    redis_server, client, on_reactor_thread, meets_it_in
):
    """scrapy-redis's ping in ``from_crawler`` and the queue's and leases' first calls in
    ``open`` wait for a server that fails at start-up, on the reactor's thread too (before:
    a redis-py ConnectionError, or RedisFaultPending saying it would try again)."""
    crawler, spider = leasing_crawler(redis_server, DEDUP_REDIS_FAULT_BUDGET=START_BUDGET)
    back = threading.Timer(OUTAGE, redis_server.start)
    try:
        if meets_it_in == "from_crawler":
            redis_server.kill()
            back.start()
        scheduler = LeasingScheduler.from_crawler(crawler)
        if meets_it_in == "open":
            redis_server.kill()
            back.start()
        started = time.monotonic()
        scheduler.open(spider)
        if meets_it_in == "open":
            assert time.monotonic() - started >= OUTAGE
    finally:
        if back.is_alive():
            back.join()  # its server is stopped with the fixture's
    scheduler.enqueue_request(Request("http://example.com/a"))
    assert scheduler.next_request().url == "http://example.com/a"
    scheduler.close("finished")


@in_event_loop
def test_a_queue_whose_redis_stays_down_is_refused_after_the_budget(
    redis_server, on_reactor_thread
):
    """One error naming the queue's URL setting and the budget, after the budget and at most
    one pause (0.25 s) more."""
    budget = 0.5
    crawler, _ = leasing_crawler(
        redis_server, shared_seen_store=False, DEDUP_REDIS_FAULT_BUDGET=budget
    )
    redis_server.kill()
    started = time.monotonic()
    with pytest.raises(RedisStartRefused) as refused:
        LeasingScheduler.from_crawler(crawler)
    waited = time.monotonic() - started
    assert budget <= waited <= budget + 0.25 + 0.25, waited
    message = str(refused.value)
    assert message.startswith("cannot open the shared request queue: Redis at redis://127.0.0.1:")
    assert re.search(
        r"\(REDIS_URL\) failed for 0\.[5-9]s, the whole DEDUP_REDIS_FAULT_BUDGET of 0\.5s", message
    ), message
    assert "ConnectionError" in message


@in_event_loop
def test_a_queue_whose_redis_fails_after_it_was_built_closes_the_spider_once_opened(
    redis_server, on_reactor_thread
):
    """A queue that cannot open (the server died after scrapy-redis's ping) in a crawl asks
    for the spider to be closed once it has opened, before it crawls (a CloseSpider raised from the
    scheduler's open leaves Scrapy's scraper unopened, whose close then fails)."""
    crawler, spider = leasing_crawler(
        redis_server, shared_seen_store=False, DEDUP_REDIS_FAULT_BUDGET=0.5
    )
    scheduler = LeasingScheduler.from_crawler(crawler)
    redis_server.kill()
    with pytest.raises(RedisStartRefused):  # used on its own: no spider to close
        scheduler.open(spider)
    crawler.engine = object()  # stands for the engine of a crawl that starts
    scheduler.open(spider)
    results = crawler.signals.send_catch_log(signals.spider_opened, spider=spider)
    refusals = [result.value for _, result in results if isinstance(result, Failure)]
    assert [type(refusal) for refusal in refusals] == [CloseSpider]
    assert refusals[0].reason == "dedup_redis_unavailable"
    scheduler.close("dedup_redis_unavailable")  # nothing was leased: nothing to put back
