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

Components do not use a set directly: they use a :class:`SeenStore`, whatever the
backend, as :func:`crawler.url.configuration.seen_store_from_settings` builds it: a
journaled store, a set kept in memory only
(:class:`~crawler.url.stores.unpersisted.UnpersistedSeenStore`) or a store shared in
Redis (:class:`~crawler.url.stores.shared.SharedSeenStore`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

    from crawler.redis.connection import RedisConnection


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


class SeenStore(Protocol):
    """What a component keeps the keys it saw in, whatever the backend: opened once,
    asked and added to, closed once."""

    @property
    def stats_name(self) -> str:
        """The name its figures go under in the crawl stats (``dedup/<stats_name>/...``)
        and in summaries: the kind of set that holds the keys (``"bloom"``, ``"redis-set"``...)."""

    @property
    def shared(self) -> bool:
        """Whether other workers share it: :meth:`add` is then one atomic call to a server
        that may fail (:class:`~crawler.redis.connection.RedisUnavailable`)."""

    @property
    def connection(self) -> RedisConnection | None:
        """The connection of a shared store, ``None`` for a local one."""

    @property
    def state_dir(self) -> Path | None:
        """The state directory a local store is persisted in (locked while it is open),
        ``None`` for a store kept in memory only or shared."""

    @property
    def signature(self) -> dict[str, Any]:
        """The rules its keys were made with, by setting name: recorded with what it
        persists, and checked when it opens."""

    def open(self) -> None:
        """Load or claim what earlier runs left, checking the rules it was written with."""

    def add(self, key: bytes, on_new: Callable[[], object] | None = None, /) -> bool:
        """Remember *key*; return ``True`` when it was not there before. For a new key,
        *on_new* runs before a persisted store makes the key durable (what it records is
        then never missing for a key a restart finds seen); a shared store runs it after."""

    def __contains__(self, key: bytes) -> bool: ...

    def __len__(self) -> int: ...

    def stats(self) -> dict[str, float]:
        """Figures for the crawl stats (``dedup/<stats_name>/<name>``)."""

    def close(self) -> None:
        """Persist what it holds (a local store) and let go of it."""

    def clear(self) -> None:
        """What a scheduler's flush asks: a shared store forgets every key, for every
        worker; a local store keeps its keys (its state directory is its owner's to delete)."""

    def whereabouts(self) -> str:
        """Where it keeps the keys, for log lines (``"in Redis at ..."``, ``"in <dir>"``)."""
