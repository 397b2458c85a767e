"""Deduplicate the records of a file, one line at a time, with the content engine.

:class:`RecordDeduplicator` reads a text file (one record a line) or a JSON-lines file
(one object a line, the text in one field) and, for each record:

1. normalizes its text (:func:`crawler.content.fingerprints.normalize_text`);
2. folds it to the block it repeats end to end, when it repeats one at least
   ``min_repeats`` times (``"ABCABCABC"`` -> ``"abc"``, while ``"haha"`` stays with the
   default of 3);
3. looks it up in a :class:`~crawler.content.neardup.NearDuplicateDetector`: an exact or near
   duplicate of a record kept before is dropped, anything else is kept and written out
   byte for byte as it was read.

It streams: a record is written (or not) before the next one is read, so memory holds one
record at a time plus the detector's index, about 60 bytes a kept record. Bad input gets
a clear outcome and loses nothing:

* records with nothing left after normalization (empty lines, punctuation only) are
  compared by their exact text, whitespace stripped: the first blank line is kept
  (``no-text``), later ones are exact duplicates; ``"!!!"`` and ``"???"`` both stay.
  (Such texts are held in memory, one entry each distinct one: few in practice.)
* JSON lines that do not parse: ``invalid-json``; objects without the text field, or
  whose field is not a string: ``missing-field`` (both with a line in the audit);
* records longer than ``max_record_bytes``: ``too-long``, copied through in pieces
  without being held whole in memory (and audited);
* bytes that are not UTF-8 are read as U+FFFD for the comparison only (counted in
  ``invalid_utf8``); the record is still written with its original bytes.

Nothing here imports Scrapy.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import IO, TYPE_CHECKING, Any, Literal

from crawler.content import fingerprints
from crawler.content.neardup import Match, NearDuplicateDetector
from crawler.content.text_fingerprints import fingerprint_normalized

if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = [
    "DEFAULT_MAX_RECORD_BYTES",
    "DEFAULT_MIN_REPEATS",
    "PREVIEW_CHARS",
    "RecordDeduplicator",
    "RecordFormat",
    "Summary",
]

RecordFormat = Literal["lines", "jsonl"]

#: Records longer than this are kept without being compared (and never held whole).
DEFAULT_MAX_RECORD_BYTES = 10_000_000
#: Fold a record made of one block only when the block is repeated at least this often.
DEFAULT_MIN_REPEATS = 3
#: Characters of a record's text shown in the audit.
PREVIEW_CHARS = 60
#: Report progress every this many records.
PROGRESS_EVERY = 256

_COPY_CHUNK = 1 << 20


@dataclass
class Summary:
    """What a run read, kept and dropped, and how fast.

    * ``dropped``: by reason (``exact``, ``near``; ``folded-exact``, ``folded-near`` when
      the record matched once folded to its repeated block);
    * ``unchecked``: records kept without a fingerprint, by reason (``no-text``,
      ``invalid-json``, ``missing-field``, ``too-long``); they are counted in ``kept``.
    """

    records: int = 0
    kept: int = 0
    dropped: Counter[str] = field(default_factory=Counter)
    unchecked: Counter[str] = field(default_factory=Counter)
    invalid_utf8: int = 0
    bytes_read: int = 0
    seconds: float = 0.0

    @property
    def dropped_total(self) -> int:
        return sum(self.dropped.values())

    @property
    def records_per_second(self) -> float:
        return self.records / self.seconds if self.seconds > 0 else 0.0

    def report(self) -> str:
        """The summary as a few lines a person reads.

        >>> summary = Summary(records=4, kept=3, dropped=Counter(exact=1), seconds=2.0)
        >>> print(summary.report())
        4 records read in 2.0 s (2 records/s)
        kept 3
        dropped 1 (exact 1)
        """
        lines = [
            f"{self.records:,} records read in {self.seconds:.1f} s "
            f"({self.records_per_second:,.0f} records/s)",
            f"kept {self.kept:,}" + _by_reason(self.unchecked, "not fingerprinted: "),
            f"dropped {self.dropped_total:,}" + _by_reason(self.dropped),
        ]
        if self.invalid_utf8:
            lines.append(
                f"{self.invalid_utf8:,} records with invalid UTF-8 (compared with U+FFFD, "
                "written unchanged)"
            )
        return "\n".join(lines)


def _by_reason(counts: Counter[str], prefix: str = "") -> str:
    if not counts:
        return ""
    listed = ", ".join(f"{reason} {count:,}" for reason, count in sorted(counts.items()))
    return f" ({prefix}{listed})"


@dataclass(frozen=True)
class _Text:
    """The text of a record, or why it has none to compare."""

    text: str | None
    problem: str | None = None
    detail: str | None = None


class RecordDeduplicator:
    """Stream the records of a file through a :class:`NearDuplicateDetector`.

    * *record_format*: ``"lines"`` (each line is a record's text) or ``"jsonl"`` (each
      line a JSON object whose *field* holds the text);
    * *min_repeats*: fold records made of a block repeated that many times or more;
      ``None`` folds nothing;
    * *detector*: thresholds and storage (default: the pipeline's defaults, in memory).
      It must not fold repeats itself: the deduplicator folds, so that it can tell
      folded matches apart.

    >>> import io
    >>> kept = io.BytesIO()
    >>> lines = b"Nice!\\nnice  !\\nhaha\\nha\\nhahaha\\n"
    >>> summary = RecordDeduplicator().run(io.BytesIO(lines), kept)
    >>> kept.getvalue()
    b'Nice!\\nhaha\\nha\\n'
    >>> sorted(summary.dropped.items())
    [('exact', 1), ('folded-exact', 1)]
    """

    def __init__(
        self,
        detector: NearDuplicateDetector | None = None,
        *,
        record_format: RecordFormat = "lines",
        text_field: str = "text",
        min_repeats: int | None = DEFAULT_MIN_REPEATS,
        max_record_bytes: int = DEFAULT_MAX_RECORD_BYTES,
    ) -> None:
        if detector is None:
            detector = NearDuplicateDetector()
        if detector.fold_repeats:
            raise ValueError(
                "the detector must not fold repeats itself; pass min_repeats to "
                "RecordDeduplicator instead"
            )
        if record_format not in ("lines", "jsonl"):
            raise ValueError(f"record_format must be 'lines' or 'jsonl', got {record_format!r}")
        if min_repeats is not None and min_repeats < 2:
            raise ValueError(f"min_repeats must be 2 or more (or None), got {min_repeats!r}")
        if max_record_bytes < 1:
            raise ValueError(f"max_record_bytes must be 1 or more, got {max_record_bytes!r}")
        self.detector = detector
        self.record_format = record_format
        self.text_field = text_field
        self.min_repeats = min_repeats
        self.max_record_bytes = max_record_bytes
        # records with nothing left after normalization, by their stripped text
        self._textless: dict[str, str] = {}

    def run(
        self,
        source: IO[bytes],
        kept: IO[bytes] | None = None,
        audit: IO[str] | None = None,
        *,
        lookup: IO[bytes] | None = None,
        progress: Callable[[int], object] | None = None,
    ) -> Summary:
        """Read *source* to its end; return what was kept and dropped.

        * kept records go to *kept* unchanged (their line ending included), in input order;
        * *audit* gets one JSON line per dropped record (line number, reason, distance,
          the line number of the record it matched, previews of both) and per record kept
          because of bad input (line number, reason, detail);
        * *lookup*, a second seekable handle on the same input, lets the audit show a
          preview of the matched record (read back from its offset, not held in memory);
        * *progress* is called now and then with the number of bytes read since its last
          call.
        """
        summary = Summary()
        started = time.perf_counter()
        offset = reported = 0
        while True:
            line = source.readline(self.max_record_bytes + 1)
            if not line:
                break
            summary.records += 1
            number = summary.records
            if len(line) > self.max_record_bytes and not line.endswith(b"\n"):
                length = len(line) + self._copy_rest_of_line(source, line, kept)
                summary.kept += 1
                summary.unchecked["too-long"] += 1
                self._audit_kept(
                    audit, number, "too-long", f"{length} bytes, more than {self.max_record_bytes}"
                )
                offset += length
            else:
                self._check(line, number, offset, summary, kept, audit, lookup)
                offset += len(line)
            if progress is not None and number % PROGRESS_EVERY == 0:
                progress(offset - reported)
                reported = offset
        if progress is not None and offset > reported:
            progress(offset - reported)
        summary.bytes_read = offset
        summary.seconds = time.perf_counter() - started
        return summary

    def _check(
        self,
        line: bytes,
        number: int,
        offset: int,
        summary: Summary,
        kept: IO[bytes] | None,
        audit: IO[str] | None,
        lookup: IO[bytes] | None,
    ) -> None:
        try:
            decoded = line.decode("utf-8")
        except UnicodeDecodeError:
            summary.invalid_utf8 += 1
            decoded = line.decode("utf-8", "replace")
        record = self._text_of(decoded, first=number == 1)
        if record.text is None:
            assert record.problem is not None
            self._keep(line, record.problem, summary, kept)
            self._audit_kept(audit, number, record.problem, record.detail)
            return
        key = f"{number}:{offset}"
        normalized = fingerprints.normalize_text(record.text)
        if not normalized:
            earlier = self._textless.setdefault(record.text.strip(), key)
            if earlier == key:
                self._keep(line, "no-text", summary, kept)
                return
            match = Match(key=earlier, distance=0, kind="exact", fingerprint=0)
            self._drop(number, record.text, match, "exact", None, summary, audit, lookup)
            return
        folded = normalized
        if self.min_repeats is not None:
            folded = fingerprints.fold_repeated_block(normalized, min_repeats=self.min_repeats)
        decision = self.detector.check_fingerprinted(key, fingerprint_normalized(folded))
        if decision.match is None:
            self._keep(line, None, summary, kept)
            return
        kind = decision.match.kind
        reason = kind if folded == normalized else f"folded-{kind}"
        self._drop(
            number, record.text, decision.match, reason, decision.threshold, summary, audit, lookup
        )

    @staticmethod
    def _keep(line: bytes, unchecked: str | None, summary: Summary, kept: IO[bytes] | None) -> None:
        summary.kept += 1
        if unchecked is not None:
            summary.unchecked[unchecked] += 1
        if kept is not None:
            kept.write(line)

    def _drop(
        self,
        number: int,
        text: str,
        match: Match,
        reason: str,
        threshold: int | None,
        summary: Summary,
        audit: IO[str] | None,
        lookup: IO[bytes] | None,
    ) -> None:
        summary.dropped[reason] += 1
        if audit is None:
            return
        matched_number, matched_offset = map(int, match.key.split(":"))
        entry: dict[str, Any] = {
            "line": number,
            "decision": "dropped",
            "reason": reason,
            "distance": match.distance,
            "threshold": threshold,
            "matched_line": matched_number,
            "preview": _preview(text),
            "matched_preview": self._preview_at(lookup, matched_offset),
        }
        audit.write(json.dumps(entry, ensure_ascii=False) + "\n")

    def _text_of(self, decoded: str, *, first: bool) -> _Text:
        if self.record_format == "lines":
            return _Text(decoded)
        if first:
            decoded = decoded.removeprefix("\ufeff")
        if not decoded.strip():
            return _Text("")
        try:
            record = json.loads(decoded)
        except ValueError as error:
            return _Text(None, "invalid-json", str(error))
        if not isinstance(record, dict):
            return _Text(None, "missing-field", f"a JSON {type(record).__name__}, not an object")
        value = record.get(self.text_field)
        if value is None:
            return _Text(None, "missing-field", f"no {self.text_field!r} field")
        if not isinstance(value, str):
            return _Text(
                None,
                "missing-field",
                f"field {self.text_field!r} is a JSON {type(value).__name__}, not a string",
            )
        return _Text(value)

    def _preview_at(self, lookup: IO[bytes] | None, offset: int) -> str | None:
        if lookup is None:
            return None
        lookup.seek(offset)
        line = lookup.readline(self.max_record_bytes + 1).decode("utf-8", "replace")
        return _preview(self._text_of(line, first=offset == 0).text or "")

    def _copy_rest_of_line(self, source: IO[bytes], start: bytes, kept: IO[bytes] | None) -> int:
        """Copy a record too long to check to *kept* piece by piece; return the bytes
        read after *start*."""
        if kept is not None:
            kept.write(start)
        copied = 0
        while True:
            piece = source.readline(_COPY_CHUNK)
            if not piece:
                return copied
            copied += len(piece)
            if kept is not None:
                kept.write(piece)
            if piece.endswith(b"\n"):
                return copied

    @staticmethod
    def _audit_kept(audit: IO[str] | None, number: int, reason: str, detail: str | None) -> None:
        if audit is not None:
            entry = {"line": number, "decision": "kept", "reason": reason, "detail": detail}
            audit.write(json.dumps(entry, ensure_ascii=False) + "\n")


def _preview(text: str) -> str:
    """The start of *text*, whitespace collapsed, cut at :data:`PREVIEW_CHARS` with "…"."""
    words = " ".join(text[: PREVIEW_CHARS * 4].split())
    if len(words) <= PREVIEW_CHARS and len(text) <= PREVIEW_CHARS * 4:
        return words
    return words[: PREVIEW_CHARS - 1].rstrip() + "…"
