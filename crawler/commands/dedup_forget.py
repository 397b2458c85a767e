"""``scrapy dedup-forget URL...``: remove URLs from a spider's seen store, so
that the next crawl downloads them again; ``scrapy dedup-forget --rule RULE``:
drop a learned URL rule (:mod:`crawler.url.learning`) and its evidence;
``scrapy dedup-forget --recrawl URL...``: reset the URLs' recrawl records
(``DEDUP_RECRAWL``), so that each is due at the next crawl and downloaded whole.

Each URL is canonicalized with the project's rules and forgotten as a ``GET``
request without a body, the key the URL filter records for a followed link
(a ``POST`` or ``HEAD`` request has a key of its own). Only the exact stores
can forget: the Redis set (``SREM``, safe while crawls run) and the local
``memory`` store (its snapshot is rewritten atomically; the crawl using the
state directory must be stopped first). A Bloom filter cannot.
"""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING, Any, ClassVar

from scrapy.commands import ScrapyCommand

from crawler.commands.canonicalize import urls_from_arguments
from crawler.commands.stores import (
    project_url_signature,
    redis_signature,
    spider_settings,
)
from crawler.redis.connection import RedisUnavailable, redact
from crawler.state.lock import lock_state_dir, unlock_state_dir
from crawler.state.open_files import processes_holding
from crawler.state.persistence import StateFileError, read_header, signature_difference
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
    read_saved_rules,
    save_rules,
    shared_rules_key,
)
from crawler.url.recrawl_redis_store import RedisRecrawlStore
from crawler.url.recrawl_store import RecrawlStore
from crawler.url.request_keys import request_key
from crawler.url.stores.journaled import JournaledSeenStore

if TYPE_CHECKING:
    import argparse
    from collections.abc import Callable

    from scrapy.settings import BaseSettings


class CannotForget(Exception):
    """The store cannot forget URLs, or must not be changed now."""


class Command(ScrapyCommand):
    requires_project = True
    requires_crawler_process = False
    default_settings: ClassVar[dict[str, Any]] = {"LOG_ENABLED": False}

    def syntax(self) -> str:
        return "[options] [URL ...]"

    def short_desc(self) -> str:
        return "Remove URLs from a spider's seen-URL store (Redis set or memory backend)"

    def long_desc(self) -> str:
        return (
            "Remove URLs from a spider's seen-URL store, so that the next crawl downloads "
            "them again, and say for each whether it was there. URLs are canonicalized "
            "with the project's rules and forgotten as GET requests without a body. "
            "Without URLs, or with '-', reads one URL a line from standard input. Works "
            "with DEDUP_URL_BACKEND 'redis' (at any time) and 'memory' (stop the crawl "
            "using the state directory first); a Bloom filter ('bloom', 'redis-bloom') "
            "cannot forget. With --recrawl, resets the URLs' recrawl records (DEDUP_RECRAWL) "
            "instead: each is due at the next crawl, with any backend."
        )

    def add_options(self, parser: argparse.ArgumentParser) -> None:
        super().add_options(parser)
        parser.add_argument(
            "--spider",
            metavar="SPIDER",
            help="the spider whose store to change (needed when the project has several)",
        )
        parser.add_argument(
            "--json", action="store_true", help="print one JSON object a URL: url, key, present"
        )
        parser.add_argument(
            "--rule",
            action="append",
            metavar="RULE",
            help="a learned URL rule to drop with its evidence, as dedup-inspect names it "
            "('example.com: ?ref', 'example.com: /index.html'), 'example.com' for all of a "
            "host's, or '*' for all; may be repeated",
        )
        parser.add_argument(
            "--recrawl",
            action="store_true",
            help="reset the URLs' recrawl records (DEDUP_RECRAWL) instead of forgetting them: "
            "each is due at the next crawl and downloaded whole, without validators; works "
            "with every backend, a Bloom filter too (a local one: stop the crawl first)",
        )

    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        assert self.settings is not None
        settings, spider_name = spider_settings(self.settings, opts.spider)
        if opts.rule:
            try:
                dropped = forget_rules(settings, spider_name, opts.rule)
            except (CannotForget, StateFileError, RedisUnavailable, ValueError) as exc:
                print(f"dedup-forget: {exc}", file=sys.stderr)
                self.exitcode = 1
                return
            for rule, count in dropped:
                print(f"{'forgotten' if count else 'not found'}  {rule}")
            if not args:
                return
        urls = list(urls_from_arguments(args))
        try:
            canonicalize = UrlCanonicalizer(url_rules_from_settings(settings))
            canonical_urls = [canonicalize(url) for url in urls]
            if opts.recrawl:
                outcomes = reset_recrawl(settings, spider_name, canonical_urls)
            else:
                outcomes = forget(settings, spider_name, canonical_urls)
        except (CannotForget, StateFileError, RedisUnavailable, ValueError) as exc:
            print(f"dedup-forget: {exc}", file=sys.stderr)
            self.exitcode = 1
            return
        for url, (canonical, present) in zip(urls, outcomes, strict=True):
            if opts.json:
                print(json.dumps({"url": url, "canonical": canonical, "present": present}))
            elif opts.recrawl:
                print(f"{'reset    ' if present else 'no record'}  {canonical}")
            else:
                print(f"{'forgotten' if present else 'not seen '}  {canonical}")


def forget(
    settings: BaseSettings, spider_name: str, canonical_urls: list[str]
) -> list[tuple[str, bool]]:
    """Remove the ``GET`` keys of *canonical_urls* from the spider's seen store;
    return each URL with whether it was there."""
    backend = url_backend_from_settings(settings)
    if backend in ("bloom", "redis-bloom"):
        raise CannotForget(_bloom_cannot_forget(backend))
    keys = [request_key("GET", url) for url in canonical_urls]
    if backend in REDIS_BACKENDS:
        removed = _forget_in_redis(settings, spider_name, keys)
    else:
        removed = _forget_in_state_dir(settings, keys)
    return list(zip(canonical_urls, removed, strict=True))


def _bloom_cannot_forget(backend: str) -> str:
    return (
        f"DEDUP_URL_BACKEND = {backend!r} is a Bloom filter, which cannot forget a URL: "
        "its bits are shared with other URLs, and clearing them would forget those too. "
        "Instead: set DEDUP_URL_TTL so that URLs age out and are crawled again; or use "
        "an exact store, which can forget ('redis' shared by workers, 'memory' local); "
        "or clear the state (the state directory's seen-urls.* files, or the Redis keys "
        "under DEDUP_REDIS_KEY) and crawl again."
    )


def _forget_in_redis(settings: BaseSettings, spider_name: str, keys: list[bytes]) -> list[bool]:
    store = redis_seen_store(settings, spider_name, "redis")
    store.connection.open()
    stored_signature = redis_signature(store)
    where = f"Redis key {store.base!r} at {redact(store.connection.url)}"
    if stored_signature is None:
        if len(store):
            raise CannotForget(
                f"{where} holds URLs without a rules signature (written by another "
                "dupefilter, such as scrapy-redis's?): its keys are not this extension's"
            )
        return [False] * len(keys)
    _check_signature(where, stored_signature, project_url_signature(settings, store))
    return [store.discard(key) for key in keys]


def _forget_in_state_dir(settings: BaseSettings, keys: list[bytes]) -> list[bool]:
    state_dir = state_dir_from_settings(settings, check_free=False)
    if state_dir is None:
        raise CannotForget(
            "DEDUP_URL_BACKEND = 'memory' without DEDUP_STATE_DIR or JOBDIR keeps the seen "
            "URLs in each crawl's memory only: there is nothing to forget"
        )
    new_set: Callable[[], Any] = seen_set_factory(settings, "memory")
    store = JournaledSeenStore(new_set, state_dir, project_url_signature(settings, new_set()))
    header = read_header(store.snapshot_path) or read_header(store.journal.path)
    if header is None:
        return [False] * len(keys)
    if header.get("kind") != store.kind:
        raise CannotForget(
            f"{state_dir} ({state_dir_setting(settings)}) holds a {header.get('kind')!r} "
            "store, not the 'memory' store DEDUP_URL_BACKEND names. "
            + _bloom_cannot_forget("bloom")
        )
    for path in (store.journal.path, state_dir / "frontier.journal"):
        holders = processes_holding(path)
        if holders:
            raise CannotForget(
                f"a crawl is using {state_dir} (process {', '.join(map(str, holders))} has "
                f"{path.name} open): stop it first, then forget"
            )
    _check_signature(str(state_dir), header.get("signature", {}), store.signature)
    lock_state_dir(state_dir, state_dir_setting(settings))  # no crawl starts meanwhile
    try:
        store.open()
        try:
            removed = [store.discard(key) for key in keys]
        finally:
            store.close()  # snapshot (atomic replace), then an empty journal
    finally:
        unlock_state_dir(state_dir)
    return removed


def reset_recrawl(
    settings: BaseSettings, spider_name: str, canonical_urls: list[str]
) -> list[tuple[str, bool]]:
    """Make the pages of the ``GET`` keys of *canonical_urls* due now, in the state
    directory or in Redis; return each URL with whether it had a record."""
    signature = recrawl_signature(url_rules_from_settings(settings))
    if url_backend_from_settings(settings) in REDIS_BACKENDS:
        return _reset_in_redis(settings, spider_name, signature, canonical_urls)
    state_dir = state_dir_from_settings(settings, check_free=False)
    if state_dir is None:
        raise CannotForget(
            "recrawl records are kept in the state directory, and neither DEDUP_STATE_DIR "
            "nor JOBDIR is set: each crawl's records live in its memory only"
        )
    journal = state_dir / "recrawl.journal"
    holders = processes_holding(journal)
    if holders:
        raise CannotForget(
            f"a crawl is using {state_dir} (process {', '.join(map(str, holders))} has "
            f"{journal.name} open): stop it first, then reset"
        )
    store = RecrawlStore(state_dir, signature)
    if not journal.exists() and not (state_dir / "recrawl.snapshot").exists():
        return [(url, False) for url in canonical_urls]
    lock_state_dir(state_dir, state_dir_setting(settings))  # no crawl starts meanwhile
    try:
        store.open()
        try:
            reset = [store.reset(request_key("GET", url)) for url in canonical_urls]
        finally:
            store.close()
    finally:
        unlock_state_dir(state_dir)
    return list(zip(canonical_urls, reset, strict=True))


def _reset_in_redis(
    settings: BaseSettings, spider_name: str, signature: dict[str, Any], canonical_urls: list[str]
) -> list[tuple[str, bool]]:
    """Reset shared records: safe while workers crawl (a worker's claim or fetch written
    after it wins)."""
    seen = redis_seen_store(settings, spider_name, url_backend_from_settings(settings))
    store = RedisRecrawlStore.beside(seen, signature)
    store.connection.open()
    stored = store.connection.call(store.connection.client.get, store.signature_key)
    if stored is None:
        return [(url, False) for url in canonical_urls]
    _check_signature(f"Redis key {store.tag!r}", json.loads(stored), signature)
    return [(url, store.reset(request_key("GET", url))) for url in canonical_urls]


def parse_rule(text: str) -> tuple[str, str]:
    """``(host, name)`` of a rule as :func:`str` of a ``RuleKey`` writes it (``*``: any).

    >>> parse_rule("example.com: ?ref"), parse_rule("example.com"), parse_rule("*")
    (('example.com', 'ref'), ('example.com', '*'), ('*', '*'))
    """
    host, separator, name = text.strip().partition(": ")
    if not separator and " " not in host:
        return host.rstrip(":"), "*"
    if " " in host or name[:1] not in ("?", "/") or len(name) < 2:
        raise ValueError(
            f"--rule {text!r}: write a rule as dedup-inspect shows it, e.g. "
            "'example.com: ?ref' or 'example.com: /index.html'"
        )
    return host, name[1:]


def forget_rules(
    settings: BaseSettings, spider_name: str, rules: list[str]
) -> list[tuple[str, int]]:
    """Drop learned URL rules from the state directory, or from Redis for the Redis
    backends (at any time: running workers drop them at their next read); each with
    how many it matched."""
    wanted = [(rule, parse_rule(rule)) for rule in rules]
    backend = url_backend_from_settings(settings)
    if backend in REDIS_BACKENDS:
        store = redis_seen_store(settings, spider_name, backend)
        store.connection.open()
        shared = SharedRules(store.connection, shared_rules_key(store.base))
        present = shared.read()
        dropped = []
        for rule, (host, name) in wanted:
            matching = [
                str(entry.key)
                for entry in present
                if host in ("*", entry.host) and name in ("*", entry.name)
            ]
            dropped.append((rule, shared.forget(matching) if matching else 0))
        return dropped
    state_dir = state_dir_from_settings(settings, check_free=False)
    if state_dir is None:
        raise CannotForget(
            "learned URL rules are kept in the state directory, and neither "
            "DEDUP_STATE_DIR nor JOBDIR is set: each crawl's rules live in its memory only"
        )
    lock_state_dir(state_dir, state_dir_setting(settings))  # no crawl starts meanwhile
    try:
        saved = read_saved_rules(state_dir)
        if saved is None:
            return [(rule, 0) for rule, _ in wanted]
        learner, signature = saved
        dropped = [(rule, len(learner.forget(host, name))) for rule, (host, name) in wanted]
        save_rules(state_dir, learner, signature)
    finally:
        unlock_state_dir(state_dir)
    return dropped


def _check_signature(where: str, stored: dict[str, Any], project: dict[str, Any]) -> None:
    difference = signature_difference(stored, project)
    if difference:
        raise CannotForget(
            f"the seen store at {where} was built with other rules than the project's "
            f"settings ({difference}): its keys would not match; run with the settings "
            "it was built with"
        )
