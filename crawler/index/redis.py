"""The content index shared by crawl workers in Redis.

Same banded layout as the in-memory index (:mod:`crawler.index`): each kept
document is a *member*, its 8-byte big-endian fingerprint, its 64-byte MinHash
signature, its 8-byte numbers signature, its page size class (1 byte) and its key,
stored in one Redis set per (band, 16-bit band value), and in a hash from content hash
to member for exact duplicates. Look-up
(both stages), verification of a candidate by its MinHash and insert are one
Lua call, so two workers that fetch the same article at the same moment keep
exactly one copy. All keys share one hash tag (``{base}``), so the index also
works on Redis Cluster.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from crawler.fingerprints import PAGE_SIZE_RATIO, PAGE_SIZE_STEPS
from crawler.index import (
    BAND_BITS,
    BAND_COUNT,
    BAND_MASK,
    SharedMatch,
    check_fingerprint,
    check_max_distance,
)
from crawler.index.memory import MINHASH_BYTES

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
local function similarity(a, b)
  local agree = 0
  for i = 9, 8 + """
    + str(MINHASH_BYTES)
    + """ do
    if string.byte(a, i) == string.byte(b, i) then agree = agree + 1 end
  end
  local j = (agree / """
    + str(MINHASH_BYTES)
    + """ - 1 / 256) / (1 - 1 / 256)
  if j < 0 then return 0 end
  if j > 1 then return 1 end
  return j
end
local function half_differs(a, b, first)
  local a_only, b_only = false, false
  for i = first, first + 3 do
    local x, y = string.byte(a, i), string.byte(b, i)
    if bit.band(x, bit.bnot(y)) ~= 0 then a_only = true end
    if bit.band(y, bit.bnot(x)) ~= 0 then b_only = true end
  end
  return a_only and b_only
end
local function numbers_differ(a, b)
  return half_differs(a, b, 73) or half_differs(a, b, 77)
end
local function page_sizes_differ(a, b, text_chars)
  local x, y = string.byte(a, 81), string.byte(b, 81)
  if x == 0 or y == 0 then return false end
  local low, high = math.min(x, y), math.max(x, y)
  if high - low < """
    + repr(PAGE_SIZE_STEPS * math.log2(PAGE_SIZE_RATIO))
    + """ then return false end
  return text_chars * """
    + str(PAGE_SIZE_RATIO)
    + """ < 2 ^ (high / """
    + str(PAGE_SIZE_STEPS)
    + """)
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

#: KEYS: exact hash, document count, 4 band sets, then (second stage) the 64 band
#: sets one bit away. ARGV: content hash, probe member (fingerprint and MinHash),
#: key, threshold (-1: exact check only), add (1/0), min similarity, second-stage
#: radius (-1: none), candidates verified at most per stage, the second stage's min
#: similarity, the text's length (characters, for the page size check).
#: Returns {verdict, member, distance, stage, similarity in thousandths, numbers
#: differ (1/0), page sizes differ (1/0)} for a
#: match ('match') or, when the document is new, the nearest candidate that
#: verification rejected ('rejected'); {'new', added} when there was none.
CHECK_AND_ADD = (
    _DISTANCE
    + """
local probe = ARGV[2]
local text_chars = tonumber(ARGV[10])
local rejected = false
local member = redis.call('HGET', KEYS[1], ARGV[1])
if member and string.sub(member, 1, 8) == string.sub(probe, 1, 8) then
  if not page_sizes_differ(probe, member, text_chars) then
    return {'match', member, 0, 'exact', 1000, 0, 0}
  end
  rejected = {'rejected', member, 0, 'exact', 1000, 0, 1}
end
local threshold = tonumber(ARGV[4])
local min_similarity = tonumber(ARGV[6])
local radius = tonumber(ARGV[7])
local most = tonumber(ARGV[8])
local function verified(first_key, last_key, min_distance, max_distance, stage, min_similarity)
  local found, seen = {}, {}
  for i = first_key, last_key do
    for _, candidate in ipairs(redis.call('SMEMBERS', KEYS[i])) do
      if not seen[candidate] then
        seen[candidate] = true
        local d = distance(probe, candidate)
        if d > min_distance and d <= max_distance then found[#found + 1] = {d, candidate} end
      end
    end
  end
  table.sort(found, function(a, b)
    if a[1] ~= b[1] then return a[1] < b[1] end
    return a[2] < b[2]
  end)
  for i = 1, math.min(#found, most) do
    local d, candidate = found[i][1], found[i][2]
    local j = similarity(probe, candidate)
    local differ = numbers_differ(probe, candidate)
    local sizes = page_sizes_differ(probe, candidate, text_chars)
    local reply = {
      'match', candidate, d, stage, math.floor(j * 1000 + 0.5), differ and 1 or 0,
      sizes and 1 or 0
    }
    if j >= min_similarity and not differ and not sizes and string.sub(candidate, 9, 8 + """
    + str(MINHASH_BYTES)
    + """) ~= string.rep('\\0', """
    + str(MINHASH_BYTES)
    + """) then
      return reply
    end
    if not rejected then
      reply[1] = 'rejected'
      rejected = reply
    end
  end
  return false
end
if threshold >= 0 then
  local match = verified(3, 6, -1, threshold, 'first', min_similarity)
  if match then return match end
  if radius >= 0 then
    match = verified(3, #KEYS, threshold, radius, 'second', tonumber(ARGV[9]))
    if match then return match end
  end
end
local added = 0
if ARGV[5] == '1' then
  local new_member = probe .. ARGV[3]
  redis.call('HSETNX', KEYS[1], ARGV[1], new_member)
  if threshold >= 0 then
    for i = 3, 6 do redis.call('SADD', KEYS[i], new_member) end
  end
  redis.call('INCR', KEYS[2])
  added = 1
end
if rejected then return rejected end
return {'new', added}
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


_KEY_AT = 8 + MINHASH_BYTES + 8 + 1


def _member(
    fingerprint: int,
    key: str,
    minhash: bytes | None = None,
    numbers: int = 0,
    page_size: int = 0,
) -> bytes:
    return (
        fingerprint.to_bytes(8, "big")
        + (bytes(MINHASH_BYTES) if minhash is None else minhash)
        + numbers.to_bytes(8, "big")
        + bytes((page_size,))
        + key.encode("utf-8", "surrogatepass")
    )


def _split_member(member: bytes) -> tuple[str, int]:
    return member[_KEY_AT:].decode("utf-8", "surrogatepass"), int.from_bytes(member[:8], "big")


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

    def probe_band_keys(self, fingerprint: int) -> list[str]:
        """The Redis sets of the band values one bit away from those of *fingerprint*
        (the second stage's multi-probe)."""
        keys: list[str] = []
        for band in range(BAND_COUNT):
            value = (fingerprint >> (band * BAND_BITS)) & BAND_MASK
            keys.extend(
                f"{{{self.base}}}:b{band}:{value ^ (1 << bit):04x}" for bit in range(BAND_BITS)
            )
        return keys

    def check_and_add(
        self,
        key: str,
        fingerprint: int,
        content_hash: bytes,
        threshold: int | None,
        *,
        add: bool = True,
        minhash: bytes | None = None,
        numbers: int = 0,
        page_size: int = 0,
        text_chars: int = 0,
        min_similarity: float = 0.0,
        second_stage_min_similarity: float | None = None,
        second_stage_distance: int | None = None,
        max_candidates: int = 32,
    ) -> SharedMatch | None:
        """Return the verified match of a document, or the nearest candidate that
        verification rejected, after adding the document (when *add*) unless it matched;
        ``None`` when there was neither.

        *threshold* ``None`` means the exact check only (short texts); such a document
        is kept for exact matches but not in the bands. *second_stage_distance* ``None``
        leaves the wider search out; its candidates need *second_stage_min_similarity*
        (default: *min_similarity*).
        """
        check_fingerprint(fingerprint)
        if minhash is not None and len(minhash) != MINHASH_BYTES:
            raise ValueError(f"a MinHash signature has {MINHASH_BYTES} bytes, got {len(minhash)}")
        band_keys = self.band_keys(fingerprint)
        if threshold is not None and second_stage_distance is not None:
            band_keys += self.probe_band_keys(fingerprint)
        probe = _member(fingerprint, "", minhash, numbers, page_size)
        reply = self.connection.call(
            self.connection.script(CHECK_AND_ADD),
            keys=[self.exact_key, self.count_key, *band_keys],
            args=[
                content_hash,
                probe,
                key.encode("utf-8", "surrogatepass"),
                -1 if threshold is None else threshold,
                1 if add else 0,
                repr(float(min_similarity)),
                -1 if second_stage_distance is None else second_stage_distance,
                max_candidates,
                repr(
                    float(
                        min_similarity
                        if second_stage_min_similarity is None
                        else second_stage_min_similarity
                    )
                ),
                text_chars,
            ],
        )
        verdict = reply[0].decode()
        if verdict == "new":
            return None
        earlier_key, earlier_fingerprint = _split_member(reply[1])
        return SharedMatch(
            accepted=verdict == "match",
            key=earlier_key,
            fingerprint=earlier_fingerprint,
            distance=int(reply[2]),
            stage=reply[3].decode(),
            similarity=int(reply[4]) / 1000,
            numbers_differ=bool(int(reply[5])),
            page_sizes_differ=bool(int(reply[6])),
        )

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
