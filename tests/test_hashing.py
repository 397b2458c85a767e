"""The hashes that keep the GIL (``crawler/hashing.py``) are the libraries' digests, fed in
pieces each library hashes without letting the GIL go."""

from __future__ import annotations

import hashlib
from typing import Any

import pytest
import xxhash
from hypothesis import given
from hypothesis import strategies as st

from crawler import hashing

#: Around both libraries' limits, and a body of 200 kB.
SIZES = [0, 1, 2047, 2048, 2049, 4095, 65_535, 65_536, 65_537, 200_000]


@pytest.mark.parametrize("size", SIZES)
def test_each_digest_is_the_librarys(size: int) -> None:
    data = bytes(range(256)) * (size // 256) + bytes(size % 256)
    assert (
        hashing.blake2b_digest(data, digest_size=16)
        == hashlib.blake2b(data, digest_size=16).digest()
    )
    assert (
        hashing.blake2b_digest(data, digest_size=8, person=b"p")
        == hashlib.blake2b(data, digest_size=8, person=b"p").digest()
    )
    assert hashing.xxh3_128_hexdigest(data) == xxhash.xxh3_128_hexdigest(data)
    assert hashing.xxh3_128_digest(data) == xxhash.xxh3_128_digest(data)
    assert hashing.xxh3_64_intdigest(data) == xxhash.xxh3_64_intdigest(data)


@given(st.lists(st.binary(max_size=5000), max_size=4))
def test_pieces_hash_as_their_concatenation(pieces: list[bytes]) -> None:
    whole = b"".join(pieces)
    assert (
        hashing.blake2b_digest(*pieces, digest_size=16)
        == hashlib.blake2b(whole, digest_size=16).digest()
    )
    assert hashing.xxh3_128_digest(*pieces) == xxhash.xxh3_128_digest(whole)


class Recording:
    """A hasher that records the size of each piece it is given."""

    def __init__(self, sizes: list[int], data: bytes = b"", **options: Any) -> None:
        self.sizes = sizes
        if data:
            sizes.append(len(data))

    def update(self, data: bytes) -> None:
        self.sizes.append(len(data))

    def digest(self) -> bytes:
        return b""

    def hexdigest(self) -> str:
        return ""

    def intdigest(self) -> int:
        return 0


def test_no_piece_reaches_the_size_where_a_library_lets_the_gil_go(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # hashlib lets the GIL go from 2,048 bytes on (HASHLIB_GIL_MINSIZE), the xxhash
    # package above 64 KiB
    blake2b_sizes: list[int] = []
    xxhash_sizes: list[int] = []
    monkeypatch.setattr(
        hashing.hashlib, "blake2b", lambda *a, **k: Recording(blake2b_sizes, *a, **k)
    )
    monkeypatch.setattr(hashing.xxhash, "xxh3_128", lambda: Recording(xxhash_sizes))
    monkeypatch.setattr(hashing.xxhash, "xxh3_64", lambda: Recording(xxhash_sizes))
    body = bytes(300_000)
    hashing.blake2b_digest(body, b"x" * 3000, digest_size=16)
    hashing.blake2b_digest(b"short", digest_size=16)
    hashing.xxh3_128_digest(b"x", body)
    hashing.xxh3_128_hexdigest(body)
    hashing.xxh3_64_intdigest(body)
    assert sum(blake2b_sizes) == 303_005
    assert max(blake2b_sizes) < 2048
    assert sum(xxhash_sizes) == 1 + 3 * 300_000
    assert max(xxhash_sizes) <= 64 * 1024
