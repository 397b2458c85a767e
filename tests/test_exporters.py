from __future__ import annotations

import json

import pytest
from scrapy.exporters import JsonLinesItemExporter

from crawler.exporters import FlushingJsonLinesItemExporter


@pytest.mark.parametrize(
    ("exporter_class", "on_disk"),
    [(FlushingJsonLinesItemExporter, True), (JsonLinesItemExporter, False)],
)
def test_an_exported_item_is_in_the_file_before_the_feed_closes(tmp_path, exporter_class, on_disk):
    """What another process (or a restart after kill -9) reads: Scrapy's exporter keeps a
    small item in the file's buffer; the flushing one has written it."""
    feed = tmp_path / "items.jsonl"
    with feed.open("ab") as file:  # as Scrapy's FileFeedStorage opens it
        exporter = exporter_class(file)
        exporter.start_exporting()
        exporter.export_item({"url": "https://a.test/1", "title": "One"})
        written = feed.read_bytes()
        exporter.export_item({"url": "https://a.test/2", "title": "Two"})
        exporter.finish_exporting()
    assert bool(written) is on_disk
    if on_disk:
        assert json.loads(written) == {"url": "https://a.test/1", "title": "One"}
    assert [json.loads(line)["url"] for line in feed.read_text().splitlines()] == [
        "https://a.test/1",
        "https://a.test/2",
    ]
