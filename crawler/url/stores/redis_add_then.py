"""One atomic Redis call that adds a key to a shared seen store and, when the key was
seen, runs a :class:`LuaTail` on keys of the same hash slot: the recrawl records' claim of
a due page (:mod:`crawler.url.recrawl_redis_store`), so that a seen URL costs one round trip.

Nothing here imports Scrapy.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from crawler.redis.connection import RedisConnection

__all__ = ["SET_ADD", "LuaTail", "add_then"]

#: KEYS: the set. ARGV: the key. Returns 1 for a new key, 0 for a seen one.
SET_ADD = "return redis.call('SADD', KEYS[1], ARGV[1])"


@dataclass(frozen=True)
class LuaTail:
    """What a seen store's :meth:`add_then` runs after its add, in the same atomic call,
    when the key was seen: a Lua *body* reading its own ``KEYS`` and ``ARGV`` (*keys*,
    which must share the store's hash slot, and *args*)."""

    body: str
    keys: list[str]
    args: list[Any]


def _add_then_script(add: str, tail: str) -> str:
    """One script running *add* (a seen store's add, 1 for a new key) and, for a seen key,
    *tail*; each reads its own ``KEYS`` and ``ARGV``. ``ARGV[1]`` and ``ARGV[2]`` say how
    many keys and arguments are *add*'s. Returns ``{1}`` for a new key, ``{0, <tail's
    reply>}`` for a seen one."""
    return f"""
local add_keys, add_args = tonumber(ARGV[1]), tonumber(ARGV[2])
local function add(KEYS, ARGV)
{add}
end
local function tail(KEYS, ARGV)
{tail}
end
if add({{unpack(KEYS, 1, add_keys)}}, {{unpack(ARGV, 3, 2 + add_args)}}) == 1 then
  return {{1}}
end
return {{0, tail({{unpack(KEYS, add_keys + 1)}}, {{unpack(ARGV, 3 + add_args)}})}}
"""


def add_then(
    connection: RedisConnection, add: tuple[str, list[str], list[Any]], tail: LuaTail
) -> tuple[bool, Any]:
    """Run a seen store's *add* (its Lua body, keys and arguments) and, when the key was
    seen, *tail*, in one atomic call: whether the key was new, and the tail's reply
    (``None`` for a new key)."""
    body, keys, args = add
    script = connection.script(_add_then_script(body, tail.body))
    reply = connection.call(
        script, keys=[*keys, *tail.keys], args=[len(keys), len(args), *args, *tail.args]
    )
    return (True, None) if int(reply[0]) == 1 else (False, reply[1])
