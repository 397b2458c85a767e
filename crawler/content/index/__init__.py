"""Where the content dedup remembers the documents it kept.

Two small interfaces, so that a shared backend (Redis) can stand in for the local one:

* :class:`FingerprintIndex`: 64-bit SimHash fingerprints by key, queried by Hamming
  distance (at most :data:`MAX_QUERY_DISTANCE`);
* :class:`ContentHashTable`: content hash -> the first document that had it (exact
  duplicates).

The in-memory implementations, compact enough for millions of documents, are in
:mod:`crawler.content.index.memory`; :mod:`crawler.content.index.journaled` persists them in a state
directory. The banded layout is fixed here, because every backend must find the same
neighbours: :data:`BAND_COUNT` bands of :data:`BAND_BITS` bits. By the pigeonhole
principle, two fingerprints that differ in at most ``BAND_COUNT - 1`` bits agree exactly
on at least one band, so looking up each band of a fingerprint finds every neighbour
within that distance; beyond it, recall is no longer guaranteed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

FINGERPRINT_BITS = 64
BAND_COUNT = 4
BAND_BITS = FINGERPRINT_BITS // BAND_COUNT
BAND_MASK = (1 << BAND_BITS) - 1
#: The largest Hamming distance a banded query finds every neighbour within.
MAX_QUERY_DISTANCE = BAND_COUNT - 1

_FINGERPRINT_LIMIT = 1 << FINGERPRINT_BITS


class FingerprintIndex(Protocol):
    """Documents' 64-bit fingerprints, looked up by Hamming distance."""

    def add(self, key: str, fingerprint: int) -> None:
        """Remember that the document *key* has *fingerprint*."""

    def query(
        self, fingerprint: int, max_distance: int = MAX_QUERY_DISTANCE
    ) -> list[tuple[str, int]]:
        """Return ``(key, distance)`` for every document within *max_distance* bits
        of *fingerprint*, nearest first, then in the order they were added."""

    def nearest(
        self, fingerprint: int, max_distance: int = MAX_QUERY_DISTANCE
    ) -> tuple[str, int, int] | None:
        """Return ``(key, fingerprint, distance)`` of the first document :meth:`query`
        would return, or ``None``."""

    def __len__(self) -> int: ...


class ContentHashTable(Protocol):
    """Content hashes of documents, for exact duplicates."""

    def add(self, content_hash: bytes, key: str, fingerprint: int) -> None:
        """Remember that the document *key*, of *fingerprint*, has *content_hash*."""

    def get(self, content_hash: bytes) -> tuple[str, int] | None:
        """Return ``(key, fingerprint)`` of the first document added with
        *content_hash*, or ``None``."""

    def __len__(self) -> int: ...


@dataclass(frozen=True)
class SharedMatch:
    """What the shared index's ``check_and_add`` (:mod:`crawler.content.index.redis`) found:
    a match (*accepted*) or the nearest candidate that verification rejected."""

    accepted: bool
    key: str
    fingerprint: int
    distance: int
    stage: str
    similarity: float
    numbers_differ: bool = False
    page_sizes_differ: bool = False


def band_layout() -> dict[str, int]:
    """The band layout, as recorded in a state signature.

    >>> band_layout()
    {'fingerprint_bits': 64, 'band_count': 4, 'band_bits': 16}
    """
    return {
        "fingerprint_bits": FINGERPRINT_BITS,
        "band_count": BAND_COUNT,
        "band_bits": BAND_BITS,
    }


def check_fingerprint(fingerprint: int) -> None:
    """Raise ``ValueError`` unless *fingerprint* is an unsigned 64-bit integer.

    >>> check_fingerprint(2**64)
    Traceback (most recent call last):
    ...
    ValueError: a fingerprint is an integer in [0, 2**64), got 18446744073709551616
    """
    if not isinstance(fingerprint, int) or not 0 <= fingerprint < _FINGERPRINT_LIMIT:
        raise ValueError(f"a fingerprint is an integer in [0, 2**64), got {fingerprint!r}")


def check_max_distance(max_distance: int) -> None:
    """Raise ``ValueError`` unless a banded query can honour *max_distance*.

    >>> check_max_distance(4)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: max_distance must be between 0 and 3, got 4: 4 bands of 16 bits find ...
    """
    if not isinstance(max_distance, int) or not 0 <= max_distance <= MAX_QUERY_DISTANCE:
        raise ValueError(
            f"max_distance must be between 0 and {MAX_QUERY_DISTANCE}, got {max_distance!r}: "
            f"{BAND_COUNT} bands of {BAND_BITS} bits find every neighbour only within "
            f"{MAX_QUERY_DISTANCE} bits"
        )
