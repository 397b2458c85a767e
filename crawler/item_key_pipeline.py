"""``ItemKeyPipeline``: drop items whose business key (``DEDUP_ITEM_KEY_FIELDS``) was seen
before. Enabled by the add-on when the setting names fields; its public path is
``crawler.pipelines.ItemKeyPipeline``.
"""

from __future__ import annotations

import json
import logging
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from itemadapter import ItemAdapter
from scrapy import signals as scrapy_signals
from scrapy.exceptions import CloseSpider, NotConfigured
from scrapy.utils.defer import deferred_from_coro

from crawler import defaults
from crawler import signals as dedup_signals
from crawler.audit import ITEM_LEVEL, AuditLog
from crawler.closing import SpiderCloser
from crawler.content.configuration import item_key_fields_from_settings
from crawler.content.item_keys import ITEM_KEY_VERSION, item_key
from crawler.exceptions import DuplicateItem
from crawler.off_reactor import in_thread
from crawler.redis.connection import (
    RedisFaultPending,
    RedisStartRefused,
    RedisUnavailable,
    redis_error_policy_from_settings,
)
from crawler.state.lock import lock_state_dir, unlock_state_dir
from crawler.url.configuration import (
    FILL_WARNING_RATIO,
    seen_store_from_settings,
    state_dir_setting,
    store_params_by_setting,
)

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from typing_extensions import Self

    from crawler.url.stores import SeenStore

logger = logging.getLogger(__name__)


class ItemKeyPipeline:
    """Drop items whose business key (``DEDUP_ITEM_KEY_FIELDS``) was seen before.

    The crawl-level form of a unique index: ``DEDUP_ITEM_KEY_FIELDS = ["sku"]``
    keeps the first item of each SKU. Keys live in the same kind of store as
    URLs (``DEDUP_URL_BACKEND``, persisted in the state dir as ``seen-items``,
    or in Redis at ``DEDUP_REDIS_ITEM_KEY``), with the same ``DEDUP_URL_TTL``.
    Items missing a key field are kept and counted; when Redis stays away,
    items are kept, never dropped unchecked (``DEDUP_REDIS_ON_ERROR = "stop"``
    also closes the spider).
    """

    def __init__(
        self,
        crawler: Crawler,
        fields: list[str],
        seen: SeenStore,
        *,
        redis_error_policy: str = defaults.DEDUP_REDIS_ON_ERROR,
        audit_path: Path | None = None,
    ) -> None:
        self.crawler = crawler
        self.stats = crawler.stats
        self.fields = fields
        self.seen = seen
        self.redis_error_policy = redis_error_policy
        self.audit_path = audit_path
        self._audit: AuditLog | None = None
        self._missing_warned: set[str] = set()
        self._closer = SpiderCloser(crawler, "dedup_redis_unavailable", logger)
        self._state_dir: Path | None = None
        # a local store records a key once its item left the pipelines (see _is_new)
        self._pending: dict[bytes, int] = {}
        dedup_signals.connect_item_left(crawler, self._item_left)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        settings = crawler.settings
        if defaults.switched_off(settings):
            raise NotConfigured("DEDUP_ENABLED is False")
        fields = item_key_fields_from_settings(settings)
        if not fields:
            raise NotConfigured("DEDUP_ITEM_KEY_FIELDS is empty")
        seen = seen_store_from_settings(
            settings,
            getattr(crawler.spidercls, "name", ""),  # names Redis keys only
            partial(item_signature, fields),
            key_setting="DEDUP_REDIS_ITEM_KEY",
            name="seen-items",
        )
        return cls(
            crawler,
            fields,
            seen,
            redis_error_policy=(
                redis_error_policy_from_settings(settings)
                if seen.shared
                else defaults.DEDUP_REDIS_ON_ERROR
            ),
            audit_path=defaults.audit_path_from_settings(settings),
        )

    def open_spider(self) -> None:
        if self.seen.state_dir is not None:
            self._state_dir = self.seen.state_dir
            lock_state_dir(self._state_dir, state_dir_setting(self.crawler.settings))
        try:
            self.seen.open()
        except RedisStartRefused as exc:
            # said in one ERROR line; Scrapy closes a spider that fails to open so
            raise CloseSpider("dedup_redis_unavailable") from exc
        if self.audit_path is not None:
            self._audit = AuditLog(self.audit_path)
        logger.info(
            "Item dedup on %(fields)s: %(entries)d keys seen in earlier runs",
            {"fields": ", ".join(self.fields), "entries": len(self.seen)},
        )

    def close_spider(self) -> None:
        try:
            self._close()
        finally:
            if self._state_dir is not None:
                unlock_state_dir(self._state_dir)
                self._state_dir = None

    def _close(self) -> None:
        if self._audit is not None:
            self._audit.close()
        # keys still pending went out in items a later pipeline replaced by another object
        for key in self._pending:
            self.seen.add(key)
        self._pending.clear()
        try:
            store_stats = self.seen.stats()
            self.seen.close()
        except RedisUnavailable as exc:
            logger.info("%(summary)s", {"summary": f"{self.summary()}; store unknown ({exc})"})
            return
        for name, value in store_stats.items():
            self.stats.set_value(f"dedup/item/store/{name}", value)
        if store_stats.get("fill_ratio", 0.0) >= FILL_WARNING_RATIO:
            logger.warning(
                "The item-key Bloom filter holds %(entries)d keys, %(percent).0f%% of "
                "DEDUP_URL_CAPACITY: raise DEDUP_URL_CAPACITY for the next crawl (a false "
                "positive drops a unique item)",
                {"entries": store_stats["entries"], "percent": store_stats["fill_ratio"] * 100},
            )
        logger.info("%(summary)s", {"summary": self.summary(store_stats)})

    def summary(self, store_stats: dict[str, float] | None = None) -> str:
        """One line for people: what was dropped, and how full the key store is."""
        get = self.stats.get_value
        line = (
            f"Item dedup on {', '.join(self.fields)}: {get('dedup/item/dropped', 0)} items "
            f"dropped for a key seen before, {get('dedup/item/unique', 0)} unique, "
            f"{get('dedup/item/missing_key', 0)} without a key"
        )
        if store_stats is not None:
            line += f"; the store holds {store_stats['entries']} keys"
            if "fill_ratio" in store_stats:
                line += (
                    f", {store_stats['fill_ratio']:.1%} of capacity, estimated "
                    f"false-positive rate {store_stats['false_positive_rate']:.2g}"
                )
        return line

    def process_item(self, item: Any) -> Any:
        adapter = ItemAdapter(item)
        values = [adapter.get(field) for field in self.fields]
        missing = [field for field, value in zip(self.fields, values, strict=True) if value is None]
        if missing:
            self.stats.inc_value("dedup/item/missing_key")
            new_missing = set(missing) - self._missing_warned
            if new_missing:
                self._missing_warned |= new_missing
                logger.warning(
                    "Items without %(fields)s (a DEDUP_ITEM_KEY_FIELDS field) are kept "
                    "unchecked; counted in dedup/item/missing_key",
                    {"fields": ", ".join(sorted(new_missing))},
                )
            return item
        key = item_key(self.fields, values)
        try:
            new = self._is_new(key, item)
        except RedisFaultPending as exc:
            # the reactor does not wait for a server that fails: a thread asks it again
            return deferred_from_coro(
                self._asked_off_the_reactor(key, item, values, exc.may_have_applied)
            )
        except RedisUnavailable as exc:
            self._redis_unavailable(exc)
            return item
        return self._decided(new, item, values)

    async def _asked_off_the_reactor(
        self, key: bytes, item: Any, values: list[Any], may_have_applied: bool
    ) -> Any:
        try:
            new = await in_thread(self._is_new, key, item)
        except RedisUnavailable as exc:
            self._redis_unavailable(exc)
            return item
        if not new and may_have_applied:
            # the first call may have recorded the key itself: not a repeat of another item
            self.stats.inc_value("dedup/redis/retried_let_through")
            new = True
        return self._decided(new, item, values)

    def _decided(self, new: bool, item: Any, values: list[Any]) -> Any:
        """*item* if its key is *new*; otherwise counted, audited, and dropped."""
        if new:
            self.stats.inc_value("dedup/item/unique")
            return item
        adapter = ItemAdapter(item)
        self.stats.inc_value("dedup/item/dropped")
        key_values = dict(zip(self.fields, values, strict=True))
        if self._audit is not None:
            self._audit.write(
                {
                    "level": ITEM_LEVEL,
                    "url": str(adapter.get("url") or ""),
                    "decision": "dropped",
                    "reason": "item_key",
                    "key": {field: _jsonable(value) for field, value in key_values.items()},
                }
            )
        shown = ", ".join(f"{field}={value!r}" for field, value in key_values.items())
        raise DuplicateItem(f"Duplicate item key ({shown}) seen before", log_level="INFO")

    def _is_new(self, key: bytes, item: Any) -> bool:
        """Whether *key* is new. A shared store records it at once (one atomic call, so
        workers agree). A local store records it only once its item has left the pipelines
        (scraped, and written by the feeds, on the same signal): an item a kill takes before
        that is not dropped on the restart as a repeat of itself. Meanwhile the key is
        pending, and an item with the same key is a repeat."""
        if self.seen.shared:
            return self.seen.add(key)
        if key in self.seen or key in self._pending:
            return False
        self._pending[key] = id(item)
        return True

    def _item_left(self, item: Any, signal: Any = None, **kwargs: Any) -> None:
        if not self._pending:
            return
        values = [ItemAdapter(item).get(field) for field in self.fields]
        if any(value is None for value in values):
            return
        key = item_key(self.fields, values)
        if self._pending.get(key) != id(item):
            return  # not the item that made it pending (a repeat of it, dropped here)
        del self._pending[key]
        if signal is scrapy_signals.item_scraped:
            self.seen.add(key)

    def _redis_unavailable(self, error: RedisUnavailable) -> None:
        self.stats.inc_value("dedup/item/unchecked")
        if self.redis_error_policy == "allow":
            return
        self._closer.close(
            "Item dedup: %(error)s; closing the spider (DEDUP_REDIS_ON_ERROR = 'stop'); "
            "this item is kept unchecked",
            {"error": error},
        )


def _jsonable(value: Any) -> Any:
    try:
        json.dumps(value)
    except (TypeError, ValueError):
        return str(value)
    return value


def item_signature(fields: list[str], seen: Any) -> dict[str, Any]:
    """What a persisted item-key store was built with, by setting name."""
    signature: dict[str, Any] = {
        "DEDUP_URL_BACKEND": seen.kind,
        "DEDUP_ITEM_KEY_FIELDS": list(fields),
        "item key version": ITEM_KEY_VERSION,
    }
    signature.update(store_params_by_setting(seen))
    return signature
