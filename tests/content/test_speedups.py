"""The compiled forms of the fingerprints' loops (``crawler/content/_speedups.c``) give
exactly what their pure-Python references give: on texts made of the words and shapes the
number masks and the numbers signature look for, on any text, and on every corpus page."""

from __future__ import annotations

import functools
import gzip
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import unicodedata
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import xxhash
from hypothesis import given, settings
from hypothesis import strategies as st

from crawler.content import (
    normalization,
    number_masks,
    numbers_signature,
    page_size,
    speedups,
    unicode_forms,
)
from crawler.content.extract import decode_html
from crawler.content.fingerprints import simhash_and_minhash_of_normalized
from crawler.content.neardup import fingerprint_text
from tests.conftest import REPO_ROOT

CORPUS_DIR = Path(os.environ.get("DEDUP_CORPUS_DIR") or REPO_ROOT.parent / "shared" / "corpus")
COMPILED = speedups.compiled

needs_compiled = pytest.mark.skipif(COMPILED is None, reason="crawler.content._speedups not built")


@contextmanager
def pure_python() -> Iterator[None]:
    speedups.compiled = None
    try:
        yield
    finally:
        speedups.compiled = COMPILED


def both(function: Callable[..., Any], *arguments: Any) -> tuple[Any, Any]:
    """*function*'s value with the compiled forms, and with the pure-Python references."""
    compiled = function(*arguments)
    with pure_python():
        return compiled, function(*arguments)


def test_the_compiled_forms_are_built_where_a_c_compiler_is() -> None:
    # CI and every machine with a compiler run the compiled forms; the tests below hold
    # them against the references
    if os.environ.get(speedups.PURE_PYTHON_VARIABLE):
        pytest.skip(f"{speedups.PURE_PYTHON_VARIABLE} is set: the references run")
    headers = Path(sysconfig.get_paths()["include"], "Python.h")
    if os.environ.get("CI") == "true" or (shutil.which("cc") and headers.exists()):
        assert COMPILED is not None


def test_the_environment_variable_runs_the_references() -> None:
    code = "from crawler.content import speedups; print(speedups.compiled is None)"
    environment = {**os.environ, speedups.PURE_PYTHON_VARIABLE: "1"}
    result = subprocess.run(
        [sys.executable, "-c", code], env=environment, capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == "True"


# Texts made of what the number masks and the numbers signature look for: dates, times,
# years, counters and their labels, months, units, Chinese dates and counters, with
# digits of other scripts, whitespace of every kind, format characters, combining marks,
# ideographs and a lone surrogate among them.
_WORDS = sorted(
    {
        *number_masks.WORDS_BEFORE_NUMBERS.split("|"),
        *number_masks.WORDS_AFTER_NUMBERS.split("|"),
        *number_masks.WORDS_BEFORE_AGO.split("|"),
        *numbers_signature._UNIT_WORDS.split("|"),
        *number_masks.CHINESE_UNITS.split("|"),
        *number_masks.LABEL_WORDS,
        *number_masks.CHINESE_LABEL_WORDS,
    }
)
_SHAPES = [
    *"0123456789",
    "19",
    "20",
    "2024",
    "05",
    "1,234",
    "3.5",
    "12:30",
    "ago",
    "of",
    "am",
    "p.m.",
    "st",
    "nd",
    "th",
    "s",
    "k",
    "m",
    "x",
    "é",
    "ß",
    "İ",
    "日",
    "号",
    "中",
    "ก",
    "\u0663",  # ARABIC-INDIC DIGIT THREE
    "\uff13",  # FULLWIDTH DIGIT THREE
    "\u2460",  # CIRCLED DIGIT ONE
    "\u0301",
    "\u00ad",
    "\u200b",
    "\ue000",
    "\ud800",
    *"-/.:,()%$—",
    " ",
    " ",
    "  ",
    "\u3000",
    "\xa0",
    "\t",
    "\n",
]
VOCABULARY = st.lists(st.sampled_from(_WORDS + _SHAPES), max_size=40).map("".join)
# a deeper run: HYPOTHESIS_PROFILE=deep
MANY = settings(max_examples=max(400, settings().max_examples))


@needs_compiled
@MANY
@given(VOCABULARY)
def test_normalization_is_the_references(text: str) -> None:
    compiled, reference = both(normalization.normalize_text, text)
    assert compiled == reference


@needs_compiled
@given(st.text())
def test_normalization_of_any_text_is_the_references(text: str) -> None:
    compiled, reference = both(normalization.normalize_text, text)
    assert compiled == reference


@needs_compiled
@MANY
@given(VOCABULARY)
def test_every_number_mask_starts_where_the_compiled_form_looks(text: str) -> None:
    for stage in (text.casefold(), normalization.normalize_text(text)):
        with pure_python():
            starts = normalization._number_starts(stage)
        candidates = set(normalization._number_starts(stage))
        assert candidates <= set(starts)
        for start in starts:
            if number_masks.NEUTRAL_NUMBER.match(stage, start):
                assert start in candidates, (stage, start)


@needs_compiled
@MANY
@given(VOCABULARY)
def test_the_numbers_signature_is_the_references(text: str) -> None:
    for stage in (text, text.casefold(), normalization.normalize_text(text)):
        compiled, reference = both(numbers_signature.numbers_signature, stage)
        assert compiled == reference, stage


@needs_compiled
@given(st.text())
def test_the_numbers_signature_of_any_text_is_the_references(text: str) -> None:
    compiled, reference = both(numbers_signature.numbers_signature, text)
    assert compiled == reference


def test_a_number_longer_than_any_buffer_is_signed_as_the_reference_signs_it() -> None:
    text = "sku " + "7a" * 5000 + " 12 3 gb 货号" + "9" * 3000
    compiled, reference = both(numbers_signature.numbers_signature, text)
    assert compiled == reference != 0


@needs_compiled
@MANY
@given(VOCABULARY)
def test_simhash_and_minhash_are_the_references(text: str) -> None:
    normalized = normalization.normalize_text(text)
    compiled, reference = both(simhash_and_minhash_of_normalized, normalized)
    assert compiled == reference


@needs_compiled
@given(st.text())
def test_translation_spacing_nfkc_and_folding_of_any_text_are_the_references(text: str) -> None:
    for function in (normalization._translated, normalization._spaced, unicode_forms.nfkc):
        compiled, reference = both(function, text)
        assert compiled == reference, function.__name__
    assert normalization._casefolded(text) == text.casefold()


@needs_compiled
@given(st.lists(st.sampled_from([normalization._MASK, " ", "\t", "\u3000", "a", "\u7cfb", "0"])))
def test_spacing_that_writes_the_masks_is_the_references(pieces: list[str]) -> None:
    text = "".join(pieces)
    compiled, reference = both(functools.partial(normalization._spaced, masks=True), text)
    assert compiled == reference
    assert normalization._MASK not in compiled


@needs_compiled
@given(st.binary(max_size=100), st.integers(min_value=0, max_value=2**64 - 1))
def test_xxh64_is_the_xxhash_packages(data: bytes, seed: int) -> None:
    assert COMPILED is not None
    assert COMPILED.xxh64(data, seed) == xxhash.xxh64_intdigest(data, seed)


@needs_compiled
def test_a_table_of_the_wrong_size_is_named() -> None:
    assert COMPILED is not None
    with pytest.raises(ValueError, match="code_point_values"):
        COMPILED.translated("text", bytearray(10), normalization.code_point_value)
    with pytest.raises(ValueError, match="no_space_script"):
        COMPILED.simhash_and_minhash("text", normalization.CODE_POINT_VALUES)


@needs_compiled
@pytest.mark.parametrize("text", ["x\u0301 y", "q\u0308\u0301", "e\u0301", "\u1100\u1161"])
def test_nfkc_gives_a_text_already_composed_back_as_it_is(text: str) -> None:
    # the fixpoint of normalization tells a composed text by identity, without comparing
    result = unicode_forms.nfkc(text)
    assert result == unicodedata.normalize("NFKC", text)
    assert (result is text) == unicodedata.is_normalized("NFKC", text)


def test_every_ascii_character_is_inert_under_nfkc() -> None:
    # the compiled nfkc reads ASCII characters without the table
    assert all(unicode_forms._inert_code_points()[:128])


def test_each_code_points_value_is_the_maps() -> None:
    table = normalization.code_point_map()
    planes = [*range(0x20000), *range(0xE0000, 0xE1000), 0x20000, 0x3FFFF, 0x10FFFF]
    assert all(normalization.code_point_value(point) == table[point] for point in planes)


@needs_compiled
def test_a_failing_code_point_value_fails_the_call() -> None:
    assert COMPILED is not None

    def failing(code_point: int) -> int:
        raise RuntimeError(f"no value for {code_point}")

    with pytest.raises(RuntimeError, match="no value for 99"):
        COMPILED.translated("caf\u00e9", bytearray(4 * 0x20000), failing)


def test_the_unit_words_spell_out_every_unit() -> None:
    # numbers_signature's compiled form compares whole words: UNITS holds words and
    # words with an optional "s" only, each spelled out
    assert all(re.fullmatch(r"[a-z]+(?:s\?)?", unit) for unit in number_masks.UNITS.split("|"))
    words = numbers_signature._UNIT_WORDS.split("|")
    assert all(re.fullmatch(f"(?:{number_masks.UNITS})", word) for word in words)
    assert {"bit", "bits", "lb", "lbs", "gb"} <= set(words)


def test_case_folding_a_folded_character_changes_nothing() -> None:
    # what _unicode_fixpoint(casefolded=True) relies on, for every code point
    folded = [chr(code_point).casefold() for code_point in range(sys.maxunicode + 1)]
    assert all(text.casefold() == text for text in folded)


def _corpus_texts() -> list[str]:
    pages = sorted((CORPUS_DIR / "pages" / "wcxb-dev" / "ground-truth").glob("*.json"))
    chinese = sorted((CORPUS_DIR / "pages" / "chinese-cx" / "Text").glob("*.txt"))
    return [path.read_text("utf-8", "replace") for path in [*pages, *chinese]]


@needs_compiled
def test_every_corpus_text_has_the_references_fingerprint() -> None:
    texts = _corpus_texts()
    if not texts:
        pytest.skip(f"corpus not found in {CORPUS_DIR} (set DEDUP_CORPUS_DIR)")
    compiled = [fingerprint_text(text) for text in texts]
    with pure_python():
        reference = [fingerprint_text(text) for text in texts]
    assert compiled == reference


#: Pieces of markup and text in which every rule of the count meets the others.
MARKUP = st.lists(
    st.sampled_from(
        [
            *"<>/!?-&#;x:aZ09 \n",
            "\u00e9",
            "\u3000",
            "\u7cfb",
            "\U0001f600",
            "<!--",
            "-->",
            "&#x41;",
            "&#12",
            "amp",
            "span",
            "SCRIPT",
            "Div",
            *sorted(page_size.HIDDEN_ELEMENTS),
            *sorted(page_size.BLOCK_ELEMENTS),
        ]
    ),
    max_size=60,
).map("".join)


@needs_compiled
@MANY
@given(MARKUP)
def test_the_count_of_a_pages_text_is_the_references(page: str) -> None:
    compiled, reference = both(page_size.markup_text_chars, page)
    assert compiled == reference


@needs_compiled
@given(st.text())
def test_the_count_of_any_text_is_the_references(text: str) -> None:
    compiled, reference = both(page_size.markup_text_chars, text)
    assert compiled == reference


@needs_compiled
def test_every_element_is_counted_as_the_reference_counts_it() -> None:
    others = {"span", "heading", "scripts", "h7", "a", "figcaptions", "x" * 20}
    for name in sorted(page_size.HIDDEN_ELEMENTS | page_size.BLOCK_ELEMENTS | others):
        for spelled in (name, name.upper(), name.title()):
            for page in (
                f"a<{spelled} x='1'>b</{spelled}>c<{spelled}>d",
                f"a<!{spelled}>b</{name}>c",
                f"a</{spelled}>b<{spelled}",
            ):
                compiled, reference = both(page_size.markup_text_chars, page)
                assert compiled == reference, page


@needs_compiled
def test_every_corpus_page_has_the_references_count_of_its_text() -> None:
    paths = sorted((CORPUS_DIR / "pages" / "wcxb-dev" / "html").glob("*.html.gz"))
    paths += sorted((CORPUS_DIR / "pages" / "chinese-cx" / "RawHtml").glob("*"))
    if not paths:
        pytest.skip(f"corpus not found in {CORPUS_DIR} (set DEDUP_CORPUS_DIR)")
    for path in paths:
        data = path.read_bytes()
        page = decode_html(gzip.decompress(data) if path.suffix == ".gz" else data)[1]
        compiled, reference = both(page_size.markup_text_chars, page)
        assert compiled == reference, path.name
