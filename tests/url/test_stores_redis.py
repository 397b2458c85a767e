"""The Redis seen-URL stores, against a real redis-server."""

from __future__ import annotations

import hashlib
import random
import re
import threading
from collections import Counter
from typing import TYPE_CHECKING

import pytest
from redis.connection import Connection
from redis.crc import key_slot

from crawler.redis.connection import RedisConnection, RedisSignatureMismatch
from crawler.url.generations import Generations
from crawler.url.stores.redis import (
    RedisBloomSeenStore,
    RedisSetSeenStore,
    bitfield_set_command,
    hash_tag,
)
from tests.conftest import ManualClock

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


def test_a_set_forgets_a_key_and_a_bloom_filter_refuses_to(redis_server):
    """Both Redis stores answer ``discard`` (what ``scrapy dedup-forget`` calls): a set
    forgets the key, and says whether it was there; a Bloom filter raises, its bits being
    other keys' too, and keeps the key."""
    key = request_keys(1)[0]
    shared_set = opened(set_store, redis_server.url)
    shared_set.add(key)
    assert shared_set.discard(key) is True and key not in shared_set
    assert shared_set.discard(key) is False
    bloom = opened(bloom_store, redis_server.url, base="other:dupefilter")
    bloom.add(key)
    with pytest.raises(TypeError, match="Bloom filter cannot forget"):
        bloom.discard(key)
    assert key in bloom


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


def timed_set_store(connection: RedisConnection, clock: ManualClock, base: str = BASE):
    return RedisSetSeenStore(connection, base, generations=Generations(100, 4, clock=clock))


def timed_bloom_store(
    connection: RedisConnection, clock: ManualClock, base: str = BASE, capacity: int = 1000
) -> RedisBloomSeenStore:
    return RedisBloomSeenStore(
        connection, base, capacity, 0.001, generations=Generations(100, 4, clock=clock)
    )


TIMED_STORES = pytest.mark.parametrize(
    "make_timed_store", [timed_set_store, timed_bloom_store], ids=["set", "bloom"]
)


@TIMED_STORES
def test_ttl_forgets_after_the_ttl_not_before(redis_server, make_timed_store):
    clock = ManualClock(1_000_000.0)  # slices of 25 s; this is the start of one
    store = make_timed_store(RedisConnection(redis_server.url), clock)
    store.open(store.params())
    first, second = request_keys(2)
    assert store.add(first) is True
    clock.now += 60
    assert store.add(second) is True
    assert store.add(first) is False  # a repeat does not refresh the key
    clock.now += 39.9
    assert first in store
    assert store.add(first) is False
    assert len(store) == 2
    clock.now += 25.1  # 125 s after the first key, 65 s after the second
    assert first not in store
    assert second in store
    assert store.add(first) is True
    assert [generation["entries"] for generation in store.generation_stats()] == [1, 1]
    assert store.stats()["entries"] == 2

    other_worker = make_timed_store(RedisConnection(redis_server.url), clock)
    other_worker.open(other_worker.params())
    assert other_worker.add(second) is False


@TIMED_STORES
def test_ttl_generation_keys_expire_on_their_own(redis_server, make_timed_store):
    clock = ManualClock(1_000_000.0)
    store = make_timed_store(RedisConnection(redis_server.url), clock)
    store.open(store.params())
    store.add(request_keys(1)[0])
    client = store.connection.client
    timed = [name.decode() for name in client.keys("*gen*")]
    assert timed
    assert all(name.startswith("{spider:dupefilter}:") for name in timed)
    expected = store.generations.expire_seconds
    assert all(expected - 2 <= client.ttl(name) <= expected for name in timed)
    assert client.ttl(store.signature_key) == -1  # the signature stays

    store.clear()
    assert client.keys("*") == []


def test_racing_workers_with_ttl_see_each_key_new_exactly_once(redis_server):
    keys = request_keys(2000)
    results: Counter[bytes] = Counter()
    lock = threading.Lock()
    clock = ManualClock(1_000_000.0)

    def work(seed: int) -> None:
        store = timed_bloom_store(RedisConnection(redis_server.url), clock, capacity=4000)
        store.open(store.params())
        order = keys[:]
        random.Random(seed).shuffle(order)
        new = [key for key in order if store.add(key)]
        with lock:
            results.update(new)

    threads = [threading.Thread(target=work, args=(seed,)) for seed in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sum(results.values()) == len(results) >= 1995  # Bloom false positives at most
    assert max(results.values()) == 1


def test_bloom_sets_the_same_bits_with_and_without_ttl(redis_server):
    """The Lua script (with a TTL) computes bit positions as Python does (without)."""
    connection = RedisConnection(redis_server.url)
    untimed = bloom_store(connection, base="untimed", capacity=5000, shard_bits=8192)
    timed = RedisBloomSeenStore(
        connection,
        "timed",
        5000,
        0.001,
        shard_bits=8192,
        generations=Generations(100, 4, clock=ManualClock(1_000_000.0)),
    )
    for store in (untimed, timed):
        store.open(store.params())
        for key in request_keys(300):
            assert store.add(key)
    assert untimed.num_shards > 1
    generation = timed.generations.current()
    client = connection.client
    for shard in range(untimed.num_shards):
        untimed_bits = client.get(f"{{untimed}}:bloom:{shard}")
        assert untimed_bits is not None and any(untimed_bits)
        assert client.get(f"{{timed}}:bloom:{shard}:gen:{generation}") == untimed_bits


@pytest.mark.parametrize(
    ("base", "tag"),
    [
        ("spider:dupefilter", "{spider:dupefilter}"),
        ("{crawl}:spider", "{crawl}:spider"),
        ("a{b}c{d}", "a{b}c{d}"),
    ],
)
def test_every_key_of_a_store_is_in_one_cluster_slot(base, tag):
    assert hash_tag(base) == tag
    for store in (
        RedisSetSeenStore(RedisConnection("redis://127.0.0.1:1"), base),
        RedisBloomSeenStore(RedisConnection("redis://127.0.0.1:1"), base, 1000, 0.01),
    ):
        names = [store.signature_key]
        if isinstance(store, RedisSetSeenStore):
            names.append(store.key)
        else:
            names += [store.count_key, *store.shard_keys]
        assert len({key_slot(name.encode()) for name in names}) == 1, names


@pytest.mark.parametrize("base", ["odd{}:key", "half{open", "close}only"])
def test_braces_that_are_not_a_hash_tag_are_refused(base):
    with pytest.raises(ValueError, match="braces that are not a hash tag"):
        hash_tag(base)


@pytest.mark.parametrize("offsets", [[0], [7, 1234567, 2**31 - 1], list(range(0, 2**20, 99_991))])
def test_bitfield_command_encodes_as_redis_py_does(offsets):
    arguments = [part for offset in offsets for part in ("SET", "u1", offset, 1)]
    expected = b"".join(Connection().pack_command("BITFIELD", "{k}:bloom:0", *arguments))
    assert bitfield_set_command(b"{k}:bloom:0", offsets) == expected


def test_bloom_count_reaches_other_workers_within_the_interval(redis_server, monkeypatch):
    monkeypatch.setattr("crawler.url.stores.redis.COUNT_INTERVAL", 3600.0)
    store = opened(bloom_store, redis_server.url)
    other = opened(bloom_store, redis_server.url)
    keys = request_keys(4)
    for key in keys[:3]:
        store.add(key)
    assert len(other) == 0  # batched: neither a full batch nor the interval yet
    monkeypatch.setattr("crawler.url.stores.redis.COUNT_INTERVAL", 0.0)
    store.add(keys[3])  # the first add after the interval sends the count
    assert len(other) == 4
