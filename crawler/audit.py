"""The audit file (``DEDUP_AUDIT_FILE``): one JSON object a line, saying why each
duplicate was filtered or dropped.

The URL dupefilter and the content pipeline each open the file on their own, in append
mode, and write each record with one unbuffered ``write()`` of a whole line: records of
both writers (and of several crawl processes on one machine) never mix within a line, and
a crash loses no record that was written.

Every record has a ``level``: :data:`URL_LEVEL` for a request filtered before download,
:data:`CONTENT_LEVEL` for a decision on an item's text, :data:`ITEM_LEVEL` for an item
dropped for its business key (``DEDUP_ITEM_KEY_FIELDS``), :data:`RECRAWL_LEVEL` for a page
recrawled and found not modified or unchanged (``DEDUP_RECRAWL``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Mapping

URL_LEVEL = "url"
CONTENT_LEVEL = "content"
ITEM_LEVEL = "item"
RECRAWL_LEVEL = "recrawl"


class AuditLog:
    """Append JSON records to *path*, one line each; its directory is created if needed."""

    def __init__(self, path: Path) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        self._file = path.open("ab", buffering=0)

    def write(self, record: Mapping[str, Any]) -> None:
        self._file.write((json.dumps(record, ensure_ascii=False) + "\n").encode("utf-8"))

    def close(self) -> None:
        self._file.close()
