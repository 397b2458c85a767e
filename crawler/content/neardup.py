"""Near-duplicate detection of page text: exact content hash, then a banded SimHash index
whose matches a second signature verifies.

:class:`NearDuplicateDetector` is the engine behind the item pipeline and the offline
commands. For each text it:

1. normalizes it once (:func:`crawler.content.fingerprints.normalize_text`); an empty text is
   never a duplicate (it says nothing about the page) and is not kept;
2. looks its 128-bit content hash up among the documents kept: an *exact* duplicate,
   decided at once;
3. otherwise looks its 64-bit SimHash up in the banded index, within a Hamming distance
   that depends on the text's length (short texts get a stricter threshold): the *first
   stage*;
4. for a long text that the first stage did not match, searches wider (the *second
   stage*: each band also at the values one bit away, up to ``second_stage_distance``
   bits), because one added line or a dropped paragraph moves a SimHash 4 to 10 bits;
5. accepts a candidate of either stage, distance 0 included, only when the texts' MinHash
   signatures agree (:func:`crawler.content.fingerprints.estimated_jaccard` at least
   ``min_similarity`` in the first stage, and two fifths of the way from it to 1 in the
   second, whose fingerprints already disagree: 0.7 by default): two different pages can share a
   fingerprint (index pages made of one repeated phrase, long articles on one topic), they
   hardly share half of their word pairs; and only when neither names a number the other lacks
   (:func:`crawler.content.fingerprints.numbers_conflict`: two product pages of one template,
   500 GB and 1000 GB, share nearly all their words); and, for an exact match too, only
   when the two pages' sizes do not show the text to be a small part of the larger one
   (:func:`crawler.content.fingerprints.page_sizes_differ`: an index page of every letter whose
   extraction kept one letter's section). A candidate it rejects is reported
   (:attr:`Decision.rejected`) and the text is kept as new;
6. keeps the document when it matched nothing. A near duplicate is not kept as a
   document: its fingerprint and content hash are indexed as one more way to find the
   document it copies, with that document's key and signatures (MinHash, numbers, page
   size). A later copy nearer this copy than the original (an ad block added to the
   page that lost a paragraph) is then found, and verified against the document kept:
   a chain of small edits cannot drift away from it one step at a time.

A text whose match is the document of its own key is a *re-fetch*, not a copy: it is not
reported as a duplicate and not kept twice. A re-fetch of the very text kept since the
detector was opened (in this crawl: the exact check found it among this run's documents)
is said to be *repeated*: nothing new to pass on.

Texts shorter than ``min_chars`` (after normalization) only get the exact check, and are
kept out of the SimHash index: a few words give too few features for a stable
fingerprint, and unrelated snippets ("Page not found", "Loading...") would land within a
few bits of each other.

The storage is pluggable (:mod:`crawler.content.index`): in memory by default, persisted in a
state directory with :meth:`NearDuplicateDetector.open`, or any backend that implements
:class:`~crawler.content.index.FingerprintIndex` and
:class:`~crawler.content.index.ContentHashTable`.
"""

from __future__ import annotations

import json
import logging
import threading
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, NamedTuple

from crawler.content import fingerprints
from crawler.content.index import MAX_QUERY_DISTANCE, band_layout
from crawler.content.index.journaled import JournaledContentIndex
from crawler.content.index.memory import (
    MAX_PROBED_DISTANCE,
    DocumentTable,
    MemoryContentHashTable,
    MemoryFingerprintIndex,
)
from crawler.content.text_fingerprints import (
    DEFAULT_MIN_REPEATS,
    TextFingerprint,
    fingerprint_text,
)
from crawler.content.text_fingerprints import (
    fingerprint_normalized as fingerprint_normalized,
)

if TYPE_CHECKING:
    from types import TracebackType

    from typing_extensions import Self

    from crawler.content.index import ContentHashTable, FingerprintIndex
    from crawler.content.index.redis import RedisContentIndex

logger = logging.getLogger(__name__)

DEFAULT_SHORT_TEXT_CHARS = 200
DEFAULT_SHORT_THRESHOLD = 2
DEFAULT_LONG_THRESHOLD = 3
#: Below this many normalized characters only the exact check applies (see the module doc).
DEFAULT_MIN_CHARS = 50
#: The estimated word-pair Jaccard similarity from which a candidate is a copy.
DEFAULT_MIN_SIMILARITY = 0.5
#: The widest Hamming distance the second stage looks at.
DEFAULT_SECOND_STAGE_DISTANCE = 12
#: Candidates verified at most per stage, nearest first.
MAX_VERIFIED_CANDIDATES = 32

Stage = Literal["exact", "first", "second"]


@dataclass(frozen=True)
class Match:
    """The earlier document a text duplicates.

    * ``key``: the earlier document's key;
    * ``distance``: Hamming distance between the two fingerprints, ``0`` for ``"exact"``;
    * ``kind``: ``"exact"`` (same normalized text) or ``"near"`` (fingerprints within the
      threshold);
    * ``fingerprint``: the earlier document's fingerprint;
    * ``stage``: what found it: ``"exact"`` (content hash), ``"first"`` (the banded
      look-up within the threshold) or ``"second"`` (the wider search);
    * ``similarity``: the estimated word-pair Jaccard similarity of the two texts from
      their MinHash signatures (``1.0`` for exact);
    * ``numbers_differ``: each text names a number the other lacks (a size, a SKU, a
      version: :func:`crawler.content.fingerprints.numbers_conflict`), which makes a candidate
      another page however similar its words;
    * ``page_sizes_differ``: one page holds several times the text of the other, and the
      text is a small part of the larger (:func:`crawler.content.fingerprints.page_sizes_differ`),
      which makes even an exact match weak evidence.
    """

    key: str
    distance: int
    kind: Literal["exact", "near"]
    fingerprint: int
    stage: Stage = "exact"
    similarity: float = 1.0
    numbers_differ: bool = False
    page_sizes_differ: bool = False


@dataclass(frozen=True)
class Decision:
    """Everything :meth:`NearDuplicateDetector.check` found out about a text, for audit.

    * ``match``: the earlier document it duplicates, or ``None``;
    * ``fingerprint`` and ``content_hash``: the text's own;
    * ``normalized_length``: characters of the normalized text;
    * ``threshold``: the Hamming distance that counted as near for this text, ``None``
      when it is shorter than ``min_chars`` (exact check only);
    * ``added``: whether the document is now kept (new, and ``add`` was true);
    * ``rejected``: the nearest candidate that verification rejected (its ``similarity``
      below ``min_similarity``), when the text was kept as new;
    * ``refetched``: the text matched the document of its own key (a page fetched again),
      which is not a duplicate and is not kept twice;
    * ``repeated``: a re-fetch of the same text, kept since the detector was opened (a page
      fetched twice in one crawl); ``False`` for a document of an earlier run, found
      near, or in a shared index (which cannot tell runs apart).
    """

    key: str
    match: Match | None
    fingerprint: int
    content_hash: bytes
    normalized_length: int
    threshold: int | None
    added: bool
    rejected: Match | None = None
    refetched: bool = False
    repeated: bool = False


def rejection_reason(candidate: Match) -> str:
    """Why verification rejected *candidate*: ``"page_sizes"`` (the text is a small part
    of the larger page), ``"numbers"`` (each names a number the other lacks) or
    ``"similarity"`` (too few word pairs in common).

    >>> rejection_reason(Match("a", 2, "near", 0, "first", 0.9, numbers_differ=True))
    'numbers'
    """
    if candidate.page_sizes_differ:
        return "page_sizes"
    if candidate.numbers_differ:
        return "numbers"
    return "similarity"


def content_signature(
    *, fold_repeats: bool, min_repeats: int, extractor: str | None = None
) -> dict[str, Any]:
    """The rules a stored content index depends on, as recorded in its state files.

    * the fingerprint module's version and feature settings (one entry each, so a
      mismatch names the setting);
    * the main-text extractor the texts came from (``None``: texts given as they are);
    * the normalization options (``min_repeats`` only matters when folding repeats);
    * the band layout.

    Thresholds are not part of it: they may change between runs.

    >>> signature = content_signature(fold_repeats=False, min_repeats=2)
    >>> signature["band_count"], signature["fold_repeats"], signature["min_repeats"]
    (4, False, None)
    """
    signature: dict[str, Any] = {
        **{f"fingerprint.{name}": value for name, value in fingerprints.describe().items()},
        "fingerprint.version": fingerprints.FINGERPRINT_VERSION,
        "extractor": extractor,
        "fold_repeats": fold_repeats,
        "min_repeats": min_repeats if fold_repeats else None,
        **band_layout(),
    }
    # As it reads back from a state file (tuples become lists), so that equal rules compare
    # equal.
    loaded: dict[str, Any] = json.loads(json.dumps(signature, sort_keys=True))
    return loaded


def _check_distance_option(name: str, value: int) -> None:
    if not isinstance(value, int) or not 0 <= value <= MAX_QUERY_DISTANCE:
        raise ValueError(
            f"{name} must be an integer between 0 and {MAX_QUERY_DISTANCE} (the banded index "
            f"finds every neighbour only that close), got {value!r}"
        )


def _check_length_option(name: str, value: int) -> None:
    if not isinstance(value, int) or value < 0:
        raise ValueError(f"{name} must be a number of characters, 0 or more, got {value!r}")


class _Signatures(NamedTuple):
    """What verifies a candidate: the signatures of a document kept."""

    minhash: bytes
    numbers: int
    page_size: int


class NearDuplicateDetector:
    """Tell whether a text duplicates one seen before, exactly or nearly.

    * :meth:`check_and_add` returns the :class:`Match` for a duplicate and ``None`` for a
      new text, which it keeps; a duplicate is not kept (the earlier document stays the
      representative), but a near one becomes an entry of it unless *index_copies* is
      false (see the module doc);
    * the Hamming threshold is *short_threshold* for normalized texts shorter than
      *short_text_chars*, *long_threshold* otherwise (both at most 3); texts shorter than
      *min_chars* only get the exact check;
    * a near match of either stage counts only when the two texts' estimated word-pair
      Jaccard similarity is at least *min_similarity*; *second_stage* false leaves the
      wider search (up to *second_stage_distance* bits, long texts only) out;
    * *fold_repeats* and *min_repeats* are passed to
      :func:`crawler.content.fingerprints.normalize_text`; *extractor* names the main-text
      extractor the texts come from (it only enters the :attr:`signature`);
    * *index* and *content_hashes* choose the storage (default: one compact in-memory
      table for both); :meth:`open` persists the in-memory storage in a state directory;
    * safe to call from several threads: fingerprinting runs in parallel, the look-up and
      the add happen together under a lock.

    >>> detector = NearDuplicateDetector()
    >>> text = "A page about near-duplicate detection, long enough to be fingerprinted."
    >>> detector.check_and_add("https://example.com/a", text) is None
    True
    >>> detector.check_and_add("https://example.com/b", text)  # doctest: +ELLIPSIS
    Match(key='https://example.com/a', distance=0, kind='exact', fingerprint=...)
    >>> len(detector)
    1
    """

    def __init__(
        self,
        *,
        short_text_chars: int = DEFAULT_SHORT_TEXT_CHARS,
        short_threshold: int = DEFAULT_SHORT_THRESHOLD,
        long_threshold: int = DEFAULT_LONG_THRESHOLD,
        min_chars: int = DEFAULT_MIN_CHARS,
        fold_repeats: bool = False,
        min_repeats: int = DEFAULT_MIN_REPEATS,
        min_similarity: float = DEFAULT_MIN_SIMILARITY,
        second_stage: bool = True,
        second_stage_distance: int = DEFAULT_SECOND_STAGE_DISTANCE,
        index: FingerprintIndex | None = None,
        content_hashes: ContentHashTable | None = None,
        shared_index: RedisContentIndex | None = None,
        extractor: str | None = None,
        index_copies: bool = True,
    ) -> None:
        _check_length_option("short_text_chars", short_text_chars)
        _check_distance_option("short_threshold", short_threshold)
        _check_distance_option("long_threshold", long_threshold)
        _check_length_option("min_chars", min_chars)
        if not isinstance(min_similarity, (int, float)) or not 0 <= min_similarity <= 1:
            raise ValueError(
                f"min_similarity must be a number from 0 to 1 (an estimated Jaccard "
                f"similarity), got {min_similarity!r}"
            )
        if (
            not isinstance(second_stage_distance, int)
            or not max(short_threshold, long_threshold)
            <= second_stage_distance
            <= MAX_PROBED_DISTANCE
        ):
            raise ValueError(
                f"second_stage_distance must be an integer from the long threshold "
                f"({long_threshold}) to {MAX_PROBED_DISTANCE}, got {second_stage_distance!r}"
            )
        self.min_similarity = float(min_similarity)
        self.index_copies = index_copies
        self.second_stage = second_stage
        self.second_stage_distance = second_stage_distance
        self.short_text_chars = short_text_chars
        self.short_threshold = short_threshold
        self.long_threshold = long_threshold
        self.min_chars = min_chars
        self.fold_repeats = fold_repeats
        self.min_repeats = min_repeats
        self.extractor = extractor
        self._in_memory_default = index is None and content_hashes is None and shared_index is None
        documents = DocumentTable()
        self.index: FingerprintIndex = MemoryFingerprintIndex(documents) if index is None else index
        self.content_hashes: ContentHashTable = (
            MemoryContentHashTable(documents) if content_hashes is None else content_hashes
        )
        self._state: JournaledContentIndex | None = None
        #: rows of the documents table below this one were loaded by :meth:`open`
        self._first_row_of_run = 0
        self._copies = 0
        self._lock = threading.Lock()
        self.shared_index = shared_index
        if shared_index is not None:
            self.index = shared_index

    @property
    def second_stage_min_similarity(self) -> float:
        """The similarity a second-stage candidate needs: two fifths of the way from
        ``min_similarity`` to 1, as its fingerprint is already farther than the threshold.

        >>> NearDuplicateDetector().second_stage_min_similarity
        0.7
        """
        return round(self.min_similarity + (1.0 - self.min_similarity) * 2 / 5, 6)

    @property
    def signature(self) -> dict[str, Any]:
        """The rules the stored fingerprints depend on (see :func:`content_signature`)."""
        return content_signature(
            fold_repeats=self.fold_repeats, min_repeats=self.min_repeats, extractor=self.extractor
        )

    def open(self, state_dir: Path | str, *, snapshot_every: int = 100_000) -> None:
        """Persist the documents in *state_dir*, loading those a previous run left there.

        * every kept document is journaled as it is added (``kill -9`` loses none), and
          the whole state is snapshotted every *snapshot_every* documents and at
          :meth:`close`;
        * a state directory written with other fingerprint rules raises
          :class:`~crawler.state.persistence.StateFileError` naming the difference; a corrupt
          file raises it too; the detector is then left as it was.

        Only a detector with the default in-memory storage, still empty, can be opened.
        """
        if not self._in_memory_default:
            raise ValueError("only a detector with the default in-memory storage can be opened")
        if self._state is not None or len(self):
            raise ValueError("open() must come first, before any document is added")
        state = JournaledContentIndex(
            Path(state_dir), self.signature, snapshot_every=snapshot_every
        )
        state.open()
        self.index, self.content_hashes, self._state = state.index, state.content_hashes, state
        self._first_row_of_run = len(state.content_hashes.documents)

    def check_state_files(self, state_dir: Path | str) -> None:
        """Raise :class:`~crawler.state.persistence.StateFileError` when a file of *state_dir*
        that :meth:`open` needs is missing beside the other, reading headers only."""
        JournaledContentIndex(Path(state_dir), self.signature).journal.check_files()

    @property
    def snapshot_due(self) -> bool:
        """Whether the next document checked may write the state directory's whole snapshot
        (not a moment for the reactor's thread)."""
        return self._state is not None and self._state.snapshot_due

    def close(self) -> None:
        """Snapshot the state directory and close it (nothing to do in memory)."""
        if self._state is not None:
            self._state.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc_value: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    def threshold_for(self, normalized_length: int) -> int | None:
        """The Hamming distance that counts as near for a normalized text of
        *normalized_length* characters, ``None`` when only the exact check applies.

        >>> detector = NearDuplicateDetector()
        >>> detector.threshold_for(10), detector.threshold_for(150), detector.threshold_for(900)
        (None, 2, 3)
        """
        if normalized_length < self.min_chars:
            return None
        if normalized_length < self.short_text_chars:
            return self.short_threshold
        return self.long_threshold

    def check_and_add(self, key: str, text: str) -> Match | None:
        """Return the earlier document *text* duplicates, or keep it and return ``None``."""
        return self.check(key, text).match

    def fingerprint(self, text: str) -> TextFingerprint:
        """Normalize *text* and fingerprint it; pure, safe in any thread or process."""
        return fingerprint_text(text, fold_repeats=self.fold_repeats, min_repeats=self.min_repeats)

    def check(self, key: str, text: str, *, add: bool = True) -> Decision:
        """Look *text* up; keep it as document *key* when it is new and *add* is true.

        Returns the whole :class:`Decision`, with the text's own fingerprint, for audit.
        """
        return self.check_fingerprinted(key, self.fingerprint(text), add=add)

    def check_fingerprinted(
        self, key: str, text_fingerprint: TextFingerprint, *, add: bool = True
    ) -> Decision:
        """:meth:`check` for a text already fingerprinted (e.g. in a worker process)."""
        threshold = self.threshold_for(text_fingerprint.normalized_length)
        repeated = False
        if not text_fingerprint.normalized_length:
            # an empty text says nothing about the page: no duplicate, nothing to keep
            match, rejected = None, None
        elif self.shared_index is not None:
            match, rejected = self._shared_match(key, text_fingerprint, threshold, add=add)
        else:
            with self._lock:
                match, rejected, kept = self._match(key, text_fingerprint, threshold)
                if match is not None and match.key == key and match.stage == "exact":
                    repeated = self._kept_in_this_run(text_fingerprint.content_hash)
                if (
                    add
                    and self.index_copies
                    and kept is not None
                    and match is not None
                    and match.key != key
                ):
                    # one more fingerprint of the kept document: see the module doc
                    entry = replace(
                        text_fingerprint,
                        minhash=kept.minhash,
                        numbers=kept.numbers,
                        page_size=kept.page_size,
                    )
                    self._add(match.key, entry, near_indexed=True, copy=True)
                if add and match is None:
                    self._add(key, text_fingerprint, near_indexed=threshold is not None)
        refetched = match is not None and match.key == key
        return Decision(
            key=key,
            match=None if refetched else match,
            fingerprint=text_fingerprint.fingerprint,
            content_hash=text_fingerprint.content_hash,
            normalized_length=text_fingerprint.normalized_length,
            threshold=threshold,
            added=add and match is None and text_fingerprint.normalized_length > 0,
            rejected=rejected if match is None else None,
            refetched=refetched,
            repeated=repeated,
        )

    def _kept_in_this_run(self, content_hash: bytes) -> bool:
        """Whether the first document with *content_hash* was kept since :meth:`open` (or
        construction); ``False`` for storage that cannot tell."""
        row_of = getattr(self.content_hashes, "row", None)
        if row_of is None:
            return False
        row = row_of(content_hash)
        return row is not None and row >= self._first_row_of_run

    def second_stage_for(self, normalized_length: int) -> int | None:
        """The radius of the second stage for a text of *normalized_length* characters,
        ``None`` when it does not apply (switched off, or a short text: few word pairs
        give a MinHash too coarse to verify a distant fingerprint with)."""
        if not self.second_stage or normalized_length < max(self.min_chars, self.short_text_chars):
            return None
        return self.second_stage_distance

    def _shared_match(
        self, key: str, text_fingerprint: TextFingerprint, threshold: int | None, *, add: bool
    ) -> tuple[Match | None, Match | None]:
        """Look up, verify and insert in one atomic step of the shared index."""
        assert self.shared_index is not None
        found = self.shared_index.check_and_add(
            key,
            text_fingerprint.fingerprint,
            text_fingerprint.content_hash,
            threshold,
            add=add,
            minhash=text_fingerprint.minhash,
            numbers=text_fingerprint.numbers,
            page_size=text_fingerprint.page_size,
            text_chars=text_fingerprint.normalized_length,
            min_similarity=self.min_similarity,
            second_stage_min_similarity=self.second_stage_min_similarity,
            second_stage_distance=self.second_stage_for(text_fingerprint.normalized_length),
            add_copy=self.index_copies,
        )
        if found is None:
            return None, None
        stage: Stage = (
            "exact"
            if found.stage == "exact"
            else ("second" if found.stage == "second" else "first")
        )
        match = Match(
            key=found.key,
            distance=found.distance,
            kind="exact" if stage == "exact" else "near",
            fingerprint=found.fingerprint,
            stage=stage,
            similarity=found.similarity,
            numbers_differ=found.numbers_differ,
            page_sizes_differ=found.page_sizes_differ,
        )
        return (match, None) if found.accepted else (None, match)

    def _match(
        self, key: str, text_fingerprint: TextFingerprint, threshold: int | None
    ) -> tuple[Match | None, Match | None, _Signatures | None]:
        """The verified match of a text, and else the nearest candidate rejected; for a
        near match, the signatures of the document matched."""
        exact = self._exact_match(key, text_fingerprint)
        rejected_exact = None
        if exact is not None and exact.page_sizes_differ:
            exact, rejected_exact = None, exact
        if exact is not None or threshold is None:
            return exact, rejected_exact, None
        search = getattr(self.index, "search", None)
        if search is None:
            # an index without MinHash signatures: nothing can verify a near match
            found = self.index.nearest(text_fingerprint.fingerprint, threshold)
            if found is None:
                return None, rejected_exact, None
            earlier_key, fingerprint, distance = found
            return (
                None,
                rejected_exact or Match(earlier_key, distance, "near", fingerprint, "first", 0.0),
                None,
            )
        radius = self.second_stage_for(text_fingerprint.normalized_length)
        if radius is None:
            candidates = search(text_fingerprint.fingerprint, threshold)
        else:
            # one wide search serves both stages: it finds every document within the
            # threshold too, nearest first
            candidates = search(text_fingerprint.fingerprint, radius, probe_neighbours=True)
        first = self._verified(
            text_fingerprint,
            [c for c in candidates if c[2] <= threshold],
            "first",
            self.min_similarity,
        )
        if first[0] is not None:
            return first
        if radius is None:
            return None, rejected_exact or first[1], None
        second = self._verified(
            text_fingerprint,
            [c for c in candidates if c[2] > threshold],
            "second",
            self.second_stage_min_similarity,
        )
        if second[0] is not None:
            return second
        return None, rejected_exact or first[1] or second[1], None

    def _verified(
        self,
        text_fingerprint: TextFingerprint,
        candidates: list[tuple[str, int, int, bytes, int, int]],
        stage: Stage,
        min_similarity: float,
    ) -> tuple[Match | None, Match | None, _Signatures | None]:
        """The nearest candidate whose signatures agree with the text's, with them, else
        the nearest one rejected; at most :data:`MAX_VERIFIED_CANDIDATES` are checked."""
        rejected: Match | None = None
        for key, fingerprint, distance, minhash, numbers, page_size in candidates[
            :MAX_VERIFIED_CANDIDATES
        ]:
            similarity = fingerprints.estimated_jaccard(text_fingerprint.minhash, minhash)
            candidate = Match(
                key,
                distance,
                "near",
                fingerprint,
                stage,
                round(similarity, 3),
                fingerprints.numbers_conflict(text_fingerprint.numbers, numbers),
                fingerprints.page_sizes_differ(
                    text_fingerprint.page_size, page_size, text_fingerprint.normalized_length
                ),
            )
            if (
                similarity >= min_similarity
                and any(minhash)
                and not candidate.numbers_differ
                and not candidate.page_sizes_differ
            ):
                return candidate, None, _Signatures(minhash, numbers, page_size)
            if rejected is None:
                rejected = candidate
        return None, rejected, None

    def _exact_match(self, key: str, text_fingerprint: TextFingerprint) -> Match | None:
        content_hash, fingerprint = text_fingerprint.content_hash, text_fingerprint.fingerprint
        earlier = self.content_hashes.get(content_hash)
        if earlier is None:
            return None
        earlier_key, earlier_fingerprint = earlier
        if earlier_fingerprint != fingerprint:
            # Equal texts have equal fingerprints: the stored part of the hash collided.
            logger.warning(
                "Content hash of %(key)s collides with that of %(earlier_key)s although "
                "their texts differ; not treated as an exact duplicate",
                {"key": key, "earlier_key": earlier_key},
            )
            return None
        page_size_of = getattr(self.content_hashes, "page_size", None)
        earlier_page_size = 0 if page_size_of is None else page_size_of(content_hash)
        return Match(
            key=earlier_key,
            distance=0,
            kind="exact",
            fingerprint=fingerprint,
            page_sizes_differ=fingerprints.page_sizes_differ(
                text_fingerprint.page_size,
                earlier_page_size,
                text_fingerprint.normalized_length,
            ),
        )

    def add_fingerprinted(
        self,
        key: str,
        fingerprint: int,
        content_hash: bytes,
        *,
        near_indexed: bool = True,
        minhash: bytes | None = None,
        numbers: int = 0,
        page_size: int = 0,
    ) -> None:
        """Keep a document whose fingerprint and content hash are already known, without
        looking it up (e.g. to load documents fingerprinted elsewhere).

        *near_indexed* false keeps it for the exact check only, as :meth:`check` does for
        texts shorter than ``min_chars``.
        """
        if minhash is None:
            minhash = bytes(fingerprints.MINHASH_BYTES)  # what the index keeps for none
        document = TextFingerprint(0, fingerprint, content_hash, minhash, numbers, page_size)
        with self._lock:
            self._add(key, document, near_indexed=near_indexed)

    def _add(
        self, key: str, document: TextFingerprint, *, near_indexed: bool, copy: bool = False
    ) -> None:
        """Keep *document* as *key*'s (with *copy*, as one more fingerprint of the kept
        document *key*); ``normalized_length`` is not kept."""
        fingerprint, content_hash = document.fingerprint, document.content_hash
        minhash, numbers, page_size = document.minhash, document.numbers, document.page_size
        if self._state is not None:
            self._state.add(
                key,
                fingerprint,
                content_hash,
                near_indexed=near_indexed,
                minhash=minhash,
                numbers=numbers,
                page_size=page_size,
                copy=copy,
            )
            return
        self._copies += copy
        if isinstance(self.content_hashes, MemoryContentHashTable):
            self.content_hashes.add(content_hash, key, fingerprint, minhash, numbers, page_size)
        else:
            self.content_hashes.add(content_hash, key, fingerprint)
        if near_indexed:
            if isinstance(self.index, MemoryFingerprintIndex):
                self.index.add(key, fingerprint, minhash, numbers, page_size)
            else:
                self.index.add(key, fingerprint)

    def __len__(self) -> int:
        """The number of documents kept (entries for their near copies left out)."""
        if self.shared_index is not None:
            return len(self.shared_index)
        if self._state is not None:
            return len(self._state)
        return len(self.content_hashes) - self._copies
