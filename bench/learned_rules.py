"""Downloads per resource with learned URL rules, against stock Scrapy and the fixed rules.

Usage (from the repository root)::

    .venv/bin/python bench/learned_rules.py [--products 600] [--repeat 1] [--json out.json]

* **Site.** ``python -m crawler.demo.server --site params`` in a subprocess on 127.0.0.1:
  a generated shop (:mod:`crawler.demo.param_site`) whose links carry parameters that no
  tracking list contains (``ref``, ``from``, ``view``, ``share``, ``hl``, ``v``, ``lang=en``,
  ``/guides/<name>/index.html``: more than a third of its links) and parameters that change
  the page (``page``, ``sort``, ``id``, ``q``, ``lang=fr``). The server counts every request,
  and by which resource it answered.
* **Crawls.** ``scrapy crawl site`` of the demo project, one process each, in one run,
  interleaved when ``--repeat`` > 1: *stock* (``ADDONS = {}``, Scrapy's ``RFPDupeFilter``),
  *fixed rules* (the add-on with ``DEDUP_URL_LEARN = False``) and *learning* (the add-on's
  defaults). Downloads per resource is the server's count of requests divided by the number
  of the site's resources; *coverage* is the share of resources downloaded at least once
  (below 1: a page lost).
* **A tree served twice.** ``--site params-prefix`` with ``--prefix-products`` products (36:
  96 resources, a small site): the shop served again under ``/v2/``, linked from the pages'
  footers; each mode crawled once, and the path rules learned.
* **A parameter that changes some pages only.** ``--site params-tabs`` and
  ``--site params-tabs-rare``: ``?tab=reviews`` on every product page, showing the reviews of
  one product in 10 or in 50 and the page itself elsewhere; ``--tabs-runs`` crawls each,
  learning, and the pages each never downloaded (a rule that hid them and was not retracted).
* **Cost of learning.** For each parameter, how many downloads of URLs carrying it each
  crawl made, against the fixed rules' spending on the same parameter; and of those, the
  downloads before its rule was learned (from the crawl's log: what learning it cost; the
  rest are requests already queued or downloading then, and the verification budget).
"""

from __future__ import annotations

import argparse
import json
import random
import re
import shlex
import subprocess
import sys
import time
import urllib.request
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qsl, urlsplit

from machine import machine_facts

from crawler.demo.param_site import IRRELEVANT_PARAMS, ParamSite

if TYPE_CHECKING:
    from collections.abc import Sequence

REPO_ROOT = Path(__file__).resolve().parent.parent
MODES: dict[str, list[str]] = {
    "stock": ["-s", "ADDONS={}", "-s", "DUPEFILTER_CLASS=scrapy.dupefilters.RFPDupeFilter"],
    "fixed rules": ["-s", "DEDUP_URL_LEARN=False"],
    "learning": [],
}
LEARNED = re.compile(
    r"Learned URL rule \S+ (\?\w+|/\S+): (\d+) pages .*?after (\d+) downloads of URLs with it"
)
#: The sites with a `tab` parameter, by how rarely it changes a page.
TABS_SITES = {10: "params-tabs", 50: "params-tabs-rare"}
RETRACTED = re.compile(r"Retracted learned URL rule \S+ (\?\w+|/\S+):")


def start_server(
    products: int, seed: int, site: str = "params"
) -> tuple[subprocess.Popen[str], str]:
    command = [sys.executable, "-m", "crawler.demo.server", "--site", site]
    command += ["--articles", str(products), "--seed", str(seed)]
    server = subprocess.Popen(command, cwd=REPO_ROOT, stdout=subprocess.PIPE, text=True)
    assert server.stdout is not None
    line = server.stdout.readline().strip()
    if not line.startswith("READY "):
        server.kill()
        raise RuntimeError(f"the demo server did not start: {line!r}")
    return server, line.split()[1]


def control(url: str, endpoint: str) -> dict[str, Any]:
    with urllib.request.urlopen(f"{url}__demo/{endpoint}") as response:
        result: dict[str, Any] = json.load(response)
        return result


def by_parameter(by_target: dict[str, int]) -> Counter[str]:
    counts: Counter[str] = Counter()
    for target, count in by_target.items():
        parts = urlsplit(target)
        for name in {name for name, _ in parse_qsl(parts.query)}:
            counts[f"?{name}"] += count
        if parts.path.endswith("/index.html"):
            counts["/index.html"] += count
    return counts


def _carries_unknown_parameter(link: str) -> bool:
    """Whether *link* carries a parameter of the shop that changes nothing (or an alias)."""
    parts = urlsplit(link)
    params = parse_qsl(parts.query)
    return (
        parts.path.endswith("/index.html")
        or ("lang", "en") in params
        or any(name in IRRELEVANT_PARAMS for name, _ in params)
    )


def crawl(url: str, mode: str, settings: Sequence[str] = ()) -> dict[str, Any]:
    control(url, "reset")
    command = [sys.executable, "-m", "scrapy", "crawl", "site", "-a", f"url={url}"]
    command += ["-s", "LOG_LEVEL=INFO", *MODES[mode]]
    if mode != "stock":
        for setting in settings:
            command += ["-s", setting]
    started = time.perf_counter()
    completed = subprocess.run(command, cwd=REPO_ROOT, capture_output=True, text=True)
    seconds = time.perf_counter() - started
    if completed.returncode:
        raise RuntimeError(f"{mode} crawl failed:\n{completed.stderr[-3000:]}")
    hits = control(url, "hits")
    return {
        "seconds": seconds,
        "downloads": hits["total"],
        "resources_downloaded": sorted(hits["by_resource"]),
        "by_parameter": dict(by_parameter(hits["by_target"])),
        "learned": {
            name: [int(pages), int(spent)]
            for name, pages, spent in LEARNED.findall(completed.stderr)
        },
        "retracted": RETRACTED.findall(completed.stderr),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--products", type=int, default=600, help="products of the shop")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--repeat", type=int, default=1, help="crawls of each mode")
    parser.add_argument("--json", type=Path, help="write the raw numbers here")
    parser.add_argument(
        "--tabs-runs",
        type=int,
        default=3,
        help="crawls of each site with a `tab` parameter (one page in 10, one in 50)",
    )
    parser.add_argument(
        "--prefix-products",
        type=int,
        default=36,
        help="products of the shop served again under /v2/ (0: skip it)",
    )
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="a setting of the add-on's crawls (e.g. DEDUP_URL_LEARN_VERIFY_FIRST=10)",
    )
    args = parser.parse_args(argv)
    began = time.perf_counter()
    resources = ParamSite(products=args.products, seed=args.seed).resources
    links = list(ParamSite(products=args.products, seed=args.seed).links())
    unknown = sum(1 for link in links if _carries_unknown_parameter(link))
    server, url = start_server(args.products, args.seed)
    runs: dict[str, list[dict[str, Any]]] = {mode: [] for mode in MODES}
    try:
        order = list(MODES)
        for _ in range(args.repeat):
            random.shuffle(order)
            for mode in order:
                runs[mode].append(crawl(url, mode, args.set))
    finally:
        server.terminate()
        server.wait()
    # the hard cases: a parameter that changes one page in ten, one in fifty
    tabs_runs: dict[int, list[dict[str, Any]]] = {}
    for every, site in TABS_SITES.items():
        tabs_server, tabs_url = start_server(args.products, args.seed, site)
        try:
            tabs_runs[every] = [
                crawl(tabs_url, "learning", args.set) for _ in range(args.tabs_runs)
            ]
        finally:
            tabs_server.terminate()
            tabs_server.wait()
    prefix_runs: dict[str, dict[str, Any]] = {}
    if args.prefix_products:
        prefix_server, prefix_url = start_server(args.prefix_products, args.seed, "params-prefix")
        try:
            for mode in random.sample(list(MODES), len(MODES)):
                prefix_runs[mode] = crawl(prefix_url, mode, args.set)
        finally:
            prefix_server.terminate()
            prefix_server.wait()
    prefix_resources = ParamSite(
        products=args.prefix_products, seed=args.seed, second_prefix=True
    ).resources

    print(f"# Learned URL rules: downloads per resource ({len(resources)} resources)\n")
    print(
        f"Site: `--site params --articles {args.products}`, {len(links)} links on its pages, "
        f"{unknown / len(links):.0%} of them with a parameter that changes nothing and that "
        "no tracking list knows (or an `index.html` alias).\n"
    )
    print("| crawl | downloads | per resource | coverage | wall time | vs stock |")
    print("|---|---:|---:|---:|---:|---:|")
    stock_seconds = sum(run["seconds"] for run in runs["stock"]) / args.repeat
    for mode, mode_runs in runs.items():
        downloads = sum(run["downloads"] for run in mode_runs) / args.repeat
        coverage = min(len(set(run["resources_downloaded"]) & resources) for run in mode_runs)
        seconds = sum(run["seconds"] for run in mode_runs) / args.repeat
        print(
            f"| {mode} | {downloads:.0f} | {downloads / len(resources):.3f} | "
            f"{coverage / len(resources):.3f} | {seconds:.1f} s | {seconds / stock_seconds:.2f}x |"
        )
    print("\nDownloads of URLs carrying each parameter (first run of each crawl):\n")
    names = sorted(set().union(*(run["by_parameter"] for run in (r[0] for r in runs.values()))))
    learned = runs["learning"][0]["learned"]
    print(
        "| parameter | stock | fixed rules | learning | learned with (pages) "
        "| downloads with it before learned |"
    )
    print("|---|---:|---:|---:|---|---:|")
    for name in names:
        counts = [runs[mode][0]["by_parameter"].get(name, 0) for mode in MODES]
        pages, spent = learned.get(name, ("not learned", ""))
        print(f"| `{name}` | " + " | ".join(map(str, counts)) + f" | {pages} | {spent} |")
    for every, site in TABS_SITES.items():
        tabs_resources = ParamSite(
            products=args.products, seed=args.seed, tabs=True, reviewed_every=every
        ).resources
        print(
            f"\nWith `?tab=reviews` on every product page (`--site {site}`: it shows the "
            f"reviews of one product in {every}, the description of the others), learning, "
            f"{args.tabs_runs} crawls:\n"
        )
        print("| crawl | downloads a resource | pages never downloaded | `tab` |")
        print("|---|---:|---:|---|")
        for number, run in enumerate(tabs_runs[every], 1):
            missing = len(tabs_resources - set(run["resources_downloaded"]))
            tab = "learned" if "?tab" in run["learned"] else "not learned"
            if "?tab" in run["retracted"]:
                tab = "learned, then retracted"
            print(
                f"| {number} | {run['downloads'] / len(tabs_resources):.3f} | {missing} | {tab} |"
            )
        lost = sum(
            1 for run in tabs_runs[every] if tabs_resources - set(run["resources_downloaded"])
        )
        print(f"\nCrawls that lost a page: {lost} of {len(tabs_runs[every])}.")
    if prefix_runs:
        print(
            f"\nThe shop with {args.prefix_products} products ({len(prefix_resources)} "
            "resources) served again under `/v2/` (`--site params-prefix`), each mode once:\n"
        )
        print(
            "| crawl | downloads | per resource | coverage "
            "| path rules learned (pages, downloads before) |"
        )
        print("|---|---:|---:|---:|---|")
        for mode, run in prefix_runs.items():
            covered = len(set(run["resources_downloaded"]) & prefix_resources)
            paths = ", ".join(
                f"`{name}` ({pages}, {spent})"
                for name, (pages, spent) in sorted(run["learned"].items())
                if name.startswith("/")
            )
            print(
                f"| {mode} | {run['downloads']} | {run['downloads'] / len(prefix_resources):.3f} "
                f"| {covered / len(prefix_resources):.3f} | {paths or 'none'} |"
            )
    print(f"\nMachine: {json.dumps(machine_facts('scrapy'))}")
    print(
        f"Command: `{shlex.join([sys.executable, *sys.argv])}`; {time.perf_counter() - began:.0f} s"
    )
    if args.json:
        raw = {
            "resources": len(resources),
            "runs": runs,
            "tabs_runs": {f"one page in {every}": runs for every, runs in tabs_runs.items()},
            "prefix_runs": prefix_runs,
        }
        args.json.write_text(json.dumps(raw, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
