"""Learned URL rules in real crawls of a shop whose parameters no tracking list knows
(``crawler.demo.param_site``, served by a real HTTP server)."""

from __future__ import annotations

import json
import re

import pytest

from crawler.demo.param_site import IRRELEVANT_PARAMS, RELEVANT_PARAMS, ParamSite
from crawler.learned_rules import SNAPSHOT_NAME
from tests.conftest import run_scrapy, scrapy_command, scrapy_crawl_command

PRODUCTS = 150
LEARNED = re.compile(r"Learned URL rule [^:]+:\d+: \?(\w+)")


@pytest.fixture
def shop(demo_site_process_factory):
    return demo_site_process_factory(site="params", articles=PRODUCTS)


def crawl(server, *settings: str) -> str:
    arguments = ["-s", "LOG_LEVEL=INFO", *settings]
    return run_scrapy(scrapy_crawl_command(server.url, *arguments), timeout=300)


def resources(server, **options) -> frozenset[str]:
    return ParamSite(products=PRODUCTS, seed=server.seed, **options).resources


def test_learning_downloads_each_resource_about_once(shop, tmp_path):
    audit = tmp_path / "audit.jsonl"
    log = crawl(shop, "-s", f"JOBDIR={tmp_path / 'job'}", "-s", f"DEDUP_AUDIT_FILE={audit}")

    hits = shop.hits()
    assert set(hits["by_resource"]) == resources(shop)  # none lost to a rule
    per_resource = hits["total"] / len(resources(shop))
    assert per_resource <= 1.3, per_resource
    learned = set(LEARNED.findall(log))
    assert {"ref", "from", "share", "v"} <= learned <= set(IRRELEVANT_PARAMS)
    assert not learned & set(RELEVANT_PARAMS)
    filtered = [json.loads(line) for line in audit.read_text().splitlines()]
    by_rule = [line for line in filtered if "learned_rules" in line]
    assert by_rule
    assert all("learned-rule" in line["rules"] for line in by_rule)
    assert (tmp_path / "job" / SNAPSHOT_NAME).exists()


def test_without_learning_the_same_crawl_downloads_each_resource_several_times(shop):
    log = crawl(shop, "-s", "DEDUP_URL_LEARN=False")

    hits = shop.hits()
    assert set(hits["by_resource"]) == resources(shop)
    assert hits["total"] / len(resources(shop)) >= 3
    assert "Learned URL rule" not in log


def test_a_site_whose_parameters_all_change_content_gets_no_rule(demo_site_process_factory):
    server = demo_site_process_factory(site="params-relevant", articles=PRODUCTS)
    log = crawl(server)

    hits = server.hits()
    assert set(hits["by_resource"]) == resources(server, irrelevant_links=False)
    assert set(hits["by_resource"].values()) == {1}
    assert "Learned URL rule" not in log
    refused = re.findall(r"'dedup/url/learned/refused': (\d+)", log)
    assert refused and int(refused[0]) >= 4  # page, sort, id, q


def test_rules_persist_and_can_be_inspected_and_forgotten(shop, tmp_path):
    job = ["-s", f"JOBDIR={tmp_path / 'job'}"]
    crawl(shop, *job)

    inspected = scrapy_command("dedup-inspect", "--json", *job)
    assert inspected.returncode == 0, inspected.stderr
    rules = {
        rule["rule"].split(": ")[1]: rule
        for rule in json.loads(inspected.stdout)["learned_url_rules"]
    }
    assert rules["?ref"]["state"] == "learned"
    assert rules["?ref"]["pages_confirming"] >= 3
    assert rules["?page"]["state"] == "refused"
    assert rules["?page"]["counter_examples"] >= 1

    host = rules["?ref"]["rule"].split(": ")[0]
    forgotten = scrapy_command("dedup-forget", "--rule", f"{host}: ?ref", *job)
    assert forgotten.returncode == 0, forgotten.stderr
    assert forgotten.stdout.split() == ["forgotten", host + ":", "?ref"]
    text = scrapy_command("dedup-inspect", *job).stdout
    assert f"{host}: ?from  learned" in text
    assert f"{host}: ?ref " not in text

    shop.reset()
    log = crawl(shop, *job)
    assert re.search(r"Learned URL rules from earlier runs: .*\?from", log)
    assert "?ref" not in log.split("Learned URL rules from earlier runs: ")[1].splitlines()[0]
