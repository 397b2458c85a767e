"""The recrawl records of one machine (crawler/url/recrawl_store.py) and the settings of the
schedule (crawler/url/configuration.py)."""

from __future__ import annotations

import itertools
import json
import os
import signal
import subprocess
import sys
import textwrap
from typing import TYPE_CHECKING, Any

import pytest
from scrapy.settings import Settings

from crawler.redis.connection import RedisConnection, RedisSignatureMismatch
from crawler.state.persistence import StateFileError
from crawler.url.configuration import recrawl_schedules_from_settings
from crawler.url.recrawl_records import RecrawlRecord, encode
from crawler.url.recrawl_redis_store import RedisRecrawlStore
from crawler.url.recrawl_schedule import RecrawlSchedule
from crawler.url.recrawl_store import RESET, RecrawlStore
from crawler.url.request_keys import request_key
from tests.conftest import REPO_ROOT, _child_env

if TYPE_CHECKING:
    from pathlib import Path

    from tests.conftest import RedisServerProcess

SIGNATURE = {"DEDUP_URL_STRIP_PARAMS": ["utm_*"]}


def key(number: int) -> bytes:
    return request_key("GET", f"https://example.com/p/{number}")


def record(number: int) -> RecrawlRecord:
    return RecrawlRecord(1_750_000_000 + number, 3600, b'"e%d"' % number, None, number)


def test_records_survive_a_restart_and_the_last_update_wins(tmp_path: Path) -> None:
    store = RecrawlStore(tmp_path, SIGNATURE, snapshot_every=3)  # snapshots on the way
    store.open()
    for number in range(10):
        store.put(key(number), f"https://example.com/p/{number}", record(number))
    store.put(key(4), "https://example.com/p/4", record(40))
    store.close()
    again = RecrawlStore(tmp_path, SIGNATURE)
    again.open()
    assert len(again) == 10
    assert again.get(key(4)) == record(40)
    assert again.url(key(7)) == "https://example.com/p/7"
    assert again.get(key(99)) is None and again.url(key(99)) is None


def test_a_kill_loses_no_record_written(tmp_path: Path) -> None:
    # a process that writes records and is killed before it closes anything
    script = textwrap.dedent(
        f"""
        import os, signal, sys
        sys.path.insert(0, {str(REPO_ROOT)!r})
        from pathlib import Path
        from tests.url.test_recrawl_store import SIGNATURE, key, record
        from crawler.url.recrawl_store import RecrawlStore
        store = RecrawlStore(Path({str(tmp_path)!r}), SIGNATURE, snapshot_every=4)
        store.open()
        for number in range(10):
            store.put(key(number), f"https://example.com/p/{{number}}", record(number))
        os.kill(os.getpid(), signal.SIGKILL)
        """
    )
    completed = subprocess.run([sys.executable, "-c", script], env=_child_env(), check=False)
    assert completed.returncode == -signal.SIGKILL
    store = RecrawlStore(tmp_path, SIGNATURE)
    store.open()
    assert [store.get(key(number)) for number in range(10)] == [record(n) for n in range(10)]


def test_a_state_written_with_other_rules_is_refused(tmp_path: Path) -> None:
    store = RecrawlStore(tmp_path, SIGNATURE)
    store.open()
    store.put(key(1), "https://example.com/p/1", record(1))
    store.close()
    with pytest.raises(StateFileError, match="DEDUP_URL_STRIP_PARAMS"):
        RecrawlStore(tmp_path, {"DEDUP_URL_STRIP_PARAMS": []}).open()


def test_a_torn_last_record_is_dropped_and_the_rest_kept(tmp_path: Path) -> None:
    store = RecrawlStore(tmp_path, SIGNATURE)
    store.open()
    for number in range(3):
        store.put(key(number), f"https://example.com/p/{number}", record(number))
    journal = tmp_path / "recrawl.journal"
    os.truncate(journal, journal.stat().st_size - 5)  # a kill in the middle of a write
    again = RecrawlStore(tmp_path, SIGNATURE)
    again.open()
    assert len(again) == 2 and again.get(key(2)) is None


def test_due_lists_the_pages_whose_interval_has_passed() -> None:
    store = RecrawlStore(None, {})
    store.open()
    store.put(key(1), "https://example.com/p/1", RecrawlRecord(1000, 60))
    store.put(key(2), "https://example.com/p/2", RecrawlRecord(1000, 600))
    assert [url for _, url, _ in store.due(1059)] == []
    assert [url for _, url, _ in store.due(1060)] == ["https://example.com/p/1"]
    assert len(list(store.due(1600))) == 2


def test_the_schedule_settings_make_the_schedules() -> None:
    default, overrides = recrawl_schedules_from_settings(
        Settings(
            {
                "DEDUP_RECRAWL_MIN_INTERVAL": 60,
                "DEDUP_RECRAWL_HOSTS": {
                    "*.news.example": {"first_interval": 600, "max_interval": 3600}
                },
            }
        )
    )
    assert default == RecrawlSchedule(minimum=60)
    assert overrides == {"*.news.example": RecrawlSchedule(minimum=60, first=600, maximum=3600)}


@pytest.mark.parametrize(
    ("settings", "named"),
    [
        ({"DEDUP_RECRAWL_MIN_INTERVAL": "an hour"}, "DEDUP_RECRAWL_MIN_INTERVAL='an hour'"),
        ({"DEDUP_RECRAWL_MAX_INTERVAL": 1.5}, "DEDUP_RECRAWL_MAX_INTERVAL=1.5"),
        ({"DEDUP_RECRAWL_MIN_INTERVAL": 90_000}, "DEDUP_RECRAWL_MIN_INTERVAL=90000"),
        ({"DEDUP_RECRAWL_MOST_NOT_MODIFIED": 0}, "most_not_modified"),
        ({"DEDUP_RECRAWL_HOSTS": {"a.example": {"min": 1}}}, "DEDUP_RECRAWL_HOSTS['a.example']"),
        (
            {"DEDUP_RECRAWL_HOSTS": {"a.example": {"first_interval": 10}}},
            "DEDUP_RECRAWL_HOSTS['a.example']: a recrawl schedule needs",
        ),
    ],
)
def test_a_bad_schedule_setting_is_named(settings: dict[str, object], named: str) -> None:
    with pytest.raises(ValueError) as error:
        recrawl_schedules_from_settings(Settings(settings))
    assert named in str(error.value)


def test_a_reset_page_is_due_now_as_a_page_never_fetched(tmp_path: Path) -> None:
    store = RecrawlStore(tmp_path, SIGNATURE)
    store.open()
    store.put(key(1), "https://example.com/p/1", record(1))
    assert store.reset(key(1)) and not store.reset(key(2))
    store.close()
    again = RecrawlStore(tmp_path, SIGNATURE)
    again.read()
    assert again.get(key(1)) == RESET and again.url(key(1)) == "https://example.com/p/1"
    assert [url for _, url, _ in again.due(now=1)] == ["https://example.com/p/1"]


def test_a_shared_store_claims_a_due_page_for_one_worker(redis_server: RedisServerProcess) -> None:
    store = RedisRecrawlStore(RedisConnection(redis_server.url), "site:dupefilter", SIGNATURE)
    store.open()
    store.put(key(1), "https://example.com/p/1", RecrawlRecord(1000, 60, b'"e1"', None, 7))
    store.put(key(2), "https://example.com/p/2", RecrawlRecord(1000, 600))
    assert len(store) == 2 and store.url(key(1)) == "https://example.com/p/1"
    assert store.claim_if_due(key(1), 1059, lease=600) == (False, None)
    due, before = store.claim_if_due(key(1), 1060, lease=600)
    assert due and before == RecrawlRecord(1000, 60, b'"e1"', None, 7)
    # claimed for every worker until the lease ends; what the record held is kept
    other = RedisRecrawlStore(RedisConnection(redis_server.url), "site:dupefilter", SIGNATURE)
    assert other.claim_if_due(key(1), 1061, lease=600) == (False, None)
    assert other.get(key(1)) == RecrawlRecord(1060, 600, b'"e1"', None, 7)
    assert other.claim_if_due(key(1), 1660, lease=600)[0]
    assert other.claim_if_due(key(3), 5000, lease=600) == (False, None)  # no record: not due
    assert [url for _, url, _ in store.due(2259)] == ["https://example.com/p/2"]
    assert sorted(url for _, url, _ in store.due(2260)) == [
        "https://example.com/p/1",
        "https://example.com/p/2",
    ]
    assert store.reset(key(2)) and store.get(key(2)) == RESET and len(store) == 2


def test_a_shared_store_built_with_other_rules_is_refused(
    redis_server: RedisServerProcess,
) -> None:
    RedisRecrawlStore(RedisConnection(redis_server.url), "site:dupefilter", SIGNATURE).open()
    other = RedisRecrawlStore(
        RedisConnection(redis_server.url), "site:dupefilter", {"DEDUP_URL_STRIP_PARAMS": []}
    )
    with pytest.raises(RedisSignatureMismatch, match="DEDUP_URL_STRIP_PARAMS"):
        other.open()


def _scripts_run(client: Any) -> int:
    return int(client.info("commandstats").get("cmdstat_evalsha", {"calls": 0})["calls"])


@pytest.mark.parametrize("backend", ["redis", "redis-bloom"])
@pytest.mark.parametrize("ttl", [None, 3600])
@pytest.mark.parametrize("shards", [1, 4])
def test_a_seen_url_is_checked_and_its_due_page_claimed_in_one_redis_call(
    redis_server: RedisServerProcess, backend: str, ttl: int | None, shards: int
) -> None:
    import redis
    from redis.crc import key_slot

    from crawler.url.configuration import redis_seen_store
    from crawler.url.stores.redis_shards import ShardedRedisSeenStore

    settings = Settings(
        {"REDIS_URL": redis_server.url, "DEDUP_URL_TTL": ttl, "DEDUP_REDIS_SHARDS": shards}
    )
    seen = redis_seen_store(settings, "site", backend)
    seen.open(SIGNATURE)
    records = RedisRecrawlStore.beside(seen, SIGNATURE)
    records.open()
    for number in range(40):  # every record in the slot of its key's seen store
        shard = seen.shard_of(key(number)) if isinstance(seen, ShardedRedisSeenStore) else seen
        assert key_slot(records.bucket(key(number)).encode()) == key_slot(shard.tag.encode())
    assert len({records.bucket(key(number)) for number in range(40)}) > 1
    assert seen.add(key(1)) and seen.add(key(2))
    records.put(key(1), "https://example.com/p/1", RecrawlRecord(1000, 60, b'"e1"', None, 7))
    seen.add_then(key(9), records.claim_tail(key(9), 1060, 600))  # scripts loaded
    counter = redis.Redis.from_url(redis_server.url)
    round_trips: list[object] = []
    call = seen.connection.call

    def counted(command: Any, *args: Any, **kwargs: Any) -> Any:
        round_trips.append(command)
        return call(command, *args, **kwargs)

    seen.connection.call = counted  # type: ignore[method-assign]
    scripts = [_scripts_run(counter)]
    assert seen.add_then(key(3), records.claim_tail(key(3), 1060, 600)) == (True, None)
    scripts.append(_scripts_run(counter))
    new, reply = seen.add_then(key(1), records.claim_tail(key(1), 1060, 600))
    scripts.append(_scripts_run(counter))
    # one call, one script each: the add, and for a seen URL the claim of its due page
    assert len(round_trips) == 2
    assert [after - before for before, after in itertools.pairwise(scripts)] == [1, 1]
    assert not new
    assert records.claimed(reply) == (True, RecrawlRecord(1000, 60, b'"e1"', None, 7))
    assert records.get(key(1)) == RecrawlRecord(1060, 600, b'"e1"', None, 7)
    new, reply = seen.add_then(key(1), records.claim_tail(key(1), 1061, 600))
    assert not new and records.claimed(reply) == (False, None)  # claimed for every worker
    new, reply = seen.add_then(key(2), records.claim_tail(key(2), 5000, 600))
    assert not new and records.claimed(reply) == (False, None)  # seen, no record: not due
    assert len(records) == 1


def test_records_of_the_first_layout_move_beside_the_seen_urls(
    redis_server: RedisServerProcess,
) -> None:
    import redis

    client = redis.Redis.from_url(redis_server.url)
    old = "{site:dupefilter:recrawl}"
    client.set(f"{old}:signature", json.dumps(SIGNATURE, sort_keys=True))
    for number in range(30):  # as the first layout's put wrote them
        encoded = encode(record(number))
        value = bytes((len(encoded),)) + encoded + f"https://example.com/p/{number}".encode()
        client.hset(
            f"{old}:r:{int.from_bytes(key(number)[:2], 'big') % 4096:03x}", key(number), value
        )
    client.set(f"{old}:count", 30)
    connection = RedisConnection(redis_server.url)
    newer = RedisRecrawlStore(connection, "site:dupefilter", SIGNATURE, ["site:dupefilter#0.0"])
    newer.put(key(0), "https://example.com/p/0", RecrawlRecord(9, 9))  # a worker's newer write
    store = RedisRecrawlStore(connection, "site:dupefilter", SIGNATURE, ["site:dupefilter#0.0"])
    store.open()
    assert len(store) == 30
    assert store.get(key(0)) == RecrawlRecord(9, 9)
    assert [store.get(key(number)) for number in range(1, 30)] == [record(n) for n in range(1, 30)]
    assert store.url(key(7)) == "https://example.com/p/7"
    assert client.keys(f"{old}:r:*") == [] and client.get(f"{old}:count") is None
    store.open()  # nothing left to move
    assert len(store) == 30
