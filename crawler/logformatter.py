"""Log lines for dropped duplicates that name the item instead of printing it.

Scrapy logs a dropped item whole (``Dropped: <reason>`` and the item on the next line). An
item that is a duplicate may hold a whole page (the HTML field, until the content level
removes it), and a crawl drops many: :class:`DedupLogFormatter` logs only the reason for
an item dropped as a :class:`DuplicateItem`, which names its URL or its key. Other drops
are logged as Scrapy logs them. The add-on sets it as ``LOG_FORMATTER`` unless the project
sets one.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from scrapy.logformatter import LogFormatter

from crawler.exceptions import DuplicateItem

if TYPE_CHECKING:
    from scrapy import Spider
    from scrapy.http import Response
    from scrapy.logformatter import LogFormatterResult
    from twisted.python.failure import Failure

__all__ = ["DedupLogFormatter", "DuplicateItem"]


class DedupLogFormatter(LogFormatter):
    def dropped(
        self,
        item: Any,
        exception: BaseException,
        response: Response | Failure | None,
        spider: Spider,
    ) -> LogFormatterResult:
        result = super().dropped(item, exception, response, spider)
        if isinstance(exception, DuplicateItem):
            return {**result, "msg": "Dropped: %(exception)s", "args": {"exception": exception}}
        return result
