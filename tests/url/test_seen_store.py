"""One seen-store interface, whatever the backend: the stores
:func:`~crawler.url.configuration.seen_store_from_settings` builds answer alike."""

from __future__ import annotations

from functools import partial

import pytest
from scrapy.settings import Settings

from crawler.url.canonical import UrlRules
from crawler.url.configuration import seen_store_from_settings, url_signature
from crawler.url.request_keys import request_key
from crawler.url.stores.journaled import JournaledSeenStore
from crawler.url.stores.shared import SharedSeenStore
from crawler.url.stores.unpersisted import UnpersistedSeenStore

KEYS = [request_key("GET", f"http://a.test/{number}") for number in range(5)]


def build(settings: dict):
    return seen_store_from_settings(Settings(settings), "shop", partial(url_signature, UrlRules()))


@pytest.fixture(params=["memory only", "journaled", "redis", "redis-bloom"])
def store_settings(request, tmp_path):
    if request.param == "memory only":
        return {"DEDUP_URL_BACKEND": "bloom"}, UnpersistedSeenStore
    if request.param == "journaled":
        return {"DEDUP_URL_BACKEND": "bloom", "DEDUP_STATE_DIR": str(tmp_path)}, JournaledSeenStore
    server = request.getfixturevalue("redis_server")
    return {"DEDUP_URL_BACKEND": request.param, "DEDUP_REDIS_URL": server.url}, SharedSeenStore


def test_each_backend_answers_through_the_same_calls(store_settings):
    settings, store_class = store_settings
    store = build(settings)
    assert isinstance(store, store_class)
    store.open()
    new_keys_recorded: list[bytes] = []
    assert [store.add(key, partial(new_keys_recorded.append, key)) for key in KEYS] == [True] * 5
    assert [store.add(key, partial(new_keys_recorded.append, key)) for key in KEYS] == [False] * 5
    assert new_keys_recorded == KEYS  # the hook ran once a key, for new keys only
    assert all(key in store for key in KEYS)
    assert request_key("GET", "http://a.test/other") not in store
    assert len(store) == 5
    assert store.stats()["entries"] == 5
    backend = settings["DEDUP_URL_BACKEND"]
    assert store.stats_name == ("redis-set" if backend == "redis" else backend)
    assert store.shared == (store.connection is not None) == (store_class is SharedSeenStore)
    assert store.whereabouts().startswith("in ")
    store.close()


def test_a_store_opened_again_knows_what_it_kept_unless_kept_in_memory_only(store_settings):
    settings, store_class = store_settings
    first = build(settings)
    first.open()
    first.add(KEYS[0])
    first.close()
    second = build(settings)
    second.open()
    assert (KEYS[0] in second) == (store_class is not UnpersistedSeenStore)
    second.close()


def test_a_journaled_store_runs_the_hook_before_the_key_is_durable(tmp_path):
    store = build({"DEDUP_URL_BACKEND": "memory", "DEDUP_STATE_DIR": str(tmp_path)})
    assert isinstance(store, JournaledSeenStore)
    store.open()
    records_when_called: list[int] = []
    store.add(KEYS[0], lambda: records_when_called.append(store.journal.records))
    assert records_when_called == [0]
    assert store.journal.records == 1
    assert store.state_dir == tmp_path
    store.close()


def test_clear_empties_a_shared_store_and_leaves_a_local_one(redis_server, tmp_path):
    shared = build({"DEDUP_URL_BACKEND": "redis", "DEDUP_REDIS_URL": redis_server.url})
    local = build({"DEDUP_URL_BACKEND": "bloom", "DEDUP_STATE_DIR": str(tmp_path)})
    for store in (shared, local):
        store.open()
        store.add(KEYS[0])
        store.clear()
    assert KEYS[0] not in shared
    assert KEYS[0] in local
    for store in (shared, local):
        store.close()
