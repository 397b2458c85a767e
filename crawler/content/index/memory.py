"""Compact in-memory fingerprint index and content-hash table.

Memory layout, per document (``n`` documents; arrays are numpy, grown by 1/16 at a time):

* :class:`DocumentTable`, one row per document, shared by the index and the table:
  fingerprint (8 bytes), MinHash signature (64 bytes: the second signature that verifies
  a near match), numbers signature (8 bytes), page size class (1 byte), end offset of its
  key in one UTF-8 byte string (4 bytes; 8 once the keys pass 4 GiB), and the key's UTF-8
  bytes themselves.
* :class:`MemoryFingerprintIndex`: the document row of each entry (4 bytes) and, per band,
  the rows sorted by that band's 16-bit value (4 x 4 bytes) with a table of where each of
  the 65,536 band values starts (4 x 256 KiB, whatever the number of documents).
* :class:`MemoryContentHashTable`: the first 8 bytes of each content hash (8 bytes) and the
  document row (4 bytes), sorted by hash.

That is 117 bytes a document plus the key bytes and 1 MiB (``bench/neardup_index.py``
measures it with tracemalloc, array slack included), where
``simhash.SimhashIndex`` spends about a kilobyte. Both structures take new entries into a
small unsorted *tail* that queries scan with vectorized numpy; once the tail holds about
``2 * sqrt(n)`` entries it is sorted and inserted into the sorted part with one linear
copy (no re-sort of the whole), so adding stays cheap, a crowded band value costs one
vectorized pass over its rows, and a query allocates nothing beyond its own temporaries.
"""

from __future__ import annotations

import math
import struct
from typing import TYPE_CHECKING

import numpy as np

from crawler.content.fingerprints import MINHASH_BYTES
from crawler.content.index import (
    BAND_BITS,
    BAND_COUNT,
    BAND_MASK,
    MAX_QUERY_DISTANCE,
    check_fingerprint,
    check_max_distance,
)

if TYPE_CHECKING:
    from numpy.typing import DTypeLike, NDArray

#: Unsorted entries, at least, before a merge into the sorted part; the limit grows with
#: the square root of the sorted part, which balances the cost of scanning the tail on
#: every query against the cost of copying the sorted part on every merge.
MIN_TAIL = 1024
MAX_TAIL = 65_536
BAND_VALUES = 1 << BAND_BITS
CONTENT_HASH_PREFIX_BYTES = 8

_KEY_ENCODING_ERRORS = "surrogatepass"
_DOCUMENTS_HEADER = struct.Struct("<QQB")  # rows, key bytes, width of a key end offset
#: A document's MinHash signature is all zero bytes when it is not known.
_NO_MINHASH = bytes(MINHASH_BYTES)
#: Band values one bit away from a band's own, and the band itself: the probes of a
#: multi-probe search.
_ONE_BIT_PROBES = np.array([0, *(1 << bit for bit in range(BAND_BITS))], dtype=np.intp)
#: The bits by which those probes let a band differ.
PROBED_BITS = 1
#: The distance within which a multi-probe search meets every document (one band then
#: differs by :data:`PROBED_BITS` bits at most); a farther one only when a band does.
PROBES_COMPLETE_TO = BAND_COUNT * (PROBED_BITS + 1) - 1
#: Where each band's buckets start among every band's (one column, for broadcasting).
_BAND_BUCKET_BASES = (np.arange(BAND_COUNT, dtype=np.intp) * BAND_VALUES)[:, np.newaxis]
#: The widest radius :meth:`MemoryFingerprintIndex.search` accepts.
MAX_PROBED_DISTANCE = 16
_COUNT_HEADER = struct.Struct("<Q")
_UINT32_LIMIT = 1 << 32
#: Up to this many hits, removing the same document found in several bands is quicker
#: in plain Python than with numpy.
_SMALL_RESULT = 64


def tail_limit(sorted_entries: int) -> int:
    """How many unsorted entries a structure with *sorted_entries* may hold before a merge.

    >>> tail_limit(0), tail_limit(1_000_000), tail_limit(10**9)
    (1024, 2000, 63244)
    """
    return min(MAX_TAIL, max(MIN_TAIL, 2 * math.isqrt(sorted_entries)))


class _Column:
    """An append-only column of unsigned integers in a numpy array over-allocated by 1/16."""

    __slots__ = ("_data", "_size")

    def __init__(self, dtype: DTypeLike, values: NDArray[np.generic] | None = None) -> None:
        if values is None:
            self._data = np.empty(0, dtype=dtype)
            self._size = 0
        else:
            self._data = np.array(values, dtype=dtype)
            self._size = len(self._data)

    def append(self, value: int) -> None:
        if self._size == len(self._data):
            grown = np.empty(self._size + self._size // 16 + 256, dtype=self._data.dtype)
            grown[: self._size] = self._data[: self._size]
            self._data = grown
        self._data[self._size] = value
        self._size += 1

    def last(self) -> int:
        return int(self._data[self._size - 1])

    def item(self, index: int) -> int:
        if not 0 <= index < self._size:
            raise IndexError(index)
        return int(self._data[index])

    def view(self) -> NDArray[np.generic]:
        """The values so far, without a copy (valid until the next append)."""
        return self._data[: self._size]

    def widened(self, dtype: DTypeLike) -> _Column:
        return _Column(dtype, self.view())

    def __len__(self) -> int:
        return self._size


class DocumentTable:
    """Documents as rows of (key, fingerprint), stored compactly.

    * :meth:`add` returns the row of the document; adding the same key and fingerprint
      as the last row returns that row again, so an index and a content-hash table that
      share one table store each document once;
    * keys are any ``str`` (kept as UTF-8, lone surrogates included).

    * each row also holds the document's MinHash signature (:data:`MINHASH_BYTES`
      bytes, zeros when not given).

    >>> documents = DocumentTable()
    >>> documents.add("a", 1), documents.add("a", 1), documents.add("b", 1)
    (0, 0, 1)
    >>> documents.key(1), documents.fingerprint(1), len(documents)
    ('b', 1, 2)
    """

    def __init__(self) -> None:
        self._key_bytes = bytearray()
        self._key_ends = _Column(np.uint32)
        self._fingerprints = _Column(np.uint64)
        self._minhashes = bytearray()
        self._numbers = _Column(np.uint64)
        self._page_sizes = _Column(np.uint8)

    def add(
        self,
        key: str,
        fingerprint: int,
        minhash: bytes | None = None,
        numbers: int = 0,
        page_size: int = 0,
    ) -> int:
        if minhash is None:
            minhash = _NO_MINHASH
        elif len(minhash) != MINHASH_BYTES:
            raise ValueError(f"a MinHash signature has {MINHASH_BYTES} bytes, got {len(minhash)}")
        encoded = key.encode("utf-8", _KEY_ENCODING_ERRORS)
        rows = len(self._fingerprints)
        if (
            rows
            and self._fingerprints.last() == fingerprint
            and self._key_bytes[self._key_start(rows - 1) :] == encoded
        ):
            return rows - 1
        end = len(self._key_bytes) + len(encoded)
        if end >= _UINT32_LIMIT and self._key_ends.view().dtype == np.uint32:
            self._key_ends = self._key_ends.widened(np.uint64)
        self._key_bytes += encoded
        self._key_ends.append(end)
        self._fingerprints.append(fingerprint)
        self._minhashes += minhash
        self._numbers.append(numbers)
        self._page_sizes.append(page_size)
        return rows

    def _key_start(self, row: int) -> int:
        return self._key_ends.item(row - 1) if row else 0

    def key(self, row: int) -> str:
        end = self._key_ends.item(row)
        return self._key_bytes[self._key_start(row) : end].decode("utf-8", _KEY_ENCODING_ERRORS)

    def fingerprint(self, row: int) -> int:
        return self._fingerprints.item(row)

    def minhash(self, row: int) -> bytes:
        """The MinHash signature of *row*; all zero bytes when it was not given."""
        if not 0 <= row < len(self):
            raise IndexError(row)
        return bytes(self._minhashes[row * MINHASH_BYTES : (row + 1) * MINHASH_BYTES])

    def numbers(self, row: int) -> int:
        """The numbers signature of *row*
        (:func:`crawler.content.fingerprints.numbers_signature`)."""
        return self._numbers.item(row)

    def page_size(self, row: int) -> int:
        """The page size class of *row* (:func:`crawler.content.fingerprints.page_size_class`)."""
        return self._page_sizes.item(row)

    def fingerprints(self) -> NDArray[np.uint64]:
        """All fingerprints by row, without a copy (valid until the next :meth:`add`)."""
        return self._fingerprints.view()  # type: ignore[return-value]

    @property
    def key_bytes(self) -> int:
        """Bytes taken by the keys' UTF-8 text."""
        return len(self._key_bytes)

    def __len__(self) -> int:
        return len(self._fingerprints)

    def to_bytes(self) -> bytes:
        ends = self._key_ends.view()
        return b"".join(
            (
                _DOCUMENTS_HEADER.pack(len(self), len(self._key_bytes), ends.dtype.itemsize),
                ends.astype(ends.dtype.newbyteorder("<")).tobytes(),
                bytes(self._key_bytes),
                self._fingerprints.view().astype("<u8").tobytes(),
                bytes(self._minhashes),
                self._numbers.view().astype("<u8").tobytes(),
                self._page_sizes.view().tobytes(),
            )
        )

    @classmethod
    def from_bytes(cls, payload: bytes) -> DocumentTable:
        """Rebuild a table from :meth:`to_bytes`; ``ValueError`` says what is wrong."""
        if len(payload) < _DOCUMENTS_HEADER.size:
            raise ValueError("document table truncated in its header")
        rows, key_bytes, end_width = _DOCUMENTS_HEADER.unpack_from(payload)
        if end_width not in (4, 8):
            raise ValueError(f"document table has key offsets of {end_width} bytes")
        ends_at = _DOCUMENTS_HEADER.size
        keys_at = ends_at + rows * end_width
        fingerprints_at = keys_at + key_bytes
        minhashes_at = fingerprints_at + rows * 8
        numbers_at = minhashes_at + rows * MINHASH_BYTES
        page_sizes_at = numbers_at + rows * 8
        expected = page_sizes_at + rows
        if len(payload) != expected:
            raise ValueError(
                f"document table of {rows} rows and {key_bytes} key bytes has "
                f"{len(payload)} bytes, not {expected}"
            )
        ends = np.frombuffer(payload, dtype=f"<u{end_width}", count=rows, offset=ends_at)
        if rows and (int(ends[-1]) != key_bytes or bool(np.any(np.diff(ends) < 0))):
            raise ValueError("document table has key offsets out of order")
        documents = cls()
        documents._key_ends = _Column(np.uint32 if end_width == 4 else np.uint64, ends)
        documents._key_bytes = bytearray(payload[keys_at:fingerprints_at])
        documents._fingerprints = _Column(
            np.uint64, np.frombuffer(payload, dtype="<u8", count=rows, offset=fingerprints_at)
        )
        documents._minhashes = bytearray(payload[minhashes_at:numbers_at])
        documents._numbers = _Column(
            np.uint64, np.frombuffer(payload, dtype="<u8", count=rows, offset=numbers_at)
        )
        documents._page_sizes = _Column(
            np.uint8, np.frombuffer(payload, dtype="u1", count=rows, offset=page_sizes_at)
        )
        return documents


def _rows_from_bytes(payload: bytes, what: str, documents: DocumentTable) -> NDArray[np.uint32]:
    if len(payload) % 4:
        raise ValueError(f"{what} of {len(payload)} bytes is not a whole number of rows")
    rows = np.frombuffer(payload, dtype="<u4").astype(np.uint32)
    if rows.size and int(rows.max()) >= len(documents):
        raise ValueError(f"{what} refers to a document row beyond the {len(documents)} stored")
    return rows


def _probed(fingerprints: NDArray[np.uint64], fingerprint: int) -> NDArray[np.bool_]:
    """Which of *fingerprints* a multi-probe search of *fingerprint* meets in its bands: those
    with a band that differs from the probe's by :data:`PROBED_BITS` bits at most."""
    differences = fingerprints ^ np.uint64(fingerprint)
    met = np.zeros(len(fingerprints), dtype=np.bool_)
    for band in range(BAND_COUNT):
        values = (differences >> np.uint64(band * BAND_BITS)) & np.uint64(BAND_MASK)
        met |= np.bitwise_count(values) <= PROBED_BITS
    return met


def _within(
    rows: NDArray[np.generic],
    fingerprints: NDArray[np.uint64],
    probe: np.uint64,
    max_distance: int,
) -> tuple[NDArray[np.generic], NDArray[np.uint8]]:
    """The rows, and their distances, whose fingerprints are within *max_distance* of *probe*."""
    distances: NDArray[np.uint8] = np.bitwise_count(fingerprints ^ probe)
    near = np.flatnonzero(distances <= max_distance)
    return rows[near], distances[near]


class MemoryFingerprintIndex:
    """A :class:`~crawler.content.index.FingerprintIndex` in memory: 4 bands of 16 bits.

    * :meth:`query` finds every document within *max_distance* <= 3 bits (no false
      negatives: each band of the probe is looked up exactly) and nothing farther;
      candidates are checked by popcount, many at a time;
    * results come nearest first, then in the order the documents were added;
    * adding the same key and fingerprint twice in a row is stored once.

    >>> index = MemoryFingerprintIndex()
    >>> index.add("page-1", 0b1011)
    >>> index.add("page-2", 0b0000)
    >>> index.query(0b0011)
    [('page-1', 1), ('page-2', 2)]
    >>> index.query(0b0011, max_distance=1)
    [('page-1', 1)]
    >>> index.query(0b0011, max_distance=4)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: max_distance must be between 0 and 3, got 4: ...
    """

    def __init__(self, documents: DocumentTable | None = None) -> None:
        self.documents = DocumentTable() if documents is None else documents
        self._entry_rows = _Column(np.uint32)
        self._sorted_entries = 0
        self._merge_at = tail_limit(0)
        # The rows of every (band, band value) bucket, band 0 first, each band by value;
        # bucket band * BAND_VALUES + value spans _band_rows[starts[bucket]:starts[bucket + 1]].
        self._band_rows: NDArray[np.uint32] = np.empty(0, dtype=np.uint32)
        self._band_starts: NDArray[np.uint32] = np.zeros(
            BAND_COUNT * BAND_VALUES + 1, dtype=np.uint32
        )
        # memoryview indexing returns a Python int without numpy's scalar overhead.
        self._band_start_view = self._band_starts.data

    def add(
        self,
        key: str,
        fingerprint: int,
        minhash: bytes | None = None,
        numbers: int = 0,
        page_size: int = 0,
    ) -> None:
        check_fingerprint(fingerprint)
        row = self.documents.add(key, fingerprint, minhash, numbers, page_size)
        if len(self._entry_rows) and self._entry_rows.last() == row:
            return
        self._entry_rows.append(row)
        if len(self._entry_rows) >= self._merge_at:
            self._merge_tail()

    def _merge_tail(self) -> None:
        """Move the unsorted entries into each band's sorted rows."""
        entry_rows = self._entry_rows.view()
        tail_rows = entry_rows[self._sorted_entries :]
        tail_fingerprints = self.documents.fingerprints()[tail_rows]
        buckets = np.concatenate(
            [
                band * BAND_VALUES
                + (
                    (tail_fingerprints >> np.uint64(band * BAND_BITS)) & np.uint64(BAND_MASK)
                ).astype(np.intp)
                for band in range(BAND_COUNT)
            ]
        )
        by_bucket = np.argsort(buckets, kind="stable")
        sorted_buckets = buckets[by_bucket]
        # After the last row of the same bucket: rows stay in the order added.
        positions = self._band_starts[sorted_buckets + 1].astype(np.intp)
        rows = np.tile(tail_rows, BAND_COUNT)[by_bucket]
        self._band_rows = np.insert(self._band_rows, positions, rows)
        counts = np.bincount(sorted_buckets, minlength=BAND_COUNT * BAND_VALUES)
        self._band_starts[1:] += np.cumsum(counts).astype(np.uint32)
        self._sorted_entries = len(entry_rows)
        self._merge_at = self._sorted_entries + tail_limit(self._sorted_entries)

    def query(
        self, fingerprint: int, max_distance: int = MAX_QUERY_DISTANCE
    ) -> list[tuple[str, int]]:
        key = self.documents.key
        return [(key(row), distance) for distance, row in self._search(fingerprint, max_distance)]

    def nearest(
        self, fingerprint: int, max_distance: int = MAX_QUERY_DISTANCE
    ) -> tuple[str, int, int] | None:
        found = self._search(fingerprint, max_distance)
        if not found:
            return None
        distance, row = found[0]
        return self.documents.key(row), self.documents.fingerprint(row), distance

    def search(
        self, fingerprint: int, max_distance: int, *, probe_neighbours: bool = False
    ) -> list[tuple[str, int, int, bytes, int, int]]:
        """Return ``(key, fingerprint, distance, minhash, numbers, page size class)`` of
        documents within
        *max_distance* bits, in :meth:`query` order.

        - Without *probe_neighbours*, as :meth:`query`: every document within 3 bits.
        - With it, each band is also looked up at the 16 values one bit away from the
          probe's (multi-probe): every document within 7 bits is found (one band then
          differs in at most one bit), and those farther of which a band does; nothing
          beyond *max_distance* (at most 16) is returned. The unsorted tail answers as the
          bands do (as Redis's index does): what a search finds does not depend on when
          the index sorted its documents.
        """
        if not isinstance(max_distance, int) or not 0 <= max_distance <= MAX_PROBED_DISTANCE:
            raise ValueError(
                f"max_distance must be between 0 and {MAX_PROBED_DISTANCE}, got {max_distance!r}"
            )
        if not probe_neighbours:
            check_max_distance(max_distance)
        documents = self.documents
        return [
            (
                documents.key(row),
                documents.fingerprint(row),
                distance,
                documents.minhash(row),
                documents.numbers(row),
                documents.page_size(row),
            )
            for distance, row in self._search(fingerprint, max_distance, probe_neighbours)
        ]

    def _band_candidates(
        self, fingerprint: int, probe_neighbours: bool
    ) -> list[NDArray[np.generic]]:
        band_rows = self._band_rows
        if probe_neighbours:
            values = np.array(
                [(fingerprint >> (band * BAND_BITS)) & BAND_MASK for band in range(BAND_COUNT)],
                dtype=np.intp,
            )
            buckets = ((_ONE_BIT_PROBES ^ values[:, np.newaxis]) + _BAND_BUCKET_BASES).ravel()
            starts = self._band_starts[buckets].astype(np.intp)
            lengths = self._band_starts[buckets + 1].astype(np.intp) - starts
            total = int(lengths.sum())
            if not total:
                return []
            # the positions of every row of every probed bucket, in one array
            ends = np.cumsum(lengths)
            positions = np.arange(total) + np.repeat(starts - ends + lengths, lengths)
            return [band_rows[positions]]
        candidates: list[NDArray[np.generic]] = []
        starts_view = self._band_start_view
        for band in range(BAND_COUNT):
            bucket = band * BAND_VALUES + ((fingerprint >> (band * BAND_BITS)) & BAND_MASK)
            start, end = starts_view[bucket], starts_view[bucket + 1]
            if start != end:
                candidates.append(band_rows[start:end])
        return candidates

    def _search(
        self, fingerprint: int, max_distance: int, probe_neighbours: bool = False
    ) -> list[tuple[int, int]]:
        """``(distance, row)`` of the documents within *max_distance*, in query order."""
        check_fingerprint(fingerprint)
        if not probe_neighbours:
            check_max_distance(max_distance)
        candidates = self._band_candidates(fingerprint, probe_neighbours)
        tail_rows = self._entry_rows.view()[self._sorted_entries :]
        if len(tail_rows):
            candidates.append(tail_rows)
        if not candidates:
            return []
        rows = np.concatenate(candidates) if len(candidates) > 1 else candidates[0]
        near_rows, near_distances = _within(
            rows, self.documents.fingerprints()[rows], np.uint64(fingerprint), max_distance
        )
        if probe_neighbours and max_distance > PROBES_COMPLETE_TO and len(near_rows):
            # beyond the probes' reach, only what they meet: the unsorted tail's rows answer
            # as they will once sorted into the bands, whenever that is
            far = near_distances > PROBES_COMPLETE_TO
            if far.any():
                kept = ~far
                kept[far] = _probed(self.documents.fingerprints()[near_rows[far]], fingerprint)
                near_rows, near_distances = near_rows[kept], near_distances[kept]
        if not len(near_rows):
            return []
        # A document close enough may be found in several bands: keep it once. Rows grow
        # in the order added, so (distance, row) is the promised order.
        if len(near_rows) <= _SMALL_RESULT:
            return sorted(set(zip(near_distances.tolist(), near_rows.tolist(), strict=True)))
        unique_rows, first_found = np.unique(near_rows, return_index=True)
        unique_distances = near_distances[first_found]
        by_distance = np.argsort(unique_distances, kind="stable")
        return list(
            zip(
                unique_distances[by_distance].tolist(),
                unique_rows[by_distance].tolist(),
                strict=True,
            )
        )

    def __len__(self) -> int:
        return len(self._entry_rows)

    def to_bytes(self) -> bytes:
        """The entries (document rows); the bands are rebuilt on load."""
        return self._entry_rows.view().astype("<u4").tobytes()

    @classmethod
    def from_bytes(cls, payload: bytes, documents: DocumentTable) -> MemoryFingerprintIndex:
        """Rebuild an index over *documents* from :meth:`to_bytes`."""
        index = cls(documents)
        index._entry_rows = _Column(np.uint32, _rows_from_bytes(payload, "index", documents))
        if len(index._entry_rows):
            index._merge_tail()
        return index


def content_hash_prefix(content_hash: bytes) -> int:
    """The part of a content hash kept in memory: its first 8 bytes, as an integer.

    Two different texts then look alike with probability 2**-64 a pair: about
    n**2 / 2**65 for n documents (3e-8 at a million). The detector also compares the
    SimHash of the two texts before it calls them exact duplicates.

    >>> content_hash_prefix(bytes(range(16)))
    283686952306183
    """
    if len(content_hash) < CONTENT_HASH_PREFIX_BYTES:
        raise ValueError(
            f"a content hash has at least {CONTENT_HASH_PREFIX_BYTES} bytes, "
            f"got {len(content_hash)}"
        )
    return int.from_bytes(content_hash[:CONTENT_HASH_PREFIX_BYTES], "big")


class MemoryContentHashTable:
    """A :class:`~crawler.content.index.ContentHashTable` in memory, 12 bytes a hash.

    * :meth:`get` returns the key and fingerprint of the *first* document added with the
      content hash (the first 8 bytes of it, see :func:`content_hash_prefix`);
    * share a :class:`DocumentTable` with a :class:`MemoryFingerprintIndex` to store each
      document's key and fingerprint once.

    >>> table = MemoryContentHashTable()
    >>> table.add(b"0123456789abcdef", "page-1", 7)
    >>> table.add(b"0123456789abcdef", "page-2", 7)
    >>> table.get(b"0123456789abcdef"), table.get(b"fedcba9876543210")
    (('page-1', 7), None)
    """

    def __init__(self, documents: DocumentTable | None = None) -> None:
        self.documents = DocumentTable() if documents is None else documents
        self._sorted_prefixes: NDArray[np.uint64] = np.empty(0, dtype=np.uint64)
        self._sorted_rows: NDArray[np.uint32] = np.empty(0, dtype=np.uint32)
        self._tail_prefixes = _Column(np.uint64)
        self._tail_rows = _Column(np.uint32)

    def add(
        self,
        content_hash: bytes,
        key: str,
        fingerprint: int,
        minhash: bytes | None = None,
        numbers: int = 0,
        page_size: int = 0,
    ) -> None:
        check_fingerprint(fingerprint)
        prefix = content_hash_prefix(content_hash)
        self._tail_prefixes.append(prefix)
        self._tail_rows.append(self.documents.add(key, fingerprint, minhash, numbers, page_size))
        if len(self._tail_rows) >= tail_limit(len(self._sorted_rows)):
            self._merge_tail()

    def _merge_tail(self) -> None:
        tail_prefixes = self._tail_prefixes.view()
        by_prefix = np.argsort(tail_prefixes, kind="stable")
        sorted_tail = tail_prefixes[by_prefix]
        # After equal prefixes already sorted: the first document stays first.
        positions = np.searchsorted(self._sorted_prefixes, sorted_tail, side="right")
        self._sorted_prefixes = np.insert(self._sorted_prefixes, positions, sorted_tail)
        self._sorted_rows = np.insert(
            self._sorted_rows, positions, self._tail_rows.view()[by_prefix]
        )
        self._tail_prefixes = _Column(np.uint64)
        self._tail_rows = _Column(np.uint32)

    def get(self, content_hash: bytes) -> tuple[str, int] | None:
        row = self._find_row(np.uint64(content_hash_prefix(content_hash)))
        if row is None:
            return None
        return self.documents.key(row), self.documents.fingerprint(row)

    def row(self, content_hash: bytes) -> int | None:
        """The row in :attr:`documents` of the first document added with *content_hash*
        (rows are numbered in the order documents were added), ``None`` when there is none."""
        return self._find_row(np.uint64(content_hash_prefix(content_hash)))

    def page_size(self, content_hash: bytes) -> int:
        """The page size class of the first document added with *content_hash*, ``0``
        when there is none."""
        row = self._find_row(np.uint64(content_hash_prefix(content_hash)))
        return 0 if row is None else self.documents.page_size(row)

    def _find_row(self, prefix: np.uint64) -> int | None:
        position = int(np.searchsorted(self._sorted_prefixes, prefix))
        if position < len(self._sorted_prefixes) and self._sorted_prefixes[position] == prefix:
            return int(self._sorted_rows[position])
        in_tail = np.flatnonzero(self._tail_prefixes.view() == prefix)
        if in_tail.size:
            return self._tail_rows.item(int(in_tail[0]))
        return None

    def __len__(self) -> int:
        return len(self._sorted_rows) + len(self._tail_rows)

    def to_bytes(self) -> bytes:
        if len(self._tail_rows):
            self._merge_tail()
        return b"".join(
            (
                _COUNT_HEADER.pack(len(self._sorted_rows)),
                self._sorted_prefixes.astype("<u8").tobytes(),
                self._sorted_rows.astype("<u4").tobytes(),
            )
        )

    @classmethod
    def from_bytes(cls, payload: bytes, documents: DocumentTable) -> MemoryContentHashTable:
        """Rebuild a table over *documents* from :meth:`to_bytes`."""
        if len(payload) < _COUNT_HEADER.size:
            raise ValueError("content-hash table truncated in its header")
        (count,) = _COUNT_HEADER.unpack_from(payload)
        rows_at = _COUNT_HEADER.size + count * 8
        if len(payload) != rows_at + count * 4:
            raise ValueError(
                f"content-hash table of {count} hashes has {len(payload)} bytes, "
                f"not {rows_at + count * 4}"
            )
        prefixes = np.frombuffer(payload, dtype="<u8", count=count, offset=_COUNT_HEADER.size)
        if count and bool(np.any(prefixes[1:] < prefixes[:-1])):
            raise ValueError("content-hash table is not sorted")
        table = cls(documents)
        table._sorted_prefixes = prefixes.astype(np.uint64)
        table._sorted_rows = _rows_from_bytes(payload[rows_at:], "content-hash table", documents)
        return table
