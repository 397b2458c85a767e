"""Write the state of a short crawl, with the code of the checkout it runs in.

``python tests/state/release_state/write.py DIR`` feeds a URL dupefilter (a Bloom filter) and
the content pipeline, each persisted in *DIR*, the requests and items of
:func:`requests_and_items`, then closes them as a finished crawl would;
``... write.py --redis URL`` does the same with the shared stores in that Redis (a set of
seen URLs and the shared content index), whose ``SAVE`` wrote ``before-packages.rdb``. The
state directory beside this script (``before-packages``) and that Redis dump were written so
at 9e52a90, the commit before the packages by level (issue 30), and
``tests/state/test_release_state.py`` opens them with the code of today. It uses only what
both have: ``build_from_crawler``, ``request_seen`` and the pipeline's ``process_item``.
"""

from __future__ import annotations

import asyncio
import random
import sys
from pathlib import Path

from scrapy import Request, Spider
from scrapy.exceptions import DropItem
from scrapy.utils.misc import build_from_crawler
from scrapy.utils.test import get_crawler

SETTINGS = {"DEDUP_URL_CAPACITY": 10_000, "DEDUP_URL_LEARN": False}
WORDS = (
    "river",
    "bridge",
    "council",
    "vote",
    "budget",
    "school",
    "teacher",
    "harbour",
    "ferry",
    "storm",
    "market",
    "price",
    "library",
    "garden",
    "station",
    "tunnel",
    "museum",
    "festival",
    "orchestra",
    "harvest",
    "village",
    "mayor",
    "road",
    "hospital",
    "nurse",
    "winter",
    "summer",
    "archive",
    "letter",
    "island",
    "lighthouse",
    "railway",
    "engineer",
)


class NamedSpider(Spider):
    name = "release"


def article(number: int) -> str:
    """The text of article *number*: 120 words drawn with the number as the seed."""
    draw = random.Random(number)
    return " ".join(draw.choice(WORDS) for _ in range(120)) + f" Article {number}."


def requests_and_items() -> tuple[list[str], list[dict[str, str]]]:
    """The URLs requested (each product twice, the second with a tracking parameter) and
    the items scraped (20 articles, then a copy of the first 5 at other URLs)."""
    urls = [f"https://shop.test/p/{n}" for n in range(40)]
    urls += [f"https://shop.test/p/{n}?utm_source=news" for n in range(40)]
    items = [{"url": f"https://news.test/a/{n}", "text": article(n)} for n in range(20)]
    items += [{"url": f"https://mirror.test/a/{n}", "text": article(n)} for n in range(5)]
    return urls, items


def redis_settings(url: str) -> dict[str, object]:
    """The settings of the crawl that wrote ``before-packages.rdb``, with its Redis at *url*."""
    backends = {"DEDUP_URL_BACKEND": "redis", "DEDUP_CONTENT_BACKEND": "redis"}
    return {**SETTINGS, **backends, "DEDUP_REDIS_URL": url}


def write(settings: dict[str, object]) -> None:
    from crawler.dupefilters import URLDupeFilter
    from crawler.pipelines import NearDuplicatePipeline

    urls, items = requests_and_items()
    crawler = get_crawler(NamedSpider, settings)
    crawler.spider = crawler._create_spider()
    dupefilter = build_from_crawler(URLDupeFilter, crawler)
    dupefilter.open()
    let_through = sum(not dupefilter.request_seen(Request(url)) for url in urls)
    dupefilter.close("finished")
    pipeline = build_from_crawler(NearDuplicatePipeline, get_crawler(NamedSpider, settings))
    pipeline.open_spider()
    kept = 0
    for item in items:
        try:
            asyncio.run(pipeline.process_item(dict(item)))
            kept += 1
        except DropItem:
            pass
    pipeline.close_spider()
    print(f"{let_through} of {len(urls)} requests let through, {kept} of {len(items)} items kept")


if __name__ == "__main__":
    if sys.argv[1] == "--redis":
        write(redis_settings(sys.argv[2]))
    else:
        write({**SETTINGS, "DEDUP_STATE_DIR": str(Path(sys.argv[1]))})
