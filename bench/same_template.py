"""Measure how often content dedup takes distinct articles on one template for copies.

Usage (from the repository root)::

    .venv/bin/python bench/same_template.py [--corpus ../shared/corpus] [--pages N]
        [--extractor NAME ...] [--json out.json]

What the numbers mean, and what the script promises about them:

* **Pages.** The WCXB pages of ``<corpus>/pages/wcxb-dev`` (``html/NNNN.html.gz``, with the
  human-checked main text in ``ground-truth/NNNN.json``), read in place. The pages are
  taken in file order and paired: the first of each pair gives the *template*, the second
  the *articles*. ``--pages N`` takes the first N files. The corpus folder is
  ``--corpus``, else ``$DEDUP_CORPUS_DIR``, else ``<repo>/../shared/corpus``.
* **Distinct pages on one template.** From each template page, two more pages of its
  site: every element of the template page (``p``, headings, list items, table cells,
  ``blockquote``, ``pre``...) whose text is part of its human-checked main text gets a
  paragraph of the other page's main text instead, the odd paragraphs in one page and
  the even ones in the other (an element left over is emptied). Navigation, header,
  footer, sidebars, the title and all markup stay. A page whose replaced elements held
  less than 60% of the main text is left out (counted): its article was mostly in markup
  this edit does not reach, and the result would be a near copy, not a distinct page. The
  template page and its two pages are three distinct documents: no two pages of the stream
  share their article, and the two made from one article share none of its paragraphs.
* **Detectors.** For each extractor, one ``NearDuplicateDetector()`` with its defaults
  fed every page in file order (a template page, then its two), the text of
  :func:`crawler.content.extract.extract` with that extractor, fingerprinted with its page's size
  class as the item pipeline does. Every duplicate decision is a **false flag**: a page
  lost. The target is none; today's pages where every extractor fails are listed.
* **Cost.** CPU time (process time) of the extraction, decoding included, per page; the
  share of pages where ``"auto"`` looked past resiliparse's text (it kept little of the
  page), and of those the share the page's main landmark answered (trafilatura read the
  others).

This is the case where the fast extractor's text keeps more of the template than of what
tells two articles apart. Output is Markdown on stdout.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import re
import shlex
import sys
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import lxml.html
from machine import machine_facts
from resiliparse.parse.html import HTMLTree

from crawler.content.extract import (
    EXTRACTORS,
    Extractor,
    decode_html,
    extract,
    kept_little,
    landmark_text,
)
from crawler.content.fingerprints import page_size_class
from crawler.content.neardup import NearDuplicateDetector
from crawler.defaults import DEDUP_EXTRACTOR

if TYPE_CHECKING:
    from collections.abc import Sequence

CORPUS_ENV_VAR = "DEDUP_CORPUS_DIR"
REPO_DIR = Path(__file__).resolve().parent.parent
#: Elements whose text is one block of the page: what the edit replaces.
TEXT_BLOCKS = frozenset(
    {"p", "h1", "h2", "h3", "h4", "h5", "h6", "li", "td", "th", "blockquote", "pre", "dd", "dt"}
)
#: Below this share of the main text replaced, a page is left out (see the module doc).
MIN_REPLACED_SHARE = 0.6
MIN_BLOCK_CHARS = 15


@dataclass
class StreamPage:
    template: str
    url: str
    body: bytes


@dataclass
class Outcome:
    extractor: str
    false_flags: list[dict[str, Any]] = field(default_factory=list)
    cpu_ms_a_page: float = 0.0
    in_doubt_share: float | None = None
    landmark_share: float | None = None


def letters(text: str) -> str:
    """Lower-case letters and digits only: how a block of the page is found in the
    human-checked text, whose quotes and spaces differ from the page's."""
    return re.sub(r"[\W_]+", "", text.lower())


def on_template(page: bytes, main_text: str, paragraphs: Sequence[str]) -> tuple[bytes, float]:
    """*page* with its main text's blocks holding *paragraphs* instead, and the share of
    the main text that the replaced blocks held."""
    _, html = decode_html(page)
    tree = lxml.html.document_fromstring(html)
    main = letters(main_text)
    blocks: list[Any] = []
    for element in tree.iter(*TEXT_BLOCKS):
        if any(ancestor in blocks for ancestor in element.iterancestors()):
            continue
        block = letters(element.text_content())
        if len(block) >= MIN_BLOCK_CHARS and block in main:
            blocks.append(element)
    replaced = sum(len(letters(element.text_content())) for element in blocks)
    for index, element in enumerate(blocks):
        for child in list(element):
            element.remove(child)
        element.text = paragraphs[index] if index < len(paragraphs) else ""
    body = lxml.html.tostring(tree, encoding="utf-8", doctype="<!DOCTYPE html>")
    return body, replaced / max(1, len(main))


def build_stream(corpus: Path, pages: int | None) -> tuple[list[StreamPage], int]:
    """The stream of the module doc, and how many made pages were left out."""
    root = corpus / "pages" / "wcxb-dev"
    names = sorted(path.name.split(".")[0] for path in (root / "html").glob("*.html.gz"))
    if pages is not None:
        names = names[:pages]
    if not names:
        raise SystemExit(f"no WCXB pages in {root} (set --corpus or ${CORPUS_ENV_VAR})")

    def main_text(name: str) -> str:
        truth = json.loads((root / "ground-truth" / f"{name}.json").read_text("utf-8"))
        return str(truth["ground_truth"].get("main_content") or "")

    stream: list[StreamPage] = []
    left_out = 0
    for template, articles in zip(names[0::2], names[1::2], strict=False):
        body = gzip.decompress((root / "html" / f"{template}.html.gz").read_bytes())
        stream.append(StreamPage(template, f"https://t{template}.example/", body))
        paragraphs = [line for line in main_text(articles).splitlines() if line.strip()]
        for parity in (0, 1):
            made, share = on_template(body, main_text(template), paragraphs[parity::2])
            if share < MIN_REPLACED_SHARE:
                left_out += 1
                continue
            stream.append(StreamPage(template, f"https://t{template}.example/{parity}", made))
    return stream, left_out


def measure(stream: Sequence[StreamPage], extractor: Extractor) -> Outcome:
    outcome = Outcome(extractor)
    detector = NearDuplicateDetector()
    in_doubt = landmarks = 0
    elapsed = 0.0
    for page in stream:
        started = time.process_time()
        result = extract(page.body, page.url, extractor=extractor)
        elapsed += time.process_time() - started
        if extractor == "auto":
            fast = extract(page.body, page.url, extractor="resiliparse")
            if kept_little(fast.text, fast.page_chars):
                in_doubt += 1
                tree = HTMLTree.parse(decode_html(page.body)[1])
                landmarks += bool(landmark_text(tree, fast.page_chars))
        text_fingerprint = replace(
            detector.fingerprint(result.text), page_size=page_size_class(result.page_chars)
        )
        match = detector.check_fingerprinted(page.url, text_fingerprint).match
        if match is not None:
            outcome.false_flags.append(
                {"page": page.url, "matched": match.key, "kind": match.kind, "stage": match.stage}
            )
    outcome.cpu_ms_a_page = 1000 * elapsed / len(stream)
    if extractor == "auto":
        outcome.in_doubt_share = in_doubt / len(stream)
        outcome.landmark_share = landmarks / max(in_doubt, 1)
    return outcome


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--corpus", help=f"corpus folder (default: ${CORPUS_ENV_VAR})")
    parser.add_argument("--pages", type=int, default=None, help="at most N WCXB files")
    parser.add_argument(
        "--extractor",
        action="append",
        choices=EXTRACTORS,
        help=f"extractors to compare (default: all; {DEDUP_EXTRACTOR!r} is the default's)",
    )
    parser.add_argument("--json", type=Path, help="also write every figure here")
    arguments = parser.parse_args(argv)
    corpus = Path(
        arguments.corpus or os.environ.get(CORPUS_ENV_VAR) or REPO_DIR.parent / "shared" / "corpus"
    )
    started = time.monotonic()
    stream, left_out = build_stream(corpus, arguments.pages)
    outcomes = [measure(stream, extractor) for extractor in arguments.extractor or EXTRACTORS]
    print("# Distinct articles on one template: pages content dedup would lose\n")
    print(f"Command: `{shlex.join([Path(sys.executable).name, *sys.argv])}`  ")
    facts = machine_facts("trafilatura", "resiliparse", "lxml")
    print("Machine: " + ", ".join(f"{key} {value}" for key, value in facts.items()) + "  ")
    templates = len({page.template for page in stream})
    print(
        f"Stream: {len(stream)} distinct pages on {templates} templates "
        f"({left_out} made pages left out: their article was mostly outside the blocks "
        "the edit reaches)\n"
    )
    print(
        "| extractor | false flags (pages lost) | CPU ms a page, extraction "
        "| pages resiliparse kept little of | of which the main landmark answered |"
    )
    print("|---|---:|---:|---:|---:|")
    for outcome in outcomes:
        in_doubt = "" if outcome.in_doubt_share is None else f"{outcome.in_doubt_share:.1%}"
        landmark = "" if outcome.landmark_share is None else f"{outcome.landmark_share:.0%}"
        name = f"`{outcome.extractor}`" + (
            " (default)" if outcome.extractor == DEDUP_EXTRACTOR else ""
        )
        print(
            f"| {name} | {len(outcome.false_flags)} | {outcome.cpu_ms_a_page:.1f} "
            f"| {in_doubt} | {landmark} |"
        )
    print("\nTarget: no more false flags than `trafilatura` alone.\n")
    for outcome in outcomes:
        for flag in outcome.false_flags:
            print(
                f"- `{outcome.extractor}`: {flag['page']} taken for {flag['matched']} "
                f"({flag['kind']}, {flag['stage']} stage)"
            )
    print(f"\nElapsed: {time.monotonic() - started:.0f} s")
    if arguments.json:
        arguments.json.write_text(
            json.dumps(
                {
                    "pages": len(stream),
                    "left_out": left_out,
                    "outcomes": [vars(o) for o in outcomes],
                },
                indent=1,
            )
        )


if __name__ == "__main__":
    main()
