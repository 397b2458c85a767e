"""Default values of every ``DEDUP_*`` setting, in alphabetical order.

The add-on applies them at add-on priority; components that are enabled one
by one (``DUPEFILTER_CLASS``, ``ITEM_PIPELINES``) fall back to them too, so a
project gets the same behaviour either way. The settings reference (docs/settings.md) is
checked against this module by the tests.

Each level reads and checks its own settings (:mod:`crawler.url.configuration`,
:mod:`crawler.content.configuration`, :mod:`crawler.redis.connection`); the few that both
levels read are read at the end of this module.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from crawler.url.tracking_params import DEFAULT_STRIP_PARAMS

if TYPE_CHECKING:
    from scrapy.settings import BaseSettings

#: Write one JSON line per filtered request and per content decision (kept,
#: dropped, marked) to this file.
DEDUP_AUDIT_FILE: str | None = None

#: What to do with a duplicate item: ``drop`` it, or ``mark`` it
#: (adds ``duplicate_of``, ``distance``, ``simhash``) and keep it.
DEDUP_CONTENT_ACTION = "drop"

#: Content index: ``memory`` (persisted in the state dir when there is one),
#: or ``redis`` (shared by every worker; see ``DEDUP_REDIS_URL``).
DEDUP_CONTENT_BACKEND = "memory"

#: Switch the content pipeline on or off.
DEDUP_CONTENT_ENABLED = True

#: Where pages are extracted and fingerprinted: ``"auto"``, in the crawl process while it
#: keeps up, and in worker processes only once pages have waited for it (one, then one per
#: CPU core once pages wait for that one: crawler/content/page_fingerprinter.py); or a
#: number of worker processes from the start (0: threads of the crawl process only).
DEDUP_CONTENT_WORKERS: int | str = "auto"

#: Switch everything the add-on enables on or off (each level has its own switch too).
DEDUP_ENABLED = True

#: The main-text extractor whose text is fingerprinted: ``"auto"`` (resiliparse's text,
#: and trafilatura's for a page where resiliparse kept under 15% of the text: as fast as
#: resiliparse on most pages, and pages of one template are told apart as with
#: trafilatura), ``"trafilatura+resiliparse"`` (trafilatura's lines that resiliparse
#: agrees with), ``"trafilatura"`` or ``"resiliparse"``.
DEDUP_EXTRACTOR: Final = "auto"

#: Seconds one page's extraction and fingerprints may take in a worker process; past it
#: the worker is replaced and the item passes unchecked (``dedup/content/timeout``).
#: ``0``: no limit. The slowest of 474 real pages took 0.46 s.
DEDUP_EXTRACT_TIMEOUT = 10.0

#: Fold a text that is one block repeated end to end ("abcabcabc" -> "abc").
DEDUP_FOLD_REPEATS = False

#: Leave the objects alive at the engine's start (modules, settings, components) out of the
#: garbage collector's collections until it stops (:class:`crawler.gc_freeze.GCFreeze`).
DEDUP_GC_FREEZE = True

#: Seconds a kept item that a better copy could still replace (a printer-friendly, AMP,
#: mobile or mirror URL, or a page declaring another URL canonical) waits before it
#: leaves the content pipeline; a better copy met meanwhile takes its place.
#: ``0``: kept items leave at once (the first copy met stays kept).
DEDUP_HOLD_SECONDS = 0.0

#: Item field holding the page HTML (``str`` or ``bytes``).
DEDUP_HTML_FIELD = "html"

#: Item fields whose values identify an item (a business key such as
#: ``["sku"]``): an item whose key was seen before is dropped. Empty: off.
DEDUP_ITEM_KEY_FIELDS: list[str] = []

#: The fields whose text the content level compares for an item without a page or text
#: field that shares its page with other items (a listing): when the callback yielded
#: it alone, the page it came from is read instead. ``[]``: every field whose value is a
#: string, but ``url`` and URLs (any project's items work unchanged; names and prices tell
#: products apart, and dates are masked by normalization).
DEDUP_ITEM_TEXT_FIELDS: list[str] = []

#: Keep the HTML field in items after use (feeds rarely want whole pages).
DEDUP_KEEP_HTML = False

#: Seconds without a heartbeat after which a worker's leased requests go back to
#: the shared queue (``crawler.schedulers.LeasingScheduler``).
DEDUP_LEASE_TTL = 60

#: Seconds between two periodic INFO lines of what dedup did; ``None``: follow
#: ``LOGSTATS_INTERVAL``; ``0``: no periodic line.
DEDUP_LOG_INTERVAL: float | None = None

#: Hamming distance that counts as near for long texts (at most 3).
DEDUP_LONG_THRESHOLD = 3

#: Pages larger than this (bytes) are cut before extraction; counted in stats.
DEDUP_MAX_PAGE_BYTES = 5_000_000

#: A near match (either stage) drops an item only when the two texts' estimated
#: word-pair Jaccard similarity (their MinHash signatures) is at least this.
DEDUP_MIN_SIMILARITY = 0.5

#: Below this many normalized characters, only exact duplicates are dropped.
DEDUP_MIN_TEXT_CHARS = 50

#: Recrawl by a schedule per URL: a page seen in an earlier run is downloaded again
#: when it is due, with the validators its server sent (``If-None-Match``,
#: ``If-Modified-Since``); an answer that it did not change emits no item. Off:
#: a URL seen once is never downloaded again (unless ``DEDUP_URL_TTL``).
DEDUP_RECRAWL = False

#: Seconds a page waits after its first fetch before it is due again.
DEDUP_RECRAWL_FIRST_INTERVAL = 86_400

#: Schedules for some hosts, by glob pattern: ``{"*.news.example": {"min_interval": 600,
#: "first_interval": 3600, "max_interval": 86400}}``; what a host's entry leaves out
#: comes from the other ``DEDUP_RECRAWL_*`` settings; the first pattern that matches wins.
DEDUP_RECRAWL_HOSTS: dict[str, dict[str, int]] = {}

#: The longest interval (seconds): an unchanged page's interval grows 1.5 times a fetch
#: up to it.
DEDUP_RECRAWL_MAX_INTERVAL = 14 * 86_400

#: The shortest interval (seconds): a changed page's interval halves down to it.
DEDUP_RECRAWL_MIN_INTERVAL = 3600

#: Not-modified answers in a row after which a page is fetched whole, without
#: validators (a server whose validators stay the same while its page changes).
DEDUP_RECRAWL_MOST_NOT_MODIFIED = 8

#: The Redis of the shared backends is a Redis Cluster (redis-py's cluster client):
#: each shard of a seen store (``DEDUP_REDIS_SHARDS``) and the content index keep
#: their keys in one hash slot.
DEDUP_REDIS_CLUSTER = False

#: Redis key prefix of the shared content index (``%(spider)s``: the spider's name).
DEDUP_REDIS_CONTENT_KEY = "%(spider)s:content"

#: Seconds a Redis server that fails is given to come back (the requests met meanwhile
#: are held and asked about again; the reactor never waits), and the longest a call
#: waits for an answer unless ``REDIS_PARAMS`` sets socket timeouts; after that a server
#: that does not answer is left alone for 5 s at a time, and calls meet
#: ``DEDUP_REDIS_ON_ERROR`` at once.
DEDUP_REDIS_FAULT_BUDGET = 2.0

#: Redis key of the shared item-key store (``DEDUP_ITEM_KEY_FIELDS``).
DEDUP_REDIS_ITEM_KEY = "%(spider)s:items"

#: Redis key of the shared seen-URL store (scrapy-redis's layout).
DEDUP_REDIS_KEY = "%(spider)s:dupefilter"

#: When Redis stays away after the retries: ``stop`` (close the spider, crawl
#: nothing unrecorded) or ``allow`` (let requests through, counted in stats).
DEDUP_REDIS_ON_ERROR = "stop"

#: Shards of each shared seen store (seen URLs, item keys), each under its own hash
#: tag so that a Redis Cluster spreads them over its primaries; ``None`` means 1
#: (scrapy-redis's layout) on one server, 12 with ``DEDUP_REDIS_CLUSTER``.
DEDUP_REDIS_SHARDS: int | None = None

#: Redis server of the shared backends; ``None`` means ``REDIS_URL``, else
#: ``REDIS_HOST``/``REDIS_PORT``, else ``redis://127.0.0.1:6379``.
DEDUP_REDIS_URL: str | None = None

#: Search long texts that the first stage did not match again, wider (verified
#: like every near match).
DEDUP_SECOND_STAGE = True

#: The widest Hamming distance of the second stage (from the long threshold to 16).
DEDUP_SECOND_STAGE_DISTANCE = 12

#: Texts with fewer normalized characters than this are short.
DEDUP_SHORT_TEXT_CHARS = 200

#: Hamming distance that counts as near for short texts (at most 3).
DEDUP_SHORT_THRESHOLD = 2

#: Periodically snapshot the local seen-URL store after this many new URLs.
DEDUP_SNAPSHOT_EVERY = 100_000

#: Where local state (seen URLs, crash-safe frontier) persists; ``None``
#: means ``JOBDIR`` when set, else memory only.
DEDUP_STATE_DIR: str | None = None

#: Item field holding already extracted text; used instead of the HTML when present.
DEDUP_TEXT_FIELD = "text"

#: Seen-URL store: ``bloom`` (local, persisted), ``memory`` (local, exact),
#: ``redis`` (a set shared by workers), ``redis-bloom`` (a Bloom filter shared by workers).
DEDUP_URL_BACKEND = "bloom"

#: Expected number of distinct URLs; sizes the Bloom filter.
DEDUP_URL_CAPACITY = 10_000_000

#: Switch the URL dupefilter (and its crash-safe frontier) that the add-on enables on or off.
DEDUP_URL_ENABLED = True

#: Target false-positive rate of the Bloom filter (a false positive is a lost page).
DEDUP_URL_ERROR_RATE = 0.001

#: Treat ``http://`` and ``https://`` forms of a URL as the same URL.
DEDUP_URL_FOLD_HTTPS = False

#: Query parameters never stripped (glob patterns; ``"host:pattern"`` for one site).
DEDUP_URL_KEEP_PARAMS: list[str] = []

#: Learn which query parameters (and index-page aliases) change nothing on a site, from
#: pages the content level finds to be copies, and filter them before download.
DEDUP_URL_LEARN = True

#: Distinct pages that must confirm a parameter changes nothing before it is learned
#: (and no page showing it does).
DEDUP_URL_LEARN_MIN_EVIDENCE = 3

#: One in N requests a learned rule filters is downloaded anyway, to verify the rule; 0: never.
DEDUP_URL_LEARN_VERIFY_EVERY = 50

#: Lowercase URL paths, for sites whose paths are case-insensitive.
DEDUP_URL_LOWERCASE_PATH = False

#: Record a page's ``rel="canonical"`` URL as seen when it only removes query parameters
#: from the page's URL (and count it as evidence for learned rules).
DEDUP_URL_REL_CANONICAL = True

#: Record scheduled-but-unfinished requests so a killed crawl resumes without loss.
DEDUP_URL_RESUME = True

#: Query parameters stripped before comparing URLs (glob patterns;
#: ``"host:pattern"`` for one site). Defaults to a curated tracking list.
DEDUP_URL_STRIP_PARAMS: list[str] = list(DEFAULT_STRIP_PARAMS)

#: Seconds after which a URL may be crawled again; 0: never. URLs are forgotten
#: in whole time slices (``DEDUP_URL_TTL_GENERATIONS``), at most one slice late.
DEDUP_URL_TTL = 0

#: Time slices a ``DEDUP_URL_TTL`` is cut in; with a Bloom filter, each slice
#: is a filter of ``DEDUP_URL_CAPACITY`` URLs.
DEDUP_URL_TTL_GENERATIONS = 4

#: This worker's id for its leases in the shared queue; ``None`` means host
#: name and process id. A stable id lets a restarted worker take back its own
#: leases at once instead of after ``DEDUP_LEASE_TTL``; it must be unique
#: among running workers.
DEDUP_WORKER_ID: str | None = None


def checked_choice(
    settings: Any, name: str, choices: tuple[str, ...], what: str, use: str | None = None
) -> str:
    """Setting *name* (its default from this module), one of *choices*; otherwise
    :exc:`ValueError` naming it: ``<name>=<value> is not <what>; <use>`` (by default,
    the choices).

    >>> checked_choice({"DEDUP_CONTENT_BACKEND": "disk"}, "DEDUP_CONTENT_BACKEND",
    ...                ("memory", "redis"), "a content index")
    Traceback (most recent call last):
    ValueError: DEDUP_CONTENT_BACKEND='disk' is not a content index; use one of 'memory', 'redis'
    """
    value = settings.get(name, globals()[name])
    if value not in choices:
        use = use or f"use one of {', '.join(map(repr, choices))}"
        raise ValueError(f"{name}={value!r} is not {what}; {use}")
    return str(value)


def switched_off(settings: BaseSettings, switch: str | None = None) -> str | None:
    """The first of ``DEDUP_ENABLED`` and *switch* (a level's own, e.g.
    ``DEDUP_CONTENT_ENABLED``) that is off, ``None`` when both are on.

    >>> from scrapy.settings import Settings
    >>> switched_off(Settings({"DEDUP_CONTENT_ENABLED": False}), "DEDUP_CONTENT_ENABLED")
    'DEDUP_CONTENT_ENABLED'
    """
    for name in ("DEDUP_ENABLED", switch) if switch else ("DEDUP_ENABLED",):
        if not settings.getbool(name, globals()[name]):
            return name
    return None


def audit_path_from_settings(settings: Any) -> Path | None:
    """Where ``DEDUP_AUDIT_FILE`` asks for the audit file; ``None``: no audit file."""
    audit_file = settings.get("DEDUP_AUDIT_FILE", DEDUP_AUDIT_FILE)
    return Path(audit_file) if audit_file else None


def log_interval_from_settings(settings: BaseSettings) -> tuple[float, str]:
    """Seconds between two periodic dedup lines, and the setting that says so:
    ``DEDUP_LOG_INTERVAL``, or Scrapy's ``LOGSTATS_INTERVAL`` when it is ``None``."""
    value = settings.get("DEDUP_LOG_INTERVAL", DEDUP_LOG_INTERVAL)
    if value is None:
        return settings.getfloat("LOGSTATS_INTERVAL"), "LOGSTATS_INTERVAL"
    try:
        seconds = float(value)
    except (TypeError, ValueError):
        seconds = -1.0
    if not seconds >= 0:
        raise ValueError(
            f"DEDUP_LOG_INTERVAL={value!r} must be a number of seconds (0: no periodic line)"
        )
    return seconds, "DEDUP_LOG_INTERVAL"
