"""Feed exporters whose output survives a killed crawl.

Scrapy's exporters write through a buffered file: a crawl killed with ``kill -9``
loses the items still in the buffer, although the crawl recorded them as done
(their pages are not downloaded again on resume). :class:`FlushingJsonLinesItemExporter`
hands each item to the operating system as soon as it is exported, so what a
crawl counts as exported is in the file, whatever happens to the process. (A
power cut is another matter: the file is not synced to disk.)

The add-on makes it the exporter of the JSON lines formats (``jsonlines``,
``jsonl``, ``jl``) unless ``FEED_EXPORTERS`` names another one.
"""

from __future__ import annotations

from typing import Any

from scrapy.exporters import JsonLinesItemExporter

__all__ = ["JSON_LINES_FORMATS", "FlushingJsonLinesItemExporter"]

#: The feed formats Scrapy writes with its ``JsonLinesItemExporter``.
JSON_LINES_FORMATS = ("jsonlines", "jsonl", "jl")


class FlushingJsonLinesItemExporter(JsonLinesItemExporter):
    """Scrapy's JSON lines exporter, each line flushed as it is written."""

    def export_item(self, item: Any) -> None:
        super().export_item(item)
        self.file.flush()
