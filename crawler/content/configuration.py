"""The content level's detector and shared index built from settings, apart from the URL
level's (:mod:`crawler.url.configuration`): the URL level's components (a project that sets
``DUPEFILTER_CLASS`` alone) do not import the extractors and NumPy, 0.14 s of a crawl's
start. Each bad value raises :exc:`ValueError` naming its setting."""

from __future__ import annotations

from typing import TYPE_CHECKING

from crawler import defaults
from crawler.content.extract import check_extractor
from crawler.content.index.redis import RedisContentIndex
from crawler.content.neardup import NearDuplicateDetector
from crawler.redis.connection import connection_from_settings

if TYPE_CHECKING:
    from scrapy.settings import BaseSettings

CONTENT_BACKENDS = ("memory", "redis")


def content_backend_from_settings(settings: BaseSettings) -> str:
    """``DEDUP_CONTENT_BACKEND``, checked."""
    return defaults.checked_choice(
        settings, "DEDUP_CONTENT_BACKEND", CONTENT_BACKENDS, "a content index"
    )


def redis_content_index(settings: BaseSettings, spider_name: str) -> RedisContentIndex:
    """The shared content index of *spider_name*, at ``DEDUP_REDIS_CONTENT_KEY`` (not
    opened)."""
    base = settings.get("DEDUP_REDIS_CONTENT_KEY", defaults.DEDUP_REDIS_CONTENT_KEY)
    return RedisContentIndex(connection_from_settings(settings), base % {"spider": spider_name})


def detector_from_settings(
    settings: BaseSettings, shared_index: RedisContentIndex | None = None
) -> NearDuplicateDetector:
    """The content level's detector, with the ``DEDUP_*`` thresholds and options, on
    *shared_index* when given (else its own local index)."""
    return NearDuplicateDetector(
        short_text_chars=settings.getint("DEDUP_SHORT_TEXT_CHARS", defaults.DEDUP_SHORT_TEXT_CHARS),
        short_threshold=_threshold(settings, "DEDUP_SHORT_THRESHOLD"),
        long_threshold=_threshold(settings, "DEDUP_LONG_THRESHOLD"),
        min_chars=settings.getint("DEDUP_MIN_TEXT_CHARS", defaults.DEDUP_MIN_TEXT_CHARS),
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
    value = settings.get("DEDUP_EXTRACTOR", defaults.DEDUP_EXTRACTOR)
    try:
        check_extractor(value)
    except ValueError as exc:
        raise ValueError(f"DEDUP_EXTRACTOR={value!r}: {exc}") from None
    return str(value)


def _second_stage_distance(settings: BaseSettings) -> int:
    value = settings.getint("DEDUP_SECOND_STAGE_DISTANCE", defaults.DEDUP_SECOND_STAGE_DISTANCE)
    if not 3 <= value <= 16:
        raise ValueError(
            f"DEDUP_SECOND_STAGE_DISTANCE={value!r} must be a Hamming distance from 3 to 16 "
            "(the second stage probes each band one bit away: complete to 7 bits)"
        )
    return value


def _threshold(settings: BaseSettings, name: str) -> int:
    value = settings.getint(name, getattr(defaults, name))
    if not 0 <= value <= 3:
        raise ValueError(
            f"{name}={value!r} must be a Hamming distance from 0 to 3 (the banded index "
            "finds every fingerprint within 3 bits, no farther)"
        )
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
