"""The Redis seen-URL stores, against a real redis-server."""

from __future__ import annotations

import hashlib
import random
import re
import threading
from collections import Counter
from typing import TYPE_CHECKING

import pytest

from crawler.redis_access import RedisConnection, RedisSignatureMismatch
from crawler.stores.redis import RedisBloomSeenStore, RedisSetSeenStore

if TYPE_CHECKING:
    from collections.abc import Callable

    from tests.conftest import RedisServerProcess

    Store = RedisSetSeenStore | RedisBloomSeenStore

BASE = "spider:dupefilter"


def request_keys(count: int, start: int = 0) -> list[bytes]:
    return [
        hashlib.blake2b(str(number).encode(), digest_size=16).digest()
        for number in range(start, start + count)
    ]


def set_store(connection: RedisConnection, base: str = BASE) -> RedisSetSeenStore:
    return RedisSetSeenStore(connection, base)


def bloom_store(
    connection: RedisConnection,
    base: str = BASE,
    capacity: int = 20_000,
    error_rate: float = 0.001,
    shard_bits: int = 2**31,
) -> RedisBloomSeenStore:
    return RedisBloomSeenStore(connection, base, capacity, error_rate, shard_bits=shard_bits)


STORES = pytest.mark.parametrize("make_store", [set_store, bloom_store], ids=["set", "bloom"])


def opened(make_store: Callable[..., Store], url: str, **options: object) -> Store:
    store = make_store(RedisConnection(url), **options)
    store.open(store.params())
    return store


@STORES
def test_add_once_shared_by_workers_close_keeps_clear_removes(redis_server, make_store):
    first = opened(make_store, redis_server.url)
    key, other = request_keys(2)
    assert first.add(key) is True
    assert first.add(key) is False
    assert len(first) == 1
    assert first.stats()["entries"] == 1
    first.close()

    second = opened(make_store, redis_server.url)
    assert key in second
    assert other not in second
    assert second.add(key) is False
    assert second.add(other) is True
    assert len(second) == 2

    second.clear()
    assert RedisConnection(redis_server.url).client.keys() == []
    third = opened(make_store, redis_server.url)
    assert third.add(key) is True


@STORES
def test_racing_workers_see_each_key_new_exactly_once(redis_server, make_store):
    keys = request_keys(2000)
    opened(make_store, redis_server.url)  # claims the signature, creates the shards
    news: list[list[bytes]] = [[] for _ in range(4)]
    barrier = threading.Barrier(4)

    def work(worker: int) -> None:
        store = opened(make_store, redis_server.url)
        order = keys[:]
        random.Random(worker).shuffle(order)
        barrier.wait()
        news[worker] = [key for key in order if store.add(key)]

    threads = [threading.Thread(target=work, args=(worker,)) for worker in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    per_key = Counter(key for found in news for key in found)
    assert sum(len(found) for found in news) == 2000
    assert set(per_key) == set(keys)
    assert set(per_key.values()) == {1}
    assert all(news), "every worker won some keys: the race really happened"


def test_set_store_stats(redis_server):
    store = opened(set_store, redis_server.url)
    for key in request_keys(5):
        store.add(key)
    assert store.stats() == {"entries": 5}
    assert store.params() == {"backend": "redis-set"}


def test_bloom_false_positive_rate_at_capacity(redis_server):
    store = opened(bloom_store, redis_server.url, capacity=20_000, error_rate=0.01)
    for key in request_keys(20_000):
        store.add(key)
    false_positives = sum(key in store for key in request_keys(20_000, start=20_000))
    assert false_positives / 20_000 < 0.01
    stats = store.stats()
    assert 19_900 <= stats["entries"] == len(store) <= 20_000  # minus insert-time collisions
    assert stats["fill_ratio"] == pytest.approx(stats["entries"] / 20_000)
    assert 0.004 < stats["false_positive_rate"] < 0.006  # sized for half the error rate
    assert stats["shards"] == 1
    assert stats["bytes"] == store.num_bits / 8
    assert store.num_slices == 8  # ceil(log2(1 / 0.005))


def test_bloom_sharded_over_tagged_keys(redis_server):
    store = opened(bloom_store, redis_server.url, capacity=2000, error_rate=0.01, shard_bits=4096)
    keys = request_keys(2000)
    assert all(store.add(key) for key in keys[:1000])
    assert not any(store.add(key) for key in keys[:1000])
    false_positives = sum(key in store for key in keys[1000:])
    assert false_positives < 20

    names = {name.decode() for name in store.connection.client.keys("*bloom*")}
    assert len(names) == store.num_shards == store.stats()["shards"] > 2
    assert names == {f"{{{BASE}}}:bloom:{shard}" for shard in range(store.num_shards)}
    assert all(re.fullmatch(r"\{spider:dupefilter\}:bloom:\d+", name) for name in names)
    sizes = [store.connection.client.strlen(f"{{{BASE}}}:bloom:{n}") for n in range(len(names))]
    assert sum(sizes) == -(-store.num_bits // 8)
    assert sizes[0] == 4096 // 8


def _bytes_per_url(
    url: str, make_store: Callable[..., Store], count: int, **options: object
) -> tuple[float, float]:
    """``used_memory`` grown by a store of *count* keys, and the ``MEMORY USAGE``
    of its keys, each divided by its entries.

    A store on another base warms the connection and the Lua scripts first, so
    the figure holds the store's data, not a new client's buffers.
    """
    RedisConnection(url).client.flushall()
    connection = RedisConnection(url)
    warm = make_store(connection, base="warm", **options)
    warm.open(warm.params())
    warm.add(b"w" * 16)
    probe = RedisConnection(url).client
    probe.info("memory")
    before = int(probe.info("memory")["used_memory"])
    store = make_store(connection, base="measured", **options)
    store.open(store.params())
    for key in request_keys(count):
        store.add(key)
    after = int(probe.info("memory")["used_memory"])
    entries = len(store)
    assert entries >= count - 50  # a few Bloom false positives at most
    key_bytes = sum(probe.memory_usage(key, samples=0) for key in probe.keys("*measured*"))
    return (after - before) / entries, key_bytes / entries


def test_memory_per_url(redis_server):
    count = 50_000
    bloom = _bytes_per_url(redis_server.url, bloom_store, count, capacity=count, error_rate=0.001)
    exact = _bytes_per_url(redis_server.url, set_store, count)
    print(
        "bytes per URL (used_memory delta, MEMORY USAGE of the keys): "
        f"bloom {bloom[0]:.2f}, {bloom[1]:.2f}; set {exact[0]:.2f}, {exact[1]:.2f}"
    )
    assert max(bloom) <= 2.5
    assert max(exact) < 90


def test_other_rules_refused(redis_server):
    opened(bloom_store, redis_server.url, capacity=1000, error_rate=0.01)
    with pytest.raises(RedisSignatureMismatch, match=r"capacity: 1000 -> 2000"):
        opened(bloom_store, redis_server.url, capacity=2000, error_rate=0.01)
    with pytest.raises(RedisSignatureMismatch, match=r"backend: 'redis-bloom' -> 'redis-set'"):
        opened(set_store, redis_server.url)


def test_set_written_by_scrapy_redis_refused(redis_server):
    RedisConnection(redis_server.url).client.sadd(BASE, "0" * 40)
    with pytest.raises(RedisSignatureMismatch, match="without a rules signature"):
        opened(set_store, redis_server.url)


@STORES
def test_redis_restart_mid_run(redis_server_factory, make_store):
    server: RedisServerProcess = redis_server_factory(appendonly=True)
    store = make_store(RedisConnection(server.url, retries=6, backoff=0.1))
    store.open(store.params())
    before, after = request_keys(100), request_keys(100, start=100)
    assert all(store.add(key) for key in before)

    server.stop()
    restart = threading.Timer(0.5, server.start)
    restart.start()
    try:
        assert not any(store.add(key) for key in before)  # waits, retrying, for the restart
    finally:
        restart.join()
    assert all(store.add(key) for key in after)
    assert len(store) == 200
    assert store.connection.retried > 0
