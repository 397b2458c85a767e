"""Persist a seen set in a state directory: snapshot + journal (see
:mod:`crawler.state.persistence`)."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from crawler.state.persistence import Journal, StateFileError, read_snapshot, write_snapshot
from crawler.url.stores.holding import KeysHeldElsewhere

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from pathlib import Path

    from crawler.redis.connection import RedisConnection
    from crawler.url.stores import SeenSet

logger = logging.getLogger(__name__)


def check_state_files(state_dir: Path, name: str = "seen-urls") -> None:
    """Raise :class:`~crawler.state.persistence.StateFileError` when the journal or the snapshot
    of the store *name* in *state_dir* is missing beside the other (headers only)."""
    snapshot = state_dir / f"{name}.snapshot"
    Journal(state_dir / f"{name}.journal", name, {}, snapshot=snapshot).check_files()


class JournaledSeenStore(KeysHeldElsewhere):
    """A :class:`~crawler.url.stores.SeenSet` that survives restarts and kills (a
    :class:`~crawler.url.stores.SeenStore`).

    * ``<name>.snapshot`` holds the whole set, replaced atomically every
      *snapshot_every* new keys and at :meth:`close`;
    * ``<name>.journal`` gets each new key as it is added, so ``kill -9``
      loses none;
    * both record *signature*: a state directory written with other rules
      raises :class:`~crawler.state.persistence.StateFileError` naming the difference.
    """

    shared = False
    connection: RedisConnection | None = None

    def __init__(
        self,
        new_set: Callable[[], SeenSet],
        state_dir: Path,
        signature: Mapping[str, Any],
        *,
        name: str = "seen-urls",
        snapshot_every: int = 100_000,
    ) -> None:
        self._new_set = new_set
        self.seen = new_set()
        self.kind = f"{self.seen.kind}-{name}"
        self.signature = dict(signature)
        self.snapshot_path = state_dir / f"{name}.snapshot"
        self.state_dir: Path | None = state_dir
        self.journal = Journal(
            state_dir / f"{name}.journal", self.kind, self.signature, snapshot=self.snapshot_path
        )
        self.snapshot_every = snapshot_every
        self.loaded_entries = 0
        self._since_snapshot = 0

    def holder(self) -> SeenSet:
        return self.seen

    def open(self) -> None:
        """Load the snapshot and replay the journal written after it."""
        self.snapshot_path.parent.mkdir(parents=True, exist_ok=True)
        self._load_snapshot()
        self.journal.open(self._replayer())
        self._since_snapshot = self.journal.records
        self.loaded_entries = len(self.seen)

    def read(self) -> None:
        """Load the snapshot and the journal without writing, truncating or
        locking anything, e.g. while a crawl is using them.

        The journal is read first: a snapshot the crawl writes meanwhile holds
        every key of that journal, and replaying a key twice changes nothing.
        A torn last journal record is left out (see ``journal.torn_bytes``).
        """
        records = self.journal.read()
        self._load_snapshot()
        replay = self._replayer()
        for record in records:
            replay(record)
        self.loaded_entries = len(self.seen)

    def _load_snapshot(self) -> None:
        snapshot = read_snapshot(self.snapshot_path, self.kind, self.signature)
        if snapshot is not None:
            params, payload = snapshot
            try:
                self.seen = self.seen.from_bytes(params, payload)
            except (KeyError, ValueError) as exc:
                raise StateFileError(f"{self.snapshot_path} is corrupt: {exc}") from exc

    def _replayer(self) -> Callable[[bytes], None]:
        """Adds one journal record to the loaded set."""
        seen = self.seen

        def replay(record: bytes) -> None:
            try:
                seen.replay(record)
            except ValueError as exc:
                raise StateFileError(f"{self.journal.path} is corrupt: {exc}") from exc

        return replay

    def add(self, key: bytes, before_journal: Callable[[], object] | None = None, /) -> bool:
        """Add *key*; return ``True`` when it is new.

        *before_journal* runs for a new key before the key is journaled: what
        it records durably (e.g. the crash-safe frontier entry) is then never
        missing for a key that a restart will consider seen.
        """
        if not self.seen.add(key):
            return False
        if before_journal is not None:
            before_journal()
        self.journal.append(self.seen.journal_record(key))
        self._since_snapshot += 1
        if self._since_snapshot >= self.snapshot_every:
            self.snapshot()
        return True

    def snapshot(self) -> None:
        """Write the whole set atomically, then empty the journal."""
        write_snapshot(
            self.snapshot_path,
            self.kind,
            self.signature,
            self.seen.params(),
            self.seen.to_bytes(),
        )
        # A kill between these two steps leaves a journal whose keys the
        # snapshot already holds: replaying them again changes nothing.
        self.journal.restart()
        self._since_snapshot = 0

    def close(self) -> None:
        """Snapshot and close; does nothing unless :meth:`open` succeeded, so
        that state that failed to load is never overwritten."""
        self.journal.close_after(self.snapshot)

    def clear(self) -> None:
        """Nothing: a journaled store keeps its keys (see :meth:`SeenStore.clear`)."""

    def whereabouts(self) -> str:
        return f"in {self.snapshot_path.parent}"

    def discard(self, key: bytes) -> bool:
        """Forget *key* (an exact set only); return whether it was there.

        The journal cannot record a removal: the change is durable only once
        :meth:`snapshot` (or :meth:`close`) has run.
        """
        discard = getattr(self.seen, "discard", None)
        if discard is None:
            raise TypeError(f"a {self.seen.kind} store cannot forget a key")
        return bool(discard(key))
