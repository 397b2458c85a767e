"""Fingerprints of page bodies seen lately, so that a body downloaded again byte for byte
(the same page at another URL, a mirror serving identical files) is not extracted again.

Nothing here imports Scrapy.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from concurrent.futures import Future
from typing import Generic, TypeVar

from crawler.hashing import xxh3_128_digest

_V = TypeVar("_V")

#: Bodies remembered at most: about 855 bytes each with the fingerprints the content
#: pipeline keeps of them (tracemalloc, fingerprints of dev-corpus pages), so 86 MB at the
#: default.
DEFAULT_MAX_BODIES = 100_000


def body_key(body: str | bytes, encoding: str | None) -> bytes:
    """A 128-bit hash of a page body and the charset it was served with (the same bytes
    read in another charset can be another text).

    >>> body_key(b"<p>hi</p>", None) == body_key(b"<p>hi</p>", None)
    True
    >>> body_key(b"<p>hi</p>", "gbk") == body_key(b"<p>hi</p>", None)
    False
    """
    # a str as crawler.content.pages.EncodedPage encodes it: the same key for the page and
    # its encoded form
    return xxh3_128_digest(
        (encoding or "").encode("ascii", "replace") + b"\0",
        body.encode("utf-8", "surrogatepass") if isinstance(body, str) else body,
    )


class BodyCache(Generic[_V]):
    """What was found of the last *max_bodies* bodies (the pipeline keeps the
    :class:`~crawler.content.pages.PageFingerprint` of each, and its future while it is
    being extracted, so that a body that arrives meanwhile waits for it), by
    :func:`body_key`; the least recently used is forgotten first.

    >>> cache: BodyCache[str] = BodyCache(max_bodies=1)
    >>> cache.put(b"a", "page A"), cache.get(b"a"), cache.get(b"b")
    (None, 'page A', None)
    >>> cache.put(b"b", "page B"), cache.get(b"a"), len(cache)
    (None, None, 1)
    """

    def __init__(self, max_bodies: int = DEFAULT_MAX_BODIES) -> None:
        if max_bodies < 0:
            raise ValueError(f"max_bodies must be 0 or more, got {max_bodies!r}")
        self.max_bodies = max_bodies
        self._pages: OrderedDict[bytes, _V] = OrderedDict()

    def get(self, key: bytes) -> _V | None:
        page = self._pages.get(key)
        if page is not None:
            self._pages.move_to_end(key)
        return page

    def put(self, key: bytes, page: _V) -> None:
        if not self.max_bodies:
            return
        self._pages[key] = page
        self._pages.move_to_end(key)
        while len(self._pages) > self.max_bodies:
            self._pages.popitem(last=False)

    def forget(self, key: bytes) -> None:
        self._pages.pop(key, None)

    def __len__(self) -> int:
        return len(self._pages)


class BodiesInFlight(Generic[_V]):
    """A :class:`BodyCache` of what was found of each body, or of the future a body being
    worked on is answered in, for any thread or coroutine.

    * :meth:`claim` says what is known of a body: what was found, or the future to wait on;
      ``None`` makes the caller the one that works on it, and answers the future returned
      with it through :meth:`found` or :meth:`failed` (the others wait on it meanwhile).

    >>> bodies: BodiesInFlight[str] = BodiesInFlight()
    >>> known, pending = bodies.claim(b"a")
    >>> known is None, bodies.claim(b"a")[0] is pending
    (True, True)
    >>> bodies.found(b"a", pending, "page A")
    >>> bodies.claim(b"a")[0], pending.result()
    ('page A', 'page A')
    """

    def __init__(self, max_bodies: int = DEFAULT_MAX_BODIES) -> None:
        self._cache: BodyCache[Future[_V] | _V] = BodyCache(max_bodies)
        self._lock = threading.Lock()

    def claim(self, key: bytes) -> tuple[Future[_V] | _V | None, Future[_V]]:
        pending: Future[_V] = Future()
        with self._lock:
            known = self._cache.get(key)
            if known is None:
                self._cache.put(key, pending)
        return known, pending

    def found(self, key: bytes, pending: Future[_V], result: _V, *, remember: bool = True) -> None:
        """*result* is what was found of the body claimed with *pending*; *remember*: it
        says something of the body (else the next one to meet it works on it again)."""
        with self._lock:
            if not remember:
                self._cache.forget(key)
            elif self._cache.get(key) is pending:
                # the result alone: a future with its lock and condition took three times
                # the memory, and a dozen objects for the garbage collector to walk
                self._cache.put(key, result)
        pending.set_result(result)

    def failed(self, key: bytes, pending: Future[_V], error: BaseException) -> None:
        with self._lock:
            self._cache.forget(key)
        pending.set_exception(error)
