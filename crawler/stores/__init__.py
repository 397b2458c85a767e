"""Seen-URL stores: where the dupefilter remembers the request keys it saw.

A store answers one question, atomically: "was this key new?" (:meth:`SeenSet.add`).
Keys are fixed-size digests (see :func:`crawler.request_keys.request_key`).

* :class:`~crawler.stores.memory.MemorySeenSet`: an exact set, ~70 bytes a key.
* :class:`~crawler.stores.bloom.BloomSeenSet`: a Bloom filter (pybloom-live),
  ~2 bytes a key at a 0.001 false-positive rate.
* :class:`~crawler.stores.journaled.JournaledSeenStore` makes either one
  persistent and crash-safe in a state directory.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from typing_extensions import Self


class SeenSet(Protocol):
    """An in-memory set of keys that can be written to and read from bytes."""

    kind: str

    def add(self, key: bytes) -> bool:
        """Remember *key*; return ``True`` when it was not there before."""

    def __len__(self) -> int: ...

    def stats(self) -> dict[str, float]:
        """Figures for the crawl stats (``dedup/url/<name>``)."""

    def params(self) -> dict[str, Any]:
        """What :meth:`from_bytes` needs besides the payload (JSON-serializable)."""

    def to_bytes(self) -> bytes: ...

    @classmethod
    def from_bytes(cls, params: dict[str, Any], payload: bytes) -> Self: ...
