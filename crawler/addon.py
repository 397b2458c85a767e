"""``DedupAddon``: switch the extension on with one line.

    ADDONS = {"crawler.addon.DedupAddon": 0}

It applies every ``DEDUP_*`` default and enables the components (URL
dupefilter, frontier, learned-rules and recrawl middlewares, item-key and content
pipelines, periodic log line) at add-on priority, so settings written in the project (or on the
command line) win; JSON lines feeds are written by
:class:`crawler.exporters.FlushingJsonLinesItemExporter` unless ``FEED_EXPORTERS``
names an exporter for them; dropped duplicates are logged by
:class:`crawler.logformatter.DedupLogFormatter` (their reason, not the whole item) unless
``LOG_FORMATTER`` is set; ``EXTENSIONS = {"crawler.extensions.DedupLogStats": None}``
switches the log line off.

Each level can be switched off without removing the add-on:
``DEDUP_ENABLED = False`` (all of them), ``DEDUP_URL_ENABLED = False`` (Scrapy's
own dupefilter stays), ``DEDUP_CONTENT_ENABLED = False``, an empty
``DEDUP_ITEM_KEY_FIELDS`` (the default), ``DEDUP_LOG_INTERVAL = 0``, and
``DEDUP_GC_FREEZE = False`` (:class:`crawler.gc_freeze.GCFreeze`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from scrapy.settings import SETTINGS_PRIORITIES

from crawler import defaults
from crawler.content.configuration import item_keys_asked
from crawler.exporters import JSON_LINES_FORMATS, FlushingJsonLinesItemExporter
from crawler.extensions import DedupLogStats
from crawler.gc_freeze import GCFreeze
from crawler.item_key_pipeline import ItemKeyPipeline
from crawler.logformatter import DedupLogFormatter
from crawler.middlewares import (
    FrontierMiddleware,
    ItemPageMiddleware,
    LearnedRulesMiddleware,
    RecrawlMiddleware,
)

if TYPE_CHECKING:
    from scrapy.settings import BaseSettings

#: Outside HttpErrorMiddleware (50) and inside nothing that drops output:
#: the middleware must see each callback's whole output and final failures.
FRONTIER_MIDDLEWARE_ORDER = 25
LEARNED_RULES_MIDDLEWARE_ORDER = 30
#: Before RedirectMiddleware (600) in the responses' order: it records the redirect itself.
RECRAWL_MIDDLEWARE_ORDER = 650
#: Next to the spider: it sees each callback's output before other middlewares.
ITEM_PAGE_MIDDLEWARE_ORDER = 950
#: Early, so that pipelines storing items never see the duplicates.
CONTENT_PIPELINE_ORDER = 100
#: After the content pipeline: a key is recorded only for an item that got
#: past it (put project pipelines that drop items before 110 too).
ITEM_KEY_PIPELINE_ORDER = 110
#: Where Scrapy's own LogStats is.
LOG_STATS_EXTENSION_ORDER = 0
GC_FREEZE_EXTENSION_ORDER = 0


class DedupAddon:
    def update_settings(self, settings: BaseSettings) -> None:
        for name in dir(defaults):
            if name.startswith("DEDUP_"):
                settings.set(name, getattr(defaults, name), priority="addon")
        if defaults.switched_off(settings):
            return
        if not defaults.switched_off(settings, "DEDUP_URL_ENABLED"):
            settings.set("DUPEFILTER_CLASS", "crawler.dupefilters.URLDupeFilter", priority="addon")
            for component_setting in ("SPIDER_MIDDLEWARES", "DOWNLOADER_MIDDLEWARES"):
                settings.setdefault_in_component_priority_dict(
                    component_setting, FrontierMiddleware, FRONTIER_MIDDLEWARE_ORDER
                )
            settings.setdefault_in_component_priority_dict(
                "DOWNLOADER_MIDDLEWARES", LearnedRulesMiddleware, LEARNED_RULES_MIDDLEWARE_ORDER
            )
            # off unless DEDUP_RECRAWL, as HttpCacheMiddleware is unless HTTPCACHE_ENABLED
            settings.setdefault_in_component_priority_dict(
                "DOWNLOADER_MIDDLEWARES", RecrawlMiddleware, RECRAWL_MIDDLEWARE_ORDER
            )
        if item_keys_asked(settings):
            settings.setdefault_in_component_priority_dict(
                "ITEM_PIPELINES", ItemKeyPipeline, ITEM_KEY_PIPELINE_ORDER
            )
        if not defaults.switched_off(settings, "DEDUP_CONTENT_ENABLED"):
            # imported only here: the content level's modules (NumPy, the extractors) took
            # 0.25 s of CPU and 15 MiB from every crawl that loaded the add-on
            from crawler.pipelines import NearDuplicatePipeline

            settings.setdefault_in_component_priority_dict(
                "SPIDER_MIDDLEWARES", ItemPageMiddleware, ITEM_PAGE_MIDDLEWARE_ORDER
            )
            settings.setdefault_in_component_priority_dict(
                "ITEM_PIPELINES", NearDuplicatePipeline, CONTENT_PIPELINE_ORDER
            )
        settings.setdefault_in_component_priority_dict(
            "EXTENSIONS", DedupLogStats, LOG_STATS_EXTENSION_ORDER
        )
        settings.setdefault_in_component_priority_dict(
            "EXTENSIONS", GCFreeze, GC_FREEZE_EXTENSION_ORDER
        )
        settings.set("LOG_FORMATTER", DedupLogFormatter, priority="addon")
        # a request counts as done once its items are exported: they must then be in the file
        exporters = settings.getdict("FEED_EXPORTERS")
        for feed_format in JSON_LINES_FORMATS:
            exporters.setdefault(feed_format, FlushingJsonLinesItemExporter)
        priority = max(settings.getpriority("FEED_EXPORTERS") or 0, SETTINGS_PRIORITIES["addon"])
        settings.set("FEED_EXPORTERS", exporters, priority=priority)
