"""``scrapy dedup-inspect``, run as a subprocess on the state real crawls left."""

from __future__ import annotations

import hashlib
import json
import re
import signal
import subprocess
import time

import pytest
import redis

from tests.conftest import (
    REPO_ROOT,
    _child_env,
    crawl_stat,
    run_scrapy,
    scrapy_command,
    scrapy_crawl_command,
)

QUICK = ["-s", "CONCURRENT_REQUESTS=8", "-s", "LOG_LEVEL=INFO"]


def settings_args(settings: dict[str, object]) -> list[str]:
    return [arg for name, value in settings.items() for arg in ("-s", f"{name}={value}")]


def inspect(*arguments: str) -> subprocess.CompletedProcess[str]:
    return scrapy_command("dedup-inspect", *arguments)


def inspect_json(settings: dict[str, object]) -> dict:
    result = inspect("--json", *settings_args(settings))
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def file_digests(directory) -> dict[str, str]:
    return {
        path.name: hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(directory.iterdir())
    }


@pytest.fixture(scope="module")
def bloom_crawl(demo_site_server, tmp_path_factory):
    state_dir = tmp_path_factory.mktemp("bloom-state")
    settings = {"DEDUP_STATE_DIR": state_dir, "DEDUP_URL_CAPACITY": 5000}
    log = run_scrapy(scrapy_crawl_command(demo_site_server.url, *settings_args(settings), *QUICK))
    demo_site_server.reset()
    return settings, log


def test_figures_match_the_crawl_stats(bloom_crawl):
    settings, log = bloom_crawl
    report = inspect_json(settings)
    url_store = report["url_store"]
    assert report["spider"] == "site"
    assert url_store["backend"] == "bloom"
    assert url_store["state_dir_setting"] == "DEDUP_STATE_DIR"
    entries = crawl_stat(log, "dedup/bloom/entries")
    assert entries == crawl_stat(log, "dedup/url/new") > 0
    for name in ("entries", "fill_ratio", "false_positive_rate", "filters", "bytes"):
        assert url_store["stats"][name] == crawl_stat(log, f"dedup/bloom/{name}"), name
    assert url_store["stats"]["fill_ratio"] == pytest.approx(entries / 5000)
    assert url_store["params"]["capacity"] == 5000
    assert url_store["params"]["error_rate"] == 0.001
    assert url_store["signature_matches_settings"] is True
    assert url_store["signature"]["DEDUP_URL_CAPACITY"] == 5000
    assert url_store["files"]["journal"]["records"] == 0  # the crawl snapshotted at close
    assert report["content_index"]["documents"] == crawl_stat(log, "dedup/content/unique") > 0


def test_human_output(bloom_crawl):
    settings, log = bloom_crawl
    result = inspect(*settings_args(settings))
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == (
        f"URL store of spider 'site': bloom, state dir {settings['DEDUP_STATE_DIR']} "
        "(DEDUP_STATE_DIR)"
    )
    figures = dict(re.findall(r"^  (\w+) +(.+)$", result.stdout, re.MULTILINE))
    assert int(figures["entries"]) == crawl_stat(log, "dedup/bloom/entries")
    assert figures["capacity"] == "5000"
    assert "Rules signature: matches the project's settings" in lines
    assert re.search(r"^  DEDUP_URL_STRIP_PARAMS +\d+ entries: ", result.stdout, re.MULTILINE)
    assert "Content index: memory" in lines
    assert int(figures["documents"]) == crawl_stat(log, "dedup/content/unique")


def test_other_settings_are_reported_not_applied(bloom_crawl):
    settings, log = bloom_crawl
    report = inspect_json({**settings, "DEDUP_URL_LOWERCASE_PATH": True})
    url_store = report["url_store"]
    assert url_store["signature_matches_settings"] is False
    assert url_store["signature_difference"] == "DEDUP_URL_LOWERCASE_PATH: False -> True"
    assert url_store["stats"]["entries"] == crawl_stat(log, "dedup/bloom/entries")
    human = inspect(*settings_args({**settings, "DEDUP_URL_LOWERCASE_PATH": True}))
    assert "DIFFERS from the project's settings" in human.stdout


def test_reading_changes_nothing_even_with_a_torn_journal(bloom_crawl):
    settings, log = bloom_crawl
    state_dir = settings["DEDUP_STATE_DIR"]
    journal = state_dir / "seen-urls.journal"
    original = journal.read_bytes()
    try:
        # a record whose write is in progress: its length frame says 16 bytes, 5 arrived
        journal.write_bytes(original + (16).to_bytes(4, "big") + b"\0\0\0\0" + b"12345")
        before = file_digests(state_dir)
        report = inspect_json(settings)
        assert file_digests(state_dir) == before
        assert report["url_store"]["files"]["journal"]["torn_bytes"] == 13
        assert report["url_store"]["stats"]["entries"] == crawl_stat(log, "dedup/bloom/entries")
    finally:
        journal.write_bytes(original)


def test_no_state_names_the_setting(tmp_path):
    result = inspect()
    assert result.returncode == 1
    assert "neither DEDUP_STATE_DIR nor JOBDIR is set" in result.stderr
    assert "DEDUP_URL_BACKEND = 'bloom'" in result.stderr
    for setting in ("DEDUP_STATE_DIR", "JOBDIR"):
        result = inspect("-s", f"{setting}={tmp_path}")
        assert result.returncode == 1
        assert f"no seen-URL state in {tmp_path} ({setting}) yet" in result.stderr
        assert "Traceback" not in result.stderr
    assert list(tmp_path.iterdir()) == []


def test_an_unknown_content_backend_is_named_not_read_as_the_local_index(bloom_crawl):
    settings, _ = bloom_crawl
    result = inspect(*settings_args({**settings, "DEDUP_CONTENT_BACKEND": "reddis"}))
    assert result.returncode == 1
    assert "DEDUP_CONTENT_BACKEND='reddis' is not a content index" in result.stderr
    assert "Traceback" not in result.stderr


def test_unknown_spider_is_a_usage_error():
    result = inspect("nosuchspider")
    assert result.returncode == 2
    assert "Spider not found: nosuchspider" in result.stderr


def test_inspects_while_a_crawl_runs(demo_site_server, tmp_path):
    settings = {"DEDUP_STATE_DIR": tmp_path, "DEDUP_URL_BACKEND": "memory"}
    crawl = subprocess.Popen(
        scrapy_crawl_command(
            demo_site_server.url,
            *settings_args(settings),
            *("-s", "DOWNLOAD_DELAY=0.2", "-s", "CONCURRENT_REQUESTS=1", "-s", "LOG_LEVEL=INFO"),
        ),
        cwd=REPO_ROOT,
        env=_child_env(),
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 60
        entries = 0
        while entries < 3:
            assert time.monotonic() < deadline, "the crawl recorded no URLs"
            assert crawl.poll() is None, "the crawl ended before it could be inspected"
            result = inspect("--json", *settings_args(settings))
            if result.returncode == 0:
                entries = json.loads(result.stdout)["url_store"]["stats"]["entries"]
            time.sleep(0.2)
        refused = scrapy_command("dedup-forget", *settings_args(settings), demo_site_server.url)
        assert refused.returncode == 1
        assert f"a crawl is using {tmp_path} (process {crawl.pid} has" in refused.stderr
        assert "stop it first" in refused.stderr
    finally:
        crawl.send_signal(signal.SIGINT)
        _, log = crawl.communicate(timeout=60)
        demo_site_server.reset()
    assert crawl.returncode == 0, log[-2000:]
    report = inspect_json(settings)
    assert report["url_store"]["stats"]["entries"] == crawl_stat(log, "dedup/memory/entries")
    assert report["url_store"]["stats"]["entries"] >= entries


@pytest.mark.parametrize("backend", ["redis", "redis-bloom"])
def test_redis_figures_match_the_crawl_stats(redis_server, demo_site_server, backend):
    settings = {
        "DEDUP_URL_BACKEND": backend,
        "DEDUP_REDIS_URL": redis_server.url,
        "DEDUP_URL_CAPACITY": 10_000,
        "DEDUP_CONTENT_BACKEND": "redis",
    }
    client = redis.Redis.from_url(redis_server.url)
    empty = inspect(*settings_args(settings))
    assert empty.returncode == 1
    assert (
        f"no seen-URL store at Redis key 'site:dupefilter' at {redis_server.url} "
        "(DEDUP_REDIS_KEY) yet"
    ) in empty.stderr
    assert client.keys("*") == []  # inspecting claimed no signature

    log = run_scrapy(scrapy_crawl_command(demo_site_server.url, *settings_args(settings), *QUICK))
    demo_site_server.reset()
    keys_before = {key: client.dump(key) for key in client.keys("*")}
    report = inspect_json(settings)
    assert {key: client.dump(key) for key in client.keys("*")} == keys_before
    url_store = report["url_store"]
    kind = "redis-set" if backend == "redis" else "redis-bloom"
    assert url_store["backend"] == kind
    assert url_store["key"] == "site:dupefilter"
    assert url_store["signature_matches_settings"] is True
    for name, value in url_store["stats"].items():
        assert value == crawl_stat(log, f"dedup/{kind}/{name}"), name
    assert url_store["stats"]["entries"] == crawl_stat(log, "dedup/url/new") > 0
    if backend == "redis-bloom":
        assert url_store["params"]["capacity"] == 10_000
        assert url_store["stats"]["fill_ratio"] == pytest.approx(
            url_store["stats"]["entries"] / 10_000
        )
    assert report["content_index"]["documents"] == crawl_stat(log, "dedup/content/unique")
    human = inspect(*settings_args(settings))
    assert human.stdout.splitlines()[0] == (
        f"URL store of spider 'site': {kind}, Redis {redis_server.url}, key site:dupefilter"
    )


@pytest.mark.parametrize("backend", ["bloom", "redis"])
def test_time_slices_of_a_ttl_are_listed(demo_site_server, tmp_path, redis_server, backend):
    settings: dict[str, object] = {"DEDUP_URL_TTL": 86400, "DEDUP_URL_BACKEND": backend}
    if backend == "redis":
        settings["REDIS_URL"] = redis_server.url
    else:
        settings["DEDUP_STATE_DIR"] = tmp_path / "state"
    log = run_scrapy(scrapy_crawl_command(demo_site_server.url, *settings_args(settings), *QUICK))
    demo_site_server.reset()
    report = inspect_json(settings)
    generations = report["url_store"]["generations"]
    assert 1 <= len(generations) <= 2  # the crawl may straddle the start of a slice
    assert sum(g["entries"] for g in generations) == crawl_stat(log, "dedup/url/new") > 0
    assert all(0 <= g["age_seconds"] < 86400 / 4 + 60 for g in generations)
    assert report["url_store"]["params"]["ttl"] == 86400
    text = inspect(*settings_args(settings)).stdout
    assert "time slices (DEDUP_URL_TTL), newest first:" in text
    assert re.search(r"slice \d+: \d+ URLs, started .* ago", text)

    # another TTL in the project is reported as a difference, the state read as written
    changed = {**settings, "DEDUP_URL_TTL": 3600}
    report = inspect_json(changed)
    assert report["url_store"]["signature_matches_settings"] is False
    assert "DEDUP_URL_TTL" in report["url_store"]["signature_difference"]
