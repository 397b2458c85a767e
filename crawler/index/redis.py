"""The content index shared by crawl workers in Redis.

Same banded layout as the in-memory index (:mod:`crawler.index`): each kept
document is a *member*, its 8-byte big-endian fingerprint followed by its key,
stored in one Redis set per (band, 16-bit band value), and in a hash from
content hash to member for exact duplicates. Look-up and insert are one Lua
call, so two workers that fetch the same article at the same moment keep
exactly one copy. All keys share one hash tag (``{base}``), so the index also
works on Redis Cluster.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from crawler.index import BAND_BITS, BAND_COUNT, BAND_MASK, check_fingerprint, check_max_distance

if TYPE_CHECKING:
    from collections.abc import Mapping

    from crawler.redis_access import RedisConnection

#: A Lua table of the number of set bits in each byte value.
_POPCOUNT_TABLE = "{" + ",".join(str(bin(value).count("1")) for value in range(256)) + "}"

_DISTANCE = (
    """
local POP = """
    + _POPCOUNT_TABLE
    + """
local function distance(a, b)
  local d = 0
  for i = 1, 8 do
    d = d + POP[bit.bxor(string.byte(a, i), string.byte(b, i)) + 1]
  end
  return d
end
local function nearest(fingerprint, band_keys, max_distance)
  local best, best_distance = false, max_distance + 1
  for _, band_key in ipairs(band_keys) do
    for _, member in ipairs(redis.call('SMEMBERS', band_key)) do
      local d = distance(fingerprint, member)
      if d < best_distance then best, best_distance = member, d end
    end
  end
  return best, best_distance
end
"""
)

#: KEYS: exact hash, 4 band sets, document count. ARGV: content hash,
#: fingerprint (8 bytes), key, threshold (-1: exact check only), add (1/0).
#: Returns {kind, member, distance} for a duplicate, or {"new", added}.
CHECK_AND_ADD = (
    _DISTANCE
    + """
local member = redis.call('HGET', KEYS[1], ARGV[1])
if member and string.sub(member, 1, 8) == ARGV[2] then
  return {'exact', member, 0}
end
local threshold = tonumber(ARGV[4])
if threshold >= 0 then
  local best, best_distance = nearest(ARGV[2], {KEYS[2], KEYS[3], KEYS[4], KEYS[5]}, threshold)
  if best then return {'near', best, best_distance} end
end
if ARGV[5] ~= '1' then return {'new', 0} end
local new_member = ARGV[2] .. ARGV[3]
redis.call('HSETNX', KEYS[1], ARGV[1], new_member)
if threshold >= 0 then
  for i = 2, 5 do redis.call('SADD', KEYS[i], new_member) end
end
redis.call('INCR', KEYS[6])
return {'new', 1}
"""
)

#: KEYS: 4 band sets. ARGV: fingerprint (8 bytes), max distance.
#: Returns a flat list: member, distance, member, distance...
QUERY = (
    _DISTANCE
    + """
local max_distance = tonumber(ARGV[2])
local found, seen = {}, {}
for i = 1, 4 do
  for _, member in ipairs(redis.call('SMEMBERS', KEYS[i])) do
    if not seen[member] then
      seen[member] = true
      local d = distance(ARGV[1], member)
      if d <= max_distance then
        found[#found + 1] = member
        found[#found + 1] = d
      end
    end
  end
end
return found
"""
)

#: KEYS: 4 band sets, document count. ARGV: member.
ADD = """
for i = 1, 4 do redis.call('SADD', KEYS[i], ARGV[1]) end
redis.call('INCR', KEYS[5])
"""


def _member(fingerprint: int, key: str) -> bytes:
    return fingerprint.to_bytes(8, "big") + key.encode("utf-8", "surrogatepass")


def _split_member(member: bytes) -> tuple[str, int]:
    return member[8:].decode("utf-8", "surrogatepass"), int.from_bytes(member[:8], "big")


class RedisContentIndex:
    """A :class:`~crawler.index.FingerprintIndex` in Redis, with an atomic
    :meth:`check_and_add` for the detector.

    *base* names the index (e.g. ``"myspider:content"``); every Redis key is
    ``{base}:...``.
    """

    def __init__(self, connection: RedisConnection, base: str) -> None:
        self.connection = connection
        self.base = base
        self.exact_key = f"{{{base}}}:exact"
        self.count_key = f"{{{base}}}:count"
        self.signature_key = f"{{{base}}}:signature"

    def open(self, signature: Mapping[str, Any]) -> None:
        """Ping, then claim or check the rules signature of the shared index."""
        self.connection.open()
        self.connection.check_signature(self.signature_key, signature, data_key=self.count_key)

    def band_keys(self, fingerprint: int) -> list[str]:
        """The Redis sets that hold fingerprints sharing a band with *fingerprint*."""
        return [
            f"{{{self.base}}}:b{band}:{(fingerprint >> (band * BAND_BITS)) & BAND_MASK:04x}"
            for band in range(BAND_COUNT)
        ]

    def check_and_add(
        self,
        key: str,
        fingerprint: int,
        content_hash: bytes,
        threshold: int | None,
        *,
        add: bool = True,
    ) -> tuple[str, str, int, int] | None:
        """Return ``(kind, earlier key, earlier fingerprint, distance)`` for a
        duplicate, else ``None`` after adding the document (when *add*).

        *threshold* ``None`` means the exact check only (short texts); such a
        document is kept for exact matches but not in the bands.
        """
        check_fingerprint(fingerprint)
        reply = self.connection.call(
            self.connection.script(CHECK_AND_ADD),
            keys=[self.exact_key, *self.band_keys(fingerprint), self.count_key],
            args=[
                content_hash,
                fingerprint.to_bytes(8, "big"),
                key.encode("utf-8", "surrogatepass"),
                -1 if threshold is None else threshold,
                1 if add else 0,
            ],
        )
        kind = reply[0].decode()
        if kind == "new":
            return None
        earlier_key, earlier_fingerprint = _split_member(reply[1])
        return kind, earlier_key, earlier_fingerprint, int(reply[2])

    def add(self, key: str, fingerprint: int) -> None:
        check_fingerprint(fingerprint)
        self.connection.call(
            self.connection.script(ADD),
            keys=[*self.band_keys(fingerprint), self.count_key],
            args=[_member(fingerprint, key)],
        )

    def query(self, fingerprint: int, max_distance: int = 3) -> list[tuple[str, int]]:
        return [(key, distance) for key, _, distance in self._query(fingerprint, max_distance)]

    def nearest(self, fingerprint: int, max_distance: int = 3) -> tuple[str, int, int] | None:
        found = self._query(fingerprint, max_distance)
        return found[0] if found else None

    def _query(self, fingerprint: int, max_distance: int) -> list[tuple[str, int, int]]:
        check_fingerprint(fingerprint)
        check_max_distance(max_distance)
        reply = self.connection.call(
            self.connection.script(QUERY),
            keys=self.band_keys(fingerprint),
            args=[fingerprint.to_bytes(8, "big"), max_distance],
        )
        found = []
        for member, distance in zip(reply[::2], reply[1::2], strict=True):
            key, earlier_fingerprint = _split_member(member)
            found.append((key, earlier_fingerprint, int(distance)))
        # Redis sets have no order: nearest first, then by key for a stable result
        return sorted(found, key=lambda entry: (entry[2], entry[0]))

    def __len__(self) -> int:
        return int(self.connection.call(self.connection.client.get, self.count_key) or 0)
