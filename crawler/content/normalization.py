"""Normalization: the canonical spelling of a text that fingerprints are computed on.

:func:`normalize_text` unifies what two fetches of one page write differently without
meaning anything else (Unicode forms, case, punctuation, spacing, dates, times and
counters); :func:`fold_repeated_block` folds a text that is one block repeated;
:func:`word_count` counts the words of a normalized text. Which numbers are masked is
:mod:`crawler.content.number_masks`' (its vocabulary of units and labels is importable from
here too). The loops over a text's characters have compiled forms
(:mod:`crawler.content.speedups`), which give the same text.

Nothing here imports Scrapy.
"""

from __future__ import annotations

import array
import functools
import itertools
import re
import sys
import threading
import unicodedata
from typing import TYPE_CHECKING, Any

from crawler.content import speedups
from crawler.content.feature_hashes import (
    NO_SPACE_SCRIPT_RANGES,
    NO_SPACE_SCRIPT_TABLE,
    is_no_space_script,
)
from crawler.content.number_masks import (
    CHINESE_LABEL_WORDS,
    CHINESE_UNITS,
    LABEL_WORDS,
    NEUTRAL_NUMBER,
    UNITS,
    WORDS_AFTER_NUMBERS,
    WORDS_BEFORE_AGO,
    WORDS_BEFORE_NUMBERS,
)
from crawler.content.unicode_forms import nfkc

if TYPE_CHECKING:
    import numpy as np

__all__ = [
    "CHINESE_LABEL_WORDS",
    "CHINESE_UNITS",
    "CODE_POINT_VALUES",
    "HAS_NO_SPACE_SCRIPT",
    "LABEL_WORDS",
    "SEGMENT",
    "UNITS",
    "code_point_array",
    "code_point_map",
    "code_point_value",
    "fold_repeated_block",
    "normalize_text",
    "word_count",
]

# Scripts written without spaces between words (see NO_SPACE_SCRIPT_RANGES)
_NO_SPACE_SCRIPTS = "".join(f"{chr(low)}-{chr(high)}" for low, high in NO_SPACE_SCRIPT_RANGES)
HAS_NO_SPACE_SCRIPT = re.compile(f"[{_NO_SPACE_SCRIPTS}]")
SEGMENT = re.compile(f"([{_NO_SPACE_SCRIPTS}]+)|([^\\s{_NO_SPACE_SCRIPTS}]+)")
# Stands for a masked number until the end of normalization: a code point of plane 15
# (private use), which no step changes; then each run of them becomes one "0".
_MASK = "\U000f0000"
_MASK_CODE_POINT = ord(_MASK)
_MASK_RUN = re.compile(f"{_MASK}(?: ?{_MASK})*")
_DIGIT = re.compile(r"\d")


#: In :func:`code_point_map`, the code points :func:`normalize_text` deletes.
_DELETED = 0xFFFFFFFF


_CODE_POINT_MAP_LOCK = threading.Lock()
#: The planes that hold code points :func:`normalize_text` changes (see
#: :func:`code_point_map`).
_MAPPED_CODE_POINTS = (range(0x20000), range(0xE0000, 0xE1000))


def code_point_map() -> np.ndarray[Any, np.dtype[np.uint32]]:
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
    import numpy as np

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


def code_point_value(code_point: int) -> int:
    """What :func:`normalize_text` writes for one code point: ``code_point_map()[code_point]``
    without the map (which the compiled forms do without, asking this of each code point
    they meet once a process, :data:`CODE_POINT_VALUES`)."""
    if not any(code_point in planes for planes in _MAPPED_CODE_POINTS):
        return code_point
    character = chr(code_point)
    category = unicodedata.category(character)
    if category[0] in "PS" or category in ("Cc", "Co"):
        return ord(" ")
    if category == "Nd":
        return ord(str(unicodedata.decimal(character)))
    if category in ("Cf", "Cs"):
        return _DELETED
    return code_point


#: What the compiled forms know of :func:`code_point_value` for the code points of planes 0
#: and 1 (0: not asked yet), filled as texts come: a few hundred code points on most crawls
#: where :func:`code_point_map` builds 4.4 MB in 0.07 s.
CODE_POINT_VALUES = array.array("I", bytes(4 * 0x20000))


def _translated(text: str) -> str:
    """*text* with each code point replaced as :func:`code_point_map` says."""
    if speedups.compiled is not None:
        return speedups.compiled.translated(text, CODE_POINT_VALUES, code_point_value)
    return _translated_in_python(text)


def _translated_in_python(text: str) -> str:
    code_points = code_point_map()[code_point_array(text)]
    kept = code_points[code_points != _DELETED]
    return kept.astype("<u4").tobytes().decode("utf-32-le")


def code_point_array(text: str) -> np.ndarray[Any, np.dtype[np.uint32]]:
    import numpy as np

    return np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype="<u4")


#: Whether each code point up to U+3000 (the last that :meth:`str.isspace` accepts, and
#: one more, 0) is whitespace (1).
_WHITESPACE = bytes(chr(code_point).isspace() for code_point in range(0x3002))
_SPACE = ord(" ")


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
    text = _casefolded(nfkc(text))
    has_digits = _DIGIT.search(text) is not None
    if has_digits:
        text = _masked_numbers(text)
    # translation deletes characters or writes spaces and digits: still case-folded
    text = _canonical_spacing(_translated(text), casefolded=True, masks=has_digits)
    if has_digits:
        text = _masked_until_stable(text)
    if fold_repeats:
        text = fold_repeated_block(text, min_repeats=min_repeats)
    return text


#: What the compiled :func:`_casefolded` knows of the Basic Multilingual Plane's characters
#: (whether case folding leaves each alone) and their foldings, filled as texts come.
_FOLDING_KNOWN = bytearray(0x10000)
_FOLDINGS: dict[int, str] = {}


def _casefolded(text: str) -> str:
    """``text.casefold()``; lowering for ASCII, which is the same there."""
    if text.isascii():
        return text.lower()
    if speedups.compiled is not None:
        return speedups.compiled.casefolded(text, _FOLDING_KNOWN, _FOLDINGS)
    return text.casefold()


def _canonical_spacing(text: str, *, casefolded: bool = False, masks: bool = False) -> str:
    """*text* composed and case-folded until stable (:func:`_unicode_fixpoint`, which
    *casefolded* is passed to), then :func:`_spaced` (which *masks* is passed to)."""
    if not text.isascii():
        text = _unicode_fixpoint(text, casefolded=casefolded)
    return _spaced(text, masks=masks)


def _spaced(text: str, *, masks: bool = False) -> str:
    """*text* with each run of whitespace one space, stripped, without the spaces next to
    a character of a script written without spaces (they carry no meaning there); with
    *masks*, each run of masks then written as ``"0"``."""
    if speedups.compiled is not None:
        return speedups.compiled.spaced(
            text, _WHITESPACE, NO_SPACE_SCRIPT_TABLE, _MASK_CODE_POINT if masks else -1
        )
    spaced = _spaced_in_python(text)
    return _MASK_RUN.sub("0", spaced) if masks else spaced


def _spaced_in_python(text: str) -> str:
    import numpy as np

    code_points = code_point_array(text)
    if not code_points.size:
        return text
    table = np.frombuffer(_WHITESPACE, dtype=np.bool_)
    whitespace = table[np.minimum(code_points, table.size - 1)]
    # a run of whitespace is kept as one space when a character that is not whitespace
    # follows it, and one precedes it
    kept = ~whitespace
    kept[:-1] |= whitespace[:-1] & kept[1:]
    kept[: np.argmax(~whitespace)] = False
    spaced = np.where(whitespace, np.uint32(_SPACE), code_points)[kept]
    if spaced.size > 2 and not text.isascii():
        no_space_script = is_no_space_script(spaced)
        space = spaced == _SPACE
        beside = np.zeros(spaced.size, dtype=np.bool_)
        beside[1:-1] = no_space_script[:-2] | no_space_script[2:]
        spaced = spaced[~(space & beside)]
    return spaced.astype("<u4").tobytes().decode("utf-32-le", "surrogatepass")


def _masked_until_stable(text: str) -> str:
    """Mask again what punctuation hid the first time (``"views: 87"`` reads ``"views 87"``
    once the colon is gone), until nothing changes; *text* holds the first round's masks
    written as ``"0"`` (:func:`_canonical_spacing` with ``masks=True``).

    Each round that changes the text replaces more than a lone ``"0"`` by one, so the
    rounds end; usually there are one or two.
    """
    while True:
        spans = _neutral_numbers(text)
        if not spans or _only_masks_apart(text, spans):
            return text
        # spaces around each mask: no character meets a new neighbour, so the text stays
        # composed and case-folded (no _unicode_fixpoint)
        again = _spaced(_with_masks(text, spans), masks=True)
        if again == text:
            return text
        text = again


def _only_masks_apart(text: str, spans: list[tuple[int, int]]) -> bool:
    """Whether masking *spans* of a spaced *text* would give it back: each is a ``"0"`` (a
    mask written out) between spaces or the text's ends, and no two are one space apart,
    where their masks would become one ``"0"`` (a guard: :data:`NEUTRAL_NUMBER` reads no
    two lone zeros so today). The spaces around each mask then fall on the spaces its
    ``"0"`` had."""
    previous_end = -2
    for start, end in spans:
        if (
            end - start != 1
            or text[start] != "0"
            or start - previous_end < 2
            or text[start - 1 : start] not in ("", " ")
            or text[end : end + 1] not in ("", " ")
        ):
            return False
        previous_end = end
    return True


def _masked_numbers(text: str) -> str:
    """``NEUTRAL_NUMBER.sub(" <mask> ", text)``."""
    return _with_masks(text, _neutral_numbers(text))


def _neutral_numbers(text: str) -> list[tuple[int, int]]:
    """Where :data:`NEUTRAL_NUMBER` matches *text*, as ``re.sub`` finds the matches, the
    expression tried only where a match can start: at a decimal digit that no letter or
    digit precedes (the regular expression engine would step through every character of
    the text to find them)."""
    spans: list[tuple[int, int]] = []
    end = 0
    for start in _number_starts(text):
        if start < end:
            continue
        match = NEUTRAL_NUMBER.match(text, start)
        if match is not None:
            end = match.end()
            spans.append((start, end))
    return spans


def _with_masks(text: str, spans: list[tuple[int, int]]) -> str:
    """*text* with each of *spans* replaced by a mask between spaces."""
    if not spans:
        return text
    pieces: list[str] = []
    end = 0
    for start, span_end in spans:
        pieces += (text[end:start], f" {_MASK} ")
        end = span_end
    pieces.append(text[end:])
    return "".join(pieces)


def _number_starts(text: str) -> list[int]:
    """Where a match of :data:`NEUTRAL_NUMBER` may start in *text*: at a decimal digit
    that no letter or digit precedes; the compiled form keeps only those where one of its
    branches finds what it needs around it."""
    if speedups.compiled is not None:
        return speedups.compiled.number_candidates(
            text,
            CODE_POINT_VALUES,
            code_point_value,
            _WHITESPACE,
            WORDS_BEFORE_NUMBERS,
            WORDS_AFTER_NUMBERS,
            WORDS_BEFORE_AGO,
        )
    import numpy as np

    code_points = code_point_array(text)
    mapped = code_point_map()[code_points]
    digit = (mapped >= ord("0")) & (mapped <= ord("9"))
    starts = digit.copy()
    starts[1:] &= ~(digit[:-1] | ((code_points[:-1] >= ord("a")) & (code_points[:-1] <= ord("z"))))
    starts_list: list[int] = np.flatnonzero(starts).tolist()
    return starts_list


def _unicode_fixpoint(text: str, *, casefolded: bool = False) -> str:
    """Compose (NFKC) and case-fold *text* until neither changes it.

    Deletions and case folding can leave sequences that NFKC composes, and some composed
    characters case-fold to a decomposed form again (``"\u0390"``): the result ends on
    case folding, so it is casefold-stable, and is stable under this function.
    *casefolded* says that the caller knows ``text.casefold() == text``: a case-folded
    text with characters deleted or replaced by spaces and digits is (case folding maps
    each character alone, and folding a folded character changes nothing:
    ``tests/content/test_fingerprints.py`` checks it for every code point).
    """
    for _ in range(4):
        # nfkc reads each character once in a table and gives a composed text back as it
        # is; unicodedata.is_normalized took 7% of a page's fingerprint
        composed = nfkc(text)
        if composed == text and (casefolded or text.casefold() == text):
            break
        folded = composed.casefold()
        if folded == text:
            break
        text, casefolded = folded, True
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
    return sum(len(run) / 2 if run else 1 for run, _ in SEGMENT.findall(normalized))
