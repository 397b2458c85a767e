"""Several crawl workers, one Redis, one site: each page downloaded once across all workers."""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import tempfile
import time

import pytest

from crawler.redis.connection import RedisConnection
from tests.conftest import REPO_ROOT, _child_env, final_stat, scrapy_crawl_command, start_scrapy

WORKERS = 3


def run_workers(server, redis_server, settings: dict[str, str]) -> list[str]:
    arguments = []
    for name, value in {
        "REDIS_URL": redis_server.url,
        "CONCURRENT_REQUESTS": "4",
        # A worker alone takes about 12 s for the site: the others join while it crawls.
        "DOWNLOAD_DELAY": "0.2",
        "RANDOMIZE_DOWNLOAD_DELAY": "False",
        "LOG_LEVEL": "INFO",
        **settings,
    }.items():
        arguments += ["-s", f"{name}={value}"]
    command = scrapy_crawl_command(server.url, *arguments)
    with contextlib.ExitStack() as files:
        log_files = [files.enter_context(tempfile.TemporaryFile("w+")) for _ in range(WORKERS)]
        workers = []
        for log_file in log_files:
            workers.append(start_scrapy(command, stderr=log_file))
            if len(workers) == 1:
                # A worker that starts while the shared queue is empty (the first one holds
                # the only request) finds nothing to do and closes, as scrapy-redis's
                # scheduler makes an idle spider do: the others start once it has filled.
                wait_for_downloads(server, 2)
        logs = []
        for worker, log_file in zip(workers, log_files, strict=True):
            worker.wait(timeout=180)
            log_file.seek(0)
            log = log_file.read()
            assert worker.returncode == 0, log[-3000:]
            logs.append(log)
    return logs


def wait_for_downloads(server, count: int, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while sum(server.hits()["by_resource"].values()) < count:
        assert time.monotonic() < deadline, f"the first worker downloaded nothing in {timeout} s"
        time.sleep(0.05)


@pytest.mark.parametrize("backend", ["redis", "redis-bloom"])
def test_workers_sharing_the_scrapy_redis_queue(demo_site_process_factory, redis_server, backend):
    server = demo_site_process_factory()
    resources = server.model().resources
    logs = run_workers(
        server,
        redis_server,
        {
            "SCHEDULER": "scrapy_redis.scheduler.Scheduler",
            "SCHEDULER_PERSIST": "True",
            "DEDUP_URL_BACKEND": backend,
            "DEDUP_URL_CAPACITY": "100000",
        },
    )
    hits = server.hits()
    assert set(hits["by_resource"]) == resources
    assert set(hits["by_resource"].values()) == {1}
    # the three workers shared the work: more than one of them downloaded pages
    downloading = [log for log in logs if "'downloader/response_count'" in log]
    assert len(downloading) >= 2


@pytest.mark.parametrize("backend", ["redis", "redis-bloom"])
def test_workers_with_their_own_scheduler_share_the_seen_store(
    demo_site_process_factory, redis_server, backend
):
    server = demo_site_process_factory()
    resources = server.model().resources
    run_workers(server, redis_server, {"DEDUP_URL_BACKEND": backend})
    hits = server.hits()
    assert set(hits["by_resource"]) == resources
    assert set(hits["by_resource"].values()) == {1}


def slow_crawl_once_downloading(server, settings: dict[str, str], hits: int) -> subprocess.Popen:
    """Start a crawl of *server* with *settings* at about 20 requests a second (its log in
    ``stderr``); return once the server has answered *hits* requests."""
    arguments = []
    for name, value in {
        **settings,
        "CONCURRENT_REQUESTS": "2",
        "DOWNLOAD_DELAY": "0.05",
        "LOG_LEVEL": "INFO",
    }.items():
        arguments += ["-s", f"{name}={value}"]
    crawl = subprocess.Popen(
        scrapy_crawl_command(server.url, *arguments),
        cwd=REPO_ROOT,
        env=_child_env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 60
    while server.hits()["total"] < hits:
        assert crawl.poll() is None and time.monotonic() < deadline
        time.sleep(0.01)
    return crawl


def test_crawl_stops_when_redis_goes_away(demo_site_process_factory, redis_server):
    """DEDUP_REDIS_ON_ERROR = "stop": no page is crawled without being recorded."""
    server = demo_site_process_factory()
    settings = {
        "REDIS_URL": redis_server.url,
        "DEDUP_URL_BACKEND": "redis",
        "REDIS_PARAMS": '{"socket_timeout": 1, "socket_connect_timeout": 1}',
    }
    crawl = slow_crawl_once_downloading(server, settings, hits=5)
    redis_server.stop()
    _, log = crawl.communicate(timeout=120)
    assert "closing the spider (DEDUP_REDIS_ON_ERROR='stop')" in log
    assert "Spider closed (dedup_redis_unavailable)" in log
    assert server.hits()["total"] < len(server.model().resources)


def test_a_hung_redis_stalls_the_crawl_for_the_fault_budget_at_most(
    demo_site_process_factory, redis_server
):
    """Redis stops answering mid-crawl (SIGSTOP: no reply, no refusal) and the policy lets
    requests through: the reactor is held for the fault budget (1 s here) now and then, not
    for a socket timeout per try and per call (before: 10 s a try, four tries, each call)."""
    server = demo_site_process_factory()
    settings = {
        "REDIS_URL": redis_server.url,
        "DEDUP_URL_BACKEND": "redis",
        "DEDUP_REDIS_ON_ERROR": "allow",
        "DEDUP_REDIS_FAULT_BUDGET": "1",
        "EXTENSIONS": '{"tests.probes.reactor_lag.ReactorLag": 0}',
    }
    crawl = slow_crawl_once_downloading(server, settings, hits=5)
    os.kill(redis_server.process.pid, signal.SIGSTOP)
    try:
        _, log = crawl.communicate(timeout=120)
    finally:
        os.kill(redis_server.process.pid, signal.SIGCONT)
    assert crawl.returncode == 0, log[-3000:]
    assert "'finish_reason': 'finished'" in log
    assert "did not answer" in log and "(1.0s in all, DEDUP_REDIS_FAULT_BUDGET)" in log
    assert final_stat(log, "dedup/redis/allowed_unchecked") > 0
    assert set(server.hits()["by_resource"]) == server.model().resources
    lag = float(re.findall(r"'test/reactor_lag_max': ([\d.]+)", log)[-1])
    assert 0.9 < lag < 1.0 + 0.5, lag  # it met the fault, for the budget and no longer


def ended(command: list[str]) -> subprocess.CompletedProcess[str]:
    """Run a crawl *command* to its end, whatever its exit code; its log in ``stderr``."""
    return subprocess.run(
        command, cwd=REPO_ROOT, env=_child_env(), capture_output=True, text=True, timeout=120
    )


@pytest.mark.parametrize(
    ("joining", "differs"),
    [
        ({"DEDUP_URL_LOWERCASE_PATH": "True"}, "DEDUP_URL_LOWERCASE_PATH: False -> True"),
        ({"DEDUP_URL_BACKEND": "redis-bloom"}, "DEDUP_URL_BACKEND: 'redis-set' -> 'redis-bloom'"),
        ({"DEDUP_REDIS_SHARDS": "4"}, "DEDUP_REDIS_SHARDS: '<absent>' -> 4"),
    ],
)
def test_a_worker_with_other_rules_or_backend_refuses_before_its_spider_opens(
    demo_site_process_factory, redis_server, joining, differs
):
    """One error, exit code 1, no request and nothing written to the shared store (before:
    the spider opened, failed at its first request and closed under follow-on tracebacks)."""
    server = demo_site_process_factory()
    shared = {
        "REDIS_URL": redis_server.url,
        "DEDUP_URL_BACKEND": "redis",
        "DEDUP_CONTENT_ENABLED": "False",
        "LOG_LEVEL": "INFO",
    }

    def command(settings: dict[str, str]) -> list[str]:
        arguments = [argument for item in settings.items() for argument in ("-s", "=".join(item))]
        return scrapy_crawl_command(server.url, *arguments)

    first = ended(command(shared))
    assert first.returncode == 0
    client = RedisConnection(redis_server.url).client
    store = {key: client.dump(key) for key in client.keys("*")}
    server.reset()
    joined = ended(command({**shared, **joining}))
    assert joined.returncode == 1
    assert "RedisSignatureMismatch" in joined.stderr
    assert differs in joined.stderr
    assert joined.stderr.count("Traceback") == 1
    assert "Spider opened" not in joined.stderr
    assert server.hits()["total"] == 0
    assert {key: client.dump(key) for key in client.keys("*")} == store


def test_an_unreachable_redis_stops_the_crawl_before_its_spider_opens(
    demo_site_process_factory, redis_server
):
    server = demo_site_process_factory()
    closed_port = redis_server.port + 1
    url = f"redis://:hunter2@127.0.0.1:{closed_port}/0?password=hunter2"
    arguments = ("-s", "DEDUP_URL_BACKEND=redis", "-s", f"REDIS_URL={url}")
    crawl = ended(scrapy_crawl_command(server.url, *arguments))
    assert crawl.returncode == 1
    shown = f"redis://:***@127.0.0.1:{closed_port}/0?password=***"
    errors = [line for line in crawl.stderr.splitlines() if " ERROR: " in line]
    assert len(errors) == 1, crawl.stderr[-3000:]
    assert f"Redis at {shown} (REDIS_URL) failed for " in errors[0]
    assert "the whole DEDUP_REDIS_FAULT_BUDGET of 2s" in errors[0]
    assert "hunter2" not in crawl.stderr
    assert "Traceback" not in crawl.stderr
    assert "Spider opened" not in crawl.stderr
    assert server.hits()["total"] == 0


@pytest.mark.parametrize("backend", ["redis", "redis-bloom"])
def test_redis_restarted_mid_crawl_loses_nothing(
    demo_site_process_factory, redis_server_factory, backend
):
    """Redis (with AOF) stopped and started again while a crawl runs: the requests met
    meanwhile are held (the reactor never waits) and go on once it answers, within the
    fault budget; every page is downloaded, again only when a retry could not tell
    whether its first attempt had recorded the URL (counted)."""
    server = demo_site_process_factory()
    redis_server = redis_server_factory(appendonly=True)
    settings = {"REDIS_URL": redis_server.url, "DEDUP_URL_BACKEND": backend}
    crawl = slow_crawl_once_downloading(server, settings, hits=10)
    redis_server.stop()
    time.sleep(0.5)  # within the fault budget (2 s)
    redis_server.start()
    _, log = crawl.communicate(timeout=120)
    assert crawl.returncode == 0
    assert "holding requests meanwhile" in log  # the crawl met the restart
    assert "Redis answers again" in log
    assert final_stat(log, "dedup/redis/held") > 0
    assert "'finish_reason': 'finished'" in log
    assert "Traceback" not in log
    by_resource = server.hits()["by_resource"]
    assert set(by_resource) == server.model().resources
    again = sum(count - 1 for count in by_resource.values())
    assert again <= final_stat(log, "dedup/redis/retried_let_through")
