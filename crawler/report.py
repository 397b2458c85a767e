"""What dedup did, from its audit file (``DEDUP_AUDIT_FILE``): a summary, and a
self-contained HTML page of it.

:func:`summarize` reads the audit records one line at a time (the file is never loaded
whole) into an :class:`AuditSummary`; :func:`render_html` writes that summary as one HTML
page with inline CSS and SVG charts, no script and nothing fetched from elsewhere.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from html import escape
from typing import TYPE_CHECKING, Any

from crawler.audit import CONTENT_LEVEL, ITEM_LEVEL, RECRAWL_LEVEL, URL_LEVEL
from crawler.content.fingerprints import FINGERPRINT_BITS

if TYPE_CHECKING:
    from collections.abc import Iterable

#: Content reasons, in the order the report lists them.
CONTENT_REASONS = (
    "exact",
    "near",
    "unique",
    "better_copy",
    "superseded",
    "refetched",
    "unchanged",
    "no_text",
    "no_page",
    "timeout",
    "unchecked",
)
CONTENT_REASON_LABELS = {
    "exact": "exact copy of an earlier page",
    "near": "near copy of an earlier page",
    "unique": "kept: text not seen before",
    "better_copy": "kept: a better copy of an earlier page's text (https, no print/amp "
    "marker, the URL it declared canonical, shorter)",
    "superseded": "an earlier copy a better one replaced while it was held "
    "(DEDUP_HOLD_SECONDS): dropped or marked",
    "refetched": "the same page fetched again (kept; dropped when in the same crawl)",
    "unchanged": "recrawled with the main text of its last fetch (DEDUP_RECRAWL): dropped "
    "or marked",
    "no_text": "kept: no main text to compare",
    "no_page": "kept unchecked: no html or text field and no page (DEDUP_HTML_FIELD, "
    "DEDUP_TEXT_FIELD, ItemPageMiddleware)",
    "timeout": "kept unchecked: extraction too slow (DEDUP_EXTRACT_TIMEOUT)",
    "unchecked": "kept unchecked: Redis away (DEDUP_REDIS_ON_ERROR)",
}


@dataclass(frozen=True)
class Copy:
    """A page whose text duplicated another page of its cluster."""

    url: str
    matched_url: str
    kind: str
    distance: int | None


@dataclass
class Cluster:
    """Pages whose texts are duplicates of one another, linked through their matches."""

    original: str
    copies: list[Copy]

    @property
    def size(self) -> int:
        return len(self.copies) + 1


@dataclass
class AuditSummary:
    """Counts of an audit file's records, by level and reason."""

    records: int = 0
    malformed_lines: int = 0
    first_malformed_line: int | None = None
    url_filtered: int = 0
    #: Items dropped because their business key (``DEDUP_ITEM_KEY_FIELDS``) was seen.
    items_dropped_by_key: int = 0
    #: Pages recrawled (``DEDUP_RECRAWL``) by what was found: ``not_modified`` (a 304),
    #: ``unchanged`` (a body as at the last fetch).
    recrawl_outcomes: Counter[str] = field(default_factory=Counter)
    #: Filtered requests by canonical rule that changed their URL (``repeat``: none).
    url_rules: Counter[str] = field(default_factory=Counter)
    #: Filtered requests by query parameter that the canonical form removed.
    stripped_params: Counter[str] = field(default_factory=Counter)
    content_reasons: Counter[str] = field(default_factory=Counter)
    #: ``kept``, ``dropped``, ``marked``.
    content_decisions: Counter[str] = field(default_factory=Counter)
    #: Duplicates by Hamming distance to the page they matched (0: exact).
    distances: Counter[int] = field(default_factory=Counter)
    #: The largest clusters, largest first.
    clusters: list[Cluster] = field(default_factory=list)
    cluster_count: int = 0

    @property
    def content_decided(self) -> int:
        return sum(self.content_reasons.values())


class _Malformed(ValueError):
    pass


class _Clusters:
    """Union-find over the URLs of duplicates and the URLs they matched."""

    def __init__(self) -> None:
        self.parent: dict[str, str] = {}
        self.first_seen: dict[str, int] = {}
        self.copies: dict[str, Copy] = {}

    def add(self, copy: Copy) -> None:
        self.copies.setdefault(copy.url, copy)
        self._union(copy.url, copy.matched_url)

    def _find(self, url: str) -> str:
        if url not in self.parent:
            self.parent[url] = url
            self.first_seen[url] = len(self.first_seen)
            return url
        root = url
        while self.parent[root] != root:
            root = self.parent[root]
        while self.parent[url] != root:
            self.parent[url], url = root, self.parent[url]
        return root

    def _union(self, first: str, second: str) -> None:
        first_root, second_root = self._find(first), self._find(second)
        if first_root != second_root:
            self.parent[second_root] = first_root

    def largest(self, count: int) -> tuple[list[Cluster], int]:
        """The *count* largest clusters, and how many clusters there are."""
        members: dict[str, list[str]] = {}
        for url in self.parent:
            members.setdefault(self._find(url), []).append(url)
        groups = sorted(
            members.values(),
            key=lambda urls: (-len(urls), min(self.first_seen[url] for url in urls)),
        )
        clusters = [self._cluster(urls) for urls in groups[:count]]
        return clusters, len(groups)

    def _cluster(self, urls: list[str]) -> Cluster:
        originals = [url for url in urls if url not in self.copies] or urls
        original = min(originals, key=self.first_seen.__getitem__)
        copies = [self.copies[url] for url in urls if url != original and url in self.copies]
        copies.sort(key=lambda copy: (copy.distance or 0, copy.url))
        return Cluster(original, copies)


def summarize(lines: Iterable[bytes | str], max_clusters: int = 20) -> AuditSummary:
    """Sum up audit records, one JSON object a line.

    - ``"level": "url"`` records count filtered requests by rule and by removed query
      parameter (a parameter counts once a request); ``"level": "content"`` records (and
      records without a level, written before levels existed) count content decisions,
      Hamming distances, and link each duplicate to the page it matched; ``"level":
      "recrawl"`` records count recrawled pages by outcome;
    - blank lines are skipped; a line that is not such a record (bad JSON, bad UTF-8,
      another shape) is skipped and counted in ``malformed_lines``;
    - keeps the *max_clusters* largest clusters of duplicates.
    """
    summary = AuditSummary()
    clusters = _Clusters()
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
            if not isinstance(record, dict):
                raise _Malformed
            level = record.get("level", CONTENT_LEVEL)
            if level == URL_LEVEL:
                _add_url_record(summary, record)
            elif level == CONTENT_LEVEL:
                copy = _add_content_record(summary, record)
                if copy is not None:
                    clusters.add(copy)
            elif level == ITEM_LEVEL and record.get("decision") == "dropped":
                summary.items_dropped_by_key += 1
            elif level == RECRAWL_LEVEL and isinstance(record.get("decision"), str):
                summary.recrawl_outcomes[record["decision"]] += 1
            else:
                raise _Malformed
        except (ValueError, TypeError):  # JSONDecodeError and UnicodeDecodeError included
            summary.malformed_lines += 1
            if summary.first_malformed_line is None:
                summary.first_malformed_line = number
            continue
        summary.records += 1
    summary.clusters, summary.cluster_count = clusters.largest(max_clusters)
    return summary


def _strings(value: Any) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise _Malformed
    return value


def _add_url_record(summary: AuditSummary, record: dict[str, Any]) -> None:
    if not isinstance(record.get("url"), str):
        raise _Malformed
    rules = _strings(record.get("rules", []))
    params = set(_strings(record.get("stripped_params", [])))
    summary.url_filtered += 1
    summary.url_rules.update(rules or ["repeat"])
    summary.stripped_params.update(params)


def _add_content_record(summary: AuditSummary, record: dict[str, Any]) -> Copy | None:
    url, reason, decision = record.get("url"), record.get("reason"), record.get("decision")
    matched_url, distance = record.get("matched_url"), record.get("distance")
    if not isinstance(url, str) or reason not in CONTENT_REASONS or not isinstance(decision, str):
        raise _Malformed
    if reason in ("exact", "near"):
        if (
            not isinstance(matched_url, str)
            or not isinstance(distance, int)
            or isinstance(distance, bool)
            or not 0 <= distance <= FINGERPRINT_BITS
        ):
            raise _Malformed  # a Hamming distance of 64-bit fingerprints is 0 to 64
        copy: Copy | None = Copy(url, matched_url, reason, distance)
        summary.distances[distance] += 1
    else:
        copy = None
    summary.content_reasons[reason] += 1
    summary.content_decisions[decision] += 1
    return copy


# Rendering

STYLE = """
body { font: 15px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif;
       color: #1f2328; background: #f6f8fa; margin: 0; }
main { max-width: 1100px; margin: 0 auto; padding: 24px 28px 48px; }
h1 { font-size: 26px; margin: 0 0 4px; }
h2 { font-size: 19px; margin: 0 0 12px; }
p.source { color: #59636e; margin: 0 0 20px; overflow-wrap: anywhere; }
section { background: #fff; border: 1px solid #d1d9e0; border-radius: 8px;
          padding: 18px 20px; margin: 0 0 18px; }
.cards { display: grid; grid-template-columns: repeat(auto-fit, minmax(150px, 1fr));
         gap: 12px; margin: 0 0 18px; }
.card { background: #fff; border: 1px solid #d1d9e0; border-radius: 8px; padding: 12px 14px; }
.card .value { font-size: 26px; font-weight: 600; }
.card .label { color: #59636e; font-size: 13px; }
.grid2 { display: grid; grid-template-columns: 1fr 1fr; gap: 18px; }
.grid2 section { margin: 0; }
table { border-collapse: collapse; width: 100%; }
th, td { text-align: left; padding: 4px 8px; border-bottom: 1px solid #eaeef2;
         vertical-align: top; }
th { color: #59636e; font-weight: 600; font-size: 13px; }
td.count, th.count { text-align: right; font-variant-numeric: tabular-nums;
                     white-space: nowrap; }
td.bar { width: 45%; }
td.name { white-space: nowrap; }
td.url { overflow-wrap: anywhere; font-family: ui-monospace, Menlo, Consolas, monospace;
         font-size: 13px; }
.note { color: #59636e; font-size: 13px; margin: 8px 0 0; }
.warning { color: #9a6700; }
.cluster { margin: 0 0 16px; }
table.copies { table-layout: fixed; }
col.kind-column { width: 80px; }
col.distance-column { width: 80px; }
.cluster h3 { font-size: 14px; font-weight: 600; margin: 0 0 4px; overflow-wrap: anywhere; }
.kind { display: inline-block; min-width: 42px; padding: 0 6px; border-radius: 10px;
        font-size: 12px; text-align: center; color: #fff; }
.kind.exact { background: #cf222e; }
.kind.near { background: #bf8700; }
svg text { font: 12px system-ui, sans-serif; fill: #1f2328; }
a { color: #0969da; text-decoration: none; }
@media (max-width: 800px) { .grid2 { grid-template-columns: 1fr; } }
"""

BAR_COLOR = "#0969da"


def render_html(summary: AuditSummary, source: str, top_params: int = 20) -> str:
    """The report as one HTML page; every URL and name from the audit file is escaped."""
    decided = summary.content_decided
    duplicates = summary.content_reasons["exact"] + summary.content_reasons["near"]
    dropped_or_marked = "marked" if summary.content_decisions["marked"] else "dropped"
    cards = [
        ("url-filtered", summary.url_filtered, "requests filtered before download"),
        ("content-decided", decided, "items checked for duplicate text"),
        ("content-exact", summary.content_reasons["exact"], f"items {dropped_or_marked}: exact"),
        ("content-near", summary.content_reasons["near"], f"items {dropped_or_marked}: near"),
        ("clusters", summary.cluster_count, "clusters of duplicate pages"),
    ]
    if summary.items_dropped_by_key:
        cards.insert(1, ("item-key", summary.items_dropped_by_key, "items dropped: seen key"))
    if summary.recrawl_outcomes["not_modified"]:
        not_modified = summary.recrawl_outcomes["not_modified"]
        cards.insert(1, ("recrawl-not-modified", not_modified, "pages not modified (304)"))
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        "<title>Dedup report</title>",
        f"<style>{STYLE}</style></head><body><main>",
        "<h1>Dedup report</h1>",
        f'<p class="source">From <code>{escape(source)}</code>: {summary.records:,} records'
        + _malformed_note(summary)
        + "</p>",
        '<div class="cards">',
        *(
            f'<div class="card"><div class="value" id="total-{key}">{value:,}</div>'
            f'<div class="label">{escape(label)}</div></div>'
            for key, value, label in cards
        ),
        "</div>",
        '<div class="grid2">',
        _section(
            "Why requests were filtered",
            _bar_table(
                "rule",
                "canonical rule",
                _most_common(summary.url_rules),
                note="A request counts under each rule that changed its URL; "
                "<code>repeat</code>: the same URL again.",
            ),
        ),
        _section(
            "What happened to items",
            _bar_table(
                "reason",
                "decision",
                [(reason, summary.content_reasons[reason]) for reason in CONTENT_REASONS],
                labels=CONTENT_REASON_LABELS,
            ),
        ),
        "</div>",
        '<div class="grid2" style="margin-top: 18px">',
        _section(
            "Query parameters that most often produced duplicates",
            _bar_table(
                "param",
                "parameter removed",
                _most_common(summary.stripped_params, top_params),
                note="Filtered requests whose URL differed from a seen one by this parameter.",
            ),
        ),
        _section(
            "Hamming distance of duplicates to the page they matched",
            _histogram(summary.distances)
            + f'<p class="note">{duplicates:,} duplicates; 0: the same fingerprint (every '
            "exact copy, and near copies whose fingerprints are equal).</p>",
        ),
        "</div>",
        '<div style="margin-top: 18px">',
        _section(
            f"Largest clusters of duplicate pages ({len(summary.clusters)} of "
            f"{summary.cluster_count:,})",
            _clusters(summary.clusters),
        ),
        "</div>",
        "</main></body></html>",
    ]
    return "\n".join(parts) + "\n"


def _most_common(counts: Counter[str], limit: int | None = None) -> list[tuple[str, int]]:
    """Largest counts first, ties by name (``Counter.most_common`` keeps insertion order)."""
    return sorted(counts.items(), key=lambda item: (-item[1], item[0]))[:limit]


def _malformed_note(summary: AuditSummary) -> str:
    if not summary.malformed_lines:
        return ""
    return (
        f'; <span class="warning" id="malformed">{summary.malformed_lines:,} malformed '
        f"lines skipped</span> (the first is line {summary.first_malformed_line})"
    )


def _section(title: str, body: str) -> str:
    return f"<section><h2>{escape(title)}</h2>{body}</section>"


def _bar_table(
    kind: str,
    heading: str,
    rows: list[tuple[str, int]],
    *,
    labels: dict[str, str] | None = None,
    note: str = "",
) -> str:
    if not rows:
        return '<p class="note">None in this audit file.</p>'
    largest = max(count for _, count in rows) or 1
    lines = [f'<table><tr><th>{escape(heading)}</th><th class="count">count</th><th></th></tr>']
    for name, count in rows:
        label = (
            f"<td>{escape(labels[name])}</td>"
            if labels
            else f'<td class="name">{escape(name)}</td>'
        )
        percent = round(100 * count / largest, 1)
        lines.append(
            f'<tr data-{kind}="{escape(name)}">{label}'
            f'<td class="count">{count:,}</td><td class="bar">'
            f'<svg width="100%" height="14" role="img" aria-label="{count}">'
            f'<rect width="{percent}%" height="14" rx="2" fill="{BAR_COLOR}"/></svg></td></tr>'
        )
    lines.append("</table>")
    if note:
        lines.append(f'<p class="note">{note}</p>')
    return "".join(lines)


def _histogram(distances: Counter[int]) -> str:
    if not distances:
        return '<p class="note">No duplicates in this audit file.</p>'
    values = range(max(3, max(distances)) + 1)
    largest = max(distances.values())
    bar, gap, height, top, bottom = 48, 18, 160, 18, 36
    width = len(values) * (bar + gap) + gap
    shapes = []
    for index, distance in enumerate(values):
        count = distances.get(distance, 0)
        bar_height = round(height * count / largest)
        x = gap + index * (bar + gap)
        y = top + height - bar_height
        middle = x + bar / 2
        shapes.append(
            f'<g data-distance="{distance}" data-count="{count}">'
            f'<rect x="{x}" y="{y}" width="{bar}" height="{bar_height}" rx="2" '
            f'fill="{BAR_COLOR}"><title>distance {distance}: {count}</title></rect>'
            f'<text x="{middle}" y="{y - 4}" text-anchor="middle">{count:,}</text>'
            f'<text x="{middle}" y="{top + height + 16}" text-anchor="middle">{distance}</text>'
            "</g>"
        )
    axis_y = top + height
    return (
        f'<svg width="{width}" height="{top + height + bottom}" role="img" '
        f'aria-label="Histogram of Hamming distances">'
        f'<line x1="{gap / 2}" y1="{axis_y}" x2="{width - gap / 2}" y2="{axis_y}" '
        f'stroke="#8c959f"/>{"".join(shapes)}'
        f'<text x="{width / 2}" y="{top + height + 32}" text-anchor="middle">'
        "bits apart</text></svg>"
    )


def _clusters(clusters: list[Cluster]) -> str:
    if not clusters:
        return '<p class="note">No duplicate pages in this audit file.</p>'
    blocks = []
    for cluster in clusters:
        rows = "".join(
            f'<tr data-copy="{escape(copy.url)}"><td><span class="kind {escape(copy.kind)}">'
            f'{escape(copy.kind)}</span></td><td class="count">{copy.distance}</td>'
            f'<td class="url">{_url(copy.url)}'
            + (
                f" (matched {_url(copy.matched_url)})"
                if copy.matched_url != cluster.original
                else ""
            )
            + "</td></tr>"
            for copy in cluster.copies
        )
        blocks.append(
            f'<div class="cluster" data-size="{cluster.size}">'
            f'<h3 data-original="{escape(cluster.original)}">{cluster.size} pages: '
            f"{_url(cluster.original)} and its copies</h3>"
            '<table class="copies"><colgroup><col class="kind-column">'
            '<col class="distance-column"><col></colgroup>'
            '<tr><th>copy</th><th class="count">distance</th><th>URL</th></tr>'
            f"{rows}</table></div>"
        )
    return "".join(blocks)


def _url(url: str) -> str:
    """*url* as HTML text, a link only when it is http(s) (never ``javascript:``)."""
    text = escape(url)
    if url.startswith(("http://", "https://")):
        return f'<a href="{text}">{text}</a>'
    return text
