"""The recrawl record's encoding and the interval rule (pure logic: the crawls are in
tests/crawls/test_recrawl.py)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from crawler.url.recrawl_records import (
    MAX_ETAG_BYTES,
    RecrawlRecord,
    decode,
    encode,
    etag_to_keep,
    last_modified_seconds,
)
from crawler.url.recrawl_schedule import RecrawlSchedule, schedule_for

SECONDS = st.integers(0, 2**32 - 1)
RECORDS = st.builds(
    RecrawlRecord,
    fetched_at=SECONDS,
    interval=SECONDS,
    etag=st.none() | st.binary(min_size=1, max_size=MAX_ETAG_BYTES),
    last_modified=st.none() | SECONDS,
    content_hash=st.none() | st.integers(0, 2**64 - 1),
    not_modified=st.integers(0, 255),
    body_hash=st.none() | st.integers(0, 2**64 - 1),
)


@given(RECORDS)
def test_a_record_reads_back_as_written(record: RecrawlRecord) -> None:
    data = encode(record)
    assert decode(data) == record
    assert len(data) == (
        11
        + (4 if record.last_modified is not None else 0)
        + (8 if record.content_hash is not None else 0)
        + (8 if record.body_hash is not None else 0)
        + (1 + len(record.etag) if record.etag is not None else 0)
    )


def test_a_record_with_a_usual_etag_takes_under_50_bytes() -> None:
    etag = etag_to_keep('W/"5f3a9c2e-1c2b4"')
    record = RecrawlRecord(1_764_900_000, 86_400, etag, 1_764_800_000, 2**63 + 5)
    assert len(encode(record)) == 11 + 4 + 8 + 1 + 18


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"", "at least 11 bytes, not 0"),
        (bytes([9, 0]) + bytes(9), "version 9 is not known"),
        (encode(RecrawlRecord(1, 2, last_modified=3))[:-1], "cut short"),
        (encode(RecrawlRecord(1, 2, etag=b'"abc"'))[:-1], "cut short"),
        (encode(RecrawlRecord(1, 2)) + b"\0", "1 bytes too many"),
    ],
)
def test_anything_else_is_refused_with_what_is_wrong(data: bytes, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        decode(data)


def test_an_etag_too_long_to_keep_is_dropped_not_cut() -> None:
    assert etag_to_keep(b"x" * MAX_ETAG_BYTES) == b"x" * MAX_ETAG_BYTES
    assert etag_to_keep(b"x" * (MAX_ETAG_BYTES + 1)) is None
    with pytest.raises(ValueError, match="use etag_to_keep"):
        RecrawlRecord(0, 60, etag=b"x" * (MAX_ETAG_BYTES + 1))


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("fetched_at", -1),
        ("interval", 2**32),
        ("content_hash", 2**64),
        ("body_hash", -1),
        ("not_modified", 256),
    ],
)
def test_a_record_out_of_its_bounds_names_the_field(field: str, value: int) -> None:
    fields = {"fetched_at": 0, "interval": 60, field: value}
    with pytest.raises(ValueError, match=f"^{field} must be"):
        RecrawlRecord(**fields)


@pytest.mark.parametrize(
    ("header", "seconds"),
    [
        ("Sun, 06 Nov 1994 08:49:37 GMT", 784_111_777),  # the three forms RFC 9110 accepts
        ("Sunday, 06-Nov-94 08:49:37 GMT", 784_111_777),
        ("Sun Nov  6 08:49:37 1994", 784_111_777),
        ("Sun, 06 Nov 1994 08:49:37 +0100", 784_108_177),
        ("0", None),
        ("", None),
        ("Sun, 06 Nov 1894 08:49:37 GMT", None),  # before the epoch
    ],
)
def test_last_modified_is_read_as_a_second_or_not_at_all(header: str, seconds: int | None) -> None:
    assert last_modified_seconds(header) == seconds


def test_a_records_validators_repeat_what_the_server_sent() -> None:
    record = RecrawlRecord(0, 60, etag=b'W/"a1"', last_modified=784_111_777)
    assert record.validators() == {
        "If-None-Match": 'W/"a1"',
        "If-Modified-Since": "Sun, 06 Nov 1994 08:49:37 GMT",
    }
    assert RecrawlRecord(0, 60).validators() == {}


def test_an_unchanged_page_waits_longer_each_time_up_to_the_maximum() -> None:
    schedule = RecrawlSchedule(minimum=100, first=1000, maximum=5000, grow=2, shrink=0.25)
    intervals = [schedule.first]
    for _ in range(4):
        intervals.append(schedule.next_interval(intervals[-1], "not_modified"))
    assert intervals == [1000, 2000, 4000, 5000, 5000]
    assert schedule.next_interval(1000, "unchanged") == 2000  # a 200 with the same text


def test_a_changed_page_comes_back_sooner_down_to_the_minimum() -> None:
    schedule = RecrawlSchedule(minimum=100, first=1000, maximum=5000, grow=2, shrink=0.25)
    assert [schedule.next_interval(n, "changed") for n in (5000, 1000, 200)] == [1250, 250, 100]


def test_validators_are_dropped_after_most_not_modified_answers_in_a_row() -> None:
    schedule = RecrawlSchedule(most_not_modified=2)
    record = schedule.after_fetch(None, 0, "new", etag=b'"v1"', content_hash=1)
    sent = []
    for now in (100_000, 300_000, 600_000):
        sent.append(schedule.sends_validators(record))
        record = schedule.after_fetch(record, now, "not_modified")
    assert sent == [True, True, False]
    # the fetch without validators found the page changed: validators and count start over
    record = schedule.after_fetch(record, 900_000, "changed", etag=b'"v2"', content_hash=2)
    assert (record.etag, record.content_hash, record.not_modified) == (b'"v2"', 2, 0)
    assert schedule.sends_validators(record)


def test_a_304_keeps_what_the_record_knew_unless_it_sends_new_validators() -> None:
    schedule = RecrawlSchedule()
    record = schedule.after_fetch(None, 0, "new", etag=b'"a"', last_modified=5, content_hash=9)
    again = schedule.after_fetch(record, 90_000, "not_modified", etag=b'"b"')
    assert (again.etag, again.last_modified, again.content_hash) == (b'"b"', 5, 9)
    assert again.fetched_at == 90_000 and again.interval == 129_600


def test_a_page_without_validators_is_fetched_in_full() -> None:
    schedule = RecrawlSchedule()
    assert not schedule.sends_validators(schedule.after_fetch(None, 0, "new", content_hash=3))


@pytest.mark.parametrize(
    ("options", "named"),
    [
        ({"minimum": 0}, "minimum=0"),
        ({"minimum": 10, "first": 5}, "first=5"),
        ({"first": 10**9}, "first=1000000000"),
        ({"grow": 0.9}, "grow must be"),
        ({"shrink": 0}, "shrink must be"),
        ({"shrink": 1.5}, "shrink must be"),
        ({"most_not_modified": 0}, "most_not_modified must be"),
    ],
)
def test_a_schedule_that_cannot_work_is_refused(options: dict[str, float], named: str) -> None:
    with pytest.raises(ValueError, match=named):
        RecrawlSchedule(**options)  # type: ignore[arg-type]


def test_a_hosts_schedule_is_the_first_pattern_that_matches_it() -> None:
    default, news, everything = (
        RecrawlSchedule(),
        RecrawlSchedule(minimum=60),
        RecrawlSchedule(minimum=7200),
    )
    overrides = {"*.News.example": news, "*": everything}
    assert schedule_for("WWW.news.example", overrides, default) is news
    assert schedule_for("shop.example", overrides, default) is everything
    assert schedule_for("shop.example", {"*.news.example": news}, default) is default
