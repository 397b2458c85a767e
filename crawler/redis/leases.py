"""Leases on requests taken from a shared Redis request queue.

scrapy-redis's queue forgets a request the moment a worker pops it. If that
worker is killed before the page is crawled, the request is gone, and its URL
is already in the shared seen store: the page is never crawled. Here a worker
takes a request and records a *lease* on it in one atomic call, and gives the
lease up only once the request is finished. Leases of a worker that stopped
sending heartbeats go back to the queue, so a page is never lost; at worst a
page in flight at the kill is downloaded twice.

Keys, next to the queue key ``<queue>`` (e.g. ``site:requests``):

* ``<queue>:leases:<worker>``: a hash, lease id -> ``"<score> <request bytes>"``
  (the exact bytes the queue held, and the queue score for a priority queue,
  so that a request goes back unchanged);
* ``<queue>:heartbeat:<worker>``: present while the worker is alive (it
  expires *ttl* seconds after the last heartbeat);
* ``<queue>:workers``: a set of the workers that may hold leases;
* ``<queue>:leases``: a hash of counters: ``next_id``, and ``held``, the
  leases held by all workers;
* ``<queue>:undecodable``: a list of requests that could not be read back;
* ``<queue>:reclaimed``: a set of the requests put back from a worker's leases
  and not taken again yet (:attr:`Lease.reclaimed`).

Every change to a lease is one Lua call, so a kill at any point, or two
workers reclaiming the same leases, neither loses nor duplicates a request.
No Scrapy import: the scheduler in :mod:`crawler.schedulers` does the wiring, with the
lease settings this module reads (:func:`lease_ttl_from_settings`, :func:`worker_id_from_settings`).
"""

from __future__ import annotations

import os
import socket
from typing import TYPE_CHECKING, NamedTuple, cast

from crawler import defaults

if TYPE_CHECKING:
    from scrapy.settings import BaseSettings

    from crawler.redis.connection import RedisConnection

#: The request queues of scrapy-redis, by how they pop and push back:
#: ``priority`` is a sorted set popped at the lowest score, ``fifo`` a list
#: popped on the right, ``lifo`` a list popped on the left.
QUEUE_KINDS = ("priority", "fifo", "lifo")

#: Put one lease entry (``"<score> <payload>"``) back where its queue pops
#: next, so that a returned request is taken again first.
_REQUEUE = """
local function requeue(queue, kind, entry)
  local separator = string.find(entry, ' ', 1, true)
  local score = string.sub(entry, 1, separator - 1)
  local payload = string.sub(entry, separator + 1)
  if kind == 'priority' then
    redis.call('ZADD', queue, score, payload)
  elseif kind == 'fifo' then
    redis.call('RPUSH', queue, payload)
  else
    redis.call('LPUSH', queue, payload)
  end
end
"""

#: KEYS: queue, this worker's leases, counters, workers, this worker's
#: heartbeat, reclaimed. ARGV: queue kind, worker id, ttl in ms. Pops the next
#: request and leases it; returns {lease id, payload, 1 if it was reclaimed
#: else 0}, or nil when the queue is empty.
_TAKE = """
local payload, score
if ARGV[1] == 'priority' then
  local head = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
  if #head == 0 then return false end
  payload, score = head[1], head[2]
  redis.call('ZREM', KEYS[1], payload)
else
  if ARGV[1] == 'fifo' then
    payload = redis.call('RPOP', KEYS[1])
  else
    payload = redis.call('LPOP', KEYS[1])
  end
  if not payload then return false end
  score = '0'
end
local id = redis.call('HINCRBY', KEYS[3], 'next_id', 1)
redis.call('HINCRBY', KEYS[3], 'held', 1)
redis.call('HSET', KEYS[2], id, score .. ' ' .. payload)
redis.call('SADD', KEYS[4], ARGV[2])
redis.call('SET', KEYS[5], '1', 'PX', ARGV[3])
return {id, payload, redis.call('SREM', KEYS[6], payload)}
"""

#: KEYS: the worker's leases, counters. ARGV: lease id. Returns 1 if the
#: lease was held (it is now given up), 0 if not (already released or reclaimed).
_RELEASE = """
if redis.call('HDEL', KEYS[1], ARGV[1]) == 1 then
  redis.call('HINCRBY', KEYS[2], 'held', -1)
  return 1
end
return 0
"""

#: KEYS: queue, the worker's leases, counters, workers, the worker's
#: heartbeat, reclaimed. ARGV: queue kind, worker id, "force" to ignore the
#: heartbeat. Returns the number of requests put back, or -1 when the worker
#: is alive.
_RECLAIM = (
    _REQUEUE
    + """
if ARGV[3] ~= 'force' and redis.call('EXISTS', KEYS[5]) == 1 then return -1 end
local flat = redis.call('HGETALL', KEYS[2])
local ids = {}
local entries = {}
for i = 1, #flat, 2 do
  local id = tonumber(flat[i])
  ids[#ids + 1] = id
  entries[id] = flat[i + 1]
end
-- newest first, so that the oldest lease ends up next in line
table.sort(ids, function(a, b) return a > b end)
for _, id in ipairs(ids) do
  requeue(KEYS[1], ARGV[1], entries[id])
  local entry = entries[id]
  redis.call('SADD', KEYS[6], string.sub(entry, string.find(entry, ' ', 1, true) + 1))
end
redis.call('DEL', KEYS[2])
if #ids > 0 then redis.call('HINCRBY', KEYS[3], 'held', -#ids) end
redis.call('SREM', KEYS[4], ARGV[2])
return #ids
"""
)

#: KEYS: this worker's leases, counters, workers, this worker's heartbeat. ARGV:
#: "<score> <payload>" of a request to queue, worker id, ttl in ms. Leases the
#: request before it is queued; returns the lease id.
_STAGE = """
local id = redis.call('HINCRBY', KEYS[2], 'next_id', 1)
redis.call('HINCRBY', KEYS[2], 'held', 1)
redis.call('HSET', KEYS[1], id, ARGV[1])
redis.call('SADD', KEYS[3], ARGV[2])
redis.call('SET', KEYS[4], '1', 'PX', ARGV[3])
return id
"""

#: KEYS: queue, the worker's leases, counters. ARGV: queue kind, lease id, "queue"
#: to push the request (as scrapy-redis pushes) or "" to drop it. Returns 1 if the
#: lease was held, 0 if not (its worker was taken for dead, and it went back to the queue).
_UNSTAGE = """
local entry = redis.call('HGET', KEYS[2], ARGV[2])
if not entry then return 0 end
redis.call('HDEL', KEYS[2], ARGV[2])
redis.call('HINCRBY', KEYS[3], 'held', -1)
if ARGV[3] == 'queue' then
  local separator = string.find(entry, ' ', 1, true)
  local payload = string.sub(entry, separator + 1)
  if ARGV[1] == 'priority' then
    redis.call('ZADD', KEYS[1], string.sub(entry, 1, separator - 1), payload)
  else
    redis.call('LPUSH', KEYS[1], payload)
  end
end
return 1
"""

#: KEYS: the worker's leases, counters, undecodable list. ARGV: lease id.
#: Moves the leased request to the undecodable list; returns 1 if it was held.
_SET_ASIDE = """
local entry = redis.call('HGET', KEYS[1], ARGV[1])
if not entry then return 0 end
local separator = string.find(entry, ' ', 1, true)
redis.call('RPUSH', KEYS[3], string.sub(entry, separator + 1))
redis.call('HDEL', KEYS[1], ARGV[1])
redis.call('HINCRBY', KEYS[2], 'held', -1)
return 1
"""

#: KEYS: queue, this worker's leases, counters. ARGV: queue kind. Returns
#: {requests queued, leases held by other workers}.
_PENDING = """
local queued
if ARGV[1] == 'priority' then
  queued = redis.call('ZCARD', KEYS[1])
else
  queued = redis.call('LLEN', KEYS[1])
end
local held = tonumber(redis.call('HGET', KEYS[3], 'held') or '0')
return {queued, math.max(held - redis.call('HLEN', KEYS[2]), 0)}
"""


class Lease(NamedTuple):
    """A request taken from the queue: its lease id and its queued bytes."""

    id: int
    payload: bytes
    #: Whether it was put back from a worker's leases (a killed worker's, or one
    #: returned at a stop): its first attempt may have recorded keys already.
    reclaimed: bool = False


class RequestLeases:
    """One worker's leases on the requests it takes from a shared queue.

    * :meth:`take` pops the next request and leases it in one atomic call;
      a kill between the two cannot happen;
    * :meth:`release` gives a lease up once its request is finished;
    * :meth:`heartbeat` keeps the worker's leases its own for *ttl* seconds;
    * :meth:`reclaim_expired` puts the leases of workers whose heartbeat
      expired back in the queue, each exactly once however many workers
      reclaim at the same time; :meth:`return_own` does it for this
      worker's leases (at a clean stop, or when a worker restarts with the
      id of a killed one).
    """

    def __init__(
        self,
        connection: RedisConnection,
        queue_key: str,
        queue_kind: str,
        worker_id: str,
        ttl: float,
    ) -> None:
        if queue_kind not in QUEUE_KINDS:
            raise ValueError(f"queue kind {queue_kind!r} is not one of {QUEUE_KINDS}")
        self.connection = connection
        self.queue_key = queue_key
        self.queue_kind = queue_kind
        self.worker_id = worker_id
        self.ttl_ms = max(1, round(ttl * 1000))
        self.counters_key = f"{queue_key}:leases"
        self.workers_key = f"{queue_key}:workers"
        self.undecodable_key = f"{queue_key}:undecodable"
        self.reclaimed_key = f"{queue_key}:reclaimed"

    def leases_key(self, worker_id: str) -> str:
        return f"{self.queue_key}:leases:{worker_id}"

    def heartbeat_key(self, worker_id: str) -> str:
        return f"{self.queue_key}:heartbeat:{worker_id}"

    def _worker_keys(self, worker_id: str) -> list[str]:
        return [
            self.queue_key,
            self.leases_key(worker_id),
            self.counters_key,
            self.workers_key,
            self.heartbeat_key(worker_id),
        ]

    def take(self) -> Lease | None:
        """Pop the next request and lease it to this worker (also a heartbeat);
        ``None`` when the queue is empty."""
        result = self.connection.call(
            self.connection.script(_TAKE),
            keys=[*self._worker_keys(self.worker_id), self.reclaimed_key],
            args=[self.queue_kind, self.worker_id, self.ttl_ms],
        )
        if not result:
            return None
        lease_id, payload, reclaimed = result
        return Lease(int(lease_id), payload, bool(reclaimed))

    def release(self, lease_id: int) -> bool:
        """Give up a lease; ``False`` if this worker no longer held it."""
        released = self.connection.call(
            self.connection.script(_RELEASE),
            keys=[self.leases_key(self.worker_id), self.counters_key],
            args=[lease_id],
        )
        return bool(released)

    def stage(self, payload: bytes, score: float) -> int:
        """Lease a request this worker is about to queue (*payload* and *score* as
        the queue holds them), before its key is recorded as seen: if the worker is
        killed before :meth:`unstage`, the request goes to the queue with its other
        leases. Returns the lease id."""
        lease_id: int = self.connection.call(
            self.connection.script(_STAGE),
            keys=[
                self.leases_key(self.worker_id),
                self.counters_key,
                self.workers_key,
                self.heartbeat_key(self.worker_id),
            ],
            args=[f"{score:g} ".encode() + payload, self.worker_id, self.ttl_ms],
        )
        return int(lease_id)

    def unstage(self, lease_id: int, *, queue: bool) -> bool:
        """End a lease :meth:`stage` took: push its request to the queue when *queue*,
        else drop it. ``False`` when the lease was no longer held (its request went
        back to the queue already)."""
        unstaged = self.connection.call(
            self.connection.script(_UNSTAGE),
            keys=[self.queue_key, self.leases_key(self.worker_id), self.counters_key],
            args=[self.queue_kind, lease_id, "queue" if queue else ""],
        )
        return bool(unstaged)

    def set_aside(self, lease_id: int) -> bool:
        """Move a leased request that cannot be read back to ``<queue>:undecodable``,
        kept for inspection instead of being lost or taken again forever."""
        moved = self.connection.call(
            self.connection.script(_SET_ASIDE),
            keys=[self.leases_key(self.worker_id), self.counters_key, self.undecodable_key],
            args=[lease_id],
        )
        return bool(moved)

    def heartbeat(self) -> None:
        """Say this worker is alive for the next *ttl* seconds."""
        client = self.connection.client

        def beat() -> None:
            pipeline = client.pipeline(transaction=True)
            pipeline.set(self.heartbeat_key(self.worker_id), b"1", px=self.ttl_ms)
            pipeline.sadd(self.workers_key, self.worker_id)
            pipeline.execute()

        self.connection.call(beat)

    def reclaim_expired(self) -> int:
        """Put back in the queue the leases of every other worker whose
        heartbeat expired; returns how many requests this call put back."""
        workers = self.connection.call(self.connection.client.smembers, self.workers_key)
        reclaimed = 0
        for raw_id in sorted(workers):
            worker_id = raw_id.decode() if isinstance(raw_id, bytes) else str(raw_id)
            if worker_id != self.worker_id:
                reclaimed += max(self._reclaim(worker_id, force=False), 0)
        return reclaimed

    def return_own(self) -> int:
        """Put back in the queue every lease held under this worker's id,
        whether this process took it or a killed one with the same id did;
        returns how many requests went back."""
        returned = self._reclaim(self.worker_id, force=True)
        self.connection.call(self.connection.client.delete, self.heartbeat_key(self.worker_id))
        return returned

    def _reclaim(self, worker_id: str, *, force: bool) -> int:
        count: int = self.connection.call(
            self.connection.script(_RECLAIM),
            keys=[*self._worker_keys(worker_id), self.reclaimed_key],
            args=[self.queue_kind, worker_id, "force" if force else ""],
        )
        return count

    def clear(self) -> None:
        """Forget the leases of every worker, as when the queue is flushed
        for a new crawl (requests set aside as undecodable stay)."""
        workers = self.connection.call(self.connection.client.smembers, self.workers_key)
        keys = [self.counters_key, self.workers_key, self.reclaimed_key]
        for raw_id in workers:
            worker_id = raw_id.decode() if isinstance(raw_id, bytes) else str(raw_id)
            keys += [self.leases_key(worker_id), self.heartbeat_key(worker_id)]
        self.connection.call(self.connection.client.delete, *keys)

    def pending(self) -> tuple[int, int]:
        """Requests in the queue, and leases held by other workers (whose
        requests may still add to the queue or come back to it)."""
        queued, held_elsewhere = self.connection.call(
            self.connection.script(_PENDING),
            keys=[self.queue_key, self.leases_key(self.worker_id), self.counters_key],
            args=[self.queue_kind],
        )
        return int(queued), int(held_elsewhere)

    def held(self) -> dict[int, bytes]:
        """This worker's leases as Redis holds them: lease id -> request bytes."""
        entries = cast(
            "dict[bytes, bytes]",
            self.connection.call(self.connection.client.hgetall, self.leases_key(self.worker_id)),
        )
        return {int(id_): entry.split(b" ", 1)[1] for id_, entry in entries.items()}


def lease_ttl_from_settings(settings: BaseSettings) -> float:
    """``DEDUP_LEASE_TTL``: seconds without a heartbeat before a worker's leases go back."""
    ttl = settings.getfloat("DEDUP_LEASE_TTL", defaults.DEDUP_LEASE_TTL)
    if ttl < 1:
        raise ValueError(
            f"DEDUP_LEASE_TTL={ttl!r} must be at least 1 second (default "
            f"{defaults.DEDUP_LEASE_TTL}): the seconds without a heartbeat after which a "
            "worker's leased requests go back to the queue"
        )
    return ttl


def worker_id_from_settings(settings: BaseSettings) -> str:
    """``DEDUP_WORKER_ID``, or this process's host name and id."""
    worker_id = settings.get("DEDUP_WORKER_ID", defaults.DEDUP_WORKER_ID)
    if worker_id is None:
        return f"{socket.gethostname()}:{os.getpid()}"
    if not isinstance(worker_id, str) or not worker_id.strip():
        raise ValueError(
            f"DEDUP_WORKER_ID={worker_id!r} must be a non-empty string, unique among the "
            "running workers, or None (host name and process id)"
        )
    return worker_id
