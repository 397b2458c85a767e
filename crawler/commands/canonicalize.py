"""``scrapy canonicalize URL...``: the canonical form of URLs, and why.

Uses the project's ``DEDUP_URL_*`` settings when run in a project (and ``-s``
options), the defaults elsewhere. Without URLs, or with ``-``, reads one URL
a line from standard input.
"""

from __future__ import annotations

import json
import re
import sys
from typing import TYPE_CHECKING, Any, ClassVar

from scrapy.commands import ScrapyCommand
from scrapy.exceptions import UsageError

from crawler.url.canonical import UrlCanonicalizer
from crawler.url.configuration import url_rules_from_settings

if TYPE_CHECKING:
    import argparse
    from collections.abc import Iterable, Iterator

UNHANDLED = "not an absolute http(s) URL with a valid host: left unchanged"


class Command(ScrapyCommand):
    requires_project = False
    requires_crawler_process = False
    default_settings: ClassVar[dict[str, Any]] = {"LOG_ENABLED": False}

    def syntax(self) -> str:
        return "[options] [URL ...]"

    def short_desc(self) -> str:
        return "Print the canonical form of URLs and the rules that changed them"

    def long_desc(self) -> str:
        return (
            "Print the canonical form of each URL, as the dedup URL filter compares "
            "URLs, and the rules that changed it, under the project's DEDUP_URL_* "
            "settings (the defaults outside a project). Without URLs, or with '-', "
            "reads one URL a line from standard input. A string that is not an "
            "absolute http(s) URL with a valid host is left unchanged, and said so."
        )

    def add_options(self, parser: argparse.ArgumentParser) -> None:
        super().add_options(parser)
        parser.add_argument(
            "--json",
            action="store_true",
            help="print one JSON object a URL: url, canonical, rules, changed, handled",
        )

    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        assert self.settings is not None
        try:
            canonicalizer = UrlCanonicalizer(url_rules_from_settings(self.settings))
        except (TypeError, ValueError) as exc:
            raise UsageError(str(exc)) from exc
        for url in urls_from_arguments(args):
            explanation = explain(canonicalizer, url)
            if opts.json:
                write_utf8(json.dumps(explanation, ensure_ascii=False))
            else:
                write_utf8(describe(explanation))


def write_utf8(text: str) -> None:
    """One line of output in UTF-8, whatever the locale says."""
    stream = getattr(sys.stdout, "buffer", None)
    if stream is None:
        print(text)
    else:
        stream.write(text.encode("utf-8") + b"\n")
        stream.flush()


def urls_from_arguments(args: list[str]) -> Iterator[str]:
    """The URLs given as arguments; standard input, one a line, for "-" or none.

    Input is read as bytes: a byte that is not UTF-8 (a Latin-1 "é" in a path) is
    percent-encoded, as a browser sends it, rather than stopping the command.
    """
    sources: Iterable[str] = args or ["-"]
    for arg in sources:
        if arg != "-":
            yield percent_encode_undecodable(arg)
            continue
        for line in sys.stdin.buffer:
            url = percent_encode_undecodable(
                line.rstrip(b"\r\n").decode("utf-8", "surrogateescape")
            )
            if url.strip():
                yield url


_UNDECODABLE_BYTE = re.compile("[\udc80-\udcff]")


def percent_encode_undecodable(text: str) -> str:
    """*text* with each byte that did not decode (a lone surrogate from ``surrogateescape``)
    written ``%XX``.

    >>> percent_encode_undecodable(b"http://a.test/caf\\xe9".decode("utf-8", "surrogateescape"))
    'http://a.test/caf%E9'
    """
    return _UNDECODABLE_BYTE.sub(lambda match: f"%{ord(match.group()) - 0xDC00:02X}", text)


def explain(canonicalizer: UrlCanonicalizer, url: str) -> dict[str, Any]:
    """The canonical form of *url*, the rules that changed it, and whether the
    rules apply to it at all."""
    canonical = canonicalizer(url)
    return {
        "url": url,
        "canonical": canonical,
        "rules": canonicalizer.explain(url),
        "changed": canonical != url,
        "handled": canonicalizer.handles(url),
    }


def describe(explanation: dict[str, Any]) -> str:
    """Two lines for people: the URL, then its canonical form and why."""
    if not explanation["handled"]:
        why = UNHANDLED
    elif explanation["rules"]:
        why = ", ".join(explanation["rules"])
    else:
        why = "already canonical"
    return f"{explanation['url']}\n  {explanation['canonical']}  ({why})"
