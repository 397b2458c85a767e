"""Crash-safe local state: a checksummed snapshot plus an append-only journal.

Every local store (seen URLs, the crash-safe frontier) persists the same way:

* a **snapshot** file holds the whole state; it is written to a temporary file,
  flushed to disk and renamed over the old one, so a reader sees either the
  old snapshot or the new one, never half of one;
* a **journal** file holds the records added since that snapshot; each record
  is appended with a single ``write()`` system call as it happens, so killing
  the process (``kill -9``) loses nothing that was recorded before the kill;
* both files start with a header naming the kind of state and the *rules
  signature* it was built with (canonicalization and sizing options); a file
  of another kind, written with other rules, or whose checksum does not match,
  raises :class:`StateFileError` naming the file and what differs. State is
  never reset silently.

A record cut short by a kill (a torn tail) is reported and dropped; a damaged
record before the tail is corruption and raises. A journal names the snapshot it
follows: either file missing while the other says it exists is refused, naming the
file and the ways out. A directory also lists every state file it has held
(``state-files.json``), so that one deleted later, its companion with it, is refused too.
"""

from __future__ import annotations

import errno
import hashlib
import json
import logging
import os
import struct
import zlib
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Iterator, Mapping

logger = logging.getLogger(__name__)

FORMAT_VERSION = 1
_SNAPSHOT_MAGIC = b"DEDUPSNP"
_JOURNAL_MAGIC = b"DEDUPJNL"
_HEADER_SIZE = struct.Struct(">I")
_RECORD_FRAME = struct.Struct(">II")  # payload length, CRC-32 of the payload
#: The names of every state file a directory has held, as a JSON list.
STATE_FILES_NAME = "state-files.json"


class StateFileError(Exception):
    """A state file is corrupt, of another kind, or built with other rules."""


def signature_difference(stored: Mapping[str, Any], current: Mapping[str, Any]) -> str:
    """Describe how two rules signatures differ, one ``name: stored -> current``
    clause per differing entry, or ``""`` when they are equal.

    >>> signature_difference({"a": 1, "b": 2}, {"a": 1, "b": 3})
    'b: 2 -> 3'
    """
    differences = []
    for name in sorted(set(stored) | set(current)):
        before, after = stored.get(name, "<absent>"), current.get(name, "<absent>")
        if before != after:
            differences.append(f"{name}: {before!r} -> {after!r}")
    return "; ".join(differences)


def versions_differ(stored: Mapping[str, Any], current: Mapping[str, Any]) -> bool:
    """Whether two rules signatures differ in a version (``fingerprint.version``): data
    written by another release of the extension, which no setting brings back.

    >>> versions_differ({"fingerprint.version": 4}, {"fingerprint.version": 5})
    True
    """
    return any(
        name.endswith("version") and stored.get(name) != current.get(name)
        for name in set(stored) | set(current)
    )


def check_signature(
    stored: Mapping[str, Any],
    current: Mapping[str, Any],
    error: type[Exception],
    written: str,
    *,
    other_release: str,
    other_rules: str,
) -> None:
    """Raise *error* unless the rules signature of stored data (*written*: what wrote
    it, e.g. ``"{path} was written"``) is *current*; the message says what differs, then
    goes on with *other_release* when a version does (no setting brings the data back),
    else with *other_rules*.

    >>> check_signature({"a": 1}, {"a": 2}, ValueError, "x was written", other_release="",
    ...                 other_rules=". Restore them.")
    Traceback (most recent call last):
    ...
    ValueError: x was written with other rules (a: 1 -> 2). Restore them.
    """
    difference = signature_difference(stored, current)
    if not difference:
        return
    if versions_differ(stored, current):
        raise error(f"{written} by another release of the extension ({difference}){other_release}")
    raise error(f"{written} with other rules ({difference}){other_rules}")


def _encode_header(magic: bytes, header: Mapping[str, Any]) -> bytes:
    encoded = json.dumps(header, sort_keys=True, separators=(",", ":")).encode()
    return magic + _HEADER_SIZE.pack(len(encoded)) + encoded


def _decode_header(path: Path, data: bytes, magic: bytes) -> tuple[dict[str, Any], int]:
    if not data.startswith(magic):
        raise StateFileError(f"{path} is not a dedup state file (unknown magic bytes)")
    size_end = len(magic) + _HEADER_SIZE.size
    if len(data) < size_end:
        raise StateFileError(f"{path} is truncated inside its header")
    (size,) = _HEADER_SIZE.unpack_from(data, len(magic))
    try:
        header = json.loads(data[size_end : size_end + size])
    except ValueError as exc:  # the message says it all: one traceback, not two
        raise StateFileError(f"{path} has an unreadable header: {exc}") from None
    if not isinstance(header, dict):
        raise StateFileError(f"{path} has an unreadable header")
    return header, size_end + size


def _check_header(
    path: Path, header: Mapping[str, Any], kind: str, signature: Mapping[str, Any]
) -> None:
    if header.get("format") != FORMAT_VERSION:
        raise StateFileError(
            f"{path} has format version {header.get('format')!r}; this version of "
            f"the extension reads version {FORMAT_VERSION}"
        )
    if header.get("kind") != kind:
        raise StateFileError(f"{path} holds {header.get('kind')!r} state, expected {kind!r}")
    check_signature(
        header.get("signature", {}),
        signature,
        StateFileError,
        f"{path} was written",
        other_release=", whose keys or fingerprints this one computes otherwise. Resume it "
        "with that release, or point the crawl at another state directory to start afresh.",
        other_rules=". Restore the settings it was written with, or point the crawl at "
        "another state directory to start afresh.",
    )


def _fsync_directory(directory: Path) -> None:
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:  # pragma: no cover - platforms without directory fds
        return
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def replace_atomically(path: Path, data: bytes) -> None:
    """Write *data* to *path* so that a reader, or a restart after a crash at
    any moment, finds either the old content or the new, never a mix."""
    tmp_path = path.with_name(path.name + ".tmp")
    try:
        with tmp_path.open("wb") as tmp_file:
            tmp_file.write(data)
            tmp_file.flush()
            os.fsync(tmp_file.fileno())
    except BaseException:
        # a full disk: the old file stays, and no half-written one beside it
        tmp_path.unlink(missing_ok=True)
        raise
    tmp_path.replace(path)
    _fsync_directory(path.parent)


def write_snapshot(
    path: Path,
    kind: str,
    signature: Mapping[str, Any],
    params: Mapping[str, Any],
    payload: bytes,
) -> None:
    """Atomically replace the snapshot at *path* with *payload*.

    *params* (JSON-serializable) are stored beside the payload for the reader
    to rebuild the structure, e.g. a Bloom filter's sizes.
    """
    header = {
        "format": FORMAT_VERSION,
        "kind": kind,
        "signature": dict(signature),
        "params": dict(params),
        "payload_size": len(payload),
        "payload_sha256": hashlib.sha256(payload).hexdigest(),
    }
    replace_atomically(path, _encode_header(_SNAPSHOT_MAGIC, header) + payload)
    _record_state_file(path)


def _recorded_state_files(directory: Path) -> set[str]:
    """The names :data:`STATE_FILES_NAME` lists in *directory* (none when it has no such
    file: a directory written before it existed, or a new one)."""
    path = directory / STATE_FILES_NAME
    try:
        names = json.loads(path.read_bytes())
    except FileNotFoundError:
        return set()
    except ValueError:
        names = None
    if not isinstance(names, list) or not all(isinstance(name, str) for name in names):
        raise StateFileError(
            f"{path} is corrupt: it should list the directory's state files. Restore it, "
            "or remove it to stop checking that none is missing"
        )
    return set(names)


def _record_state_file(path: Path) -> None:
    names = _recorded_state_files(path.parent)
    if path.name not in names:
        listing = json.dumps(sorted(names | {path.name})).encode()
        replace_atomically(path.parent / STATE_FILES_NAME, listing)


def _check_not_forgotten(path: Path, recorded: set[str], way_out: str = "") -> None:
    """Raise :class:`StateFileError` when the state file at *path* is missing though its
    directory held it (*recorded*, what :data:`STATE_FILES_NAME` lists). *way_out* is added
    to the ways out the message names (restore it, or start afresh)."""
    if not path.exists() and path.name in recorded:
        raise StateFileError(
            f"{path} is missing, though this state directory held it ({STATE_FILES_NAME} "
            f"lists it): what it recorded would be forgotten. Restore it; {way_out}or start "
            "afresh with DEDUP_STATE_DIR pointing at an empty directory"
        )


def check_not_missing(path: Path, way_out: str = "") -> None:
    """Raise :class:`StateFileError` when the state file at *path* is missing though its
    directory's :data:`STATE_FILES_NAME` lists it (*way_out* as for the other refusals)."""
    _check_not_forgotten(path, _recorded_state_files(path.parent), way_out)


def read_snapshot(
    path: Path, kind: str, signature: Mapping[str, Any]
) -> tuple[dict[str, Any], bytes] | None:
    """Return ``(params, payload)`` of the snapshot at *path*, or ``None`` when
    there is none. Raises :class:`StateFileError` when it is corrupt, of
    another kind or written with another signature."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None
    header, offset = _decode_header(path, data, _SNAPSHOT_MAGIC)
    _check_header(path, header, kind, signature)
    payload = data[offset:]
    _check_payload(path, header, payload)
    return dict(header.get("params", {})), payload


def _check_payload(path: Path, header: Mapping[str, Any], payload: bytes) -> None:
    if len(payload) != header.get("payload_size") or (
        hashlib.sha256(payload).hexdigest() != header.get("payload_sha256")
    ):
        raise StateFileError(
            f"{path} is corrupt: its content does not match the checksum in its header"
        )


def check_file(path: Path) -> None:
    """Raise :class:`StateFileError` when the snapshot or journal at *path* is damaged:
    an unreadable header, a snapshot whose content fails its checksum, a journal record
    before the last that fails its own (a torn last record is what a kill leaves, and
    opening drops it). Its kind and rules are not checked. A missing file passes."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return
    if data.startswith(_JOURNAL_MAGIC):
        _, offset = _decode_header(path, data, _JOURNAL_MAGIC)
        for _ in _records(path, data, offset):
            pass
    else:
        header, offset = _decode_header(path, data, _SNAPSHOT_MAGIC)
        _check_payload(path, header, data[offset:])


def check_writable(path: Path) -> None:
    """Raise :class:`StateFileError` when the file at *path* exists and this process may
    not write it (a crawl appends to a journal and replaces a snapshot)."""
    if path.exists() and not os.access(path, os.W_OK):
        raise StateFileError(
            f"{path} is not writable by this process, which would append to it or replace "
            "it: give this user write access to it, or point DEDUP_STATE_DIR at another "
            "directory"
        )


def read_header(path: Path) -> dict[str, Any] | None:
    """Return the header of the snapshot or journal at *path* (``kind``,
    ``signature`` and, for a snapshot, ``params``), without checking it against
    any rules; ``None`` when there is no such file. Raises
    :class:`StateFileError` when it is not a state file."""
    prefix_size = len(_SNAPSHOT_MAGIC) + _HEADER_SIZE.size
    try:
        with path.open("rb") as state_file:
            data = state_file.read(prefix_size)
            if len(data) == prefix_size:
                (size,) = _HEADER_SIZE.unpack_from(data, len(_SNAPSHOT_MAGIC))
                data += state_file.read(size)
    except FileNotFoundError:
        return None
    magic = _JOURNAL_MAGIC if data.startswith(_JOURNAL_MAGIC) else _SNAPSHOT_MAGIC
    header, _ = _decode_header(path, data, magic)
    return header


def _records(path: Path, data: bytes, offset: int) -> Iterator[tuple[bytes, int]]:
    """The complete records of a journal's *data* from *offset*, each with where it ends;
    a torn last record is left out, a damaged one before it raises."""
    frame_size = _RECORD_FRAME.size
    while offset + frame_size <= len(data):
        size, crc = _RECORD_FRAME.unpack_from(data, offset)
        end = offset + frame_size + size
        if end > len(data):
            return  # torn tail
        record = data[offset + frame_size : end]
        if zlib.crc32(record) != crc:
            if end == len(data):
                return  # torn tail whose length field made it to disk
            raise StateFileError(f"{path} is corrupt: record at byte {offset} fails its checksum")
        offset = end
        yield record, offset


class Journal:
    """An append-only file of records, each written by one ``write()`` call.

    Use :meth:`open` to replay what is there and get ready to append;
    :meth:`append` to record; :meth:`restart` once a snapshot holds everything
    recorded so far.

    With *snapshot* (the path of the snapshot it completes), the journal's header
    names that snapshot once there is one, and reading refuses, with
    :class:`StateFileError`, a journal whose snapshot is gone, or a snapshot whose
    journal is gone: either would silently forget what the missing file held.
    """

    def __init__(
        self,
        path: Path,
        kind: str,
        signature: Mapping[str, Any],
        *,
        snapshot: Path | None = None,
    ) -> None:
        self.path = path
        self.kind = kind
        self.signature = dict(signature)
        self.snapshot = snapshot
        self.torn_bytes = 0
        self.records = 0
        self._fd: int | None = None

    def read(self) -> list[bytes]:
        """Return every complete record in the journal, in order, without
        touching the file: nothing is written, truncated or locked, so a crawl
        may be appending to it meanwhile.

        A torn last record (a kill, or a write in progress) is left out and
        counted in :attr:`torn_bytes`; corruption elsewhere raises
        :class:`StateFileError`. A missing journal has no records.
        :attr:`records` counts them.
        """
        records, _ = self._read()
        self.records = len(records)
        return records

    def _read(self) -> tuple[list[bytes], int]:
        """The records and the size of the file without its torn tail."""
        try:
            data = self.path.read_bytes()
        except FileNotFoundError:
            self._check_snapshot_without_journal()
            data = b""
        self.torn_bytes = 0
        if not data:
            return [], 0
        header, offset = _decode_header(self.path, data, _JOURNAL_MAGIC)
        _check_header(self.path, header, self.kind, self.signature)
        self._check_journal_without_snapshot(header)
        records, valid_end = [], offset
        for record, record_end in self._iter_records(data, offset):
            records.append(record)
            valid_end = record_end
        self.torn_bytes = len(data) - valid_end
        return records, valid_end

    def check_files(self) -> None:
        """Raise :class:`StateFileError` when the journal or the snapshot it completes is
        missing while the other is there, damaged (:func:`check_file`), or not writable
        by this process: a crawl checks this while it is built, so that it stops before
        its spider opens. An empty journal (one created by hand in place of a lost one)
        has no records."""
        recorded = _recorded_state_files(self.path.parent)  # refused when damaged
        if not self.path.exists():
            self._check_snapshot_without_journal()
            _check_not_forgotten(
                self.path,
                recorded,
                f"or create it empty (touch {self.path}) to go on without it; ",
            )
        elif self.path.stat().st_size:
            header = read_header(self.path)
            if header is not None:
                self._check_journal_without_snapshot(header)
            check_file(self.path)
        for path in (self.path, self.snapshot):
            if path is not None:
                check_writable(path)
        if self.snapshot is not None:
            _check_not_forgotten(self.snapshot, recorded)
            check_file(self.snapshot)

    def _check_snapshot_without_journal(self) -> None:
        if self.snapshot is not None and self.snapshot.exists():
            raise StateFileError(
                f"{self.path} is missing beside {self.snapshot}: what was recorded since "
                "that snapshot would be forgotten. Restore it; or create it empty "
                f"(touch {self.path}) to go on from the snapshot alone; or start afresh "
                f"by removing {self.snapshot} too"
            )

    def _check_journal_without_snapshot(self, header: Mapping[str, Any]) -> None:
        snapshot_name = header.get("snapshot")
        if isinstance(snapshot_name, str) and not (self.path.parent / snapshot_name).exists():
            snapshot = self.path.parent / snapshot_name
            raise StateFileError(
                f"{snapshot} is missing: {self.path} only holds what was recorded after it, "
                "so going on would forget everything before. Restore it; or start afresh by "
                f"removing {self.path} too (or set DEDUP_STATE_DIR to an empty directory)"
            )

    def open(self, replay: Callable[[bytes], object]) -> None:
        """Call *replay* with every record in the journal, in order, then open
        the journal for appending.

        A torn last record (a kill in the middle of a write) is dropped and
        counted in :attr:`torn_bytes`; corruption elsewhere raises
        :class:`StateFileError`.
        """
        records, valid_end = self._read()
        for record in records:
            self.records += 1
            replay(record)
        if self.torn_bytes:
            logger.warning(
                "Dropped a record cut short in %(path)s (%(size)d bytes), "
                "left by an unclean stop; everything before it is kept",
                {"path": self.path, "size": self.torn_bytes},
            )
            os.truncate(self.path, valid_end)
        if not valid_end:
            self._write_empty()
        self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND)

    def _iter_records(self, data: bytes, offset: int) -> Iterator[tuple[bytes, int]]:
        return _records(self.path, data, offset)

    def _header(self) -> dict[str, Any]:
        header: dict[str, Any] = {
            "format": FORMAT_VERSION,
            "kind": self.kind,
            "signature": self.signature,
        }
        if self.snapshot is not None and self.snapshot.exists():
            header["snapshot"] = self.snapshot.name
        return header

    def _write_empty(self) -> None:
        replace_atomically(self.path, _encode_header(_JOURNAL_MAGIC, self._header()))
        _record_state_file(self.path)

    @property
    def is_open(self) -> bool:
        return self._fd is not None

    def append(self, record: bytes) -> None:
        """Append one record; it survives a kill of the process once this returns.
        When the disk cannot take all of it, none of it stays: :exc:`OSError`."""
        assert self._fd is not None, "Journal.open() must run first"
        data = _RECORD_FRAME.pack(len(record), zlib.crc32(record)) + record
        written = os.write(self._fd, data)
        if written != len(data):
            # a full disk takes part of a record without an error: take it back, so
            # that no later record follows a torn one, and fail as the next write would
            os.ftruncate(self._fd, os.fstat(self._fd).st_size - written)
            raise OSError(
                errno.ENOSPC,
                f"{os.strerror(errno.ENOSPC)}: {written} of {len(data)} bytes written",
                str(self.path),
            )
        self.records += 1

    def restart(self, records: Iterable[bytes] = ()) -> None:
        """Atomically replace the journal with one holding only *records*. When that
        fails (:exc:`OSError`: a full disk), the journal is as it was, still open."""
        chunks = [_encode_header(_JOURNAL_MAGIC, self._header())]
        count = 0
        for record in records:
            chunks.append(_RECORD_FRAME.pack(len(record), zlib.crc32(record)) + record)
            count += 1
        replace_atomically(self.path, b"".join(chunks))
        self.close()
        self.records = count
        self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND)

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def close_after(self, snapshot: Callable[[], object]) -> None:
        """Call *snapshot* (which restarts this journal), then close, even when it
        raised; nothing when the journal is not open, so that state that failed to
        load is never overwritten."""
        if not self.is_open:
            return
        try:
            snapshot()
        finally:
            self.close()
