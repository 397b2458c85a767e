"""``scrapy dedup-forget``, run as a subprocess: a forgotten URL is downloaded again."""

from __future__ import annotations

import json

import pytest
import redis

from tests.conftest import crawl_stat, run_scrapy, scrapy_command, scrapy_crawl_command
from tests.test_commands_dedup_inspect import QUICK, file_digests, inspect_json, settings_args

ARTICLE = "articles/steady-coastline-what-the-forecast-tells-us"
OTHER_ARTICLE = "articles/a-peculiar-theory-for-the-syllabus-in-millbrook"


def forget(settings: dict[str, object], *arguments: str, input: str | None = None):
    return scrapy_command("dedup-forget", *settings_args(settings), *arguments, input=input)


def crawl_from(server, url: str, settings: dict[str, object]) -> tuple[dict, str]:
    """Crawl starting at *url*; return the server's hits and the crawl's log."""
    server.reset()
    try:
        log = run_scrapy(scrapy_crawl_command(url, *settings_args(settings), *QUICK))
        return server.hits(), log
    finally:
        server.reset()


def check_forgotten_page_is_downloaded_again(server, settings: dict[str, object]) -> None:
    """The whole site is crawled, one article forgotten (through a URL variant):
    a crawl from it downloads it again, a crawl from another article downloads nothing."""
    _, log = crawl_from(server, server.url, settings)
    entries = crawl_stat(log, "dedup/url/new")
    assert entries and entries > 1

    variant = f"{server.url}{ARTICLE}/?utm_source=newsletter#comments"
    unknown = f"{server.url}no-such-page"
    result = forget(settings, variant, unknown)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        f"forgotten  {server.url}{ARTICLE}",
        f"not seen   {unknown}",
    ]
    assert inspect_json(settings)["url_store"]["stats"]["entries"] == entries - 1

    hits, _ = crawl_from(server, f"{server.url}{OTHER_ARTICLE}", settings)
    assert hits["total"] == 0
    hits, _ = crawl_from(server, f"{server.url}{ARTICLE}", settings)
    assert hits["by_resource"] == {f"/{ARTICLE}": 1}
    assert hits["total"] == 1

    again = forget(settings, "--json", "-", input=f"{server.url}{ARTICLE}\n{unknown}\n")
    assert [json.loads(line) for line in again.stdout.splitlines()] == [
        {"url": f"{server.url}{ARTICLE}", "canonical": f"{server.url}{ARTICLE}", "present": True},
        {"url": unknown, "canonical": unknown, "present": False},
    ]


def test_memory_store_forgets(demo_site_server, tmp_path):
    settings = {"DEDUP_STATE_DIR": tmp_path, "DEDUP_URL_BACKEND": "memory"}
    check_forgotten_page_is_downloaded_again(demo_site_server, settings)
    journal = (tmp_path / "seen-urls.journal").read_bytes()
    report = inspect_json(settings)
    assert report["url_store"]["files"]["journal"]["records"] == 0
    assert journal == (tmp_path / "seen-urls.journal").read_bytes()


@pytest.mark.parametrize("shards", [1, 3])
def test_redis_set_forgets(demo_site_server, redis_server, shards):
    settings = {
        "DEDUP_URL_BACKEND": "redis",
        "DEDUP_REDIS_URL": redis_server.url,
        "DEDUP_REDIS_SHARDS": shards,
    }
    check_forgotten_page_is_downloaded_again(demo_site_server, settings)
    if shards > 1:  # the URLs are in the shards, none at the store's own key
        client = redis.Redis.from_url(redis_server.url)
        assert client.exists("site:dupefilter") == 0
        assert sum(client.scard(key) for key in client.keys("site:dupefilter#*")) > 1


def test_store_built_with_other_rules_is_not_touched(demo_site_server, tmp_path):
    settings = {"DEDUP_STATE_DIR": tmp_path, "DEDUP_URL_BACKEND": "memory"}
    crawl_from(demo_site_server, f"{demo_site_server.url}{ARTICLE}", settings)
    before = file_digests(tmp_path)
    result = forget(
        {**settings, "DEDUP_URL_LOWERCASE_PATH": True}, f"{demo_site_server.url}{ARTICLE}"
    )
    assert result.returncode == 1
    assert "DEDUP_URL_LOWERCASE_PATH: False -> True" in result.stderr
    assert file_digests(tmp_path) == before


def test_nothing_to_forget_without_state(tmp_path):
    result = forget({"DEDUP_URL_BACKEND": "memory"}, "http://example.com/")
    assert result.returncode == 1
    assert "without DEDUP_STATE_DIR or JOBDIR" in result.stderr
    result = forget({"DEDUP_URL_BACKEND": "memory", "JOBDIR": tmp_path}, "http://example.com/")
    assert result.returncode == 0, result.stderr
    assert result.stdout == "not seen   http://example.com/\n"
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("backend", ["bloom", "redis-bloom"])
def test_bloom_filter_cannot_forget(demo_site_server, redis_server, tmp_path, backend):
    settings = {
        "DEDUP_URL_BACKEND": backend,
        "DEDUP_STATE_DIR": tmp_path,
        "DEDUP_REDIS_URL": redis_server.url,
        "DEDUP_URL_CAPACITY": 10_000,
    }
    url = f"{demo_site_server.url}{ARTICLE}"
    crawl_from(demo_site_server, url, settings)
    files = file_digests(tmp_path)
    client = redis.Redis.from_url(redis_server.url)
    keys = {key: client.dump(key) for key in client.keys("*")}
    result = forget(settings, url)
    assert result.returncode == 1
    assert result.stdout == ""
    assert f"DEDUP_URL_BACKEND = {backend!r} is a Bloom filter, which cannot forget" in (
        result.stderr
    )
    for advice in ("DEDUP_URL_TTL", "'redis'", "'memory'", "clear the state"):
        assert advice in result.stderr
    assert file_digests(tmp_path) == files
    assert {key: client.dump(key) for key in client.keys("*")} == keys
    hits, _ = crawl_from(demo_site_server, url, settings)
    assert hits["total"] == 0
