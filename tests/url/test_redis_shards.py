"""A shared seen store split into shards under their own hash tags, on a real redis-server
(the same store on a real Redis Cluster is in ``test_redis_cluster.py``)."""

from __future__ import annotations

import hashlib
import threading
from collections import Counter

import pytest
from redis.crc import key_slot
from scrapy.settings import Settings

from crawler.redis.connection import RedisConnection, RedisSignatureMismatch
from crawler.url.canonical import UrlRules
from crawler.url.configuration import redis_seen_store, redis_shards_from_settings, url_signature
from crawler.url.generations import Generations
from crawler.url.stores.redis import RedisBloomSeenStore, RedisSetSeenStore
from crawler.url.stores.redis_shards import (
    CLUSTER_SLOTS,
    ShardedRedisSeenStore,
    redis_store_whereabouts,
    shard_bases,
    shard_capacity,
)

BASE = "spider:dupefilter"


def request_keys(count: int, start: int = 0) -> list[bytes]:
    return [
        hashlib.blake2b(str(number).encode(), digest_size=16).digest()
        for number in range(start, start + count)
    ]


def sharded(
    url: str, kind: str, count: int = 4, base: str = BASE, **options
) -> ShardedRedisSeenStore:
    connection = RedisConnection(url)
    shards: list[RedisSetSeenStore | RedisBloomSeenStore]
    if kind == "set":
        shards = [
            RedisSetSeenStore(connection, name, **options) for name in shard_bases(base, count)
        ]
        capacity = None
    else:
        capacity = 20_000
        shards = [
            RedisBloomSeenStore(connection, name, shard_capacity(capacity, count), 0.001, **options)
            for name in shard_bases(base, count)
        ]
    return ShardedRedisSeenStore(connection, base, shards, capacity=capacity)


def opened(store: ShardedRedisSeenStore) -> ShardedRedisSeenStore:
    store.open(url_signature(UrlRules(), store))
    return store


KINDS = pytest.mark.parametrize("kind", ["set", "bloom"])


@pytest.mark.parametrize("count", [1, 2, 3, 5, 12, 64])
def test_shard_tags_fall_in_equal_runs_of_the_slots(count):
    bases = shard_bases(BASE, count)
    assert len(set(bases)) == count
    for shard, base in enumerate(bases):
        assert base.startswith(f"{BASE}#{shard}.")
        slot = key_slot(base.encode())
        assert shard * CLUSTER_SLOTS // count <= slot < (shard + 1) * CLUSTER_SLOTS // count
        assert key_slot(f"{{{base}}}:signature".encode()) == slot
    assert shard_bases(BASE, count) == bases  # every worker computes the same


def test_shard_bases_refuse_a_hash_tag_and_a_bad_count():
    with pytest.raises(ValueError, match=r"has a hash tag.*DEDUP_REDIS_SHARDS=1"):
        shard_bases("{crawl}:spider:dupefilter", 4)
    for count in (0, CLUSTER_SLOTS + 1):
        with pytest.raises(ValueError, match=f"DEDUP_REDIS_SHARDS={count}"):
            shard_bases(BASE, count)


@KINDS
def test_each_key_new_once_across_workers_and_spread_over_the_shards(redis_server, kind):
    store = opened(sharded(redis_server.url, kind))
    other = opened(sharded(redis_server.url, kind))
    keys = request_keys(2000)
    assert all(store.add(key) for key in keys[:1000])
    assert not any(other.add(key) for key in keys[:1000])
    assert all(key in other for key in keys[:1000])
    assert sum(key in other for key in keys[1000:]) <= 3  # Bloom false positives at 0.001
    by_shard = Counter(store.shards.index(store.shard_of(key)) for key in keys[:1000])
    assert sorted(by_shard) == [0, 1, 2, 3]
    assert min(by_shard.values()) > 200  # 250 each, give or take a binomial spread
    for number, shard in enumerate(store.shards):
        assert len(shard) == by_shard[number] or kind == "bloom"
    store.close()
    assert len(other) == 1000
    stats = other.stats()
    assert stats["entries"] == 1000 and stats["redis_shards"] == 4
    assert redis_store_whereabouts(other) == " (4 shards)"
    assert redis_store_whereabouts(other.shards[0]) == ""  # one server: nothing to add
    assert other.params()["DEDUP_REDIS_SHARDS"] == 4
    if kind == "bloom":
        assert other.params()["capacity"] == 20_000
        assert stats["fill_ratio"] == max(s.stats()["fill_ratio"] for s in other.shards)


@KINDS
def test_racing_workers_see_each_key_new_exactly_once(redis_server, kind):
    keys = request_keys(400)
    winners: Counter[bytes] = Counter()
    lock = threading.Lock()

    def worker() -> None:
        store = opened(sharded(redis_server.url, kind))
        for key in keys:
            if store.add(key):
                with lock:
                    winners[key] += 1

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert set(winners) == set(keys)
    assert set(winners.values()) == {1}


def test_a_worker_with_another_shard_count_is_refused_before_writing(redis_server):
    store = opened(sharded(redis_server.url, "set", count=4))
    store.add(request_keys(1)[0])
    client = store.connection.client
    keys_before = sorted(client.keys("*"))
    with pytest.raises(RedisSignatureMismatch, match="DEDUP_REDIS_SHARDS: 4 -> 3"):
        opened(sharded(redis_server.url, "set", count=3))
    assert sorted(client.keys("*")) == keys_before


def test_a_store_of_one_shard_at_the_base_is_refused(redis_server):
    connection = RedisConnection(redis_server.url)
    single = RedisSetSeenStore(connection, BASE)
    single.open(url_signature(UrlRules(), single))
    single.add(request_keys(1)[0])
    with pytest.raises(RedisSignatureMismatch, match="DEDUP_REDIS_SHARDS: '<absent>' -> 4"):
        opened(sharded(redis_server.url, "set"))
    assert connection.client.keys(f"{BASE}#*") == []


def test_a_set_written_by_scrapy_redis_at_the_base_is_refused(redis_server):
    RedisConnection(redis_server.url).client.sadd(BASE, b"x" * 20)
    with pytest.raises(RedisSignatureMismatch, match="without a rules signature"):
        opened(sharded(redis_server.url, "bloom"))


def test_discard_forgets_in_a_set_shard_and_a_bloom_refuses(redis_server):
    store = opened(sharded(redis_server.url, "set"))
    key = request_keys(1)[0]
    store.add(key)
    assert store.discard(key) and key not in store and not store.discard(key)
    bloom = opened(sharded(redis_server.url, "bloom", base="other:dupefilter"))
    with pytest.raises(TypeError, match="Bloom filter cannot forget"):
        bloom.discard(key)


@KINDS
def test_clear_deletes_every_shard_and_the_signature(redis_server, kind):
    store = opened(sharded(redis_server.url, kind))
    for key in request_keys(50):
        store.add(key)
    store.close()
    assert store.connection.client.keys("*")
    store.clear()
    assert store.connection.client.keys("*") == []


def test_generations_merge_across_shards(redis_server):
    store = opened(sharded(redis_server.url, "set", generations=Generations(3600, 4)))
    for key in request_keys(100):
        store.add(key)
    (generation,) = store.generation_stats()
    assert generation["entries"] == 100
    assert store.stats() == {"entries": 100, "generations": 1, "redis_shards": 4}


@pytest.mark.parametrize(
    ("settings", "expected"),
    [
        ({}, 1),
        ({"DEDUP_REDIS_CLUSTER": True}, 12),
        ({"DEDUP_REDIS_SHARDS": 5}, 5),
        ({"DEDUP_REDIS_SHARDS": "1", "DEDUP_REDIS_CLUSTER": True}, 1),
    ],
)
def test_shard_count_from_settings(settings, expected):
    assert redis_shards_from_settings(Settings(settings)) == expected


@pytest.mark.parametrize("value", [0, -2, 16385, "many", 2.5])
def test_a_bad_shard_count_names_the_setting(value):
    with pytest.raises(ValueError, match="DEDUP_REDIS_SHARDS="):
        redis_shards_from_settings(Settings({"DEDUP_REDIS_SHARDS": value}))


def test_the_builder_keeps_one_store_alone_and_shards_on_request():
    single = redis_seen_store(Settings(), "spider", "redis")
    assert isinstance(single, RedisSetSeenStore) and single.key == "spider:dupefilter"
    store = redis_seen_store(
        Settings({"DEDUP_REDIS_SHARDS": 3, "DEDUP_URL_CAPACITY": 3000}), "spider", "redis-bloom"
    )
    assert isinstance(store, ShardedRedisSeenStore)
    assert [shard.capacity for shard in store.shards] == [1000, 1000, 1000]
    with pytest.raises(ValueError, match=r"DEDUP_REDIS_ITEM_KEY='\{c\}:items'.*hash tag"):
        redis_seen_store(
            Settings({"DEDUP_REDIS_SHARDS": 3, "DEDUP_REDIS_ITEM_KEY": "{c}:items"}),
            "spider",
            "redis",
            key_setting="DEDUP_REDIS_ITEM_KEY",
        )
