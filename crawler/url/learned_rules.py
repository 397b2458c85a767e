"""Scrapy wiring of learned URL rules (:mod:`crawler.url.learning`) for
:class:`~crawler.dupefilters.URLDupeFilter`.

* evidence: equal bodies as soon as they are downloaded, the content pipeline's
  decisions (:data:`crawler.signals.content_decided`: the only counter-examples), and
  the ``rel="canonical"`` declarations the dupefilter believes;
* the dupefilter asks :meth:`LearnedRules.rewrite` for every request's URL, and
  :meth:`LearnedRules.filter` when a rewritten URL was seen; and
  :class:`LearnedRulesMiddleware` asks it again just before a download, as most
  links of a crawl are queued before the first rule is learned;
* requests a rule filtered are held (:mod:`crawler.url.hidden_requests`), so that a
  rule retracted by a counter-example gives them back to the scheduler, in this run or,
  with a state directory, a later one;
* rules and their evidence persist in ``url-rules.snapshot`` in the state directory,
  written whenever a rule changes state and at close.
"""

from __future__ import annotations

import json
import logging
from dataclasses import asdict
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from scrapy import signals as scrapy_signals
from scrapy.utils.asyncio import create_looping_call

from crawler import signals as dedup_signals
from crawler.hashing import xxh3_128_hexdigest
from crawler.log_once import LogOnce
from crawler.redis.connection import RedisUnavailable
from crawler.state.persistence import (
    StateFileError,
    check_not_missing,
    read_header,
    read_snapshot,
    write_snapshot,
)
from crawler.url.dimensions import path_body_ids
from crawler.url.hidden_requests import HIDDEN_NAME, MAX_HIDDEN_REQUESTS, HiddenRequests
from crawler.url.learning import (
    COLLECTING,
    LEARNED,
    REFUSED,
    RETRACTED,
    LearnedRule,
    UrlRuleLearner,
)
from crawler.url.probable_repeats import ProbableRepeats
from crawler.url.request_meta import META_VERIFYING
from crawler.url.rewritten_pages import RewrittenPages, with_rules

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

    from scrapy import Request
    from scrapy.crawler import Crawler
    from scrapy.http import Response

    from crawler.redis.connection import RedisConnection
    from crawler.url.canonical import UrlCanonicalizer
    from crawler.url.learning import RuleEvent, RuleKey

logger = logging.getLogger(__name__)

SNAPSHOT_NAME = "url-rules.snapshot"
SNAPSHOT_KIND = "url-rules"


def read_saved_rules(state_dir: Path) -> tuple[UrlRuleLearner, dict[str, Any]] | None:
    """The learned rules saved in *state_dir*, with the signature they were saved
    under; ``None`` when there are none. Raises :class:`StateFileError`."""
    path = state_dir / SNAPSHOT_NAME
    header = read_header(path)
    if header is None:
        return None
    signature = dict(header.get("signature") or {})
    snapshot = read_snapshot(path, SNAPSHOT_KIND, signature)
    if snapshot is None:
        return None
    learner = UrlRuleLearner()
    try:
        learner.restore(json.loads(snapshot[1]))
    except ValueError as exc:
        raise StateFileError(f"{path} is corrupt ({exc})") from exc
    return learner, signature


def save_rules(state_dir: Path, learner: UrlRuleLearner, signature: dict[str, Any]) -> None:
    payload = json.dumps(learner.state(), sort_keys=True).encode()
    write_snapshot(state_dir / SNAPSHOT_NAME, SNAPSHOT_KIND, signature, {}, payload)


def describe_rule(rule: LearnedRule) -> dict[str, Any]:
    """A rule for ``scrapy dedup-inspect``: JSON-serializable, times in UTC."""
    return {
        "rule": str(rule.key),
        "state": rule.state,
        "pages_confirming": rule.confirmations,
        "of_which_rel_canonical": rule.from_canonical,
        "counter_examples": rule.counter_examples,
        "first_seen": _utc(rule.first_seen),
        "learned_at": _utc(rule.learned_at),
        "retracted_at": _utc(rule.retracted_at),
        "requests_filtered": rule.filtered,
        "downloaded_to_verify": rule.verified,
        "downloads_before_learned": rule.downloads_before,
        "counter_example": rule.counter_example,
    }


def _utc(timestamp: float | None) -> str | None:
    if timestamp is None:
        return None
    return datetime.fromtimestamp(timestamp, timezone.utc).isoformat(timespec="seconds")


#: KEYS: the shared rules hash. ARGV: the rule's name, its state, its JSON. Stores the
#: rule unless the hash holds it in a state that wins (refused or retracted over learned,
#: learned over collecting); returns the JSON the hash holds then.
_MERGE_RULE = """
local rank = {collecting = 0, learned = 1, refused = 2, retracted = 2}
local current = redis.call('HGET', KEYS[1], ARGV[1])
if current and rank[cjson.decode(current)['state']] >= rank[ARGV[2]] then
  return current
end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[3])
return ARGV[3]
"""


def shared_rules_key(seen_store_key: str) -> str:
    """The Redis key of the learned rules shared by the workers of a seen store."""
    return f"{seen_store_key}:url-rules"


class SharedRules:
    """The learned rules of every worker sharing a Redis seen store: a hash at
    ``<DEDUP_REDIS_KEY>:url-rules``, rule name -> the rule's JSON. A worker publishes a
    rule when it learns, refuses or retracts it (one atomic call, in which a refusal
    wins), and reads the hash every :data:`SHARED_RULES_INTERVAL` seconds."""

    def __init__(self, connection: RedisConnection, key: str) -> None:
        self.connection = connection
        self.key = key

    def publish(self, rule: LearnedRule) -> LearnedRule:
        """Store *rule*; the rule as the hash holds it afterwards."""
        stored = self.connection.call(
            self.connection.script(_MERGE_RULE),
            keys=[self.key],
            args=[str(rule.key), rule.state, json.dumps(asdict(rule), sort_keys=True)],
        )
        return LearnedRule(**json.loads(stored))

    def read(self) -> list[LearnedRule]:
        entries = self.connection.call(self.connection.client.hgetall, self.key)
        return [LearnedRule(**json.loads(value)) for value in entries.values()]

    def forget(self, names: list[str]) -> int:
        return int(self.connection.call(self.connection.client.hdel, self.key, *names))


#: Seconds between two reads of the rules other workers shared.
SHARED_RULES_INTERVAL = 1.0
#: Taken from the priority of a request that may wait while rules are learned.
DEFERRED_PRIORITY = 1000


class LearnedRules:
    """The learned URL rules of one crawl: evidence in, rewritten URLs out."""

    def __init__(
        self,
        crawler: Crawler,
        canonicalize: UrlCanonicalizer,
        learner: UrlRuleLearner,
        state_dir: Path | None,
        signature: dict[str, Any],
        shared: SharedRules | None = None,
    ) -> None:
        self.crawler = crawler
        self.shared = shared
        self._warn_sharing_failed = LogOnce(logger, logging.WARNING)
        self._reading: Any = None
        self.stats = crawler.stats
        self.canonicalize = canonicalize
        self.learner = learner
        self.path = state_dir / SNAPSHOT_NAME if state_dir is not None else None
        self.signature = signature
        #: requests each rule filtered: given back if it is retracted
        self.hidden = HiddenRequests()
        #: URLs downloaded to verify a rule in this crawl: each is verified once
        self._verified: set[str] = set()
        self.probable_repeats = ProbableRepeats(learner.undecided, learner.min_evidence)
        self.hidden_path = state_dir / HIDDEN_NAME if state_dir is not None else None
        self.rewritten_pages = RewrittenPages()
        #: called with the keys of URLs that pages downloaded under others have now
        self.add_seen: Callable[[list[bytes]], object] | None = None
        crawler.signals.connect(self._content_decided, signal=dedup_signals.content_decided)
        crawler.signals.connect(self._response_received, signal=scrapy_signals.response_received)

    # Life cycle

    def open(self) -> None:
        """Take back the rules of earlier runs from the state directory."""
        if self.path is None:
            return
        check_not_missing(self.path, "set DEDUP_URL_LEARN = False to crawl without them; ")
        snapshot = read_snapshot(self.path, SNAPSHOT_KIND, self.signature)
        if snapshot is None:
            return
        _, payload = snapshot
        try:
            self.learner.restore(json.loads(payload))
        except ValueError as exc:
            raise StateFileError(
                f"{self.path} is corrupt ({exc}): restore it, or remove it to learn "
                "URL rules afresh"
            ) from exc
        learned = self.learner.learned()
        if learned:
            logger.info(
                "Learned URL rules from earlier runs: %(rules)s",
                {"rules": ", ".join(str(rule.key) for rule in learned)},
            )
        self._read_hidden()

    def _read_hidden(self) -> None:
        """Take back the requests the rules filtered in earlier runs; those of a rule no
        longer learned (retracted, refused, forgotten since) are scheduled once the spider
        opens."""
        assert self.hidden_path is not None
        self.hidden.read(self.hidden_path, self.signature)
        if any(self._no_longer_learned(key) for key in self.hidden.rules()):
            self.crawler.signals.connect(
                self._give_back_unlearned, signal=scrapy_signals.spider_opened
            )

    def _no_longer_learned(self, key: RuleKey) -> bool:
        rule = self.learner.rules.get(key)
        return rule is None or rule.state != LEARNED

    def _give_back_unlearned(self) -> None:
        for key in [key for key in self.hidden.rules() if self._no_longer_learned(key)]:
            count = self._give_back(key)
            logger.warning(
                "URL rule %(rule)s is no longer learned: %(count)d requests it filtered in "
                "earlier runs are scheduled again",
                {"rule": key, "count": count},
            )

    def start_sharing(self) -> None:
        """Read the rules other workers shared now, then every :data:`SHARED_RULES_INTERVAL`."""
        if self.shared is None or self._reading is not None:
            return
        self.read_shared()
        try:
            reading = create_looping_call(self.read_shared)
        except RuntimeError:  # no reactor: not in a crawl (a test, a command)
            return
        self._reading = reading
        reading.start(SHARED_RULES_INTERVAL, now=False)

    def read_shared(self) -> None:
        assert self.shared is not None
        try:
            rules = self.shared.read()
        except (RedisUnavailable, ValueError, TypeError) as exc:  # away, or not our JSON
            self._sharing_failed(exc)
            return
        events = []
        for rule in rules:
            events += self.learner.adopt(rule)
        shared = {rule.key for rule in rules}
        for key, rule in list(self.learner.rules.items()):
            if rule.state != COLLECTING and key not in shared:  # scrapy dedup-forget --rule
                self.learner.forget(key.host, key.name)
                self.rewritten_pages.retracted(key)
                logger.info("URL rule %(rule)s forgotten", {"rule": key})
        self._apply(events)

    def _sharing_failed(self, error: Exception) -> None:
        self._warn_sharing_failed(
            "Cannot share learned URL rules through Redis (%(error)s): this worker "
            "learns and applies its own meanwhile",
            {"error": error},
        )

    def close(self) -> None:
        if self._reading is not None:
            self._reading.stop()
            self._reading = None
            self.read_shared()  # the rules in force at the end, for the stats
        self.save()
        self._save_hidden()
        self.publish_stats()

    def _save_hidden(self) -> None:
        """Keep the requests each learned rule filtered, for a later run to give back."""
        if self.hidden_path is None:
            return
        keep = [key for key in self.hidden.rules() if not self._no_longer_learned(key)]
        try:
            failed = self.hidden.write(self.hidden_path, self.signature, keep, self.crawler.spider)
        except OSError as exc:
            logger.error(
                "Cannot save the requests learned URL rules filtered in %(path)s: "
                "%(error)s; a rule retracted later cannot give them back",
                {"path": self.hidden_path, "error": exc},
            )
            return
        if failed:
            self.stats.set_value("dedup/url/learned/not_saved", failed)

    def save(self) -> None:
        if self.path is not None:
            save_rules(self.path.parent, self.learner, self.signature)

    def publish_stats(self) -> None:
        rules = self.learner.rules.values()
        self.stats.set_value("dedup/url/learned/rules", sum(r.state == LEARNED for r in rules))
        self.stats.set_value(
            "dedup/url/learned/pages_not_remembered", self.learner.pages_not_remembered
        )

    # Applying

    def rewrite(self, canonical: str) -> tuple[str, list[RuleKey]]:
        return self.learner.rewrite(canonical)

    def scheduled(self, request: Request, key: bytes, canonical: str, rules: list[RuleKey]) -> None:
        """*request*, for *canonical*, was scheduled under the new *key*, which *rules*
        made (remembered: a later request for it is held under them, given back if one is
        retracted); lower its priority when it may wait (:mod:`crawler.url.probable_repeats`)."""
        if rules:
            self.rewritten_pages.record(key, rules)
        if self.probable_repeats.may_repeat(canonical):
            request.priority -= DEFERRED_PRIORITY
            self.stats.inc_value("dedup/url/learned/deferred")

    def rules_of_repeat(self, key: bytes, rules: list[RuleKey]) -> list[RuleKey] | None:
        """The rules under which a request seen before under *key* is a repeat: its own
        *rules* and those that recorded *key* (:mod:`crawler.url.rewritten_pages`); ``None``
        once when one of those was retracted since (the request is new then)."""
        if self.rewritten_pages.take_void(key):
            return None
        return with_rules(rules, self.rewritten_pages.rules_for(key))

    def filter(self, request: Request, keys: list[RuleKey]) -> bool:
        """Whether *request*, whose URL *keys* rewrote to one seen before, is to be
        filtered: ``False`` for one in ``DEDUP_URL_LEARN_VERIFY_EVERY``, downloaded to
        check that the rules still hold. A URL met again counts once, whether the rule hid
        it or it was downloaded to verify the rule: one in N of the distinct pages a rule
        hides is verified, not one in N links (a page linked from many pages would take
        the verifications, and be downloaded each time)."""
        url = self.canonicalize(request.url)
        if self.hidden.holds(keys[0], url) or url in self._verified:
            return True
        if self.learner.filtered(keys):
            self.stats.inc_value("dedup/url/learned/filtered")
            for key in keys:  # given back when any of its rules is retracted
                if not self.hidden.hold(key, url, request):
                    self.stats.inc_value("dedup/url/learned/not_held")
            return True
        self.stats.inc_value("dedup/url/learned/verified")
        request.meta[META_VERIFYING] = True
        if len(self._verified) < MAX_HIDDEN_REQUESTS:
            self._verified.add(url)
        return False

    # Evidence

    def declared(self, page: str, declared: str) -> None:
        """A page at canonical URL *page* declared canonical URL *declared*, believed."""
        self._apply(self.learner.observe_declared(page, declared))

    def _response_received(self, response: Response, request: Request) -> None:
        if request.method == "GET" and response.status == 200 and response.body:
            # XXH3: a body's identity, not a secret; BLAKE2b took 0.25 ms of a 230 kB page
            body_id = xxh3_128_hexdigest(response.body)
            canonical = self.canonicalize(response.url)
            path_ids = (
                path_body_ids(urlsplit(canonical).path, response.body, xxh3_128_hexdigest)
                if self.learner.wants_path_evidence(canonical)
                else {}
            )
            events = self.learner.observe_body(canonical, body_id, path_ids)
            self.rewritten_pages.downloaded(canonical)
            rewritten, rules = self.learner.rewrite(canonical)
            if rules:
                events += self.learner.observe_body(rewritten, body_id)
                if self.add_seen is not None:  # requested before the rules
                    self.add_seen([self.rewritten_pages.rewritten(rewritten, rules)])
            self._apply(events)

    def _content_decided(self, url: str, content_key: str) -> None:
        if url:
            self._observe(self.learner.observe, url, content_key)

    def _observe(self, observe: Callable[[str, str], list[RuleEvent]], url: str, id_: str) -> None:
        """Observe the page at its canonical URL, and at that URL as the learned rules
        rewrite it: ``/a?ref=x&share=y`` pairs with ``/a?share=y`` once ``ref`` is learned."""
        canonical = self.canonicalize(url)
        events = observe(canonical, id_)
        rewritten, rules = self.learner.rewrite(canonical)
        if rules:
            events += observe(rewritten, id_)
        self._apply(events)

    def _apply(self, events: list[RuleEvent]) -> None:
        if not events:
            return
        if self.shared is not None:
            events = events + [
                outcome for event in events if not event.adopted for outcome in self._publish(event)
            ]
        for event in events:
            rule, (first, second) = event.rule, event.urls
            if event.adopted:
                logger.info(
                    "URL rule %(rule)s %(state)s by another worker",
                    {"rule": rule.key, "state": event.state},
                )
                if event.state == RETRACTED:
                    self._give_back(rule.key)
            elif event.state == LEARNED:
                self.stats.inc_value("dedup/url/learned/learned")
                logger.info(
                    "Learned URL rule %(rule)s: %(pages)d pages served the same content "
                    "with and without it (the last: %(first)s and %(second)s), after "
                    "%(spent)d downloads of URLs with it; later requests differing only "
                    "by it are filtered",
                    {
                        "rule": rule.key,
                        "pages": rule.confirmations,
                        "spent": rule.downloads_before,
                        "first": first,
                        "second": second,
                    },
                )
            elif event.state == REFUSED:
                self.stats.inc_value("dedup/url/learned/refused")
                logger.debug(
                    "Not learning URL rule %(rule)s: %(first)s and %(second)s differ in content",
                    {"rule": rule.key, "first": first, "second": second},
                )
            elif event.state == RETRACTED:
                self.stats.inc_value("dedup/url/learned/retracted")
                given_back = self._give_back(rule.key)
                logger.warning(
                    "Retracted learned URL rule %(rule)s: %(first)s and %(second)s differ in "
                    "content; %(count)d requests it filtered are scheduled again",
                    {"rule": rule.key, "first": first, "second": second, "count": given_back},
                )
        if self.add_seen is not None:
            for host in {event.rule.host for event in events if event.state == LEARNED}:
                self.add_seen(self.rewritten_pages.learned_on(host, self.learner.rewrite))
        try:
            self.save()
        except OSError as exc:
            logger.error(
                "Cannot save the learned URL rules in %(path)s: %(error)s",
                {"path": self.path, "error": exc},
            )
        self.publish_stats()

    def _publish(self, event: RuleEvent) -> list[RuleEvent]:
        """Share what *event* decided; the other workers' decision when it wins."""
        assert self.shared is not None
        try:
            stored = self.shared.publish(event.rule)
        except RedisUnavailable as exc:
            self._sharing_failed(exc)
            return []
        return self.learner.adopt(stored) if stored.state != event.rule.state else []

    def _give_back(self, key: RuleKey) -> int:
        self.rewritten_pages.retracted(key)
        try:
            engine = self.crawler.engine
        except RuntimeError:  # Scrapy 2.13+: not set outside a crawl
            engine = None
        requests = self.hidden.give_back(key, self.crawler.spider)
        if engine is None:
            return 0
        for request in requests:
            # its own key was recorded when it was scheduled, before the rule
            engine.crawl(request.replace(dont_filter=True))
        self.stats.inc_value("dedup/url/learned/rescheduled", len(requests))
        return len(requests)
