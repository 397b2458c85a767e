"""The page each item came from, for items that hold no page of their own.

Most spiders yield items such as ``{"title": ..., "body": ..., "date": ...}``: no HTML
field for the content level to read. :class:`~crawler.middlewares.ItemPageMiddleware`
sees each callback's response and output, and records here, for each item, where it came
from (:class:`ItemPage`): the response's URL, the item's place among the items of that
output, and, when the callback yielded that one item for the response, the response's
body. The content pipeline takes the entry when it checks the item: the page's main text
for a response's only item, the item's own text fields when a response yielded several
(items of one listing page are not copies of each other because they share a page).

Nothing is added to the items: ``scrapy.Item`` classes, dataclasses and attrs items keep
their fields. Entries are keyed by the item object, kept only while it is in flight, and
:data:`MAX_PAGES` at most (the oldest go first: an item whose entry is gone is counted as
having no page, not lost).

Nothing here imports Scrapy.
"""

from __future__ import annotations

import threading
import weakref
from collections import OrderedDict
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

#: Entries kept at most: items in flight between a callback and the content pipeline
#: (Scrapy processes ``CONCURRENT_ITEMS``, 100, of a response at a time, and a few
#: responses at once).
MAX_PAGES: Final = 2_000


@dataclass(frozen=True)
class ItemPage:
    """Where an item came from.

    * ``url``: the response's URL;
    * ``index``: the item's place among the items its callback yielded for the response
      (from 0);
    * ``body`` and ``encoding``: the response's body and charset when the item was the
      only one its callback yielded for the response, ``None`` otherwise;
    * ``redirected_from``: the URLs that redirected to the response, first to last;
    * ``html_text`` and ``html_body``: for an item whose HTML field holds the response's
      text (``response.text``), that text and the response's body (and ``encoding``): the
      page can be sent to a worker process as it was downloaded, the text being checked
      to be the item's still.
    """

    url: str
    index: int
    body: bytes | None = None
    encoding: str | None = None
    redirected_from: tuple[str, ...] = ()
    html_text: str | None = None
    html_body: bytes | None = None

    @property
    def key(self) -> str:
        """The item's key in the content index when it has no URL of its own: the page's
        URL for its only item, the URL and the item's place otherwise.

        >>> ItemPage("https://a.example/list", 3).key
        'https://a.example/list#item-3'
        """
        return self.url if self.body is not None else f"{self.url}#item-{self.index}"


class ItemPages:
    """Items in flight and their :class:`ItemPage`, :data:`MAX_PAGES` at most.

    >>> pages, item = ItemPages(), {"title": "A bridge reopens"}
    >>> pages.put(item, ItemPage("https://a.example/bridge", 0, b"<p>...", "utf-8"))
    >>> pages.take({"title": "A bridge reopens"}) is None  # an equal item is another item
    True
    >>> pages.take(item).url, pages.take(item)
    ('https://a.example/bridge', None)
    """

    def __init__(self, max_pages: int = MAX_PAGES) -> None:
        self.max_pages = max_pages
        self._pages: OrderedDict[int, tuple[Any, ItemPage]] = OrderedDict()
        self._lock = threading.Lock()

    def put(self, item: Any, page: ItemPage) -> None:
        with self._lock:
            # the item is held with its entry: its id stays its own until it is taken
            self._pages[id(item)] = (item, page)
            while len(self._pages) > self.max_pages:
                self._pages.popitem(last=False)

    def revise(self, item: Any, page: ItemPage) -> None:
        """Record *page* for *item* instead, if its entry is still here (not taken)."""
        with self._lock:
            entry = self._pages.get(id(item))
            if entry is not None and entry[0] is item:
                self._pages[id(item)] = (item, page)

    def take(self, item: Any) -> ItemPage | None:
        """The page *item* came from, ``None`` when none is known; the entry leaves."""
        with self._lock:
            entry = self._pages.get(id(item))
            if entry is None or entry[0] is not item:
                return None
            del self._pages[id(item)]
            return entry[1]

    def forget(self, item: Any) -> None:
        """Drop *item*'s entry, if any (it left the pipelines without being checked)."""
        self.take(item)

    def __len__(self) -> int:
        return len(self._pages)


def item_text(item: Mapping[str, Any], fields: Sequence[str] = ()) -> str:
    """The text of an item's own fields, one a line: those of *fields* that the item has,
    in that order; with no *fields*, every field whose value is a string but its ``url``
    and those whose value is a URL (``http://`` or ``https://``), in the item's order.

    >>> item_text({"url": "https://a.example/1", "title": "Bridge", "price": "19.99"})
    'Bridge\\n19.99'
    >>> item_text({"title": "Bridge", "body": "Reopened."}, ["body", "summary"])
    'Reopened.'
    """
    names = fields or [name for name in item if name != "url"]
    values = (item.get(name) for name in names)
    return "\n".join(
        value
        for value in values
        if isinstance(value, str) and not value.startswith(("http://", "https://"))
    )


_TABLES: weakref.WeakKeyDictionary[Any, ItemPages] = weakref.WeakKeyDictionary()
_TABLES_LOCK = threading.Lock()


def item_pages(owner: Any) -> ItemPages:
    """The table of *owner* (a crawler), made on first use: the middleware that fills it
    and the pipeline that reads it find the same one."""
    with _TABLES_LOCK:
        table = _TABLES.get(owner)
        if table is None:
            table = _TABLES[owner] = ItemPages()
        return table
