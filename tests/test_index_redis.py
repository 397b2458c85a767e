"""The Redis content index, against a real redis-server."""

from __future__ import annotations

import random
import threading

import pytest

from crawler.index.memory import DocumentTable, MemoryFingerprintIndex
from crawler.index.redis import RedisContentIndex
from crawler.neardup import NearDuplicateDetector
from crawler.redis_access import RedisConnection, RedisSignatureMismatch

ARTICLE = " ".join(
    f"Paragraph {i} of a long article about harbour cranes, tides and the people of the "
    f"waterfront, with enough words to be fingerprinted as a long text number {i}."
    for i in range(12)
)


def index_on(server, base="spider:content") -> RedisContentIndex:
    index = RedisContentIndex(RedisConnection(server.url), base)
    index.open({"rules": 1})
    return index


def flip(fingerprint: int, *bits: int) -> int:
    for bit in bits:
        fingerprint ^= 1 << bit
    return fingerprint


def test_exact_near_and_new(redis_server):
    index = index_on(redis_server)
    base = 0x0123456789ABCDEF
    assert index.check_and_add("a", base, b"h" * 16, 3) is None
    assert index.check_and_add("b", base, b"h" * 16, 3) == ("exact", "a", base, 0)
    near = flip(base, 1, 17, 40)
    assert index.check_and_add("c", near, b"x" * 16, 3) == ("near", "a", base, 3)
    assert index.check_and_add("d", near, b"x" * 16, 2) is None  # 3 bits > threshold 2
    assert len(index) == 2


def test_exact_only_for_short_texts(redis_server):
    index = index_on(redis_server)
    assert index.check_and_add("a", 7, b"s" * 16, None) is None
    assert index.check_and_add("b", flip(7, 3), b"t" * 16, 3) is None  # not in the bands
    assert index.check_and_add("c", 7, b"s" * 16, None) == ("exact", "a", 7, 0)


def test_query_matches_brute_force_and_memory_index(redis_server):
    rng = random.Random(3)
    index = index_on(redis_server)
    memory = MemoryFingerprintIndex(DocumentTable())
    fingerprints = [rng.getrandbits(64) for _ in range(300)]
    fingerprints += [
        flip(fp, *rng.sample(range(64), rng.randint(1, 4))) for fp in fingerprints[:100]
    ]
    for number, fingerprint in enumerate(fingerprints):
        index.add(f"doc{number}", fingerprint)
        memory.add(f"doc{number}", fingerprint)
    for probe in fingerprints[:120]:
        expected = sorted(
            (f"doc{n}", (probe ^ fp).bit_count())
            for n, fp in enumerate(fingerprints)
            if (probe ^ fp).bit_count() <= 3
        )
        assert sorted(index.query(probe, 3)) == expected
        assert sorted(memory.query(probe, 3)) == expected
    with pytest.raises(ValueError, match="max_distance must be between 0 and 3"):
        index.query(1, 4)


def test_workers_racing_on_one_article_keep_exactly_one(redis_server):
    """Eight workers, each with its own connection, check the same text at once."""
    detectors = [NearDuplicateDetector(shared_index=index_on(redis_server)) for _ in range(8)]
    barrier = threading.Barrier(len(detectors))
    results: list[object] = [None] * len(detectors)

    def work(number: int) -> None:
        barrier.wait()
        results[number] = detectors[number].check_and_add(f"https://mirror{number}/a", ARTICLE)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(len(detectors))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    kept = [n for n, result in enumerate(results) if result is None]
    assert len(kept) == 1
    assert {result.key for result in results if result is not None} == {
        f"https://mirror{kept[0]}/a"
    }
    assert len(detectors[0]) == 1


def test_shared_detector_sees_other_workers_documents(redis_server):
    first = NearDuplicateDetector(shared_index=index_on(redis_server))
    second = NearDuplicateDetector(shared_index=index_on(redis_server))
    assert first.check_and_add("https://a/1", ARTICLE) is None
    edited = ARTICLE.replace("harbour cranes", "harbour crane", 1)
    match = second.check_and_add("https://b/1", edited)
    assert match is not None
    assert (match.key, match.kind) == ("https://a/1", "near")
    assert match.distance <= 3


def test_signature_mismatch_names_the_difference(redis_server):
    index_on(redis_server)
    other = RedisContentIndex(RedisConnection(redis_server.url), "spider:content")
    with pytest.raises(RedisSignatureMismatch, match="rules: 1 -> 2"):
        other.open({"rules": 2})
