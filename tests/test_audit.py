from __future__ import annotations

import json
import multiprocessing

from crawler.audit import AuditLog


def write_records(path, writer: str, count: int) -> None:
    audit = AuditLog(path)
    for number in range(count):
        audit.write({"writer": writer, "number": number, "padding": "x" * 5000})
    audit.close()


def test_records_are_appended_as_lines_and_survive_reopening(tmp_path):
    path = tmp_path / "sub" / "audit.jsonl"
    first = AuditLog(path)
    first.write({"url": "http://example.com/é", "level": "url"})
    assert path.read_text("utf-8") == '{"url": "http://example.com/é", "level": "url"}\n'
    second = AuditLog(path)  # a second writer, as the dupefilter and the pipeline are
    second.write({"n": 2})
    first.write({"n": 3})
    first.close()
    second.close()
    assert [json.loads(line) for line in path.read_text("utf-8").splitlines()] == [
        {"url": "http://example.com/é", "level": "url"},
        {"n": 2},
        {"n": 3},
    ]


def test_concurrent_writers_never_mix_within_a_line(tmp_path):
    path = tmp_path / "audit.jsonl"
    context = multiprocessing.get_context("spawn")
    writers = [context.Process(target=write_records, args=(path, name, 300)) for name in ("a", "b")]
    for writer in writers:
        writer.start()
    for writer in writers:
        writer.join(60)
        assert writer.exitcode == 0
    records = [json.loads(line) for line in path.read_text("utf-8").splitlines()]
    for name in ("a", "b"):
        assert [r["number"] for r in records if r["writer"] == name] == list(range(300))
    assert len(records) == 600
