"""Pages downloaded under URLs that learned URL rules came to rewrite, and keys recorded
because a rule rewrote a URL.

``/d?ref=nav`` downloaded before ``ref`` was learned is the page ``/d`` once it is: a
later request for ``/d``, ``/d?ref=top`` or ``/d?ref=nav`` again is a repeat, and so is one
queued before the rule. :class:`RewrittenPages` remembers the pages downloaded on each
host and, when a rule is learned there, gives the keys of the URLs the rules now give
them (for the seen store), and which rules made each one. It keeps too which rules made
each key a request was scheduled under. A request that meets such a key is a repeat while
those rules hold: it is held under them, and given back if one is retracted (``/d`` is
downloaded then, which ``/d?tab=reviews`` stood for while ``tab`` was learned).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from crawler.url.dimensions import split_url
from crawler.url.request_keys import request_key

if TYPE_CHECKING:
    from collections.abc import Callable

    from crawler.url.dimensions import RuleKey

#: Pages remembered for when a rule is learned on their host, the first so many of the
#: crawl (a reference each), and the last of them that a rule learned looks at.
PAGES_REMEMBERED = 1_000_000
PAGES_REWRITTEN_AT_ONCE = 10_000
#: Keys recorded because rules rewrote a URL, with those rules (16 bytes and a list each),
#: the first so many: a request that meets one of the others once its rule is retracted
#: is not given back.
REWRITTEN_REMEMBERED = 200_000


class RewrittenPages:
    """The pages of a crawl and the URLs learned rules give them (module docstring)."""

    def __init__(self) -> None:
        self._urls_by_host: dict[str, list[str]] = {}
        self._pages = 0
        #: keys recorded because rules rewrote a URL, and those rules
        self._rules: dict[bytes, list[RuleKey]] = {}
        #: the same, by rule (a key may be listed under a rule it no longer has: it was
        #: voided and recorded again since); a retraction looks at its rule's keys only
        self._keys_of: dict[RuleKey, list[bytes]] = {}
        #: of those, the keys of pages downloaded (under another URL)
        self._downloaded: set[bytes] = set()
        self._void: set[bytes] = set()

    def downloaded(self, url: str) -> None:
        """A page was downloaded at canonical *url*."""
        parts = split_url(url)
        if parts is not None and self._pages < PAGES_REMEMBERED:
            self._urls_by_host.setdefault(parts.host, []).append(url)
            self._pages += 1

    def rewritten(self, url: str, rules: list[RuleKey]) -> bytes:
        """A page is downloaded under a URL that *rules* rewrite to *url*: its key."""
        key = request_key("GET", url)
        if self.record(key, rules):
            self._downloaded.add(key)
        return key

    def record(self, key: bytes, rules: list[RuleKey]) -> bool:
        """*key* was recorded as seen because *rules* rewrote a URL to it (with the rules
        that did before: all of them must hold for a request to repeat it); ``False`` past
        :data:`REWRITTEN_REMEMBERED` keys."""
        recorded = self._rules.get(key)
        if recorded is None and len(self._rules) >= REWRITTEN_REMEMBERED:
            return False
        recorded = recorded or []
        added = [rule for rule in rules if rule not in recorded]
        for rule in added:
            self._keys_of.setdefault(rule, []).append(key)
        self._rules[key] = recorded + added
        return True

    def learned_on(
        self, host: str, rewrite: Callable[[str], tuple[str, list[RuleKey]]]
    ) -> list[bytes]:
        """A rule was learned on *host*: the keys of the URLs *rewrite* now gives the
        last pages downloaded there under URLs it changes."""
        keys = []
        for url in self._urls_by_host.get(host, [])[-PAGES_REWRITTEN_AT_ONCE:]:
            rewritten, rules = rewrite(url)
            if rules:
                keys.append(self.rewritten(rewritten, rules))
        return keys

    def retracted(self, rule: RuleKey) -> None:
        """*rule* no longer holds: the keys recorded because of it are void, each let
        through once (:meth:`take_void`)."""
        for key in self._keys_of.pop(rule, ()):
            if rule in self._rules.get(key, ()):
                del self._rules[key]
                self._downloaded.discard(key)
                self._void.add(key)

    def take_void(self, key: bytes) -> bool:
        """Whether *key* was recorded because of a rule retracted since (once)."""
        if key in self._void:
            self._void.discard(key)
            return True
        return False

    def rules_for(self, key: bytes) -> list[RuleKey] | None:
        """The rules that made *key*, recorded because they rewrote a URL to it."""
        return self._rules.get(key)

    def downloaded_under(self, key: bytes) -> list[RuleKey] | None:
        """The rules under which the page of *key* was downloaded at another URL, if it was."""
        return self._rules.get(key) if key in self._downloaded else None


def with_rules(rules: list[RuleKey], more: list[RuleKey] | None) -> list[RuleKey]:
    """*rules* and those of *more* not among them.

    >>> from crawler.url.dimensions import RuleKey
    >>> ref, tab = RuleKey("s", "param", "ref"), RuleKey("s", "param", "tab")
    >>> with_rules([ref], [tab, ref]) == [ref, tab]
    True
    """
    return rules + [rule for rule in more or () if rule not in rules]
