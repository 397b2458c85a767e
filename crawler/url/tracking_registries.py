"""Read the public tracking-parameter registries, and say what the default list lacks.

:data:`crawler.url.tracking_params.DEFAULT_STRIP_PARAMS` is written by hand, each entry reviewed;
this module is how it is kept up to date. It reads the registries that browsers and privacy
tools publish (file names as in the corpus folder ``url/tracking-params``, each with its
source and licence there):

* ClearURLs' rules (``clearurls_data.min.json``, LGPL-3.0), global provider only, each a
  regular expression: the names it denotes (:func:`expand_rule`);
* AdGuard's URL tracking filter (``adguard_general_url.txt``, GPL-3.0), plain
  ``$removeparam=NAME`` rules, and ``$removeparam=/^regex=/`` ones that denote names;
* Brave's query filter and clean-link lists (``brave_query-filter.json``,
  ``brave_clean-urls.json``, MPL-2.0), rules for every site;
* DuckDuckGo's tracking parameters (``duckduckgo_tracking-parameters.json``, Apache-2.0);
* Neat URL's defaults (``neaturl_default-params-by-category.json``, GPL-2.0-or-later),
  names without a domain or wildcard;
* mpchadwick's tracking-query-params-registry (``mpchadwick_params.csv``, Unlicense).

Only names (not the files' contents) end up in the default list. A name a registry strips on
every site belongs in the default list, once reviewed as one vendor's, or else in
:data:`REVIEWED_NOT_STRIPPED`, with the reason.

Usage::

    python -m crawler.url.tracking_registries ../shared/corpus/url/tracking-params

prints the names the defaults do not strip yet and no review kept, as entries to review and
paste into :mod:`crawler.url.tracking_params` (or into :data:`REVIEWED_NOT_STRIPPED`), and exits
with status 1 when there are any. Then, as comments, it lists the rules it skipped: the
regular expressions that match names without bound (``utm(?:_[a-z_]*)?``), which a reviewer
may cover with a glob pattern.
"""

from __future__ import annotations

import csv
import json
import re
import string
import sys
from pathlib import Path
from typing import NamedTuple

__all__ = [
    "MAX_NAMES_PER_RULE",
    "REVIEWED_NOT_STRIPPED",
    "SkippedRule",
    "UnexpandableRule",
    "consensus_names",
    "expand_rule",
    "global_names",
    "missing_from_defaults",
    "skipped_rules",
]

#: Names the registries strip on every site that the default list leaves alone on purpose,
#: each with the reason: generic enough for a site to use them for content, not tied to one
#: vendor, or needed by the sites a registry excepts.
_REVIEWED: tuple[tuple[str, str], ...] = (
    (
        "campaign campaign_id campaignid c_id cmpid clickid campid customid toolid rtid ncid "
        "trk si",
        "a generic word a site could use for its own pages (si: stripped on YouTube and "
        "Spotify only)",
    ),
    ("assetid assettype siteid recipientid", "a generic id or type that selects content"),
    ("mbid", "MusicBrainz's identifier on music sites"),
    ("at_type", "a generic name (the tests' list of words a site could use)"),
    ("cm_cr cm_me cm_re cm_sp", "cm_ is no one vendor's prefix"),
    (
        "sc_customer sc_eh sc_uid sc_llid sc_lid sc_src sc_campaign sc_channel sc_content "
        "sc_medium sc_outcome sc_country sc_geo sc_cid s_campaign",
        "sc_ is no one vendor's prefix (Sitecore's sc_lang, sc_site), and some select content",
    ),
    ("int_campaign int_content int_medium int_source int_term", "a convention, no vendor's"),
    ("tt_content tt_medium", "tt_ is no one vendor's prefix"),
    ("soc_src soc_trk trkcampaign spuserid ss_source", "a generic abbreviation"),
    ("a8 maf gci ymid btag ftag cuid", "too short or too common to be one vendor's"),
    ("erid", "a legal ad-labelling token, not a vendor's, that some sites need"),
    ("adj_t vc_lpp h_sid h_slt", "a registry excepts sites that need it"),
    (
        "line_uid lt_r srclt is_retargeting external_click_id ircid ex_cid tracking_source",
        "a generic name",
    ),
    ("eblastid gpromocode gqt", "it can select the page (a newsletter, a promotion)"),
    (
        "personaclick_search_query personaclick_input_query recommended_by recommended_code",
        "it carries a search query or a code the page may use",
    ),
    ("user_email_address", "a form field name, no vendor's"),
    (
        "analytics_context analytics_trace_id adfrom nx_source _bdadid _ope _clde _cldee "
        "aiad_clid asgtbndr iclid oprtrack rtkcid uzcid beyond_uzcvid beyond_uzmcvid "
        "vs_campaign_id janet famad_xuid nr_email_referer os_ehash wtrid",
        "no registry names its vendor",
    ),
    (
        " ".join(["mc"] + [f"{letter}mc" for letter in string.ascii_lowercase]),
        "ClearURLs' [a-z]?mc: names of two or three letters a site could use, no vendor's "
        "(ClearURLs itself excepts billiger.de, whose mc selects content)",
    ),
    ("spm", "Alibaba's, but three letters a site could use (the tests' generic names)"),
    (
        "ref ref_ referrer",
        "a generic word a site could use; ClearURLs lists them apart, as referral marketing, "
        "which its users may allow",
    ),
)
REVIEWED_NOT_STRIPPED: dict[str, str] = {
    name: reason for names, reason in _REVIEWED for name in names.split()
}

_PLAIN_NAME = re.compile(r"[\w.-]+")


class UnexpandableRule(ValueError):
    """A registry rule that denotes no finite set of plain names; the message says why."""


#: More names than this from one rule is taken for a pattern, not a list of names.
MAX_NAMES_PER_RULE = 1000

_CLASS_SHORTHANDS = {"d": "0123456789"}


def expand_rule(rule: str) -> frozenset[str]:
    """The names a registry's regular expression matches in full, lowercased.

    Registries write a rule as a regular expression matched against the whole name,
    ignoring case. The restricted grammar they use is expanded:

    - literal characters, and characters escaped with ``\\``;
    - groups ``(...)`` and ``(?:...)`` with alternatives ``a|b``;
    - the quantifiers ``?``, ``{m}`` and ``{m,n}`` (a trailing lazy ``?`` changes nothing);
    - character classes ``[abc]``, ``[a-z]``, ``\\d``;
    - ``^`` at the start and ``$`` at the end.

    A rule that matches names without bound (``*``, ``+``, ``{m,}``, ``.``, ``[^...]``,
    ``\\w``), more than :data:`MAX_NAMES_PER_RULE` names, uses other syntax, or is not a
    regular expression raises :class:`UnexpandableRule`.

    >>> sorted(expand_rule("(?:%3F)?mc_(?:eid|cid|tc)"))
    ['%3fmc_cid', '%3fmc_eid', '%3fmc_tc', 'mc_cid', 'mc_eid', 'mc_tc']
    >>> sorted(expand_rule("wt_?z?mc"))
    ['wt_mc', 'wt_zmc', 'wtmc', 'wtzmc']
    """
    try:
        re.compile(rule)
    except re.error as error:
        raise UnexpandableRule(f"not a regular expression: {error}") from None
    parser = _RuleParser(rule)
    names = parser.alternatives()
    if parser.position < len(rule):  # only an unbalanced ")" stops the parser early
        raise UnexpandableRule(f"unexpected {rule[parser.position]!r}")
    return frozenset(name.lower() for name in names)


class _RuleParser:
    """Recursive descent over one rule: each part yields the set of strings it matches."""

    def __init__(self, rule: str) -> None:
        self.rule = rule
        self.position = 0

    def peek(self) -> str:
        return self.rule[self.position : self.position + 1]

    def take(self) -> str:
        char = self.peek()
        self.position += 1
        return char

    def alternatives(self) -> set[str]:
        names = self.sequence()
        while self.peek() == "|":
            self.take()
            names |= self.sequence()
        return names

    def sequence(self) -> set[str]:
        names = {""}
        while self.peek() not in ("", "|", ")"):
            if self.peek() == "^" and self.position == 0:
                self.take()
                continue
            if self.peek() == "$" and self.position == len(self.rule) - 1:
                self.take()
                continue
            start = self.position
            part = self.quantified(self.atom(), start)
            names = {name + suffix for name in names for suffix in part}
            _check_size(names)
        return names

    def atom(self) -> set[str]:
        char = self.take()
        if char == "(":
            if self.peek() == "?":
                self.take()
                if self.take() != ":":
                    raise UnexpandableRule("only (?:...) groups are expanded")
            names = self.alternatives()
            if self.take() != ")":
                raise UnexpandableRule("unbalanced group")
            return names
        if char == "[":
            return set(self.character_class())
        if char == "\\":
            return set(self.escape())
        if char == ".":
            raise UnexpandableRule("'.' matches any character")
        if char in "*+?{":
            raise UnexpandableRule(f"{char!r} repeats nothing")
        if char in "^$":
            raise UnexpandableRule(f"an anchor {char!r} inside the rule")
        return {char}

    def escape(self) -> str:
        char = self.take()
        if char in _CLASS_SHORTHANDS:
            return _CLASS_SHORTHANDS[char]
        if char.isalnum():
            raise UnexpandableRule(f"the escape \\{char} is not expanded")
        return char

    def character_class(self) -> str:
        if self.peek() == "^":
            raise UnexpandableRule("a negated class matches almost any character")
        members: list[str] = []
        while not members or self.peek() != "]":  # a "]" first is a member
            low = self.class_member()
            if self.peek() == "-" and self.rule[self.position + 1 : self.position + 2] != "]":
                self.take()
                high = self.class_member()
                if len(low) != 1 or len(high) != 1:
                    raise UnexpandableRule("a range bounded by a class")
                members.extend(chr(code) for code in range(ord(low), ord(high) + 1))
            else:
                members.append(low)
        self.take()
        return "".join(dict.fromkeys("".join(members)))

    def class_member(self) -> str:
        char = self.take()
        return self.escape() if char == "\\" else char

    def quantified(self, names: set[str], start: int) -> set[str]:
        char = self.peek()
        if char == "?":
            self.take()
            low, high = 0, 1
        elif char in ("*", "+"):
            self.take()
            low, high = (0 if char == "*" else 1), None
        elif char == "{":
            low, high = self.braces()
        else:
            return names
        if self.peek() == "?":  # lazy: the same names
            self.take()
        if names <= {""}:
            return names
        if high is None:
            raise UnexpandableRule(f"{self.rule[start : self.position]} repeats without bound")
        if high > MAX_NAMES_PER_RULE:
            raise UnexpandableRule(f"more than {MAX_NAMES_PER_RULE} repeats")
        result: set[str] = set()
        repeated = {""}
        for count in range(high + 1):
            if count >= low:
                result |= repeated
                _check_size(result)
            if count < high:
                repeated = {name + part for name in repeated for part in names}
                _check_size(repeated)
        return result

    def braces(self) -> tuple[int, int | None]:
        match = re.compile(r"\{(\d+)(,(\d*))?\}").match(self.rule, self.position)
        if match is None:
            raise UnexpandableRule("a literal '{' is not expanded")
        self.position = match.end()
        low = int(match.group(1))
        if match.group(2) is None:
            return low, low
        return low, int(match.group(3)) if match.group(3) else None


def _check_size(names: set[str]) -> None:
    if len(names) > MAX_NAMES_PER_RULE:
        raise UnexpandableRule(f"more than {MAX_NAMES_PER_RULE} names")


class SkippedRule(NamedTuple):
    """A rule a registry applies on every site that the reader could not turn into names."""

    registry: str
    rule: str
    reason: str


def global_names(folder: Path) -> dict[str, set[str]]:
    """The parameter names each registry in *folder* strips on every site (lowercased),
    each with the registries that list it. A rule written as a regular expression gives
    the names it denotes (:func:`expand_rule`); see :func:`skipped_rules` for the others."""
    return _read_registries(folder)[0]


def skipped_rules(folder: Path) -> list[SkippedRule]:
    """The rules registries in *folder* apply on every site that denote no finite set of
    plain names (``utm(?:_[a-z_]*)?``, AdGuard's ``/^cm_mmc/``), each with the reason:
    for a reviewer to cover with a glob pattern, or leave."""
    return _read_registries(folder)[1]


def _read_registries(folder: Path) -> tuple[dict[str, set[str]], list[SkippedRule]]:
    listed: dict[str, set[str]] = {}
    skipped: list[SkippedRule] = []

    def add(name: str, registry: str) -> None:
        listed.setdefault(name.lower(), set()).add(registry)

    def add_expanded(rule: str, registry: str, written: str) -> None:
        try:
            names = _names_of_rule(rule)
        except UnexpandableRule as error:
            skipped.append(SkippedRule(registry, written, str(error)))
            return
        for name in names:
            add(name, registry)

    clear_urls = json.loads((folder / "clearurls_data.min.json").read_text("utf-8"))
    global_rules = clear_urls["providers"]["globalRules"]
    for rule in global_rules.get("rules", []) + global_rules.get("referralMarketing", []):
        add_expanded(rule, "clearurls", rule)
    for line in (folder / "adguard_general_url.txt").read_text("utf-8").splitlines():
        line = line.strip()
        match = re.fullmatch(r"\$removeparam=([\w.-]+)", line)
        if match:
            add(match.group(1), "adguard")
            continue
        match = re.fullmatch(r"\$removeparam=/(.*)/i?(,.*)?", line)
        if not match:
            continue
        if match.group(2):
            skipped.append(SkippedRule("adguard", line, "limited by options: not every site"))
        elif not match.group(1).startswith("^"):  # AdGuard searches "name=value" for it
            skipped.append(SkippedRule("adguard", line, "matches inside any name or value"))
        elif not match.group(1).endswith("="):
            skipped.append(SkippedRule("adguard", line, "matches every name that starts with it"))
        else:
            add_expanded(match.group(1).removesuffix("="), "adguard", line)
    for name in ("brave_query-filter.json", "brave_clean-urls.json"):
        for rule in json.loads((folder / name).read_text("utf-8")):
            if rule.get("include") == ["*://*/*"]:
                for param in rule["params"]:
                    add(param, name.removesuffix(".json"))
    duckduckgo = json.loads((folder / "duckduckgo_tracking-parameters.json").read_text("utf-8"))
    for param in duckduckgo["settings"]["parameters"]:
        add(param, "duckduckgo")
    with (folder / "mpchadwick_params.csv").open(encoding="utf-8", newline="") as table:
        for row in csv.DictReader(table):
            add(row["name"], "mpchadwick")
    neat_url = json.loads((folder / "neaturl_default-params-by-category.json").read_text("utf-8"))
    for category in neat_url["categories"]:
        for param in category["params"]:
            if "@" not in param and "*" not in param:
                add(param, "neaturl")
    return listed, skipped


def _names_of_rule(rule: str) -> set[str]:
    """The plain parameter names a rule denotes. ClearURLs lets most rules follow an
    encoded "?" (``(?:%3F)?name``), as a parameter does in a URL nested in another one's
    value: that prefix is not part of the name."""
    names = {name.removeprefix("%3f") for name in expand_rule(rule)}
    odd = sorted(name for name in names if not _PLAIN_NAME.fullmatch(name))
    if odd:
        raise UnexpandableRule(f"not a plain name: {odd[0]!r}")
    return names


def consensus_names(folder: Path, at_least: int = 2) -> dict[str, set[str]]:
    """The names *at_least* registries strip on every site (letters, digits and ``_``)."""
    return {
        name: registries
        for name, registries in global_names(folder).items()
        if len(registries) >= at_least and re.fullmatch(r"[a-z0-9_]+", name)
    }


def missing_from_defaults(folder: Path, at_least: int = 1) -> dict[str, set[str]]:
    """Names *at_least* registries strip on every site that the default rules keep and
    that no review has kept on purpose: what a registry added since the last review."""
    from crawler.url.canonical import UrlCanonicalizer  # the rules as a crawl applies them

    canonicalize = UrlCanonicalizer()
    missing = {}
    for name, registries in consensus_names(folder, at_least).items():
        url = f"http://example.com/?{name}=1"
        if canonicalize(url) == url and name not in REVIEWED_NOT_STRIPPED:
            missing[name] = registries
    return missing


def main(argv: list[str] | None = None) -> int:
    arguments = sys.argv[1:] if argv is None else argv
    if len(arguments) != 1:
        print(__doc__.split("Usage::")[1].strip().split("\n")[0], file=sys.stderr)
        return 2
    folder = Path(arguments[0])
    missing = missing_from_defaults(folder)
    listed = consensus_names(folder, at_least=1)
    print(
        f"# {len(listed)} names the registries strip on every site; "
        f"{len(missing)} not stripped by the defaults and not reviewed yet"
    )
    for name in sorted(missing):
        print(f'    "{name}",  # {", ".join(sorted(missing[name]))}')
    skipped = skipped_rules(folder)
    if skipped:
        print(f"# {len(skipped)} rules for every site skipped: they denote no finite set of names")
    for registry, rule, reason in skipped:
        print(f"#   {registry}: {rule}  ({reason})")
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
