"""Content fingerprints: normalized text, an exact hash and a 64-bit SimHash.

Two fetches of one article differ in ways that do not matter to a reader: a date, a view
counter, typography, a changed paragraph. The functions here turn a page's main text into
values that ignore those differences:

* :func:`normalize_text` maps the text to a canonical spelling (Unicode compatibility form,
  case folded, punctuation and symbols dropped, dates, times and counters masked,
  whitespace collapsed);
* :func:`content_hash` of the normalized text detects exact duplicates;
* :func:`simhash` (or :func:`simhash_of_normalized`) gives a 64-bit fingerprint in which
  similar texts differ by few bits, measured with :func:`hamming_distance`;
* :func:`minhash_of_normalized` gives the second signature, 64 bytes, whose agreement with
  another (:func:`estimated_jaccard`) estimates how many word pairs two texts share: it
  verifies a SimHash match before a text is called a copy.

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
import itertools
import math
import re
import sys
import threading
import unicodedata
from collections import Counter
from typing import TYPE_CHECKING, Any

import numpy as np
import xxhash

from crawler.feature_hashes import (
    NO_SPACE_SCRIPT_RANGES,
    feature_hash,
    feature_hashes,
    is_no_space_script,
    mixed,
)

if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator, Mapping

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

#: Size of the second signature (:func:`minhash_of_normalized`): one byte per bin.
MINHASH_BYTES = 64

_CONTENT_HASH_BYTES = 16
_MINHASH_BIN_SHIFT = 64 - (MINHASH_BYTES - 1).bit_length()
_MINHASH_BIN_STARTS = np.arange(MINHASH_BYTES, dtype=np.uint64) << np.uint64(_MINHASH_BIN_SHIFT)
_MINHASH_BINS = np.arange(MINHASH_BYTES, dtype=np.uint64)
# the MinHash's feature hash is XXH64 with another seed than the SimHash's (0)
_MINHASH_SEED = np.uint64(0x5EED)
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_MIX = np.uint64(0xFF51AFD7ED558CCD)

# Scripts written without spaces between words (see NO_SPACE_SCRIPT_RANGES)
_NO_SPACE_SCRIPTS = "".join(f"{chr(low)}-{chr(high)}" for low, high in NO_SPACE_SCRIPT_RANGES)
_HAS_NO_SPACE_SCRIPT = re.compile(f"[{_NO_SPACE_SCRIPTS}]")
_SEGMENT = re.compile(f"([{_NO_SPACE_SCRIPTS}]+)|([^\\s{_NO_SPACE_SCRIPTS}]+)")
# Stands for a masked number until the end of normalization: a code point of plane 15
# (private use), which no step changes; then each run of them becomes one "0".
_MASK = "\U000f0000"
_MASK_RUN = re.compile(f"{_MASK}(?: ?{_MASK})*")

_MONTHS = [
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
    "jan",
    "feb",
    "mar",
    "apr",
    "jun",
    "jul",
    "aug",
    "sep",
    "sept",
    "oct",
    "nov",
    "dec",
]
_COUNTED_THINGS = [
    "views",
    "view",
    "comments",
    "comment",
    "replies",
    "reply",
    "shares",
    "share",
    "likes",
    "like",
    "reads",
    "read",
    "answers",
    "answer",
    "votes",
    "vote",
    "points",
    "point",
    "followers",
    "follower",
    "subscribers",
    "subscriber",
    "retweets",
    "reposts",
    "reactions",
    "responses",
    "reviews",
    "review",
    "ratings",
    "downloads",
    "visits",
    "visit",
    "hits",
    "clicks",
    "stars",
    "forks",
    "watchers",
    "messages",
    "posts",
]
_COUNTED_THING = "(?:" + "|".join(_COUNTED_THINGS) + r"|min(?:ute)?s? read)"
_TIME_UNIT = r"(?:seconds?|secs?|minutes?|mins?|hours?|hrs?|days?|weeks?|months?|years?)"
# Units of measure and currencies: a number written before one is a size, a capacity or a
# price, never a year ("2000 gb", "2000元"). Not the words that are units only sometimes
# ("in", "a", "t": "in 2000 a law").
_UNITS = (
    "b|kb|mb|gb|tb|pb|kib|mib|gib|tib|bits?|kbps|mbps|gbps"
    "|w|kw|kwh|wh|mw|v|mv|ma|mah|ah|hz|khz|mhz|ghz|rpm"
    "|nm|mm|cm|m|km|inch|inches|ft|feet|yd|mph|kph"
    "|mg|g|kg|lbs?|oz|ml|cl|dl|l|gal|mp|px|dpi|ppi|fps"
    "|usd|eur|gbp|jpy|cny|rmb|chf|dollars|euros|pounds|yuan"
)
_CHINESE_UNITS = (
    "英寸|寸|英尺|厘米|毫米|千米|公里|米|千克|公斤|克|斤|毫升|升|千瓦|瓦|伏|毫安|赫兹"
    "|美元|欧元|万元|亿元|元"
)
_UNIT_AFTER = rf"\s?(?:{_UNITS})(?![\da-z])|(?:{_CHINESE_UNITS})"
# Words that name the number after them: a product code, a size, a version, a price.
_LABELS = (
    "sku|model|no|nr|number|item|part|art|ref|code|size|capacity|version|ver|release"
    "|rev|revision|edition|gen|isbn|price"
)
# two characters each
_CHINESE_LABELS = "货号|型号|编号|款号|尺码|尺寸|容量|规格|价格|售价|版本"
_LABEL_WORDS = frozenset(_LABELS.split("|"))
_CHINESE_LABEL_WORDS = frozenset(_CHINESE_LABELS.split("|"))
_CHINESE_COUNTERS = "次|人|条|阅读|浏览|评论|回复|跟帖|参与|点击|赞"
# Numbers start where no letter or digit of their word precedes them: the first digit,
# then a look back past it (a lookbehind first would hide the digit from the regex
# engine's fast scan). A letter of a script written without spaces is no letter of the
# number's word ("在12:00发生").
_NUMBER_START = r"\d(?<![\da-z]\d)"
_END = r"(?![\da-z])"
_NUMBER_REST = r"\d*(?:[,.]\d+)*(?:\s?[km])?"
# a month name or a counter's label right before the number ("may 1", "views 87",
# "评论45"): one fixed-width look back each, taken at the number's first digit
# (each behind a look back at the last letter alone, which rules most numbers out at once)
_AFTER_MONTH = "(?:(?<=[a-z]\\s.)(?:" + "|".join(f"(?<={month}\\s.)" for month in _MONTHS) + "))"
_COUNTER_ENDS = "".join(sorted({label[-1] for label in _CHINESE_COUNTERS.split("|")}))
_AFTER_LABEL = (
    "(?:(?<=s\\s.)(?:"
    + "|".join(f"(?<={label}\\s.)" for label in _COUNTED_THINGS if label.endswith("s"))
    + f")|(?:(?<=[{_COUNTER_ENDS}].)|(?<=[{_COUNTER_ENDS}]\\s.))(?:"
    + "|".join(f"(?<={label}.)|(?<={label}\\s.)" for label in _CHINESE_COUNTERS.split("|"))
    + "))"
)
#: What :func:`normalize_text` writes as ``"0"``: the numbers that change between two
#: fetches or two copies of one page without making it another page. Every branch
#: starts after the number's first digit.
_NEUTRAL_NUMBER = re.compile(
    _NUMBER_START
    + "(?:"
    + "|".join(
        (
            # dates: 2024-05-01, 01/05/2024, 1/5/24, 01.05.2024, 2024年5月1日, 5月1日 (not
            # 1.4.46: a version)
            r"\d{3}([-/.])\d{1,2}\1\d{1,2}"
            rf"(?:t\d{{1,2}}:\d\d(?::\d\d)?(?:\.\d+)?z?)?{_END}",
            rf"\d?([-/])\d{{1,2}}\2\d{{2,4}}{_END}",
            rf"\d?\.\d{{1,2}}\.\d{{4}}{_END}",
            r"\d{1,3}\s*年\s*\d{1,2}\s*月(?:\s*\d{1,2}\s*[日号])?",
            r"\d?\s*月\s*\d{1,2}\s*[日号]",
            # may 1, 2024; 1st may 2024; 1 may (the month name stays a word)
            rf"{_AFTER_MONTH}\d?(?:st|nd|rd|th)?(?:,?\s+\d{{4}})?{_END}",
            rf"\d?(?:st|nd|rd|th)?\s+(?:of\s+)?(?:{'|'.join(_MONTHS)}){_END}\.?"
            rf"(?:,?\s+\d{{4}})?",
            # times: 10:32, 10:32:05, 9.05 pm, 10am
            r"\d?:\d\d(?::\d\d)?(?:\s?[ap]\.?m\b\.?)?",
            r"\d?(?:\.\d\d)?\s?[ap]\.?m\b\.?",
            # a year on its own: (c) 2024, updated 2023
            rf"(?<=1)9\d\d{_END}(?!{_UNIT_AFTER})",
            rf"(?<=2)0\d\d{_END}(?!{_UNIT_AFTER})",
            # counters: views: 87, 评论 12, 1,234 views, 3 comments, 5 minutes ago, 12 次阅读
            rf"{_AFTER_LABEL}{_NUMBER_REST}",
            rf"{_NUMBER_REST}\s*{_COUNTED_THING}{_END}",
            rf"{_NUMBER_REST}\s*{_TIME_UNIT}\s+ago{_END}",
            rf"{_NUMBER_REST}\s*(?:{_CHINESE_COUNTERS}|分钟前|小时前|天前|秒前)",
        )
    )
    + ")"
)
_DIGIT = re.compile(r"\d")


#: In :func:`_code_point_map`, the code points :func:`normalize_text` deletes.
_DELETED = np.uint32(0xFFFFFFFF)


_CODE_POINT_MAP_LOCK = threading.Lock()
#: The planes that hold code points :func:`normalize_text` changes (see
#: :func:`_code_point_map`).
_MAPPED_CODE_POINTS = (range(0x20000), range(0xE0000, 0xE1000))


def _code_point_map() -> np.ndarray[Any, np.dtype[np.uint32]]:
    """What :func:`normalize_text` writes for each code point, built on first use (once,
    whichever threads ask at the same time).

    Punctuation (P*), symbols (S*), control characters (Cc) and the private-use characters
    of the Basic Multilingual Plane (icon fonts) become a space; decimal digits (Nd) of
    every script become the ASCII digit of the same value; format characters (Cf: soft
    hyphens, zero-width spaces, direction marks) and lone surrogates are deleted
    (:data:`_DELETED`); every other code point stays. Only the planes that hold such
    characters are scanned: 0 and 1, and 14 (tags, variation selectors); 2 and 3 hold
    ideographs only. An array (4.4 MB) rather than a :meth:`str.translate` table: one
    look-up for the whole text is five times faster than ``str.translate``'s one a character.
    """
    with _CODE_POINT_MAP_LOCK:
        return _built_code_point_map()


@functools.cache
def _built_code_point_map() -> np.ndarray[Any, np.dtype[np.uint32]]:
    code_points = np.arange(sys.maxunicode + 1, dtype=np.uint32)
    scanned = np.fromiter(itertools.chain(*_MAPPED_CODE_POINTS), dtype=np.uint32)
    categories = np.array(list(map(unicodedata.category, map(chr, scanned.tolist()))), dtype="<U2")
    major = categories.astype("<U1")
    spaced = (major == "P") | (major == "S") | (categories == "Cc") | (categories == "Co")
    code_points[scanned[spaced]] = ord(" ")
    digits = scanned[categories == "Nd"]
    code_points[digits] = [ord(str(unicodedata.decimal(chr(digit)))) for digit in digits]
    deleted = (categories == "Cf") | (categories == "Cs")
    code_points[scanned[deleted]] = _DELETED
    return code_points


def _translated(text: str) -> str:
    """*text* with each code point replaced as :func:`_code_point_map` says."""
    code_points = _code_point_map()[_code_points(text)]
    kept = code_points[code_points != _DELETED]
    return kept.astype("<u4").tobytes().decode("utf-32-le")


def _code_points(text: str) -> np.ndarray[Any, np.dtype[np.uint32]]:
    return np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype="<u4")


#: Whether each code point up to U+3000 (the last that :meth:`str.isspace` accepts, and
#: one more, False) is whitespace.
_WHITESPACE = np.array([chr(code_point).isspace() for code_point in range(0x3002)])
_SPACE = np.uint32(ord(" "))


def normalize_text(text: str, *, fold_repeats: bool = False, min_repeats: int = 2) -> str:
    """Return the canonical spelling of *text* that fingerprints are computed on.

    - Unicode compatibility forms are unified (NFKC): full-width letters and digits become
      ASCII, ligatures are split.
    - Case is folded (:meth:`str.casefold`): ``"Straße"`` and ``"STRASSE"`` agree.
    - Dates, times, a year on its own and counters (``1,234 views``, ``5 minutes ago``,
      ``评论 12``) become ``"0"``: they change between two fetches of one page. Every other
      number is kept, with the digits of any script written in ASCII: a size, a price, a
      model, SKU or version number tells one page from another (``500 GB``, ``1000 GB``).
    - Punctuation and symbols (Unicode categories P* and S*) and control characters become
      spaces; invisible format characters (soft hyphen, zero-width space) are deleted.
    - Whitespace is collapsed to single spaces and stripped; a space next to a character
      of a script written without spaces (Chinese, Japanese, Thai...) is deleted, so
      ``"系统在 0 发生"`` and ``"系统在0发生"`` agree; masked numbers separated only by
      spaces become one ``"0"``.
    - With ``fold_repeats=True``, a text that is one block repeated end to end at least
      *min_repeats* times becomes that block (see :func:`fold_repeated_block`).

    The result is a fixpoint: normalizing it again returns it unchanged, and case folding
    leaves it unchanged. Any ``str`` is accepted; *min_repeats* below 2 raises
    :exc:`ValueError`.

    >>> normalize_text("Posted 2024-05-01 10:32 — 1,234 views!")
    'posted 0'
    >>> normalize_text("WD Blue 1TB, 7200 RPM, SKU 4471-B")
    'wd blue 1tb 7200 rpm sku 4471 b'
    >>> normalize_text("\uff26\uff35\uff2c\uff2c\u3000\uff37idth Straße")  # full-width
    'full width strasse'
    >>> normalize_text("系统在 12:00 发生异常\uff0c请检查服务")
    '系统在0发生异常请检查服务'
    >>> normalize_text("Ha! Ha! Ha!", fold_repeats=True)
    'ha'
    """
    if min_repeats < 2:
        raise ValueError(f"min_repeats must be 2 or more, got {min_repeats!r}")
    text = unicodedata.normalize("NFKC", text).casefold()
    has_digits = _DIGIT.search(text) is not None
    if has_digits:
        text = _masked_numbers(text)
    text = _canonical_spacing(_translated(text))
    if has_digits:
        text = _masked_until_stable(text)
    if fold_repeats:
        text = fold_repeated_block(text, min_repeats=min_repeats)
    return text


def _canonical_spacing(text: str) -> str:
    """*text* composed and case-folded until stable (:func:`_unicode_fixpoint`), then
    :func:`_spaced`."""
    if not text.isascii():
        text = _unicode_fixpoint(text)
    return _spaced(text)


def _spaced(text: str) -> str:
    """*text* with each run of whitespace one space, stripped, without the spaces next to
    a character of a script written without spaces (they carry no meaning there)."""
    code_points = _code_points(text)
    if not code_points.size:
        return text
    whitespace = _WHITESPACE[np.minimum(code_points, _WHITESPACE.size - 1)]
    # a run of whitespace is kept as one space when a character that is not whitespace
    # follows it, and one precedes it
    kept = ~whitespace
    kept[:-1] |= whitespace[:-1] & kept[1:]
    kept[: np.argmax(~whitespace)] = False
    spaced = np.where(whitespace, _SPACE, code_points)[kept]
    if spaced.size > 2 and not text.isascii():
        no_space_script = is_no_space_script(spaced)
        space = spaced == _SPACE
        beside = np.zeros(spaced.size, dtype=np.bool_)
        beside[1:-1] = no_space_script[:-2] | no_space_script[2:]
        spaced = spaced[~(space & beside)]
    return spaced.astype("<u4").tobytes().decode("utf-32-le", "surrogatepass")


def _masked_until_stable(text: str) -> str:
    """Write the masks as ``"0"``, and mask again what punctuation hid the first time
    (``"views: 87"`` reads ``"views 87"`` once the colon is gone), until nothing changes.

    Each round that changes the text replaces more than a lone ``"0"`` by one, so the
    rounds end; usually there are one or two.
    """
    while True:
        if _MASK in text:
            text = _MASK_RUN.sub("0", text)
        masked = _masked_numbers(text)
        if masked == text:
            return text
        # spaces around each mask: no character meets a new neighbour, so the text stays
        # composed and case-folded (no _unicode_fixpoint)
        again = _MASK_RUN.sub("0", _spaced(masked))
        if again == text:
            return text
        text = again


def _masked_numbers(text: str) -> str:
    """``_NEUTRAL_NUMBER.sub(" <mask> ", text)``, the expression tried only where a match
    can start: at a decimal digit that no letter or digit precedes (the regular
    expression engine would step through every character of the text to find them)."""
    code_points = _code_points(text)
    mapped = _code_point_map()[code_points]
    digit = (mapped >= ord("0")) & (mapped <= ord("9"))
    starts = digit.copy()
    starts[1:] &= ~(digit[:-1] | ((code_points[:-1] >= ord("a")) & (code_points[:-1] <= ord("z"))))
    pieces: list[str] = []
    end = 0
    for start in np.flatnonzero(starts).tolist():
        if start < end:
            continue
        match = _NEUTRAL_NUMBER.match(text, start)
        if match is not None:
            pieces += (text[end:start], f" {_MASK} ")
            end = match.end()
    if not pieces:
        return text
    pieces.append(text[end:])
    return "".join(pieces)


def _unicode_fixpoint(text: str) -> str:
    """Compose (NFKC) and case-fold *text* until neither changes it.

    Deletions and case folding can leave sequences that NFKC composes, and some composed
    characters case-fold to a decomposed form again (``"\u0390"``): the result ends on
    case folding, so it is casefold-stable, and is stable under this function.
    """
    for _ in range(4):
        if unicodedata.is_normalized("NFKC", text) and text.casefold() == text:
            break
        folded = unicodedata.normalize("NFKC", text).casefold()
        if folded == text:
            break
        text = folded
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


def word_count(normalized: str) -> float:
    """How many words a normalized text holds, a run of a script written without spaces
    counting one word for every two characters (a Chinese word's usual length).

    >>> word_count("ipad 0 评测报告 好")
    4.5
    """
    return sum(len(run) / 2 if run else 1 for run, _ in _SEGMENT.findall(normalized))


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
    if normalized.isascii() or not _HAS_NO_SPACE_SCRIPT.search(normalized):
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

    - Each feature's hash is :func:`crawler.feature_hashes.feature_hash` of its string,
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
    if not features:
        return 0
    return _simhash_of_hashes(_hashes_of(features), np.array(weights, dtype=object))


def _hashes_of(features: Iterable[str]) -> np.ndarray[Any, np.dtype[np.uint64]]:
    return np.fromiter(map(feature_hash, features), dtype=np.uint64)


def _simhash_of_hashes(
    hashes: np.ndarray[Any, np.dtype[np.uint64]], weights: np.ndarray[Any, np.dtype[Any]]
) -> int:
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
    (:func:`crawler.feature_hashes.feature_hashes`), without being written out: the
    values are those of :func:`simhash_of_counts` and :func:`minhash_of_features` of
    :func:`text_features`, at a tenth of the cost.
    """
    hashes, counts = feature_hashes(normalized)
    if not hashes.size:
        return 0, bytes(MINHASH_BYTES)
    # feature_weight of each count: its bit length, the exponent frexp returns
    weights = np.frexp(counts.astype(np.float64))[1].astype(np.int64)
    return _simhash_of_hashes(hashes, weights), _minhash_of_hashes(_minhash_keys(hashes))


def simhash_of_counts(counts: Mapping[str, int]) -> int:
    """Return the 64-bit SimHash of features given with their counts in a text, each
    weighted by :func:`feature_weight` of its count."""
    features, weights = _counted(counts)
    return _simhash_of_weighted(features, weights)


def simhash_and_minhash_of_counts(counts: Mapping[str, int]) -> tuple[int, bytes]:
    """Return ``(simhash_of_counts(counts), minhash_of_features(counts))``, each feature
    hashed once for both."""
    features, weights = _counted(counts)
    if not features:
        return 0, minhash_of_features(counts)
    hashes = _hashes_of(features)
    simhash_value = _simhash_of_hashes(hashes, np.array(weights, dtype=object))
    return simhash_value, _minhash_of_hashes(_minhash_keys(hashes))


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


def minhash_of_features(features: Iterable[str]) -> bytes:
    """Return the :data:`MINHASH_BYTES`-byte MinHash signature of a set of features.

    - One-permutation MinHash: each feature's hash
      (:func:`crawler.feature_hashes.feature_hash`) is mixed with a seed apart from the
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
    return _minhash_of_hashes(_minhash_keys(_hashes_of(features)))


def _minhash_keys(
    hashes: np.ndarray[Any, np.dtype[np.uint64]],
) -> np.ndarray[Any, np.dtype[np.uint64]]:
    return mixed(hashes ^ _MINHASH_SEED)


def _minhash_of_hashes(hashes: np.ndarray[Any, np.dtype[np.uint64]]) -> bytes:
    if not hashes.size:
        return bytes(MINHASH_BYTES)
    ordered = np.sort(hashes)
    # the smallest hash of bin i is the first one at or above i << shift, if it is in bin i
    firsts = np.searchsorted(ordered, _MINHASH_BIN_STARTS)
    minimums = ordered[np.minimum(firsts, ordered.size - 1)]
    filled = (firsts < ordered.size) & (
        (minimums >> np.uint64(_MINHASH_BIN_SHIFT)) == _MINHASH_BINS
    )
    if not filled.all():
        filled_bins = np.flatnonzero(filled)
        donors = filled_bins[np.searchsorted(filled_bins, _MINHASH_BINS) % filled_bins.size]
        steps = (donors.astype(np.uint64) - _MINHASH_BINS) % np.uint64(MINHASH_BYTES)
        borrowed = (minimums[donors] ^ (steps * _GOLDEN)) * _MIX
        minimums = np.where(filled, minimums, borrowed)
    return (minimums & np.uint64(0xFF)).astype(np.uint8).tobytes()


def minhash_of_normalized(normalized: str) -> bytes:
    """Return the MinHash signature of the set of :func:`text_features` of a normalized
    text (word pairs; character pairs in Chinese): see :func:`minhash_of_features`."""
    return minhash_of_features(text_features(normalized))


#: A run of ASCII letters and digits that holds a digit (matched from the run's start, and
#: its letters never given back: one pass over the text), with up to two such runs that
#: follow it one space apart: normalization wrote the dots of ``1.9.3`` and ``15.6`` as
#: spaces, and a version is one number, not three (a table of figures is cut in threes).
#: Then the unit right after it, if any.
_NUMBER_TOKEN = re.compile(
    rf"(?<![0-9a-z])([a-z]*+[0-9][0-9a-z]*(?: [0-9][0-9a-z]*){{0,2}})"
    rf"(?: ?({_UNITS})(?![\da-z])|({_CHINESE_UNITS}))?"
)
_NUMBERS_SEED = 0x4E55
# "20th", "3rd", "the 70s", "1990s": they rank or date, they do not name a thing
_ORDINAL_OR_DECADE = re.compile(r"[0-9]+(?:st|nd|rd|th)|[0-9]*0s")
#: Layout of :func:`numbers_signature`. The low bits: a set of the other numbers.
NUMBERS_OTHER_BITS = 32
#: Above them, the naming numbers: from the high bits, counters of a few bits each, how
#: many numbers (modulo ``2**NUMBERS_COUNT_BITS``), the sum of their hashes (modulo
#: ``2**NUMBERS_SUM_BITS``).
NUMBERS_COUNTERS = 10
NUMBERS_COUNTER_BITS = 2
NUMBERS_COUNT_BITS = 6
NUMBERS_SUM_BITS = 6
_OTHERS = (1 << NUMBERS_OTHER_BITS) - 1
_COUNTERS_AT = NUMBERS_COUNT_BITS + NUMBERS_SUM_BITS


def numbers_signature(normalized: str) -> int:
    """Return a 64-bit signature of the numbers that identify things in a normalized text.

    - Each run of ASCII letters and digits that holds a digit (``500``, ``1tb``,
      ``wd5000azlx``), with the numbers right after it (``1 9 3``: version 1.9.3), is one
      number, hashed with XXH64; the masked ``"0"`` of dates, times and counters is none.
    - The numbers that name a thing are a run with letters (``1tb``, ``wd5000azlx``;
      not an ordinal or a decade: ``20th``, ``70s``), a number before a unit (``500 gb``,
      ``15 6 inch``, ``18米``) or after a label (``sku 12345``, ``version 3``,
      ``货号 12``), each hashed with its unit or label:
      ``4 inch`` and ``12 inch`` differ even when the page names a 12 elsewhere. The high
      32 bits count them, each occurrence once: their hashes spread them over 10
      counters of 2 bits, then come how many there are (modulo 64) and the sum of their
      hashes (modulo 64).
    - The other numbers (``chapter 12``, ``top 10``) set one bit each in the low 32 bits.
      A page full of figures fills that set, not the naming numbers' counters.

    See :func:`numbers_conflict` for what two signatures tell.

    >>> numbers_signature("posted 0") == 0
    True
    >>> numbers_signature("capacity 500 gb") >> 32 != 0, numbers_signature("top 10") >> 32
    (True, 0)
    """
    others = count = digest_sum = 0
    counters = [0] * NUMBERS_COUNTERS
    for match in _number_tokens(normalized):
        token, unit, chinese_unit = match.groups()
        naming = True
        if unit or chinese_unit:
            token += unit or chinese_unit
        elif token == "0":
            continue
        elif label := _label_before(normalized, match.start()):
            token = label + token
        elif token.replace(" ", "").isdigit() or _ORDINAL_OR_DECADE.fullmatch(token):
            naming = False
        digest = xxhash.xxh64_intdigest(token.encode(), _NUMBERS_SEED)
        if naming:
            counters[digest % NUMBERS_COUNTERS] += 1
            count += 1
            digest_sum += digest >> 32
        else:
            others |= 1 << (digest % NUMBERS_OTHER_BITS)
    high = 0
    for counter in reversed(counters):
        high = high << NUMBERS_COUNTER_BITS | counter % (1 << NUMBERS_COUNTER_BITS)
    high = high << NUMBERS_COUNT_BITS | count % (1 << NUMBERS_COUNT_BITS)
    high = high << NUMBERS_SUM_BITS | digest_sum % (1 << NUMBERS_SUM_BITS)
    return high << NUMBERS_OTHER_BITS | others


def _number_tokens(normalized: str) -> Iterator[re.Match[str]]:
    """The matches of ``_NUMBER_TOKEN.finditer(normalized)``, tried only where one can
    start: at the first character of a run of ASCII letters and digits that holds a digit
    (the regular expression engine would try every character of the text)."""
    code_points = _code_points(normalized)
    alphanumeric = _ASCII_ALPHANUMERIC[np.minimum(code_points, 128)]
    digit = _ASCII_DIGIT[np.minimum(code_points, 128)]
    run_starts = alphanumeric.copy()
    run_starts[1:] &= ~alphanumeric[:-1]
    run_ids = np.cumsum(run_starts)
    with_digit = np.zeros(int(run_ids[-1]) + 1 if run_ids.size else 1, dtype=np.bool_)
    with_digit[run_ids[digit]] = True
    starts = np.flatnonzero(run_starts & with_digit[run_ids])
    end = 0
    for start in starts.tolist():
        if start < end:
            continue
        match = _NUMBER_TOKEN.match(normalized, start)
        if match is not None:
            end = match.end()
            yield match


_ASCII_DIGIT = np.array([chr(code).isdigit() and code < 128 for code in range(129)])
_ASCII_ALPHANUMERIC = _ASCII_DIGIT | np.array(
    [97 <= code <= 122 for code in range(129)]  # a to z: normalized text is case-folded
)
_TRAILING_LATIN = re.compile(r"[a-z]*$")


def _label_before(normalized: str, start: int) -> str:
    """The label word right before position *start* (``sku``, ``货号``), else ``""``."""
    chinese = normalized[max(0, start - 2) : start]
    if chinese in _CHINESE_LABEL_WORDS:
        return chinese
    if start < 2 or normalized[start - 1] != " ":
        return ""
    word = normalized[normalized.rfind(" ", 0, start - 1) + 1 : start - 1]
    # a Latin label right after Chinese text, with no space between ("货号sku 123")
    word = _TRAILING_LATIN.search(word)[0]  # type: ignore[index]
    if word in _LABEL_WORDS:
        return word
    chinese = normalized[max(0, start - 3) : start - 1]
    return chinese if chinese in _CHINESE_LABEL_WORDS else ""


def numbers_conflict(first: int, second: int) -> bool:
    """Whether two :func:`numbers_signature` values name different numbers: neither text
    names only numbers that the other names too, as often or more.

    - A copy that adds numbers (a printed-on line) or drops some (a paragraph) names a
      part of the other's numbers: no conflict, however many the page holds.
    - A product page and its sibling of another size or SKU each name a number the
      other lacks: a conflict, even when the page names 87 sizes or names the new size
      elsewhere too. So do two versions of release notes (``1 4 3`` and ``1 3 5``),
      among the other numbers' bits.
    - The naming numbers are compared as counts. The text that names more of them (up
      to 31 more) must hold the other's: each of its counters minus the other's
      (modulo 4), added up, is no more than how many more numbers it names, while one
      counter that went down makes that sum 4 larger. Equal counts with different hash
      sums conflict too, which a number changed within one counter shows. The other
      numbers conflict when each set has a bit that the other lacks.
    - Missed: a number changed in a counter where the other text also has a number
      more. Read the wrong way round: a copy that adds 32 naming numbers or more (taken
      for another page, so kept).

    >>> a, b = numbers_signature("capacity 500 gb"), numbers_signature("capacity 1000 gb")
    >>> numbers_conflict(a, b), numbers_conflict(a, numbers_signature("capacity 500 gb 1 tb"))
    (True, False)
    >>> numbers_conflict(numbers_signature("top 10 500 gb"), numbers_signature("top 20 500 gb"))
    True
    """
    first_only, second_only = first & ~second & _OTHERS, second & ~first & _OTHERS
    if first_only and second_only:
        return True
    first, second = first >> NUMBERS_OTHER_BITS, second >> NUMBERS_OTHER_BITS
    if first == second:
        return False
    count_mask, sum_mask = (1 << NUMBERS_COUNT_BITS) - 1, (1 << NUMBERS_SUM_BITS) - 1
    more = ((second >> NUMBERS_SUM_BITS) - (first >> NUMBERS_SUM_BITS)) & count_mask
    if more == 0 and (first ^ second) & sum_mask:
        return True
    if more > count_mask // 2:  # *first* names more: it must hold *second*'s numbers
        first, second, more = second, first, -more & count_mask
    counter_mask = (1 << NUMBERS_COUNTER_BITS) - 1
    rises = 0
    for bucket in range(NUMBERS_COUNTERS):
        shift = _COUNTERS_AT + NUMBERS_COUNTER_BITS * bucket
        rises += ((second >> shift) - (first >> shift)) & counter_mask
    return rises > more


#: Steps of :func:`page_size_class` per doubling of the page's text: 9% apart.
PAGE_SIZE_STEPS = 8
#: How many times more text the larger page must hold for :func:`page_sizes_differ`.
PAGE_SIZE_RATIO = 3


def page_size_class(page_chars: int) -> int:
    """Return one byte that says how much text a whole page holds, on a log scale.

    - ``round(8 * log2(page_chars))``, clipped to 1..255 (pages of up to 4e9
      characters); ``0`` when the size is not known (*page_chars* 0: text given
      without its page).

    >>> page_size_class(0), page_size_class(1), page_size_class(1000), page_size_class(8000)
    (0, 1, 80, 104)
    """
    if page_chars <= 0:
        return 0
    return max(1, min(255, round(PAGE_SIZE_STEPS * math.log2(page_chars))))


def page_sizes_differ(first: int, second: int, text_chars: int) -> bool:
    """Whether a main text of *text_chars* is weak evidence that two pages are one.

    True when both :func:`page_size_class` values are known, the larger page holds at
    least :data:`PAGE_SIZE_RATIO` times the text of the smaller, and the main text is
    less than a third of the larger page's: the extraction kept a small part of a large
    page (one letter of an index of every letter; a footer), which says little about
    the rest of it.

    >>> small, large = page_size_class(2_000), page_size_class(400_000)
    >>> page_sizes_differ(small, large, 1_500), page_sizes_differ(small, small, 1_500)
    (True, False)
    >>> page_sizes_differ(0, large, 1_500), page_sizes_differ(small, large, 300_000)
    (False, False)
    """
    if not first or not second:
        return False
    low, high = sorted((first, second))
    if high - low < PAGE_SIZE_STEPS * math.log2(PAGE_SIZE_RATIO):
        return False
    return text_chars * PAGE_SIZE_RATIO < 2 ** (high / PAGE_SIZE_STEPS)


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
        "minhash": f"one-permutation-fmix64-seed{int(_MINHASH_SEED)}-{MINHASH_BYTES}x8bit",
        "numbers_signature": (
            f"xxh64-seed{_NUMBERS_SEED}-runs-naming-{NUMBERS_COUNTERS}x{NUMBERS_COUNTER_BITS}bit"
            f"-count{NUMBERS_COUNT_BITS}-sum{NUMBERS_SUM_BITS}-others-{NUMBERS_OTHER_BITS}bit-set"
        ),
        "page_size": f"chars-log2x{PAGE_SIZE_STEPS}",
    }
