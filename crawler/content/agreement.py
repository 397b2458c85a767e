"""The part of one extractor's main text that a second extractor agrees with.

Main-text extractors err in their own ways: on a copy of a page, trafilatura now and then
keeps a "related articles" block or an ad that it left out of the original, and the
copy's fingerprints move far from the original's. resiliparse leaves such blocks out more
often, but keeps less of the article's own text. :func:`agreed_lines` keeps the lines of
the first text that the second one also holds: what both extractors call the page's main
text, the part that does not drift from one copy of a page to the next.

On ``bench/neardup_quality.py`` (474 real pages, their copies and same-template siblings),
fingerprinting trafilatura's lines that resiliparse agrees with finds 0.968 of the copies,
against 0.924 with trafilatura's whole text and 0.972 with resiliparse's (copies with a
related-articles block: 0.981, 0.785 and 0.977), with fewer false flags among siblings
(18, 28 and 35).

Nothing here imports Scrapy.
"""

from __future__ import annotations

from typing import Final

from crawler.content.fingerprints import text_features
from crawler.content.normalization import normalize_text, word_count

#: A line is kept when at least this share of its word pairs occur in the second text.
MIN_SHARED_PAIRS: Final = 0.8
#: Lines of fewer words are left out: buttons, bylines, a block's heading, a date.
MIN_LINE_WORDS: Final = 3
#: When the second text holds less than this share of the first one's characters, it
#: missed the article rather than its noise: the first text is kept whole.
MIN_SECOND_SHARE: Final = 0.3


def agreed_lines(text: str, second: str) -> str:
    """Return the lines of *text* that *second* agrees with; all of *text* when *second* is
    blank or far shorter (:data:`MIN_SECOND_SHARE`), or agrees with none of them.

    A line agrees when it has :data:`MIN_LINE_WORDS` words or more (a Chinese or Japanese
    word counted as two characters) and at least :data:`MIN_SHARED_PAIRS` of its word
    pairs (character pairs in Chinese), after :func:`~crawler.content.fingerprints.normalize_text`,
    occur in *second*.

    >>> article = "The river rose two metres overnight.\\nResidents left their homes at dawn."
    >>> related = "Related: Ten ways to save on energy this winter"
    >>> agreed_lines(article + "\\n" + related, article)
    'The river rose two metres overnight.\\nResidents left their homes at dawn.'
    >>> agreed_lines(article, "") == article
    True
    """
    stripped = text.strip()
    if not stripped or len(second.strip()) < MIN_SECOND_SHARE * len(stripped):
        return text
    second_normalized = normalize_text(second)
    known = set(text_features(second_normalized, word_ngrams=(1, 2)))
    known.update(text_features(second_normalized, word_ngrams=(1,), cjk_ngram=1))
    kept = [line for line in stripped.splitlines() if _agrees(line, known, second_normalized)]
    return "\n".join(kept) if kept else text


def _agrees(line: str, known: set[str], second_normalized: str) -> bool:
    normalized = normalize_text(line)
    if word_count(normalized) < MIN_LINE_WORDS:
        return False
    pairs = set(text_features(normalized, word_ngrams=(2,)))
    if not pairs:  # numbers only
        return normalized in second_normalized
    return len(pairs & known) >= MIN_SHARED_PAIRS * len(pairs)
