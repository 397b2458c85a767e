"""State written by an earlier release opens unchanged: the state directory
``tests/state/release_state/before-packages`` and the Redis dump beside it were written at
9e52a90, before the code was cut into packages by level
(``tests/state/release_state/write.py`` says how)."""

from __future__ import annotations

import asyncio
import re
import shutil
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from scrapy import Request
from scrapy.exceptions import DropItem
from scrapy.utils.misc import build_from_crawler
from scrapy.utils.test import get_crawler

from crawler.dupefilters import URLDupeFilter
from crawler.pipelines import NearDuplicatePipeline
from tests.conftest import RedisServerProcess
from tests.state.release_state.write import (
    SETTINGS,
    NamedSpider,
    article,
    redis_settings,
    requests_and_items,
)

if TYPE_CHECKING:
    from collections.abc import Callable

WRITTEN = Path(__file__).parent / "release_state" / "before-packages"


@pytest.fixture
def state_dir(tmp_path: Path) -> Path:
    copy = tmp_path / "state"
    shutil.copytree(WRITTEN, copy)
    return copy


def test_the_urls_seen_then_are_seen(state_dir: Path) -> None:
    crawler = get_crawler(NamedSpider, {**SETTINGS, "DEDUP_STATE_DIR": str(state_dir)})
    crawler.spider = crawler._create_spider()
    dupefilter = build_from_crawler(URLDupeFilter, crawler)
    dupefilter.open()
    urls, _ = requests_and_items()
    assert all(dupefilter.request_seen(Request(url)) for url in urls)
    assert dupefilter.request_seen(Request("https://shop.test/p/7?utm_medium=mail#reviews"))
    assert not dupefilter.request_seen(Request("https://shop.test/p/40"))
    dupefilter.close("finished")


def test_the_texts_kept_then_find_their_copies(state_dir: Path) -> None:
    crawler = get_crawler(NamedSpider, {**SETTINGS, "DEDUP_STATE_DIR": str(state_dir)})
    pipeline = build_from_crawler(NearDuplicatePipeline, crawler)
    pipeline.open_spider()

    def process(url: str, text: str) -> dict:
        return asyncio.run(pipeline.process_item({"url": url, "text": text}))

    with pytest.raises(DropItem, match=re.escape("https://news.test/a/7")):
        process("https://copies.test/7", article(7))
    near = article(8).replace("Article 8.", "Article 8, as printed.")
    with pytest.raises(DropItem, match=re.escape("https://news.test/a/8")):
        process("https://print.test/8", near)
    assert process("https://news.test/a/30", article(30))["url"] == "https://news.test/a/30"
    pipeline.close_spider()
    stats = crawler.stats.get_stats()
    assert (stats["dedup/content/exact"], stats["dedup/content/near"]) == (1, 1)


def test_the_shared_stores_written_then_open(
    redis_server_factory: Callable[..., RedisServerProcess],
) -> None:
    # a redis-server that starts from the dump of the crawl that wrote to it
    server = redis_server_factory(dump=WRITTEN.with_suffix(".rdb"))
    settings = redis_settings(server.url)
    crawler = get_crawler(NamedSpider, settings)
    crawler.spider = crawler._create_spider()
    dupefilter = build_from_crawler(URLDupeFilter, crawler)
    dupefilter.open()
    urls, _ = requests_and_items()
    assert all(dupefilter.request_seen(Request(url)) for url in urls)
    assert not dupefilter.request_seen(Request("https://shop.test/p/40"))
    dupefilter.close("finished")
    pipeline = build_from_crawler(NearDuplicatePipeline, get_crawler(NamedSpider, settings))
    pipeline.open_spider()
    with pytest.raises(DropItem, match=re.escape("https://news.test/a/7")):
        asyncio.run(pipeline.process_item({"url": "https://copies.test/7", "text": article(7)}))
    pipeline.close_spider()
