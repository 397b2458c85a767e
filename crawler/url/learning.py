"""Learned URL rules: query parameters, index-page aliases and path prefixes that
make no difference on a site, learned from pages served twice and from what the
content level decided.

* **Evidence** comes in pairs of pages whose canonical URLs differ in one
  *dimension* only: a query parameter (present in one URL and absent from the
  other, or with another value), a path alias (``/docs/index.html`` next to
  ``/docs``), a first path segment present in one URL and absent from the other
  (``/en/guide`` next to ``/guide``: a *prefix*) or replaced by another
  (``/v3/guide`` next to ``/docs/guide``: a *swap*, the aliases of whole trees that
  "Do not crawl in the DUST" describes). Two such pages with one content (identical
  bodies, or the content level kept one and dropped the other as its copy) confirm
  that the dimension changes nothing on that host; two pages the content level keeps
  as two texts are a counter-example. Two pages with one content whose URLs each add
  another parameter or alias to a third URL (``/a?ref=x`` and ``/a?share=y``)
  confirm both; with two contents they say nothing. A ``rel="canonical"`` that
  removes parameters from its page's URL confirms them too. A first segment that
  marks a copy (:data:`~crawler.url.dimensions.COPY_MARKERS`: ``/amp/...``,
  ``/mirror/...``) is no prefix nor swap: the content level chooses which copy a
  reader keeps, and needs both. The dimensions are those of :mod:`crawler.url.dimensions`.
* **A rule** is learned once ``min_evidence`` distinct pages confirmed the
  dimension and none contradicted it. The URL level then removes the dimension
  from every later URL of the host before it looks the URL up (:meth:`UrlRuleLearner.rewrite`).
* **A counter-example** refuses the rule for good, or retracts it when it was
  learned already: the URLs it rewrote are looked up unchanged again.
* **Verification**: one in ``verify_every`` requests that a rule filters is
  downloaded anyway, so that a rule that stopped holding meets its counter-example.
* **Swaps** join path segments into classes (``docs = v3 = stable``): a URL under any
  of them is looked up under the class's first segment in sort order, or without a
  prefix when one of them is a learned prefix.

Which page a pair's pages are is kept in memory only (a digest per URL and per URL
without each of its dimensions, up to ``max_pages`` pages; the first path segments
of the first ``max_prefix_pages`` of them); the rules, their evidence counts and
times are what :meth:`UrlRuleLearner.state` saves.
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, NamedTuple

from crawler.hashing import blake2b_digest
from crawler.url.dimensions import (
    HostRules,
    RuleKey,
    UrlParts,
    field_name,
    first_segment,
    segment_is_alias,
    split_url,
    swap_name,
    url_dimensions,
)

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Mapping

#: The states of a :class:`LearnedRule`.
COLLECTING, LEARNED, REFUSED, RETRACTED = "collecting", "learned", "refused", "retracted"

_DIGEST_SIZE = 8
#: Pages of each host and first path segment whose bodies are compared with their links
#: into their own tree written without it (:meth:`UrlRuleLearner.wants_path_evidence`).
PATH_EVIDENCE_PAGES = 64
#: Pages a URL without one parameter is remembered for: enough for the values of
#: a parameter on one page that a crawl meets.
_VARIANTS_PER_SKELETON = 16


@dataclass
class LearnedRule:
    """One dimension of one host, with its evidence; a rule once :attr:`state` is
    :data:`LEARNED`."""

    host: str
    kind: str
    name: str
    state: str = COLLECTING
    #: distinct pages that confirmed it (content copies and rel=canonical)
    confirmations: int = 0
    #: of which, from ``rel="canonical"``
    from_canonical: int = 0
    counter_examples: int = 0
    first_seen: float = 0.0
    learned_at: float | None = None
    retracted_at: float | None = None
    #: requests it filtered, and those let through anyway to verify it
    filtered: int = 0
    verified: int = 0
    #: downloads of URLs with it, on its host, before it was learned: what learning it cost
    downloads_before: int = 0
    #: a counter-example: the two URLs
    counter_example: list[str] = field(default_factory=list)

    @property
    def key(self) -> RuleKey:
        return RuleKey(self.host, self.kind, self.name)


class RuleEvent(NamedTuple):
    """A rule that changed state with the last observation: :data:`LEARNED`,
    :data:`REFUSED` or :data:`RETRACTED`, with the two URLs that decided it."""

    rule: LearnedRule
    state: str
    urls: tuple[str, str]
    #: taken from another worker (:meth:`UrlRuleLearner.adopt`), not from evidence here
    adopted: bool = False


def _digest(text: str) -> bytes:
    return blake2b_digest(text.encode("utf-8", "surrogatepass"), digest_size=_DIGEST_SIZE)


class _PageTable:
    """The pages observed, by URL and by URL without each of its dimensions, with a
    digest of what they served: finds the earlier pages a new one pairs with."""

    def __init__(self, max_pages: int, max_prefix_pages: int) -> None:
        self.max_pages = max_pages
        self.max_prefix_pages = max_prefix_pages
        #: URL digest -> (content digest, URL)
        self._pages: dict[bytes, tuple[bytes, str]] = {}
        #: digest of a URL without one dimension -> (dimension, value, content digest, URL)
        self._variants: dict[bytes, list[tuple[tuple[str, str], str, bytes, str]]] = {}
        self.not_remembered = 0
        #: host -> (URL, content digest) of its pages with a dimension, to pair again
        self.with_dimensions: dict[str, list[tuple[str, bytes]]] = {}

    def __len__(self) -> int:
        return len(self._pages)

    def add(
        self,
        parts: UrlParts,
        url: str,
        content: bytes,
        path_contents: Mapping[str, bytes] | None = None,
    ) -> list[tuple[str, str, bytes, bool, str]]:
        """Remember the page; return its pairs: (dimension kind, name, digest of the
        URL without it, whether the two contents are one, the other URL). *path_contents*:
        the page's content as a ``"prefix"`` or a ``"swap"`` dimension compares it, when
        it differs from *content* (a body whose links repeat the first path segment)."""
        url_digest = _digest(url)
        if url_digest in self._pages:
            return []  # fetched again: what changed since says nothing about its URL
        pairs = []
        room = len(self._pages) < self.max_pages
        prefixes = len(self._pages) < self.max_prefix_pages
        for (kind, name), value, skeleton in url_dimensions(parts, prefixes=prefixes):
            own = path_contents.get(kind, content) if path_contents else content
            skeleton_digest = _digest(skeleton)
            earlier = self._pages.get(skeleton_digest)
            if earlier is not None:  # the same URL without the dimension
                pairs.append((kind, name, skeleton_digest, earlier[0] == own, earlier[1]))
            variants = self._variants.setdefault(skeleton_digest, [])
            for dimension, other_value, other_content, other_url in variants:
                if dimension == (kind, name):
                    if other_value != value:
                        same = other_content == own
                        pair_name = swap_name(value, other_value) if kind == "swap" else name
                        pairs.append((kind, pair_name, skeleton_digest, same, other_url))
                elif other_content == content and "prefix" not in (kind, dimension[0]):
                    # two parameters or aliases apart: both confirmed (not two prefixes:
                    # /docs/a and /v3/a say nothing of /a, which may be another page)
                    pairs.append((kind, name, skeleton_digest, True, other_url))
                    pairs.append((*dimension, skeleton_digest, True, other_url))
            if room and len(variants) < _VARIANTS_PER_SKELETON:
                variants.append(((kind, name), value, own, url))
        # earlier URLs with one more dimension than this one
        for (kind, name), _, other_content, other_url in self._variants.get(url_digest, ()):
            pairs.append((kind, name, url_digest, other_content == content, other_url))
        if room:
            self._pages[url_digest] = (content, url)
            if parts.fields or segment_is_alias(parts.path):
                self.with_dimensions.setdefault(parts.host, []).append((url, content))
        else:
            self.not_remembered += 1
        return pairs


class UrlRuleLearner:
    """Learns, keeps and applies URL rules (see the module's docstring).

    Every URL it takes is canonical already (:class:`crawler.url.canonical.UrlCanonicalizer`).

    >>> learner = UrlRuleLearner(min_evidence=2, clock=lambda: 0.0)
    >>> for page in ("a", "b"):
    ...     _ = learner.observe(f"http://s.example/{page}", f"{page}-text")
    ...     events = learner.observe(f"http://s.example/{page}?from=nav", f"{page}-text")
    >>> [(str(event.rule.key), event.state) for event in events]
    [('s.example: ?from', 'learned')]
    >>> learner.rewrite("http://s.example/c?from=nav&id=3")
    ('http://s.example/c?id=3', [RuleKey(host='s.example', kind='param', name='from')])
    """

    def __init__(
        self,
        *,
        min_evidence: int = 3,
        verify_every: int = 50,
        max_pages: int = 1_000_000,
        max_prefix_pages: int = 100_000,
        clock: Callable[[], float] = time.time,
    ) -> None:
        if min_evidence < 1:
            raise ValueError(f"min_evidence must be at least 1, not {min_evidence!r}")
        if verify_every < 0:
            raise ValueError(f"verify_every must be 0 (never) or more, not {verify_every!r}")
        self.min_evidence = min_evidence
        self.verify_every = verify_every
        self.max_pages = max_pages
        self._clock = clock
        self.rules: dict[RuleKey, LearnedRule] = {}
        #: host -> what its learned rules remove
        self._active: dict[str, HostRules] = {}
        #: the pages that confirmed each rule collecting evidence or learned
        self._confirmed_on: dict[RuleKey, set[bytes]] = {}
        self._contents = _PageTable(max_pages, max_prefix_pages)
        self._bodies = _PageTable(max_pages, max_prefix_pages)
        #: downloads of URLs with each dimension not learned yet (as many as max_pages)
        self._downloads: Counter[RuleKey] = Counter()
        #: pages of each host and first path segment whose bodies were compared as such
        self._path_evidence: Counter[tuple[str, str]] = Counter()

    # Evidence

    def observe(self, url: str, content_id: str) -> list[RuleEvent]:
        """Record that the page at canonical *url* has the content *content_id*
        (the key of the page the content level kept for it), and pair it with the
        pages observed before whose URLs differ from *url* in one dimension: one
        content confirms the dimension changes nothing, two contents contradict it.
        Returns the rules whose state changed."""
        return self._observe(self._contents, url, content_id, contradict=True)

    def observe_body(
        self, url: str, body_id: str, path_body_ids: Mapping[str, str] | None = None
    ) -> list[RuleEvent]:
        """As :meth:`observe`, with the digest of the downloaded body: known as soon as
        the page is, before the content level decides. Two equal bodies confirm;
        two bodies that differ (a date, the URL written in the page) say nothing.
        *path_body_ids*: the digests a prefix and a swap compare instead (see
        :func:`path_body_ids`). Each call is one download, counted for the dimensions
        of *url*."""
        parts = split_url(url)
        if parts is not None:
            for (kind, name), _, _ in url_dimensions(parts):
                if kind == "swap":  # named by its pair of segments: counted when learned
                    continue
                key = RuleKey(parts.host, kind, name)
                if key in self._downloads or len(self._downloads) < self.max_pages:
                    self._downloads[key] += 1
        path_contents = (
            {kind: _digest(body) for kind, body in path_body_ids.items()} if path_body_ids else None
        )
        events: list[RuleEvent] = []
        self._pair(self._bodies, url, _digest(body_id), False, events, path_contents)
        return events

    def wants_path_evidence(self, url: str) -> bool:
        """Whether the body of the page at canonical *url* is worth comparing as a prefix
        or a swap (:func:`path_body_ids`, 0.2 ms of a 230 kB page): for the first
        :data:`PATH_EVIDENCE_PAGES` pages of each first path segment of a host, among the
        first ``max_prefix_pages`` pages; a tree served twice confirms its rule within them."""
        parts = split_url(url)
        first = first_segment(parts.path) if parts is not None else None
        if parts is None or first is None or len(self._bodies) >= self._bodies.max_prefix_pages:
            return False
        key = (parts.host, first[0])
        if self._path_evidence[key] >= PATH_EVIDENCE_PAGES:
            return False
        if key in self._path_evidence or len(self._path_evidence) < self.max_pages:
            self._path_evidence[key] += 1
            return True
        return False

    def _observe(
        self, table: _PageTable, url: str, content_id: str, *, contradict: bool
    ) -> list[RuleEvent]:
        events: list[RuleEvent] = []
        self._pair(table, url, _digest(content_id), contradict, events)
        return events

    def _pair(
        self,
        table: _PageTable,
        url: str,
        content: bytes,
        contradict: bool,
        events: list[RuleEvent],
        path_contents: Mapping[str, bytes] | None = None,
    ) -> None:
        parts = split_url(url)
        if parts is None:
            return
        for kind, name, page, same, other_url in table.add(parts, url, content, path_contents):
            rule = self._rule(RuleKey(parts.host, kind, name))
            if not same:
                if contradict:
                    self._contradict(rule, (other_url, url), events)
            elif rule.state == COLLECTING and self._confirm(rule, page):
                self._learn(rule, (other_url, url), events)
            elif rule.state == LEARNED:
                self._confirm(rule, page)

    @property
    def pages_not_remembered(self) -> int:
        return self._contents.not_remembered + self._bodies.not_remembered

    def observe_declared(self, url: str, declared: str) -> list[RuleEvent]:
        """Record that the page at canonical *url* declares *declared* (canonical) as
        its ``rel="canonical"``: each query parameter it removes is confirmed on
        this page. Declarations that change anything else are not evidence."""
        parts, target = split_url(url), split_url(declared)
        if (
            parts is None
            or target is None
            or (parts.origin, parts.path) != (target.origin, target.path)
        ):
            return []
        kept = set(target.fields)
        if not kept <= set(parts.fields):
            return []
        removed = sorted({field_name(f) for f in parts.fields if f not in kept})
        events: list[RuleEvent] = []
        page = _digest(declared)
        for name in removed:
            rule = self._rule(RuleKey(parts.host, "param", name))
            if rule.state != COLLECTING:
                continue
            before = rule.confirmations
            if self._confirm(rule, page):
                self._learn(rule, (url, declared), events)
            rule.from_canonical += rule.confirmations - before
        return events

    def _rule(self, key: RuleKey) -> LearnedRule:
        rule = self.rules.get(key)
        if rule is None:
            rule = self.rules[key] = LearnedRule(*key, first_seen=self._clock())
        return rule

    def _confirm(self, rule: LearnedRule, page: bytes) -> bool:
        """Count *page* for *rule* once; whether the rule has its evidence now."""
        pages = self._confirmed_on.setdefault(rule.key, set())
        if page not in pages:
            pages.add(page)
            rule.confirmations += 1
        return rule.confirmations >= self.min_evidence

    def _learn(self, rule: LearnedRule, urls: tuple[str, str], events: list[RuleEvent]) -> None:
        rule.state = LEARNED
        rule.learned_at = self._clock()
        rule.downloads_before = self._downloads[rule.key]
        self._activate(rule.key)
        events.append(RuleEvent(rule, LEARNED, urls))
        self._pair_again(rule.host, events)

    def _pair_again(self, host: str, events: list[RuleEvent]) -> None:
        """Pair the pages of *host* observed so far again, under their URLs as the rules
        now rewrite them: ``/a?ref=x`` observed before ``ref`` was learned pairs with
        ``/a?share=y`` once it is, at once rather than when ``/a`` is downloaded again."""
        for table, contradict in ((self._contents, True), (self._bodies, False)):
            for url, content in list(table.with_dimensions.get(host, ())):
                rewritten, rules = self.rewrite(url)
                if rules:
                    self._pair(table, rewritten, content, contradict, events)

    def _contradict(
        self, rule: LearnedRule, urls: tuple[str, str], events: list[RuleEvent]
    ) -> None:
        rule.counter_examples += 1
        if rule.state in (REFUSED, RETRACTED):
            return
        rule.counter_example = list(urls)
        self._confirmed_on.pop(rule.key, None)
        if rule.state == LEARNED:
            rule.state = RETRACTED
            rule.retracted_at = self._clock()
            self._deactivate(rule.key)
        else:
            rule.state = REFUSED
        events.append(RuleEvent(rule, rule.state, urls))

    # Applying

    def _activate(self, key: RuleKey) -> None:
        self._active_again(key.host)

    def _deactivate(self, key: RuleKey) -> None:
        self._active_again(key.host)

    def _active_again(self, host: str) -> None:
        rules = HostRules.of(rule.key for rule in self.learned() if rule.host == host)
        if rules:
            self._active[host] = rules
        else:
            self._active.pop(host, None)

    def __bool__(self) -> bool:
        """Whether any rule is learned."""
        return bool(self._active)

    def rewrite(self, url: str) -> tuple[str, list[RuleKey]]:
        """*url* (canonical) without what the learned rules of its host remove, and
        those rules; *url* itself and ``[]`` when none applies."""
        if not self._active:
            return url, []
        parts = split_url(url)
        if parts is None or parts.host not in self._active:
            return url, []
        return self._active[parts.host].rewrite(url, parts)

    def undecided(self, key: RuleKey) -> bool:
        """Whether no rule of *key* is learned, refused or retracted (yet)."""
        rule = self.rules.get(key)
        return rule is None or rule.state == COLLECTING

    def filtered(self, keys: Iterable[RuleKey]) -> bool:
        """Count a request that *keys* (from :meth:`rewrite`) made a repeat; ``False``
        when it is to be downloaded anyway, to verify the rules (one in
        ``verify_every``)."""
        rules = [self.rules[key] for key in keys if key in self.rules]  # not forgotten
        for rule in rules:
            rule.filtered += 1
        if self.verify_every and any(rule.filtered % self.verify_every == 0 for rule in rules):
            for rule in rules:
                rule.verified += 1
            return False
        return True

    # Inspecting and undoing

    def learned(self) -> list[LearnedRule]:
        return [rule for rule in self.rules.values() if rule.state == LEARNED]

    def adopt(self, shared: LearnedRule) -> list[RuleEvent]:
        """Take the state another worker's learner reached for a rule: a refusal or
        a retraction wins over a learned rule, which wins over evidence still being
        collected. A rule learned here and refused there is retracted here."""
        rank = {COLLECTING: 0, LEARNED: 1, REFUSED: 2, RETRACTED: 2}
        rule = self._rule(shared.key)
        if rank.get(shared.state, 0) <= rank[rule.state]:
            return []
        urls = tuple(shared.counter_example) if len(shared.counter_example) == 2 else ("", "")
        if shared.state == LEARNED:
            rule.state, rule.learned_at = LEARNED, shared.learned_at
            self._activate(rule.key)
        else:
            rule.counter_examples = max(rule.counter_examples, shared.counter_examples)
            rule.counter_example = list(shared.counter_example)
            self._confirmed_on.pop(rule.key, None)
            if rule.state == LEARNED:
                rule.state, rule.retracted_at = RETRACTED, shared.retracted_at or self._clock()
                self._deactivate(rule.key)
            else:
                rule.state = shared.state
        return [RuleEvent(rule, rule.state, (urls[0], urls[1]), adopted=True)]

    def forget(self, host: str, name: str) -> list[LearnedRule]:
        """Drop the rules of *host* (``"*"``: every host) for the parameter or alias
        *name* (``"*"``: every one), with their evidence: they start over. Returns them."""
        dropped = [
            rule
            for rule in self.rules.values()
            if host in ("*", rule.host) and name in ("*", rule.name)
        ]
        for rule in dropped:
            del self.rules[rule.key]
            self._confirmed_on.pop(rule.key, None)
            if rule.state == LEARNED:
                self._deactivate(rule.key)
        return dropped

    def state(self) -> dict[str, Any]:
        """What persists: the rules and their evidence (JSON-serializable)."""
        return {"rules": [asdict(rule) for rule in self.rules.values()]}

    def restore(self, state: dict[str, Any]) -> None:
        """Take back what :meth:`state` returned; ``ValueError`` for anything else."""
        try:
            rules = [LearnedRule(**entry) for entry in state["rules"]]
        except (KeyError, TypeError) as exc:
            raise ValueError(f"not a state of learned URL rules: {exc}") from exc
        for rule in rules:
            if rule.state not in (COLLECTING, LEARNED, REFUSED, RETRACTED):
                raise ValueError(f"unknown state of a learned URL rule: {rule.state!r}")
            self.rules[rule.key] = rule
            if rule.state == LEARNED:
                self._activate(rule.key)
