"""Hashes of page bodies and texts that keep the GIL while they run.

hashlib lets the GIL go while it hashes 2,048 bytes or more, and the xxhash package while it
hashes more than 64 KiB. The thread that let it go then waits to take it back until the
thread holding it lets go in turn: up to the interpreter's switch interval (5 ms) when that
thread runs Python. On a crawl that extracts pages in a thread of its process, the reactor's
thread hashed a 100 kB body in 5 ms instead of 3 us, and the extraction thread waited 5 ms
for each text's BLAKE2b. Fed in pieces below those sizes, the same digests come without
letting the GIL go.

Nothing here imports Scrapy.
"""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING, Any, Final

import xxhash

if TYPE_CHECKING:
    from collections.abc import Iterable

__all__ = ["blake2b_digest", "xxh3_64_intdigest", "xxh3_128_digest", "xxh3_128_hexdigest"]

#: The largest piece hashlib hashes without letting the GIL go.
HASHLIB_PIECE: Final = 2047
#: The largest piece the xxhash package hashes without letting the GIL go, with room.
XXHASH_PIECE: Final = 32 * 1024


def blake2b_digest(*pieces: bytes, digest_size: int, person: bytes = b"") -> bytes:
    """The BLAKE2b digest of *pieces* one after the other:
    ``hashlib.blake2b(b"".join(pieces), digest_size=digest_size, person=person).digest()``.

    >>> blake2b_digest(b"x" * 5000, digest_size=16) == hashlib.blake2b(
    ...     b"x" * 5000, digest_size=16
    ... ).digest()
    True
    """
    if len(pieces) == 1 and len(pieces[0]) <= HASHLIB_PIECE:
        return hashlib.blake2b(pieces[0], digest_size=digest_size, person=person).digest()
    # created empty: a BLAKE2b object given a large input once lets the GIL go for good
    hasher = hashlib.blake2b(digest_size=digest_size, person=person)
    _update_in_pieces(hasher, pieces, HASHLIB_PIECE)
    return hasher.digest()


def xxh3_128_digest(*pieces: bytes) -> bytes:
    """The XXH3 128-bit digest of *pieces* one after the other.

    >>> xxh3_128_digest(b"ab", b"c" * 70_000) == xxhash.xxh3_128_digest(b"ab" + b"c" * 70_000)
    True
    """
    hasher = xxhash.xxh3_128()
    _update_in_pieces(hasher, pieces, XXHASH_PIECE)
    return hasher.digest()


def xxh3_128_hexdigest(data: bytes) -> str:
    """``xxhash.xxh3_128_hexdigest(data)``."""
    hasher = xxhash.xxh3_128()
    _update_in_pieces(hasher, (data,), XXHASH_PIECE)
    return hasher.hexdigest()


def xxh3_64_intdigest(data: bytes) -> int:
    """``xxhash.xxh3_64_intdigest(data)``.

    >>> xxh3_64_intdigest(b"c" * 70_000) == xxhash.xxh3_64_intdigest(b"c" * 70_000)
    True
    """
    hasher = xxhash.xxh3_64()
    _update_in_pieces(hasher, (data,), XXHASH_PIECE)
    return hasher.intdigest()


def _update_in_pieces(hasher: Any, pieces: Iterable[bytes], size: int) -> None:
    """Feed *pieces* to *hasher* in slices of at most *size* bytes."""
    for piece in pieces:
        view = memoryview(piece)
        for start in range(0, len(view), size):
            hasher.update(view[start : start + size])
