"""``scrapy dedup-inspect [SPIDER]``: what a spider's dedup state holds.

For the local backends, the state directory (``DEDUP_STATE_DIR``, else
``JOBDIR``) is read without writing, truncating or locking anything, so it can
be inspected while a crawl runs; for the Redis backends, the shared keys are
only read. Everything the stores report (``stats()`` and ``params()``) is
printed, whatever it is.
"""

from __future__ import annotations

import json
import sys
import time
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any, ClassVar

from scrapy.commands import ScrapyCommand

from crawler.commands.stores import (
    project_url_signature,
    read_local_content_index,
    read_local_seen_store,
    redis_signature,
    spider_settings,
)
from crawler.content.configuration import content_backend_from_settings, redis_content_index
from crawler.redis.connection import RedisUnavailable, redact
from crawler.state.persistence import StateFileError, signature_difference
from crawler.url.canonical import UrlCanonicalizer
from crawler.url.configuration import (
    REDIS_BACKENDS,
    recrawl_signature,
    redis_seen_store,
    seen_set_factory,
    state_dir_from_settings,
    state_dir_setting,
    url_backend_from_settings,
    url_rules_from_settings,
)
from crawler.url.learned_rules import (
    SharedRules,
    describe_rule,
    read_saved_rules,
    shared_rules_key,
)
from crawler.url.recrawl_redis_store import RedisRecrawlStore
from crawler.url.recrawl_store import RecrawlStore
from crawler.url.request_keys import request_key

if TYPE_CHECKING:
    import argparse
    from pathlib import Path

    from scrapy.settings import BaseSettings

#: Lists longer than this are shortened in the human-readable output.
LIST_PREVIEW = 5


class StateNotFound(Exception):
    """There is no dedup state where the settings point."""


class Command(ScrapyCommand):
    requires_project = True
    requires_crawler_process = False
    default_settings: ClassVar[dict[str, Any]] = {"LOG_ENABLED": False}

    def syntax(self) -> str:
        return "[options] [SPIDER]"

    def short_desc(self) -> str:
        return "Show what a spider's dedup state holds (read-only)"

    def long_desc(self) -> str:
        return (
            "Show a spider's seen-URL store and content index: entries, capacity, fill "
            "ratio, estimated false-positive rate, everything else the stores report, and "
            "the rules signature they were built with, compared with the project's "
            "settings. Reads the state directory (DEDUP_STATE_DIR, else JOBDIR) or the "
            "Redis keys (DEDUP_REDIS_KEY) without changing anything, so it can run "
            "while a crawl does. SPIDER may be left out in a project with one spider."
        )

    def add_options(self, parser: argparse.ArgumentParser) -> None:
        super().add_options(parser)
        parser.add_argument("--json", action="store_true", help="print one JSON object")
        parser.add_argument(
            "--url",
            action="append",
            default=[],
            metavar="URL",
            help="also show the recrawl record of URL (DEDUP_RECRAWL): when it was fetched, "
            "its interval, when it is due, its validators; may be repeated",
        )

    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        assert self.settings is not None
        settings, spider_name = spider_settings(self.settings, args[0] if args else None)
        try:
            report = inspect_state(settings, spider_name, opts.url)
        except (StateNotFound, StateFileError, RedisUnavailable, ValueError) as exc:
            print(f"dedup-inspect: {exc}", file=sys.stderr)
            self.exitcode = 1
            return
        if opts.json:
            print(json.dumps(report, indent=2, ensure_ascii=False))
        else:
            print(describe(report))


def inspect_state(
    settings: BaseSettings, spider_name: str, urls: list[str] | None = None
) -> dict[str, Any]:
    """Everything the spider's dedup state says about itself, JSON-serializable; with
    *urls*, their recrawl records too.

    Raises :class:`StateNotFound` naming the setting when there is nothing to read.
    """
    backend = url_backend_from_settings(settings)
    if backend in REDIS_BACKENDS:
        return {"spider": spider_name, **_inspect_redis(settings, spider_name, backend, urls or [])}
    state_dir = state_dir_from_settings(settings, check_free=False)
    if state_dir is None:
        raise StateNotFound(
            f"DEDUP_URL_BACKEND = {backend!r} keeps no state to inspect: neither "
            "DEDUP_STATE_DIR nor JOBDIR is set, so each crawl's seen URLs live in its "
            "memory only. Set one of them (for the spider or with -s) to persist them."
        )
    return {
        "spider": spider_name,
        **_inspect_local(settings, spider_name, backend, state_dir),
        "recrawl": _inspect_recrawl(settings, state_dir, urls or []),
    }


def _inspect_local(
    settings: BaseSettings, spider_name: str, backend: str, state_dir: Path
) -> dict[str, Any]:
    location = f"{state_dir} ({state_dir_setting(settings)})"
    store = read_local_seen_store(settings, state_dir)
    if store is None:
        raise StateNotFound(
            f"no seen-URL state in {location} yet: it is written when a crawl with "
            "this state directory starts"
        )
    project_signature = project_url_signature(
        settings, seen_set_factory(settings, store.seen.kind)()
    )
    url_store = {
        "backend": store.seen.kind,
        "state_dir": str(state_dir),
        "state_dir_setting": state_dir_setting(settings),
        "stats": store.stats(),
        "params": store.seen.params(),
        "generations": _generations(store.seen),
        **_signature_report(store.signature, project_signature),
        "files": {
            "snapshot": _file_report(store.snapshot_path),
            "journal": {
                **_file_report(store.journal.path),
                "records": store.journal.records,
                "torn_bytes": store.journal.torn_bytes,
            },
        },
    }
    if store.seen.kind != backend:
        url_store["note"] = (
            f"the state holds a {store.seen.kind!r} store, but DEDUP_URL_BACKEND is {backend!r}"
        )
    content_index = None
    if content_backend_from_settings(settings) == "redis":
        content_index = _inspect_redis_content(settings, spider_name)
    else:
        index = read_local_content_index(state_dir)
        if index is not None:
            content_index = {
                "backend": "memory",
                "documents": len(index),
                "near_copies": index.copies,
                "files": {
                    "snapshot": _file_report(index.snapshot_path),
                    "journal": {
                        **_file_report(index.journal.path),
                        "records": index.replayed_documents,
                    },
                },
            }
    return {
        "url_store": url_store,
        "content_index": content_index,
        "learned_url_rules": _learned_rules(state_dir),
    }


def _inspect_redis(
    settings: BaseSettings, spider_name: str, backend: str, urls: list[str]
) -> dict[str, Any]:
    store = redis_seen_store(settings, spider_name, backend)
    store.connection.open()
    stored_signature = redis_signature(store)
    entries = len(store)
    where = f"Redis key {store.base!r} at {redact(store.connection.url)} (DEDUP_REDIS_KEY)"
    if stored_signature is None and not entries:
        raise StateNotFound(
            f"no seen-URL store at {where} yet: it is created when a crawl with "
            f"DEDUP_URL_BACKEND = {backend!r} starts"
        )
    url_store: dict[str, Any] = {
        "backend": store.kind,
        "redis_url": redact(store.connection.url),
        "key": store.base,
        "stats": store.stats(),
        "params": store.params(),
        "generations": _generations(store),
    }
    if stored_signature is None:
        url_store["signature"] = None
        url_store["note"] = (
            "the data has no rules signature (written by another dupefilter, such as "
            "scrapy-redis's?); a crawl with this extension refuses it"
        )
    else:
        url_store.update(
            _signature_report(stored_signature, project_url_signature(settings, store))
        )
    content_index = None
    if content_backend_from_settings(settings) == "redis":
        content_index = _inspect_redis_content(settings, spider_name)
    shared = SharedRules(store.connection, shared_rules_key(store.base)).read()
    recrawl_store = RedisRecrawlStore.beside(
        store, recrawl_signature(url_rules_from_settings(settings))
    )
    return {
        "url_store": url_store,
        "content_index": content_index,
        "learned_url_rules": [describe_rule(rule) for rule in shared] or None,
        "recrawl": _inspect_shared_recrawl(settings, recrawl_store, urls),
    }


def _learned_rules(state_dir: Path) -> list[dict[str, Any]] | None:
    saved = read_saved_rules(state_dir)
    if saved is None:
        return None
    return [describe_rule(rule) for rule in saved[0].rules.values()]


def _generations(store: Any) -> list[dict[str, float]] | None:
    """Each live time slice of a store with a ``DEDUP_URL_TTL``, newest first; else ``None``."""
    generation_stats = getattr(store, "generation_stats", None)
    if generation_stats is None or getattr(store, "generations", None) is None:
        return None
    return list(generation_stats())


def _inspect_redis_content(settings: BaseSettings, spider_name: str) -> dict[str, Any] | None:
    index = redis_content_index(settings, spider_name)
    index.connection.open()
    documents = len(index)
    if not documents:
        return None
    return {
        "backend": "redis",
        "redis_url": redact(index.connection.url),
        "key": index.base,
        "documents": documents,
        "near_copies": index.copies,
    }


def _signature_report(stored: dict[str, Any], project: dict[str, Any]) -> dict[str, Any]:
    difference = signature_difference(stored, project)
    return {
        "signature": stored,
        "signature_matches_settings": not difference,
        "signature_difference": difference,
    }


def _inspect_recrawl(
    settings: BaseSettings, state_dir: Path, urls: list[str]
) -> dict[str, Any] | None:
    """The recrawl records in *state_dir* (``None`` when there are none), and those of
    *urls*."""
    rules = url_rules_from_settings(settings)
    store = RecrawlStore(state_dir, recrawl_signature(rules))
    snapshot, journal = state_dir / "recrawl.snapshot", state_dir / "recrawl.journal"
    if not snapshot.exists() and not journal.exists():
        return None
    store.read()
    files = {"snapshot": _file_report(snapshot), "journal": _file_report(journal)}
    return {**_recrawl_report(store, settings, urls), "files": files}


def _inspect_shared_recrawl(
    settings: BaseSettings, store: RedisRecrawlStore, urls: list[str]
) -> dict[str, Any] | None:
    """The recrawl records the workers share in Redis (``None`` when there are none)."""
    if not len(store):
        return None
    return {**_recrawl_report(store, settings, urls), "key": store.tag, "files": {}}


def _recrawl_report(
    store: RecrawlStore | RedisRecrawlStore, settings: BaseSettings, urls: list[str]
) -> dict[str, Any]:
    now = int(time.time())
    canonicalize = UrlCanonicalizer(url_rules_from_settings(settings))
    records = []
    for url in urls:
        canonical = canonicalize(url)
        record = store.get(request_key("GET", canonical))
        entry: dict[str, Any] = {"url": url, "canonical": canonical, "record": None}
        if record is not None:
            entry["record"] = {
                "fetched_at": _moment(record.fetched_at),
                "interval_seconds": record.interval,
                "due_at": _moment(record.due_at),
                "due_in_seconds": max(0, record.due_at - now),
                "etag": None if record.etag is None else record.etag.decode("latin-1"),
                "last_modified": None
                if record.last_modified is None
                else _moment(record.last_modified),
                "content_hash": None
                if record.content_hash is None
                else f"{record.content_hash:016x}",
                "not_modified_in_a_row": record.not_modified,
            }
        records.append(entry)
    return {
        "records": len(store),
        "due_now": sum(1 for _ in store.due(now)),
        "urls": records,
    }


def _moment(seconds: int) -> str:
    return datetime.fromtimestamp(seconds, tz=timezone.utc).isoformat(timespec="seconds")


def _file_report(path: Path) -> dict[str, Any]:
    try:
        status = path.stat()
    except FileNotFoundError:
        return {"path": str(path), "exists": False}
    modified = datetime.fromtimestamp(status.st_mtime, tz=timezone.utc)
    return {
        "path": str(path),
        "exists": True,
        "bytes": status.st_size,
        "modified": modified.isoformat(timespec="seconds"),
    }


def describe(report: dict[str, Any]) -> str:
    """The report for people: one ``name  value`` line a figure."""
    url_store = report["url_store"]
    if "state_dir" in url_store:
        where = f"state dir {url_store['state_dir']} ({url_store['state_dir_setting']})"
    else:
        where = f"Redis {url_store['redis_url']}, key {url_store['key']}"
    lines = [f"URL store of spider {report['spider']!r}: {url_store['backend']}, {where}"]
    figures = {**url_store["stats"], **url_store["params"]}
    for name, file_report in url_store.get("files", {}).items():
        figures[name] = _describe_file(file_report)
    lines += _aligned(figures)
    if url_store.get("generations") is not None:
        lines.append(
            f"  time slices (DEDUP_URL_TTL), newest first: {len(url_store['generations'])}"
        )
        lines += [
            f"    slice {generation['generation']}: {generation['entries']} URLs, "
            f"started {_duration(generation['age_seconds'])} ago"
            for generation in url_store["generations"]
        ]
    if "note" in url_store:
        lines.append(f"  note: {url_store['note']}")
    if url_store["signature"] is not None:
        if url_store["signature_matches_settings"]:
            verdict = "matches the project's settings"
        else:
            verdict = (
                "DIFFERS from the project's settings, a crawl would refuse this state: "
                + url_store["signature_difference"]
            )
        lines.append(f"Rules signature: {verdict}")
        lines += _aligned(url_store["signature"])
    content_index = report["content_index"]
    if content_index is None:
        lines.append("Content index: none found")
    else:
        lines.append(f"Content index: {content_index['backend']}")
        figures = {
            "documents": content_index["documents"],
            "near copies (entries)": content_index["near_copies"],
        }
        if "key" in content_index:
            figures["key"] = content_index["key"]
        for name, file_report in content_index.get("files", {}).items():
            figures[name] = _describe_file(file_report)
        lines += _aligned(figures)
    recrawl = report.get("recrawl")
    if recrawl is not None:
        where = f" in Redis, key {recrawl['key']}" if "key" in recrawl else ""
        lines.append(
            f"Recrawl records (DEDUP_RECRAWL){where}: {recrawl['records']} pages, "
            f"{recrawl['due_now']} due now"
        )
        lines += _aligned({name: _describe_file(file) for name, file in recrawl["files"].items()})
        for entry in recrawl["urls"]:
            record = entry["record"]
            if record is None:
                lines.append(f"  {entry['canonical']}: no record (due at the next crawl)")
                continue
            due = (
                f"due in {_duration(record['due_in_seconds'])}"
                if record["due_in_seconds"]
                else "due now"
            )
            lines.append(
                f"  {entry['canonical']}: fetched {record['fetched_at']}, interval "
                f"{_duration(record['interval_seconds'])}, {due} ({record['due_at']}); "
                f"ETag {record['etag']}, Last-Modified {record['last_modified']}, "
                f"{record['not_modified_in_a_row']} not-modified answers in a row"
            )
    url_rules = report.get("learned_url_rules")
    if url_rules:
        lines.append(
            "Learned URL rules (the URLs a rule hid, each counted once, are the pages it would "
            "lose if it were wrong; undo one with scrapy dedup-forget --rule RULE):"
        )
        for rule in url_rules:
            when = rule["learned_at"] or rule["first_seen"]
            lines.append(
                f"  {rule['rule']}  {rule['state']}, {rule['pages_confirming']} pages "
                f"confirming, {rule['counter_examples']} counter-examples, "
                f"{rule['requests_filtered'] - rule['downloaded_to_verify']} URLs hidden, "
                f"{rule['downloaded_to_verify']} downloaded to verify, since {when}"
            )
    return "\n".join(lines)


def _duration(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    if seconds < 172_800:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 86400:.1f} days"


def _describe_file(file_report: dict[str, Any]) -> str:
    if not file_report["exists"]:
        return f"{file_report['path']} (none)"
    text = f"{file_report['path']}, {file_report['bytes']} bytes, {file_report['modified']}"
    if "records" in file_report:
        text += f", {file_report['records']} records"
    if file_report.get("torn_bytes"):
        text += f" and {file_report['torn_bytes']} bytes of a record being written"
    return text


def _aligned(figures: dict[str, Any]) -> list[str]:
    width = max((len(name) for name in figures), default=0)
    return [f"  {name:<{width}}  {_value_text(value)}" for name, value in figures.items()]


def _value_text(value: Any) -> str:
    if isinstance(value, list) and len(value) > LIST_PREVIEW:
        shown = ", ".join(map(str, value[:LIST_PREVIEW]))
        return f"{len(value)} entries: {shown}, ..."
    if isinstance(value, (list, dict)):
        return json.dumps(value, ensure_ascii=False)
    return str(value)
