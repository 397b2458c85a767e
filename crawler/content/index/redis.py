"""The content index shared by crawl workers in Redis.

Same banded layout as the in-memory index (:mod:`crawler.content.index`), kept small: each kept
document gets a number, and its record (8-byte big-endian fingerprint, 64-byte MinHash
signature, 8-byte numbers signature, page size class: 81 bytes) sits at a fixed place in a
string of 1,024 records, its key in a list of 1,024 keys. The band sets (one per band and
16-bit band value) and the exact-hash buckets (65,536 hashes, from the content hash's
first 2 bytes to the document) hold document numbers only, which Redis keeps in its
compact encodings. A near copy adds its fingerprint and content hash as one more entry of
the document it copies (that document's key, MinHash, numbers and page size). Look-up
(both stages), verification of a candidate by its signatures and insert are one Lua call,
so two workers that fetch the same article at the same moment keep exactly one copy. All
keys share one hash tag (``{base}``), so the index also works on Redis Cluster.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from crawler.content.fingerprints import (
    NUMBERS_COUNT_BITS,
    NUMBERS_COUNTER_BITS,
    NUMBERS_COUNTERS,
    NUMBERS_OTHER_BITS,
    NUMBERS_SUM_BITS,
)
from crawler.content.index import (
    BAND_BITS,
    BAND_COUNT,
    BAND_MASK,
    SharedMatch,
    check_fingerprint,
    check_max_distance,
)
from crawler.content.index.memory import MINHASH_BYTES
from crawler.content.page_size import PAGE_SIZE_RATIO, PAGE_SIZE_STEPS

if TYPE_CHECKING:
    from collections.abc import Mapping

    from crawler.redis.connection import RedisConnection

#: The first byte of a record's numbers signature that holds the other numbers' set
#: (Lua counts from 1; the signature takes bytes 73 to 80).
_OTHERS_FIRST_BYTE = 81 - NUMBERS_OTHER_BITS // 8

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
local COUNTERS, COUNTER_BITS = """
    + f"{NUMBERS_COUNTERS}, {NUMBERS_COUNTER_BITS}"
    + """
local COUNT_BITS, SUM_BITS = """
    + f"{NUMBERS_COUNT_BITS}, {NUMBERS_SUM_BITS}"
    + """
local function big_endian(s, first, last)
  local n = 0
  for i = first, last do n = n * 256 + string.byte(s, i) end
  return n
end
local function field(n, at, bits)
  return math.floor(n / 2 ^ at) % 2 ^ bits
end
local function numbers_differ(a, b)
  local a_only, b_only = false, false
  for i = """
    + str(_OTHERS_FIRST_BYTE)
    + """, 80 do
    local x, y = string.byte(a, i), string.byte(b, i)
    if bit.band(x, bit.bnot(y)) ~= 0 then a_only = true end
    if bit.band(y, bit.bnot(x)) ~= 0 then b_only = true end
  end
  if a_only and b_only then return true end
  local x = big_endian(a, 73, """
    + str(_OTHERS_FIRST_BYTE - 1)
    + """)
  local y = big_endian(b, 73, """
    + str(_OTHERS_FIRST_BYTE - 1)
    + """)
  if x == y then return false end
  local more = (field(y, SUM_BITS, COUNT_BITS) - field(x, SUM_BITS, COUNT_BITS)) % 2 ^ COUNT_BITS
  if more == 0 and field(x, 0, SUM_BITS) ~= field(y, 0, SUM_BITS) then return true end
  if more >= 2 ^ (COUNT_BITS - 1) then x, y, more = y, x, (-more) % 2 ^ COUNT_BITS end
  local rises = 0
  for k = 0, COUNTERS - 1 do
    local at = COUNT_BITS + SUM_BITS + COUNTER_BITS * k
    rises = rises + (field(y, at, COUNTER_BITS) - field(x, at, COUNTER_BITS)) % 2 ^ COUNTER_BITS
  end
  return rises > more
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

#: Documents a record string and a key list hold (a *chunk*).
CHUNK = 1024
#: Bytes of a document's record: fingerprint, MinHash, numbers signature, page size.
RECORD_BYTES = 8 + MINHASH_BYTES + 8 + 1
#: Which layout an index is written in: part of its rules signature, so that an index in
#: another layout is refused (naming this line), never misread. 2: documents by number.
LAYOUT = 2

# A document is number n (1, 2, ...: the count when it was added). Its record is bytes
# (n - 1) % CHUNK * RECORD_BYTES of the string {base}:r:<(n - 1) // CHUNK>, created at
# its full size so that it is never reallocated; its key is item (n - 1) % CHUNK of the
# list {base}:k:<(n - 1) // CHUNK>; the band sets and the exact-hash buckets hold n.
_DOCUMENTS = f"""
local CHUNK, RECORD = {CHUNK}, {RECORD_BYTES}
local function record_of(tag, n)
  local i = n - 1
  local at = (i % CHUNK) * RECORD
  return redis.call('GETRANGE', tag .. ':r:' .. math.floor(i / CHUNK), at, at + RECORD - 1)
end
local function key_of(tag, n)
  local i = n - 1
  return redis.call('LINDEX', tag .. ':k:' .. math.floor(i / CHUNK), i % CHUNK)
end
local function insert(tag, count_key, record, key)
  local n = redis.call('INCR', count_key)
  local i = n - 1
  local chunk = math.floor(i / CHUNK)
  local records = tag .. ':r:' .. chunk
  if i % CHUNK == 0 then redis.call('SETRANGE', records, CHUNK * RECORD - 1, '\\0') end
  redis.call('SETRANGE', records, (i % CHUNK) * RECORD, record)
  redis.call('RPUSH', tag .. ':k:' .. chunk, key)
  return n
end
local function band_numbers(keys, first, last)
  local numbers, seen = {{}}, {{}}
  for k = first, last do
    for _, n in ipairs(redis.call('SMEMBERS', keys[k])) do
      if not seen[n] then
        seen[n] = true
        numbers[#numbers + 1] = tonumber(n)
      end
    end
  end
  return numbers
end
"""

#: KEYS: exact-hash bucket, document count, 4 band sets, then (second stage) the 64 band
#: sets one bit away. ARGV: content hash field, probe record, key, threshold (-1: exact
#: check only), add (1/0), min similarity, second-stage radius (-1: none), candidates
#: verified at most per stage, the second stage's min similarity, the text's length
#: (characters, for the page size check), the index's hash tag, add a near copy's entry
#: (1/0).
#: Returns {verdict, key, fingerprint, distance, stage, similarity in thousandths,
#: numbers differ (1/0), page sizes differ (1/0)} for a match ('match'; a near one adds
#: the probe's fingerprint and content hash with the match's key and signatures) or, when
#: the document is new, the nearest candidate that verification rejected ('rejected');
#: {'new', added} when there was none.
CHECK_AND_ADD = (
    _DISTANCE
    + _DOCUMENTS
    + """
local probe = ARGV[2]
local text_chars = tonumber(ARGV[10])
local tag = ARGV[11]
local rejected = false
local function reply(verdict, n, record, d, stage, similarity, differ, sizes)
  return {verdict, key_of(tag, n), string.sub(record, 1, 8), d, stage, similarity, differ, sizes}
end
local exact = redis.call('HGET', KEYS[1], ARGV[1])
if exact then
  local n = tonumber(exact)
  local record = record_of(tag, n)
  if string.sub(record, 1, 8) == string.sub(probe, 1, 8) then
    if not page_sizes_differ(probe, record, text_chars) then
      return reply('match', n, record, 0, 'exact', 1000, 0, 0)
    end
    rejected = reply('rejected', n, record, 0, 'exact', 1000, 0, 1)
  end
end
local threshold = tonumber(ARGV[4])
local min_similarity = tonumber(ARGV[6])
local radius = tonumber(ARGV[7])
local most = tonumber(ARGV[8])
local NO_MINHASH = string.rep('\\0', """
    + str(MINHASH_BYTES)
    + """)
local function verified(first_key, last_key, min_distance, max_distance, stage, min_similarity)
  local found = {}
  for _, n in ipairs(band_numbers(KEYS, first_key, last_key)) do
    local record = record_of(tag, n)
    local d = distance(probe, record)
    if d > min_distance and d <= max_distance then found[#found + 1] = {d, n, record} end
  end
  table.sort(found, function(a, b)
    if a[1] ~= b[1] then return a[1] < b[1] end
    return a[2] < b[2]
  end)
  for i = 1, math.min(#found, most) do
    local d, n, record = found[i][1], found[i][2], found[i][3]
    local j = similarity(probe, record)
    local differ = numbers_differ(probe, record)
    local sizes = page_sizes_differ(probe, record, text_chars)
    local answer = reply(
      'match', n, record, d, stage, math.floor(j * 1000 + 0.5), differ and 1 or 0, sizes and 1 or 0
    )
    if j >= min_similarity and not differ and not sizes
        and string.sub(record, 9, 8 + """
    + str(MINHASH_BYTES)
    + """) ~= NO_MINHASH then
      return answer, record
    end
    if not rejected then
      answer[1] = 'rejected'
      rejected = answer
    end
  end
  return false
end
if threshold >= 0 then
  local match, record = verified(3, 6, -1, threshold, 'first', min_similarity)
  if not match and radius >= 0 then
    match, record = verified(3, #KEYS, threshold, radius, 'second', tonumber(ARGV[9]))
  end
  if match then
    if ARGV[5] == '1' and ARGV[12] == '1' and match[2] ~= ARGV[3] then
      -- one more fingerprint of the document kept, with its key and signatures
      local n = insert(tag, KEYS[2], string.sub(probe, 1, 8) .. string.sub(record, 9), match[2])
      redis.call('INCR', tag .. ':copies')
      redis.call('HSETNX', KEYS[1], ARGV[1], n)
      for i = 3, 6 do redis.call('SADD', KEYS[i], n) end
    end
    return match
  end
end
local added = 0
if ARGV[5] == '1' then
  local n = insert(tag, KEYS[2], probe, ARGV[3])
  redis.call('HSETNX', KEYS[1], ARGV[1], n)
  if threshold >= 0 then
    for i = 3, 6 do redis.call('SADD', KEYS[i], n) end
  end
  added = 1
end
if rejected then return rejected end
return {'new', added}
"""
)

#: KEYS: 4 band sets. ARGV: fingerprint (8 bytes), max distance, the index's hash tag.
#: Returns a flat list: key, fingerprint, distance, key, fingerprint, distance...
QUERY = (
    _DISTANCE
    + _DOCUMENTS
    + """
local max_distance = tonumber(ARGV[2])
local found = {}
for _, n in ipairs(band_numbers(KEYS, 1, 4)) do
  local record = record_of(ARGV[3], n)
  local d = distance(ARGV[1], record)
  if d <= max_distance then
    found[#found + 1] = key_of(ARGV[3], n)
    found[#found + 1] = string.sub(record, 1, 8)
    found[#found + 1] = d
  end
end
return found
"""
)

#: KEYS: 4 band sets, document count. ARGV: record, key, the index's hash tag.
ADD = (
    _DOCUMENTS
    + """
local n = insert(ARGV[3], KEYS[5], ARGV[1], ARGV[2])
for i = 1, 4 do redis.call('SADD', KEYS[i], n) end
"""
)


def _record(
    fingerprint: int,
    minhash: bytes | None = None,
    numbers: int = 0,
    page_size: int = 0,
) -> bytes:
    return (
        fingerprint.to_bytes(8, "big")
        + (bytes(MINHASH_BYTES) if minhash is None else minhash)
        + numbers.to_bytes(8, "big")
        + bytes((page_size,))
    )


class RedisContentIndex:
    """A :class:`~crawler.content.index.FingerprintIndex` in Redis, with an atomic
    :meth:`check_and_add` for the detector.

    *base* names the index (e.g. ``"myspider:content"``); every Redis key is
    ``{base}:...``.
    """

    def __init__(self, connection: RedisConnection, base: str) -> None:
        self.connection = connection
        self.base = base
        self.tag = f"{{{base}}}"
        self.count_key = f"{self.tag}:count"
        #: how many entries are near copies of a document, not documents
        self.copies_key = f"{self.tag}:copies"
        self.signature_key = f"{self.tag}:signature"

    def open(self, signature: Mapping[str, Any]) -> None:
        """Ping, then claim or check the rules signature of the shared index, while
        Redis fails for less than its fault budget (:meth:`RedisConnection.opening`)."""
        self.connection.opening(
            lambda: self._open(signature),
            what=f"the shared content index {self.base!r} (DEDUP_REDIS_CONTENT_KEY)",
        )

    def _open(self, signature: Mapping[str, Any]) -> None:
        self.connection.open()
        self.connection.check_signature(
            self.signature_key,
            {**signature, "redis content index layout": LAYOUT},
            data_key=self.count_key,
            key_setting="DEDUP_REDIS_CONTENT_KEY",
        )

    def exact_bucket(self, content_hash: bytes) -> tuple[str, bytes]:
        """The hash (one of 65,536) and field where *content_hash* is filed."""
        return f"{self.tag}:x:{content_hash[:2].hex()}", content_hash[2:10]

    def band_keys(self, fingerprint: int) -> list[str]:
        """The Redis sets that hold fingerprints sharing a band with *fingerprint*."""
        return [
            f"{self.tag}:b{band}:{(fingerprint >> (band * BAND_BITS)) & BAND_MASK:04x}"
            for band in range(BAND_COUNT)
        ]

    def probe_band_keys(self, fingerprint: int) -> list[str]:
        """The Redis sets of the band values one bit away from those of *fingerprint*
        (the second stage's multi-probe)."""
        keys: list[str] = []
        for band in range(BAND_COUNT):
            value = (fingerprint >> (band * BAND_BITS)) & BAND_MASK
            keys.extend(f"{self.tag}:b{band}:{value ^ (1 << bit):04x}" for bit in range(BAND_BITS))
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
        add_copy: bool = True,
    ) -> SharedMatch | None:
        """Return the verified match of a document, or the nearest candidate that
        verification rejected, after adding the document (when *add*) unless it matched;
        ``None`` when there was neither. A near match (when *add* and *add_copy*) adds the
        document's fingerprint and content hash as one more entry of the document
        matched, with its key and signatures.

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
        exact_key, exact_field = self.exact_bucket(content_hash)
        reply = self.connection.call(
            self.connection.script(CHECK_AND_ADD),
            keys=[exact_key, self.count_key, *band_keys],
            args=[
                exact_field,
                _record(fingerprint, minhash, numbers, page_size),
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
                self.tag,
                1 if add_copy else 0,
            ],
        )
        verdict = reply[0].decode()
        if verdict == "new":
            return None
        return SharedMatch(
            accepted=verdict == "match",
            key=reply[1].decode("utf-8", "surrogatepass"),
            fingerprint=int.from_bytes(reply[2], "big"),
            distance=int(reply[3]),
            stage=reply[4].decode(),
            similarity=int(reply[5]) / 1000,
            numbers_differ=bool(int(reply[6])),
            page_sizes_differ=bool(int(reply[7])),
        )

    def add(self, key: str, fingerprint: int) -> None:
        check_fingerprint(fingerprint)
        self.connection.call(
            self.connection.script(ADD),
            keys=[*self.band_keys(fingerprint), self.count_key],
            args=[_record(fingerprint), key.encode("utf-8", "surrogatepass"), self.tag],
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
            args=[fingerprint.to_bytes(8, "big"), max_distance, self.tag],
        )
        found = [
            (key.decode("utf-8", "surrogatepass"), int.from_bytes(fingerprint, "big"), int(d))
            for key, fingerprint, d in zip(reply[::3], reply[1::3], reply[2::3], strict=True)
        ]
        # Redis sets have no order: nearest first, then by key for a stable result
        return sorted(found, key=lambda entry: (entry[2], entry[0]))

    def __len__(self) -> int:
        """The number of documents kept (entries for their near copies left out)."""
        entries, copies = self.connection.call(
            self.connection.client.mget, self.count_key, self.copies_key
        )
        return int(entries or 0) - int(copies or 0)

    @property
    def copies(self) -> int:
        """How many entries are near copies of a document kept."""
        return int(self.connection.call(self.connection.client.get, self.copies_key) or 0)
