"""The key under which a request is remembered as seen."""

from __future__ import annotations

from crawler.hashing import blake2b_digest

#: Bytes in a request key.
KEY_SIZE = 16

#: Bumped whenever :func:`request_key` changes; part of the rules signature.
KEY_VERSION = 1


def request_key(method: str, canonical_url: str, body: bytes = b"") -> bytes:
    """Return a 16-byte digest of a request's method, canonical URL and body.

    * requests differing only in method (``GET``/``HEAD``) or body (two POSTs
      to one URL with other form data) get different keys;
    * the digest is BLAKE2b, identical across processes and machines.

    >>> request_key("GET", "https://example.com/") == request_key("get", "https://example.com/")
    True
    >>> post = "https://example.com/form"
    >>> request_key("POST", post, b"a=1") == request_key("POST", post, b"a=2")
    False
    """
    line = f"{method.upper()} {canonical_url}".encode("utf-8", "surrogatepass")
    if body:
        return blake2b_digest(line, b"\n", body, digest_size=KEY_SIZE)
    return blake2b_digest(line, digest_size=KEY_SIZE)
