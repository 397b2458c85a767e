"""The second signature of a text: a one-permutation, one-byte-a-bin MinHash of its
features, and the Jaccard similarity two signatures estimate
(:func:`estimated_jaccard`). It verifies a SimHash match before a text is called a copy
(:mod:`crawler.content.neardup`). Nothing here imports Scrapy.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from crawler.content.feature_hashes import hashes_of, mixed

if TYPE_CHECKING:
    from collections.abc import Iterable

    import numpy as np

#: Size of the signature (:func:`minhash_of_features`): one byte per bin.
MINHASH_BYTES = 64

_MINHASH_BIN_SHIFT = 64 - (MINHASH_BYTES - 1).bit_length()
# mixed into each feature's hash for the MinHash, which the SimHash uses as it is
MINHASH_SEED = 0x5EED
_GOLDEN = 0x9E3779B97F4A7C15
_MIX = 0xFF51AFD7ED558CCD


def minhash_of_features(features: Iterable[str]) -> bytes:
    """Return the :data:`MINHASH_BYTES`-byte MinHash signature of a set of features.

    - One-permutation MinHash: each feature's hash
      (:func:`crawler.content.feature_hashes.feature_hash`) is mixed with a seed apart from the
      SimHash's, the top bits of the result choose one of 64 bins and each bin keeps its
      smallest value; a bin that no feature fell into takes the value of the next filled
      bin, mixed with how far it is (densification), so every byte means something.
    - One byte of each bin's minimum is kept (b-bit MinHash): two signatures agree on a
      byte with probability ``J + (1 - J) / 256`` for texts whose feature sets have the
      Jaccard similarity ``J``; :func:`estimated_jaccard` inverts it.
    - No features gives 64 zero bytes; duplicates in *features* change nothing.

    >>> signature = minhash_of_features(["the cat", "cat sat"])
    >>> len(signature), signature == minhash_of_features(["cat sat", "the cat", "the cat"])
    (64, True)
    """
    return minhash_of_hashes(minhash_keys(hashes_of(features)))


def minhash_keys(
    hashes: np.ndarray[Any, np.dtype[np.uint64]],
) -> np.ndarray[Any, np.dtype[np.uint64]]:
    import numpy as np

    return mixed(hashes ^ np.uint64(MINHASH_SEED))


def minhash_of_hashes(hashes: np.ndarray[Any, np.dtype[np.uint64]]) -> bytes:
    import numpy as np

    if not hashes.size:
        return bytes(MINHASH_BYTES)
    bins = np.arange(MINHASH_BYTES, dtype=np.uint64)
    ordered = np.sort(hashes)
    # the smallest hash of bin i is the first one at or above i << shift, if it is in bin i
    firsts = np.searchsorted(ordered, bins << np.uint64(_MINHASH_BIN_SHIFT))
    minimums = ordered[np.minimum(firsts, ordered.size - 1)]
    filled = (firsts < ordered.size) & ((minimums >> np.uint64(_MINHASH_BIN_SHIFT)) == bins)
    if not filled.all():
        filled_bins = np.flatnonzero(filled)
        donors = filled_bins[np.searchsorted(filled_bins, bins) % filled_bins.size]
        steps = (donors.astype(np.uint64) - bins) % np.uint64(MINHASH_BYTES)
        borrowed = (minimums[donors] ^ (steps * np.uint64(_GOLDEN))) * np.uint64(_MIX)
        minimums = np.where(filled, minimums, borrowed)
    return (minimums & np.uint64(0xFF)).astype(np.uint8).tobytes()


def estimated_jaccard(first: bytes, second: bytes) -> float:
    """Estimate the Jaccard similarity of the feature sets behind two MinHash signatures.

    - The share of equal bytes, corrected for the 1/256 chance that two bytes of
      different minimums agree, clipped to ``[0, 1]``; with 64 bytes the standard error
      is about 0.06 at ``J = 0.5``.
    - Signatures of different sizes raise :exc:`ValueError`.

    >>> estimated_jaccard(bytes(64), bytes(64)), estimated_jaccard(bytes(64), b"\\1" * 64)
    (1.0, 0.0)
    """
    if len(first) != len(second) or not first:
        raise ValueError(
            f"MinHash signatures must have the same non-zero size, got {len(first)} and "
            f"{len(second)} bytes"
        )
    agreeing = sum(a == b for a, b in zip(first, second, strict=True)) / len(first)
    chance = 1 / 256
    return min(1.0, max(0.0, (agreeing - chance) / (1 - chance)))
