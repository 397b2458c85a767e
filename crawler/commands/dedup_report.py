"""``scrapy dedup-report AUDIT_FILE -o report.html``: an HTML report of what dedup did.

Works outside a project. The audit file is what ``DEDUP_AUDIT_FILE`` collected during
crawls; it is read as a stream, and lines that are not audit records are skipped and
counted.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

from scrapy.commands import ScrapyCommand
from scrapy.exceptions import UsageError

from crawler.report import render_html, summarize

if TYPE_CHECKING:
    import argparse


class Command(ScrapyCommand):
    requires_project = False
    default_settings = {"LOG_ENABLED": False}

    def syntax(self) -> str:
        return "AUDIT_FILE -o REPORT.html"

    def short_desc(self) -> str:
        return "Write an HTML report of what dedup did, from its audit file"

    def long_desc(self) -> str:
        return (
            "Write a self-contained HTML report from a DEDUP_AUDIT_FILE: requests filtered "
            "by canonical rule, the query parameters that most often produced duplicates, "
            "content decisions, a histogram of Hamming distances and the largest clusters "
            "of duplicate pages."
        )

    def add_options(self, parser: argparse.ArgumentParser) -> None:
        super().add_options(parser)
        parser.add_argument(
            "-o", "--output", metavar="FILE", required=True, help="write the report to FILE"
        )
        parser.add_argument(
            "--clusters",
            type=int,
            default=20,
            metavar="N",
            help="show the N largest clusters of duplicates (default: 20)",
        )

    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        if len(args) != 1:
            raise UsageError("give one audit file (the DEDUP_AUDIT_FILE of a crawl)")
        if opts.clusters < 0:
            raise UsageError(f"--clusters={opts.clusters} must be 0 or more")
        audit_path, output = Path(args[0]), Path(opts.output)
        try:
            with audit_path.open("rb") as lines:
                summary = summarize(lines, max_clusters=opts.clusters)
        except OSError as exc:
            print(f"Cannot read the audit file {audit_path}: {exc.strerror}", file=sys.stderr)
            self.exitcode = 1
            return
        try:
            output.write_text(render_html(summary, source=str(audit_path)), encoding="utf-8")
        except OSError as exc:
            print(f"Cannot write the report to {output}: {exc.strerror}", file=sys.stderr)
            self.exitcode = 1
            return
        print(
            f"Wrote {output}: {summary.url_filtered} filtered requests, "
            f"{summary.content_decided} content decisions, "
            f"{summary.cluster_count} clusters of duplicates"
        )
        if summary.malformed_lines:
            print(
                f"Skipped {summary.malformed_lines} malformed lines of {audit_path} (the "
                f"first is line {summary.first_malformed_line})",
                file=sys.stderr,
            )
