from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from scrapy import Spider
from scrapy.exceptions import NotConfigured
from scrapy.utils.misc import load_object
from scrapy.utils.test import get_crawler

from crawler import defaults
from crawler.addon import DedupAddon
from crawler.dupefilters import URLDupeFilter
from crawler.exporters import FlushingJsonLinesItemExporter
from crawler.extensions import DedupLogStats
from crawler.gc_freeze import GCFreeze
from crawler.logformatter import DedupLogFormatter
from crawler.middlewares import FrontierMiddleware, ItemPageMiddleware
from crawler.pipelines import ItemKeyPipeline, NearDuplicatePipeline
from tests.conftest import REPO_ROOT

ADDONS = {"ADDONS": {DedupAddon: 0}}


class NamedSpider(Spider):
    name = "named"


def applied_settings(settings: dict):
    crawler = get_crawler(NamedSpider, {**ADDONS, **settings})
    crawler._apply_settings()
    return crawler.settings


def test_addon_enables_both_components_and_all_defaults():
    settings = applied_settings({})
    assert settings["DUPEFILTER_CLASS"] == "crawler.dupefilters.URLDupeFilter"
    assert settings.getdict("SPIDER_MIDDLEWARES")[FrontierMiddleware] == 25
    assert settings.getdict("DOWNLOADER_MIDDLEWARES")[FrontierMiddleware] == 25
    assert settings.getdict("SPIDER_MIDDLEWARES")[ItemPageMiddleware] == 950
    assert settings.getdict("ITEM_PIPELINES")[NearDuplicatePipeline] == 100
    assert ItemKeyPipeline not in settings.getdict("ITEM_PIPELINES")  # no key fields
    with_keys = applied_settings({"DEDUP_ITEM_KEY_FIELDS": ["sku"]})
    assert with_keys.getdict("ITEM_PIPELINES")[ItemKeyPipeline] == 110
    assert settings.getdict("EXTENSIONS")[DedupLogStats] == 0
    assert settings.getdict("EXTENSIONS")[GCFreeze] == 0
    names = [name for name in dir(defaults) if name.startswith("DEDUP_")]
    assert names
    for name in names:
        assert settings[name] == getattr(defaults, name)
        assert settings.getpriority(name) == 15  # "addon"


def test_project_settings_win_over_the_addon():
    settings = applied_settings(
        {
            "DEDUP_URL_BACKEND": "memory",
            "DUPEFILTER_CLASS": "scrapy.dupefilters.RFPDupeFilter",
            "SPIDER_MIDDLEWARES": {"crawler.middlewares.FrontierMiddleware": 10},
        }
    )
    assert settings["DEDUP_URL_BACKEND"] == "memory"
    assert settings["DUPEFILTER_CLASS"] == "scrapy.dupefilters.RFPDupeFilter"
    assert settings.getdict("SPIDER_MIDDLEWARES") == {
        "crawler.middlewares.FrontierMiddleware": 10,
        ItemPageMiddleware: 950,  # the add-on's other component, which the project did not name
    }


def test_json_lines_feeds_are_flushed_unless_the_project_names_an_exporter():
    flushing = FlushingJsonLinesItemExporter
    assert applied_settings({}).getdict("FEED_EXPORTERS") == {
        "jsonlines": flushing,
        "jsonl": flushing,
        "jl": flushing,
    }
    settings = applied_settings({"FEED_EXPORTERS": {"jl": "myproject.exporters.Lines"}})
    assert settings.getdict("FEED_EXPORTERS") == {
        "jsonlines": flushing,
        "jsonl": flushing,
        "jl": "myproject.exporters.Lines",
    }


def test_duplicates_are_logged_by_name_unless_the_project_sets_a_log_formatter():
    assert applied_settings({})["LOG_FORMATTER"] is DedupLogFormatter
    own = applied_settings({"LOG_FORMATTER": "scrapy.logformatter.LogFormatter"})
    assert own["LOG_FORMATTER"] == "scrapy.logformatter.LogFormatter"


def test_project_can_switch_the_log_line_off():
    settings = applied_settings({"EXTENSIONS": {"crawler.extensions.DedupLogStats": None}})
    assert settings.getdict("EXTENSIONS") == {
        "crawler.extensions.DedupLogStats": None,
        GCFreeze: 0,
    }


def test_addon_dupefilter_is_built_from_those_settings():
    crawler = get_crawler(NamedSpider, {**ADDONS, "DEDUP_URL_BACKEND": "memory"})
    crawler._apply_settings()
    dupefilter = URLDupeFilter.from_crawler(crawler)
    assert dupefilter.seen_kind == "memory"


def test_defaults_module_is_alphabetical():
    names = [name for name in vars(defaults) if name.startswith("DEDUP_")]
    assert names == sorted(names)


def test_each_level_can_be_switched_off_without_removing_the_addon():
    url_off = applied_settings({"DEDUP_URL_ENABLED": False})
    assert url_off["DUPEFILTER_CLASS"] == "scrapy.dupefilters.RFPDupeFilter"
    assert FrontierMiddleware not in url_off.getdict("SPIDER_MIDDLEWARES")
    assert url_off.getdict("ITEM_PIPELINES")[NearDuplicatePipeline] == 100

    content_off = applied_settings({"DEDUP_CONTENT_ENABLED": False})
    assert ItemPageMiddleware not in content_off.getdict("SPIDER_MIDDLEWARES")
    assert NearDuplicatePipeline not in content_off.getdict("ITEM_PIPELINES")

    all_off = applied_settings({"DEDUP_ENABLED": False})
    assert all_off["DUPEFILTER_CLASS"] == "scrapy.dupefilters.RFPDupeFilter"
    assert NearDuplicatePipeline not in all_off.getdict("ITEM_PIPELINES")
    assert DedupLogStats not in all_off.getdict("EXTENSIONS")
    assert GCFreeze not in all_off.getdict("EXTENSIONS")


CONTENT_OFF_CRAWLER = """
import json, sys
from scrapy import Spider
from scrapy.utils.test import get_crawler

class Named(Spider):
    name = "named"

crawler = get_crawler(Named, {"ADDONS": {"crawler.addon.DedupAddon": 0}, **json.loads(sys.argv[1])})
print(json.dumps({name: name in sys.modules for name in ("numpy", "crawler.pipelines")}))
"""


@pytest.mark.parametrize(
    ("settings", "imported"),
    [
        ({"DEDUP_CONTENT_ENABLED": False}, False),
        ({"DEDUP_CONTENT_ENABLED": False, "DEDUP_ITEM_KEY_FIELDS": ["sku"]}, False),
        ({}, True),
    ],
)
def test_the_add_on_imports_the_content_level_only_for_a_pipeline_it_enables(settings, imported):
    """NumPy and the extractors cost a crawl 0.25 s of CPU and 15 MiB: a crawl without
    the content level does not load them."""
    result = subprocess.run(
        [sys.executable, "-c", CONTENT_OFF_CRAWLER, json.dumps(settings)],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    assert json.loads(result.stdout) == {"numpy": imported, "crawler.pipelines": imported}


def test_pipelines_enabled_by_hand_honour_the_master_switch():
    crawler = get_crawler(NamedSpider, {"DEDUP_ENABLED": False, "DEDUP_ITEM_KEY_FIELDS": ["sku"]})
    for pipeline in (NearDuplicatePipeline, ItemKeyPipeline):
        with pytest.raises(NotConfigured, match="DEDUP_ENABLED is False"):
            pipeline.from_crawler(crawler)


def by_hand_settings() -> dict:
    """The README's "the same by hand" block, run as a settings module."""
    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text("utf-8")
    block = readme.split("The same by hand:", 1)[1].split("```python\n", 1)[1].split("```", 1)[0]
    namespace: dict = {}
    exec(block, namespace)  # the project's settings.py, as a user copies it
    return {name: value for name, value in namespace.items() if name.isupper()}


def test_the_readmes_by_hand_block_enables_what_the_add_on_enables():
    def components(settings, name: str) -> dict:
        return {
            load_object(path): order
            for path, order in settings.getdict(name).items()
            if order is not None and load_object(path) is not ItemKeyPipeline
        }

    add_on = applied_settings({})
    by_hand = get_crawler(NamedSpider, by_hand_settings()).settings
    for name in ("SPIDER_MIDDLEWARES", "DOWNLOADER_MIDDLEWARES", "ITEM_PIPELINES", "EXTENSIONS"):
        assert components(by_hand, name) == components(add_on, name), name
    for name in ("DUPEFILTER_CLASS", "LOG_FORMATTER"):
        assert load_object(by_hand[name]) is load_object(add_on[name]), name
    assert {
        name: load_object(path) for name, path in by_hand.getdict("FEED_EXPORTERS").items()
    } == add_on.getdict("FEED_EXPORTERS")
