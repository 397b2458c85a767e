"""The crash-safe frontier: requests marked seen but not yet finished.

Once a URL is in the seen store, the dupefilter filters it for good. If the
crawl is killed while that request still waits in the scheduler's queue (which
Scrapy only writes to disk on a clean stop), the page would never be crawled.
The frontier journals each newly scheduled request (its key and serialized
form) and each finished key, so that the next start knows what to schedule
again. As the items of a request not yet finished leave the item pipelines, how
many of them (from the first) have is journaled too: scheduled again, the request
passes on only the items after those.
"""

from __future__ import annotations

import struct
from typing import TYPE_CHECKING, Any

from crawler.state.persistence import Journal, StateFileError
from crawler.url.request_keys import KEY_SIZE

if TYPE_CHECKING:
    from collections.abc import Mapping
    from pathlib import Path

_SCHEDULED = b"S"
_FINISHED = b"F"
#: So many items of the request, from the first, left the item pipelines; the request
#: is not finished (its links, or later items, may still be on their way).
_ITEMS_SETTLED = b"I"
_ITEM_COUNT = struct.Struct(">I")
#: Written at a clean stop when the scheduler persisted its own queue.
_QUEUE_PERSISTED = b"Q"


def journal_path(state_dir: Path) -> Path:
    """Where the frontier of the crawl with *state_dir* keeps its journal."""
    return state_dir / "frontier.journal"


def check_files(state_dir: Path) -> None:
    """Raise :class:`~crawler.state.persistence.StateFileError` when the frontier's journal in
    *state_dir* is missing (though the directory held it), damaged or not writable: a
    crawl checks this while it is built."""
    Journal(journal_path(state_dir), "frontier", {}).check_files()


class Frontier:
    """Journal of scheduled and finished request keys in *state_dir*."""

    def __init__(self, state_dir: Path, signature: Mapping[str, Any]) -> None:
        self.journal = Journal(journal_path(state_dir), "frontier", signature)
        #: For the requests :meth:`open` returned: how many items of each, from the
        #: first, had left the item pipelines (see :meth:`items_settled`), by key.
        self.settled_items: dict[bytes, int] = {}

    def open(self) -> tuple[list[bytes], bool]:
        """Load what the last run left unfinished.

        Returns the serialized requests that were scheduled and never
        finished, in scheduling order (how many items of each were written is in
        :attr:`settled_items`), and whether the last run stopped
        cleanly with the scheduler's queue saved (then that queue still holds
        them and they must not be scheduled twice). The journal is compacted
        to just those requests.
        """
        pending: dict[bytes, bytes] = {}
        settled_items: dict[bytes, int] = {}
        queue_persisted = False

        def replay(record: bytes) -> None:
            nonlocal queue_persisted
            tag, key = record[:1], record[1 : 1 + KEY_SIZE]
            if tag == _QUEUE_PERSISTED:
                queue_persisted = True
                return
            queue_persisted = False
            if len(key) != KEY_SIZE:
                raise StateFileError(f"{self.journal.path} is corrupt: a record without a key")
            if tag == _SCHEDULED:
                pending[key] = record
            elif tag == _FINISHED:
                pending.pop(key, None)
                settled_items.pop(key, None)
            elif tag == _ITEMS_SETTLED:
                count = record[1 + KEY_SIZE :]
                if len(count) != _ITEM_COUNT.size:
                    raise StateFileError(
                        f"{self.journal.path} is corrupt: an item count of {len(count)} bytes"
                    )
                if key in pending:
                    settled_items[key] = max(settled_items.get(key, 0), *_ITEM_COUNT.unpack(count))
            else:
                raise StateFileError(f"{self.journal.path} is corrupt: unknown record type {tag!r}")

        self.journal.open(replay)
        self.settled_items = settled_items
        self.journal.restart(
            [
                *pending.values(),
                *(self._items_record(key, count) for key, count in settled_items.items()),
            ]
        )
        if queue_persisted:
            self.journal.append(_QUEUE_PERSISTED)
        return [record[1 + KEY_SIZE :] for record in pending.values()], queue_persisted

    def stopped_uncleanly(self) -> bool:
        """Whether the last run left requests journaled without a clean stop after them
        (read-only: :meth:`open` is still to come). Scrapy's own request queue is then
        not to be trusted: a kill can tear its files, and what it held is here."""
        records = self.journal.read()
        return bool(records) and records[-1][:1] != _QUEUE_PERSISTED

    def scheduled(self, key: bytes, serialized_request: bytes) -> None:
        self.journal.append(_SCHEDULED + key + serialized_request)

    def finished(self, key: bytes) -> None:
        self.journal.append(_FINISHED + key)

    def items_settled(self, key: bytes, count: int) -> None:
        """The first *count* items of the request *key* left the item pipelines (written
        by the feeds, dropped or failed), and the request is not finished: scheduled
        again after a kill, it is not to pass them on a second time."""
        self.journal.append(self._items_record(key, count))

    @staticmethod
    def _items_record(key: bytes, count: int) -> bytes:
        return _ITEMS_SETTLED + key + _ITEM_COUNT.pack(count)

    def close(self, *, crawl_finished: bool, queue_persisted: bool) -> None:
        """Compact the journal at a clean stop.

        A finished crawl has nothing pending. A stop with the scheduler's
        queue saved on disk is marked, so that the next start leaves those
        requests to the queue.
        """
        if not self.journal.is_open:
            return
        try:
            if crawl_finished:
                self.journal.restart()
            elif queue_persisted:
                self.journal.append(_QUEUE_PERSISTED)
        finally:
            self.journal.close()
