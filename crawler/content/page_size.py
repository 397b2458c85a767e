"""How much text a whole page holds, in one byte, and when two pages' sizes make a shared
main text weak evidence that they are one page. Nothing here imports Scrapy."""

from __future__ import annotations

import math

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
