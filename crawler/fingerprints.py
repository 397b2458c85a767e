"""Content fingerprints: normalized text, an exact hash and a 64-bit SimHash.

Two fetches of one article differ in ways that do not matter to a reader: a date, a view
counter, typography, a changed paragraph. The functions here turn a page's main text into
values that ignore those differences:

* :func:`normalize_text` maps the text to a canonical spelling (Unicode compatibility form,
  case folded, punctuation and symbols dropped, numbers masked, whitespace collapsed);
* :func:`content_hash` of the normalized text detects exact duplicates;
* :func:`simhash` (or :func:`simhash_of_normalized`) gives a 64-bit fingerprint in which
  similar texts differ by few bits, measured with :func:`hamming_distance`.

The fingerprint of a text depends only on the text and on :data:`FINGERPRINT_VERSION`: not
on the process (Python's ``hash()`` is never used), the machine or the byte order.
:func:`describe` lists the settings it is built with, for the rules signature of a persisted
index; a change to any of them increments :data:`FINGERPRINT_VERSION`. (Normalization reads
the Unicode database of the running Python: a character that a later Unicode version
assigns can normalize differently between Python versions; assigned characters do not.)

Nothing here imports Scrapy.
"""

from __future__ import annotations

import functools
import hashlib
import re
import unicodedata
from collections import Counter
from typing import TYPE_CHECKING, Any

import xxhash
from simhash import Simhash

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping

__all__ = [
    "CJK_NGRAM",
    "FINGERPRINT_BITS",
    "FINGERPRINT_VERSION",
    "WORD_NGRAMS",
    "content_hash",
    "describe",
    "fold_repeated_block",
    "hamming_distance",
    "normalize_text",
    "simhash",
    "simhash_of_features",
    "simhash_of_normalized",
    "text_features",
]

#: Incremented whenever a change to normalization, features, weights or hashing can change
#: the fingerprint or the content hash of some text.
FINGERPRINT_VERSION = 1

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
# the largest integer weight the simhash package multiplies a uint8 array by without error
_PACKAGE_MAX_INT_WEIGHT = 255

# Scripts written without spaces between words: Thai, Lao, Myanmar, Khmer, the Japanese
# iteration and closing marks, kana, Bopomofo and the CJK ideographs of every plane.
_NO_SPACE_SCRIPTS = (
    "\u0e00-\u0eff"
    "\u1000-\u109f"
    "\u1780-\u17ff"
    "\u3005-\u3007"
    "\u3040-\u312f"
    "\u31a0-\u31bf"
    "\u31f0-\u31ff"
    "\u3400-\u4dbf"
    "\u4e00-\u9fff"
    "\uf900-\ufaff"
    "\U00020000-\U0003ffff"
)
_HAS_NO_SPACE_SCRIPT = re.compile(f"[{_NO_SPACE_SCRIPTS}]")
_SEGMENT = re.compile(f"([{_NO_SPACE_SCRIPTS}]+)|([^\\s{_NO_SPACE_SCRIPTS}]+)")
_DIGIT_RUN = re.compile("00+")
# masked numbers separated only by spaces (they were "2024-05-01", "1,234", "3.14")
_NUMBER_RUN = re.compile(r"(?<!\S)0(?: 0)+(?!\S)")


@functools.cache
def _normalization_table() -> dict[int, int | str | None]:
    """The :meth:`str.translate` table of :func:`normalize_text`, built on first use.

    Punctuation (P*), symbols (S*), control characters (Cc) and the private-use characters
    of the Basic Multilingual Plane (icon fonts) become a space; decimal digits (Nd) become
    ``"0"``; format characters (Cf: soft hyphens, zero-width spaces, direction marks) and
    lone surrogates are deleted. Only the planes that hold such characters are scanned:
    0 and 1, and 14 (tags, variation selectors); 2 and 3 hold ideographs only.
    """
    # Identity entries for the alphabetic scripts (below U+3000) spare str.translate a
    # failed lookup per letter: 2.5 times faster on English text, for about 1 MB.
    table: dict[int, int | str | None] = {codepoint: codepoint for codepoint in range(0x3000)}
    for codepoint in (*range(0x20000), *range(0xE0000, 0xE1000)):
        category = unicodedata.category(chr(codepoint))
        if category[0] in "PS" or category in ("Cc", "Co"):
            table[codepoint] = " "
        elif category == "Nd":
            table[codepoint] = "0"
        elif category in ("Cf", "Cs"):
            table[codepoint] = None
    return table


def normalize_text(text: str, *, fold_repeats: bool = False, min_repeats: int = 2) -> str:
    """Return the canonical spelling of *text* that fingerprints are computed on.

    - Unicode compatibility forms are unified (NFKC): full-width letters and digits become
      ASCII, ligatures are split.
    - Case is folded (:meth:`str.casefold`): ``"Straße"`` and ``"STRASSE"`` agree.
    - Punctuation and symbols (Unicode categories P* and S*) and control characters become
      spaces; invisible format characters (soft hyphen, zero-width space) are deleted.
    - Every number becomes ``"0"``: each decimal digit of any script maps to ``"0"``, a
      run of digits to a single ``"0"``, and numbers separated only by punctuation or
      spaces (``2024-05-01``, ``1,234.5``) to a single ``"0"``, so dates, counters and
      prices stop mattering.
    - Whitespace is collapsed to single spaces and stripped.
    - With ``fold_repeats=True``, a text that is one block repeated end to end at least
      *min_repeats* times becomes that block (see :func:`fold_repeated_block`).

    The result is stable: normalizing it again returns it unchanged. Any ``str`` is
    accepted; *min_repeats* below 2 raises :exc:`ValueError`.

    >>> normalize_text("Posted 2024-05-01 — 1,234 views!")
    'posted 0 views'
    >>> normalize_text("\uff26\uff35\uff2c\uff2c\u3000\uff37idth Straße")  # full-width
    'full width strasse'
    >>> normalize_text("你好\uff0c世界\uff01")  # full-width comma and exclamation mark
    '你好 世界'
    >>> normalize_text("Ha! Ha! Ha!", fold_repeats=True)
    'ha'
    """
    if min_repeats < 2:
        raise ValueError(f"min_repeats must be 2 or more, got {min_repeats!r}")
    text = unicodedata.normalize("NFKC", text).casefold()
    text = text.translate(_normalization_table())
    if not text.isascii():
        # case folding and deletions can leave sequences that NFKC composes differently
        text = unicodedata.normalize("NFKC", text)
    text = _NUMBER_RUN.sub("0", _DIGIT_RUN.sub("0", " ".join(text.split())))
    if fold_repeats:
        text = fold_repeated_block(text, min_repeats=min_repeats)
    return text


def fold_repeated_block(text: str, *, min_repeats: int = 2) -> str:
    """Return the block that *text* repeats end to end, or *text* itself.

    - A text that is the same block written *k* >= *min_repeats* times in a row comes back
      as that block, the shortest one: ``"abcabcabc"`` -> ``"abc"``.
    - Blocks separated by single spaces count too: ``"ha ha ha ha"`` -> ``"ha"``.
    - A block that repeats itself is folded in turn: ``"abab abab"`` -> ``"ab"``, so
      folding a folded text changes nothing.
    - Only whole-text periodicity counts: ``"abcabcab"`` and ``"intro abcabc"`` are kept.
    - The work is linear in the length of the text.

    >>> fold_repeated_block("ha ha ha ha")
    'ha'
    >>> fold_repeated_block("haha", min_repeats=3)
    'haha'
    """
    if min_repeats < 2:
        raise ValueError(f"min_repeats must be 2 or more, got {min_repeats!r}")
    block = _repeated_block(text, min_repeats)
    while block != text:  # each pass at least halves the text
        text = block
        block = _repeated_block(text, min_repeats)
    return text


def _repeated_block(text: str, min_repeats: int) -> str:
    for candidate, separator in ((text, ""), (text + " ", " ")):
        period = _smallest_period(candidate)
        if period and len(candidate) // period >= min_repeats and candidate[:period].strip():
            return candidate[: period - len(separator)]
    return text


def _smallest_period(text: str) -> int:
    """Return the smallest *p* < ``len(text)`` with ``text == text[:p] * (len(text) // p)``.

    0 when there is none. *text* is such a repetition exactly when it occurs inside
    ``text + text`` at an offset below its length, and the first such offset is the
    smallest period; CPython's substring search (two-way) finds it in linear time.
    """
    if len(text) < 2:
        return 0
    period = (text + text).find(text, 1)
    return period if period < len(text) else 0


def content_hash(normalized: str) -> bytes:
    """Return the 16-byte BLAKE2b digest of a normalized text (exact-duplicate check).

    - Equal texts, and only those (up to the 128-bit collision bound), get equal digests.
    - Any ``str`` is accepted, including one with lone surrogates.

    >>> content_hash("hello world").hex()
    'e9a804b2e527fd3601d2ffc0bb023cd6'
    """
    return hashlib.blake2b(
        normalized.encode("utf-8", "surrogatepass"), digest_size=_CONTENT_HASH_BYTES
    ).digest()


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
    if not _HAS_NO_SPACE_SCRIPT.search(normalized):
        features = Counter(_word_ngrams(normalized.split(), word_ngrams))
        return _without_number_masks(features, word_ngrams)
    features = Counter()
    words: list[str] = []
    for run, word in _SEGMENT.findall(normalized):
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

    - Computed by the ``simhash`` package (``Simhash(features, f=64, hashfunc=...)``) with
      XXH64 as the feature hash: the 8-byte big-endian digest of the feature's UTF-8 bytes,
      whose first bit is the fingerprint's most significant bit. Bit *i* of the result is 1
      when the features whose hash has bit *i* set weigh more than half of the total.
    - Weights are exact whatever their size. (The package multiplies a ``uint8`` bit array
      by an integer weight, which NumPy 2 refuses above 255: simhash issue #74. Such
      weights are passed as ``float``, which takes the package's float64 path, exact for
      integers below 2**53.)
    - Features with a weight of 0 or less are ignored; no features gives 0.
    - A lone surrogate in a feature is hashed as ``"?"`` (it has no UTF-8 form).

    >>> simhash_of_features({"a": 1000, "b": 1}) == simhash_of_features({"a": 1})
    True
    """
    weighted = [
        (feature, weight if weight <= _PACKAGE_MAX_INT_WEIGHT else float(weight))
        for feature, weight in features.items()
        if weight > 0
    ]
    if not weighted:
        return 0
    try:
        fingerprint = Simhash(weighted, f=FINGERPRINT_BITS, hashfunc=xxhash.xxh64_digest)
    except UnicodeEncodeError:
        encodable = [(_without_surrogates(feature), weight) for feature, weight in weighted]
        fingerprint = Simhash(encodable, f=FINGERPRINT_BITS, hashfunc=xxhash.xxh64_digest)
    return int(fingerprint.value)


def _without_surrogates(feature: str) -> str:
    return feature.encode("utf-8", "replace").decode("utf-8")


def simhash_of_normalized(normalized: str) -> int:
    """Return the 64-bit SimHash of a text already passed through :func:`normalize_text`.

    - The features are those of :func:`text_features` with the module settings
      (:data:`CJK_NGRAM`, :data:`WORD_NGRAMS`), each weighted by its count.
    - An empty text gives 0.
    - The value is the same in every process and on every machine.
    """
    return simhash_of_features(text_features(normalized))


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
        "normalization": "nfkc-casefold-drop-punct-symbols-mask-numbers-collapse-space",
        "content_hash": f"blake2b-{_CONTENT_HASH_BYTES * 8}",
        "simhash_bits": FINGERPRINT_BITS,
        "feature_hash": "xxh64",
        "cjk_ngram": CJK_NGRAM,
        "word_ngrams": list(WORD_NGRAMS),
        "weights": "count",
    }
