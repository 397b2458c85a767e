"""Leases on a shared request queue, against a real redis-server."""

from __future__ import annotations

import threading
import time

import pytest
import redis

from crawler.redis.connection import RedisConnection
from crawler.redis.leases import RequestLeases

QUEUE = "site:requests"


@pytest.fixture
def client(redis_server):
    with redis.Redis.from_url(redis_server.url) as client:
        yield client


def leases_for(redis_server, worker_id: str, kind: str = "priority", ttl: float = 60):
    connection = RedisConnection(redis_server.url)
    connection.open()
    return RequestLeases(connection, QUEUE, kind, worker_id, ttl)


def fill(client, kind: str, payloads: list[bytes]) -> None:
    """Queue *payloads* the way scrapy-redis's queues push them."""
    for score, payload in enumerate(payloads):
        if kind == "priority":
            client.zadd(QUEUE, {payload: score})
        else:
            client.lpush(QUEUE, payload)


def queued(client, kind: str) -> list[bytes]:
    """The queue's content in the order the queue pops it."""
    if kind == "priority":
        return client.zrange(QUEUE, 0, -1)
    items = client.lrange(QUEUE, 0, -1)
    return items[::-1] if kind == "fifo" else items


def take_all(leases: RequestLeases) -> list[bytes]:
    taken = []
    while (lease := leases.take()) is not None:
        taken.append(lease.payload)
    return taken


@pytest.mark.parametrize("kind", ["priority", "fifo", "lifo"])
def test_take_pops_in_queue_order_and_records_the_exact_bytes(redis_server, client, kind):
    payloads = [b"req-a \x00\xff", b"req-b", b"req-c"]
    fill(client, kind, payloads)
    expected_order = queued(client, kind)
    leases = leases_for(redis_server, "w1", kind)

    first = leases.take()
    assert first is not None
    assert first.payload == expected_order[0]
    assert leases.held() == {first.id: expected_order[0]}
    assert queued(client, kind) == expected_order[1:]
    assert take_all(leases) == expected_order[1:]
    assert leases.take() is None
    assert sorted(leases.held().values()) == sorted(payloads)
    assert int(client.hget(f"{QUEUE}:leases", "held")) == 3
    assert client.sismember(f"{QUEUE}:workers", "w1")
    assert client.pttl(f"{QUEUE}:heartbeat:w1") > 59_000


def test_concurrent_takers_take_each_request_exactly_once(redis_server, client):
    payloads = [f"request-{i}".encode() for i in range(600)]
    fill(client, "priority", payloads)
    takers = [leases_for(redis_server, f"w{i}") for i in range(6)]
    taken: dict[str, list[bytes]] = {}
    start = threading.Barrier(len(takers))

    def run(leases: RequestLeases) -> None:
        start.wait()
        taken[leases.worker_id] = take_all(leases)

    threads = [threading.Thread(target=run, args=(leases,)) for leases in takers]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    everything = [payload for worker_taken in taken.values() for payload in worker_taken]
    assert sorted(everything) == sorted(payloads)  # none lost, none taken twice
    assert sum(1 for worker_taken in taken.values() if worker_taken) >= 2
    for leases in takers:
        assert sorted(leases.held().values()) == sorted(taken[leases.worker_id])
    assert int(client.hget(f"{QUEUE}:leases", "held")) == len(payloads)


def test_release_gives_a_lease_up_once(redis_server, client):
    fill(client, "priority", [b"a", b"b"])
    leases = leases_for(redis_server, "w1")
    first, second = leases.take(), leases.take()
    assert first is not None and second is not None

    assert leases.release(first.id) is True
    assert leases.release(first.id) is False
    assert leases.held() == {second.id: b"b"}
    assert int(client.hget(f"{QUEUE}:leases", "held")) == 1


@pytest.mark.parametrize("kind", ["priority", "fifo", "lifo"])
def test_expired_worker_leases_go_back_unchanged(redis_server, client, kind):
    fill(client, kind, [b"a", b"b", b"c", b"d"])
    scores = dict(client.zrange(QUEUE, 0, -1, withscores=True)) if kind == "priority" else {}
    expected_order = queued(client, kind)
    dead = leases_for(redis_server, "dead", kind, ttl=1)
    survivor = leases_for(redis_server, "survivor", kind)
    assert take_all(dead)[:3] == expected_order[:3]
    assert queued(client, kind) == []

    assert survivor.reclaim_expired() == 0  # the heartbeat is still alive
    time.sleep(1.1)
    assert survivor.reclaim_expired() == 4
    assert survivor.reclaim_expired() == 0

    assert queued(client, kind) == expected_order  # same bytes, taken again first-in-first
    if kind == "priority":
        assert dict(client.zrange(QUEUE, 0, -1, withscores=True)) == scores
    assert dead.held() == {}
    assert int(client.hget(f"{QUEUE}:leases", "held")) == 0
    assert not client.sismember(f"{QUEUE}:workers", "dead")
    assert dead.release(1) is False  # a late release of a reclaimed lease changes nothing
    assert int(client.hget(f"{QUEUE}:leases", "held")) == 0


@pytest.mark.parametrize("kind", ["priority", "fifo", "lifo"])
def test_a_request_taken_back_from_a_dead_worker_says_so_once(redis_server, client, kind):
    fill(client, kind, [b"a", b"b", b"c"])
    dead = leases_for(redis_server, "dead", kind, ttl=1)
    survivor = leases_for(redis_server, "survivor", kind)
    first = dead.take()
    assert first is not None and not first.reclaimed
    time.sleep(1.1)
    assert survivor.reclaim_expired() == 1
    taken = [survivor.take() for _ in range(3)]
    assert all(taken)
    assert [lease.reclaimed for lease in taken if lease] == [True, False, False]
    assert taken[0] is not None and taken[0].payload == first.payload  # popped next
    assert client.scard(f"{QUEUE}:reclaimed") == 0  # the mark goes with the take


def test_concurrent_reclaimers_put_each_lease_back_exactly_once(redis_server, client):
    payloads = [f"request-{i}".encode() for i in range(300)]
    fill(client, "fifo", payloads)  # a list: a request put back twice would show twice
    dead = leases_for(redis_server, "dead", "fifo", ttl=1)
    for _ in range(200):
        dead.take()
    time.sleep(1.1)
    reclaimers = [leases_for(redis_server, f"r{i}", "fifo") for i in range(6)]
    counts: list[int] = []
    start = threading.Barrier(len(reclaimers))

    def run(leases: RequestLeases) -> None:
        start.wait()
        counts.append(leases.reclaim_expired())

    threads = [threading.Thread(target=run, args=(leases,)) for leases in reclaimers]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert sorted(counts) == [0, 0, 0, 0, 0, 200]
    assert sorted(client.lrange(QUEUE, 0, -1)) == sorted(payloads)
    assert int(client.hget(f"{QUEUE}:leases", "held")) == 0


def test_reclaim_while_the_dead_worker_is_taking_loses_nothing(redis_server, client):
    """Reclaimers race a worker that keeps taking after its heartbeat expired."""
    payloads = [f"request-{i}".encode() for i in range(400)]
    fill(client, "fifo", payloads)
    slow = leases_for(redis_server, "slow", "fifo", ttl=1)
    slow.take()
    time.sleep(1.1)
    reclaimer = leases_for(redis_server, "reclaimer", "fifo")
    stop = threading.Event()

    def reclaim_repeatedly() -> None:
        while not stop.is_set():
            reclaimer.reclaim_expired()

    thread = threading.Thread(target=reclaim_repeatedly)
    thread.start()
    taken_by_slow = [slow.take() for _ in range(100)]
    stop.set()
    thread.join()

    assert all(lease is not None for lease in taken_by_slow)
    in_queue = client.lrange(QUEUE, 0, -1)
    held = list(slow.held().values())
    assert sorted(in_queue + held) == sorted(payloads)


def test_a_restarted_worker_puts_back_its_own_leases_at_once(redis_server, client):
    fill(client, "priority", [b"a", b"b", b"c"])
    killed = leases_for(redis_server, "crawler-1")
    killed.take()
    killed.take()

    restarted = leases_for(redis_server, "crawler-1")  # heartbeat of the killed run still alive
    assert restarted.return_own() == 2
    assert client.zrange(QUEUE, 0, -1) == [b"a", b"b", b"c"]
    assert restarted.held() == {}
    assert not client.exists(f"{QUEUE}:heartbeat:crawler-1")
    assert int(client.hget(f"{QUEUE}:leases", "held")) == 0


def test_pending_counts_the_queue_and_other_workers_leases(redis_server, client):
    fill(client, "priority", [b"a", b"b", b"c", b"d"])
    mine = leases_for(redis_server, "mine")
    other = leases_for(redis_server, "other")
    assert mine.pending() == (4, 0)
    mine.take()
    assert mine.pending() == (3, 0)
    other.take()
    other.take()
    assert mine.pending() == (1, 2)
    assert other.pending() == (1, 1)


def test_set_aside_keeps_an_unreadable_request(redis_server, client):
    fill(client, "priority", [b"not a pickle"])
    leases = leases_for(redis_server, "w1")
    lease = leases.take()
    assert lease is not None
    assert leases.set_aside(lease.id) is True
    assert leases.set_aside(lease.id) is False
    assert client.lrange(f"{QUEUE}:undecodable", 0, -1) == [b"not a pickle"]
    assert leases.held() == {}
    assert int(client.hget(f"{QUEUE}:leases", "held")) == 0


def test_clear_forgets_every_workers_leases(redis_server, client):
    fill(client, "priority", [b"a", b"b", b"c"])
    first, second = leases_for(redis_server, "w1"), leases_for(redis_server, "w2")
    first.take()
    second.take()
    first.clear()
    assert client.keys(f"{QUEUE}:*") == []
    assert first.held() == {}
    assert second.pending() == (1, 0)


def test_unknown_queue_kind_is_refused(redis_server):
    with pytest.raises(ValueError, match="queue kind 'stack'"):
        leases_for(redis_server, "w1", "stack")
