"""How many tracking-parameter variants of real URLs the canonical form merges, registry by
registry, and that no distinct page is merged.

Usage (from the repository root)::

    .venv/bin/python bench/tracking_registries.py [--corpus ../shared/corpus]

What the numbers mean:

* **URLs.** The http(s) URLs of ``<corpus>/url/real_urls.tsv`` (real pages of several
  evaluation sets), each in its canonical form with the default rules.
* **Variants.** For each public registry in ``<corpus>/url/tracking-params`` (read by
  :mod:`crawler.url.tracking_registries`: the names it strips on every site), each URL gets one
  of that registry's names (in turn, so every name is used) with a value, appended to its
  query. A variant is *merged* when its canonical form is the URL's: one download where a
  crawl without the rule makes two. Names a registry lists that the defaults keep (a word a
  site could use, or a name reviewed and kept) are listed.
* **Distinct pages.** Each URL also gets a parameter that selects other content (``page``,
  ``id``, ``q``, ``sort``, ``lang``...: the names the default list must never hold); every
  such pair must stay apart (*wrongly merged*: target 0).
"""

from __future__ import annotations

import argparse
import os
from collections import defaultdict
from pathlib import Path
from urllib.parse import urlsplit

from crawler.url.canonical import UrlCanonicalizer
from crawler.url.tracking_registries import global_names

REPO_DIR = Path(__file__).resolve().parent.parent
CONTENT_PARAMS = ("page", "id", "q", "sort", "lang", "p", "category", "offset", "year", "v")


def real_urls(corpus: Path) -> list[str]:
    lines = (corpus / "url" / "real_urls.tsv").read_text("utf-8").splitlines()[1:]
    urls = [line.split("\t", 1)[1] for line in lines if "\t" in line]
    return [url for url in urls if urlsplit(url).scheme in ("http", "https")]


def with_param(url: str, name: str, value: str) -> str:
    """*url* with ``name=value`` appended to its query (before any fragment, ``#`` alone
    included)."""
    base, hash_sign, fragment = url.partition("#")
    separator = "&" if urlsplit(base).query else "?"
    return f"{base}{separator}{name}={value}{hash_sign}{fragment}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--corpus", help="corpus folder (default: $DEDUP_CORPUS_DIR)")
    arguments = parser.parse_args()
    corpus = Path(
        arguments.corpus
        or os.environ.get("DEDUP_CORPUS_DIR")
        or REPO_DIR.parent / "shared" / "corpus"
    )
    canonicalize = UrlCanonicalizer()
    urls = real_urls(corpus)
    canonical = [canonicalize(url) for url in urls]
    by_registry: dict[str, list[str]] = defaultdict(list)
    for name, registries in sorted(global_names(corpus / "url" / "tracking-params").items()):
        for registry in registries:
            by_registry[registry].append(name)

    print("# Tracking parameters from the public registries on real URLs\n")
    print(f"{len(urls):,} real URLs from {corpus / 'url' / 'real_urls.tsv'}.\n")
    print("| registry | names (every site) | variants merged | names kept |")
    print("|---|---:|---:|---|")
    total_merged = total = 0
    for registry in sorted(by_registry):
        names = by_registry[registry]
        kept = sorted(
            name for name in names if canonicalize(f"http://example.com/?{name}=1").endswith("=1")
        )
        merged = 0
        for number, (url, form) in enumerate(zip(urls, canonical, strict=True)):
            variant = with_param(url, names[number % len(names)], f"x{number}")
            merged += canonicalize(variant) == form
        total_merged += merged
        total += len(urls)
        shown = ", ".join(f"`{name}`" for name in kept[:12]) + (" ..." if len(kept) > 12 else "")
        print(
            f"| {registry} | {len(names)} | {merged / len(urls):.1%} ({merged:,}) "
            f"| {len(kept)}: {shown or '-'} |"
        )
    print(f"| all | | {total_merged / total:.1%} ({total_merged:,} of {total:,}) | |")
    wrong = sum(
        canonicalize(with_param(url, name, "2")) == form
        for url, form in zip(urls, canonical, strict=True)
        for name in CONTENT_PARAMS
    )
    pairs = len(urls) * len(CONTENT_PARAMS)
    print(
        f"\nDistinct pages (each URL with one of {', '.join(CONTENT_PARAMS)}): "
        f"{pairs:,} pairs, **{wrong} wrongly merged**."
    )


if __name__ == "__main__":
    main()
