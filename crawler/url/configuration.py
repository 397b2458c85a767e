"""The URL level's settings, read and checked, and what is built from them, for its Scrapy
components and the commands: the URL rules, the state directory, the seen stores (local
and Redis) and their signatures, recrawls, learned rules, rel=canonical. Each bad value
raises :exc:`ValueError` naming its setting."""

from __future__ import annotations

import logging
import os
import weakref
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from scrapy.core.scheduler import Scheduler as ScrapyScheduler
from scrapy.utils.job import job_dir
from scrapy.utils.misc import load_object

from crawler import defaults
from crawler.redis.connection import connection_from_settings
from crawler.state.lock import check_state_dir_free
from crawler.url.canonical import UrlCanonicalizer, UrlRules
from crawler.url.frontier import check_files as check_frontier_files
from crawler.url.generations import Generations
from crawler.url.recrawl import Recrawl
from crawler.url.recrawl_redis_store import RedisRecrawlStore
from crawler.url.recrawl_schedule import RecrawlSchedule
from crawler.url.recrawl_store import RecrawlStore
from crawler.url.request_keys import KEY_VERSION
from crawler.url.stores.bloom import BloomSeenSet
from crawler.url.stores.generational import GenerationalSeenSet
from crawler.url.stores.journaled import JournaledSeenStore, check_state_files
from crawler.url.stores.memory import MemorySeenSet
from crawler.url.stores.redis import RedisBloomSeenStore, RedisSetSeenStore
from crawler.url.stores.redis_shards import (
    CLUSTER_SHARDS,
    CLUSTER_SLOTS,
    RedisSeenStore,
    ShardedRedisSeenStore,
    shard_bases,
    shard_capacity,
)
from crawler.url.stores.shared import SharedSeenStore
from crawler.url.stores.unpersisted import UnpersistedSeenStore

if TYPE_CHECKING:
    from collections.abc import Callable

    from scrapy.crawler import Crawler
    from scrapy.settings import BaseSettings

    from crawler.url.learning import UrlRuleLearner
    from crawler.url.stores import SeenSet, SeenStore

logger = logging.getLogger(__name__)

LOCAL_BACKENDS = ("bloom", "memory")
REDIS_BACKENDS = ("redis", "redis-bloom")


#: Bloom fill ratio at which a warning says the filter is about to grow.
FILL_WARNING_RATIO = 0.8


def url_rules_from_settings(settings: BaseSettings) -> UrlRules:
    """Build the canonicalization rules from ``DEDUP_URL_*`` settings."""
    return UrlRules(
        strip_params=tuple(
            settings.getlist("DEDUP_URL_STRIP_PARAMS", defaults.DEDUP_URL_STRIP_PARAMS)
        ),
        keep_params=tuple(
            settings.getlist("DEDUP_URL_KEEP_PARAMS", defaults.DEDUP_URL_KEEP_PARAMS)
        ),
        lowercase_path=settings.getbool(
            "DEDUP_URL_LOWERCASE_PATH", defaults.DEDUP_URL_LOWERCASE_PATH
        ),
        fold_https=settings.getbool("DEDUP_URL_FOLD_HTTPS", defaults.DEDUP_URL_FOLD_HTTPS),
    )


def state_dir_setting(settings: BaseSettings) -> str:
    """The name of the setting the state directory comes from."""
    return "DEDUP_STATE_DIR" if settings.get("DEDUP_STATE_DIR") else "JOBDIR"


def state_dir_from_settings(settings: BaseSettings, *, check_free: bool = True) -> Path | None:
    """``DEDUP_STATE_DIR``, else ``JOBDIR``, else ``None`` (memory only).

    A path that is a file, or a directory this process cannot write to, raises
    :exc:`ValueError` naming the setting, before the crawl starts; a directory that
    another crawl holds (:mod:`crawler.state.lock`) raises
    :class:`~crawler.state.lock.StateDirInUseError`, unless *check_free* is false.
    """
    name = state_dir_setting(settings)
    state_dir = settings.get("DEDUP_STATE_DIR") or job_dir(settings)
    if not state_dir:
        return None
    path = Path(state_dir)
    if path.exists() and not path.is_dir():
        raise ValueError(
            f"{name}={state_dir!r} is a file; dedup keeps its state in a directory: point "
            f"{name} at a directory (it is created if missing)"
        )
    if path.is_dir() and not os.access(path, os.W_OK | os.X_OK):
        raise ValueError(
            f"{name}={state_dir!r} is not writable by this process; dedup appends to its "
            f"journals there: point {name} at a writable directory"
        )
    if check_free:
        check_state_dir_free(path, name)
    return path


def check_url_state(settings: BaseSettings, spider_name: str) -> None:
    """Check the URL level's state before the crawl starts, so that a crawl that cannot use
    it stops as a bad setting stops it, before its spider opens: a local state directory
    that lost its journal or its snapshot, or whose files are damaged, raises
    :class:`~crawler.state.persistence.StateFileError`; a shared store raises
    :class:`~crawler.redis.connection.RedisUnavailable` when Redis cannot be reached, and
    :class:`~crawler.redis.connection.RedisSignatureMismatch` when it was built with other
    rules or by another backend (a store without a signature yet gets this crawl's)."""
    backend = url_backend_from_settings(settings)
    if backend in REDIS_BACKENDS:
        store = redis_seen_store(settings, spider_name, backend)
        store.open(url_signature(url_rules_from_settings(settings), store))
        return
    state_dir = state_dir_from_settings(settings)
    if state_dir is not None:
        check_state_files(state_dir)
        if keeps_local_frontier(settings):
            check_frontier_files(state_dir)


def _bloom_sizing(
    settings: BaseSettings, generations: Generations | None = None
) -> tuple[int, float]:
    """Capacity and error rate of one Bloom filter. With a TTL a look-up consults
    every live slice's filter, so each gets its share of DEDUP_URL_ERROR_RATE."""
    capacity = settings.getint("DEDUP_URL_CAPACITY", defaults.DEDUP_URL_CAPACITY)
    if capacity < 1:
        raise ValueError(f"DEDUP_URL_CAPACITY={capacity!r} must be a positive number of URLs")
    error_rate = settings.getfloat("DEDUP_URL_ERROR_RATE", defaults.DEDUP_URL_ERROR_RATE)
    if not 0 < error_rate < 1:
        raise ValueError(
            f"DEDUP_URL_ERROR_RATE={error_rate!r} must be a probability between 0 and 1, e.g. 0.001"
        )
    if generations is not None:
        error_rate /= len(generations.live())
    return capacity, error_rate


def url_backend_from_settings(settings: BaseSettings) -> str:
    """``DEDUP_URL_BACKEND``, checked."""
    return defaults.checked_choice(
        settings, "DEDUP_URL_BACKEND", LOCAL_BACKENDS + REDIS_BACKENDS, "a URL store"
    )


def snapshot_every_from_settings(settings: BaseSettings) -> int:
    every = settings.getint("DEDUP_SNAPSHOT_EVERY", defaults.DEDUP_SNAPSHOT_EVERY)
    if every < 1:
        raise ValueError(f"DEDUP_SNAPSHOT_EVERY={every!r} must be a positive number of new entries")
    return every


def generations_from_settings(settings: BaseSettings) -> Generations | None:
    """The time slices of ``DEDUP_URL_TTL``, or ``None`` when URLs are kept forever."""
    ttl = settings.getfloat("DEDUP_URL_TTL", defaults.DEDUP_URL_TTL)
    if ttl < 0:
        raise ValueError(f"DEDUP_URL_TTL={ttl!r} must be 0 (forever) or a number of seconds")
    if not ttl:
        return None
    count = settings.getint("DEDUP_URL_TTL_GENERATIONS", defaults.DEDUP_URL_TTL_GENERATIONS)
    if count < 1:
        raise ValueError(
            f"DEDUP_URL_TTL_GENERATIONS={count!r} must be at least 1 (time slices per TTL)"
        )
    return Generations(ttl, count)


def seen_set_factory(settings: BaseSettings, backend: str) -> Callable[[], SeenSet]:
    """A callable that makes an empty local seen set of *backend*, sized by the settings."""
    generations = generations_from_settings(settings)
    new_set: Callable[[], SeenSet]
    if backend == "memory":
        new_set = MemorySeenSet
    else:
        capacity, error_rate = _bloom_sizing(settings, generations)
        new_set = partial(BloomSeenSet, capacity, error_rate)
    if generations is None:
        return new_set
    return partial(GenerationalSeenSet, new_set, generations)


def redis_shards_from_settings(settings: BaseSettings) -> int:
    """``DEDUP_REDIS_SHARDS``, checked; unset, 1 on one server and
    :data:`CLUSTER_SHARDS` on a Redis Cluster."""
    shards = settings.get("DEDUP_REDIS_SHARDS", defaults.DEDUP_REDIS_SHARDS)
    if shards is None:
        cluster = settings.getbool("DEDUP_REDIS_CLUSTER", defaults.DEDUP_REDIS_CLUSTER)
        return CLUSTER_SHARDS if cluster else 1
    try:
        count = int(str(shards).strip())
    except ValueError:
        count = 0
    if not 1 <= count <= CLUSTER_SLOTS or isinstance(shards, float):
        raise ValueError(
            f"DEDUP_REDIS_SHARDS={shards!r} must be a number of shards from 1 to {CLUSTER_SLOTS}"
        )
    return count


def seen_store_from_settings(
    settings: BaseSettings,
    spider_name: str,
    signature_of: Callable[[Any], dict[str, Any]],
    *,
    key_setting: str = "DEDUP_REDIS_KEY",
    name: str = "seen-urls",
) -> SeenStore:
    """The seen store ``DEDUP_URL_BACKEND`` asks for, not opened: shared in Redis at the
    key *key_setting* names; or local, journaled as *name* in the state directory when
    there is one (its files checked now), in memory only otherwise. *signature_of* gives
    the rules signature of a set or a Redis store of the backend."""
    backend = url_backend_from_settings(settings)
    if backend in REDIS_BACKENDS:
        store = redis_seen_store(settings, spider_name, backend, key_setting)
        return SharedSeenStore(store, signature_of(store))
    new_set = seen_set_factory(settings, backend)
    state_dir = state_dir_from_settings(settings)
    seen = new_set()
    if state_dir is None:
        return UnpersistedSeenStore(seen, signature_of(seen))
    journaled = JournaledSeenStore(
        new_set,
        state_dir,
        signature_of(seen),
        name=name,
        snapshot_every=snapshot_every_from_settings(settings),
    )
    journaled.journal.check_files()
    return journaled


def redis_key_base(
    settings: BaseSettings, spider_name: str, key_setting: str = "DEDUP_REDIS_KEY"
) -> str:
    """The Redis key that *key_setting*'s template gives for *spider_name*."""
    key = settings.get(key_setting, getattr(defaults, key_setting))
    try:
        return str(key % {"spider": spider_name})
    except (KeyError, ValueError, TypeError) as exc:
        raise ValueError(
            f"{key_setting}={key!r} is not a key template; %(spider)s is the only field"
        ) from exc


def redis_seen_store(
    settings: BaseSettings,
    spider_name: str,
    backend: str,
    key_setting: str = "DEDUP_REDIS_KEY",
) -> RedisSeenStore:
    """The shared seen store of *backend* for *spider_name* at the Redis key named by
    *key_setting* (not opened), in ``DEDUP_REDIS_SHARDS`` shards."""
    connection = connection_from_settings(settings)
    key = settings.get(key_setting, getattr(defaults, key_setting))
    base = redis_key_base(settings, spider_name, key_setting)
    generations = generations_from_settings(settings)
    capacity, error_rate = _bloom_sizing(settings, generations)
    count = redis_shards_from_settings(settings)

    def store_at(store_base: str) -> RedisSetSeenStore | RedisBloomSeenStore:
        if backend == "redis":
            return RedisSetSeenStore(
                connection, store_base, generations=generations, key_setting=key_setting
            )
        return RedisBloomSeenStore(
            connection,
            store_base,
            shard_capacity(capacity, count),
            error_rate,
            generations=generations,
            key_setting=key_setting,
        )

    try:
        if count == 1:
            return store_at(base)
        shards = [store_at(shard_base) for shard_base in shard_bases(base, count)]
    except ValueError as exc:
        raise ValueError(f"{key_setting}={key!r}: {exc}") from exc
    return ShardedRedisSeenStore(
        connection,
        base,
        shards,
        capacity=capacity if backend != "redis" else None,
        key_setting=key_setting,
    )


def keeps_local_frontier(settings: BaseSettings) -> bool:
    """Whether the crawl journals its scheduled requests (:class:`~crawler.url.frontier.Frontier`),
    its state directory aside."""
    # not issubclass(): Scrapy's scheduler classes accept any class with the
    # scheduler methods as a subclass, scrapy-redis's included
    return (
        settings.getbool("DEDUP_URL_RESUME", defaults.DEDUP_URL_RESUME)
        and ScrapyScheduler in load_object(settings["SCHEDULER"]).__mro__
    )


def url_signature(rules: UrlRules, seen: Any) -> dict[str, Any]:
    """What a persisted URL store was built with, by setting name."""
    signature: dict[str, Any] = {
        "DEDUP_URL_BACKEND": seen.kind,
        "request key version": KEY_VERSION,
    }
    for name, value in rules.describe().items():
        signature[f"DEDUP_URL_{name.upper()}"] = value
    signature.update(store_params_by_setting(seen))
    return signature


def store_params_by_setting(seen: Any) -> dict[str, Any]:
    """A seen store's parameters named as settings: ``DEDUP_URL_<NAME>``, or the name
    itself when it is a setting already."""
    return {
        name if name.startswith("DEDUP_") else f"DEDUP_URL_{name.upper()}": value
        for name, value in seen.params().items()
    }


_RECRAWL_INTERVALS = {
    "min_interval": ("DEDUP_RECRAWL_MIN_INTERVAL", "minimum"),
    "first_interval": ("DEDUP_RECRAWL_FIRST_INTERVAL", "first"),
    "max_interval": ("DEDUP_RECRAWL_MAX_INTERVAL", "maximum"),
    "most_not_modified": ("DEDUP_RECRAWL_MOST_NOT_MODIFIED", "most_not_modified"),
}


def recrawl_schedules_from_settings(
    settings: BaseSettings,
) -> tuple[RecrawlSchedule, dict[str, RecrawlSchedule]]:
    """The recrawl schedule of every host, and those of the hosts ``DEDUP_RECRAWL_HOSTS``
    names (by glob pattern); :exc:`ValueError` naming the setting at fault."""
    values: dict[str, Any] = {}
    for setting, field in _RECRAWL_INTERVALS.values():
        values[field] = _whole_number(settings.get(setting, getattr(defaults, setting)), setting)
    try:
        default = RecrawlSchedule(**values)
    except ValueError as exc:
        given = ", ".join(
            f"{setting}={values[field]!r}" for setting, field in _RECRAWL_INTERVALS.values()
        )
        raise ValueError(f"{exc} ({given})") from None
    overrides = {}
    hosts = settings.getdict("DEDUP_RECRAWL_HOSTS", defaults.DEDUP_RECRAWL_HOSTS)
    for pattern, override in hosts.items():
        where = f"DEDUP_RECRAWL_HOSTS[{pattern!r}]"
        if not isinstance(override, dict) or set(override) - set(_RECRAWL_INTERVALS):
            raise ValueError(
                f"{where}={override!r} must be a dict of some of "
                f"{', '.join(map(repr, _RECRAWL_INTERVALS))}"
            )
        values_here = dict(values)
        for name, value in override.items():
            values_here[_RECRAWL_INTERVALS[name][1]] = _whole_number(value, f"{where}[{name!r}]")
        try:
            overrides[str(pattern)] = RecrawlSchedule(**values_here)
        except ValueError as exc:
            raise ValueError(f"{where}: {exc}") from None
    return default, overrides


def _whole_number(value: Any, where: str) -> int:
    try:
        number = int(value)
    except (TypeError, ValueError):
        number = None
    if number is None or number != float(value):
        raise ValueError(f"{where}={value!r} must be a whole number (seconds, or answers)")
    return number


def recrawl_signature(rules: UrlRules) -> dict[str, Any]:
    """What the keys of recrawl records were made with, by setting name."""
    return {
        **{f"DEDUP_URL_{name.upper()}": value for name, value in rules.describe().items()},
        "request key version": KEY_VERSION,
    }


_recrawls: weakref.WeakKeyDictionary[Crawler, Recrawl] = weakref.WeakKeyDictionary()


def recrawl_for(crawler: Crawler) -> Recrawl | None:
    """The :class:`~crawler.url.recrawl.Recrawl` of *crawler*, the one its dupefilter, its
    middleware and its content pipeline share, built at the first call; ``None`` unless
    ``DEDUP_RECRAWL``."""
    settings = crawler.settings
    if not settings.getbool("DEDUP_RECRAWL", defaults.DEDUP_RECRAWL):
        return None
    if crawler in _recrawls:
        return _recrawls[crawler]
    schedule, overrides = recrawl_schedules_from_settings(settings)
    rules = url_rules_from_settings(settings)
    store: RecrawlStore | RedisRecrawlStore
    if url_backend_from_settings(settings) in REDIS_BACKENDS:
        seen = redis_seen_store(
            settings, getattr(crawler.spidercls, "name", ""), url_backend_from_settings(settings)
        )
        store = RedisRecrawlStore.beside(seen, recrawl_signature(rules))
        recrawl = Recrawl(crawler, store, schedule, overrides, UrlCanonicalizer(rules))
        _recrawls[crawler] = recrawl
        return recrawl
    state_dir = state_dir_from_settings(settings, check_free=False)
    if state_dir is None:
        logger.warning(
            "DEDUP_RECRAWL keeps its records in memory only: set DEDUP_STATE_DIR or JOBDIR "
            "so that the next crawl downloads only what changed"
        )
    every = snapshot_every_from_settings(settings)
    store = RecrawlStore(state_dir, recrawl_signature(rules), snapshot_every=every)
    recrawl = Recrawl(crawler, store, schedule, overrides, UrlCanonicalizer(rules))
    _recrawls[crawler] = recrawl
    return recrawl


def learner_from_settings(settings: BaseSettings) -> UrlRuleLearner | None:
    """A learner as the settings ask for, or ``None`` when ``DEDUP_URL_LEARN`` is off."""
    from crawler.url.learning import UrlRuleLearner  # only for the dupefilter

    if not settings.getbool("DEDUP_URL_LEARN", defaults.DEDUP_URL_LEARN):
        return None
    min_evidence = settings.getint(
        "DEDUP_URL_LEARN_MIN_EVIDENCE", defaults.DEDUP_URL_LEARN_MIN_EVIDENCE
    )
    if min_evidence < 1:
        raise ValueError(
            f"DEDUP_URL_LEARN_MIN_EVIDENCE={min_evidence!r}: a rule needs at least 1 page "
            "of evidence (default 3)"
        )
    verify_every = settings.getint(
        "DEDUP_URL_LEARN_VERIFY_EVERY", defaults.DEDUP_URL_LEARN_VERIFY_EVERY
    )
    if verify_every < 0:
        raise ValueError(
            f"DEDUP_URL_LEARN_VERIFY_EVERY={verify_every!r}: use 0 to never download a "
            "request a learned rule filters, or N to download one in N"
        )
    return UrlRuleLearner(min_evidence=min_evidence, verify_every=verify_every)


def rel_canonical_from_settings(settings: BaseSettings) -> bool:
    """``DEDUP_URL_REL_CANONICAL``: whether a page's declared canonical URL counts as seen."""
    return settings.getbool("DEDUP_URL_REL_CANONICAL", defaults.DEDUP_URL_REL_CANONICAL)
