"""Time slices of ``DEDUP_URL_TTL``, and the local seen set that forgets by them."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from crawler.state.persistence import StateFileError
from crawler.url.generations import Generations
from crawler.url.request_keys import request_key
from crawler.url.stores.bloom import BloomSeenSet
from crawler.url.stores.generational import GenerationalSeenSet
from crawler.url.stores.journaled import JournaledSeenStore
from crawler.url.stores.memory import MemorySeenSet
from tests.conftest import ManualClock


def key(number: int) -> bytes:
    return request_key("GET", f"https://example.com/{number}")


INNER_SETS = pytest.mark.parametrize(
    "new_set", [MemorySeenSet, lambda: BloomSeenSet(1000, 0.001)], ids=["memory", "bloom"]
)


def test_generation_arithmetic():
    clock = ManualClock(10_000.0)
    generations = Generations(ttl=3600, count=4, clock=clock)
    assert generations.slice_seconds == 900
    assert generations.current() == 11
    assert generations.live() == [11, 10, 9, 8, 7]
    assert generations.is_live(7) and not generations.is_live(6)
    assert generations.age(11) == 10_000 - 9900
    assert generations.expire_seconds == 900 * 6


@pytest.mark.parametrize(
    ("ttl", "count", "message"),
    [(0, 4, "positive number of seconds"), (-5, 4, "positive"), (60, 0, "at least 1")],
)
def test_generations_reject_bad_values(ttl, count, message):
    with pytest.raises(ValueError, match=message):
        Generations(ttl, count)


@given(
    recorded_at=st.floats(min_value=0, max_value=1e9, allow_nan=False),
    ttl=st.integers(min_value=1, max_value=10**6),
    count=st.integers(min_value=1, max_value=24),
    elapsed_share=st.floats(min_value=0, max_value=3, allow_nan=False),
)
def test_a_key_is_forgotten_between_ttl_and_one_slice_later(recorded_at, ttl, count, elapsed_share):
    clock = ManualClock(recorded_at)
    generations = Generations(ttl, count, clock=clock)
    recorded_in = generations.current()
    clock.now = recorded_at + elapsed_share * ttl
    elapsed = clock.now - recorded_at
    live = generations.is_live(recorded_in)
    if elapsed < ttl * (1 - 1e-9):
        assert live
    if elapsed > (ttl + generations.slice_seconds) * (1 + 1e-9):
        assert not live


@INNER_SETS
def test_keys_are_forgotten_after_the_ttl_not_before(new_set):
    clock = ManualClock(0.0)
    seen = GenerationalSeenSet(new_set, Generations(ttl=100, count=4, clock=clock))
    assert seen.add(key(1)) is True
    clock.now = 60
    assert seen.add(key(2)) is True
    assert seen.add(key(1)) is False  # a repeat does not refresh the key
    clock.now = 99.9
    assert seen.add(key(1)) is False
    assert len(seen) == 2
    clock.now = 125  # the slice of key 1, [0, 25), is 5 slices old
    assert key(1) not in seen
    assert key(2) in seen
    assert seen.add(key(1)) is True
    assert seen.stats()["entries"] == 2
    assert seen.stats()["generations"] == 2
    assert [g["entries"] for g in seen.generation_stats()] == [1, 1]
    clock.now = 1000
    assert len(seen) == 0
    assert seen.stats() == {"entries": 0, "generations": 0, **_bloom_fields(seen)}


def _bloom_fields(seen: GenerationalSeenSet) -> dict[str, float]:
    return {"fill_ratio": 0.0, "false_positive_rate": 0.0} if seen.kind == "bloom" else {}


def test_bloom_generations_report_fill_and_combined_error_rate():
    clock = ManualClock(0.0)
    seen = GenerationalSeenSet(
        lambda: BloomSeenSet(100, 0.01), Generations(ttl=40, count=4, clock=clock)
    )
    for number in range(80):
        seen.add(key(number))
    clock.now = 10
    for number in range(80, 100):
        seen.add(key(number))
    stats = seen.stats()
    assert stats["generations"] == 2
    assert stats["fill_ratio"] == pytest.approx(0.8, abs=0.02)  # the fuller slice
    fuller, other = BloomSeenSet(100, 0.01), BloomSeenSet(100, 0.01)
    for number in range(80):
        fuller.add(key(number))
    for number in range(80, 100):
        other.add(key(number))
    either = 1 - (1 - fuller.false_positive_rate) * (1 - other.false_positive_rate)
    assert other.false_positive_rate > 0
    assert stats["false_positive_rate"] == pytest.approx(either, rel=1e-2)


@INNER_SETS
def test_persisted_generations_survive_restarts_and_expire_while_stopped(tmp_path, new_set):
    clock = ManualClock(0.0)
    signature = {"rules": 1}

    def store() -> JournaledSeenStore:
        generations = Generations(ttl=100, count=4, clock=clock)
        opened = JournaledSeenStore(
            lambda: GenerationalSeenSet(new_set, generations),
            tmp_path,
            signature,
            snapshot_every=3,
        )
        opened.open()
        return opened

    first = store()
    for number in range(5):  # a snapshot after 3, then 2 in the journal
        assert first.add(key(number))
    clock.now = 50
    assert first.add(key(5))  # journaled in a later slice; first is killed, not closed

    second = store()
    assert len(second) == 6
    assert not any(second.add(key(number)) for number in range(6))
    second.close()

    clock.now = 130  # the first five are past their TTL, key 5 is not
    third = store()
    assert len(third) == 1
    assert third.add(key(0)) is True
    assert third.add(key(5)) is False


def test_ttl_is_part_of_the_signature_of_a_state_dir(tmp_path):
    from scrapy.settings import Settings

    from crawler.url.configuration import url_rules_from_settings, url_signature

    rules = url_rules_from_settings(Settings())
    forever = MemorySeenSet()
    daily = GenerationalSeenSet(MemorySeenSet, Generations(86400, 4))
    JournaledSeenStore(MemorySeenSet, tmp_path, url_signature(rules, forever)).open()
    with pytest.raises(StateFileError, match="DEDUP_URL_TTL"):
        JournaledSeenStore(
            lambda: GenerationalSeenSet(MemorySeenSet, Generations(86400, 4)),
            tmp_path,
            url_signature(rules, daily),
        ).open()


def test_a_journal_record_without_generation_is_reported(tmp_path):
    generations = Generations(ttl=100, count=4, clock=ManualClock(0.0))
    store = JournaledSeenStore(
        lambda: GenerationalSeenSet(MemorySeenSet, generations), tmp_path, {"rules": 1}
    )
    store.open()
    store.add(key(1))
    store.journal.append(b"short")
    store.journal.close()
    reopened = JournaledSeenStore(
        lambda: GenerationalSeenSet(MemorySeenSet, generations), tmp_path, {"rules": 1}
    )
    with pytest.raises(StateFileError, match="is corrupt: a record of 5 bytes"):
        reopened.open()
