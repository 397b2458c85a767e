"""Exceptions the components raise for Scrapy to handle, as :mod:`scrapy.exceptions` holds
Scrapy's own.

:class:`DuplicateItem` is public as ``crawler.logformatter.DuplicateItem`` too, where the
log formatter that names it in one line lives.
"""

from __future__ import annotations

from scrapy.exceptions import DropItem

__all__ = ["DuplicateItem"]


class DuplicateItem(DropItem):
    """An item dropped as a duplicate; its message names the item (URL or key)."""
