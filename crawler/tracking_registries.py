"""Read the public tracking-parameter registries, and say what the default list lacks.

:data:`crawler.tracking_params.DEFAULT_STRIP_PARAMS` is written by hand, each entry reviewed;
this module is how it is kept up to date. It reads the registries that browsers and privacy
tools publish (file names as in the corpus folder ``url/tracking-params``, each with its
source and licence there):

* ClearURLs' rules (``clearurls_data.min.json``, LGPL-3.0), global provider only;
* AdGuard's URL tracking filter (``adguard_general_url.txt``, GPL-3.0), plain
  ``$removeparam=NAME`` rules;
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

    python -m crawler.tracking_registries ../shared/corpus/url/tracking-params

prints the names the defaults do not strip yet and no review kept, as entries to review and
paste into :mod:`crawler.tracking_params` (or into :data:`REVIEWED_NOT_STRIPPED`), and exits
with status 1 when there are any.
"""

from __future__ import annotations

import csv
import json
import re
import sys
from pathlib import Path

__all__ = ["REVIEWED_NOT_STRIPPED", "consensus_names", "global_names", "missing_from_defaults"]

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
    ("line_uid lt_r srclt is_retargeting external_click_id ircid ex_cid", "a generic name"),
    ("eblastid gpromocode gqt", "it can select the page (a newsletter, a promotion)"),
    (
        "personaclick_search_query personaclick_input_query recommended_by recommended_code",
        "it carries a search query or a code the page may use",
    ),
    ("user_email_address", "a form field name, no vendor's"),
    (
        "analytics_context analytics_trace_id adfrom nx_source _bdadid _ope _clde _cldee "
        "aiad_clid asgtbndr iclid oprtrack rtkcid uzcid beyond_uzcvid beyond_uzmcvid "
        "vs_campaign_id janet famad_xuid nr_email_referer",
        "no registry names its vendor",
    ),
)
REVIEWED_NOT_STRIPPED: dict[str, str] = {
    name: reason for names, reason in _REVIEWED for name in names.split()
}

_PLAIN_NAME = re.compile(r"[\w.-]+")


def global_names(folder: Path) -> dict[str, set[str]]:
    """The parameter names each registry in *folder* strips on every site (plain names
    only, lowercased), each with the registries that list it."""
    listed: dict[str, set[str]] = {}

    def add(name: str, registry: str) -> None:
        listed.setdefault(name.lower(), set()).add(registry)

    clear_urls = json.loads((folder / "clearurls_data.min.json").read_text("utf-8"))
    global_rules = clear_urls["providers"]["globalRules"]
    for rule in global_rules.get("rules", []) + global_rules.get("referralMarketing", []):
        if _PLAIN_NAME.fullmatch(rule):
            add(rule, "clearurls")
    for line in (folder / "adguard_general_url.txt").read_text("utf-8").splitlines():
        match = re.fullmatch(r"\$removeparam=([\w.-]+)", line.strip())
        if match:
            add(match.group(1), "adguard")
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
    return listed


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
    from crawler.urls import UrlCanonicalizer  # the rules as a crawl applies them

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
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
