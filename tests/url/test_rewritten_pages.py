"""RewrittenPages: keys recorded because learned rules rewrote a URL (pure logic)."""

from __future__ import annotations

from crawler.url.dimensions import RuleKey
from crawler.url.rewritten_pages import RewrittenPages

REF = RuleKey("s.example", "param", "ref")
TAB = RuleKey("s.example", "param", "tab")


def test_a_retracted_rule_voids_its_keys_once_and_no_others():
    pages = RewrittenPages()
    pages.record(b"under ref", [REF])
    pages.record(b"under both", [REF])
    pages.record(b"under both", [TAB])
    pages.record(b"under tab", [TAB])
    assert pages.rules_for(b"under both") == [REF, TAB]
    pages.retracted(TAB)
    assert pages.rules_for(b"under ref") == [REF]
    assert pages.rules_for(b"under both") is None
    assert pages.rules_for(b"under tab") is None
    assert [pages.take_void(key) for key in (b"under ref", b"under both", b"under tab")] == [
        False,
        True,
        True,
    ]
    assert not pages.take_void(b"under both")  # let through once


def test_a_key_recorded_again_after_a_retraction_keeps_its_new_rules():
    """A key voided, then recorded again under fewer rules, is not voided by the
    retraction of a rule it had only before (which still lists it)."""
    pages = RewrittenPages()
    pages.record(b"page", [REF, TAB])
    pages.retracted(REF)
    assert pages.take_void(b"page")
    pages.record(b"page", [REF])
    pages.retracted(TAB)  # listed the key before; the key no longer has it
    assert pages.rules_for(b"page") == [REF]
    assert not pages.take_void(b"page")
    pages.retracted(REF)
    assert pages.take_void(b"page")


def test_a_page_downloaded_under_a_rule_is_known_until_the_rule_is_retracted():
    pages = RewrittenPages()
    key = pages.rewritten("http://s.example/d", [REF])
    assert pages.downloaded_under(key) == [REF]
    pages.retracted(REF)
    assert pages.downloaded_under(key) is None
