"""What :class:`~crawler.pipelines.NearDuplicatePipeline` says about its decisions.

* each item's outcome, counted in ``dedup/content/<outcome>``;
* one line in ``DEDUP_AUDIT_FILE`` per decision: the fingerprint, the copy matched and how
  close it came, a candidate rejected by the verification, a better copy;
* the summary line logged at close.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from crawler.audit import CONTENT_LEVEL, AuditLog
from crawler.content.neardup import rejection_reason

if TYPE_CHECKING:
    from pathlib import Path

    from scrapy.statscollectors import StatsCollector

    from crawler.content.neardup import Decision, Match

#: What the content level counts of its items (``dedup/content/<name>``); an item may count
#: in two (a kept item whose candidate the verification rejected: ``unique`` and
#: ``rejected``).
OUTCOMES = (
    "unique",
    "exact",
    "near",
    "no_text",
    "no_page",
    "unchecked",
    "rejected",
    "refetched",
    "timeout",
    "superseded",
    "unchanged",
)


class ContentReport:
    """The counts, audit lines and summary of one content pipeline."""

    def __init__(
        self, stats: StatsCollector, *, action: str, html_field: str, text_field: str
    ) -> None:
        self.stats = stats
        self.action = action
        self.html_field = html_field
        self.text_field = text_field
        self.counts: dict[str, int] = dict.fromkeys(OUTCOMES, 0)
        self._audit: AuditLog | None = None

    def open_audit(self, path: Path | None) -> None:
        if path is not None:
            self._audit = AuditLog(path)

    def close_audit(self) -> None:
        if self._audit is not None:
            self._audit.close()

    def count(self, outcome: str) -> None:
        self.counts[outcome] += 1
        self.stats.inc_value(f"dedup/content/{outcome}")

    def audit(
        self,
        url: str,
        decision_name: str,
        reason: str,
        decision: Decision | None,
        match: Match | None,
        *,
        better_copy: str | None = None,
        superseded_by: str | None = None,
        supersedes: str | None = None,
    ) -> None:
        """One audit line: *decision_name* (kept, dropped, marked) for *reason*.
        *better_copy*: the item was dropped although it is the better copy (the first copy
        had left already); *superseded_by*: the better copy that replaced it while it was
        held; *supersedes*: the earlier copy it replaced, exported already (``"mark"``)."""
        if self._audit is None:
            return
        record: dict[str, Any] = {
            "level": CONTENT_LEVEL,
            "url": url,
            "decision": decision_name,
            "reason": reason,
            "matched_url": match.key if match else None,
            "distance": match.distance if match else None,
            "simhash": f"{decision.fingerprint:016x}" if decision else None,
            "matched_simhash": f"{match.fingerprint:016x}" if match else None,
            "text_length": decision.normalized_length if decision else 0,
            "threshold": decision.threshold if decision else None,
            "stage": match.stage if match else None,
            "similarity": match.similarity if match else None,
        }
        if decision is not None and decision.rejected is not None:
            # kept although a first- or second-stage candidate came close: both figures
            record["rejected_url"] = decision.rejected.key
            record["rejected_distance"] = decision.rejected.distance
            record["rejected_similarity"] = decision.rejected.similarity
            record["rejected_because"] = rejection_reason(decision.rejected)
        if better_copy is not None:
            record["better_copy"] = better_copy
        if superseded_by is not None:
            record["superseded_by"] = superseded_by
        if supersedes is not None:
            record["supersedes"] = supersedes
        self._audit.write(record)

    def summary(self) -> str:
        counts = self.counts
        dropped_or_marked = "marked" if self.action == "mark" else "dropped"
        parts = [
            f"Content dedup: {counts['exact'] + counts['near']} items {dropped_or_marked} "
            f"(exact: {counts['exact']}, near: {counts['near']}), {counts['unique']} unique, "
            f"{counts['no_text']} without text"
        ]
        said_when_any = (
            ("rejected", "kept although a fingerprint came close (verification)"),
            ("refetched", "fetched again"),
            ("unchanged", f"{dropped_or_marked} as unchanged since their last fetch"),
            ("superseded", "superseded by a better copy of their page"),
            ("timeout", "unchecked (extraction too slow)"),
            ("unchecked", "unchecked (Redis away)"),
            (
                "no_page",
                f"unchecked without a page: give items a {self.html_field!r} field "
                f"(DEDUP_HTML_FIELD) or a {self.text_field!r} field (DEDUP_TEXT_FIELD), or "
                "enable crawler.middlewares.ItemPageMiddleware",
            ),
        )
        parts += [f"{counts[outcome]} {what}" for outcome, what in said_when_any if counts[outcome]]
        return ", ".join(parts)
