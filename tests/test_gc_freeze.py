"""GCFreeze: the objects alive at the engine's start frozen while the crawl runs."""

from __future__ import annotations

import gc
import json
import sys
import weakref
from typing import TYPE_CHECKING

import pytest
from scrapy import Spider
from scrapy.exceptions import NotConfigured
from scrapy.utils.test import get_crawler

from crawler.gc_freeze import GCFreeze
from tests.conftest import final_stat, run_scrapy

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path


class NamedSpider(Spider):
    name = "named"


@pytest.fixture
def unfrozen_after() -> Iterator[None]:
    """The test process's collector as it was, whatever the test did."""
    assert gc.get_freeze_count() == 0
    try:
        yield
    finally:
        gc.unfreeze()


def make_extension(settings: dict) -> GCFreeze:
    return GCFreeze.from_crawler(get_crawler(NamedSpider, settings))


def test_what_lived_at_the_start_is_frozen_until_the_engine_stops(unfrozen_after: None) -> None:
    extension = make_extension({})
    kept = [[] for _ in range(1000)]  # alive at the start: frozen
    extension.engine_started()
    frozen = gc.get_freeze_count()
    assert frozen > len(kept)
    assert extension.stats.get_value("dedup/gc/frozen_objects") == frozen
    assert all(obj is not kept for obj in gc.get_objects())  # no generation holds it
    extension.engine_stopped()
    assert gc.get_freeze_count() == 0
    assert any(obj is kept for obj in gc.get_objects())


class Node:
    itself: Node


def test_garbage_at_the_start_is_collected_and_a_later_cycle_after_the_crawl(
    unfrozen_after: None,
) -> None:
    extension = make_extension({})
    before, alive = Node(), Node()
    before.itself, alive.itself = before, alive
    gone, stays = weakref.ref(before), weakref.ref(alive)
    del before
    extension.engine_started()  # collects first: the young cycle already garbage is not frozen
    assert gone() is None
    del alive  # a cycle now, frozen: no collection sees it while the crawl runs
    gc.collect()
    assert stays() is not None
    extension.engine_stopped()
    gc.collect()
    assert stays() is None


def test_a_stop_without_a_start_unfreezes_nothing(unfrozen_after: None) -> None:
    gc.freeze()  # someone else's
    make_extension({}).engine_stopped()
    assert gc.get_freeze_count() > 0


@pytest.mark.parametrize(
    ("settings", "switch"),
    [({"DEDUP_GC_FREEZE": False}, "DEDUP_GC_FREEZE"), ({"DEDUP_ENABLED": False}, "DEDUP_ENABLED")],
)
def test_switched_off_by_its_setting_or_the_add_ons(settings: dict, switch: str) -> None:
    with pytest.raises(NotConfigured, match=f"{switch} is False"):
        make_extension(settings)


@pytest.mark.skipif(
    sys.version_info >= (3, 14), reason="Python 3.14's incremental collector has no generation 2"
)
def test_garbage_of_the_old_generation_waits_for_the_crawls_end(unfrozen_after: None) -> None:
    extension = make_extension({})
    old = Node()
    old.itself = old
    gone = weakref.ref(old)
    gc.collect()  # survives into the oldest generation
    del old  # garbage there: only a full collection would find it
    extension.engine_started()  # the young generations only: the crawl does not wait
    gc.collect()
    assert gone() is not None
    extension.engine_stopped()
    gc.collect()
    assert gone() is None


FREEZE_SPIDER = """
import gc

import scrapy


class FreezeSpider(scrapy.Spider):
    name = "freeze"

    def __init__(self, url, **kwargs):
        super().__init__(**kwargs)
        self.start_urls = [url]

    def parse(self, response):
        yield {"url": response.url, "frozen": gc.get_freeze_count()}
"""


@pytest.mark.parametrize("freeze", [True, False])
def test_a_crawl_with_the_add_on_runs_frozen(
    demo_site_process_factory, tmp_path: Path, freeze: bool
) -> None:
    server = demo_site_process_factory()
    spider = tmp_path / "freeze.py"
    spider.write_text(FREEZE_SPIDER)
    output = tmp_path / "items.jsonl"
    command = [sys.executable, "-m", "scrapy", "runspider", str(spider), "-a", f"url={server.url}"]
    settings = ["-s", 'ADDONS={"crawler.addon.DedupAddon": 0}', "-s", f"DEDUP_GC_FREEZE={freeze}"]
    log = run_scrapy([*command, *settings, "-s", "LOG_LEVEL=INFO", "-O", str(output)])
    (item,) = [json.loads(line) for line in output.read_text("utf-8").splitlines()]
    if freeze:
        # Scrapy, Twisted and the add-on's modules: tens of thousands of objects
        # objects frozen can still be freed by reference counting, never added
        assert 10_000 < item["frozen"] <= final_stat(log, "dedup/gc/frozen_objects")
    else:
        assert item["frozen"] == 0
        assert "dedup/gc/frozen_objects" not in log
