"""Seen-URL stores: where the dupefilter remembers the request keys it saw.

A store answers one question, atomically: "was this key new?" (:meth:`SeenSet.add`).
Keys are fixed-size digests (see :func:`crawler.url.request_keys.request_key`).

* :class:`~crawler.url.stores.memory.MemorySeenSet`: an exact set, ~70 bytes a key.
* :class:`~crawler.url.stores.bloom.BloomSeenSet`: a Bloom filter (pybloom-live),
  ~2 bytes a key at a 0.001 false-positive rate.
* :class:`~crawler.url.stores.generational.GenerationalSeenSet` makes either one
  forget keys after a time to live, in whole time slices;
* :class:`~crawler.url.stores.journaled.JournaledSeenStore` makes either one
  persistent and crash-safe in a state directory.
"""

from __future__ import annotations

from typing import Any, Protocol


class SeenSet(Protocol):
    """An in-memory set of keys that can be written to and read from bytes."""

    kind: str

    def add(self, key: bytes) -> bool:
        """Remember *key*; return ``True`` when it was not there before."""

    def __contains__(self, key: bytes) -> bool: ...

    def __len__(self) -> int: ...

    def stats(self) -> dict[str, float]:
        """Figures for the crawl stats (``dedup/url/<name>``)."""

    def params(self) -> dict[str, Any]:
        """What :meth:`from_bytes` needs besides the payload (JSON-serializable)."""

    def journal_record(self, key: bytes) -> bytes:
        """What the journal records for a key :meth:`add` just recorded."""

    def replay(self, record: bytes) -> None:
        """Record again what :meth:`journal_record` wrote; ``ValueError`` for a bad record."""

    def to_bytes(self) -> bytes: ...

    def from_bytes(self, params: dict[str, Any], payload: bytes) -> SeenSet:
        """A set of the same kind holding *payload* (a classmethod where it can be)."""
