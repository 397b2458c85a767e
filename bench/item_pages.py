"""What the content level decides for items that carry no page, against items that do.

Usage (from the repository root)::

    .venv/bin/python bench/item_pages.py [--corpus ../shared/corpus] [--pages N]

A project switched on as it is yields items such as ``{"title", "author", "date", "body"}``:
no ``html`` field. The content level then reads the page the item's callback was called
with (:class:`crawler.middlewares.ItemPageMiddleware`: the response's body and charset, when
the callback yielded that item alone), or the item's own text fields (an item among several
of one page). This script puts the three paths side by side on the real pages of
``<corpus>/pages/wcxb-dev`` (400), each followed by its printer-friendly copy (the page with
one ``Printed on ... from <URL>`` line after ``<body>``, as ``bench/crawl_overhead.py``
serves it), in one pipeline per path, without worker processes:

* **html field**: ``{"url", "html"}``, the page decoded as Scrapy's ``response.text`` does;
* **response page**: ``{"url", "title"}`` with the response's body (bytes) and charset, as
  the middleware records them;
* **item fields**: ``{"url", "title", "author", "date", "body"}`` from WCXB's human-checked
  ground truth (the text a spider's selectors would take), the copy's ``body`` starting
  with its printed line, checked on those fields (``DEDUP_ITEM_TEXT_FIELDS`` unset: every
  string field but ``url``).

For each: copies dropped, articles dropped (a wrong drop: the 400 articles are distinct
pages), decisions that differ from the html field's, ms of CPU a page (process time).
Markdown on stdout.
"""

from __future__ import annotations

import argparse
import asyncio
import gzip
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from scrapy import Spider
from scrapy.exceptions import DropItem
from scrapy.utils.misc import build_from_crawler
from scrapy.utils.test import get_crawler

from crawler.content.item_pages import ItemPage, item_pages
from crawler.pipelines import NearDuplicatePipeline

CORPUS_ENV_VAR = "DEDUP_CORPUS_DIR"
PRINTED = '<p class="printed">Printed on 12 March 2024 at 14:05 UTC from {url}</p>'
PRINTED_TEXT = "Printed on 12 March 2024 at 14:05 UTC from {url}"


class Pages(Spider):
    name = "pages"


def load(corpus: Path, count: int) -> list[dict[str, Any]]:
    folder = corpus / "pages" / "wcxb-dev"
    pages = []
    for path in sorted((folder / "html").glob("*.html.gz"))[:count]:
        truth_file = folder / "ground-truth" / path.name.replace(".html.gz", ".json")
        truth = json.loads(truth_file.read_text("utf-8"))["ground_truth"]
        pages.append({"body": gzip.decompress(path.read_bytes()), "truth": truth})
    return pages


def printed(body: bytes, url: str) -> bytes:
    at = body.lower().find(b"<body")
    at = body.find(b">", at) + 1 if at >= 0 else 0
    return body[:at] + PRINTED.format(url=url).encode() + body[at:]


def items(pages: list[dict[str, Any]]) -> list[tuple[str, bytes, dict[str, Any]]]:
    """(url, body, ground-truth fields) of each article, then of its copy, in that order."""
    stream = []
    for number, page in enumerate(pages):
        article, copy = f"https://site.test/p/{number}", f"https://site.test/print/{number}"
        truth = page["truth"]
        fields = {
            "title": truth.get("title") or "",
            "author": truth.get("author") or "",
            "date": truth.get("publish_date") or "",
            "body": truth.get("main_content") or "",
        }
        copy_fields = {**fields, "body": PRINTED_TEXT.format(url=article) + "\n" + fields["body"]}
        stream.append((article, page["body"], fields))
        stream.append((copy, printed(page["body"], article), copy_fields))
    return stream


def run(path: str, stream: list[tuple[str, bytes, dict[str, Any]]]) -> dict[str, Any]:
    crawler = get_crawler(Pages, {"DEDUP_CONTENT_WORKERS": 0})
    pipeline = build_from_crawler(NearDuplicatePipeline, crawler)
    pipeline.open_spider()
    pages = item_pages(crawler)
    decisions: dict[str, str] = {}

    async def all_items() -> None:
        for url, body, fields in stream:
            if path == "html field":
                item: dict[str, Any] = {"url": url, "html": body.decode("utf-8", "replace")}
            elif path == "response page":
                item = {"url": url, "title": fields["title"]}
                pages.put(item, ItemPage(url, 0, body, "utf-8"))
            else:
                item = {"url": url, **fields}
                pages.put(item, ItemPage(url, 1))  # one of several items of a page
            try:
                await pipeline.process_item(item)
                decisions[url] = "kept"
            except DropItem:
                decisions[url] = "dropped"

    started = time.process_time()
    asyncio.run(all_items())
    seconds = time.process_time() - started
    pipeline.close_spider()
    return {"decisions": decisions, "ms": 1000 * seconds / len(stream)}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", help=f"corpus folder (default: ${CORPUS_ENV_VAR})")
    parser.add_argument("--pages", type=int, default=400, help="real pages (and as many copies)")
    arguments = parser.parse_args(argv)
    corpus = Path(
        arguments.corpus
        or os.environ.get(CORPUS_ENV_VAR)
        or Path(__file__).resolve().parent.parent.parent / "shared" / "corpus"
    )
    started = time.perf_counter()
    stream = items(load(corpus, arguments.pages))
    results = {path: run(path, stream) for path in ("html field", "response page", "item fields")}
    reference = results["html field"]["decisions"]
    print("# Items without a page: the three paths of the content level\n")
    print(f"Command: `{' '.join([Path(sys.executable).name, *sys.argv])}`  ")
    print(f"{len(stream) // 2} real pages of wcxb-dev, each followed by its printed copy; ")
    print(
        f"one pipeline a path, no worker process; elapsed {time.perf_counter() - started:.0f} s\n"
    )
    print(
        "| path | copies dropped | articles dropped | decisions unlike the html field's "
        "| CPU ms a page |"
    )
    print("|---|---:|---:|---:|---:|")
    for path, result in results.items():
        decisions = result["decisions"]
        copies = sum(1 for url, what in decisions.items() if "/print/" in url and what == "dropped")
        articles = sum(1 for url, what in decisions.items() if "/p/" in url and what == "dropped")
        unlike = sum(1 for url, what in decisions.items() if reference[url] != what)
        print(
            f"| {path} | {copies} of {len(stream) // 2} | {articles} | {unlike} "
            f"| {result['ms']:.1f} |"
        )


if __name__ == "__main__":
    main()
