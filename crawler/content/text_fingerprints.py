"""What the near-duplicate detector needs of one text, computed once and anywhere: in the
crawl process or in a worker process, which needs nothing of the index.

Nothing here imports Scrapy.
"""

from __future__ import annotations

from dataclasses import dataclass

from crawler.content import fingerprints

__all__ = [
    "DEFAULT_MIN_REPEATS",
    "TextFingerprint",
    "fingerprint_normalized",
    "fingerprint_text",
]

DEFAULT_MIN_REPEATS = 2


@dataclass(frozen=True)
class TextFingerprint:
    """What the detector needs of a text: computed once, anywhere, then looked up.

    ``page_size`` is the :func:`crawler.content.fingerprints.page_size_class` of the page the text
    was extracted from, ``0`` when there was none (text given alone).
    """

    normalized_length: int
    fingerprint: int
    content_hash: bytes
    minhash: bytes = bytes(fingerprints.MINHASH_BYTES)
    numbers: int = 0
    page_size: int = 0


def fingerprint_text(
    text: str, *, fold_repeats: bool = False, min_repeats: int = DEFAULT_MIN_REPEATS
) -> TextFingerprint:
    """Normalize *text* and return its length, SimHash and content hash."""
    return fingerprint_normalized(
        fingerprints.normalize_text(text, fold_repeats=fold_repeats, min_repeats=min_repeats)
    )


def fingerprint_normalized(normalized: str) -> TextFingerprint:
    """Return the length, SimHash, content hash and MinHash of a text already normalized."""
    simhash, minhash = fingerprints.simhash_and_minhash_of_normalized(normalized)
    return TextFingerprint(
        normalized_length=len(normalized),
        fingerprint=simhash,
        content_hash=fingerprints.content_hash(normalized),
        minhash=minhash,
        numbers=fingerprints.numbers_signature(normalized),
    )
