"""UrlRuleLearner: evidence, rules, counter-examples, verification and state (pure logic)."""

from __future__ import annotations

import json

import pytest

from crawler.url.dimensions import path_body_ids
from crawler.url.learning import (
    COLLECTING,
    LEARNED,
    REFUSED,
    RETRACTED,
    RuleKey,
    UrlRuleLearner,
)

SITE = "http://s.example"


def learner(**options):
    options.setdefault("clock", lambda: 1000.0)
    return UrlRuleLearner(**options)


def observe_pages(rule_learner, pages, variant, *, same=True):
    """Observe each page at its URL and at *variant* of it (a format with ``{page}``),
    with one content when *same*, else two."""
    events = []
    for page in pages:
        events += rule_learner.observe(f"{SITE}/{page}", f"{page}")
        content = page if same else f"{page}-other"
        events += rule_learner.observe(variant.format(page=page), content)
    return events


def states(events):
    return [(str(event.rule.key), event.state) for event in events]


def test_a_parameter_is_learned_after_min_evidence_distinct_pages():
    rules = learner(min_evidence=3)
    assert states(observe_pages(rules, ["a", "b"], SITE + "/{page}?ref=nav")) == []
    assert not rules
    assert states(observe_pages(rules, ["c"], SITE + "/{page}?ref=side")) == [
        ("s.example: ?ref", LEARNED)
    ]
    assert rules.rewrite(f"{SITE}/z?id=4&ref=x") == (
        f"{SITE}/z?id=4",
        [RuleKey("s.example", "param", "ref")],
    )
    rule = rules.rules[RuleKey("s.example", "param", "ref")]
    assert (rule.confirmations, rule.counter_examples, rule.learned_at) == (3, 0, 1000.0)


def test_a_rule_counts_the_downloads_with_it_before_it_was_learned():
    rules = learner(min_evidence=2)
    rules.observe_body(f"{SITE}/x?ref=a&id=1", "x")  # a download with it that pairs with nothing
    for page in ("a", "b", "c"):
        rules.observe_body(f"{SITE}/{page}", page)
        rules.observe_body(f"{SITE}/{page}?ref=nav", page)
    rule = rules.rules[RuleKey("s.example", "param", "ref")]
    assert rule.state == LEARNED
    assert rule.downloads_before == 3  # x, a?ref, b?ref: learned on the second pair
    assert rules.rules.get(RuleKey("s.example", "param", "id")) is None


def test_values_of_one_page_count_as_one_page():
    rules = learner(min_evidence=2)
    rules.observe(f"{SITE}/a", "a")
    for source in ("nav", "side", "footer", "mail"):
        rules.observe(f"{SITE}/a?ref={source}", "a")
    assert not rules
    assert rules.rules[RuleKey("s.example", "param", "ref")].confirmations == 1


@pytest.mark.parametrize(
    ("first", "second", "rule"),
    [
        # two values without the bare URL are evidence too
        ("{page}?ref=1", "{page}?ref=2", "s.example: ?ref"),
        # the bare URL after its variant pairs with it
        ("{page}?from=x", "{page}", "s.example: ?from"),
    ],
)
def test_two_urls_of_one_page_that_differ_in_one_parameter_are_evidence(
    first: str, second: str, rule: str
):
    rules = learner(min_evidence=2)
    for page in ("a", "b"):
        rules.observe(f"{SITE}/{first.format(page=page)}", page)
        events = rules.observe(f"{SITE}/{second.format(page=page)}", page)
    assert states(events) == [(rule, LEARNED)]


def test_a_parameter_that_changes_content_is_refused_for_good():
    rules = learner(min_evidence=2)
    events = observe_pages(rules, ["list"], SITE + "/{page}?page=2", same=False)
    assert states(events) == [("s.example: ?page", REFUSED)]
    # later pages where it happens to change nothing do not bring it back
    assert observe_pages(rules, ["a", "b", "c"], SITE + "/{page}?page=2") == []
    assert rules.rewrite(f"{SITE}/d?page=3") == (f"{SITE}/d?page=3", [])
    rule = rules.rules[RuleKey("s.example", "param", "page")]
    assert rule.counter_example == [f"{SITE}/list", f"{SITE}/list?page=2"]


def test_a_counter_example_retracts_a_learned_rule():
    rules = learner(min_evidence=2)
    observe_pages(rules, ["a", "b"], SITE + "/{page}?sort=asc")
    assert rules.rewrite(f"{SITE}/c?sort=asc")[1]
    events = observe_pages(rules, ["big-list"], SITE + "/{page}?sort=asc", same=False)
    assert states(events) == [("s.example: ?sort", RETRACTED)]
    assert rules.rewrite(f"{SITE}/c?sort=asc") == (f"{SITE}/c?sort=asc", [])
    assert not rules


def test_pages_differing_in_two_parameters_say_nothing():
    rules = learner(min_evidence=1)
    rules.observe(f"{SITE}/a", "a")
    assert rules.observe(f"{SITE}/a?from=x&ref=y", "a") == []
    assert rules.rules == {}


def test_other_hosts_and_other_paths_are_not_paired():
    rules = learner(min_evidence=1)
    rules.observe(f"{SITE}/a", "a")
    assert rules.observe("http://other.example/a?ref=1", "a") == []
    assert rules.observe(f"{SITE}/b?ref=1", "a") == []


def test_a_rule_holds_for_its_host_only():
    rules = learner(min_evidence=1)
    observe_pages(rules, ["a"], SITE + "/{page}?ref=x")
    assert rules.rewrite("http://other.example/a?ref=x") == ("http://other.example/a?ref=x", [])


def test_a_page_fetched_again_is_not_its_own_counter_example():
    rules = learner(min_evidence=1)
    rules.observe(f"{SITE}/a?v=1", "a")
    assert rules.observe(f"{SITE}/a?v=1", "a changed since") == []
    assert rules.rules == {}


def test_a_path_alias_is_learned_and_removed():
    rules = learner(min_evidence=2)
    for directory in ("docs", "guide"):
        rules.observe(f"{SITE}/{directory}", directory)
        events = rules.observe(f"{SITE}/{directory}/index.html", directory)
    # /docs/index.html and /guide/index.html: two trees, told apart
    assert states(events) == [
        ("s.example: /index.html", LEARNED),
        ("s.example: /docs/*=/guide/*", REFUSED),
    ]
    assert rules.rewrite(f"{SITE}/api/index.html?x=1") == (
        f"{SITE}/api?x=1",
        [RuleKey("s.example", "alias", "index.html")],
    )
    assert rules.rewrite(f"{SITE}/index.html")[0] == f"{SITE}/"
    assert rules.rewrite(f"{SITE}/api/main.html")[1] == []


def test_rel_canonical_confirms_the_parameters_it_removes():
    rules = learner(min_evidence=2)
    assert rules.observe_declared(f"{SITE}/a?id=3&share=mail", f"{SITE}/a?id=3") == []
    events = rules.observe_declared(f"{SITE}/b?share=x", f"{SITE}/b")
    assert states(events) == [("s.example: ?share", LEARNED)]
    assert rules.rules[RuleKey("s.example", "param", "share")].from_canonical == 2
    # a declaration of another page, or that changes a value, is no evidence
    assert rules.observe_declared(f"{SITE}/c?x=1", f"{SITE}/") == []
    assert rules.observe_declared(f"{SITE}/c?page=2", f"{SITE}/c?page=1") == []
    assert RuleKey("s.example", "param", "x") not in rules.rules


def test_one_request_in_verify_every_is_let_through():
    rules = learner(min_evidence=1, verify_every=4)
    observe_pages(rules, ["a"], SITE + "/{page}?ref=x")
    _, keys = rules.rewrite(f"{SITE}/b?ref=y")
    decisions = [rules.filtered(keys) for _ in range(8)]
    assert decisions == [True, True, True, False, True, True, True, False]
    rule = rules.rules[keys[0]]
    assert (rule.filtered, rule.verified) == (8, 2)


def test_verify_every_0_never_lets_one_through():
    rules = learner(min_evidence=1, verify_every=0)
    observe_pages(rules, ["a"], SITE + "/{page}?ref=x")
    _, keys = rules.rewrite(f"{SITE}/b?ref=y")
    assert all(rules.filtered(keys) for _ in range(50))


def test_state_round_trips_through_json():
    rules = learner(min_evidence=2)
    observe_pages(rules, ["a", "b"], SITE + "/{page}?ref=x")
    observe_pages(rules, ["c"], SITE + "/{page}?page=2", same=False)
    observe_pages(rules, ["d"], SITE + "/{page}?from=y")

    restored = learner(min_evidence=2)
    restored.restore(json.loads(json.dumps(rules.state())))

    assert restored.rules == rules.rules
    assert restored.rewrite(f"{SITE}/e?from=1&page=2&ref=3") == (
        f"{SITE}/e?from=1&page=2",
        [RuleKey("s.example", "param", "ref")],
    )
    assert restored.rules[RuleKey("s.example", "param", "from")].state == COLLECTING


@pytest.mark.parametrize(
    "state",
    [
        {},
        {"rules": [{"host": "h"}]},
        {"rules": [{"host": "h", "kind": "param", "name": "x", "state": "odd"}]},
    ],
)
def test_a_foreign_state_is_refused(state):
    with pytest.raises(ValueError, match="learned URL rule"):
        learner().restore(state)


def test_forget_drops_a_rule_and_its_evidence():
    rules = learner(min_evidence=1)
    observe_pages(rules, ["a"], SITE + "/{page}?ref=x")
    observe_pages(rules, ["b"], SITE + "/{page}?from=x")
    forgotten = rules.forget("s.example", "ref")
    assert [str(rule.key) for rule in forgotten] == ["s.example: ?ref"]
    assert rules.rewrite(f"{SITE}/c?from=1&ref=2") == (
        f"{SITE}/c?ref=2",
        [RuleKey("s.example", "param", "from")],
    )
    assert len(rules.forget("*", "*")) == 1
    assert not rules


def test_pages_beyond_max_pages_are_counted_not_remembered():
    rules = learner(min_evidence=1, max_pages=2)
    for page in ("a", "b", "c"):
        rules.observe(f"{SITE}/{page}", page)
    assert rules.pages_not_remembered == 1
    assert rules.observe(f"{SITE}/c?ref=x", "c") == []


@pytest.mark.parametrize("url", ["", "mailto:a@b.example", "ftp://s.example/a?x=1", "http:///a"])
def test_urls_it_cannot_split_are_left_alone(url):
    rules = learner(min_evidence=1)
    assert rules.observe(url, "x") == []
    assert rules.rewrite(url) == (url, [])


@pytest.mark.parametrize("option", [{"min_evidence": 0}, {"verify_every": -1}])
def test_bad_options_are_named(option):
    with pytest.raises(ValueError, match=next(iter(option))):
        UrlRuleLearner(**option)


def test_a_rule_learned_by_another_worker_is_adopted():
    elsewhere = learner(min_evidence=1)
    observe_pages(elsewhere, ["a"], SITE + "/{page}?ref=x")
    here = learner(min_evidence=1)

    events = here.adopt(elsewhere.rules[RuleKey("s.example", "param", "ref")])

    assert [(str(event.rule.key), event.state, event.adopted) for event in events] == [
        ("s.example: ?ref", LEARNED, True)
    ]
    assert here.rewrite(f"{SITE}/b?ref=y")[0] == f"{SITE}/b"
    assert here.adopt(elsewhere.rules[RuleKey("s.example", "param", "ref")]) == []


def test_a_refusal_elsewhere_retracts_a_rule_learned_here():
    here = learner(min_evidence=1)
    observe_pages(here, ["a"], SITE + "/{page}?sort=asc")
    elsewhere = learner(min_evidence=1)
    observe_pages(elsewhere, ["list"], SITE + "/{page}?sort=asc", same=False)

    events = here.adopt(elsewhere.rules[RuleKey("s.example", "param", "sort")])

    assert [event.state for event in events] == [RETRACTED]
    assert events[0].urls == (f"{SITE}/list", f"{SITE}/list?sort=asc")
    assert not here
    # and a learned rule elsewhere does not undo a refusal here
    learned = learner(min_evidence=1)
    observe_pages(learned, ["b"], SITE + "/{page}?sort=asc")
    assert here.adopt(learned.rules[RuleKey("s.example", "param", "sort")]) == []


def test_urls_two_parameters_apart_with_one_content_confirm_both():
    rules = learner(min_evidence=2)
    for page in ("a", "b"):
        rules.observe(f"{SITE}/{page}?ref=x", page)
        events = rules.observe(f"{SITE}/{page}?share=y", page)
    assert sorted(states(events)) == [("s.example: ?ref", LEARNED), ("s.example: ?share", LEARNED)]


def test_urls_two_parameters_apart_with_two_contents_say_nothing():
    rules = learner(min_evidence=1)
    rules.observe(f"{SITE}/a?page=2", "a2")
    assert rules.observe(f"{SITE}/a?sort=asc", "a-sorted") == []
    assert all(rule.state == COLLECTING for rule in rules.rules.values())


# Path prefixes and swaps: one tree served under two first segments


def observe_trees(rule_learner, pages, first, second, *, same=True):
    """Observe each page under the first segments *first* and *second* ("" for none)."""
    events = []
    for page in pages:
        for segment in (first, second):
            url = f"{SITE}/{segment}/guide/{page}" if segment else f"{SITE}/guide/{page}"
            content = page if same or segment == first else f"{page}-other"
            events += rule_learner.observe(url, content)
    return events


def test_a_tree_served_under_two_first_segments_is_learned_as_a_swap():
    rules = learner(min_evidence=3)
    assert observe_trees(rules, ["a", "b"], "docs", "v3") == []
    events = observe_trees(rules, ["c"], "v3", "docs")
    assert states(events) == [("s.example: /docs/*=/v3/*", LEARNED)]
    swap = RuleKey("s.example", "swap", "docs/*=/v3/*")
    assert rules.rewrite(f"{SITE}/v3/api/x?id=1") == (f"{SITE}/docs/api/x?id=1", [swap])
    assert rules.rewrite(f"{SITE}/docs/api/x") == (f"{SITE}/docs/api/x", [])
    assert rules.rewrite(f"{SITE}/v3") == (f"{SITE}/v3", [])  # no page under it
    # no other rule: /docs/a and /v3/a say nothing of /guide/a
    assert [str(rule.key) for rule in rules.learned()] == ["s.example: /docs/*=/v3/*"]


def test_a_first_segment_that_changes_nothing_is_learned_as_a_prefix():
    rules = learner(min_evidence=2)
    events = observe_trees(rules, ["a", "b"], "", "en")
    assert states(events) == [("s.example: /en/*", LEARNED)]
    assert rules.rewrite(f"{SITE}/en/guide/z")[0] == f"{SITE}/guide/z"
    assert rules.rewrite(f"{SITE}/en/")[0] == f"{SITE}/"


def test_two_trees_with_other_pages_refuse_the_swap_for_good():
    rules = learner(min_evidence=2)
    events = observe_trees(rules, ["a"], "docs", "blog", same=False)
    assert states(events) == [("s.example: /blog/*=/docs/*", REFUSED)]
    assert observe_trees(rules, ["b", "c", "d"], "docs", "blog") == []
    assert rules.rewrite(f"{SITE}/blog/guide/e") == (f"{SITE}/blog/guide/e", [])


def test_a_counter_example_retracts_a_swap():
    rules = learner(min_evidence=2)
    observe_trees(rules, ["a", "b"], "docs", "v3")
    events = observe_trees(rules, ["c"], "docs", "v3", same=False)
    assert states(events) == [("s.example: /docs/*=/v3/*", RETRACTED)]
    assert rules.rewrite(f"{SITE}/v3/guide/z")[1] == []


@pytest.mark.parametrize("marker", ["mirror", "amp", "Print"])
def test_a_first_segment_that_marks_a_copy_is_no_prefix_nor_swap(marker):
    """The content level keeps the article rather than its copy met first: it needs both
    downloaded."""
    for other in ("docs", ""):
        rules = learner(min_evidence=2)
        assert observe_trees(rules, ["a", "b", "c"], other, marker) == []
        assert rules.rules == {}


def test_swaps_join_their_segments_and_a_prefix_among_them_removes_all():
    rules = learner(min_evidence=1)
    observe_trees(rules, ["a"], "v3", "stable")
    observe_trees(rules, ["b"], "stable", "latest")
    assert rules.rewrite(f"{SITE}/v3/x")[0] == f"{SITE}/latest/x"
    assert rules.rewrite(f"{SITE}/stable/x")[0] == f"{SITE}/latest/x"
    assert sorted(map(str, rules.rewrite(f"{SITE}/v3/x")[1])) == [
        "s.example: /latest/*=/stable/*",
        "s.example: /stable/*=/v3/*",
    ]
    observe_trees(rules, ["c"], "", "stable")
    assert {rules.rewrite(f"{SITE}/{s}/x")[0] for s in ("v3", "stable", "latest")} == {f"{SITE}/x"}


def test_a_swap_survives_a_state_round_trip():
    rules = learner(min_evidence=1)
    observe_trees(rules, ["a"], "docs", "v3")
    again = learner()
    again.restore(json.loads(json.dumps(rules.state())))
    assert again.rewrite(f"{SITE}/v3/x")[0] == f"{SITE}/docs/x"
    assert again.forget("s.example", "docs/*=/v3/*")
    assert again.rewrite(f"{SITE}/v3/x")[0] == f"{SITE}/v3/x"


def test_prefixes_are_paired_for_the_first_max_prefix_pages_only():
    rules = learner(min_evidence=1, max_prefix_pages=2)
    rules.observe(f"{SITE}/x", "x")
    rules.observe(f"{SITE}/y", "y")
    assert rules.observe(f"{SITE}/en/x", "x") == []


def test_two_trees_pair_by_body_once_their_links_into_their_own_tree_are_written_alike():
    """/v2/guide/a links /v2/...: its body differs from /guide/a's by those links only."""

    def observe(rules, url, body, path_ids=True):
        ids = path_body_ids(url.removeprefix(SITE), body, bytes.hex) if path_ids else {}
        return rules.observe_body(url, body.hex(), ids)

    for path_ids, expected in ((False, []), (True, [("s.example: /v2/*", LEARNED)])):
        rules, events = learner(min_evidence=2), []
        for page in ("a", "b"):
            plain = f'<p>{page}</p><a href="/guide/{page}/more">more</a>'.encode()
            observe(rules, f"{SITE}/guide/{page}", plain, path_ids)
            copy = plain.replace(b'href="/', b'href="/v2/')
            events = observe(rules, f"{SITE}/v2/guide/{page}", copy, path_ids)
        assert states(events) == expected
    swapped, events = learner(min_evidence=2), []
    for page in ("a", "b"):
        for tree in ("docs", "v3"):
            body = f'<p>{page}</p><a href="/{tree}/{page}/more">more</a>'.encode()
            events = observe(swapped, f"{SITE}/{tree}/{page}", body)
    assert states(events) == [("s.example: /docs/*=/v3/*", LEARNED)]
