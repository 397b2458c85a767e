"""``scrapy dedup-text INPUT``: the content dedup engine applied to a file, offline.

Works in and outside a Scrapy project (registered through the ``scrapy.commands``
entry point). Inside a project, the project's ``DEDUP_*`` thresholds are the defaults of
the options, so the file is deduplicated the way the crawl's pipeline would.
"""

from __future__ import annotations

import os
import sys
from contextlib import ExitStack
from pathlib import Path
from typing import IO, TYPE_CHECKING

from scrapy.commands import ScrapyCommand
from scrapy.exceptions import UsageError
from tqdm import tqdm

from crawler import defaults
from crawler.content.configuration import (
    text_chars_from_settings,
    text_field_from_settings,
    threshold_from_settings,
)
from crawler.content.index import MAX_QUERY_DISTANCE
from crawler.content.neardup import NearDuplicateDetector
from crawler.content.records import (
    DEFAULT_MAX_RECORD_BYTES,
    DEFAULT_MIN_REPEATS,
    RecordDeduplicator,
    RecordFormat,
)

if TYPE_CHECKING:
    import argparse

JSON_LINES_SUFFIXES = (".jsonl", ".ndjson", ".jsonlines")


class Command(ScrapyCommand):
    requires_project = False
    requires_crawler_process = False

    def syntax(self) -> str:
        return "[options] INPUT"

    def short_desc(self) -> str:
        return "Drop exact and near duplicate lines or JSON-lines records of a file"

    def long_desc(self) -> str:
        return (
            "Deduplicate the lines of a text file, or the records of a JSON-lines file "
            "(chosen by --field, or by a .jsonl/.ndjson/.jsonlines name), with the "
            "engine of the content pipeline: normalization, exact hash, folding of "
            "repeated blocks, SimHash. Kept records are written unchanged, in input "
            "order; the input file is never modified."
        )

    def add_options(self, parser: argparse.ArgumentParser) -> None:
        super().add_options(parser)
        parser.add_argument(
            "-o",
            "--output",
            metavar="FILE",
            default="-",
            help="write kept records to FILE ('-', the default, is stdout)",
        )
        parser.add_argument(
            "--audit",
            metavar="FILE",
            help="write one JSON line per dropped record (and per record kept for bad "
            "input) to FILE",
        )
        parser.add_argument(
            "--format",
            choices=("lines", "jsonl"),
            help="'lines': each line is a record's text; 'jsonl': each line is a JSON "
            "object; jsonl by default with --field or a .jsonl/.ndjson/.jsonlines INPUT",
        )
        parser.add_argument(
            "--field",
            metavar="NAME",
            help="JSON field holding the text (DEDUP_TEXT_FIELD by default, 'text')",
        )
        parser.add_argument(
            "--min-repeats",
            type=int,
            default=DEFAULT_MIN_REPEATS,
            metavar="N",
            help="fold a record that is one block repeated N times or more to that block "
            f"({DEFAULT_MIN_REPEATS} by default, so 'haha' stays and 'hahaha' is 'ha')",
        )
        parser.add_argument(
            "--no-fold-repeats",
            action="store_true",
            help="do not fold repeated blocks",
        )
        for option, setting in (
            ("--short-threshold", "DEDUP_SHORT_THRESHOLD"),
            ("--long-threshold", "DEDUP_LONG_THRESHOLD"),
            ("--short-text-chars", "DEDUP_SHORT_TEXT_CHARS"),
            ("--min-text-chars", "DEDUP_MIN_TEXT_CHARS"),
        ):
            parser.add_argument(
                option,
                type=int,
                metavar="N",
                help=f"{setting} by default ({getattr(defaults, setting)})",
            )
        parser.add_argument(
            "--max-record-bytes",
            type=int,
            default=DEFAULT_MAX_RECORD_BYTES,
            metavar="N",
            help="keep longer records unchecked, copied through in pieces "
            f"({DEFAULT_MAX_RECORD_BYTES:,} by default)",
        )
        parser.add_argument(
            "--no-progress",
            action="store_true",
            help="no progress bar (there is none either when stderr is not a terminal)",
        )

    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        if len(args) != 1:
            raise UsageError(
                f"expected one INPUT file, got {len(args)} arguments: {' '.join(args)}"
                if args
                else "INPUT is missing"
            )
        from_stdin = args[0] == "-"
        input_path = Path("/dev/stdin" if from_stdin else args[0])
        if not from_stdin and not input_path.is_file():
            raise UsageError(f"INPUT {args[0]!r} is not a readable file (- reads standard input)")
        output_path = None if opts.output == "-" else Path(opts.output)
        audit_path = Path(opts.audit) if opts.audit else None
        for name, given, path in (
            ("-o/--output", opts.output, output_path),
            ("--audit", opts.audit, audit_path),
        ):
            if path is not None and not from_stdin and _same_file(path, input_path):
                raise UsageError(
                    f"{name} {given!r} is the input file; dedup-text never modifies its "
                    "input: choose another path"
                )
        if (
            output_path is not None
            and audit_path is not None
            and _same_file(output_path, audit_path)
        ):
            raise UsageError(f"-o/--output and --audit are the same file, {opts.audit!r}")
        deduplicator = self._deduplicator(input_path, opts)
        with ExitStack() as stack:
            try:
                # standard input is read once: the audit then names a matched record by
                # its line only, without its text
                source = (
                    sys.stdin.buffer if from_stdin else stack.enter_context(input_path.open("rb"))
                )
                lookup = None if from_stdin else stack.enter_context(input_path.open("rb"))
                kept: IO[bytes] = (
                    sys.stdout.buffer
                    if output_path is None
                    else stack.enter_context(output_path.open("wb"))
                )
                audit = (
                    None
                    if audit_path is None
                    else stack.enter_context(audit_path.open("w", encoding="utf-8"))
                )
            except OSError as error:
                raise UsageError(str(error)) from error
            progress_bar = stack.enter_context(
                tqdm(
                    total=None if from_stdin else input_path.stat().st_size,
                    unit="B",
                    unit_scale=True,
                    desc="dedup-text",
                    file=sys.stderr,
                    disable=opts.no_progress or not sys.stderr.isatty(),
                )
            )
            try:
                summary = deduplicator.run(
                    source, kept, audit, lookup=lookup, progress=progress_bar.update
                )
                kept.flush()
            except BrokenPipeError:  # e.g. piped into head: the reader has what it wanted
                os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
                print("dedup-text: output closed before the end of INPUT", file=sys.stderr)
                self.exitcode = 1
                return
        print(f"dedup-text: {summary.report()}".replace("\n", "\n  "), file=sys.stderr)

    def _deduplicator(self, input_path: Path, opts: argparse.Namespace) -> RecordDeduplicator:
        assert self.settings is not None
        settings = self.settings
        record_format: RecordFormat = opts.format or (
            "jsonl"
            if opts.field is not None or input_path.suffix.lower() in JSON_LINES_SUFFIXES
            else "lines"
        )
        if record_format == "lines" and opts.field is not None:
            raise UsageError("--field only applies to --format jsonl")
        if opts.min_repeats < 2:
            raise UsageError(f"--min-repeats must be 2 or more, got {opts.min_repeats}")
        if opts.max_record_bytes < 1:
            raise UsageError(f"--max-record-bytes must be 1 or more, got {opts.max_record_bytes}")

        limits = {}
        for name, setting, highest in (
            ("short_threshold", "DEDUP_SHORT_THRESHOLD", MAX_QUERY_DISTANCE),
            ("long_threshold", "DEDUP_LONG_THRESHOLD", MAX_QUERY_DISTANCE),
            ("short_text_chars", "DEDUP_SHORT_TEXT_CHARS", None),
            ("min_text_chars", "DEDUP_MIN_TEXT_CHARS", None),
        ):
            value = getattr(opts, name)
            if value is None:
                reader = (
                    threshold_from_settings if highest is not None else text_chars_from_settings
                )
                try:
                    value = reader(settings, setting)
                except ValueError as exc:
                    raise UsageError(str(exc)) from None
            elif value < 0 or (highest is not None and value > highest):
                allowed = f"from 0 to {highest}" if highest is not None else "0 or more"
                raise UsageError(f"--{name.replace('_', '-')}={value} must be {allowed}")
            limits[name] = value
        detector = NearDuplicateDetector(
            short_threshold=limits["short_threshold"],
            long_threshold=limits["long_threshold"],
            short_text_chars=limits["short_text_chars"],
            min_chars=limits["min_text_chars"],
        )
        try:
            text_field = opts.field or text_field_from_settings(settings)
        except ValueError as exc:
            raise UsageError(str(exc)) from None
        return RecordDeduplicator(
            detector,
            record_format=record_format,
            text_field=text_field,
            min_repeats=None if opts.no_fold_repeats else opts.min_repeats,
            max_record_bytes=opts.max_record_bytes,
        )


def _same_file(path: Path, other: Path) -> bool:
    """Whether *path* names *other* (same inode, or same resolved path if it does not exist)."""
    try:
        return path.samefile(other)
    except OSError:
        return path.resolve() == other.resolve()
