"""The README and the manual in docs/ cannot drift from the code: settings and their
defaults, links, and every command they show, which a test runs."""

from __future__ import annotations

import ast
import importlib
import re
import subprocess
import sys
from pathlib import Path

import pytest

from crawler import defaults
from tests.conftest import REPO_ROOT

README = REPO_ROOT / "README.md"
DOCS = sorted((REPO_ROOT / "docs").glob("*.md"))
EXAMPLE_README = REPO_ROOT / "examples" / "news" / "README.md"
PAGES = [README, *DOCS, EXAMPLE_README]
SETTING_ROW = re.compile(r"^\| `(DEDUP_[A-Z_]+)` \| (.+?) \| (.+) \|$")
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
HEADING = re.compile(r"^(#{1,6}) (.+)$")

#: Every command the README and docs/ show, and the test that runs it (a pattern the whole
#: command matches). A test of this module checks that each command has one, and that
#: the test exists.
COMMANDS_RUN_BY = {
    r"scripts/demo": "tests/crawls/test_crawl.py::test_demo_command_compares_with_stock_scrapy",
    r"scripts/test": ".ci/run",
    r"\.venv/bin/pip install -e '\.\[bench\]'": (
        "tests/test_benchmarks.py::test_bench_extra_is_installed"
    ),
    r"\.venv/bin/python bench/(\w+)\.py.*": "tests/test_benchmarks.py::test_each_benchmark_runs",
    r"scrapy canonicalize .*": (
        "tests/test_docs.py::test_the_canonicalize_examples_print_what_the_docs_show"
    ),
    r"printf .* \| scrapy canonicalize --json": (
        "tests/test_docs.py::test_the_canonicalize_examples_print_what_the_docs_show"
    ),
    r"scrapy dedup-text comments\.txt --audit audit\.jsonl": (
        "tests/test_docs.py::test_the_dedup_text_example_prints_what_the_docs_show"
    ),
    r"scrapy dedup-inspect site -s JOBDIR=\S+": (
        "tests/test_commands_dedup_inspect.py::test_human_output"
    ),
    r"scrapy dedup-forget -s JOBDIR=\S+ (?!--recrawl).*": (
        "tests/test_commands_dedup_forget.py::test_memory_store_forgets"
    ),
    r"scrapy dedup-(inspect|forget) -s JOBDIR=\S+ --(url|recrawl) .*": (
        "tests/crawls/test_recrawl.py::"
        "test_dedup_inspect_shows_a_pages_record_and_dedup_forget_makes_it_due"
    ),
    r"scrapy crawl articles -a url=\S+ -o articles\.jsonl -s JOBDIR=\S+": (
        "tests/test_examples.py::test_the_example_project_crawls_each_article_once"
    ),
    r"scrapy dedup-report \S+ -o report\.html": (
        "tests/test_report.py::test_report_of_a_real_crawl_renders_in_chromium"
    ),
}


def shown_commands(page: Path) -> list[str]:
    """The commands of a page: the lines of its ``sh`` blocks, and the ``$ `` lines of its
    other code blocks (with their ``\\`` continuation lines)."""
    commands: list[str] = []
    language: str | None = None
    continued: str | None = None
    for line in page.read_text("utf-8").splitlines():
        if line.startswith("```"):
            language = line[3:].strip() if language is None else None
            continue
        if language is None:
            continue
        if continued is not None:
            continued += " " + line.strip().removesuffix("\\").strip()
            if not line.rstrip().endswith("\\"):
                commands.append(continued)
                continued = None
        elif language == "sh":
            command = line.split("  #", 1)[0].strip()
            if command and not command.startswith("#"):
                commands.append(command)
        elif line.startswith("$ "):
            command = line[2:].rstrip()
            if command.endswith("\\"):
                continued = command.removesuffix("\\").strip()
            else:
                commands.append(command)
    return commands


def code_block_after(page: Path, marker: str) -> list[str]:
    """The lines of the first code block of *page* that starts with the line *marker*."""
    lines = page.read_text("utf-8").splitlines()
    start = lines.index(marker)
    end = lines.index("```", start)
    return lines[start:end]


def anchor(heading: str) -> str:
    """The anchor a forge gives a Markdown heading."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def anchors(page: Path) -> set[str]:
    found: set[str] = set()
    in_code = False
    for line in page.read_text("utf-8").splitlines():
        if line.startswith("```"):
            in_code = not in_code
        elif not in_code and (match := HEADING.match(line)):
            found.add(anchor(match.group(2)))
    return found


def settings_rows(page: Path, section: str | None = None) -> dict[str, str]:
    text = page.read_text("utf-8")
    if section is not None:
        text = text.split(section, 1)[1].split("\n## ", 1)[0]
    return {m.group(1): m.group(2) for m in map(SETTING_ROW.match, text.splitlines()) if m}


def test_the_readme_fits_on_two_screens():
    assert len(README.read_text("utf-8").splitlines()) <= 150


def test_every_setting_is_documented_with_its_default():
    table = settings_rows(REPO_ROOT / "docs" / "settings.md")
    names = sorted(name for name in vars(defaults) if name.startswith("DEDUP_"))
    assert sorted(table) == names
    for name in names:
        shown = table[name].strip("`")
        if name == "DEDUP_URL_STRIP_PARAMS":
            assert shown == "the tracking list below"
            continue
        assert ast.literal_eval(shown) == getattr(defaults, name), name


def test_the_readme_settings_show_their_defaults():
    table = settings_rows(README)
    assert len(table) == 8
    for name, shown in table.items():
        assert ast.literal_eval(shown.strip("`")) == getattr(defaults, name), name


@pytest.mark.parametrize("page", PAGES, ids=lambda page: str(page.relative_to(REPO_ROOT)))
def test_every_link_resolves(page: Path):
    for target in LINK.findall(page.read_text("utf-8")):
        if re.match(r"^[a-z]+:", target):
            continue  # another site's address
        path, _, fragment = target.partition("#")
        linked = (page.parent / path).resolve() if path else page
        assert linked.exists(), f"{page.name}: {target}"
        if fragment:
            assert fragment in anchors(linked), f"{page.name}: {target}"


def test_the_manual_is_linked_from_the_readme():
    linked = {target.partition("#")[0] for target in LINK.findall(README.read_text("utf-8"))}
    assert {f"docs/{page.name}" for page in DOCS} <= linked


@pytest.mark.parametrize("page", PAGES, ids=lambda page: str(page.relative_to(REPO_ROOT)))
def test_every_command_shown_is_run_by_a_test(page: Path):
    for command in shown_commands(page):
        runners = [
            test for pattern, test in COMMANDS_RUN_BY.items() if re.fullmatch(pattern, command)
        ]
        assert len(runners) == 1, f"{page.name}: no test runs {command!r}"
        if runners[0] == ".ci/run":
            assert "exec scripts/test" in (REPO_ROOT / ".ci" / "run").read_text("utf-8")
            continue
        module_path, _, function = runners[0].partition("::")
        module = importlib.import_module(module_path.removesuffix(".py").replace("/", "."))
        assert callable(getattr(module, function, None)), runners[0]


def test_the_canonicalize_examples_print_what_the_docs_show():
    page = REPO_ROOT / "docs" / "commands.md"
    lines = page.read_text("utf-8").splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("$ scrapy canonicalize"))
    block = lines[start : lines.index("```", start)]
    commands = [i for i, line in enumerate(block) if line.startswith("$ ")]
    for number, at in enumerate(commands):
        end = commands[number + 1] if number + 1 < len(commands) else len(block)
        command = block[at][2:]
        shown_from = at + 1
        while command.endswith("\\"):
            command = command.removesuffix("\\") + block[shown_from].strip()
            shown_from += 1
        command = command.replace("scrapy ", f"{sys.executable} -m scrapy.cmdline ", 1)
        result = subprocess.run(
            ["bash", "-c", command], capture_output=True, text=True, check=True, timeout=60
        )
        assert result.stdout.splitlines() == block[shown_from:end], command


DEDUP_TEXT_EXAMPLE = ("comments.txt", "--audit", "audit.jsonl")


def test_the_dedup_text_example_prints_what_the_docs_show(tmp_path: Path):
    page = REPO_ROOT / "docs" / "dedup-text.md"
    comments = code_block_after(page, "```text")[1:]
    (tmp_path / "comments.txt").write_text("\n".join(comments) + "\n", "utf-8")
    shown = code_block_after(page, "$ scrapy dedup-text comments.txt --audit audit.jsonl")[1:]
    result = subprocess.run(
        [sys.executable, "-m", "scrapy.cmdline", "dedup-text", *DEDUP_TEXT_EXAMPLE],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    printed = (result.stdout + result.stderr).splitlines()
    timing = re.compile(r"in [\d.]+ s \([\d,]+ records/s\)")
    assert [timing.sub("", line) for line in printed] == [timing.sub("", line) for line in shown]
    audit = code_block_after(page, "```json")[1:]
    written = (tmp_path / "audit.jsonl").read_text("utf-8").splitlines()
    assert [ast.literal_eval(line.replace("null", "None")) for line in written] == [
        ast.literal_eval(line.replace("null", "None")) for line in audit
    ]
