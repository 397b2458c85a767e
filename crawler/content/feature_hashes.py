"""The SimHash features of a normalized text as 64-bit hashes, computed without
writing them out.

A feature is a pair of neighbouring words, or of neighbouring characters in a script
written without spaces (:func:`crawler.content.fingerprints.text_features` says which). Building
each pair as a string and hashing it with a call per feature was most of a page's
fingerprint time; here every token's hash comes from one pass of array arithmetic over the
text's code points, and a pair's hash from its two tokens' hashes:

* a token (a word, or one character of a script written without spaces) hashes to
  ``mix(sum((c[i] + 1) * P**i))`` over its code points ``c``, modulo ``2**64``: on the
  whole text, a prefix sum gives every token's sum at once;
* a pair of tokens hashes to ``mix(first * K + second + PAIR)``, a feature of one token
  alone (a run one token long) to ``mix(token ^ SINGLE)``;
* ``mix`` is MurmurHash3's 64-bit finalizer, which spreads every input bit over the
  output.

:func:`feature_hash` computes the same value from a feature's string, one character at a
time, so that a feature written out (``"ipad 0"``, ``"评测"``) and a feature hashed in the
array agree; the tests hold the two against each other. Lone surrogates hash as their code
points, like every other character.

Nothing here imports Scrapy.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Iterable

    import numpy as np

__all__ = [
    "NO_SPACE_SCRIPT_RANGES",
    "NO_SPACE_SCRIPT_TABLE",
    "feature_hash",
    "feature_hashes",
    "is_no_space_script",
    "mix",
    "mixed",
]

#: Scripts written without spaces between words, as inclusive code point ranges: Thai,
#: Lao, Myanmar, Khmer, the Japanese iteration and closing marks, kana, Bopomofo and the
#: CJK ideographs of every plane.
NO_SPACE_SCRIPT_RANGES: tuple[tuple[int, int], ...] = (
    (0x0E00, 0x0EFF),
    (0x1000, 0x109F),
    (0x1780, 0x17FF),
    (0x3005, 0x3007),
    (0x3040, 0x312F),
    (0x31A0, 0x31BF),
    (0x31F0, 0x31FF),
    (0x3400, 0x4DBF),
    (0x4E00, 0x9FFF),
    (0xF900, 0xFAFF),
    (0x20000, 0x3FFFF),
)

_MASK64 = (1 << 64) - 1
#: The base of a token's polynomial hash (odd, so it has an inverse modulo ``2**64``).
_BASE = 0x100000001B3
_BASE_INVERSE = pow(_BASE, -1, 1 << 64)
_PAIR_FACTOR = 0x9E3779B97F4A7C15
_PAIR_SALT = 0x2545F4914F6CDD1D
_SINGLE_SALT = 0x6A09E667F3BCC909
_SPACE = ord(" ")
_MASKED_NUMBER = ord("0")


def mix(value: int) -> int:
    """MurmurHash3's 64-bit finalizer of *value* (taken modulo ``2**64``).

    >>> hex(mix(1))
    '0xb456bcfc34c2cb2c'
    """
    value &= _MASK64
    value ^= value >> 33
    value = value * 0xFF51AFD7ED558CCD & _MASK64
    value ^= value >> 33
    value = value * 0xC4CEB9FE1A85EC53 & _MASK64
    return value ^ value >> 33


def mixed(values: np.ndarray[Any, np.dtype[np.uint64]]) -> np.ndarray[Any, np.dtype[np.uint64]]:
    """:func:`mix` of each value of a ``uint64`` array (a new array)."""
    import numpy as np

    values = values ^ (values >> np.uint64(33))
    values *= np.uint64(0xFF51AFD7ED558CCD)
    values ^= values >> np.uint64(33)
    values *= np.uint64(0xC4CEB9FE1A85EC53)
    values ^= values >> np.uint64(33)
    return values


def _is_no_space_script(code_point: int) -> bool:
    return any(low <= code_point <= high for low, high in NO_SPACE_SCRIPT_RANGES)


def _token_hash(code_points: list[int]) -> int:
    total, power = 0, 1
    for code_point in code_points:
        total = (total + (code_point + 1) * power) & _MASK64
        power = power * _BASE & _MASK64
    return mix(total)


def _pair_hash(first: int, second: int) -> int:
    return mix(first * _PAIR_FACTOR + second + _PAIR_SALT)


def _single_hash(token: int) -> int:
    return mix(token ^ _SINGLE_SALT)


def feature_hash(feature: str) -> int:
    """Return the 64-bit hash of one feature, written as
    :func:`crawler.content.fingerprints.text_features` writes it.

    - The feature's tokens are its space-separated words, each character of a script
      written without spaces being a token of its own (``"ipad 0"``: two, ``"评测"``: two,
      ``"ok"``: one).
    - One token hashes as a feature alone; two as a pair, in order; more (word n-grams of
      other sizes, which ``bench/content.py --choices`` compares) fold pair by pair from
      the left.
    - A feature with no token (``""``) hashes as the empty token alone.

    >>> feature_hash("ipad 0") == feature_hash(" ipad  0 ")
    True
    >>> feature_hash("评测") == feature_hash("评 测") != feature_hash("测评")
    True
    """
    tokens: list[list[int]] = []
    word: list[int] = []
    for code_point in map(ord, feature):
        if code_point == _SPACE or _is_no_space_script(code_point):
            if word:
                tokens.append(word)
                word = []
            if code_point != _SPACE:
                tokens.append([code_point])
        else:
            word.append(code_point)
    if word:
        tokens.append(word)
    hashes = [_token_hash(token) for token in tokens] or [_token_hash([])]
    if len(hashes) == 1:
        return _single_hash(hashes[0])
    value = hashes[0]
    for following in hashes[1:]:
        value = _pair_hash(value, following)
    return value


def _no_space_script_table() -> bytes:
    table = bytearray(NO_SPACE_SCRIPT_RANGES[-1][1] + 2)
    for low, high in NO_SPACE_SCRIPT_RANGES:
        table[low : high + 1] = bytes([1]) * (high + 1 - low)
    return bytes(table)


#: Whether each code point up to the last range's end (and one more, 0) belongs to a
#: script written without spaces (1): 256 kB.
NO_SPACE_SCRIPT_TABLE = _no_space_script_table()
_BEYOND_TABLE = len(NO_SPACE_SCRIPT_TABLE) - 1


def is_no_space_script(
    code_points: np.ndarray[Any, np.dtype[np.uint32]],
) -> np.ndarray[Any, np.dtype[np.bool_]]:
    """Whether each code point belongs to a script written without spaces
    (:data:`NO_SPACE_SCRIPT_RANGES`)."""
    import numpy as np

    table = np.frombuffer(NO_SPACE_SCRIPT_TABLE, dtype=np.bool_)
    return table[np.minimum(code_points, _BEYOND_TABLE)]


def _powers(base: int, count: int) -> np.ndarray[Any, np.dtype[np.uint64]]:
    import numpy as np

    powers = np.full(count, base, dtype=np.uint64)
    powers[0] = 1
    return np.cumprod(powers, dtype=np.uint64)


class _Powers:
    """``BASE**i`` and ``BASE_INVERSE**i`` for ``i`` below a length that grows to the
    longest text met (16 bytes a character of it; a page of main text is a few thousand),
    computed on first use."""

    def __init__(self) -> None:
        self._arrays: (
            tuple[np.ndarray[Any, np.dtype[np.uint64]], np.ndarray[Any, np.dtype[np.uint64]]] | None
        ) = None

    @staticmethod
    def _computed(
        length: int,
    ) -> tuple[np.ndarray[Any, np.dtype[np.uint64]], np.ndarray[Any, np.dtype[np.uint64]]]:
        return _powers(_BASE, length), _powers(_BASE_INVERSE, length)

    def up_to(
        self, length: int
    ) -> tuple[np.ndarray[Any, np.dtype[np.uint64]], np.ndarray[Any, np.dtype[np.uint64]]]:
        arrays = self._arrays  # one read: another thread may replace it meanwhile
        if arrays is None or arrays[0].size < length:
            size = 1 << 16 if arrays is None else 2 * arrays[0].size
            arrays = self._arrays = self._computed(max(length, size))
        return arrays


_POWERS = _Powers()


def feature_hashes(
    normalized: str,
) -> tuple[np.ndarray[Any, np.dtype[np.uint64]], np.ndarray[Any, np.dtype[np.int64]]]:
    """Return the distinct feature hashes of a normalized text, sorted, and how many
    times each feature occurs.

    The features are those of :func:`crawler.content.fingerprints.text_features` with the
    default n-gram sizes (word pairs, character pairs), each hashed as
    :func:`feature_hash` hashes its string: a run of words broken only by a script
    written without spaces gives its word pairs, a run of such characters with no space
    its character pairs, a run of one token that token alone; the masked number ``"0"``
    alone and the pair ``"0 0"`` are not features.

    >>> hashes, counts = feature_hashes("the cat the cat")
    >>> sorted(counts.tolist()), feature_hash("the cat") in hashes.tolist()
    ([1, 2], True)
    """
    import numpy as np

    code_points = np.frombuffer(normalized.encode("utf-32-le", "surrogatepass"), dtype="<u4")
    size = code_points.size
    empty = np.zeros(0, dtype=np.uint64), np.zeros(0, dtype=np.int64)
    if not size:
        return empty
    no_space = is_no_space_script(code_points)
    space = code_points == _SPACE
    # a token starts at a character that is not a space, after a space, at the start, at
    # or after a character of a script written without spaces; it ends likewise
    in_token = ~space
    breaks_before = np.ones(size, dtype=np.bool_)
    breaks_before[1:] = space[:-1] | no_space[:-1] | no_space[1:]
    starts = np.flatnonzero(in_token & breaks_before)
    breaks_after = np.ones(size, dtype=np.bool_)
    breaks_after[:-1] = space[1:] | no_space[1:] | no_space[:-1]
    ends = np.flatnonzero(in_token & breaks_after) + 1
    if not starts.size:
        return empty
    powers, inverse_powers = _POWERS.up_to(size)
    weighted = (code_points.astype(np.uint64) + np.uint64(1)) * powers[:size]
    prefix = np.zeros(size + 1, dtype=np.uint64)
    np.cumsum(weighted, dtype=np.uint64, out=prefix[1:])
    tokens = mixed((prefix[ends] - prefix[starts]) * inverse_powers[starts])
    is_char = no_space[starts]
    is_zero = (ends - starts == 1) & (code_points[starts] == _MASKED_NUMBER)
    # neighbours form a pair when both are words, or both characters with nothing between
    paired = (is_char[:-1] == is_char[1:]) & (~is_char[:-1] | (ends[:-1] == starts[1:]))
    pairs = _pair_hashes(tokens[:-1], tokens[1:])[paired & ~(is_zero[:-1] & is_zero[1:])]
    alone = np.ones(starts.size, dtype=np.bool_)
    alone[:-1] &= ~paired
    alone[1:] &= ~paired
    singles = mixed(tokens[alone & ~is_zero] ^ np.uint64(_SINGLE_SALT))
    hashes, counts = np.unique(np.concatenate((pairs, singles)), return_counts=True)
    return hashes, counts


def _pair_hashes(
    first: np.ndarray[Any, np.dtype[np.uint64]], second: np.ndarray[Any, np.dtype[np.uint64]]
) -> np.ndarray[Any, np.dtype[np.uint64]]:
    import numpy as np

    return mixed(first * np.uint64(_PAIR_FACTOR) + second + np.uint64(_PAIR_SALT))


def hashes_of(features: Iterable[str]) -> np.ndarray[Any, np.dtype[np.uint64]]:
    """The :func:`feature_hash` of each of *features*, in order."""
    import numpy as np

    return np.fromiter(map(feature_hash, features), dtype=np.uint64)
