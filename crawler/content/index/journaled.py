"""Persist the in-memory content index in a state directory: snapshot + journal (see
:mod:`crawler.state.persistence`)."""

from __future__ import annotations

import logging
import struct
from typing import TYPE_CHECKING, Any

from crawler.content.index.memory import (
    MINHASH_BYTES,
    DocumentTable,
    MemoryContentHashTable,
    MemoryFingerprintIndex,
)
from crawler.state.persistence import Journal, StateFileError, read_snapshot, write_snapshot

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from pathlib import Path

logger = logging.getLogger(__name__)

KIND = "content-index"
CONTENT_HASH_BYTES = 16
#: Journal record: document number, fingerprint, content hash, MinHash signature, numbers
#: signature, page size class, flags; then the key (UTF-8).
_RECORD = struct.Struct(f">QQ{CONTENT_HASH_BYTES}s{MINHASH_BYTES}sQBB")
_NEAR_INDEXED = 0x01
#: An entry for a near copy of a document (its fingerprint and content hash, the
#: document's key and signatures), not a document of its own.
_COPY = 0x02


class JournaledContentIndex:
    """A detector's documents, fingerprint index and content-hash table, kept on disk.

    * ``content-index.snapshot`` holds every document, replaced atomically every
      *snapshot_every* new documents and at :meth:`close`;
    * ``content-index.journal`` gets each new document as it is added (key, fingerprint,
      full content hash, MinHash and numbers signatures, page size), so ``kill -9`` loses
      none;
    * both record *signature*: a state directory written with other fingerprint rules
      raises :class:`~crawler.state.persistence.StateFileError` naming the difference, and a
      corrupt file is reported, never reset.
    """

    def __init__(
        self,
        state_dir: Path,
        signature: Mapping[str, Any],
        *,
        snapshot_every: int = 100_000,
    ) -> None:
        if snapshot_every < 1:
            raise ValueError(f"snapshot_every must be at least 1, got {snapshot_every!r}")
        self.signature = dict(signature)
        self.snapshot_path = state_dir / f"{KIND}.snapshot"
        self.journal = Journal(
            state_dir / f"{KIND}.journal", KIND, self.signature, snapshot=self.snapshot_path
        )
        self.snapshot_every = snapshot_every
        self.loaded_documents = 0
        self.replayed_documents = 0
        #: entries that are near copies of a document, not documents
        self.copies = 0
        self._since_snapshot = 0
        self._use(DocumentTable())

    def _use(
        self,
        documents: DocumentTable,
        index: MemoryFingerprintIndex | None = None,
        content_hashes: MemoryContentHashTable | None = None,
    ) -> None:
        self.documents = documents
        self.index = MemoryFingerprintIndex(documents) if index is None else index
        self.content_hashes = (
            MemoryContentHashTable(documents) if content_hashes is None else content_hashes
        )

    def open(self) -> None:
        """Load the snapshot and replay the journal written after it."""
        self.snapshot_path.parent.mkdir(parents=True, exist_ok=True)
        snapshot = read_snapshot(self.snapshot_path, KIND, self.signature)
        if snapshot is not None:
            self._load_snapshot(*snapshot)
        snapshot_documents = len(self.content_hashes)
        self.journal.open(self._replayer(snapshot_documents))
        self.loaded_documents = len(self.content_hashes)
        self.replayed_documents = self.loaded_documents - snapshot_documents
        self._since_snapshot = self.journal.records
        logger.info(
            "Loaded %(documents)d documents and %(copies)d near copies' entries from "
            "%(state_dir)s (%(replayed)d entries from the journal)",
            {
                "documents": len(self),
                "copies": self.copies,
                "state_dir": self.snapshot_path.parent,
                "replayed": self.replayed_documents,
            },
        )

    def read(self) -> None:
        """Load the snapshot and the journal without writing, truncating or locking
        anything, e.g. while a crawl is using them.

        The journal is read first: a snapshot written meanwhile holds its documents,
        which replay then skips by their document number.
        """
        records = self.journal.read()
        snapshot = read_snapshot(self.snapshot_path, KIND, self.signature)
        if snapshot is not None:
            self._load_snapshot(*snapshot)
        snapshot_documents = len(self.content_hashes)
        replay = self._replayer(snapshot_documents)
        for record in records:
            replay(record)
        self.loaded_documents = len(self.content_hashes)
        self.replayed_documents = self.loaded_documents - snapshot_documents

    def _replayer(self, snapshot_documents: int) -> Callable[[bytes], None]:
        """Adds one journal record to the loaded documents, in order."""

        def replay(record: bytes) -> None:
            number, fingerprint, content_hash, minhash, numbers, page_size, flags, key = (
                self._decode(record)
            )
            if number < snapshot_documents:
                return  # journaled before the snapshot that already holds it
            if number != len(self.content_hashes):
                raise StateFileError(
                    f"{self.journal.path} is corrupt: document {number} follows "
                    f"document {len(self.content_hashes) - 1}"
                )
            self._add_in_memory(key, fingerprint, content_hash, minhash, numbers, page_size, flags)

        return replay

    def _load_snapshot(self, params: dict[str, Any], payload: bytes) -> None:
        try:
            documents_size, index_size, hashes_size = (int(size) for size in params["sections"])
            if documents_size + index_size + hashes_size != len(payload):
                raise ValueError(
                    f"sections of {documents_size}, {index_size} and {hashes_size} bytes "
                    f"in a payload of {len(payload)}"
                )
            copies = int(params["copies"])
            documents = DocumentTable.from_bytes(payload[:documents_size])
            index_end = documents_size + index_size
            self._use(
                documents,
                MemoryFingerprintIndex.from_bytes(payload[documents_size:index_end], documents),
                MemoryContentHashTable.from_bytes(payload[index_end:], documents),
            )
            self.copies = copies
        except (KeyError, TypeError, ValueError) as exc:
            raise StateFileError(f"{self.snapshot_path} is corrupt: {exc}") from exc

    def _decode(self, record: bytes) -> tuple[int, int, bytes, bytes, int, int, int, str]:
        if len(record) < _RECORD.size:
            raise StateFileError(
                f"{self.journal.path} is corrupt: a record of {len(record)} bytes, "
                f"shorter than the {_RECORD.size} of its fixed part"
            )
        number, fingerprint, content_hash, minhash, numbers, page_size, flags = _RECORD.unpack_from(
            record
        )
        key = record[_RECORD.size :].decode("utf-8", "surrogatepass")
        return number, fingerprint, content_hash, minhash, numbers, page_size, flags, key

    def _add_in_memory(
        self,
        key: str,
        fingerprint: int,
        content_hash: bytes,
        minhash: bytes,
        numbers: int,
        page_size: int,
        flags: int,
    ) -> None:
        self.content_hashes.add(content_hash, key, fingerprint, minhash, numbers, page_size)
        if flags & _NEAR_INDEXED:
            self.index.add(key, fingerprint, minhash, numbers, page_size)
        if flags & _COPY:
            self.copies += 1

    def add(
        self,
        key: str,
        fingerprint: int,
        content_hash: bytes,
        *,
        near_indexed: bool,
        minhash: bytes | None = None,
        numbers: int = 0,
        page_size: int = 0,
        copy: bool = False,
    ) -> None:
        """Add a document to the content-hash table (and to the fingerprint index when
        *near_indexed*), or, with *copy*, an entry for a near copy of the document *key*;
        it survives a kill of the process once this returns."""
        if not self.journal.is_open:
            raise RuntimeError(f"the content index in {self.snapshot_path.parent} is not open")
        if len(content_hash) != CONTENT_HASH_BYTES:
            raise ValueError(
                f"a content hash has {CONTENT_HASH_BYTES} bytes, got {len(content_hash)}"
            )
        if minhash is None:
            minhash = bytes(MINHASH_BYTES)
        number = len(self.content_hashes)
        flags = (_NEAR_INDEXED if near_indexed else 0) | (_COPY if copy else 0)
        # journaled first: a write the disk refuses adds nothing, and numbers stay in order
        self.journal.append(
            _RECORD.pack(number, fingerprint, content_hash, minhash, numbers, page_size, flags)
            + key.encode("utf-8", "surrogatepass")
        )
        self._add_in_memory(key, fingerprint, content_hash, minhash, numbers, page_size, flags)
        self._since_snapshot += 1
        if self._since_snapshot >= self.snapshot_every:
            self.snapshot()

    @property
    def snapshot_due(self) -> bool:
        """Whether the next document added writes the whole snapshot."""
        return self._since_snapshot + 1 >= self.snapshot_every

    def snapshot(self) -> None:
        """Write every document atomically, then empty the journal."""
        sections = (
            self.documents.to_bytes(),
            self.index.to_bytes(),
            self.content_hashes.to_bytes(),
        )
        write_snapshot(
            self.snapshot_path,
            KIND,
            self.signature,
            {"sections": [len(section) for section in sections], "copies": self.copies},
            b"".join(sections),
        )
        # A kill between these two steps leaves a journal whose documents the snapshot
        # already holds: replay skips them by their document number.
        self.journal.restart()
        self._since_snapshot = 0

    def close(self) -> None:
        """Snapshot and close; does nothing unless :meth:`open` succeeded, so that state
        that failed to load is never overwritten."""
        self.journal.close_after(self.snapshot)

    def __len__(self) -> int:
        """The number of documents kept (entries for their near copies left out)."""
        return len(self.content_hashes) - self.copies
