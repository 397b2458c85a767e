"""Which new requests may wait while learned URL rules are still collecting evidence.

A crawl queues most of its links before the first rule is learned: ``/a?ref=x`` and
``/a?ref=y`` both go to the downloader, and the rule that makes one a repeat of the other
comes too late for them. :class:`ProbableRepeats` pairs each new request with those
requested before it: one that differs from an earlier one in dimensions that no rule
decided yet (a query parameter, an index-page alias, a first path segment: see
:mod:`crawler.url.dimensions`) is a probable repeat. The first pairs of each dimension go
first, as they are the evidence that decides it; the others may wait behind the rest of
the crawl (:meth:`~crawler.url.learned_rules.LearnedRules.scheduled` lowers their
priority), and most are filtered once their rule is learned. Nothing is dropped here: a
request that waits is downloaded when its turn comes, unless a rule learned meanwhile
makes it a repeat.
"""

from __future__ import annotations

import sys
from collections import Counter
from typing import TYPE_CHECKING

from crawler.hashing import xxh3_64_intdigest
from crawler.url.dimensions import (
    RuleKey,
    field_name,
    first_segment,
    join_url,
    parent_path,
    prefix_name,
    segment_is_alias,
    split_url,
    swap_name,
)

if TYPE_CHECKING:
    from collections.abc import Callable

#: The requests of a crawl paired, the first so many (about 230 bytes each, 4.6 MB in
#: all; nothing is paired after them, at no cost): a site's rules are decided within its
#: first hundreds of pages (``bench/learned_rules.py``).
REQUESTS_PAIRED = 20_000
#: Pairs of each dimension let through first, as many times the evidence a rule needs:
#: ``bench/learned_rules.py``'s site served twice (96 resources) took 141 downloads a
#: crawl at 2 (mean of 10), 148 at 1, 139 at 4.
PAIRS_FIRST = 2


def _digest(url: str) -> int:
    return xxh3_64_intdigest(url.encode("utf-8", "surrogatepass"))


class ProbableRepeats:
    """Pairs new requests with earlier ones (module docstring).

    *undecided* tells whether no rule of a dimension is decided yet on its host;
    *min_evidence* is the number of pages that decide one.

    >>> repeats = ProbableRepeats(lambda key: True, min_evidence=1)
    >>> queries = ("", "?ref=x", "?ref=y", "?ref=z")
    >>> [repeats.may_repeat(f"http://s.example/a{query}") for query in queries]
    [False, False, False, True]
    """

    def __init__(self, undecided: Callable[[RuleKey], bool], min_evidence: int) -> None:
        self.undecided = undecided
        self.first_pairs = PAIRS_FIRST * min_evidence
        #: requested URLs without their undecided dimensions, with those dimensions
        self._bases: dict[int, tuple[RuleKey, ...]] = {}
        #: requested URLs without their undecided dimensions and first path segment, with it
        self._trees: dict[int, str] = {}
        self._pairs: Counter[RuleKey] = Counter()
        self._requests = 0

    def may_repeat(self, url: str) -> bool:
        """Whether a first request for canonical *url* may wait behind the others: it
        pairs with a URL requested before in dimensions that no rule decided yet
        (``/a?ref=x`` after ``/a`` or ``/a?ref=y``, ``/a`` after ``/a?ref=y``, ``/v2/a``
        after ``/a``), each of which had its first pairs let through already. Only the
        first :data:`REQUESTS_PAIRED` requests are paired."""
        if self._requests >= REQUESTS_PAIRED:
            return False
        self._requests += 1
        parts = split_url(url)
        if parts is None:
            return False
        host, path = parts.host, parts.path
        kept, dimensions = [], []
        for query_field in parts.fields:
            key = RuleKey(host, "param", field_name(query_field))
            if self.undecided(key):
                dimensions.append(key)
            else:
                kept.append(query_field)
        if segment_is_alias(path):
            alias = RuleKey(host, "alias", path.rsplit("/", 1)[-1].lower())
            if self.undecided(alias):
                dimensions.append(alias)
                path = parent_path(path)
        base = _digest(join_url(parts, path, kept))
        pairs: set[RuleKey] = set()
        earlier = self._bases.get(base)
        if earlier is not None:  # in the dimensions one of the two has, or other values
            pairs |= set(dimensions).symmetric_difference(earlier) or set(dimensions)
        segment = self._trees.get(base)
        if segment is not None:  # /v2/a requested, this is /a
            pairs.add(RuleKey(host, "prefix", prefix_name(segment)))
        first = first_segment(path)
        if first is not None:
            segment, rest = first
            below = _digest(join_url(parts, rest, kept))
            if below in self._bases:  # /a requested, this is /v2/a
                pairs.add(RuleKey(host, "prefix", prefix_name(segment)))
            other = self._trees.get(below)
            if other is not None and other != segment:  # /v3/a requested, this is /v2/a
                pairs.add(RuleKey(host, "swap", swap_name(segment, other)))
            self._trees.setdefault(below, sys.intern(segment))
        self._bases.setdefault(base, tuple(dimensions))
        pairs = {key for key in pairs if self.undecided(key)}
        first_ones = [key for key in pairs if self._pairs[key] < self.first_pairs]
        for key in first_ones:
            self._pairs[key] += 1
        return bool(pairs) and not first_ones
