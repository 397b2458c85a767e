"""``crawler.content.unicode_forms.nfkc`` is ``unicodedata.normalize("NFKC", ...)``, faster."""

from __future__ import annotations

import os
import unicodedata
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from crawler.content.unicode_forms import _CLASSIFIED, _inert_code_points, nfkc
from tests.conftest import REPO_ROOT

CORPUS_DIR = Path(os.environ.get("DEDUP_CORPUS_DIR") or REPO_ROOT.parent / "shared" / "corpus")

# Characters that NFKC changes or joins, and what they meet: combining marks (reordered,
# composed), Hangul jamo (composed algorithmically), vowel signs that compose with the
# letter before them, compatibility forms, lone surrogates, characters above the table.
TRICKY = (
    "aeiouAEIOU \u00a0\u2026\ufb01\uff21\u2460\u00b2\u1e9e\u0390\u03d3\u212b"
    "\u0300\u0301\u0308\u0323\u0345\u0f71\u0f72\u0f73\u3099\u304b"
    "\u1100\u1161\u11a8\uac00\u0b47\u0b3e\u0b57\u0dd9\u0dcf"
    "\ud800\U0001d15e\U0001d165\U00011099\U000110ba\U0002f800\U000e0041"
)


@given(st.text(alphabet=st.sampled_from(TRICKY), max_size=12))
def test_nfkc_of_text_that_composes_is_unicodedatas(text: str) -> None:
    assert nfkc(text) == unicodedata.normalize("NFKC", text)


@given(st.text())
def test_nfkc_of_any_text_is_unicodedatas(text: str) -> None:
    assert nfkc(text) == unicodedata.normalize("NFKC", text)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("e\u0301", "\u00e9"),  # a mark joins the letter before it
        ("\u00e9\u0323", "\u1eb9\u0301"),  # marks reordered under a composed letter
        ("\u1100\u1161\u11a8", "\uac01"),  # Hangul jamo composed
        ("\u0b47\u0b3e", "\u0b4b"),  # a vowel sign (combining class 0) joins
        ("x\u00a0y \ufb01", "x y fi"),  # compatibility forms
        ("\U0002f800", "\u4e3d"),  # above the table: left to unicodedata
    ],
)
def test_nfkc_composes_across_the_characters_around_a_change(text: str, expected: str) -> None:
    assert nfkc(text) == expected == unicodedata.normalize("NFKC", text)


def test_only_characters_nfkc_leaves_alone_wherever_they_stand_are_inert() -> None:
    inert = _inert_code_points()
    assert inert[ord("a")] and inert[ord("\u00e9")] and inert[ord("\u4e00")]
    for changed in "\u00a0\u2026\u0301\u1161\u0b3e\ud800":
        assert not inert[ord(changed)], hex(ord(changed))
    assert not inert[_CLASSIFIED]


def test_nfkc_of_every_corpus_page_text_is_unicodedatas() -> None:
    pages = sorted((CORPUS_DIR / "pages" / "wcxb-dev" / "ground-truth").glob("*.json"))
    if not pages:
        pytest.skip(f"corpus not found in {CORPUS_DIR} (set DEDUP_CORPUS_DIR)")
    chinese = sorted((CORPUS_DIR / "pages" / "chinese-cx" / "Text").glob("*.txt"))
    texts = [path.read_text("utf-8", "replace") for path in [*pages, *chinese]]
    assert all(nfkc(text) == unicodedata.normalize("NFKC", text) for text in texts)
