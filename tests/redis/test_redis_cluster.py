"""The shared stores on a real Redis Cluster (three primaries): each store, or each shard of
a seen store, keeps its keys in one hash slot, so scripts and BITFIELD calls are routed to
one node; a sharded seen store spreads over the primaries."""

from __future__ import annotations

import hashlib
import logging
import time
from collections import Counter
from typing import TYPE_CHECKING

import pytest
from scrapy import Request, Spider
from scrapy.utils.misc import build_from_crawler
from scrapy.utils.test import get_crawler

from crawler.content.index.redis import RedisContentIndex
from crawler.content.neardup import NearDuplicateDetector
from crawler.dupefilters import URLDupeFilter
from crawler.redis.connection import RedisConnection, RedisSignatureMismatch, RedisUnavailable
from crawler.url.generations import Generations
from crawler.url.stores.redis import RedisBloomSeenStore, RedisSetSeenStore
from crawler.url.stores.redis_shards import redis_store_whereabouts
from tests.crawls.test_distributed import run_workers

if TYPE_CHECKING:
    from tests.conftest import RedisServerProcess


class NamedSpider(Spider):
    name = "named"


def keys(count: int, start: int = 0) -> list[bytes]:
    return [hashlib.blake2b(str(n).encode(), digest_size=16).digest() for n in range(start, count)]


def cluster_connection(url: str) -> RedisConnection:
    return RedisConnection(url, cluster=True)


STORES = {
    "set": lambda c, base: RedisSetSeenStore(c, base),
    "bloom": lambda c, base: RedisBloomSeenStore(c, base, 2000, 0.01),
    "bloom-sharded": lambda c, base: RedisBloomSeenStore(c, base, 2000, 0.01, shard_bits=4096),
    "set-ttl": lambda c, base: RedisSetSeenStore(c, base, generations=Generations(3600, 4)),
    "bloom-ttl": lambda c, base: RedisBloomSeenStore(
        c, base, 2000, 0.01, generations=Generations(3600, 4)
    ),
}


@pytest.mark.parametrize("kind", list(STORES))
def test_stores_work_across_the_cluster(redis_cluster, kind):
    # several spiders' stores, spread over the cluster's nodes
    for spider in ("alpha", "beta", "gamma", "delta"):
        store = STORES[kind](cluster_connection(redis_cluster), f"{spider}:dupefilter")
        store.open(store.params())
        batch = keys(600)
        assert all(store.add(key) for key in batch[:300])
        assert not any(store.add(key) for key in batch[:300])
        other_worker = STORES[kind](cluster_connection(redis_cluster), f"{spider}:dupefilter")
        other_worker.open(other_worker.params())
        assert all(key in other_worker for key in batch[:300])
        assert sum(key in other_worker for key in batch[300:]) < 15  # Bloom false positives
        store.close()  # adds the count a Bloom store batches
        assert other_worker.stats()["entries"] >= 295
    if kind == "bloom-sharded":
        assert store.num_shards > 1
    nodes_used = {
        store.connection.client.keyslot(name)
        for name in store.connection.client.keys("*", target_nodes="all")
    }
    assert len(nodes_used) > 1  # the spiders' stores are in several slots


def test_signature_guard_and_clear_on_the_cluster(redis_cluster):
    store = RedisBloomSeenStore(cluster_connection(redis_cluster), "s:dupefilter", 2000, 0.01)
    store.open(store.params())
    store.add(keys(1)[0])
    other = RedisBloomSeenStore(cluster_connection(redis_cluster), "s:dupefilter", 4000, 0.01)
    with pytest.raises(RedisSignatureMismatch, match="capacity: 2000 -> 4000"):
        other.open(other.params())
    store.clear()
    assert store.connection.client.keys("*", target_nodes="all") == []


def test_dupefilter_and_content_index_with_the_cluster_setting(redis_cluster):
    crawler = get_crawler(
        NamedSpider,
        {
            "DEDUP_URL_BACKEND": "redis-bloom",
            "DEDUP_URL_CAPACITY": 1000,
            "DEDUP_REDIS_CLUSTER": True,
            "REDIS_URL": redis_cluster,
        },
    )
    crawler.spider = crawler._create_spider()
    dupefilter = build_from_crawler(URLDupeFilter, crawler)
    dupefilter.open()
    assert dupefilter.seen.connection.cluster
    assert not dupefilter.request_seen(Request("http://a.test/page"))
    assert dupefilter.request_seen(Request("http://a.test/page/?utm_source=x"))

    text = "A long enough article about the cluster and its three primaries. " * 10
    first = NearDuplicateDetector(
        shared_index=RedisContentIndex(cluster_connection(redis_cluster), "named:content")
    )
    second = NearDuplicateDetector(
        shared_index=RedisContentIndex(cluster_connection(redis_cluster), "named:content")
    )
    for detector in (first, second):
        detector.shared_index.open(detector.signature)
    assert first.check_and_add("https://a.test/1", text) is None
    match = second.check_and_add("https://b.test/1", text)
    assert match is not None and match.key == "https://a.test/1"


def test_a_cluster_down_is_a_fault_met_within_seconds(redis_cluster_nodes):
    """A primary of the cluster stops (no replica): once the others answer CLUSTERDOWN, an
    add fails with RedisUnavailable, so DEDUP_REDIS_ON_ERROR applies, after our retries
    only (redis-py's own ten retries blocked the reactor 12.6 s a call)."""
    import redis

    connection = RedisConnection(redis_cluster_nodes[0].url, cluster=True, retries=3)
    store = RedisSetSeenStore(connection, "named:dupefilter")
    store.open({"rules": 1})
    assert store.add(keys(1)[0])
    owner_port = connection.client.get_node_from_key(store.key).port
    owner = redis.Redis(port=owner_port)
    next(node for node in redis_cluster_nodes if node.port != owner_port).stop()
    deadline = time.monotonic() + 30
    while owner.cluster("info").get("cluster_state") == "ok":
        assert time.monotonic() < deadline, "the cluster never noticed the stopped node"
        time.sleep(0.2)
    started = time.monotonic()
    with pytest.raises(RedisUnavailable, match="refused after 3 retries: ClusterDownError"):
        store.add(keys(2, start=1)[0])
    assert time.monotonic() - started < 5  # measured 2.4 s: the backoff's 1.4 s, and topology


def primary_of_each_key(nodes: list[RedisServerProcess]) -> dict[bytes, int]:
    """Every key of the cluster, by the port of the primary that holds it."""
    import redis

    held = {}
    for node in nodes:
        client = redis.Redis(port=node.port)
        try:
            held.update(dict.fromkeys(client.keys("*"), node.port))
        finally:
            client.close()
    return held


@pytest.mark.parametrize("backend", ["redis", "redis-bloom"])
def test_a_seen_store_spreads_evenly_over_the_primaries(redis_cluster_nodes, backend, caplog):
    crawler = get_crawler(
        NamedSpider,
        {
            "DEDUP_URL_BACKEND": backend,
            "DEDUP_URL_CAPACITY": 30_000,
            "DEDUP_REDIS_CLUSTER": True,  # 12 shards unless DEDUP_REDIS_SHARDS says
            "REDIS_URL": redis_cluster_nodes[0].url,
        },
    )
    crawler.spider = crawler._create_spider()
    dupefilter = build_from_crawler(URLDupeFilter, crawler)
    with caplog.at_level(logging.INFO, logger="crawler.dupefilters"):
        dupefilter.open()
    primaries = ", ".join(sorted(f"127.0.0.1:{node.port}" for node in redis_cluster_nodes))
    assert f"key named:dupefilter (12 shards on 3 primaries: {primaries})" in caplog.text
    for number in range(3000):
        assert not dupefilter.request_seen(Request(f"http://a.test/page/{number}"))
    assert dupefilter.request_seen(Request("http://a.test/page/7?utm_source=x"))
    dupefilter.close("finished")
    held = primary_of_each_key(redis_cluster_nodes)
    shard_keys = [key for key in held if b"#" in key and not key.endswith(b":signature")]
    data_by_node = Counter(held[key] for key in shard_keys)
    # a set is one key a shard, a Bloom filter a bit string and a count: 4 shards a primary
    assert sorted(data_by_node.values()) == ([4, 4, 4] if backend == "redis" else [8, 8, 8])
    kind = "redis-set" if backend == "redis" else "redis-bloom"
    assert crawler.stats.get_value(f"dedup/{kind}/redis_shards") == 12


@pytest.mark.parametrize("backend", ["redis", "redis-bloom"])
def test_three_workers_on_a_sharded_store_download_each_resource_once(
    demo_site_process_factory, redis_cluster_nodes, backend
):
    server = demo_site_process_factory()
    run_workers(
        server,
        redis_cluster_nodes[0],
        {"DEDUP_URL_BACKEND": backend, "DEDUP_REDIS_CLUSTER": "True"},
    )
    hits = server.hits()
    assert set(hits["by_resource"]) == server.model().resources
    assert set(hits["by_resource"].values()) == {1}
    held = primary_of_each_key(redis_cluster_nodes)
    assert len({held[key] for key in held if b"site:dupefilter#" in key}) == 3


def test_a_store_of_one_shard_names_the_primary_that_holds_it(redis_cluster_nodes):
    connection = cluster_connection(redis_cluster_nodes[0].url)
    store = RedisSetSeenStore(connection, "named:dupefilter")
    node = connection.client.get_node_from_key("named:dupefilter")
    assert redis_store_whereabouts(store) == f" (on 127.0.0.1:{node.port})"


@pytest.mark.parametrize("backend", ["redis", "redis-bloom"])
def test_recrawl_records_sit_beside_the_seen_shards_across_the_primaries(
    redis_cluster_nodes, backend
):
    from scrapy.settings import Settings

    from crawler.url.configuration import redis_seen_store
    from crawler.url.recrawl_records import RecrawlRecord
    from crawler.url.recrawl_redis_store import RedisRecrawlStore

    settings = Settings({"REDIS_URL": redis_cluster_nodes[0].url, "DEDUP_REDIS_CLUSTER": True})
    seen = redis_seen_store(settings, "named", backend)
    seen.open(seen.params())
    records = RedisRecrawlStore.beside(seen, {})
    records.open()
    batch = keys(120)
    assert all(seen.add(key) for key in batch)
    for number, key in enumerate(batch):
        records.put(key, f"https://a.test/{number}", RecrawlRecord(1000, 60))
    # each seen URL checked and its due page claimed in one call, on its shard's primary
    claims = [seen.add_then(key, records.claim_tail(key, 1060, 600)) for key in batch]
    assert all(not new and records.claimed(reply)[0] for new, reply in claims)
    assert not any(
        records.claimed(seen.add_then(key, records.claim_tail(key, 1061, 600))[1])[0]
        for key in batch
    )
    assert len(records) == 120 and [url for _, url, _ in records.due(1660)] != []
    held = primary_of_each_key(redis_cluster_nodes)
    assert len({held[key] for key in held if b":recrawl:r:" in key}) == 3
