"""The recrawl record of one canonical URL, and its compact encoding.

A record keeps what a later crawl needs to ask the server whether a page changed, and to tell
an unchanged page from a changed one when the server does not answer that question:

* the validators the server sent: the ``ETag`` as sent (quotes and ``W/`` included, as
  ``If-None-Match`` must repeat it) and ``Last-Modified`` as a second of the epoch;
* the 64-bit hash of the page's main text the content level computed (``None`` before it did,
  or for a page with no text), and the 64-bit hash of its body: a body identical to the last
  one needs no extraction to be told unchanged;
* when the page was last fetched, and its own interval: it is due again that long after;
* how many not-modified answers came in a row (a server whose validators never change while
  the page does is fetched without validators after a bound: see
  :mod:`crawler.url.recrawl_schedule`).

:func:`encode` writes a record in 11 bytes plus 4 for ``Last-Modified``, 8 for each hash
and 1 + its length for the ETag; an ETag longer than :data:`MAX_ETAG_BYTES` is dropped, never
cut (a cut ETag would never match, and could match another). Times are whole seconds.

Nothing here imports Scrapy.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from datetime import timezone
from email.utils import formatdate, parsedate_to_datetime

__all__ = [
    "MAX_ETAG_BYTES",
    "RecrawlRecord",
    "decode",
    "encode",
    "etag_to_keep",
    "http_date",
    "last_modified_seconds",
]

#: The longest ETag kept, in bytes: most servers send a quoted hash or a size-and-time pair
#: of 10 to 50 bytes.
MAX_ETAG_BYTES = 64

_VERSION = 1
_HAS_ETAG, _HAS_LAST_MODIFIED, _HAS_CONTENT_HASH, _HAS_BODY_HASH = 1, 2, 4, 8
# version and flags, fetched at, interval, not-modified answers in a row
_HEAD = struct.Struct("<BBIIB")
_SECONDS = struct.Struct("<I")
_HASH = struct.Struct("<Q")
_LAST_SECOND = 2**32 - 1
_MOST_NOT_MODIFIED = 255


@dataclass(frozen=True)
class RecrawlRecord:
    """What is kept of one canonical URL between crawls (see the module's documentation).

    >>> record = RecrawlRecord(fetched_at=1_700_000_000, interval=86_400, etag=b'"5f3a-1c2b"')
    >>> record.due_at
    1700086400
    """

    fetched_at: int
    interval: int
    etag: bytes | None = None
    last_modified: int | None = None
    content_hash: int | None = None
    not_modified: int = 0
    body_hash: int | None = None

    def __post_init__(self) -> None:
        for name in ("fetched_at", "interval", "last_modified"):
            value = getattr(self, name)
            if value is not None and not 0 <= value <= _LAST_SECOND:
                raise ValueError(f"{name} must be a second between 0 and 2**32 - 1, not {value!r}")
        for name in ("content_hash", "body_hash"):
            value = getattr(self, name)
            if value is not None and not 0 <= value < 2**64:
                raise ValueError(f"{name} must be a 64-bit hash, not {value!r}")
        if self.etag is not None and not 0 < len(self.etag) <= MAX_ETAG_BYTES:
            raise ValueError(
                f"an ETag of {len(self.etag)} bytes is not kept (1 to {MAX_ETAG_BYTES}): "
                "use etag_to_keep()"
            )
        if not 0 <= self.not_modified <= _MOST_NOT_MODIFIED:
            raise ValueError(f"not_modified must be 0 to 255, not {self.not_modified!r}")

    @property
    def due_at(self) -> int:
        """The second from which the page is due again."""
        return self.fetched_at + self.interval

    def validators(self) -> dict[str, str]:
        """The headers of a conditional request for the page: ``If-None-Match`` and
        ``If-Modified-Since``, those the server sent a value for.

        >>> RecrawlRecord(0, 60, etag=b'W/"a1"', last_modified=784111777).validators()
        {'If-None-Match': 'W/"a1"', 'If-Modified-Since': 'Sun, 06 Nov 1994 08:49:37 GMT'}
        """
        headers = {}
        if self.etag is not None:
            headers["If-None-Match"] = self.etag.decode("latin-1")
        if self.last_modified is not None:
            headers["If-Modified-Since"] = http_date(self.last_modified)
        return headers


def encode(record: RecrawlRecord) -> bytes:
    """*record* in its compact form (see the module's documentation).

    >>> len(encode(RecrawlRecord(1_700_000_000, 3600)))
    11
    >>> len(encode(RecrawlRecord(1_700_000_000, 3600, b'"abc"', 1_600_000_000, 2**63)))
    29
    """
    flags = (
        (_HAS_ETAG if record.etag is not None else 0)
        | (_HAS_LAST_MODIFIED if record.last_modified is not None else 0)
        | (_HAS_CONTENT_HASH if record.content_hash is not None else 0)
        | (_HAS_BODY_HASH if record.body_hash is not None else 0)
    )
    parts = [_HEAD.pack(_VERSION, flags, record.fetched_at, record.interval, record.not_modified)]
    if record.last_modified is not None:
        parts.append(_SECONDS.pack(record.last_modified))
    if record.content_hash is not None:
        parts.append(_HASH.pack(record.content_hash))
    if record.body_hash is not None:
        parts.append(_HASH.pack(record.body_hash))
    if record.etag is not None:
        parts += (bytes((len(record.etag),)), record.etag)
    return b"".join(parts)


def decode(data: bytes) -> RecrawlRecord:
    """The record :func:`encode` wrote; ``ValueError`` naming what is wrong with anything else."""
    if len(data) < _HEAD.size:
        raise ValueError(f"a recrawl record has at least {_HEAD.size} bytes, not {len(data)}")
    version, flags, fetched_at, interval, not_modified = _HEAD.unpack_from(data)
    if version != _VERSION:
        raise ValueError(f"recrawl record version {version} is not known (expected {_VERSION})")
    offset = _HEAD.size
    last_modified = content_hash = body_hash = etag = None
    try:
        if flags & _HAS_LAST_MODIFIED:
            (last_modified,) = _SECONDS.unpack_from(data, offset)
            offset += _SECONDS.size
        if flags & _HAS_CONTENT_HASH:
            (content_hash,) = _HASH.unpack_from(data, offset)
            offset += _HASH.size
        if flags & _HAS_BODY_HASH:
            (body_hash,) = _HASH.unpack_from(data, offset)
            offset += _HASH.size
        if flags & _HAS_ETAG:
            length = data[offset]
            etag = bytes(data[offset + 1 : offset + 1 + length])
            offset += 1 + length
            if len(etag) != length:
                raise ValueError("the ETag is cut short")
    except (struct.error, IndexError) as exc:
        raise ValueError(f"a recrawl record is cut short ({len(data)} bytes)") from exc
    if offset != len(data):
        raise ValueError(f"a recrawl record has {len(data) - offset} bytes too many")
    return RecrawlRecord(
        fetched_at, interval, etag, last_modified, content_hash, not_modified, body_hash
    )


def etag_to_keep(value: bytes | str | None) -> bytes | None:
    """The ETag header's value to keep: as sent, or ``None`` when there is none or it is
    longer than :data:`MAX_ETAG_BYTES` (a page whose ETag is not kept is compared by its
    ``Last-Modified`` and its text).

    >>> etag_to_keep(b' "5f3a-1c2b" '), etag_to_keep(b"x" * 65), etag_to_keep(b"")
    (b'"5f3a-1c2b"', None, None)
    """
    if value is None:
        return None
    raw = value.encode("latin-1", "replace") if isinstance(value, str) else bytes(value)
    raw = raw.strip()
    return raw if 0 < len(raw) <= MAX_ETAG_BYTES else None


def last_modified_seconds(value: bytes | str | None) -> int | None:
    """A ``Last-Modified`` header's date as a second of the epoch; ``None`` for a date that
    cannot be read, or falls outside 1970-2106.

    >>> last_modified_seconds(b"Sun, 06 Nov 1994 08:49:37 GMT")
    784111777
    >>> last_modified_seconds("yesterday") is None
    True
    """
    if value is None:
        return None
    text = value.decode("latin-1") if isinstance(value, bytes) else value
    try:
        moment = parsedate_to_datetime(text.strip())
        if moment.tzinfo is None:  # "-0000": a time in UTC, from a source that does not say
            moment = moment.replace(tzinfo=timezone.utc)
        seconds = int(moment.timestamp())
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
    return seconds if 0 <= seconds <= _LAST_SECOND else None


def http_date(seconds: int) -> str:
    """*seconds* of the epoch as an HTTP date (RFC 9110, IMF-fixdate)."""
    return formatdate(seconds, usegmt=True)
