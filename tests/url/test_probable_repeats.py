"""ProbableRepeats: which new requests wait while learned URL rules collect evidence
(pure logic)."""

from __future__ import annotations

from crawler.url.dimensions import RuleKey
from crawler.url.probable_repeats import PAIRS_FIRST, ProbableRepeats

SITE = "http://s.example"
REF = RuleKey("s.example", "param", "ref")


def repeats(decided=frozenset(), min_evidence=2):
    return ProbableRepeats(lambda key: key not in decided, min_evidence)


def test_the_first_pairs_of_a_parameter_go_first_the_others_wait():
    pairs = repeats()
    pages = "abcdefg"
    assert not any(pairs.may_repeat(f"{SITE}/{page}") for page in pages)
    waits = [pairs.may_repeat(f"{SITE}/{page}?ref=nav") for page in pages]
    first = PAIRS_FIRST * 2
    assert waits == [False] * first + [True] * (len(pages) - first)


def test_two_values_of_a_parameter_pair_and_so_does_the_url_without_it():
    pairs = repeats(min_evidence=1)
    assert not pairs.may_repeat(f"{SITE}/a?ref=nav")  # nothing requested to pair with
    assert not pairs.may_repeat(f"{SITE}/a?ref=top")  # first pairs of ?ref: go first
    assert not pairs.may_repeat(f"{SITE}/a")
    assert pairs.may_repeat(f"{SITE}/a?ref=side")
    assert pairs.may_repeat(f"{SITE}/b") is False  # no pair: another page


def test_a_decided_parameter_pairs_no_more():
    pairs = repeats(decided={REF}, min_evidence=1)
    urls = [f"{SITE}/a", f"{SITE}/a?ref=x", f"{SITE}/a?ref=y", f"{SITE}/a?ref=z"]
    assert [pairs.may_repeat(url) for url in urls] == [False] * 4


def test_a_tree_served_again_under_a_prefix_pairs_both_ways():
    pairs = repeats(min_evidence=1)
    for url in ("/docs/a", "/docs/b", "/docs/c"):
        assert not pairs.may_repeat(SITE + url)
    prefix = [pairs.may_repeat(f"{SITE}/v2{url}") for url in ("/docs/a", "/docs/b", "/docs/c")]
    assert prefix == [False, False, True]  # /v2/* had its first two pairs
    # the tree without its prefix, requested after it
    assert not any(pairs.may_repeat(f"{SITE}/v3/guide/{page}") for page in "xyz")
    assert [pairs.may_repeat(f"{SITE}/guide/{page}") for page in "xyz"] == [False, False, True]


def test_two_prefixes_of_one_tree_pair_as_a_swap():
    pairs = repeats(min_evidence=1)
    trees = [
        pairs.may_repeat(f"{SITE}/{tree}/guide/{page}")
        for page in "ab"
        for tree in ("stable", "latest")
    ]
    assert trees == [False] * 4  # the first two pairs of the swap go first
    assert pairs.may_repeat(f"{SITE}/stable/guide/c") is False
    assert pairs.may_repeat(f"{SITE}/latest/guide/c")


def test_urls_it_cannot_split_never_wait():
    """Where a readable URL of the same shape waits, one without a host does not."""
    pairs = repeats(min_evidence=1)
    for url in (f"{SITE}/a?ref=nav", f"{SITE}/a?ref=top", f"{SITE}/a"):
        pairs.may_repeat(url)
    assert pairs.may_repeat(f"{SITE}/a?ref=side")
    for unreadable in ("not a url", "http:///a?ref=side", "mailto:x@s.example?ref=side"):
        assert not pairs.may_repeat(unreadable)
