"""The content level's settings, read and checked: the detector, its shared index, the
pipeline's options and the fields of an item it reads. Apart from the URL level's
(:mod:`crawler.url.configuration`): the modules that need NumPy and the extractors are
imported where a detector or an index is built, so that the URL level's components and
the add-on do not pay their 0.14 s. Each bad value raises :exc:`ValueError` naming its
setting."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from crawler import defaults

if TYPE_CHECKING:
    from scrapy.settings import BaseSettings

    from crawler.content.index.redis import RedisContentIndex
    from crawler.content.neardup import NearDuplicateDetector

CONTENT_BACKENDS = ("memory", "redis")
#: What ``DEDUP_CONTENT_ACTION`` may ask for a duplicate item.
CONTENT_ACTIONS = ("drop", "mark")


def content_backend_from_settings(settings: BaseSettings) -> str:
    """``DEDUP_CONTENT_BACKEND``, checked."""
    return defaults.checked_choice(
        settings, "DEDUP_CONTENT_BACKEND", CONTENT_BACKENDS, "a content index"
    )


def redis_content_index(settings: BaseSettings, spider_name: str) -> RedisContentIndex:
    """The shared content index of *spider_name*, at ``DEDUP_REDIS_CONTENT_KEY`` (not
    opened)."""
    from crawler.content.index.redis import RedisContentIndex
    from crawler.redis.connection import connection_from_settings

    base = settings.get("DEDUP_REDIS_CONTENT_KEY", defaults.DEDUP_REDIS_CONTENT_KEY)
    return RedisContentIndex(connection_from_settings(settings), base % {"spider": spider_name})


def detector_from_settings(
    settings: BaseSettings, shared_index: RedisContentIndex | None = None
) -> NearDuplicateDetector:
    """The content level's detector, with the ``DEDUP_*`` thresholds and options, on
    *shared_index* when given (else its own local index)."""
    from crawler.content.neardup import NearDuplicateDetector

    return NearDuplicateDetector(
        short_text_chars=text_chars_from_settings(settings, "DEDUP_SHORT_TEXT_CHARS"),
        short_threshold=threshold_from_settings(settings, "DEDUP_SHORT_THRESHOLD"),
        long_threshold=threshold_from_settings(settings, "DEDUP_LONG_THRESHOLD"),
        min_chars=text_chars_from_settings(settings, "DEDUP_MIN_TEXT_CHARS"),
        fold_repeats=settings.getbool("DEDUP_FOLD_REPEATS", defaults.DEDUP_FOLD_REPEATS),
        min_similarity=_min_similarity(settings),
        second_stage=settings.getbool("DEDUP_SECOND_STAGE", defaults.DEDUP_SECOND_STAGE),
        second_stage_distance=_second_stage_distance(settings),
        shared_index=shared_index,
        extractor=_extractor(settings),
    )


def _min_similarity(settings: BaseSettings) -> float:
    value = settings.getfloat("DEDUP_MIN_SIMILARITY", defaults.DEDUP_MIN_SIMILARITY)
    if not 0 <= value <= 1:
        raise ValueError(
            f"DEDUP_MIN_SIMILARITY={value!r} must be a number from 0 to 1 (the estimated "
            "share of word pairs two texts have in common)"
        )
    return value


def _extractor(settings: BaseSettings) -> str:
    from crawler.content.extract import check_extractor

    value = settings.get("DEDUP_EXTRACTOR", defaults.DEDUP_EXTRACTOR)
    try:
        check_extractor(value)
    except ValueError as exc:
        raise ValueError(f"DEDUP_EXTRACTOR={value!r}: {exc}") from None
    return str(value)


def _second_stage_distance(settings: BaseSettings) -> int:
    why = "the second stage probes each band one bit away: complete to 7 bits"
    return _distance(settings, "DEDUP_SECOND_STAGE_DISTANCE", 3, 16, why)


def threshold_from_settings(settings: BaseSettings, name: str) -> int:
    """``DEDUP_SHORT_THRESHOLD`` or ``DEDUP_LONG_THRESHOLD`` (*name*): a Hamming distance."""
    why = "the banded index finds every fingerprint within 3 bits, no farther"
    return _distance(settings, name, 0, 3, why)


def _distance(settings: BaseSettings, name: str, lowest: int, highest: int, why: str) -> int:
    value = settings.getint(name, getattr(defaults, name))
    if not lowest <= value <= highest:
        raise ValueError(
            f"{name}={value!r} must be a Hamming distance from {lowest} to {highest} ({why})"
        )
    return value


def text_chars_from_settings(settings: BaseSettings, name: str) -> int:
    """``DEDUP_SHORT_TEXT_CHARS`` or ``DEDUP_MIN_TEXT_CHARS`` (*name*): characters."""
    value = settings.getint(name, getattr(defaults, name))
    if value < 0:
        raise ValueError(f"{name}={value!r} must be a number of characters, 0 or more")
    return value


def workers_from_settings(settings: BaseSettings) -> int | str:
    """``DEDUP_CONTENT_WORKERS``: ``"auto"``, or a number of worker processes."""
    value = settings.get("DEDUP_CONTENT_WORKERS", defaults.DEDUP_CONTENT_WORKERS)
    if value == "auto":
        return value
    try:
        workers = int(value)
    except (TypeError, ValueError):
        workers = -1
    if workers < 0:
        raise ValueError(
            f"DEDUP_CONTENT_WORKERS={value!r} must be 'auto' or a number of worker processes "
            "(0 for threads of the crawl process only)"
        )
    return workers


def extract_timeout_from_settings(settings: BaseSettings) -> float:
    """``DEDUP_EXTRACT_TIMEOUT``, in seconds (0: no limit)."""
    return _seconds(settings, "DEDUP_EXTRACT_TIMEOUT", "no limit")


def hold_seconds_from_settings(settings: BaseSettings) -> float:
    """``DEDUP_HOLD_SECONDS`` (0: no hold)."""
    return _seconds(settings, "DEDUP_HOLD_SECONDS", "none")


def _seconds(settings: BaseSettings, name: str, zero_means: str) -> float:
    value = settings.getfloat(name, getattr(defaults, name))
    if value < 0:
        raise ValueError(f"{name}={value!r} must be a number of seconds, 0 for {zero_means}")
    return value


def action_from_settings(settings: BaseSettings) -> str:
    """``DEDUP_CONTENT_ACTION``: ``"drop"`` or ``"mark"``."""
    return defaults.checked_choice(
        settings, "DEDUP_CONTENT_ACTION", CONTENT_ACTIONS, "an action", "use 'drop' or 'mark'"
    )


def page_fields_from_settings(settings: Any) -> tuple[str, str]:
    """The item fields that hold a page's HTML and its text (``DEDUP_HTML_FIELD``,
    ``DEDUP_TEXT_FIELD``)."""
    return (
        _field_name(settings, "DEDUP_HTML_FIELD"),
        _field_name(settings, "DEDUP_TEXT_FIELD"),
    )


def text_field_from_settings(settings: Any) -> str:
    """``DEDUP_TEXT_FIELD``: the item field that holds a page's text."""
    return _field_name(settings, "DEDUP_TEXT_FIELD")


def item_text_fields_from_settings(settings: BaseSettings) -> list[str]:
    """``DEDUP_ITEM_TEXT_FIELDS``: the fields whose text stands for an item without a page."""
    return _field_names(settings, "DEDUP_ITEM_TEXT_FIELDS")


def item_key_fields_from_settings(settings: BaseSettings) -> list[str]:
    """``DEDUP_ITEM_KEY_FIELDS``: the fields whose values make an item's key (none: no key)."""
    return _field_names(settings, "DEDUP_ITEM_KEY_FIELDS")


def item_keys_asked(settings: BaseSettings) -> bool:
    """Whether ``DEDUP_ITEM_KEY_FIELDS`` names fields (checked by the item-key pipeline)."""
    return bool(settings.getlist("DEDUP_ITEM_KEY_FIELDS", defaults.DEDUP_ITEM_KEY_FIELDS))


def keep_html_from_settings(settings: BaseSettings) -> bool:
    """``DEDUP_KEEP_HTML``: whether items keep their HTML field after the check."""
    return settings.getbool("DEDUP_KEEP_HTML", defaults.DEDUP_KEEP_HTML)


def max_page_bytes_from_settings(settings: BaseSettings) -> int:
    """``DEDUP_MAX_PAGE_BYTES``: the size a page is cut to before extraction."""
    value = settings.getint("DEDUP_MAX_PAGE_BYTES", defaults.DEDUP_MAX_PAGE_BYTES)
    if value < 1:
        raise ValueError(f"DEDUP_MAX_PAGE_BYTES={value!r} must be a number of bytes, 1 or more")
    return value


def _field_name(settings: Any, name: str) -> str:
    value = settings.get(name, getattr(defaults, name))
    if not isinstance(value, str) or not value:
        raise ValueError(f"{name}={value!r} must be the name of an item field")
    return value


def _field_names(settings: BaseSettings, name: str) -> list[str]:
    values = settings.getlist(name, getattr(defaults, name))
    for value in values:
        if not isinstance(value, str) or not value:
            raise ValueError(f"{name}={values!r} must be a list of item field names")
    return list(values)
