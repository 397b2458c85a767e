"""The key under which an item is remembered, from its business-key fields
(``DEDUP_ITEM_KEY_FIELDS``)."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from crawler.hashing import blake2b_digest

if TYPE_CHECKING:
    from collections.abc import Sequence

#: Bumped whenever :func:`item_key` changes; part of the rules signature.
ITEM_KEY_VERSION = 1


def item_key(fields: Sequence[str], values: Sequence[Any]) -> bytes:
    """Return a 16-byte digest of *values*, the item's values of *fields*.

    Values are compared as JSON: ``1`` and ``"1"`` differ, key order in a
    dict does not matter; a value JSON cannot represent is compared by its
    ``str()``.

    >>> item_key(["sku"], ["A-1"]) == item_key(["sku"], ["A-1"])
    True
    >>> item_key(["sku"], [1]) == item_key(["sku"], ["1"])
    False
    >>> item_key(["shop", "sku"], ["a", "b"]) == item_key(["shop", "sku"], ["b", "a"])
    False
    """
    encoded = json.dumps(
        dict(zip(fields, values, strict=True)),
        sort_keys=True,
        ensure_ascii=False,
        separators=(",", ":"),
        default=str,
    )
    return blake2b_digest(encoded.encode("utf-8", "surrogatepass"), digest_size=16)
