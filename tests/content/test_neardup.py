from __future__ import annotations

import functools
import gc
import logging
import random
import shutil
import signal
import subprocess
import sys
import threading
import tracemalloc
from dataclasses import replace
from unittest.mock import ANY

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from crawler.content.fingerprints import (
    content_hash,
    estimated_jaccard,
    hamming_distance,
    normalize_text,
    numbers_signature,
    page_size_class,
    simhash,
)
from crawler.content.index import MAX_QUERY_DISTANCE, band_layout
from crawler.content.index.journaled import JournaledContentIndex
from crawler.content.index.memory import (
    DocumentTable,
    MemoryContentHashTable,
    MemoryFingerprintIndex,
    tail_limit,
)
from crawler.content.neardup import (
    DEFAULT_SECOND_STAGE_DISTANCE,
    Decision,
    Match,
    NearDuplicateDetector,
    TextFingerprint,
    content_signature,
)
from crawler.state.persistence import StateFileError
from tests.conftest import REPO_ROOT

BITS = 64
LETTERS = "abcdefghijklmnopqrstuvwxyz"


def flip(fingerprint: int, *bits: int) -> int:
    for bit in bits:
        fingerprint ^= 1 << bit
    return fingerprint


def word(rng: random.Random) -> str:
    return "".join(rng.choice(LETTERS) for _ in range(rng.randint(3, 9)))


def distinct_text(number: int, words: int = 60) -> str:
    """A text of random words: texts of different numbers are far apart."""
    rng = random.Random(number)
    return " ".join(word(rng) for _ in range(words))


def words_of_length(rng: random.Random, min_chars: int, max_chars: int) -> list[str]:
    words: list[str] = []
    while len(" ".join(words)) < min_chars:
        words.append(word(rng))
    assert len(" ".join(words)) < max_chars
    return words


def pair_at_distance(words: list[str], distance: int) -> tuple[str, str]:
    """Two texts of the same length class, one word apart, whose SimHashes differ in
    exactly *distance* bits (searched deterministically)."""
    base_text = " ".join(words)
    base_fingerprint = simhash(base_text)
    rng = random.Random(distance)
    for _ in range(5000):
        variant = list(words)
        variant[rng.randrange(len(variant))] = "x" * len(word(rng))
        variant[rng.randrange(len(variant))] = word(rng)
        text = " ".join(variant)
        if hamming_distance(simhash(text), base_fingerprint) == distance:
            return base_text, text
    raise AssertionError(f"no variant at distance {distance} of {base_text!r}")


# --- The detector -----------------------------------------------------------------------


def test_new_text_is_kept_and_returns_none():
    detector = NearDuplicateDetector()
    assert detector.check_and_add("a", distinct_text(1)) is None
    assert detector.check_and_add("b", distinct_text(2)) is None
    assert len(detector) == 2
    assert len(detector.index) == 2


def test_exact_duplicate_matches_the_first_key_and_is_not_added():
    detector = NearDuplicateDetector()
    text = distinct_text(1)
    assert detector.check_and_add("first", text) is None
    # Differences that normalization removes: case, punctuation, spacing.
    same = text.upper().replace(" ", " ,  ", 3) + "!"
    match = detector.check_and_add("second", same)
    assert match == Match(key="first", distance=0, kind="exact", fingerprint=simhash(text))
    assert detector.check_and_add("third", same) == match
    assert len(detector) == 1
    assert len(detector.index) == 1


def test_near_duplicate_matches_and_becomes_an_entry_of_the_original():
    detector = NearDuplicateDetector()
    words = distinct_text(3, words=600).split()
    original = " ".join(words)
    edited = " ".join([*words[:300], "inserted", *words[300:]])
    distance = hamming_distance(simhash(original), simhash(edited))
    assert 0 < distance <= 3, distance
    assert detector.check_and_add("original", original) is None
    assert detector.check_and_add("edited", edited) == Match(
        key="original",
        distance=distance,
        kind="near",
        fingerprint=simhash(original),
        stage="first",
        similarity=ANY,
    )
    # its text is one more way to find the original (an entry, not a document): the same
    # text again is an exact copy of the original
    assert (len(detector), len(detector.index)) == (1, 2)
    again = detector.check_and_add("edited-again", edited)
    assert again is not None and (again.key, again.kind) == ("original", "exact")
    assert (len(detector), len(detector.index)) == (1, 2)


def test_the_earlier_document_stays_the_representative():
    detector = NearDuplicateDetector()
    words = distinct_text(4, words=600).split()
    texts = [" ".join([*words[:n], "extra", *words[n:]]) for n in (10, 20)]
    assert detector.check_and_add("original", " ".join(words)) is None
    matches = [detector.check_and_add(f"edit-{n}", text) for n, text in enumerate(texts)]
    assert [match.key for match in matches if match] == ["original", "original"]


def test_threshold_depends_on_text_length():
    rng = random.Random(11)
    short_words = words_of_length(rng, 120, 190)
    long_words = words_of_length(rng, 400, 600)
    short_text, short_variant = pair_at_distance(short_words, 3)
    long_text, long_variant = pair_at_distance(long_words, 3)
    assert 50 <= len(normalize_text(short_variant)) < 200
    assert len(normalize_text(long_variant)) >= 200

    detector = NearDuplicateDetector()
    assert detector.check_and_add("short", short_text) is None
    decision = detector.check("short-variant", short_variant)
    assert (decision.match, decision.threshold, decision.added) == (None, 2, True)

    assert detector.check_and_add("long", long_text) is None
    decision = detector.check("long-variant", long_variant)
    assert decision.threshold == 3
    assert decision.match == Match(
        key="long",
        distance=3,
        kind="near",
        fingerprint=simhash(long_text),
        stage="first",
        similarity=ANY,
    )
    assert not decision.added

    # The same short pair at distance 2 or less is a duplicate.
    lenient = NearDuplicateDetector(short_threshold=3)
    lenient.check_and_add("short", short_text)
    assert lenient.check_and_add("short-variant", short_variant) == Match(
        key="short",
        distance=3,
        kind="near",
        fingerprint=simhash(short_text),
        stage="first",
        similarity=ANY,
    )


def test_below_min_chars_only_the_exact_check_applies():
    # One word dominates both fingerprints: different texts, identical SimHash.
    tiny = "spam spam spam spam spam eggs"
    other = "spam spam spam spam spam ham"
    assert simhash(tiny) == simhash(other)
    assert len(normalize_text(tiny)) < 50

    detector = NearDuplicateDetector()
    assert detector.check_and_add("tiny", tiny) is None
    decision = detector.check("other", other)
    assert (decision.match, decision.threshold, decision.added) == (None, None, True)
    assert detector.check_and_add("tiny-again", tiny + "!") == Match(
        key="tiny", distance=0, kind="exact", fingerprint=simhash(tiny)
    )
    assert len(detector) == 2
    assert len(detector.index) == 0  # kept for the exact check only

    # Without the minimum (and without verification) the fingerprints match.
    without_minimum = NearDuplicateDetector(min_chars=0, min_similarity=0.0)
    without_minimum.check_and_add("tiny", tiny)
    assert without_minimum.check_and_add("other", other) == Match(
        key="tiny",
        distance=0,
        kind="near",
        fingerprint=simhash(tiny),
        stage="first",
        similarity=ANY,
    )


def test_check_returns_the_decision_for_audit_and_add_false_keeps_nothing():
    detector = NearDuplicateDetector()
    text = distinct_text(5)
    decision = detector.check("a", text, add=False)
    normalized = normalize_text(text)
    assert decision == Decision(
        key="a",
        match=None,
        fingerprint=simhash(text),
        content_hash=content_hash(normalized),
        normalized_length=len(normalized),
        threshold=3,
        added=False,
    )
    assert len(detector) == 0
    assert detector.check("a", text).added
    assert detector.check("b", text, add=False).match == Match("a", 0, "exact", simhash(text))


def test_fold_repeats_is_passed_to_normalization():
    block = distinct_text(6, words=20)
    folding = NearDuplicateDetector(fold_repeats=True)
    folding.check_and_add("block", block)
    assert folding.check_and_add("repeated", f"{block} {block} {block}") == Match(
        "block", 0, "exact", simhash(block)
    )
    # Without folding the texts differ, but they share all their word pairs but two.
    plain = NearDuplicateDetector()
    plain.check_and_add("block", block)
    match = plain.check_and_add("repeated", f"{block} {block} {block}")
    assert match is not None
    assert (match.key, match.kind) == ("block", "near")


class CollidingContentHashes:
    """A content-hash table whose every look-up finds a document of another text."""

    def add(self, content_hash: bytes, key: str, fingerprint: int) -> None:
        pass

    def get(self, content_hash: bytes) -> tuple[str, int] | None:
        return "earlier", 0x1234

    def __len__(self) -> int:
        return 1


def test_a_content_hash_collision_is_not_an_exact_duplicate(caplog):
    detector = NearDuplicateDetector(content_hashes=CollidingContentHashes())
    with caplog.at_level(logging.WARNING, logger="crawler.content.neardup"):
        decision = detector.check("later", distinct_text(8))
    assert (decision.match, decision.added) == (None, True)
    assert caplog.record_tuples == [
        (
            "crawler.content.neardup",
            logging.WARNING,
            "Content hash of later collides with that of earlier although their texts "
            "differ; not treated as an exact duplicate",
        )
    ]


@pytest.mark.parametrize(
    ("option", "value", "message"),
    [
        ("short_threshold", 4, "short_threshold must be an integer between 0 and 3"),
        ("long_threshold", -1, "long_threshold must be an integer between 0 and 3"),
        ("min_chars", -5, "min_chars must be a number of characters, 0 or more, got -5"),
        ("short_text_chars", "200", "short_text_chars must be a number of characters"),
    ],
)
def test_bad_options_name_the_option(option, value, message):
    with pytest.raises(ValueError, match=message):
        NearDuplicateDetector(**{option: value})


def test_concurrent_checks_of_one_text_keep_it_once():
    detector = NearDuplicateDetector()
    text = distinct_text(7)
    results: list[Match | None] = []
    barrier = threading.Barrier(8)

    def check(number: int) -> None:
        barrier.wait()
        results.append(detector.check_and_add(f"worker-{number}", text))

    threads = [threading.Thread(target=check, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert results.count(None) == 1
    assert len(detector) == 1


# --- The fingerprint index --------------------------------------------------------------


@pytest.mark.parametrize(
    "bits",
    [
        (0,),
        (63,),
        (5, 40),
        (15, 16),
        (1, 2, 3),  # all three inside band 0
        (49, 55, 62),  # all three inside band 3
        (3, 20, 37),
        (15, 31, 47),
    ],
)
def test_query_finds_flipped_fingerprints(bits):
    index = MemoryFingerprintIndex()
    original = 0x0123_4567_89AB_CDEF
    index.add("original", original)
    index.add("far", ~original & (2**64 - 1))
    assert index.query(flip(original, *bits)) == [("original", len(bits))]
    assert index.query(flip(original, *bits), max_distance=len(bits) - 1) == []
    assert index.nearest(flip(original, *bits)) == ("original", original, len(bits))


@pytest.mark.parametrize("bits", [(0, 1, 2, 3), (0, 16, 32, 48), (60, 61, 62, 63)])
def test_four_flipped_bits_are_not_returned(bits):
    index = MemoryFingerprintIndex()
    index.add("original", 0xFEDC_BA98_7654_3210)
    assert index.query(flip(0xFEDC_BA98_7654_3210, *bits), max_distance=3) == []


def test_max_distance_beyond_three_is_refused():
    index = MemoryFingerprintIndex()
    with pytest.raises(ValueError, match="between 0 and 3, got 4: 4 bands of 16 bits find"):
        index.query(0, max_distance=4)
    with pytest.raises(ValueError, match=r"\[0, 2\*\*64\)"):
        index.add("negative", -1)


def test_query_is_sorted_by_distance_then_insertion_order():
    index = MemoryFingerprintIndex()
    probe = 0xAAAA_AAAA_AAAA_AAAA
    index.add("d2-first", flip(probe, 0, 1))
    index.add("d1", flip(probe, 17))
    index.add("d3", flip(probe, 2, 3, 4))
    index.add("d0", probe)
    index.add("d2-second", flip(probe, 33, 50))
    index.add("d4", flip(probe, 5, 6, 7, 8))
    expected = [("d0", 0), ("d1", 1), ("d2-first", 2), ("d2-second", 2), ("d3", 3)]
    assert index.query(probe) == expected
    for _ in range(3 * tail_limit(0)):  # the same order once they are merged into bands
        index.add("filler", 0)
    assert index.query(probe) == expected


def test_same_document_twice_in_a_row_is_stored_once():
    index = MemoryFingerprintIndex()
    index.add("a", 5)
    index.add("a", 5)
    assert len(index) == 1
    index.add("b", 5)
    index.add("a", 5)
    assert index.query(5) == [("a", 0), ("b", 0), ("a", 0)]


@functools.cache
def random_index(size: int = 3 * tail_limit(0) + 100) -> tuple[MemoryFingerprintIndex, list[int]]:
    """An index with both a merged part and an unmerged tail."""
    rng = random.Random(2024)
    fingerprints = [rng.getrandbits(BITS) for _ in range(size)]
    index = MemoryFingerprintIndex()
    for number, fingerprint in enumerate(fingerprints):
        index.add(str(number), fingerprint)
    return index, fingerprints


@settings(max_examples=300, deadline=None)
@given(
    position=st.integers(min_value=0),
    bits=st.sets(st.integers(min_value=0, max_value=63), max_size=3),
    max_distance=st.integers(min_value=0, max_value=3),
)
def test_query_finds_every_fingerprint_within_three_bits(position, bits, max_distance):
    index, fingerprints = random_index()
    position %= len(fingerprints)
    probe = flip(fingerprints[position], *bits)
    found = index.query(probe, max_distance=max_distance)
    if len(bits) <= max_distance:
        assert (str(position), len(bits)) in found
    for key, distance in found:
        assert distance <= max_distance
        assert distance == hamming_distance(fingerprints[int(key)], probe)


def brute_force(fingerprints: np.ndarray, probe: int, max_distance: int) -> list[tuple[str, int]]:
    distances = np.bitwise_count(fingerprints ^ np.uint64(probe))
    hits = np.flatnonzero(distances <= max_distance)
    return [
        (str(row), int(distances[row]))
        for row in sorted(hits, key=lambda row: (distances[row], row))
    ]


def test_banded_results_equal_brute_force_on_20k_fingerprints():
    rng = random.Random(7)
    fingerprints: list[int] = []
    for _ in range(16_000):
        fingerprints.append(rng.getrandbits(BITS))
    for _ in range(2_000):  # planted neighbours: 1 to 5 bits from an earlier fingerprint
        fingerprints.append(
            flip(rng.choice(fingerprints), *rng.sample(range(BITS), rng.randint(1, 5)))
        )
    crowded_band_value = 0xBEEF
    for _ in range(2_000):  # a crowded bucket: all share band 1
        fingerprints.append((rng.getrandbits(BITS) & ~(0xFFFF << 16)) | crowded_band_value << 16)
    rng.shuffle(fingerprints)
    index = MemoryFingerprintIndex()
    for number, fingerprint in enumerate(fingerprints):
        index.add(str(number), fingerprint)
    assert len(index) == 20_000
    as_array = np.array(fingerprints, dtype=np.uint64)
    probes = [
        flip(rng.choice(fingerprints), *rng.sample(range(BITS), rng.randint(0, 4)))
        for _ in range(1_500)
    ]
    probes += [rng.getrandbits(BITS) for _ in range(200)]
    found_any = 0
    for probe in probes:
        for max_distance in range(MAX_QUERY_DISTANCE + 1):
            expected = brute_force(as_array, probe, max_distance)
            assert index.query(probe, max_distance) == expected, (hex(probe), max_distance)
            found_any += bool(expected)
    assert found_any > 2_500  # the comparison is not vacuous


def test_multi_probe_search_equals_brute_force_up_to_7_bits():
    """With each band also probed one bit away, every document within 7 bits is found
    (4 bands: one of them differs by at most one bit), and nothing beyond the radius."""
    rng = random.Random(11)
    fingerprints = [rng.getrandbits(BITS) for _ in range(6_000)]
    for _ in range(3_000):  # planted neighbours: 1 to 12 bits from an earlier fingerprint
        source = rng.choice(fingerprints)
        fingerprints.append(flip(source, *rng.sample(range(BITS), rng.randint(1, 12))))
    index = MemoryFingerprintIndex()
    for number, fingerprint in enumerate(fingerprints):
        index.add(str(number), fingerprint)
    as_array = np.array(fingerprints, dtype=np.uint64)
    found_beyond_3 = 0
    for _ in range(600):
        probe = flip(rng.choice(fingerprints), *rng.sample(range(BITS), rng.randint(0, 8)))
        distances = np.bitwise_count(as_array ^ np.uint64(probe))
        for radius in (7, 10):
            found = index.search(probe, radius, probe_neighbours=True)
            keys = {found_key for found_key, *_ in found}
            assert all(distance <= radius for _, _, distance, *_ in found)
            distances_found = [distance for _, _, distance, *_ in found]
            assert distances_found == sorted(distances_found)
            assert {str(n) for n in np.flatnonzero(distances <= 7)} <= keys
            assert keys <= {str(n) for n in np.flatnonzero(distances <= radius)}
            found_beyond_3 += sum(distance > 3 for distance in distances_found)
    assert found_beyond_3 > 500  # the comparison is not vacuous


def test_a_search_does_not_depend_on_when_the_tail_was_sorted():
    # 8 bits away, each band 2 bits off: no probe meets it, whether it waits in the
    # unsorted tail (a young index: a crawl of fewer than 1,024 pages) or was sorted into
    # the bands, and Redis's index, which has no tail, does not meet it either
    near = flip(0, 0, 1, 16, 17, 32, 33, 48, 49)
    met = flip(0, 0, 16, 17, 18, 32, 33, 48, 49)  # band 0 one bit off
    young, merged = MemoryFingerprintIndex(), MemoryFingerprintIndex()
    for index in (young, merged):
        index.add("near", near)
        index.add("met", met)
    merged._merge_tail()
    for index in (young, merged):
        assert [key for key, *_ in index.search(0, 8, probe_neighbours=True)] == ["met"]
    # nearer than that, the tail answers as the bands do: everything within the radius
    close = flip(0, 0, 1, 16, 17, 32, 33, 48)  # 7 bits
    young.add("close", close)
    assert [key for key, *_ in young.search(0, 8, probe_neighbours=True)] == ["close", "met"]


def test_queries_do_not_grow_memory():
    index, fingerprints = random_index()
    probes = [flip(fingerprint, 7) for fingerprint in fingerprints[:2000]]
    for probe in probes[:100]:  # warm up whatever numpy allocates once
        index.query(probe)
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for probe in probes:
            index.query(probe)
            index.nearest(probe)
        gc.collect()
        grown = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert grown < 1024


def test_content_hash_table_keeps_the_first_document():
    table = MemoryContentHashTable()
    hashes = [random.Random(n).randbytes(16) for n in range(3 * tail_limit(0))]
    for number, digest in enumerate(hashes):
        table.add(digest, f"doc-{number}", number)
    table.add(hashes[10], "later-copy", 10)
    assert len(table) == len(hashes) + 1
    assert table.get(hashes[10]) == ("doc-10", 10)
    assert table.get(hashes[-1]) == (f"doc-{len(hashes) - 1}", len(hashes) - 1)
    assert table.get(bytes(16)) is None


def test_document_table_keys_round_trip():
    documents = DocumentTable()
    keys = ["https://example.com/é", "", "中文", "\udcff-lone-surrogate", "a" * 1000]
    for number, key in enumerate(keys):
        documents.add(key, 2**64 - 1 - number)
    restored = DocumentTable.from_bytes(documents.to_bytes())
    assert [restored.key(row) for row in range(len(keys))] == keys
    assert restored.fingerprint(4) == 2**64 - 5


# --- Persistence ------------------------------------------------------------------------


def test_documents_persist_across_instances(tmp_path):
    texts = [distinct_text(n, words=2000) for n in range(30)]
    with NearDuplicateDetector() as detector:
        detector.open(tmp_path, snapshot_every=7)
        for number, text in enumerate(texts):
            assert detector.check_and_add(f"doc-{number}", text) is None
    assert sorted(path.name for path in tmp_path.iterdir()) == [
        "content-index.journal",
        "content-index.snapshot",
        "state-files.json",
    ]
    restarted = NearDuplicateDetector()
    restarted.open(tmp_path)
    assert len(restarted) == 30
    for number, text in enumerate(texts):
        assert restarted.check_and_add("again", text) == Match(
            f"doc-{number}", 0, "exact", simhash(text)
        )
    # Near duplicates are found through the reloaded index too.
    edited = texts[3] + " postscript"
    assert restarted.check_and_add("edited", edited).key == "doc-3"
    restarted.close()


@pytest.mark.parametrize("from_snapshot", [True, False])
def test_entries_of_near_copies_persist(tmp_path, from_snapshot):
    page = simhash(distinct_text(900, words=800))
    copy, farther = flip(page, *range(6)), flip(page, *range(6), *range(16, 24))  # 14 bits
    minhash = bytes(range(1, 65))

    def text(fingerprint: int) -> TextFingerprint:
        return TextFingerprint(5_000, fingerprint, fingerprint.to_bytes(16), minhash)

    state = tmp_path / "state"
    detector = NearDuplicateDetector()
    detector.open(state, snapshot_every=1 if from_snapshot else 1_000)
    detector.check_fingerprinted("page", text(page))
    assert detector.check_fingerprinted("copy", text(copy)).match.key == "page"
    # read as a crawl killed now would leave it: the journal alone, or the snapshot
    shutil.copytree(state, tmp_path / "left")
    detector.close()
    restarted = NearDuplicateDetector()
    restarted.open(tmp_path / "left")
    assert (len(restarted), restarted._state.copies) == (1, 1)
    later = restarted.check_fingerprinted("later", text(farther), add=False).match
    assert later is not None and (later.key, later.distance) == ("page", 8)
    restarted.close()


KILL_SCRIPT = """
import os, signal, sys
from crawler.content.neardup import NearDuplicateDetector
from tests.content.test_neardup import distinct_text

detector = NearDuplicateDetector()
detector.open(sys.argv[1], snapshot_every=int(sys.argv[3]))
for number in range(int(sys.argv[2])):
    assert detector.check_and_add(f"doc-{number}", distinct_text(number)) is None
os.kill(os.getpid(), signal.SIGKILL)
"""


@pytest.mark.parametrize("snapshot_every", [1_000, 17])
def test_kill_9_loses_no_added_document(tmp_path, snapshot_every):
    documents = 120
    process = subprocess.run(
        [sys.executable, "-c", KILL_SCRIPT, str(tmp_path), str(documents), str(snapshot_every)],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert process.returncode == -signal.SIGKILL, process.stderr
    detector = NearDuplicateDetector()
    detector.open(tmp_path)
    assert len(detector) == documents
    for number in range(documents):
        decision = detector.check("again", distinct_text(number), add=False)
        assert decision.match == Match(f"doc-{number}", 0, "exact", decision.fingerprint)
    detector.close()


def test_a_kill_between_snapshot_and_journal_restart_replays_nothing_twice(tmp_path):
    detector = NearDuplicateDetector()
    detector.open(tmp_path, snapshot_every=1_000)
    for number in range(10):
        detector.check_and_add(f"doc-{number}", distinct_text(number))
    journal_path = tmp_path / "content-index.journal"
    journal_before_snapshot = journal_path.read_bytes()
    assert detector._state is not None
    detector._state.snapshot()
    detector._state.journal.close()
    journal_path.write_bytes(journal_before_snapshot)  # as if killed before the restart

    restarted = NearDuplicateDetector()
    restarted.open(tmp_path)
    assert len(restarted) == 10
    assert len(restarted.index) == 10
    assert restarted.index.query(simhash(distinct_text(4)), 0) == [("doc-4", 0)]
    restarted.close()


def test_state_written_with_other_rules_names_the_difference(tmp_path):
    with NearDuplicateDetector(fold_repeats=False) as detector:
        detector.open(tmp_path)
        detector.check_and_add("a", distinct_text(1))
    other = NearDuplicateDetector(fold_repeats=True, min_repeats=3)
    with pytest.raises(StateFileError) as excinfo:
        other.open(tmp_path)
    message = str(excinfo.value)
    assert "fold_repeats: False -> True" in message
    assert "min_repeats: None -> 3" in message
    assert "content-index.snapshot" in message
    assert len(other) == 0
    # Thresholds are not part of the rules: they may change between runs.
    with NearDuplicateDetector(short_threshold=1, long_threshold=2, min_chars=10) as lenient:
        lenient.open(tmp_path)
        assert len(lenient) == 1


def test_signature_records_fingerprint_settings_and_band_layout():
    signature = content_signature(fold_repeats=True, min_repeats=2)
    assert signature["fingerprint.feature_hash"] == "codepoint-polynomial-fmix64-pairs"
    assert signature["fingerprint.version"] >= 1
    assert {name: signature[name] for name in band_layout()} == band_layout()
    assert (signature["fold_repeats"], signature["min_repeats"]) == (True, 2)
    assert not any("threshold" in name for name in signature)


def test_a_corrupt_snapshot_is_reported_and_left_in_place(tmp_path):
    with NearDuplicateDetector() as detector:
        detector.open(tmp_path)
        detector.check_and_add("a", distinct_text(1))
    snapshot = tmp_path / "content-index.snapshot"
    data = bytearray(snapshot.read_bytes())
    data[-5] ^= 0xFF
    snapshot.write_bytes(bytes(data))
    detector = NearDuplicateDetector()
    with pytest.raises(StateFileError, match="is corrupt: its content does not match"):
        detector.open(tmp_path)
    detector.close()  # writes nothing: the damaged state stays for inspection
    assert snapshot.read_bytes() == bytes(data)


def test_a_snapshot_with_inconsistent_sections_is_reported(tmp_path):
    state = JournaledContentIndex(tmp_path, content_signature(fold_repeats=False, min_repeats=2))
    state.open()
    state.add("a", 1, bytes(16), near_indexed=True)
    state.close()
    from crawler.state.persistence import read_snapshot, write_snapshot

    snapshot_path = tmp_path / "content-index.snapshot"
    loaded = read_snapshot(snapshot_path, "content-index", state.signature)
    assert loaded is not None
    params, payload = loaded
    write_snapshot(snapshot_path, "content-index", state.signature, params, payload[:-1])
    with pytest.raises(StateFileError, match=r"content-index\.snapshot is corrupt: sections of"):
        NearDuplicateDetector().open(tmp_path)


def test_a_corrupt_journal_record_is_reported(tmp_path):
    detector = NearDuplicateDetector()
    detector.open(tmp_path)
    for number in range(3):
        detector.check_and_add(f"doc-{number}", distinct_text(number))
    assert detector._state is not None
    detector._state.journal.close()  # as a kill would leave it: no snapshot
    journal = tmp_path / "content-index.journal"
    data = bytearray(journal.read_bytes())
    data[data.index(b"doc-0")] ^= 0xFF  # inside the first record, not a torn tail
    journal.write_bytes(bytes(data))
    with pytest.raises(StateFileError, match=r"content-index\.journal is corrupt: record at"):
        NearDuplicateDetector().open(tmp_path)


def test_only_a_new_in_memory_detector_can_be_opened(tmp_path):
    detector = NearDuplicateDetector()
    detector.check_and_add("a", distinct_text(1))
    with pytest.raises(ValueError, match="before any document is added"):
        detector.open(tmp_path)
    custom = NearDuplicateDetector(index=MemoryFingerprintIndex())
    with pytest.raises(ValueError, match="default in-memory storage"):
        custom.open(tmp_path)
    assert list(tmp_path.iterdir()) == []


# --- Memory -----------------------------------------------------------------------------


def test_100k_documents_take_less_than_136_bytes_each():
    """What is measured: every byte the detector's storage allocates (tracemalloc, current
    size after the adds) for 100,000 documents added through ``add_fingerprinted``: the
    document table (with its 64-byte MinHash signatures), the fingerprint index and the
    content-hash table, minus the UTF-8 bytes of the keys themselves (the caller's key
    strings are not kept). 116 bytes a document, plus the 1 MiB of band tables (10 bytes
    a document here, 1 at a million) and array slack."""
    count = 100_000
    rng = random.Random(3)
    keys = [f"https://example.com/articles/{number}" for number in range(count)]
    fingerprints = [rng.getrandbits(BITS) for _ in range(count)]
    hashes = [rng.randbytes(16) for _ in range(count)]
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        detector = NearDuplicateDetector()
        for key, fingerprint, digest in zip(keys, fingerprints, hashes, strict=True):
            detector.add_fingerprinted(key, fingerprint, digest, minhash=digest * 4)
        gc.collect()
        used = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert len(detector) == len(detector.index) == count
    key_bytes = sum(len(key) for key in keys)
    assert isinstance(detector.index, MemoryFingerprintIndex)
    assert detector.index.documents.key_bytes == key_bytes
    per_document = (used - key_bytes) / count
    assert per_document < 136, f"{per_document:.1f} bytes a document without keys"
    assert per_document > 80  # the measurement is real: the three signatures take 80


# --- Verification and the second stage ----------------------------------------------------


def index_page(rng: random.Random, entries: int = 300) -> str:
    """An index page: one name a line, each followed by the same phrase."""
    names = (
        "".join(rng.choice("abcdefghijklmnop") for _ in range(rng.randint(3, 9)))
        for _ in range(entries)
    )
    return "\n".join(f"{name}() (in module os)" for name in names)


def test_a_first_stage_match_that_the_signatures_disagree_on_is_rejected():
    detector = NearDuplicateDetector()
    earlier, later = distinct_text(20, words=300), distinct_text(21, words=300)
    assert detector.check_and_add("earlier", earlier) is None
    # The later text gets the earlier one's SimHash (distance 0), as index pages of one
    # site can; its MinHash stays its own.
    own = detector.fingerprint(later)
    same_simhash = TextFingerprint(
        own.normalized_length, simhash(earlier), own.content_hash, own.minhash
    )
    decision = detector.check_fingerprinted("later", same_simhash)
    assert (decision.match, decision.added) == (None, True)
    assert decision.rejected is not None
    assert (decision.rejected.key, decision.rejected.distance) == ("earlier", 0)
    assert (decision.rejected.stage, decision.rejected.kind) == ("first", "near")
    assert decision.rejected.similarity < 0.2
    assert len(detector) == 2
    # without verification the same look-up drops it
    trusting = NearDuplicateDetector(min_similarity=0.0)
    trusting.check_and_add("earlier", earlier)
    match = trusting.check_fingerprinted("later", same_simhash).match
    assert match is not None
    assert (match.key, match.distance) == ("earlier", 0)


def test_index_pages_of_one_repeated_phrase_are_far_apart_and_both_kept():
    rng = random.Random(5)
    first, second = index_page(rng), index_page(rng)
    # weights grow with the logarithm of a count: the phrase does not decide the fingerprint
    assert hamming_distance(simhash(first), simhash(second)) > DEFAULT_SECOND_STAGE_DISTANCE
    detector = NearDuplicateDetector()
    assert detector.check_and_add("index-a", first) is None
    assert detector.check_and_add("index-n", second) is None
    assert len(detector) == 2


def printed_copy(text: str) -> str:
    return "Printed on 12 March 2024 at 14:05 UTC from https://example.org/articles/long\n" + text


def test_the_second_stage_finds_a_copy_past_the_first_stage_threshold():
    rng = random.Random(8)
    found = second = 0
    for number in range(30):
        original = distinct_text(100 + number, words=rng.randint(400, 900))
        copy = printed_copy(original)
        detector = NearDuplicateDetector()
        detector.check_and_add("original", original)
        decision = detector.check("copy", copy)
        distance = hamming_distance(simhash(original), simhash(copy))
        if decision.match is not None:
            found += 1
            assert decision.match.key == "original"
            assert decision.match.stage == ("first" if distance <= 3 else "second")
            second += decision.match.stage == "second"
        first_only = NearDuplicateDetector(second_stage=False)
        first_only.check_and_add("original", original)
        if distance > 3:
            assert first_only.check_and_add("copy", copy) is None
    assert found == 30
    assert second > 0  # the header line moved some fingerprints past 3 bits


def test_the_second_stage_asks_for_more_similarity_than_the_first():
    """Two pages of one template sharing three fifths of their word pairs (two reference
    pages of one manual): a candidate the first stage accepts at that similarity, the second
    stage, whose fingerprints are already farther apart, rejects."""
    shared = distinct_text(300, words=600).split()
    earlier = " ".join(shared + distinct_text(301, words=200).split())
    later_text = " ".join(shared + distinct_text(302, words=200).split())
    detector = NearDuplicateDetector()
    assert detector.second_stage_min_similarity == 0.7
    detector.check_and_add("earlier", earlier)
    own = detector.fingerprint(later_text)
    similarity = estimated_jaccard(detector.fingerprint(earlier).minhash, own.minhash)
    assert 0.5 <= similarity < 0.7
    for distance, stage in ((2, "first"), (6, "second")):
        moved = flip(simhash(earlier), *range(distance))
        decision = detector.check_fingerprinted(
            f"later-{distance}",
            TextFingerprint(own.normalized_length, moved, own.content_hash, own.minhash),
            add=False,
        )
        if stage == "first":
            assert decision.match is not None
            assert (decision.match.key, decision.match.stage) == ("earlier", "first")
        else:
            assert decision.match is None
            assert decision.rejected is not None
            assert (decision.rejected.stage, decision.rejected.distance) == ("second", 6)
    lenient = NearDuplicateDetector(min_similarity=0.0)
    assert lenient.second_stage_min_similarity == 0.4
    lenient.check_and_add("earlier", earlier)
    moved = flip(simhash(earlier), *range(6))
    match = lenient.check_fingerprinted(
        "later", TextFingerprint(own.normalized_length, moved, own.content_hash, own.minhash)
    ).match
    assert match is not None and match.stage == "second"


def page_size_cases(detector: NearDuplicateDetector) -> None:
    """Shared by the memory and Redis tests: an index page of every letter whose
    extraction kept one letter's section is not that letter's page."""
    letter = distinct_text(400, words=2_000)
    text = detector.fingerprint(letter)
    assert 10_000 < text.normalized_length < 20_000
    letter_page = replace(text, page_size=page_size_class(16_000))
    assert detector.check_fingerprinted("genindex-P", letter_page).added
    every_letter = detector.check_fingerprinted(
        "genindex-all", replace(text, page_size=page_size_class(400_000))
    )
    assert (every_letter.match, every_letter.added) == (None, True)
    assert every_letter.rejected is not None
    assert (every_letter.rejected.key, every_letter.rejected.kind) == ("genindex-P", "exact")
    assert every_letter.rejected.page_sizes_differ
    # the same text on a page of about its size (another template) is a copy
    other_template = detector.check_fingerprinted(
        "letter-copy", replace(text, page_size=page_size_class(30_000))
    )
    assert other_template.match is not None and other_template.match.key == "genindex-P"
    # text given alone: no page size, no such doubt
    alone = detector.check_fingerprinted("alone", text, add=False)
    assert alone.match is not None and alone.match.kind == "exact"
    # near copies (one line more) go with the page of their own size
    printed = detector.fingerprint(
        "Printed on 3 May 2024 from https://docs.test/genindex " + letter
    )
    for key, page_chars, original in (
        ("printed-all", 420_000, "genindex-all"),
        ("printed-p", 17_000, "genindex-P"),
    ):
        decision = detector.check_fingerprinted(
            key, replace(printed, page_size=page_size_class(page_chars)), add=False
        )
        assert decision.match is not None and decision.match.key == original


def test_a_text_that_is_a_small_part_of_a_much_larger_page_does_not_drop_it():
    page_size_cases(NearDuplicateDetector())
    # a near copy on a page many times larger than the only page of that text stays
    detector = NearDuplicateDetector()
    letter = distinct_text(400, words=2_000)
    detector.check_fingerprinted(
        "genindex-P", replace(detector.fingerprint(letter), page_size=page_size_class(16_000))
    )
    printed = detector.fingerprint("Printed on 3 May 2024 " + letter)
    lone = detector.check_fingerprinted(
        "printed-all", replace(printed, page_size=page_size_class(420_000))
    )
    assert lone.match is None
    assert lone.rejected is not None and lone.rejected.page_sizes_differ


def numbers_cases(detector: NearDuplicateDetector) -> None:
    """Shared by the memory and Redis tests: two product pages of one template, full of
    figures, that differ by a capacity and a SKU are two pages; a printed copy is a copy."""
    rng = random.Random(7)
    rows = [f"{word(rng)} {number} {word(rng)}" for number in rng.sample(range(10, 999), 150)]

    def product(capacity: int, sku: int) -> str:
        return f"{' '.join(rows)} Capacity: {capacity} GB. SKU {sku}."

    assert detector.check_and_add("drive-500", product(500, 40_001)) is None
    sibling = detector.check("drive-1000", product(1000, 40_038))
    assert (sibling.match, sibling.added) == (None, True)
    assert sibling.rejected is not None and sibling.rejected.key == "drive-500"
    assert sibling.rejected.numbers_differ
    printed = detector.check("drive-500-print", "Printed on 3 May 2024. " + product(500, 40_001))
    assert printed.match is not None and printed.match.key == "drive-500"
    # a figure less, a code more: each names a number the other lacks, but not of one kind
    words = " ".join(word(rng) for _ in range(400))
    assert detector.check_and_add("guide", f"{words} See chapter 12.") is None
    mirror = detector.check("guide-mirror", f"{words} See the chapter. Ref A7.")
    assert mirror.match is not None and mirror.match.key == "guide"
    # the new voltage is named elsewhere on the page too: only how often each is named
    # tells the two sockets apart
    spec = " ".join(f"{word(rng)} {word(rng)}" for _ in range(300))
    assert detector.check_and_add("socket-120", f"{spec} 120 V, 120 V input, 240 V.") is None
    other = detector.check("socket-240", f"{spec} 240 V, 120 V input, 240 V.")
    assert other.match is None
    assert other.rejected is not None and other.rejected.key == "socket-120"
    assert other.rejected.numbers_differ


def copies_cases(detector: NearDuplicateDetector) -> None:
    """Shared by the memory and Redis tests: a near copy is indexed as one more
    fingerprint of the page it copies, so a copy two edits away from the page is found;
    a candidate found that way is verified against the page's signatures, not the copy's."""
    page_minhash = bytes(range(1, 65))
    copy_minhash = bytes(range(101, 109)) + page_minhash[8:]  # J 0.87 with the page's
    length, page = 5_000, simhash(distinct_text(900, words=800))

    def text(fingerprint: int, minhash: bytes, numbers: int = 0) -> TextFingerprint:
        return TextFingerprint(length, fingerprint, fingerprint.to_bytes(16), minhash, numbers)

    inches = numbers_signature("a 4 inch screen")
    assert detector.check_fingerprinted("page", text(page, page_minhash, inches)).match is None
    copy = flip(page, *range(6))  # a paragraph dropped, and with it the size
    found = detector.check_fingerprinted("copy", text(copy, copy_minhash)).match
    assert found is not None and (found.key, found.stage, found.distance) == ("page", "second", 6)
    # 14 bits from the page, 8 from its copy: found through the copy, named by the page
    farther = flip(copy, *range(16, 24))
    assert hamming_distance(farther, page) == 14 > DEFAULT_SECOND_STAGE_DISTANCE
    later = detector.check_fingerprinted("later", text(farther, copy_minhash)).match
    assert later is not None and (later.key, later.distance) == ("page", 8)
    # near the copy, and sharing three quarters of its word pairs, but only five eighths
    # of the page's: not a copy of the page
    drifted = copy_minhash[:8] + bytes(range(201, 217)) + copy_minhash[24:]
    assert estimated_jaccard(drifted, copy_minhash) >= detector.second_stage_min_similarity
    assert estimated_jaccard(drifted, page_minhash) < detector.second_stage_min_similarity
    decision = detector.check_fingerprinted(
        "drifted", text(flip(copy, *range(32, 36)), drifted), add=False
    )
    assert decision.match is None
    assert decision.rejected is not None and decision.rejected.key == "page"
    # the page's sibling of another size matches the copy, which lacks the size: the
    # page's numbers tell them apart
    sibling = text(flip(copy, 50), copy_minhash, numbers_signature("an 8 inch screen"))
    decision = detector.check_fingerprinted("sibling", sibling)
    assert decision.match is None
    assert decision.rejected is not None and decision.rejected.numbers_differ


def test_a_copy_nearer_an_earlier_copy_than_the_page_is_found():
    copies_cases(NearDuplicateDetector())


@pytest.mark.parametrize("shared", [False, True])
def test_copies_are_not_indexed_when_switched_off(shared, request):
    index = None
    if shared:
        from tests.content.test_index_redis import index_on

        index = index_on(request.getfixturevalue("redis_server"), "no-copies:content")
    detector = NearDuplicateDetector(index_copies=False, shared_index=index)
    minhash = bytes(range(1, 65))
    page = simhash(distinct_text(900, words=800))
    copy, farther = flip(page, *range(6)), flip(page, *range(6), *range(16, 24))  # 14 bits

    def text(fingerprint: int) -> TextFingerprint:
        return TextFingerprint(5_000, fingerprint, fingerprint.to_bytes(16), minhash)

    assert detector.check_fingerprinted("page", text(page)).match is None
    assert detector.check_fingerprinted("copy", text(copy)).match.key == "page"
    decision = detector.check_fingerprinted("later", text(farther), add=False)
    assert decision.match is None and decision.rejected is None
    assert len(detector) == 1


def test_product_pages_that_differ_by_a_size_are_both_kept():
    numbers_cases(NearDuplicateDetector())


def test_the_second_stage_is_for_long_texts_only():
    detector = NearDuplicateDetector()
    assert detector.second_stage_for(150) is None
    assert detector.second_stage_for(5000) == DEFAULT_SECOND_STAGE_DISTANCE
    assert NearDuplicateDetector(second_stage=False).second_stage_for(5000) is None


@pytest.mark.parametrize("text", ["", "   ", "!!! ... ???", "\u200b"])
def test_empty_texts_are_never_duplicates(text):
    detector = NearDuplicateDetector(min_chars=0)
    first = detector.check("first", text)
    second = detector.check("second", text)
    assert (first.match, first.added, second.match, second.added) == (None, False, None, False)
    assert len(detector) == 0


def test_a_page_fetched_again_is_not_its_own_copy():
    detector = NearDuplicateDetector()
    text = distinct_text(30)
    assert detector.check_and_add("https://a.test/page", text) is None
    again = detector.check("https://a.test/page", text + " Updated.")
    assert (again.match, again.refetched, again.added) == (None, True, False)
    assert len(detector) == 1
    other = detector.check("https://a.test/copy", text)
    assert other.match is not None
    assert other.match.key == "https://a.test/page"


def test_a_refetch_of_a_text_kept_since_open_is_repeated(tmp_path):
    text = distinct_text(30)
    with NearDuplicateDetector() as detector:
        detector.open(tmp_path)
        assert detector.check_and_add("https://a.test/page", text) is None
        again = detector.check("https://a.test/page", text)
        assert (again.match, again.refetched, again.repeated) == (None, True, True)
        changed = detector.check("https://a.test/page", text + " Updated.")
        assert (changed.refetched, changed.repeated) == (True, False)
    # kept by an earlier run: a re-fetch, not repeated
    with NearDuplicateDetector() as detector:
        detector.open(tmp_path)
        later = detector.check("https://a.test/page", text)
        assert (later.match, later.refetched, later.repeated) == (None, True, False)


@pytest.mark.parametrize(
    ("option", "value"),
    [
        ("min_similarity", 1.5),
        ("min_similarity", -0.1),
        ("second_stage_distance", 2),
        ("second_stage_distance", 17),
    ],
)
def test_bad_verification_options_are_refused(option, value):
    with pytest.raises(ValueError, match=option):
        NearDuplicateDetector(**{option: value})


def test_the_signature_survives_a_restart(tmp_path):
    text = distinct_text(40, words=600)
    with NearDuplicateDetector() as detector:
        detector.open(tmp_path)
        detector.check_and_add("original", text)
    restarted = NearDuplicateDetector()
    restarted.open(tmp_path)
    match = restarted.check_and_add("copy", printed_copy(text))
    restarted.close()
    assert match is not None
    assert match.key == "original"
    assert match.similarity >= restarted.min_similarity
