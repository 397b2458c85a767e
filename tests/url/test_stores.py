from __future__ import annotations

import math

import pytest

from crawler.state.persistence import StateFileError
from crawler.url.request_keys import request_key
from crawler.url.stores.bloom import BloomSeenSet
from crawler.url.stores.journaled import JournaledSeenStore
from crawler.url.stores.memory import MemorySeenSet


def keys(count: int, prefix: str = "k") -> list[bytes]:
    return [request_key("GET", f"https://example.com/{prefix}{i}") for i in range(count)]


@pytest.mark.parametrize(
    "new_set", [MemorySeenSet, lambda: BloomSeenSet(1000, 0.001)], ids=["memory", "bloom"]
)
def test_add_reports_new_keys_once(new_set):
    seen = new_set()
    batch = keys(500)
    assert all(seen.add(key) for key in batch)
    assert not any(seen.add(key) for key in batch)
    assert len(seen) == 500


@pytest.mark.parametrize(
    "new_set", [MemorySeenSet, lambda: BloomSeenSet(1000, 0.001)], ids=["memory", "bloom"]
)
def test_round_trip_through_bytes(new_set):
    seen = new_set()
    for key in keys(300):
        seen.add(key)
    copy = type(seen).from_bytes(seen.params(), seen.to_bytes())
    assert len(copy) == 300
    assert not any(copy.add(key) for key in keys(300))


def measured_false_positive_rate(seen: BloomSeenSet, probes: int = 50_000) -> float:
    return sum(key in seen for key in keys(probes, prefix="absent")) / probes


def test_bloom_false_positive_rate_within_error_rate_at_capacity():
    seen = BloomSeenSet(capacity=20_000, error_rate=0.01)
    for key in keys(20_000):
        seen.add(key)
    assert not seen.grown
    # 50,000 probes: 500 expected at 1%; the filter is built for half of that
    assert measured_false_positive_rate(seen) < 0.008
    assert seen.false_positive_rate < 0.01


def test_bloom_grows_past_capacity_and_keeps_error_rate():
    seen = BloomSeenSet(capacity=5_000, error_rate=0.01)
    for key in keys(30_000):
        seen.add(key)
    assert seen.grown
    assert seen.stats()["filters"] == 3  # 5,000 + 10,000 + 20,000
    assert seen.false_positive_rate < 0.01
    assert measured_false_positive_rate(seen) < 0.01


def test_bloom_size_per_url_at_capacity():
    seen = BloomSeenSet(capacity=100_000, error_rate=0.001)
    optimal_bits = -math.log(0.001) / math.log(2) ** 2  # 14.4 bits
    assert optimal_bits / 8 < seen.size_in_bytes / 100_000 < 2.5


def test_bloom_rejects_bad_sizes():
    with pytest.raises(ValueError, match="capacity"):
        BloomSeenSet(0, 0.001)
    with pytest.raises(ValueError, match="error rate"):
        BloomSeenSet(10, 1.5)


@pytest.mark.parametrize(
    "new_set", [MemorySeenSet, lambda: BloomSeenSet(1000, 0.001)], ids=["memory", "bloom"]
)
def test_journaled_store_survives_restarts_and_snapshots(tmp_path, new_set):
    signature = {"rules": 1}
    store = JournaledSeenStore(new_set, tmp_path, signature, snapshot_every=100)
    store.open()
    assert all(store.add(key) for key in keys(250))
    # 250 keys with a snapshot every 100: two snapshots and 50 keys in the journal
    assert store.journal.records == 50
    store.journal.close()  # as after kill -9: no final snapshot

    reopened = JournaledSeenStore(new_set, tmp_path, signature, snapshot_every=100)
    reopened.open()
    assert reopened.loaded_entries == 250
    assert not any(reopened.add(key) for key in keys(250))
    reopened.close()
    assert reopened.journal.records == 0


def test_journaled_store_refuses_other_rules(tmp_path):
    store = JournaledSeenStore(MemorySeenSet, tmp_path, {"DEDUP_URL_LOWERCASE_PATH": False})
    store.open()
    store.add(keys(1)[0])
    store.close()
    other = JournaledSeenStore(MemorySeenSet, tmp_path, {"DEDUP_URL_LOWERCASE_PATH": True})
    with pytest.raises(StateFileError, match="DEDUP_URL_LOWERCASE_PATH: False -> True"):
        other.open()


def test_journaled_store_refuses_a_foreign_backend_file(tmp_path):
    store = JournaledSeenStore(MemorySeenSet, tmp_path, {})
    store.open()
    store.close()
    bloom = JournaledSeenStore(lambda: BloomSeenSet(10, 0.01), tmp_path, {})
    with pytest.raises(StateFileError, match="expected 'bloom-seen-urls'"):
        bloom.open()


def test_journaled_store_reads_without_writing(tmp_path):
    store = JournaledSeenStore(MemorySeenSet, tmp_path, {"rules": 1}, snapshot_every=2)
    store.open()
    for key in (b"a" * 16, b"b" * 16, b"c" * 16):
        store.add(key)  # two in the snapshot, one in the journal
    before = {path.name: path.read_bytes() for path in tmp_path.iterdir()}
    reader = JournaledSeenStore(MemorySeenSet, tmp_path, {"rules": 1})
    reader.read()
    assert len(reader) == 3
    assert reader.journal.records == 1
    assert {path.name: path.read_bytes() for path in tmp_path.iterdir()} == before
    store.close()


def test_memory_store_forgets_and_bloom_cannot(tmp_path):
    store = JournaledSeenStore(MemorySeenSet, tmp_path, {"rules": 1})
    store.open()
    store.add(b"a" * 16)
    store.add(b"b" * 16)
    assert store.discard(b"a" * 16) is True
    assert store.discard(b"a" * 16) is False
    store.close()
    reopened = JournaledSeenStore(MemorySeenSet, tmp_path, {"rules": 1})
    reopened.open()
    assert len(reopened) == 1
    assert reopened.add(b"a" * 16) is True
    assert reopened.add(b"b" * 16) is False
    reopened.close()
    bloom = JournaledSeenStore(lambda: BloomSeenSet(100, 0.01), tmp_path / "bloom", {})
    with pytest.raises(TypeError, match="a bloom store cannot forget a key"):
        bloom.discard(b"a" * 16)
