"""The numbers signature: which numbers a normalized text names, in 64 bits.

Two pages of one template often differ only by a number (a size, a SKU, a version): their
word pairs agree, their numbers do not. :func:`numbers_signature` records the numbers that
name a thing and the others apart; :func:`numbers_conflict` tells whether two signatures
name different numbers, so that such pages are not taken for copies.

Nothing here imports Scrapy.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

import xxhash

from crawler.content import speedups
from crawler.content.normalization import (
    CODE_POINT_VALUES,
    code_point_array,
    code_point_value,
)
from crawler.content.number_masks import CHINESE_LABEL_WORDS, CHINESE_UNITS, LABEL_WORDS, UNITS

if TYPE_CHECKING:
    from collections.abc import Iterator

__all__ = [
    "NUMBERS_COUNTERS",
    "NUMBERS_COUNTER_BITS",
    "NUMBERS_COUNT_BITS",
    "NUMBERS_OTHER_BITS",
    "NUMBERS_SUM_BITS",
    "RULES",
    "numbers_conflict",
    "numbers_signature",
]

#: A run of ASCII letters and digits that holds a digit (matched from the run's start, and
#: its letters never given back: one pass over the text), with up to two such runs that
#: follow it one space apart: normalization wrote the dots of ``1.9.3`` and ``15.6`` as
#: spaces, and a version is one number, not three (a table of figures is cut in threes).
#: Then the unit right after it, if any.
_NUMBER_TOKEN = re.compile(
    rf"(?<![0-9a-z])([a-z]*+[0-9][0-9a-z]*(?: [0-9][0-9a-z]*){{0,2}})"
    rf"(?: ?({UNITS})(?![\da-z])|({CHINESE_UNITS}))?"
)
#: :data:`UNITS` spelled out for the compiled form, each word whole (``bits?``: ``bit`` and
#: ``bits``).
_UNIT_WORDS = "|".join(
    word
    for unit in UNITS.split("|")
    for word in ((unit[:-2], unit[:-1]) if unit.endswith("s?") else (unit,))
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
#: The rules above in one line, for :func:`crawler.content.fingerprints.describe`.
RULES = (
    f"xxh64-seed{_NUMBERS_SEED}-runs-naming-{NUMBERS_COUNTERS}x{NUMBERS_COUNTER_BITS}bit"
    f"-count{NUMBERS_COUNT_BITS}-sum{NUMBERS_SUM_BITS}-others-{NUMBERS_OTHER_BITS}bit-set"
)


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
    if speedups.compiled is not None:
        return speedups.compiled.numbers_signature(
            normalized,
            CODE_POINT_VALUES,
            code_point_value,
            _UNIT_WORDS,
            CHINESE_UNITS,
            "|".join(LABEL_WORDS),
            "|".join(CHINESE_LABEL_WORDS),
            _NUMBERS_SEED,
        )
    return _numbers_signature_in_python(normalized)


def _numbers_signature_in_python(normalized: str) -> int:
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
    import numpy as np

    code_points = np.minimum(code_point_array(normalized), 128)
    digit = np.frombuffer(_ASCII_DIGIT, dtype=np.bool_)[code_points]
    alphanumeric = np.frombuffer(_ASCII_ALPHANUMERIC, dtype=np.bool_)[code_points]
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


_ASCII_DIGIT = bytes(chr(code).isdigit() and code < 128 for code in range(129))
_ASCII_ALPHANUMERIC = bytes(  # a to z: normalized text is case-folded
    (chr(code).isdigit() and code < 128) or 97 <= code <= 122 for code in range(129)
)
_TRAILING_LATIN = re.compile(r"[a-z]*$")


def _label_before(normalized: str, start: int) -> str:
    """The label word right before position *start* (``sku``, ``货号``), else ``""``."""
    chinese = normalized[max(0, start - 2) : start]
    if chinese in CHINESE_LABEL_WORDS:
        return chinese
    if start < 2 or normalized[start - 1] != " ":
        return ""
    word = normalized[normalized.rfind(" ", 0, start - 1) + 1 : start - 1]
    # a Latin label right after Chinese text, with no space between ("货号sku 123")
    word = _TRAILING_LATIN.search(word)[0]  # type: ignore[index]
    if word in LABEL_WORDS:
        return word
    chinese = normalized[max(0, start - 3) : start - 1]
    return chinese if chinese in CHINESE_LABEL_WORDS else ""


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
