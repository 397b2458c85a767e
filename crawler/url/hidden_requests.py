"""The requests learned URL rules filtered, kept to be given back if a rule turns out wrong.

A rule that is retracted (a counter-example, another worker's, ``scrapy dedup-forget
--rule``) hid pages: each request it filtered is kept here, by rule and URL, up to
:data:`MAX_HIDDEN_REQUESTS`, and scheduled again when the rule goes. With a state directory
they are kept from one run to the next (:data:`HIDDEN_NAME`, written at close), so that a
rule retracted or forgotten after a crawl ended gives its requests back at the next start.
A kill loses those of the run it ends.
"""

from __future__ import annotations

import pickle
from typing import TYPE_CHECKING, Any

from scrapy.utils.request import request_from_dict

from crawler.state.persistence import (
    StateFileError,
    check_not_missing,
    read_snapshot,
    write_snapshot,
)
from crawler.url.dimensions import RuleKey
from crawler.url.resume import request_to_dict

if TYPE_CHECKING:
    from collections.abc import Mapping
    from pathlib import Path

    from scrapy import Request, Spider

__all__ = ["HIDDEN_KIND", "HIDDEN_NAME", "MAX_HIDDEN_REQUESTS", "HiddenRequests"]

#: Requests kept at most, all rules together; those past it are counted by the caller.
MAX_HIDDEN_REQUESTS = 100_000
HIDDEN_NAME = "url-rules-hidden.snapshot"
HIDDEN_KIND = "url-rules-hidden"


class HiddenRequests:
    """The requests each rule filtered: this run's as requests, earlier runs' as the dicts
    :func:`~crawler.url.resume.request_to_dict` made of them."""

    def __init__(self) -> None:
        self._held: dict[RuleKey, dict[str, Request]] = {}
        self._saved: dict[RuleKey, dict[str, dict[str, Any]]] = {}
        self._count = 0

    def holds(self, key: RuleKey, url: str) -> bool:
        return url in self._held.get(key, {}) or url in self._saved.get(key, {})

    def hold(self, key: RuleKey, url: str, request: Request) -> bool:
        """Keep *request* under *key*; ``False`` when :data:`MAX_HIDDEN_REQUESTS` are kept."""
        if self._count >= MAX_HIDDEN_REQUESTS:
            return False
        self._held.setdefault(key, {})[url] = request
        self._count += 1
        return True

    def rules(self) -> list[RuleKey]:
        return list(self._held.keys() | self._saved.keys())

    def give_back(self, key: RuleKey, spider: Spider | None) -> list[Request]:
        """The requests *key* filtered, in this run and earlier ones, each once; they are
        no longer kept (under any rule)."""
        held = self._held.pop(key, {})
        saved = {url: entry for url, entry in self._saved.pop(key, {}).items() if url not in held}
        self._count -= len(held) + len(saved)
        urls = held.keys() | saved.keys()
        for table in (self._held, self._saved):
            for others in table.values():  # kept under another rule of the request too
                for url in urls & others.keys():
                    del others[url]
                    self._count -= 1
        requests = list(held.values())
        return requests + [request_from_dict(entry, spider=spider) for entry in saved.values()]

    def read(self, path: Path, signature: Mapping[str, Any]) -> None:
        """Take back the requests kept at *path* by an earlier run, if any."""
        check_not_missing(path, "remove url-rules.snapshot too; ")
        snapshot = read_snapshot(path, HIDDEN_KIND, signature)
        if snapshot is None:
            return
        try:
            saved = {RuleKey(*key): dict(entries) for key, entries in pickle.loads(snapshot[1])}
        except (pickle.UnpicklingError, TypeError, ValueError) as exc:
            raise StateFileError(
                f"{path} is corrupt ({exc}): restore it, or remove it and "
                "url-rules.snapshot to learn URL rules afresh"
            ) from exc
        self._saved = saved
        self._count = sum(map(len, saved.values())) + sum(map(len, self._held.values()))

    def write(
        self,
        path: Path,
        signature: Mapping[str, Any],
        keep: list[RuleKey],
        spider: Spider | None,
    ) -> int:
        """Keep the requests of the rules *keep* at *path*; returns how many of this run's
        could not be kept (a callback that is no method of the spider)."""
        kept: dict[RuleKey, dict[str, dict[str, Any]]] = {
            key: dict(self._saved[key]) for key in keep if key in self._saved
        }
        failed = 0
        for key in keep:
            for url, request in self._held.get(key, {}).items():
                try:
                    kept.setdefault(key, {})[url] = request_to_dict(request, spider)
                except (ValueError, TypeError, AttributeError):
                    failed += 1
        if not kept and not path.exists():
            return failed  # nothing to keep, nothing kept before: no file
        payload = pickle.dumps([(tuple(key), entries) for key, entries in kept.items()], 4)
        write_snapshot(path, HIDDEN_KIND, signature, {}, payload)
        return failed
