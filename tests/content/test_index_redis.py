"""The Redis content index, against a real redis-server."""

from __future__ import annotations

import json
import random
import threading

import pytest
import redis

from crawler.content.fingerprints import numbers_conflict, numbers_signature
from crawler.content.index import SharedMatch
from crawler.content.index.memory import DocumentTable, MemoryFingerprintIndex
from crawler.content.index.redis import _DISTANCE, RedisContentIndex
from crawler.content.neardup import NearDuplicateDetector
from crawler.content.text_fingerprints import TextFingerprint
from crawler.redis.connection import RedisConnection, RedisSignatureMismatch
from tests.content.test_neardup import copies_cases, numbers_cases, page_size_cases

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


SIGNATURE = bytes(range(1, 65))


def test_exact_near_and_new(redis_server):
    index = index_on(redis_server)
    base = 0x0123456789ABCDEF
    assert index.check_and_add("a", base, b"h" * 16, 3, minhash=SIGNATURE) is None
    assert index.check_and_add("b", base, b"h" * 16, 3) == SharedMatch(
        True, "a", base, 0, "exact", 1.0
    )
    near = flip(base, 1, 17, 40)
    found = index.check_and_add("c", near, b"x" * 16, 3, minhash=SIGNATURE, add=False)
    assert found == SharedMatch(True, "a", base, 3, "first", 1.0)
    assert index.check_and_add("d", near, b"y" * 16, 2, minhash=SIGNATURE) is None  # 3 > 2
    assert len(index) == 2
    # a near copy added is one more entry of the document it copies
    copy = flip(base, 2, 18, 41)
    assert index.check_and_add("e", copy, b"z" * 16, 3, minhash=SIGNATURE).key == "a"
    assert (len(index), index.copies) == (2, 1)
    assert index.check_and_add("f", copy, b"z" * 16, 3) == SharedMatch(
        True, "a", copy, 0, "exact", 1.0
    )


def test_a_near_match_is_verified_by_the_signatures(redis_server):
    index = index_on(redis_server)
    base = 0x0123456789ABCDEF
    index.check_and_add("a", base, b"h" * 16, 3, minhash=SIGNATURE)
    half = SIGNATURE[:32] + bytes(range(101, 133))  # 32 of 64 bytes agree: J about 0.5
    other = bytes(range(101, 165))
    near = flip(base, 5)
    rejected = index.check_and_add(
        "b", near, b"b" * 16, 3, minhash=other, min_similarity=0.5, add=False
    )
    assert rejected == SharedMatch(False, "a", base, 1, "first", 0.0)
    accepted = index.check_and_add(
        "c", near, b"c" * 16, 3, minhash=half, min_similarity=0.49, add=False
    )
    assert accepted is not None
    assert (accepted.accepted, accepted.key, accepted.similarity) == (True, "a", 0.498)
    # a rejected document is kept as new
    assert index.check_and_add("d", near, b"d" * 16, 3, minhash=other, min_similarity=0.5)
    assert len(index) == 2


def test_the_second_stage_probes_bands_one_bit_away(redis_server):
    index = index_on(redis_server)
    base = 0x0123456789ABCDEF
    index.check_and_add("a", base, b"h" * 16, 3, minhash=SIGNATURE)
    # 7 bits: at most one in some band, so a one-bit-away probe finds it
    far = flip(base, 0, 1, 16, 17, 32, 33, 48)
    assert index.check_and_add("b", far, b"b" * 16, 3, minhash=SIGNATURE, add=False) is None
    found = index.check_and_add(
        "b", far, b"b" * 16, 3, minhash=SIGNATURE, second_stage_distance=10, add=False
    )
    assert found == SharedMatch(True, "a", base, 7, "second", 1.0)
    assert (
        index.check_and_add(
            "c", far, b"c" * 16, 3, minhash=SIGNATURE, second_stage_distance=6, add=False
        )
        is None
    )


def test_the_detector_decides_alike_on_redis_and_in_memory(redis_server):
    rng = random.Random(4)
    texts = []
    for number in range(40):
        words = [f"w{rng.randrange(5000)}" for _ in range(rng.randint(300, 700))]
        text = " ".join(words)
        texts.append((f"doc-{number}", text))
        if number % 3 == 0:
            texts.append((f"print-{number}", "Printed on 3 May 2024 from https://x.test/a " + text))
        if number % 4 == 0:
            cut = len(words) // 3
            texts.append((f"cut-{number}", " ".join(words[:cut] + words[cut + 40 :])))
    rng.shuffle(texts)
    shared = NearDuplicateDetector(shared_index=index_on(redis_server, "alike:content"))
    memory = NearDuplicateDetector()
    decisions = []
    for key, text in texts:
        on_redis, in_memory = shared.check(key, text), memory.check(key, text)
        decisions.append(on_redis.match.key if on_redis.match else None)
        assert on_redis.match == in_memory.match, key
        assert on_redis.rejected == in_memory.rejected, key
    # nearly every copy is found (a third of the text cut is a hard one)
    assert sum(match is not None for match in decisions) >= len(texts) - 40 - 4


def test_both_indexes_decide_alike_on_a_copy_beyond_the_second_stages_reach(redis_server):
    # as Django's release notes 3.0.10 and 2.2.16 (one text, two versions): fingerprints 10
    # bits apart, each band at least 2 bits off, which no one-bit probe meets: neither index
    # matches them, the in-memory one whether the earlier page waits in its unsorted tail
    # or was sorted into the bands; 9 bits with a band one bit off, each index does
    earlier = 0x0123456789ABCDEF
    later = flip(earlier, 0, 1, 16, 17, 32, 33, 34, 35, 48, 49)
    near = flip(earlier, 0, 16, 17, 32, 33, 34, 35, 48, 49)  # band 0 one bit off
    detectors = (
        NearDuplicateDetector(shared_index=index_on(redis_server, "bands:content")),
        NearDuplicateDetector(),  # the earlier page in the unsorted tail
        NearDuplicateDetector(),  # ... and sorted into the bands
    )
    for detector in detectors:
        detector.check_fingerprinted(
            "notes-2.2.16", TextFingerprint(2_000, earlier, b"a" * 16, SIGNATURE)
        )
    detectors[2].index._merge_tail()
    for detector in detectors:
        decision = detector.check_fingerprinted(
            "notes-3.0.10", TextFingerprint(2_000, later, b"b" * 16, SIGNATURE), add=False
        )
        assert decision.match is None
        match = detector.check_fingerprinted(
            "notes-3.0.11", TextFingerprint(2_000, near, b"c" * 16, SIGNATURE), add=False
        ).match
        assert match is not None and (match.key, match.distance, match.stage) == (
            "notes-2.2.16",
            9,
            "second",
        )


def test_the_page_size_check_holds_on_redis(redis_server):
    page_size_cases(NearDuplicateDetector(shared_index=index_on(redis_server, "sizes:content")))


def test_a_copy_nearer_an_earlier_copy_than_the_page_is_found_on_redis(redis_server):
    copies_cases(NearDuplicateDetector(shared_index=index_on(redis_server, "copies:content")))


def test_the_numbers_check_holds_on_redis(redis_server):
    numbers_cases(NearDuplicateDetector(shared_index=index_on(redis_server, "numbers:content")))


def test_exact_only_for_short_texts(redis_server):
    index = index_on(redis_server)
    assert index.check_and_add("a", 7, b"s" * 16, None) is None
    assert index.check_and_add("b", flip(7, 3), b"t" * 16, 3) is None  # not in the bands
    assert index.check_and_add("c", 7, b"s" * 16, None) == SharedMatch(
        True, "a", 7, 0, "exact", 1.0
    )


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


def test_an_index_of_another_release_is_refused_naming_the_release(redis_server):
    RedisContentIndex(RedisConnection(redis_server.url), "spider:content").open(
        {"rules": 1, "fingerprint.version": 4}
    )
    other = RedisContentIndex(RedisConnection(redis_server.url), "spider:content")
    with pytest.raises(RedisSignatureMismatch, match="another release of the extension"):
        other.open({"rules": 1, "fingerprint.version": 5})


def test_an_index_in_the_earlier_layout_is_refused_not_misread(redis_server):
    client = RedisConnection(redis_server.url)
    client.open()
    # what the previous layout wrote: its rules signature, without a layout, and a count
    client.client.set("{spider:content}:signature", json.dumps({"rules": 1}))
    client.client.set("{spider:content}:count", 12)
    with pytest.raises(RedisSignatureMismatch) as refused:
        index_on(redis_server)
    assert "redis content index layout: '<absent>' -> 2" in str(refused.value)
    assert "another DEDUP_REDIS_CONTENT_KEY" in str(refused.value)


def test_documents_are_numbers_in_compact_encodings(redis_server):
    index = index_on(redis_server)
    rng = random.Random(3)
    documents = [
        (f"https://news.example/2024/06/article-{n}.html", rng.getrandbits(64), rng.randbytes(16))
        for n in range(300)
    ]
    for key, fingerprint, content_hash in documents:
        index.check_and_add(
            key, fingerprint, content_hash, 3, minhash=rng.randbytes(64), min_similarity=0.5
        )
    client = index.connection.client
    assert len(index) == 300
    band_sets = list(client.scan_iter(match="{spider:content}:b*", count=1000))
    assert band_sets and {client.object("encoding", key) for key in band_sets} == {b"intset"}
    buckets = list(client.scan_iter(match="{spider:content}:x:*", count=1000))
    assert 250 < len(buckets) <= 300  # 65,536 buckets by the content hash's first 2 bytes
    assert {client.object("encoding", key) for key in buckets} == {b"listpack"}
    assert client.strlen("{spider:content}:r:0") == 1024 * 81  # created at its full size
    assert client.lrange("{spider:content}:k:0", 0, -1) == [key.encode() for key, _, _ in documents]
    # each document comes back by its number: its key and its fingerprint
    for key, fingerprint, content_hash in documents[::15]:
        found = index.check_and_add("again", fingerprint, content_hash, None, add=False)
        assert found is not None
        assert (found.key, found.fingerprint, found.stage) == (key, fingerprint, "exact")


def test_the_numbers_check_in_lua_agrees_with_python(redis_server):
    # every pair of signatures gets the same answer on the server as in the process:
    # texts that share numbers, copies with some left out or added, substituted sizes
    rng = random.Random(3)
    script = _DISTANCE + "\nreturn numbers_differ(ARGV[1], ARGV[2]) and 1 or 0"
    pairs = []
    for _ in range(400):
        tokens = [rng.choice(["{} gb", "sku {}", "top {}", "{}"]).format(rng.randint(1, 60))]
        tokens += [rng.choice(tokens) for _ in range(rng.randint(0, 80))]
        other = [token for token in tokens if rng.random() > 0.1]
        other += [f"{rng.randint(1, 60)} gb" for _ in range(rng.choice([0, 0, 1, 3, 40]))]
        pairs.append((numbers_signature(" ".join(tokens)), numbers_signature(" ".join(other))))
    with redis.Redis.from_url(redis_server.url) as client:
        for first, second in pairs:
            records = [bytes(72) + n.to_bytes(8, "big") + bytes(1) for n in (first, second)]
            assert client.eval(script, 0, *records) == numbers_conflict(first, second)
    assert {numbers_conflict(*pair) for pair in pairs} == {True, False}
