from __future__ import annotations

import threading
import time

import pytest
from scrapy.settings import Settings

from crawler.redis_access import (
    RedisConnection,
    RedisSignatureMismatch,
    RedisUnavailable,
    redact,
    redis_params_from_settings,
    redis_url_from_settings,
)


@pytest.mark.parametrize(
    ("settings", "url"),
    [
        ({}, "redis://127.0.0.1:6379"),
        ({"REDIS_HOST": "cache", "REDIS_PORT": 6380}, "redis://cache:6380"),
        ({"REDIS_URL": "redis://shared:1/2", "REDIS_HOST": "cache"}, "redis://shared:1/2"),
        ({"DEDUP_REDIS_URL": "rediss://own:3/0", "REDIS_URL": "redis://x/"}, "rediss://own:3/0"),
    ],
)
def test_redis_url_from_settings(settings, url):
    assert redis_url_from_settings(Settings(settings)) == url


def test_redis_params_keep_replies_binary():
    params = redis_params_from_settings(
        Settings({"REDIS_PARAMS": {"socket_timeout": 3, "encoding": "utf-8", "password": "p"}})
    )
    assert params == {"socket_timeout": 3, "socket_connect_timeout": 10, "password": "p"}


def test_redact_hides_only_the_password():
    assert redact("redis://:secret@host:6379/0") == "redis://:***@host:6379/0"
    assert redact("redis://host:6379/0") == "redis://host:6379/0"


def test_open_names_the_url_without_password(redis_server):
    url = f"redis://:hunter2@127.0.0.1:{redis_server.port + 1}/0"
    connection = RedisConnection(url, {"socket_connect_timeout": 1})
    with pytest.raises(RedisUnavailable) as excinfo:
        connection.open()
    message = str(excinfo.value)
    assert f"redis://:***@127.0.0.1:{redis_server.port + 1}/0" in message
    assert "hunter2" not in message


def test_signature_is_claimed_then_checked(redis_server):
    first = RedisConnection(redis_server.url)
    first.open()
    first.check_signature("k:signature", {"rules": 1}, data_key="k")
    first.client.sadd("k", b"x")
    RedisConnection(redis_server.url).check_signature("k:signature", {"rules": 1}, data_key="k")
    with pytest.raises(RedisSignatureMismatch, match="rules: 1 -> 2"):
        RedisConnection(redis_server.url).check_signature("k:signature", {"rules": 2}, data_key="k")


def test_data_without_signature_is_refused(redis_server):
    connection = RedisConnection(redis_server.url)
    connection.client.sadd("spider:dupefilter", "0" * 40)  # as scrapy-redis writes it
    with pytest.raises(RedisSignatureMismatch, match="without a rules signature"):
        connection.check_signature(
            "spider:dupefilter:signature", {"rules": 1}, data_key="spider:dupefilter"
        )
    assert not connection.client.exists("spider:dupefilter:signature")


def test_call_retries_until_the_server_is_back(redis_server):
    connection = RedisConnection(redis_server.url, {"socket_timeout": 1}, retries=5, backoff=0.2)
    connection.open()
    connection.call(connection.client.set, "k", b"v")
    redis_server.stop()
    restart = threading.Timer(0.5, redis_server.start)
    restart.start()
    try:
        assert connection.call(connection.client.ping) is True
    finally:
        restart.join()
    assert connection.retried >= 1
    assert connection.failures == 0


def test_call_gives_up_after_the_retries(redis_server):
    connection = RedisConnection(redis_server.url, {"socket_timeout": 1}, retries=2, backoff=0.05)
    connection.open()
    redis_server.stop()
    started = time.monotonic()
    with pytest.raises(RedisUnavailable, match="did not answer after 2 retries"):
        connection.call(connection.client.ping)
    assert time.monotonic() - started < 5
    assert (connection.retried, connection.failures) == (2, 1)
