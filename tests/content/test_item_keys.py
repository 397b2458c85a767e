"""Item dedup by business key: ``DEDUP_ITEM_KEY_FIELDS`` and ``ItemKeyPipeline``."""

from __future__ import annotations

import asyncio
import json
import logging
import re
import threading
import time
from collections import Counter

import pytest
from scrapy import Spider, signals
from scrapy.exceptions import DropItem, NotConfigured
from scrapy.utils.test import get_crawler
from twisted.internet.defer import Deferred

from crawler.content.item_keys import item_key
from crawler.pipelines import ItemKeyPipeline
from crawler.redis.connection import RedisSignatureMismatch
from crawler.state.persistence import StateFileError
from tests.conftest import ManualClock, run_scrapy, scrapy_crawl_command


class ShopSpider(Spider):
    name = "shop"


def pipeline(**settings: object) -> ItemKeyPipeline:
    crawler = get_crawler(ShopSpider, {"DEDUP_URL_CAPACITY": 1000, **settings})
    built = ItemKeyPipeline.from_crawler(crawler)
    built.open_spider()
    return built


def outcome(pipeline: ItemKeyPipeline, item: dict, *, exported: bool = True) -> str:
    """Run *item* through the pipeline; a kept item is then scraped (as Scrapy sends
    ``item_scraped`` once every pipeline let it through) unless not *exported*."""
    try:
        pipeline.process_item(item)
    except DropItem as exc:
        pipeline.crawler.signals.send_catch_log(
            signals.item_dropped, item=item, response=None, spider=None, exception=exc
        )
        return f"dropped: {exc}"
    if exported:
        pipeline.crawler.signals.send_catch_log(
            signals.item_scraped, item=item, response=None, spider=None
        )
    return "kept"


def test_a_key_is_recorded_once_its_item_left_the_pipelines(tmp_path):
    """A kill between the pipeline and the feed must not make the restart drop the item as
    a repeat of itself: a local store records a key when its item is scraped; meanwhile the
    key is pending (a repeat is dropped), and a later pipeline's drop frees it."""
    shop = pipeline(DEDUP_ITEM_KEY_FIELDS=["sku"], DEDUP_STATE_DIR=tmp_path)
    first = {"sku": "1", "name": "first"}
    assert outcome(shop, first, exported=False) == "kept"
    assert outcome(shop, {"sku": "1", "name": "repeat"}).startswith("dropped")
    shop.crawler.signals.send_catch_log(
        signals.item_dropped, item=first, response=None, spider=None, exception=DropItem("x")
    )
    assert outcome(shop, {"sku": "1", "name": "second"}, exported=False) == "kept"
    assert outcome(shop, {"sku": "2"}) == "kept"
    # killed here: sku 1's item had not reached the feed, sku 2's had
    restarted = pipeline(DEDUP_ITEM_KEY_FIELDS=["sku"], DEDUP_STATE_DIR=tmp_path)
    assert outcome(restarted, {"sku": "1"}) == "kept"
    assert outcome(restarted, {"sku": "2"}).startswith("dropped")


def test_item_key_compares_values_as_json():
    assert item_key(["sku"], ["A-1"]) == item_key(["sku"], ["A-1"])
    assert item_key(["sku"], ["A-1"]) != item_key(["sku"], ["A-2"])
    assert item_key(["sku"], [1]) != item_key(["sku"], ["1"])
    assert item_key(["a", "b"], ["x", "y"]) != item_key(["a", "b"], ["y", "x"])
    assert item_key(["d"], [{"x": 1, "y": 2}]) == item_key(["d"], [{"y": 2, "x": 1}])
    assert len(item_key(["when"], [object()])) == 16  # not JSON: compared by str()


def test_off_without_fields():
    with pytest.raises(NotConfigured):
        ItemKeyPipeline.from_crawler(get_crawler(ShopSpider))


def test_bad_fields_setting_names_it():
    with pytest.raises(ValueError, match="DEDUP_ITEM_KEY_FIELDS"):
        ItemKeyPipeline.from_crawler(get_crawler(ShopSpider, {"DEDUP_ITEM_KEY_FIELDS": [""]}))


@pytest.mark.parametrize("backend", ["bloom", "memory"])
def test_drops_an_item_whose_key_was_seen(backend):
    shop = pipeline(DEDUP_ITEM_KEY_FIELDS=["shop", "sku"], DEDUP_URL_BACKEND=backend)
    assert outcome(shop, {"shop": "a", "sku": "1", "price": 3}) == "kept"
    assert outcome(shop, {"shop": "b", "sku": "1"}) == "kept"
    assert outcome(shop, {"shop": "a", "sku": "1", "price": 4}) == (
        "dropped: Duplicate item key (shop='a', sku='1') seen before"
    )
    stats = shop.crawler.stats
    assert stats.get_value("dedup/item/unique") == 2
    assert stats.get_value("dedup/item/dropped") == 1


def test_dropped_items_are_audited(tmp_path):
    audit = tmp_path / "audit.jsonl"
    shop = pipeline(DEDUP_ITEM_KEY_FIELDS=["sku"], DEDUP_AUDIT_FILE=str(audit))
    outcome(shop, {"sku": "1", "url": "https://shop.test/a"})
    outcome(shop, {"sku": "1", "url": "https://shop.test/b"})
    shop.close_spider()
    records = [json.loads(line) for line in audit.read_text("utf-8").splitlines()]
    assert records == [
        {
            "level": "item",
            "url": "https://shop.test/b",
            "decision": "dropped",
            "reason": "item_key",
            "key": {"sku": "1"},
        }
    ]


def test_items_missing_a_field_are_kept_counted_and_warned_once(caplog):
    shop = pipeline(DEDUP_ITEM_KEY_FIELDS=["sku"])
    for _ in range(3):
        assert outcome(shop, {"name": "no sku"}) == "kept"
    assert outcome(shop, {"sku": None}) == "kept"
    assert shop.crawler.stats.get_value("dedup/item/missing_key") == 4
    warnings = [r for r in caplog.records if "DEDUP_ITEM_KEY_FIELDS" in r.getMessage()]
    assert len(warnings) == 1


def test_keys_persist_in_the_state_dir_and_fields_are_in_the_signature(tmp_path):
    first = pipeline(DEDUP_ITEM_KEY_FIELDS=["sku"], DEDUP_STATE_DIR=tmp_path)
    assert outcome(first, {"sku": "1"}) == "kept"
    first.close_spider()
    assert (tmp_path / "seen-items.snapshot").exists()

    second = pipeline(DEDUP_ITEM_KEY_FIELDS=["sku"], DEDUP_STATE_DIR=tmp_path)
    assert outcome(second, {"sku": "1"}).startswith("dropped")
    second.close_spider()

    with pytest.raises(StateFileError, match="DEDUP_ITEM_KEY_FIELDS"):
        pipeline(DEDUP_ITEM_KEY_FIELDS=["sku", "shop"], DEDUP_STATE_DIR=tmp_path)


def test_ttl_applies_to_item_keys(tmp_path):
    shop = pipeline(DEDUP_ITEM_KEY_FIELDS=["sku"], DEDUP_URL_TTL=3600)
    clock = shop.seen.seen.generations.clock = ManualClock(3600.0)
    assert outcome(shop, {"sku": "1"}) == "kept"
    clock.now += 3599
    assert outcome(shop, {"sku": "1"}).startswith("dropped")
    clock.now += 3600
    assert outcome(shop, {"sku": "1"}) == "kept"


@pytest.mark.parametrize("backend", ["redis", "redis-bloom"])
def test_workers_share_item_keys_in_redis(redis_server, backend):
    settings = {
        "DEDUP_ITEM_KEY_FIELDS": ["sku"],
        "DEDUP_URL_BACKEND": backend,
        "REDIS_URL": redis_server.url,
    }
    first, second = pipeline(**settings), pipeline(**settings)
    assert outcome(first, {"sku": "1"}) == "kept"
    assert outcome(second, {"sku": "1"}).startswith("dropped")
    assert outcome(second, {"sku": "2"}) == "kept"
    names = {name.decode() for name in first.seen.connection.client.keys("*")}
    assert names and all(name.startswith(("shop:items", "{shop:items}")) for name in names)
    with pytest.raises(RedisSignatureMismatch, match="DEDUP_ITEM_KEY_FIELDS") as refused:
        pipeline(**{**settings, "DEDUP_ITEM_KEY_FIELDS": ["ean"]})
    assert str(refused.value).endswith("or another DEDUP_REDIS_ITEM_KEY")  # its key's setting


def test_redis_away_keeps_items_unchecked(redis_server_factory):
    server = redis_server_factory()
    shop = pipeline(
        DEDUP_ITEM_KEY_FIELDS=["sku"],
        DEDUP_URL_BACKEND="redis",
        DEDUP_REDIS_ON_ERROR="allow",
        REDIS_URL=server.url,
    )
    assert outcome(shop, {"sku": "1"}) == "kept"
    shop.seen.connection.retries = 1
    shop.seen.connection.backoff = 0.01
    server.stop()
    assert outcome(shop, {"sku": "1"}) == "kept"
    assert shop.crawler.stats.get_value("dedup/item/unchecked") == 1


def test_crawl_keeps_one_item_per_headline(demo_site_server, tmp_path):
    """A real crawl of the demo site: printer-friendly and mirrored copies share
    their article's headline; with it as item key, one item per headline is kept."""

    def crawl(name: str, *settings: str) -> tuple[list[dict], str]:
        output = tmp_path / f"{name}.jsonl"
        demo_site_server.reset()
        log = run_scrapy(
            scrapy_crawl_command(
                demo_site_server.url,
                *("-s", "DEDUP_CONTENT_ENABLED=False", "-s", "LOG_LEVEL=INFO"),
                *settings,
                *("-O", str(output)),
            )
        )
        return [json.loads(line) for line in output.read_text("utf-8").splitlines()], log

    everything, _ = crawl("all")
    kept, log = crawl("by-headline", "-s", "DEDUP_ITEM_KEY_FIELDS=headline")
    headlines = Counter(item["headline"] for item in everything)
    assert sum(count - 1 for count in headlines.values()) >= 11  # print and mirror copies
    assert sorted(item["headline"] for item in kept) == sorted(headlines)
    dropped = int(re.search(r"'dedup/item/dropped': (\d+)", log).group(1))
    assert dropped == len(everything) - len(headlines)
    # each drop is logged by its key, without the item (which holds the page here)
    assert log.count("Dropped: Duplicate item key (headline=") == dropped
    assert "<html" not in log


def test_close_publishes_the_store_figures_and_a_summary(caplog):
    caplog.set_level(logging.INFO)
    shop = pipeline(DEDUP_ITEM_KEY_FIELDS=["sku"])
    for sku in ("1", "2", "1"):
        outcome(shop, {"sku": sku})
    outcome(shop, {"name": "no sku"})
    shop.close_spider()
    stats = shop.crawler.stats
    assert stats.get_value("dedup/item/store/entries") == 2
    assert stats.get_value("dedup/item/store/fill_ratio") == pytest.approx(2 / 1000)
    assert (
        "Item dedup on sku: 1 items dropped for a key seen before, 2 unique, 1 without a key; "
        "the store holds 2 keys, 0.2% of capacity" in caplog.text
    )


@pytest.mark.usefixtures("on_reactor_thread")
def test_on_the_reactor_a_redis_fault_is_asked_again_from_a_thread(redis_server_factory):
    """The reactor does not wait for a Redis that fails: the pipeline answers with a
    Deferred, a thread asks again (with its retries, off the reactor), and the item is
    decided once Redis is back, within the fault budget: kept, then a repeat dropped."""
    server = redis_server_factory(appendonly=True)
    shop = pipeline(
        DEDUP_ITEM_KEY_FIELDS=["sku"],
        DEDUP_URL_BACKEND="redis",
        DEDUP_REDIS_FAULT_BUDGET=5,
        REDIS_URL=server.url,
    )

    async def decide(item: dict) -> list:
        outcomes: list = []
        result = shop.process_item(item)
        assert isinstance(result, Deferred)  # not decided on the reactor's thread
        result.addBoth(outcomes.append)
        while not outcomes:
            await asyncio.sleep(0.01)
        return outcomes

    server.stop()
    restart = threading.Timer(0.3, server.start)
    restart.start()
    try:
        started = time.monotonic()
        kept = asyncio.run(decide({"sku": "1"}))
    finally:
        restart.join()
    assert kept == [{"sku": "1"}]
    assert time.monotonic() - started < 5
    assert outcome(shop, {"sku": "1"}).startswith("dropped: Duplicate item key")
    assert shop.crawler.stats.get_value("dedup/item/unique") == 1
    assert shop.crawler.stats.get_value("dedup/item/unchecked") is None


def test_a_bad_redis_error_policy_names_the_setting(redis_server):
    crawler = get_crawler(
        ShopSpider,
        {
            "DEDUP_ITEM_KEY_FIELDS": ["sku"],
            "DEDUP_URL_BACKEND": "redis",
            "DEDUP_REDIS_ON_ERROR": "ignore",
            "REDIS_URL": redis_server.url,
        },
    )
    with pytest.raises(ValueError, match="DEDUP_REDIS_ON_ERROR='ignore' is not a policy"):
        ItemKeyPipeline.from_crawler(crawler)
