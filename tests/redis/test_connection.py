from __future__ import annotations

import os
import re
import signal
import threading
import time

import pytest
from scrapy.settings import Settings

from crawler.redis.connection import (
    RedisConnection,
    RedisFaultPending,
    RedisLeftAlone,
    RedisSignatureMismatch,
    RedisUnavailable,
    connection_from_settings,
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
    assert params == {"socket_timeout": 3, "socket_connect_timeout": 2.0, "password": "p"}


def test_calls_wait_for_an_answer_as_long_as_the_fault_budget():
    settings = Settings({"DEDUP_REDIS_FAULT_BUDGET": "0.5"})
    params = redis_params_from_settings(settings)
    assert (params["socket_timeout"], params["socket_connect_timeout"]) == (0.5, 0.5)
    assert connection_from_settings(settings).budget == 0.5
    with pytest.raises(ValueError, match="DEDUP_REDIS_FAULT_BUDGET must be above 0 seconds"):
        redis_params_from_settings(Settings({"DEDUP_REDIS_FAULT_BUDGET": "0"}))


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("redis://:secret@host:6379/0", "redis://:***@host:6379/0"),
        ("rediss://user:s%40cret@cache:6380/1", "rediss://user:***@cache:6380/1"),
        ("redis://user:p@ss@host/0", "redis://user:***@host/0"),  # an unescaped @
        ("redis://host:6379/0?password=secret&db=2", "redis://host:6379/0?password=***&db=2"),
        ("redis://host/0?db=1&PassWord=secret", "redis://host/0?db=1&PassWord=***"),
        ("redis://:a@[::1]:6379/0?password=b", "redis://:***@[::1]:6379/0?password=***"),
        ("unix:///run/redis.sock?password=secret&db=0", "unix:///run/redis.sock?password=***&db=0"),
        ("redis://host:6379/0", "redis://host:6379/0"),
        ("rediss://user@host:6380", "rediss://user@host:6380"),
        ("redis://host/0?passwords=list", "redis://host/0?passwords=list"),
    ],
)
def test_redact_hides_every_password_form_redis_py_reads(url, shown):
    assert redact(url) == shown


@pytest.mark.parametrize(
    ("settings", "named"),
    [
        ({"DEDUP_REDIS_URL": "redis://127.0.0.1:{port}/0"}, "DEDUP_REDIS_URL"),
        ({"REDIS_URL": "redis://127.0.0.1:{port}/0"}, "REDIS_URL"),
        ({"REDIS_HOST": "127.0.0.1", "REDIS_PORT": "{port}"}, "REDIS_HOST/REDIS_PORT"),
    ],
)
def test_an_unreachable_redis_is_named_by_the_setting_the_user_set(redis_server, settings, named):
    port = str(redis_server.port + 1)
    given = Settings({name: value.format(port=port) for name, value in settings.items()})
    connection = connection_from_settings(given)
    connection.params["socket_connect_timeout"] = 1
    with pytest.raises(RedisUnavailable, match=rf"cannot reach Redis at \S+:{port}\S* \({named}\)"):
        connection.open()


def test_a_bad_port_is_a_clear_error_naming_the_setting():
    connection = connection_from_settings(Settings({"REDIS_URL": "redis://:pw@host:99999/0"}))
    with pytest.raises(
        ValueError, match=r"^REDIS_URL='redis://:\*\*\*@host:99999/0' is not a Redis URL"
    ):
        connection.open()


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


def ping_across_a_restart(connection: RedisConnection, redis_server, after: float) -> bool:
    """Stop *redis_server*, start it again *after* seconds, and ping through *connection*
    meanwhile."""
    redis_server.stop()
    restart = threading.Timer(after, redis_server.start)
    restart.start()
    try:
        return connection.call(connection.client.ping)
    finally:
        restart.join()


def test_call_retries_until_the_server_is_back(redis_server):
    connection = RedisConnection(redis_server.url, {"socket_timeout": 1}, retries=5, backoff=0.2)
    connection.open()
    connection.call(connection.client.set, "k", b"v")
    assert ping_across_a_restart(connection, redis_server, after=0.5) is True
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


def test_a_server_that_refuses_writes_is_a_fault_not_a_crash(redis_server_factory):
    """A full server (OOM) and a replica (READONLY) answer, with an error: the call
    retries, then raises RedisUnavailable, so DEDUP_REDIS_ON_ERROR applies, as when no
    server answers (before, redis-py's ResponseError went up raw and the item was lost)."""
    full, primary, replica = (redis_server_factory() for _ in range(3))
    admin = RedisConnection(full.url)
    admin.client.config_set("maxmemory-policy", "noeviction")
    admin.client.config_set("maxmemory", 1)
    RedisConnection(replica.url).client.replicaof("127.0.0.1", primary.port)
    for server, reply in ((full, "OutOfMemoryError"), (replica, "ReadOnlyError")):
        connection = RedisConnection(server.url, retries=2, backoff=0.01)
        connection.open()
        with pytest.raises(RedisUnavailable, match=f"refused after 2 retries: {reply}"):
            connection.call(connection.client.sadd, "k", b"x")
        assert (connection.retried, connection.failures) == (2, 1)
        assert connection.call(connection.client.ping) is True  # reads still work


def test_a_hung_server_costs_the_budget_once_then_calls_fail_at_once(redis_server):
    """A server that stops answering (SIGSTOP: no reply, no refusal) holds the calls for
    the fault budget in all, not per call (before: 10 s a try, four tries a call, every
    call). It is then left alone, each call failing at once, until a call after the
    probe interval finds it back."""
    params = {"socket_timeout": 0.5, "socket_connect_timeout": 0.5}
    connection = RedisConnection(redis_server.url, params, budget=1.0, probe_interval=1.0)
    connection.open()
    os.kill(redis_server.process.pid, signal.SIGSTOP)
    try:
        started = time.monotonic()
        with pytest.raises(RedisUnavailable, match=r"did not answer .*\(1\.\ds in all"):
            connection.call(connection.client.ping)
        first = time.monotonic() - started
        started = time.monotonic()
        left_alone = r"left alone for [01]\.\ds more after it did not answer"
        for _ in range(100):
            with pytest.raises(RedisUnavailable, match=left_alone):
                connection.call(connection.client.ping)
        then = time.monotonic() - started
    finally:
        os.kill(redis_server.process.pid, signal.SIGCONT)
    assert first < 1.0 + 0.5 + 0.3  # the budget, and at most one more wait for an answer
    assert then < 0.1
    assert (connection.failures, connection.refused_while_down) == (1, 100)
    time.sleep(1.0)
    assert connection.call(connection.client.ping) is True
    # the budget is whole again: a new fault is retried, not refused at once
    assert ping_across_a_restart(connection, redis_server, after=0.3) is True


@pytest.mark.usefixtures("on_reactor_thread")
def test_on_the_reactor_thread_a_fault_is_reported_at_once_until_the_budget_is_spent(
    redis_server,
):
    """On the reactor's thread a call never sleeps between retries: each failing call
    raises RedisFaultPending at once (the caller holds its work and asks again later)
    while the server has failed for less than the budget, then RedisUnavailable, and the
    server is left alone. A call that succeeds gives the budget back."""
    connection = RedisConnection(redis_server.url, budget=0.5, probe_interval=0.5)
    connection.open()
    redis_server.stop()
    started = time.monotonic()
    pending = 0
    while True:
        call_started = time.monotonic()
        try:
            connection.call(connection.client.ping)
        except RedisFaultPending as exc:
            pending += 1
            assert "DEDUP_REDIS_FAULT_BUDGET" in str(exc)
        except RedisUnavailable as exc:
            assert not isinstance(exc, RedisFaultPending)
            assert re.search(
                r"did not answer: .*\(0\.\ds in all, DEDUP_REDIS_FAULT_BUDGET\)", str(exc)
            )
            break
        assert time.monotonic() - call_started < 0.05  # refused at once, no pause
        time.sleep(0.01)
    assert 0.5 <= time.monotonic() - started < 0.7
    assert pending >= 10
    assert (connection.failures, connection.retried) == (1, pending)
    with pytest.raises(RedisLeftAlone):
        connection.call(connection.client.ping)
    redis_server.start()
    time.sleep(0.5)
    assert connection.call(connection.client.ping) is True
    redis_server.stop()
    with pytest.raises(RedisFaultPending):  # a new fault: the whole budget again
        connection.call(connection.client.ping)
