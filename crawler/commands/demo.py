"""``scrapy demo``: crawl a generated local site with and without dedup.

Two copies of the demo site are served on 127.0.0.1; the ``site`` spider
crawls one with Scrapy's stock dupefilter and the other with this
extension, at the same time, and the command prints what each downloaded and
what dedup filtered, and why. Then three copies of a generated shop whose links
carry parameters no tracking list knows (:mod:`crawler.demo.param_site`) are
crawled with the stock dupefilter, the fixed rules only, and learned rules.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

from scrapy.commands import ScrapyCommand

from crawler.demo.server import DemoServer
from crawler.spiders.site import SiteSpider
from crawler.url.learned_rules import read_saved_rules
from crawler.url.learning import LEARNED, REFUSED, RETRACTED

if TYPE_CHECKING:
    import argparse

    from scrapy.crawler import Crawler

#: Products of the shop the demo crawls to show learned rules.
SHOP_PRODUCTS = 150

STOCK_SETTINGS = {
    "ADDONS": {},
    "DUPEFILTER_CLASS": "scrapy.dupefilters.RFPDupeFilter",
    "ITEM_PIPELINES": {},
}


class Command(ScrapyCommand):
    requires_project = True

    def short_desc(self) -> str:
        return "Crawl a generated local demo site with and without dedup, and compare"

    def add_options(self, parser: argparse.ArgumentParser) -> None:
        super().add_options(parser)
        parser.add_argument(
            "--articles", type=int, default=24, help="articles on the demo site (default: 24)"
        )

    def process_options(self, args: list[str], opts: argparse.Namespace) -> None:
        super().process_options(args, opts)
        assert self.settings is not None
        if not opts.loglevel:  # the crawls' own logs would bury the comparison
            self.settings.set("LOG_LEVEL", "WARNING", priority="cmdline")

    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        assert self.crawler_process is not None
        with (
            DemoServer(articles=opts.articles) as stock_site,
            DemoServer(articles=opts.articles) as dedup_site,
            DemoServer(SHOP_PRODUCTS, site="params") as shop_stock,
            DemoServer(SHOP_PRODUCTS, site="params") as shop_fixed,
            DemoServer(SHOP_PRODUCTS, site="params") as shop_learning,
            tempfile.TemporaryDirectory(prefix="dedup-demo-") as state_dir,
        ):
            stock_url, dedup_url = stock_site.start(), dedup_site.start()
            audit_path = Path(state_dir, "content-audit.jsonl")
            stock = self._site_crawler(STOCK_SETTINGS)
            dedup = self._site_crawler(
                {"DEDUP_STATE_DIR": state_dir, "DEDUP_AUDIT_FILE": str(audit_path)}
            )
            self.crawler_process.crawl(stock, url=stock_url)
            self.crawler_process.crawl(dedup, url=dedup_url)
            shop_state = Path(state_dir, "shop")
            shop_crawls: list[tuple[DemoServer, dict[str, Any]]] = [
                (shop_stock, STOCK_SETTINGS),
                (shop_fixed, {"DEDUP_URL_LEARN": False}),
                (shop_learning, {"DEDUP_STATE_DIR": str(shop_state)}),
            ]
            for server, settings in shop_crawls:
                self.crawler_process.crawl(self._site_crawler(settings), url=server.start())
            self.crawler_process.start()
            print(
                report(
                    stock_site.hits(),
                    dedup_site.hits(),
                    stock.stats.get_stats() if stock.stats else {},
                    dedup.stats.get_stats() if dedup.stats else {},
                )
            )
            print(content_report(audit_path, dedup_url))
            print(shop_report([server.hits() for server, _ in shop_crawls], shop_state))

    def _site_crawler(self, settings: dict[str, Any]) -> Crawler:
        assert self.crawler_process is not None
        spider_cls = type("DemoSiteSpider", (SiteSpider,), {"custom_settings": settings})
        return self.crawler_process.create_crawler(spider_cls)


def report(
    stock_hits: dict[str, Any],
    dedup_hits: dict[str, Any],
    stock_stats: dict[str, Any],
    dedup_stats: dict[str, Any],
) -> str:
    """The comparison table the demo prints."""
    rows = [
        (
            "requests built from links",
            stock_stats.get("scheduler/enqueued", 0) + stock_stats.get("dupefilter/filtered", 0),
            dedup_stats.get("scheduler/enqueued", 0) + dedup_stats.get("dupefilter/filtered", 0),
        ),
        (
            "requests filtered before download",
            stock_stats.get("dupefilter/filtered", 0),
            dedup_stats.get("dupefilter/filtered", 0),
        ),
        ("downloads (requests the server answered)", stock_hits["total"], dedup_hits["total"]),
        (
            "distinct pages and files downloaded",
            len(stock_hits["by_resource"]),
            len(dedup_hits["by_resource"]),
        ),
        (
            "downloads of an already downloaded page",
            _repeats(stock_hits),
            _repeats(dedup_hits),
        ),
        (
            "items scraped",
            stock_stats.get("item_scraped_count", 0),
            dedup_stats.get("item_scraped_count", 0),
        ),
        (
            "items dropped as exact copies of another page",
            stock_stats.get("dedup/content/exact", 0),
            dedup_stats.get("dedup/content/exact", 0),
        ),
        (
            "items dropped as near copies of another page",
            stock_stats.get("dedup/content/near", 0),
            dedup_stats.get("dedup/content/near", 0),
        ),
    ]
    width = max(len(label) for label, _, _ in rows)
    lines = [f"{'':{width}}  {'stock Scrapy':>12}  {'with dedup':>10}"]
    lines += [f"{label:{width}}  {stock:>12}  {dedup:>10}" for label, stock, dedup in rows]
    prefix = "dedup/url/filtered/"
    reasons = sorted(
        (
            (name[len(prefix) :], count)
            for name, count in dedup_stats.items()
            if name.startswith(prefix)
        ),
        key=lambda item: -item[1],
    )
    lines.append("")
    lines.append(
        "Why dedup filtered requests: the rules that changed the filtered URL"
        " (a URL can count under several; 'repeat': the same URL again):"
    )
    lines += [f"  {rule:<28} {count:>5}" for rule, count in reasons]
    saved = stock_hits["total"] - dedup_hits["total"]
    lines.append("")
    lines.append(
        f"Dedup saved {saved} of {stock_hits['total']} downloads "
        f"({saved / max(stock_hits['total'], 1):.0%})."
    )
    return "\n".join(lines)


def shop_report(hits: list[dict[str, Any]], state_dir: Path) -> str:
    """Downloads of the shop by the stock, fixed-rules and learning crawls, and the
    rules learned."""
    rows = [
        ("shop: downloads", [crawl["total"] for crawl in hits]),
        ("shop: distinct pages downloaded", [len(crawl["by_resource"]) for crawl in hits]),
    ]
    width = max(len(label) for label, _ in rows)
    lines = [
        "",
        "A shop whose links carry parameters no tracking list knows (?ref=, ?from=, "
        "?view=full, ?share=, ?hl=, ?v=):",
        f"{'':{width}}  {'stock Scrapy':>12}  {'fixed rules':>11}  {'learned rules':>13}",
    ]
    lines += [
        f"{label:{width}}  {values[0]:>12}  {values[1]:>11}  {values[2]:>13}"
        for label, values in rows
    ]
    saved = read_saved_rules(state_dir)
    if saved is not None:
        rules = saved[0].rules.values()
        learned = sorted(rule.key.name for rule in rules if rule.state == LEARNED)
        refused = sorted(rule.key.name for rule in rules if rule.state in (REFUSED, RETRACTED))
        lines.append(
            f"Learned: {', '.join(learned) or 'none'}; refused (they change the page): "
            f"{', '.join(refused) or 'none'}"
        )
    return "\n".join(lines)


def content_report(audit_path: Path, base_url: str) -> str:
    """The pages the content pipeline dropped, and what each duplicated."""
    lines = ["", "Pages whose text duplicated a page crawled before (from DEDUP_AUDIT_FILE):"]
    if not audit_path.exists():
        return "\n".join([*lines, "  (no audit file)"])
    for line in audit_path.read_text("utf-8").splitlines():
        decision = json.loads(line)
        if decision["decision"] != "dropped":
            continue
        lines.append(
            f"  {decision['url'].removeprefix(base_url.rstrip('/')):<60} "
            f"{decision['reason']} copy of "
            f"{decision['matched_url'].removeprefix(base_url.rstrip('/'))} "
            f"(distance {decision['distance']})"
        )
    return "\n".join(lines)


def _repeats(hits: dict[str, Any]) -> int:
    return sum(count - 1 for count in hits["by_resource"].values() if count > 1)
