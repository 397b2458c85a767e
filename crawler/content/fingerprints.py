"""Content fingerprints: normalized text, an exact hash and a 64-bit SimHash.

Two fetches of one article differ in ways that do not matter to a reader: a date, a view
counter, typography, a changed paragraph. The functions here turn a page's main text into
values that ignore those differences:

* :func:`normalize_text` (:mod:`crawler.content.normalization`) maps the text to a canonical
  spelling (Unicode compatibility form, case folded, punctuation and symbols dropped,
  dates, times and counters masked, whitespace collapsed);
* :func:`content_hash` of the normalized text detects exact duplicates;
* :func:`simhash` (or :func:`simhash_of_normalized`) gives a 64-bit fingerprint in which
  similar texts differ by few bits, measured with :func:`hamming_distance`;
* :func:`minhash_of_normalized` gives the second signature (:mod:`crawler.content.minhash`),
  64 bytes, whose agreement with another (:func:`estimated_jaccard`) estimates how many word
  pairs two texts share: it verifies a SimHash match before a text is called a copy;
  :func:`page_size_class` (:mod:`crawler.content.page_size`) records how much text the whole
  page held; :func:`numbers_signature`
  (:mod:`crawler.content.numbers_signature`) keeps two pages that name different numbers apart.

The fingerprint of a text depends only on the text and on :data:`FINGERPRINT_VERSION`: not
on the process (Python's ``hash()`` is never used), the machine or the byte order.
:func:`describe` lists the settings it is built with, for the rules signature of a persisted
index; a change to any of them increments :data:`FINGERPRINT_VERSION`. (Normalization reads
the Unicode database of the running Python: a character that a later Unicode version
assigns can normalize differently between Python versions; assigned characters do not.)

Nothing here imports Scrapy.
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, Any

from crawler.content import speedups
from crawler.content.feature_hashes import NO_SPACE_SCRIPT_TABLE, feature_hashes, hashes_of
from crawler.content.minhash import (
    MINHASH_BYTES,
    MINHASH_SEED,
    estimated_jaccard,
    minhash_keys,
    minhash_of_features,
    minhash_of_hashes,
)
from crawler.content.normalization import (
    HAS_NO_SPACE_SCRIPT,
    SEGMENT,
    fold_repeated_block,
    normalize_text,
)
from crawler.content.numbers_signature import (
    NUMBERS_COUNT_BITS,
    NUMBERS_COUNTER_BITS,
    NUMBERS_COUNTERS,
    NUMBERS_OTHER_BITS,
    NUMBERS_SUM_BITS,
    numbers_conflict,
    numbers_signature,
)
from crawler.content.numbers_signature import (
    RULES as NUMBERS_SIGNATURE_RULES,
)
from crawler.content.page_size import (
    PAGE_SIZE_STEPS,
    page_size_class,
    page_sizes_differ,
)
from crawler.hashing import blake2b_digest

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping

    import numpy as np

__all__ = [
    "CJK_NGRAM",
    "FINGERPRINT_BITS",
    "FINGERPRINT_VERSION",
    "MINHASH_BYTES",
    "NUMBERS_COUNTERS",
    "NUMBERS_COUNTER_BITS",
    "NUMBERS_COUNT_BITS",
    "NUMBERS_OTHER_BITS",
    "NUMBERS_SUM_BITS",
    "WORD_NGRAMS",
    "content_hash",
    "describe",
    "estimated_jaccard",
    "feature_weight",
    "fold_repeated_block",
    "hamming_distance",
    "minhash_of_features",
    "minhash_of_normalized",
    "normalize_text",
    "numbers_conflict",
    "numbers_signature",
    "page_size_class",
    "page_sizes_differ",
    "simhash",
    "simhash_and_minhash_of_counts",
    "simhash_and_minhash_of_normalized",
    "simhash_of_counts",
    "simhash_of_features",
    "simhash_of_normalized",
    "text_features",
]

#: Incremented whenever a change to normalization, features, weights or hashing can change
#: the fingerprint or the content hash of some text.
FINGERPRINT_VERSION = 6

#: Size of a SimHash fingerprint, in bits.
FINGERPRINT_BITS = 64

#: Length of the character n-grams taken over runs of CJK characters (and of the other
#: scripts written without spaces).
CJK_NGRAM = 2

#: Lengths of the word n-grams (shingles) taken over runs of space-separated words.
#: Word pairs, like the character pairs of Chinese: single words make texts on one topic
#: look alike (common words outweigh the rest), longer shingles let a small edit change
#: too many features. ``bench/content.py --choices`` measures the alternatives.
WORD_NGRAMS: tuple[int, ...] = (2,)


_CONTENT_HASH_BYTES = 16


def content_hash(normalized: str) -> bytes:
    """Return the 16-byte BLAKE2b digest of a normalized text (exact-duplicate check).

    - Equal texts, and only those (up to the 128-bit collision bound), get equal digests.
    - Any ``str`` is accepted, including one with lone surrogates.

    >>> content_hash("hello world").hex()
    'e9a804b2e527fd3601d2ffc0bb023cd6'
    """
    return blake2b_digest(
        normalized.encode("utf-8", "surrogatepass"), digest_size=_CONTENT_HASH_BYTES
    )


def text_features(
    normalized: str,
    *,
    cjk_ngram: int = CJK_NGRAM,
    word_ngrams: tuple[int, ...] = WORD_NGRAMS,
) -> Counter[str]:
    """Return the SimHash features of a normalized text, with their counts.

    The text is cut into runs of space-separated words and runs of characters from scripts
    written without spaces (Chinese, Japanese kana, Thai, ...); a space, or a switch of
    script, ends a run.

    - Each run of such characters gives its character *cjk_ngram*-grams; a run shorter
      than that is one feature.
    - Each run of words gives its word n-grams for every n in *word_ngrams* (joined by a
      space); a run shorter than the smallest n is one feature.
    - Masked numbers alone (``"0"``, ``"0 0"``) are not features: a table of figures
      would outweigh the words, and every such page would get the same fingerprint.
      Next to words they count (``"ipad 0"``).
    - An empty text, or one made of numbers only, has no features.

    >>> sorted(text_features("ipad 0 评测报告 好 ok"))
    ['ipad 0', 'ok', '好', '报告', '测报', '评测']
    """
    if not normalized:
        return Counter()
    features: Counter[str]
    if normalized.isascii() or not HAS_NO_SPACE_SCRIPT.search(normalized):
        features = Counter(_word_ngrams(normalized.split(), word_ngrams))
        return _without_number_masks(features, word_ngrams)
    features = Counter()
    words: list[str] = []
    for run, word in SEGMENT.findall(normalized):
        if word:
            words.append(word)
            continue
        if words:
            features.update(_word_ngrams(words, word_ngrams))
            words = []
        features.update(_char_ngrams(run, cjk_ngram))
    if words:
        features.update(_word_ngrams(words, word_ngrams))
    return _without_number_masks(features, word_ngrams)


def _without_number_masks(features: Counter[str], word_ngrams: tuple[int, ...]) -> Counter[str]:
    for size in range(1, max(word_ngrams) + 1):
        features.pop(" ".join(["0"] * size), None)
    return features


def _char_ngrams(run: str, size: int) -> Iterable[str]:
    if len(run) <= size:
        return (run,)
    if size == 1:
        return run
    if size == 2:
        return map(str.__add__, run, run[1:])
    return (run[start : start + size] for start in range(len(run) - size + 1))


def _word_ngrams(words: list[str], sizes: tuple[int, ...]) -> list[str]:
    if len(words) < min(sizes):
        return [" ".join(words)]
    ngrams: list[str] = []
    for size in sizes:
        if size == 1:
            ngrams.extend(words)
        elif len(words) >= size:
            ngrams.extend(
                map(" ".join, zip(*(words[start:] for start in range(size)), strict=False))
            )
    return ngrams


def simhash_of_features(features: Mapping[str, int]) -> int:
    """Return the 64-bit SimHash of weighted features.

    - Each feature's hash is :func:`crawler.content.feature_hashes.feature_hash` of its string,
      whose most significant bit is the fingerprint's. Bit *i* of the result is 1 when
      the features whose hash has bit *i* set weigh more than half of the total. These
      are the values of the ``simhash`` package's ``Simhash(features, f=64, hashfunc=h)``
      with ``h`` that hash as 8 big-endian bytes, computed in one pass over all features
      (the package's loop of a few array operations per feature was most of a page's
      fingerprint time), with exact integer weights of any size (the package overflows
      above 255 under NumPy 2: simhash issue #74).
    - Features with a weight of 0 or less are ignored; no features gives 0.

    >>> simhash_of_features({"a": 1000, "b": 1}) == simhash_of_features({"a": 1})
    True
    """
    return _simhash_of_weighted(
        [feature for feature, weight in features.items() if weight > 0],
        [weight for weight in features.values() if weight > 0],
    )


#: Integer sums below this are exact in ``float64``.
_EXACT_IN_FLOAT = 2**53


def _simhash_of_weighted(features: list[str], weights: list[int]) -> int:
    import numpy as np

    if not features:
        return 0
    return _simhash_of_hashes(hashes_of(features), np.array(weights, dtype=object))


def _simhash_of_hashes(
    hashes: np.ndarray[Any, np.dtype[np.uint64]], weights: np.ndarray[Any, np.dtype[Any]]
) -> int:
    import numpy as np

    # one row of 64 bits a feature, the most significant bit first
    bits = np.unpackbits(hashes.astype(">u8").view(np.uint8)).reshape(-1, FINGERPRINT_BITS)
    total = int(weights.sum())
    if total < _EXACT_IN_FLOAT:
        # BLAS sums exactly here, and several times faster than NumPy's integer product
        set_weight = weights.astype(np.float64) @ bits.astype(np.float64)
    else:
        set_weight = weights.astype(object) @ bits.astype(object)
    # bit set when its features weigh more than half of the total: 2 * part > total
    majority = 2 * set_weight > total
    return int.from_bytes(np.packbits(majority).tobytes(), "big")


def simhash_of_normalized(normalized: str) -> int:
    """Return the 64-bit SimHash of a text already passed through :func:`normalize_text`.

    - The features are those of :func:`text_features` with the module settings
      (:data:`CJK_NGRAM`, :data:`WORD_NGRAMS`), each weighted by :func:`feature_weight`
      of its count.
    - An empty text gives 0.
    - The value is the same in every process and on every machine.
    """
    return simhash_and_minhash_of_normalized(normalized)[0]


def simhash_and_minhash_of_normalized(normalized: str) -> tuple[int, bytes]:
    """Return ``(simhash_of_normalized(normalized), minhash_of_normalized(normalized))``.

    The features are hashed where they lie in the text
    (:func:`crawler.content.feature_hashes.feature_hashes`), without being written out: the
    values are those of :func:`simhash_of_counts` and :func:`minhash_of_features` of
    :func:`text_features`, at a tenth of the cost.
    """
    if speedups.compiled is not None:
        return speedups.compiled.simhash_and_minhash(normalized, NO_SPACE_SCRIPT_TABLE)
    return _simhash_and_minhash_in_python(normalized)


def _simhash_and_minhash_in_python(normalized: str) -> tuple[int, bytes]:
    import numpy as np

    hashes, counts = feature_hashes(normalized)
    if not hashes.size:
        return 0, bytes(MINHASH_BYTES)
    # feature_weight of each count: its bit length, the exponent frexp returns
    weights = np.frexp(counts.astype(np.float64))[1].astype(np.int64)
    return _simhash_of_hashes(hashes, weights), minhash_of_hashes(minhash_keys(hashes))


def simhash_of_counts(counts: Mapping[str, int]) -> int:
    """Return the 64-bit SimHash of features given with their counts in a text, each
    weighted by :func:`feature_weight` of its count."""
    features, weights = _counted(counts)
    return _simhash_of_weighted(features, weights)


def simhash_and_minhash_of_counts(counts: Mapping[str, int]) -> tuple[int, bytes]:
    """Return ``(simhash_of_counts(counts), minhash_of_features(counts))``, each feature
    hashed once for both."""
    import numpy as np

    features, weights = _counted(counts)
    if not features:
        return 0, minhash_of_features(counts)
    hashes = hashes_of(features)
    simhash_value = _simhash_of_hashes(hashes, np.array(weights, dtype=object))
    return simhash_value, minhash_of_hashes(minhash_keys(hashes))


def _counted(counts: Mapping[str, int]) -> tuple[list[str], list[int]]:
    """The features of *counts* that occur, and their weights (:func:`feature_weight`,
    inlined: a call per feature was a tenth of a page's fingerprint time)."""
    if min(counts.values(), default=1) > 0:
        return list(counts), list(map(int.bit_length, counts.values()))
    counted = [(feature, count) for feature, count in counts.items() if count > 0]
    return [feature for feature, _ in counted], [count.bit_length() for _, count in counted]


def feature_weight(count: int) -> int:
    """Return the SimHash weight of a feature that occurs *count* times in a text.

    The weight grows with the logarithm of the count (``1 + floor(log2(count))``), not
    with the count: a phrase repeated hundreds of times (an index page's "in module os")
    would otherwise decide the fingerprint alone, and two long texts on one topic would
    look alike through the phrases they both repeat. An integer, so the fingerprint is
    exact on every machine.

    >>> [feature_weight(count) for count in (1, 2, 3, 4, 255, 256)]
    [1, 2, 2, 3, 8, 9]
    """
    return count.bit_length()


def minhash_of_normalized(normalized: str) -> bytes:
    """Return the MinHash signature of the set of :func:`text_features` of a normalized
    text (word pairs; character pairs in Chinese): see :func:`minhash_of_features`."""
    return minhash_of_features(text_features(normalized))


def simhash(text: str) -> int:
    """Return the 64-bit SimHash of *text*, an ``int`` in ``[0, 2**64)``.

    - The text is normalized first (:func:`normalize_text`), so dates, counters, case and
      punctuation do not change the fingerprint.
    - Texts that share most of their word pairs (in Chinese and Japanese, character
      pairs) differ in few bits: compare with :func:`hamming_distance`. Within 3 bits
      means about 99% of the weighted features in common: a changed date line or an
      edited sentence in an article; a replaced paragraph usually only in a long one
      (1,500 words and more). Different articles are typically 20 to 40 bits apart (the
      closest of the 81,000 pairs of different corpus articles measured: 11).
    - Works for English, Chinese and mixed text.
    - A text with nothing left after normalization (empty, only punctuation) gives 0.
    - Deterministic across processes and machines (no Python ``hash()``).

    >>> simhash("The cat sat on the mat, 2021.") == simhash("the cat sat on the mat 1999")
    True
    >>> simhash("")
    0
    """
    return simhash_of_normalized(normalize_text(text))


def hamming_distance(a: int, b: int) -> int:
    """Return the number of bits in which the fingerprints *a* and *b* differ.

    >>> hamming_distance(0b1011, 0b0001)
    2
    """
    return (a ^ b).bit_count()


def describe() -> dict[str, Any]:
    """Return the settings fingerprints are built with, for a rules signature.

    Two processes whose ``describe()`` results are equal compute the same content hash
    and the same SimHash for every text. The values are JSON-serializable.
    """
    return {
        "version": FINGERPRINT_VERSION,
        "normalization": "nfkc-casefold-fixpoint-drop-punct-symbols-collapse-space",
        "content_hash": f"blake2b-{_CONTENT_HASH_BYTES * 8}",
        "simhash_bits": FINGERPRINT_BITS,
        "feature_hash": "codepoint-polynomial-fmix64-pairs",
        "cjk_ngram": CJK_NGRAM,
        "word_ngrams": list(WORD_NGRAMS),
        "weights": "1+floor(log2(count))",
        "numbers": "mask-dates-times-years-counters-keep-others-years-before-units-kept",
        "no_space_scripts": "spaces-deleted",
        "minhash": f"one-permutation-fmix64-seed{int(MINHASH_SEED)}-{MINHASH_BYTES}x8bit",
        "numbers_signature": NUMBERS_SIGNATURE_RULES,
        "page_size": f"chars-log2x{PAGE_SIZE_STEPS}",
    }
