"""A primary of a real Redis Cluster, or a lone redis-server, killed while three workers
crawl, then brought back.

Three workers share the seen store (AOF on; a cluster of three primaries, no replica),
each crawling a site of its own (workers with their own schedulers on one site do not
share its pages: the first to parse the home page claims its links) and keeping its own
queue and frontier in its own ``JOBDIR``. The server that holds the seen store is killed
with SIGKILL mid-crawl. Each worker must meet the fault within its budget (its reactor
never held longer), end with a clear reason within a stated bound, and, once the server
is back, a restart of each must download every page not downloaded yet and lose no
article.
"""

from __future__ import annotations

import json
import re
import time
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

import pytest

from tests.conftest import (
    scrapy_crawl_command,
    start_redis_cluster,
    start_scrapy,
    wait_for_cluster_ok,
)

if TYPE_CHECKING:
    from pathlib import Path

    from tests.conftest import DemoSiteProcess, RedisServerProcess

WORKERS = 3
FAULT_BUDGET = 1.0
#: How long a worker may take to end once the server is killed. Under "stop" it closes at
#: its next request (the fault budget, then Scrapy's close: the downloads in flight; 1-2 s
#: measured); under "allow" it crawls on, unchecked, each URL once, and finishes its site.
END_WITHIN = {"stop": 15.0, "allow": 60.0}
#: How much longer than the fault budget a worker's reactor may go without running a timer.
LAG_MARGIN = 0.5


def worker_command(
    server: DemoSiteProcess, node: RedisServerProcess, workdir: Path, policy: str, cluster: bool
) -> list[str]:
    command = scrapy_crawl_command(server.url)
    settings = {
        "REDIS_URL": node.url,
        "DEDUP_REDIS_CLUSTER": str(cluster),
        "DEDUP_URL_BACKEND": "redis",
        "DEDUP_REDIS_ON_ERROR": policy,
        "DEDUP_REDIS_FAULT_BUDGET": str(FAULT_BUDGET),
        "JOBDIR": str(workdir / "job"),
        "EXTENSIONS": json.dumps({"tests.reactor_lag.ReactorLag": 0}),
        "CONCURRENT_REQUESTS": "4",
        # about 15 s a site: no worker is done before the slowest to start has begun
        "DOWNLOAD_DELAY": "0.3",
        "LOG_LEVEL": "INFO",
        "DEDUP_CONTENT_WORKERS": "0",
    }
    for name, value in settings.items():
        command += ["-s", f"{name}={value}"]
    return [*command, "-o", str(workdir / "items.jsonl")]


def node_holding(nodes: list[RedisServerProcess], key: str) -> RedisServerProcess:
    import redis

    client = redis.RedisCluster(host="127.0.0.1", port=nodes[0].port)
    try:
        port = client.get_node_from_key(key).port
    finally:
        client.close()
    return next(node for node in nodes if node.port == port)


def exported_articles(server: DemoSiteProcess, feed: Path) -> set[str]:
    """The article of each item in *feed*: its page, or the page it is a copy of."""
    model = server.model()
    articles = set()
    if feed.exists():
        for line in feed.read_text("utf-8").splitlines():
            parts = urlsplit(json.loads(line)["url"])
            resource = model.resolve(parts.path + (f"?{parts.query}" if parts.query else ""))
            assert resource.resource_id is not None, line
            articles.add(model.near_duplicates.get(resource.resource_id, resource.resource_id))
    return articles


@pytest.mark.parametrize("policy", ["stop", "allow"])
@pytest.mark.parametrize("cluster", [True, False], ids=["cluster", "single"])
def test_a_redis_server_killed_mid_crawl_loses_nothing(
    demo_site_process_factory, redis_server_factory, tmp_path, policy, cluster
):
    servers = [demo_site_process_factory() for _ in range(WORKERS)]
    if cluster:
        nodes = start_redis_cluster(redis_server_factory, appendonly=True)
        holder = node_holding(nodes, "site:dupefilter")
    else:
        nodes = [redis_server_factory(appendonly=True)]
        holder = nodes[0]
    workdirs = [tmp_path / f"worker-{number}" for number in range(WORKERS)]
    commands = [
        worker_command(server, nodes[0], workdir, policy, cluster)
        for server, workdir in zip(servers, workdirs, strict=True)
    ]
    logs = [workdir / "crawl.log" for workdir in workdirs]
    workers = []
    for command, workdir, log in zip(commands, workdirs, logs, strict=True):
        workdir.mkdir()
        with log.open("w") as log_file:
            workers.append(start_scrapy(command, stderr=log_file))
    deadline = time.monotonic() + 60
    while min(server.hits()["total"] for server in servers) < 3:
        assert all(worker.poll() is None for worker in workers), "a worker ended early"
        assert time.monotonic() < deadline, "the workers downloaded nothing"
        time.sleep(0.01)

    holder.kill()
    killed_at = time.monotonic()
    ended_after = []
    for worker in workers:
        worker.wait(timeout=END_WITHIN[policy] + 30)
        ended_after.append(time.monotonic() - killed_at)
    texts = [log.read_text() for log in logs]
    for worker, text in zip(workers, texts, strict=True):
        assert worker.returncode == 0, text[-3000:]
        assert "Traceback" not in text
        if policy == "stop":
            assert "Spider closed (dedup_redis_unavailable)" in text, text[-3000:]
        else:
            assert "Spider closed (finished)" in text, text[-3000:]
        lag = float(re.findall(r"'test/reactor_lag_max': ([\d.]+)", text)[-1])
        assert lag <= FAULT_BUDGET + LAG_MARGIN, text[-3000:]
    lags = [float(re.findall(r"'test/reactor_lag_max': ([\d.]+)", text)[-1]) for text in texts]
    print(
        f"{policy}: reactor lag max {max(lags):.3f}s, ended {max(ended_after):.1f}s after the kill"
    )
    assert max(ended_after) <= END_WITHIN[policy], ended_after
    if policy == "stop":  # the fault left work
        assert all(set(s.hits()["by_resource"]) < s.model().resources for s in servers)

    holder.start()  # the same port, directory and append-only file
    if cluster:
        wait_for_cluster_ok(nodes, timeout=60)
    restarts = [start_scrapy(command) for command in commands]
    for restart in restarts:
        _, text = restart.communicate(timeout=180)
        assert restart.returncode == 0, text[-3000:]
        assert "Traceback" not in text
    for server, workdir in zip(servers, workdirs, strict=True):
        model = server.model()
        assert set(server.hits()["by_resource"]) == model.resources
        html_pages = {page for page in model.resources if model.resolve(page).is_html}
        articles = {model.near_duplicates.get(page, page) for page in html_pages}
        assert exported_articles(server, workdir / "items.jsonl") == articles
