"""``scrapy dedup-text``, run as a subprocess from a directory outside any Scrapy project."""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import pty
import re
import struct
import subprocess
import sys
import termios
from typing import TYPE_CHECKING, Any

import pytest

from crawler.content.fingerprints import hamming_distance, simhash
from tests.content.test_records import EDITED_COMMENT, LONG_COMMENT, letters

if TYPE_CHECKING:
    from pathlib import Path

COMMENTS = [
    "Great post, thanks for sharing!",
    "great post,   thanks for sharing!!",
    "Check out my channel!",
    "Check out my channel!Check out my channel!Check out my channel!",
    "Ha!",
    "haha",
    "hahaha",
    "2024-05-01 12:00:01 ERROR comment service: connection to db-1 refused, retrying in 5 s",
    "2024-05-01 12:00:07 ERROR comment service: connection to db-1 refused, retrying in 5 s",
    LONG_COMMENT,
    EDITED_COMMENT,
]


def dedup_text(
    cwd: Path, *arguments: str, check: bool = True, timeout: float = 120
) -> subprocess.CompletedProcess[bytes]:
    """Run ``scrapy dedup-text <arguments>`` in *cwd*, outside the repository."""
    env = {name: value for name, value in os.environ.items() if not name.startswith("SCRAPY_")}
    completed = subprocess.run(
        [sys.executable, "-m", "scrapy.cmdline", "dedup-text", *arguments],
        cwd=cwd,
        env=env,
        capture_output=True,
        timeout=timeout,
        check=False,
    )
    if check:
        assert completed.returncode == 0, completed.stderr.decode()[-3000:]
    return completed


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def summary_counts(stderr: bytes) -> dict[str, Any]:
    text = stderr.decode()
    read = re.search(r"^dedup-text: ([\d,]+) records read in [\d.]+ s \(([\d,]+) records/s\)", text)
    kept = re.search(r"^  kept ([\d,]+)", text, re.MULTILINE)
    dropped = re.search(r"^  dropped ([\d,]+)(?: \((.*)\))?$", text, re.MULTILINE)
    assert read and kept and dropped, text
    by_reason = {}
    if dropped.group(2):
        for part in dropped.group(2).split(", "):
            reason, count = part.rsplit(" ", 1)
            by_reason[reason] = int(count.replace(",", ""))
    return {
        "read": int(read.group(1).replace(",", "")),
        "rate": int(read.group(2).replace(",", "")),
        "kept": int(kept.group(1).replace(",", "")),
        "dropped": int(dropped.group(1).replace(",", "")),
        "by_reason": by_reason,
    }


@pytest.fixture
def comments(tmp_path: Path) -> Path:
    path = tmp_path / "comments.txt"
    path.write_text("".join(f"{comment}\n" for comment in COMMENTS), encoding="utf-8")
    return path


def test_listed_by_scrapy_outside_a_project(tmp_path: Path) -> None:
    env = {name: value for name, value in os.environ.items() if not name.startswith("SCRAPY_")}
    completed = subprocess.run(
        [sys.executable, "-m", "scrapy.cmdline", "-h"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    assert "no active project" in completed.stdout
    assert re.search(r"^  dedup-text +Drop exact and near duplicate", completed.stdout, re.M)


def test_comments_collapse_and_input_is_unchanged(tmp_path: Path, comments: Path) -> None:
    before = digest(comments)
    completed = dedup_text(tmp_path, "comments.txt", "--audit", "audit.jsonl")
    kept_numbers = [1, 3, 5, 6, 8, 10]
    assert completed.stdout.decode().splitlines() == [COMMENTS[n - 1] for n in kept_numbers]
    audit = [json.loads(line) for line in (tmp_path / "audit.jsonl").read_text().splitlines()]
    assert [
        (entry["line"], entry["reason"], entry["matched_line"], entry["matched_preview"])
        for entry in audit
    ] == [
        (2, "exact", 1, COMMENTS[0]),
        (4, "folded-exact", 3, COMMENTS[2]),
        (7, "folded-exact", 5, "Ha!"),
        (9, "exact", 8, COMMENTS[7][:59] + "…"),
        (11, "near", 10, LONG_COMMENT[:59] + "…"),
    ]
    assert audit[-1]["distance"] == hamming_distance(simhash(LONG_COMMENT), simhash(EDITED_COMMENT))
    counts = summary_counts(completed.stderr)
    assert counts["read"] == len(COMMENTS)
    assert counts["kept"] == len(kept_numbers)
    assert counts["by_reason"] == {"exact": 2, "folded-exact": 2, "near": 1}
    assert digest(comments) == before


def test_a_dash_reads_standard_input(tmp_path: Path, comments: Path) -> None:
    from_file = dedup_text(tmp_path, "comments.txt", "--audit", "file.jsonl")
    env = {name: value for name, value in os.environ.items() if not name.startswith("SCRAPY_")}
    with comments.open("rb") as standard_input:
        from_stdin = subprocess.run(
            [sys.executable, "-m", "scrapy.cmdline", "dedup-text", "-", "--audit", "stdin.jsonl"],
            cwd=tmp_path,
            env=env,
            stdin=standard_input,
            capture_output=True,
            timeout=120,
            check=True,
        )
    assert from_stdin.stdout == from_file.stdout
    counts = summary_counts(from_stdin.stderr)
    assert {**counts, "rate": 0} == {**summary_counts(from_file.stderr), "rate": 0}
    by_file = [json.loads(line) for line in (tmp_path / "file.jsonl").read_text().splitlines()]
    by_stdin = [json.loads(line) for line in (tmp_path / "stdin.jsonl").read_text().splitlines()]
    # standard input is read once: a matched record is named by its line, without its text
    assert [entry["matched_preview"] for entry in by_stdin] == [None] * len(by_file)
    assert [{**entry, "matched_preview": None} for entry in by_file] == by_stdin


def test_output_file_and_min_repeats(tmp_path: Path, comments: Path) -> None:
    completed = dedup_text(
        tmp_path, str(comments), "-o", "kept.txt", "--min-repeats", "2", "--no-fold-repeats"
    )
    assert completed.stdout == b""
    kept = (tmp_path / "kept.txt").read_text().splitlines()
    assert "hahaha" in kept  # not folded at all
    assert COMMENTS[3] in kept
    completed = dedup_text(tmp_path, str(comments), "-o", "kept.txt", "--min-repeats", "2")
    kept = (tmp_path / "kept.txt").read_text().splitlines()
    assert "haha" not in kept  # folded to "ha", like "Ha!"


@pytest.mark.parametrize("output", ["comments.txt", "./sub/../comments.txt", "link.txt"])
def test_refuses_to_write_over_its_input(tmp_path: Path, comments: Path, output: str) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / "link.txt").symlink_to(comments)
    before = digest(comments)
    completed = dedup_text(tmp_path, "comments.txt", "-o", output, check=False)
    assert completed.returncode == 2
    assert f"-o/--output {output!r} is the input file" in completed.stderr.decode()
    assert digest(comments) == before
    completed = dedup_text(tmp_path, "comments.txt", "--audit", output, check=False)
    assert completed.returncode == 2
    assert f"--audit {output!r} is the input file" in completed.stderr.decode()
    assert digest(comments) == before


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["missing.txt"], "INPUT 'missing.txt' is not a readable file"),
        ([], "INPUT is missing"),
        (["comments.txt", "--short-threshold", "4"], "--short-threshold=4 must be from 0 to 3"),
        (["comments.txt", "-s", "DEDUP_LONG_THRESHOLD=9"], "DEDUP_LONG_THRESHOLD=9 must be"),
        (["comments.txt", "--min-repeats", "1"], "--min-repeats must be 2 or more"),
        (["comments.txt", "--field", "body", "--format", "lines"], "--field only applies"),
        (["comments.txt", "-o", "no/such/dir/out.txt"], "No such file or directory"),
    ],
)
def test_bad_arguments_are_named(
    tmp_path: Path, comments: Path, arguments: list[str], message: str
) -> None:
    completed = dedup_text(tmp_path, *arguments, check=False)
    assert completed.returncode == 2
    assert message in completed.stderr.decode()


def test_json_lines_keep_bad_records_and_report_them(tmp_path: Path) -> None:
    records = [
        json.dumps({"id": 1, "body": "Great post, thanks for sharing!"}),
        json.dumps({"body": "great post thanks for sharing", "id": 2}, indent=None),
        '{"id": 3, "body": "cut in the mid',
        json.dumps({"id": 4, "title": "no body"}),
        json.dumps({"id": 5, "body": "Ha!"}),
    ]
    source = tmp_path / "comments.json"
    source.write_bytes(b"".join(f"{record}\n".encode() for record in records) + b"\xff\xfe\n")
    completed = dedup_text(tmp_path, source.name, "--field", "body", "--audit", "audit.jsonl")
    kept = completed.stdout.splitlines()
    assert kept == [record.encode() for record in (records[0], *records[2:])] + [b"\xff\xfe"]
    audit = [json.loads(line) for line in (tmp_path / "audit.jsonl").read_text().splitlines()]
    assert [(entry["line"], entry["decision"], entry["reason"]) for entry in audit] == [
        (2, "dropped", "exact"),
        (3, "kept", "invalid-json"),
        (4, "kept", "missing-field"),
        (6, "kept", "invalid-json"),
    ]
    stderr = completed.stderr.decode()
    assert "not fingerprinted: invalid-json 2, missing-field 1" in stderr
    assert "1 records with invalid UTF-8" in stderr


def test_jsonl_suffix_picks_the_text_field(tmp_path: Path) -> None:
    source = tmp_path / "items.jsonl"
    source.write_text('{"text": "Same text"}\n{"text": "same  TEXT", "url": "b"}\n')
    completed = dedup_text(tmp_path, source.name)
    assert completed.stdout == b'{"text": "Same text"}\n'


def test_streams_a_large_file(tmp_path: Path) -> None:
    distinct = 100_000
    source = tmp_path / "large.txt"
    with source.open("w", encoding="utf-8") as file:
        for number in range(distinct):
            file.write(f"message {letters(number)}\n")
        for number in range(distinct):
            file.write(f"  MESSAGE   {letters(number)}!\n")
    completed = dedup_text(tmp_path, source.name, "-o", "kept.txt", "--no-progress", timeout=300)
    counts = summary_counts(completed.stderr)
    assert counts["read"] == 2 * distinct
    assert counts["kept"] == distinct
    assert counts["by_reason"] == {"exact": distinct}
    assert counts["rate"] > 0
    with (tmp_path / "kept.txt").open(encoding="utf-8") as kept:
        for number, line in enumerate(kept):
            assert line == f"message {letters(number)}\n"
    assert number == distinct - 1


def run_on_a_terminal(cwd: Path, *arguments: str) -> str:
    """Run dedup-text with its stderr on a pseudo-terminal; return what it showed there."""
    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 100, 0, 0))
    env = {name: value for name, value in os.environ.items() if not name.startswith("SCRAPY_")}
    process = subprocess.Popen(
        [sys.executable, "-m", "scrapy.cmdline", "dedup-text", *arguments],
        cwd=cwd,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=follower,
    )
    os.close(follower)
    shown = b""
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # the terminal closed with the process
            break
        if not chunk:
            break
        shown += chunk
    os.close(leader)
    assert process.wait(timeout=60) == 0, shown.decode(errors="replace")
    return shown.decode(errors="replace")


def test_progress_bar_only_on_a_terminal(tmp_path: Path, comments: Path) -> None:
    shown = run_on_a_terminal(tmp_path, comments.name)
    assert re.search(r"dedup-text: 100%\|", shown), shown
    assert "11 records read" in shown
    assert "%|" not in run_on_a_terminal(tmp_path, comments.name, "--no-progress")
    assert "%|" not in dedup_text(tmp_path, comments.name).stderr.decode()


# The input file of a Chinese article on text dedup (its demo_comments.txt, plus the
# "haha" its troubleshooting table warns about folding).
SEED_COMMENTS = [
    "你是凑企鹅你是凑企鹅你是凑企鹅",
    "这是一条正常评论",
    "这是一条正常评论",
    "系统在 12:00 发生异常请检查服务",
    "系统在12:00发生异常请检查服务",
    "重复内容重复内容重复内容",
    "哈哈",
]


def test_the_seed_articles_comments_keep_five(tmp_path: Path) -> None:
    """The spam line once, the normal comment once, the two 12:00 lines as one (a space
    next to Chinese characters does not count), the repeated phrase once, and 哈哈."""
    (tmp_path / "demo_comments.txt").write_text("\n".join(SEED_COMMENTS) + "\n", "utf-8")
    completed = dedup_text(tmp_path, "demo_comments.txt", "--audit", "audit.jsonl")
    assert completed.stdout.decode().splitlines() == [SEED_COMMENTS[n] for n in (0, 1, 3, 5, 6)]
    audit = [json.loads(line) for line in (tmp_path / "audit.jsonl").read_text().splitlines()]
    assert [(entry["line"], entry["reason"], entry["matched_line"]) for entry in audit] == [
        (3, "exact", 2),
        (5, "exact", 4),
    ]
