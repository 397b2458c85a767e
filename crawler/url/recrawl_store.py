"""Where the recrawl records of a crawl live on one machine: a map from request key to
the page's record and URL, kept in memory and, with a state directory, in a snapshot and a
journal beside the seen URLs (``recrawl.snapshot``, ``recrawl.journal``).

Each update of a record is journaled before it counts, so ``kill -9`` loses none; the
snapshot replaces the journal every *snapshot_every* updates and at :meth:`close`. Both
files record the rules the keys were made with, and a directory written with other rules
is refused (:class:`~crawler.state.persistence.StateFileError`), as the seen URLs are.

An entry is the request key (16 bytes), then one byte giving the length of the encoded
record (:func:`crawler.url.recrawl_records.encode`), the record, and the page's URL in
UTF-8: the URL is what lets a crawl request a page that is due when no link leads to it.
``scrapy dedup-forget --recrawl`` replaces a record with :data:`RESET`.

Nothing here imports Scrapy.
"""

from __future__ import annotations

import struct
from typing import TYPE_CHECKING, Any

from crawler.state.persistence import Journal, StateFileError, read_snapshot, write_snapshot
from crawler.url.recrawl_records import RecrawlRecord, decode, encode
from crawler.url.request_keys import KEY_SIZE

if TYPE_CHECKING:
    from collections.abc import Iterator, Mapping
    from pathlib import Path

__all__ = ["RESET", "RecordsByKey", "RecrawlStore"]

#: The record of a page reset: due now, and fetched as a page never seen (its first
#: fetch is at second 0 of the epoch, which no real fetch is).
RESET = RecrawlRecord(fetched_at=0, interval=0)

_ENTRY_SIZE = struct.Struct("<I")


class RecordsByKey:
    """What every store of recrawl records does the same way with its own :meth:`url` and
    :meth:`put`."""

    def url(self, key: bytes) -> str | None:
        raise NotImplementedError

    def put(self, key: bytes, url: str, record: RecrawlRecord) -> None:
        raise NotImplementedError

    def reset(self, key: bytes) -> bool:
        """Make the page of *key* due now, as if never fetched (:data:`RESET`: no
        validators, no hashes); whether it had a record. Its URL is kept: a crawl requests
        it when no link does."""
        url = self.url(key)
        if url is None:
            return False
        self.put(key, url, RESET)
        return True


class RecrawlStore(RecordsByKey):
    """Recrawl records by request key (see the module's documentation); in memory only
    when *state_dir* is ``None``.

    >>> store = RecrawlStore(None, {})
    >>> store.open()
    >>> store.put(bytes(16), "https://example.com/", RecrawlRecord(100, 3600))
    >>> store.get(bytes(16)).due_at
    3700
    >>> [url for _, url, _ in store.due(now=3700)], len(store)
    (['https://example.com/'], 1)
    """

    kind = "recrawl-records"
    shared = False

    def __init__(
        self,
        state_dir: Path | None,
        signature: Mapping[str, Any],
        *,
        snapshot_every: int = 100_000,
    ) -> None:
        self.state_dir = state_dir
        self.signature = dict(signature)
        self.snapshot_every = snapshot_every
        self._entries: dict[bytes, bytes] = {}
        self._journal: Journal | None = None
        self._snapshot_path: Path | None = None
        if state_dir is not None:
            self._snapshot_path = state_dir / "recrawl.snapshot"
            self._journal = Journal(
                state_dir / "recrawl.journal",
                self.kind,
                self.signature,
                snapshot=self._snapshot_path,
            )
        self._since_snapshot = 0

    def open(self) -> None:
        """Load the snapshot and replay the journal written after it."""
        if self._journal is None or self._snapshot_path is None:
            return
        self._snapshot_path.parent.mkdir(parents=True, exist_ok=True)
        self._load_snapshot()
        self._journal.open(self._replay)
        self._since_snapshot = self._journal.records

    def read(self) -> None:
        """Load the snapshot and the journal without writing, truncating or locking
        anything, e.g. while a crawl is using them (journal first: a snapshot written
        meanwhile holds what it held; a torn last record is left out)."""
        if self._journal is None:
            return
        records = self._journal.read()
        self._load_snapshot()
        for record in records:
            self._replay(record)

    def _load_snapshot(self) -> None:
        assert self._snapshot_path is not None
        snapshot = read_snapshot(self._snapshot_path, self.kind, self.signature)
        if snapshot is not None:
            self._load(snapshot[1], str(self._snapshot_path))

    def _load(self, payload: bytes, source: str) -> None:
        offset = 0
        while offset < len(payload):
            try:
                (size,) = _ENTRY_SIZE.unpack_from(payload, offset)
            except struct.error as exc:
                raise StateFileError(f"{source} is corrupt: an entry is cut short") from exc
            self._replay(payload[offset + _ENTRY_SIZE.size : offset + _ENTRY_SIZE.size + size])
            offset += _ENTRY_SIZE.size + size

    def _replay(self, entry: bytes) -> None:
        key, value = entry[:KEY_SIZE], entry[KEY_SIZE:]
        if len(key) != KEY_SIZE or not value or len(value) < 1 + value[0]:
            raise StateFileError(f"{self.state_dir}: a recrawl record is cut short")
        self._entries[key] = value

    def get(self, key: bytes) -> RecrawlRecord | None:
        """The record of *key*, or ``None``."""
        value = self._entries.get(key)
        return None if value is None else decode(value[1 : 1 + value[0]])

    def url(self, key: bytes) -> str | None:
        """The URL recorded with *key*, or ``None``."""
        value = self._entries.get(key)
        return None if value is None else value[1 + value[0] :].decode("utf-8", "surrogatepass")

    def put(self, key: bytes, url: str, record: RecrawlRecord) -> None:
        """Record *record* for *key*, whose page is at *url*; journaled before it returns
        (:exc:`OSError` when the disk refuses it: the record is then not changed)."""
        encoded = encode(record)
        value = bytes((len(encoded),)) + encoded + url.encode("utf-8", "surrogatepass")
        if self._journal is not None:
            self._journal.append(key + value)
            self._since_snapshot += 1
        self._entries[key] = value
        if self._journal is not None and self._since_snapshot >= self.snapshot_every:
            self.snapshot()

    def claim_if_due(self, key: bytes, now: int, lease: int) -> tuple[bool, RecrawlRecord | None]:
        """Whether the page of *key* is due at *now* (a seen page without a record is:
        seen before ``DEDUP_RECRAWL`` was on), and its record. One process uses the store:
        the caller remembers its claims, and *lease* is not needed."""
        record = self.get(key)
        return record is None or record.due_at <= now, record

    def due(self, now: int) -> Iterator[tuple[bytes, str, RecrawlRecord]]:
        """``(key, url, record)`` of every page due at *now*, in no particular order."""
        for key, value in list(self._entries.items()):
            record = decode(value[1 : 1 + value[0]])
            if record.due_at <= now:
                yield key, value[1 + value[0] :].decode("utf-8", "surrogatepass"), record

    def __len__(self) -> int:
        return len(self._entries)

    def disk_bytes(self) -> int:
        """What its files take on disk now (0 in memory only)."""
        total = 0
        for path in (self._snapshot_path, self._journal.path if self._journal else None):
            if path is not None and path.exists():
                total += path.stat().st_size
        return total

    def snapshot(self) -> None:
        """Write every record atomically, then empty the journal."""
        if self._journal is None or self._snapshot_path is None:
            return
        payload = b"".join(
            _ENTRY_SIZE.pack(KEY_SIZE + len(value)) + key + value
            for key, value in self._entries.items()
        )
        write_snapshot(self._snapshot_path, self.kind, self.signature, {}, payload)
        self._journal.restart()
        self._since_snapshot = 0

    def close(self) -> None:
        """Snapshot and close; does nothing unless :meth:`open` succeeded."""
        if self._journal is not None:
            self._journal.close_after(self.snapshot)
