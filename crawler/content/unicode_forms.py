"""Unicode compatibility composition (NFKC) at the cost of a table look-up for the text
that NFKC leaves as it is.

:func:`unicodedata.normalize` composes a whole text again as soon as one character of it
changes; on the main text of a web page, one no-break space or ellipsis is enough, and
that was a fifth of a page's fingerprint time. :func:`nfkc` finds the few characters NFKC
can change with one array look-up, and composes only the stretches around them.

Nothing here imports Scrapy.
"""

from __future__ import annotations

import functools
import threading
import unicodedata

from crawler.content import speedups

__all__ = ["nfkc"]

#: Code points below this are classified in :func:`_inert_code_points`; those above
#: (ideographs of plane 2 and 3, tags of plane 14, private use) take the slow path.
_CLASSIFIED = 0x20000

#: The second halves of the Hangul syllables' algorithmic composition (vowels, final
#: consonants): they compose with the character before them.
_HANGUL_SECONDS = (range(0x1161, 0x1176), range(0x11A8, 0x11C3))

_TABLE_LOCK = threading.Lock()


def nfkc(text: str) -> str:
    """Return ``unicodedata.normalize("NFKC", text)``, composing again only the stretches
    of *text* around the characters NFKC may change.

    A character is *inert* when NFKC leaves it alone wherever it stands: its canonical
    combining class is 0, it is its own NFKC form, and it is no second half of a canonical
    composition (so it never joins the character before it). NFKC never reorders or
    composes across an inert character, so a text splits before each one into pieces
    normalized separately; a piece made only of inert characters is left as it is. Each
    run of other characters is normalized with the inert character before it (which a
    combining mark may join) up to the next inert character.

    >>> nfkc("caf\\u0065\\u0301 \\u2026 \\ufb01ne\\u00a0day") == "café ... fine day"
    True
    >>> nfkc("plain ascii") == "plain ascii"
    True
    """
    if text.isascii():
        return text
    if speedups.compiled is not None:
        return speedups.compiled.nfkc(text, _inert_code_points(), unicodedata.normalize)
    run_starts, run_ends = _changing_runs(text)
    if not run_starts:
        return text
    pieces: list[str] = []
    done = 0
    for start, end in zip(run_starts, run_ends, strict=True):
        start = max(start - 1, 0)
        pieces += (text[done:start], unicodedata.normalize("NFKC", text[start:end]))
        done = end
    pieces.append(text[done:])
    return "".join(pieces)


def _changing_runs(text: str) -> tuple[list[int], list[int]]:
    """Where each run of characters of *text* that are not inert starts, and ends."""
    import numpy as np

    code_points = np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype="<u4")
    inert = np.frombuffer(_inert_code_points(), dtype=np.bool_)
    changed = np.flatnonzero(~inert[np.minimum(code_points, _CLASSIFIED)])
    if not changed.size:
        return [], []
    run_starts = changed[np.r_[True, np.diff(changed) > 1]]
    run_ends = changed[np.r_[np.diff(changed) > 1, True]] + 1
    return run_starts.tolist(), run_ends.tolist()


def _inert_code_points() -> bytes:
    """Whether each code point below :data:`_CLASSIFIED` is inert under NFKC (1, see
    :func:`nfkc`), and 0 at index :data:`_CLASSIFIED` for every code point above; built on
    first use, once whichever threads ask."""
    with _TABLE_LOCK:
        return _built_inert_code_points()


@functools.cache
def _built_inert_code_points() -> bytes:
    characters = list(map(chr, range(_CLASSIFIED)))
    inert = bytearray(not unicodedata.combining(character) for character in characters)
    inert.append(False)
    # NFKC changes only characters that decompose, and not every one of them ("\u00e9")
    for code_point, decomposition in enumerate(map(unicodedata.decomposition, characters)):
        if not decomposition:
            continue
        character = characters[code_point]
        if unicodedata.normalize("NFKC", character) != character:
            inert[code_point] = False
        parts = decomposition.split()
        if len(parts) == 2 and not decomposition.startswith("<"):
            inert[int(parts[1], 16)] = False
    for seconds in _HANGUL_SECONDS:
        inert[seconds.start : seconds.stop] = bytes(len(seconds))
    # lone surrogates: left to unicodedata, as they were
    inert[0xD800:0xE000] = bytes(0xE000 - 0xD800)
    return bytes(inert)
