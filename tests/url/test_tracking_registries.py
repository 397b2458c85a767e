"""The registry reader's expansion of rules written as regular expressions, and the review
output that lists the rules it skips. That the names it reads are stripped is tested with
the URL rules, in tests/url/test_canonical.py."""

from __future__ import annotations

import json
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from crawler.url.tracking_registries import (
    MAX_NAMES_PER_RULE,
    SkippedRule,
    UnexpandableRule,
    expand_rule,
    global_names,
    main,
    skipped_rules,
)
from tests.url.test_canonical import write_registries


@pytest.mark.parametrize(
    ("rule", "names"),
    [
        ("fbclid", {"fbclid"}),
        ("Echobox", {"echobox"}),
        ("hsCtaTracking", {"hsctatracking"}),
        ("(?:%3F)?__twitter_impression", {"__twitter_impression", "%3f__twitter_impression"}),
        (
            "(?:%3F)?mc_(?:eid|cid|tc)",
            {"mc_eid", "mc_cid", "mc_tc", "%3fmc_eid", "%3fmc_cid", "%3fmc_tc"},
        ),
        ("wt_?z?mc", {"wtmc", "wt_mc", "wtzmc", "wt_zmc"}),
        (
            "action_(?:object|type|ref)_map",
            {"action_object_map", "action_type_map", "action_ref_map"},
        ),
        ("ref_?", {"ref", "ref_"}),
        ("(fb|ig)_(a|b)", {"fb_a", "fb_b", "ig_a", "ig_b"}),
        ("^gclid$", {"gclid"}),
        ("a(?:b|)c", {"abc", "ac"}),
        ("(?:x|y)??z", {"z", "xz", "yz"}),
        ("mt_sub[1-3]", {"mt_sub1", "mt_sub2", "mt_sub3"}),
        ("ebisother\\d", {f"ebisother{digit}" for digit in range(10)}),
        ("[ab-]x", {"ax", "bx", "-x"}),
        ("[]a]", {"]", "a"}),
        ("x\\.y\\-z", {"x.y-z"}),
        ("n{2}", {"nn"}),
        ("n{1,3}", {"n", "nn", "nnn"}),
        ("(?:ab){0,2}", {"", "ab", "abab"}),
        ("()*x", {"x"}),
        ("", {""}),
    ],
)
def test_a_rule_gives_the_names_it_denotes(rule: str, names: set[str]) -> None:
    assert expand_rule(rule) == names


def test_the_class_expands_to_each_letter() -> None:
    assert expand_rule("[a-z]?mc") == {"mc"} | {f"{chr(code)}mc" for code in range(97, 123)}


@pytest.mark.parametrize(
    ("rule", "reason"),
    [
        ("(?:%3F)?utm(?:_[a-z_]*)?", "[a-z_]* repeats without bound"),
        ("ga_[a-z_]+", "[a-z_]+ repeats without bound"),
        ("vn(?:_[a-z]*)+", "[a-z]* repeats without bound"),
        ("x{2,}", "x{2,} repeats without bound"),
        ("utm_.*", "'.' matches any character"),
        ("id_[^&]", "a negated class matches almost any character"),
        ("\\w_id", "the escape \\w is not expanded"),
        ("(?=a)a", "only (?:...) groups are expanded"),
        ("(?P<n>a)", "only (?:...) groups are expanded"),
        ("(a)\\1", "the escape \\1 is not expanded"),
        ("a^b", "an anchor '^' inside the rule"),
        ("a{x}", "a literal '{' is not expanded"),
        ("[a-z][a-z][a-z]", f"more than {MAX_NAMES_PER_RULE} names"),
        ("(?:[a-j]{2}){2}", f"more than {MAX_NAMES_PER_RULE} names"),
        ("a{0,1000000000}", f"more than {MAX_NAMES_PER_RULE} repeats"),
        ("(?:unbalanced", "not a regular expression: missing ), unterminated subpattern at "),
    ],
)
def test_a_rule_without_a_finite_set_of_names_is_refused(rule: str, reason: str) -> None:
    with pytest.raises(UnexpandableRule) as refused:
        expand_rule(rule)
    assert str(refused.value).startswith(reason)


def test_a_thousand_names_are_still_names() -> None:
    assert len(expand_rule("[a-j][a-j][a-j]")) == MAX_NAMES_PER_RULE


# The grammar the registries write in: literal names joined by groups, alternatives,
# optional parts, small classes and bounded repetition.
_NAME_PART = st.from_regex(r"[a-z_]{1,4}", fullmatch=True)


def _rules(children: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    return st.one_of(
        st.tuples(children, children).map("".join),
        st.lists(children, min_size=1, max_size=3).map(lambda parts: f"(?:{'|'.join(parts)})"),
        children.map(lambda part: f"(?:{part})?"),
        st.tuples(children, st.integers(0, 2), st.integers(0, 1)).map(
            lambda rule: f"(?:{rule[0]}){{{rule[1]},{rule[1] + rule[2]}}}"
        ),
    )


_RULES = st.recursive(
    st.one_of(_NAME_PART, st.sampled_from(["[a-c]", "[xy_]", "%3F", "\\d"])), _rules, max_leaves=8
)


@given(rule=_RULES, data=st.data())
def test_expansion_is_exactly_the_names_the_rule_matches(rule: str, data: st.DataObject) -> None:
    try:
        names = expand_rule(rule)
    except UnexpandableRule as refused:
        assert str(refused) == f"more than {MAX_NAMES_PER_RULE} names"
        return
    pattern = re.compile(rule, re.IGNORECASE | re.ASCII)  # as JavaScript reads it
    assert all(pattern.fullmatch(name) for name in names)  # nothing the rule does not match
    matched = data.draw(st.from_regex(pattern, fullmatch=True))
    assert matched.lower() in names  # and everything it matches


def write_regex_registries(folder) -> None:
    """The registries' files, ClearURLs' and AdGuard's with rules written as expressions."""
    write_registries(folder, ["fbclid"])
    clear_urls = {
        "providers": {
            "globalRules": {
                "rules": ["(?:%3F)?newvendor_(?:a|b)", "(?:%3F)?open_[a-z]+"],
                "referralMarketing": ["(?:%3F)?fbclid"],
            }
        }
    }
    (folder / "clearurls_data.min.json").write_text(json.dumps(clear_urls))
    (folder / "adguard_general_url.txt").write_text(
        "! comment\n"
        "$removeparam=fbclid\n"
        "$removeparam=/^adg_(?:x|y)=/\n"
        "$removeparam=/^adg_prefix/\n"
        "$removeparam=/adg_inside/\n"
        "$removeparam=/^adg_z=/,domain=~example.org\n"
        "$removeparam=/^adg_[^a]=/\n"
    )


def test_the_reader_takes_the_names_of_rules_written_as_expressions(tmp_path) -> None:
    folder = tmp_path / "registries"
    write_regex_registries(folder)
    names = global_names(folder)
    assert names["newvendor_a"] == names["newvendor_b"] == {"clearurls"}
    assert names["fbclid"] == {"adguard", "brave_query-filter", "clearurls"}
    assert names["adg_x"] == names["adg_y"] == {"adguard"}
    assert not any(name.startswith(("%3f", "open_", "adg_prefix", "adg_z")) for name in names)
    assert skipped_rules(folder) == [
        SkippedRule("clearurls", "(?:%3F)?open_[a-z]+", "[a-z]+ repeats without bound"),
        SkippedRule(
            "adguard", "$removeparam=/^adg_prefix/", "matches every name that starts with it"
        ),
        SkippedRule("adguard", "$removeparam=/adg_inside/", "matches inside any name or value"),
        SkippedRule(
            "adguard",
            "$removeparam=/^adg_z=/,domain=~example.org",
            "limited by options: not every site",
        ),
        SkippedRule(
            "adguard",
            "$removeparam=/^adg_[^a]=/",
            "a negated class matches almost any character",
        ),
    ]


def test_the_review_lists_the_rules_it_skipped(tmp_path, capsys) -> None:
    folder = tmp_path / "registries"
    write_regex_registries(folder)
    assert main([str(folder)]) == 1
    assert capsys.readouterr().out.splitlines() == [
        "# 5 names the registries strip on every site; 4 not stripped by the defaults and "
        "not reviewed yet",
        '    "adg_x",  # adguard',
        '    "adg_y",  # adguard',
        '    "newvendor_a",  # clearurls',
        '    "newvendor_b",  # clearurls',
        "# 5 rules for every site skipped: they denote no finite set of names",
        "#   clearurls: (?:%3F)?open_[a-z]+  ([a-z]+ repeats without bound)",
        "#   adguard: $removeparam=/^adg_prefix/  (matches every name that starts with it)",
        "#   adguard: $removeparam=/adg_inside/  (matches inside any name or value)",
        "#   adguard: $removeparam=/^adg_z=/,domain=~example.org  (limited by options: not "
        "every site)",
        "#   adguard: $removeparam=/^adg_[^a]=/  (a negated class matches almost any character)",
    ]
