"""When a page is due again: an interval of its own that grows while the page stays the
same and shrinks when it changes.

The rule follows the adaptive schedules of the crawlers that recrawl the web (Apache Nutch's
``AdaptiveFetchSchedule``, StormCrawler's ``AdaptiveScheduler``): after a fetch that found the
page unchanged (a ``304 Not Modified``, or a ``200`` whose main text has the hash kept), the
interval is multiplied by :attr:`RecrawlSchedule.grow`; after one that found it changed, by
:attr:`RecrawlSchedule.shrink`; always between a minimum and a maximum. A page seen for the
first time starts at :attr:`RecrawlSchedule.first`. After
:attr:`RecrawlSchedule.most_not_modified` not-modified answers in a row the next fetch goes
without validators, so that a server whose ``ETag`` never changes while its page does is
caught within that bound.

:func:`schedule_for` picks a host's schedule from glob patterns (``"*.news.example"``).

Nothing here imports Scrapy.
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Literal

from crawler.url.recrawl_records import RecrawlRecord

if TYPE_CHECKING:
    from collections.abc import Mapping

__all__ = ["FetchOutcome", "RecrawlSchedule", "schedule_for"]

#: What a fetch found: the page ``"new"`` (no record), ``"not_modified"`` (a 304),
#: ``"unchanged"`` (a 200 with the main text's hash kept) or ``"changed"``.
FetchOutcome = Literal["new", "not_modified", "unchanged", "changed"]

_HOUR, _DAY = 3600, 86_400


@dataclass(frozen=True)
class RecrawlSchedule:
    """The interval rule (see the module's documentation); seconds.

    The defaults: an hour at least (StormCrawler's minimum), two weeks at most (its
    maximum; Nutch allows a year), a day for a page met first, 1.5 times longer after an
    unchanged fetch (StormCrawler's; Nutch 1.4), half as long after a change (Nutch 0.8,
    StormCrawler back to the minimum: between the two), validators dropped after 8
    not-modified answers in a row.

    >>> schedule = RecrawlSchedule()
    >>> schedule.next_interval(86_400, "unchanged"), schedule.next_interval(86_400, "changed")
    (129600, 43200)
    >>> schedule.next_interval(1_000_000, "not_modified"), schedule.next_interval(4000, "changed")
    (1209600, 3600)
    """

    minimum: int = _HOUR
    maximum: int = 14 * _DAY
    first: int = _DAY
    grow: float = 1.5
    shrink: float = 0.5
    most_not_modified: int = 8

    def __post_init__(self) -> None:
        if not 0 < self.minimum <= self.first <= self.maximum:
            raise ValueError(
                "a recrawl schedule needs 0 < minimum <= first <= maximum, got "
                f"minimum={self.minimum!r}, first={self.first!r}, maximum={self.maximum!r}"
            )
        if not self.grow >= 1:
            raise ValueError(f"grow must be 1 or more, got {self.grow!r}")
        if not 0 < self.shrink <= 1:
            raise ValueError(f"shrink must be above 0 and at most 1, got {self.shrink!r}")
        if self.most_not_modified < 1:
            raise ValueError(f"most_not_modified must be 1 or more, got {self.most_not_modified!r}")

    def next_interval(self, interval: int, outcome: FetchOutcome) -> int:
        """The interval after a fetch of a page whose interval was *interval*."""
        if outcome == "new":
            return self.first
        factor = self.shrink if outcome == "changed" else self.grow
        return min(self.maximum, max(self.minimum, round(interval * factor)))

    def sends_validators(self, record: RecrawlRecord) -> bool:
        """Whether the next fetch of *record*'s page is conditional: it has a validator,
        and fewer than :attr:`most_not_modified` not-modified answers came in a row."""
        has_validator = record.etag is not None or record.last_modified is not None
        return has_validator and record.not_modified < self.most_not_modified

    def after_fetch(
        self,
        record: RecrawlRecord | None,
        now: int,
        outcome: FetchOutcome,
        *,
        etag: bytes | None = None,
        last_modified: int | None = None,
        content_hash: int | None = None,
        body_hash: int | None = None,
    ) -> RecrawlRecord:
        """The record after a fetch at *now* that found *outcome*, with the validators,
        main-text hash and body hash it brought. A 304 keeps what the record knew unless it
        sends new validators, and counts one more not-modified answer; any 200 resets that
        count.

        >>> schedule = RecrawlSchedule()
        >>> first = schedule.after_fetch(None, 1000, "new", etag=b'"a"', content_hash=7)
        >>> first.interval, first.not_modified
        (86400, 0)
        >>> again = schedule.after_fetch(first, 90_000, "not_modified")
        >>> again.interval, again.not_modified, again.etag, again.content_hash
        (129600, 1, b'"a"', 7)
        """
        if record is None or outcome == "new":
            return RecrawlRecord(
                now, self.first, etag, last_modified, content_hash, body_hash=body_hash
            )
        interval = self.next_interval(record.interval, outcome)
        if outcome == "not_modified":
            return replace(
                record,
                fetched_at=now,
                interval=interval,
                etag=etag if etag is not None else record.etag,
                last_modified=last_modified if last_modified is not None else record.last_modified,
                not_modified=min(record.not_modified + 1, 255),
            )
        return RecrawlRecord(now, interval, etag, last_modified, content_hash, body_hash=body_hash)


def schedule_for(
    host: str, overrides: Mapping[str, RecrawlSchedule], default: RecrawlSchedule
) -> RecrawlSchedule:
    """The schedule of *host*: the first of *overrides* whose glob pattern matches it (in
    their order, case-insensitive), else *default*.

    >>> news = RecrawlSchedule(minimum=600, first=3600, maximum=86_400)
    >>> schedule_for("www.news.example", {"*.news.example": news}, RecrawlSchedule()) is news
    True
    >>> schedule_for("shop.example", {"*.news.example": news}, RecrawlSchedule()).minimum
    3600
    """
    host = host.lower()
    for pattern, schedule in overrides.items():
        if fnmatch.fnmatchcase(host, pattern.lower()):
            return schedule
    return default
