"""Redis access shared by every Redis-backed store.

One place for: which server (settings to URL and client parameters, the way
scrapy-redis users already write them), connecting with a ping that fails
loudly, retrying with backoff when the server goes away, the rules signature
stored next to the data, and Lua scripts loaded once and called by SHA.

``redis`` is imported only when a connection is made.
"""

from __future__ import annotations

import asyncio
import functools
import json
import logging
import threading
import time
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import unquote_plus, urlsplit

from crawler import defaults
from crawler.state.persistence import check_signature

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

    import redis
    from redis.commands.core import Script

logger = logging.getLogger(__name__)

DEFAULT_REDIS_URL = "redis://127.0.0.1:6379"
#: Seconds a Redis store that stopped answering is left alone before a call tries it again.
PROBE_INTERVAL = 5.0
#: The first pause between two tries to open a store at start-up; it doubles up to
#: :data:`OPENING_PAUSE_MAX` (a server that refuses connections fails at once).
OPENING_PAUSE = 0.05
OPENING_PAUSE_MAX = 0.25

_T = TypeVar("_T")


class RedisUnavailable(Exception):
    """Redis could not be reached, or stopped answering, after the retries."""


class RedisFaultPending(RedisUnavailable):
    """A call failed on the reactor thread, which never waits for a server: the server
    has failed for less than ``DEDUP_REDIS_FAULT_BUDGET`` so far, and the caller is to
    try again later (without blocking) rather than apply ``DEDUP_REDIS_ON_ERROR``."""

    def __init__(self, message: str, *, failure: str, may_have_applied: bool) -> None:
        super().__init__(message)
        #: what failed, without what comes next: "Redis at <url> failed (<error>)"
        self.failure = failure
        #: the call got no answer: the server may have applied it
        self.may_have_applied = may_have_applied


class RedisLeftAlone(RedisUnavailable):
    """A call refused at once: the server failed a call moments ago and is left alone
    (:data:`PROBE_INTERVAL`); that failure was raised and reported already."""


class RedisStartRefused(RedisUnavailable):
    """Redis failed for the whole ``DEDUP_REDIS_FAULT_BUDGET`` while a store or a queue
    opened: nothing was read or written, and a crawl that meets it does not start."""


class RedisSignatureMismatch(Exception):
    """The shared data was built with other rules than this worker's."""


def redis_url_from_settings(settings: Any) -> str:
    """``DEDUP_REDIS_URL``, else ``REDIS_URL``, else ``REDIS_HOST``/``REDIS_PORT``
    (scrapy-redis's settings), else :data:`DEFAULT_REDIS_URL`."""
    url = settings.get("DEDUP_REDIS_URL") or settings.get("REDIS_URL")
    if url:
        return str(url)
    host = settings.get("REDIS_HOST")
    if host:
        port = settings.getint("REDIS_PORT", 6379)
        return f"redis://{host}:{port}"
    return DEFAULT_REDIS_URL


def redis_url_setting(settings: Any) -> str:
    """The setting :func:`redis_url_from_settings` takes the URL from, for errors."""
    for name in ("DEDUP_REDIS_URL", "REDIS_URL"):
        if settings.get(name):
            return name
    return "REDIS_HOST/REDIS_PORT" if settings.get("REDIS_HOST") else "DEDUP_REDIS_URL, unset"


def fault_budget_from_settings(settings: Any) -> float:
    """``DEDUP_REDIS_FAULT_BUDGET``, checked: a number of seconds above 0."""
    budget = settings.getfloat("DEDUP_REDIS_FAULT_BUDGET", defaults.DEDUP_REDIS_FAULT_BUDGET)
    if not budget > 0:
        raise ValueError(f"DEDUP_REDIS_FAULT_BUDGET must be above 0 seconds, got {budget!r}")
    return budget


def redis_params_from_settings(settings: Any) -> dict[str, Any]:
    """Client keyword arguments from ``REDIS_PARAMS``; replies stay bytes. A call waits
    for an answer at most ``DEDUP_REDIS_FAULT_BUDGET`` unless ``REDIS_PARAMS`` says."""
    budget = fault_budget_from_settings(settings)
    params: dict[str, Any] = {"socket_timeout": budget, "socket_connect_timeout": budget}
    params.update(settings.getdict("REDIS_PARAMS"))
    for text_option in ("encoding", "decode_responses", "redis_cls"):
        params.pop(text_option, None)
    return params


#: What ``DEDUP_REDIS_ON_ERROR`` may say: close the spider, or let requests through.
REDIS_ERROR_POLICIES = ("stop", "allow")


def redis_error_policy_from_settings(settings: Any) -> str:
    """``DEDUP_REDIS_ON_ERROR``; :exc:`ValueError` naming it when it is not a policy."""
    return defaults.checked_choice(
        settings,
        "DEDUP_REDIS_ON_ERROR",
        REDIS_ERROR_POLICIES,
        "a policy",
        "use 'stop' (close the spider) or 'allow' (let requests through, counted)",
    )


def connection_from_settings(settings: Any) -> RedisConnection:
    """A :class:`RedisConnection` to the server (or, with ``DEDUP_REDIS_CLUSTER``,
    the Redis Cluster) the settings name (not opened)."""
    return RedisConnection(
        redis_url_from_settings(settings),
        redis_params_from_settings(settings),
        cluster=settings.getbool("DEDUP_REDIS_CLUSTER", defaults.DEDUP_REDIS_CLUSTER),
        setting=redis_url_setting(settings),
        budget=fault_budget_from_settings(settings),
    )


def redact(url: str) -> str:
    """*url* without its password, for logs and errors: the one in its user info and a
    ``password`` query parameter (both forms redis-py reads); the rest as written.

    >>> redact("rediss://user:secret@cache.example:6380/0")
    'rediss://user:***@cache.example:6380/0'
    >>> redact("redis://[::1]:6379/0?password=secret&db=2")
    'redis://[::1]:6379/0?password=***&db=2'
    """
    parts = urlsplit(url)
    redacted = url
    if "@" in parts.netloc:
        userinfo, host = parts.netloc.rsplit("@", 1)
        if ":" in userinfo:
            masked = f"{userinfo.split(':', 1)[0]}:***@{host}"
            redacted = redacted.replace(f"//{parts.netloc}", f"//{masked}", 1)
    if parts.query:
        query = "&".join(_without_password(field) for field in parts.query.split("&"))
        redacted = redacted.replace(f"?{parts.query}", f"?{query}", 1)
    return redacted


def _without_password(query_field: str) -> str:
    name = query_field.split("=", 1)[0]
    return f"{name}=***" if unquote_plus(name).lower() == "password" else query_field


@functools.cache
def _faults() -> tuple[type[Exception], ...]:
    """What makes a Redis call fail for a reason of the server, not of the call: no
    answer, a cluster without a master for a slot (``CLUSTERDOWN``, ``TRYAGAIN``), a
    replica or a full server refusing writes (``READONLY``, ``OOM``), a server loading its
    data (``LOADING``) or asking for a password. ``DEDUP_REDIS_ON_ERROR`` applies to all."""
    from redis import exceptions

    return (
        exceptions.ConnectionError,  # with LOADING and authentication failures
        exceptions.TimeoutError,
        exceptions.ClusterError,  # with CLUSTERDOWN and MASTERDOWN
        exceptions.TryAgainError,
        exceptions.ReadOnlyError,
        exceptions.OutOfMemoryError,
    )


def _may_wait() -> bool:
    """Whether a call may pause between retries: anywhere but on the reactor's thread."""
    from twisted.python import threadable

    return not threadable.isInIOThread()


@functools.cache
def _unanswered() -> tuple[type[Exception], ...]:
    from redis import exceptions

    return (exceptions.ConnectionError, exceptions.TimeoutError)


@functools.cache
def _unreachable() -> tuple[type[Exception], ...]:
    """What a ping that fails raises: :func:`_faults` (authentication failures among them),
    and a cluster client that found no node of its slot map answering."""
    from redis.exceptions import RedisClusterException

    return (*_faults(), RedisClusterException)


@functools.cache
def _down() -> tuple[type[Exception], ...]:
    """The faults after which the store is left alone for :data:`PROBE_INTERVAL`: no
    answer, or a cluster down. A server that refuses writes answers at once, and still
    serves reads."""
    from redis import exceptions

    return (*_unanswered(), exceptions.ClusterError, exceptions.TryAgainError)


class RedisConnection:
    """A Redis client with retries, a failure count, and signature checks.

    * :meth:`open` connects and pings; an unreachable server raises
      :class:`RedisUnavailable` naming the URL (never the password);
    * :meth:`call` runs one command. Off the reactor's thread (a command-line tool, a
      pipeline's worker thread) it retries faults (:func:`_faults`) up to *retries*
      times with exponential backoff from *backoff* seconds, logging each retry, then
      raises :class:`RedisUnavailable`; calls wait for a server that fails at most
      *budget* seconds in all (the retries stop early when it is spent). On the
      reactor's thread it never pauses between retries: a fault raises
      :class:`RedisFaultPending` at once while the server has been failing for less than
      *budget* seconds (the caller tries again later), then :class:`RedisUnavailable`
      (a cluster client meeting ``CLUSTERDOWN`` still waits inside redis-py before it
      raises: 0.26 s a call with redis-py 8.2, which sleeps 0.25 s and reads the slots
      again). After that, a server that does
      not answer (or a cluster down) is left alone: calls raise at once for
      :data:`PROBE_INTERVAL` seconds, then one call tries it again, with no retries. A
      call that succeeds gives the whole budget back;
    * :meth:`script` registers a Lua script once; calls go by SHA (redis-py
      loads the script again by itself if the server lost it).
    """

    def __init__(
        self,
        url: str = DEFAULT_REDIS_URL,
        params: Mapping[str, Any] | None = None,
        *,
        retries: int = 3,
        backoff: float = 0.2,
        cluster: bool = False,
        setting: str = "DEDUP_REDIS_URL",
        budget: float = defaults.DEDUP_REDIS_FAULT_BUDGET,
        probe_interval: float = PROBE_INTERVAL,
    ) -> None:
        self.url = url
        self.setting = setting
        self.params = dict(params or {})
        self.cluster = cluster
        self.retries = retries
        self.backoff = backoff
        self.budget = budget
        self.probe_interval = probe_interval
        self.retried = 0
        self.failures = 0
        #: calls refused at once while the server was left alone
        self.refused_while_down = 0
        self._waited = 0.0  # seconds calls waited for a failing server since a success
        self._failing_since: float | None = None  # the first fault since a success
        self._down_until = 0.0
        self._down_error = ""
        self._client: redis.Redis | None = None
        self._scripts: dict[str, Script] = {}

    @property
    def client(self) -> redis.Redis:
        client = self._client
        if client is None:
            import redis  # the heavy import only when Redis is used
            from redis.backoff import NoBackoff
            from redis.retry import Retry

            # redis-py does not retry by itself (by default it does, with sleeps: a
            # cluster down blocked the reactor 12.6 s a call); call() decides
            params = {"retry": Retry(NoBackoff(), 0), **self.params}
            if self.cluster:
                from redis.cluster import RedisCluster

                # a cluster client routes each command (and script) by its keys'
                # slot; each store (each shard of a seen store) keeps its keys in one
                # slot (one hash tag)
                cluster_client: Any = RedisCluster.from_url(self.url, **params)
                client = cluster_client
            else:
                client = redis.Redis.from_url(self.url, **params)
            self._client = client
        return client

    def open(self) -> None:
        try:
            self.client.ping()
        except ValueError as exc:  # redis-py's reading of the URL: a bad port, scheme...
            raise ValueError(
                f"{self.setting}={redact(self.url)!r} is not a Redis URL: {exc}"
            ) from None  # the message says it all: one traceback, not three
        except _unreachable() as exc:
            raise RedisUnavailable(
                f"cannot reach Redis at {redact(self.url)} ({self.setting}): {exc}"
            ) from None

    def opening(self, open_store: Callable[[], _T], *, what: str) -> _T:
        """Run *open_store* (a store's or a queue's first calls: a ping, the signature
        check) while the server fails for less than :attr:`budget` seconds.

        * a fault (no answer, a cluster without a master for a slot, a refused
          connection) makes it try again after a short pause, from the start: what
          *open_store* does must be safe to do twice; a password or a certificate
          refused is refused at once;
        * once the server has failed for the whole budget since the first fault, it
          raises :class:`RedisStartRefused`, naming the URL, its setting, *what* was
          opening and ``DEDUP_REDIS_FAULT_BUDGET``; in a crawl that error is logged
          once, as the crawl's only error (:func:`refuse_start`);
        * it pauses on the reactor's thread too, before the spider opens (nothing else
          of the crawl runs yet), for the budget at most, plus the last call's wait for
          an answer (``REDIS_PARAMS``' socket timeouts, the budget by default);
        * an *open_store* that calls :meth:`opening` on this connection again (a sharded
          store's shards) runs at once inside the outer one.
        """
        return wait_while_redis_fails(
            open_store,
            url=self.url,
            setting=self.setting,
            budget=self.budget,
            what=what,
            before_retry=self._forget_faults,
        )

    def _forget_faults(self) -> None:
        """Start afresh: a retry at start-up is not refused for the faults it follows."""
        self._waited = 0.0
        self._failing_since = None
        self._down_until = 0.0

    def call(self, command: Callable[..., _T], *args: Any, **kwargs: Any) -> _T:
        if self._down_until:
            left = self._down_until - time.monotonic()
            if left > 0:
                self.refused_while_down += 1
                raise RedisLeftAlone(
                    f"Redis at {redact(self.url)} is left alone for {left:.1f}s more after "
                    f"{self._down_error}"
                )
        probing = bool(self._down_until)
        delay = self.backoff
        attempt = 0
        while True:
            started = time.monotonic()
            try:
                result = command(*args, **kwargs)
            except _faults() as exc:
                now = time.monotonic()
                if self._failing_since is None:
                    self._failing_since = started
                if not _may_wait():
                    self._waited = now - self._failing_since
                    if probing or self._waited >= self.budget:
                        raise self._failed(exc, None) from exc
                    self.retried += 1
                    failure = f"Redis at {redact(self.url)} failed ({exc})"
                    raise RedisFaultPending(
                        f"{failure}; trying again for {self.budget - self._waited:.1f}s "
                        "more (DEDUP_REDIS_FAULT_BUDGET)",
                        failure=failure,
                        may_have_applied=isinstance(exc, _unanswered()),
                    ) from exc
                self._waited += now - started
                left = self.budget - self._waited
                if probing or attempt == self.retries or left <= 0:
                    raise self._failed(exc, attempt) from exc
                attempt += 1
                self.retried += 1
                pause = min(delay, left)
                logger.warning(
                    "Redis at %(url)s failed (%(error)s); retry %(attempt)d of "
                    "%(retries)d in %(delay).1fs",
                    {
                        "url": redact(self.url),
                        "error": exc,
                        "attempt": attempt,
                        "retries": self.retries,
                        "delay": pause,
                    },
                )
                time.sleep(pause)
                self._waited += pause
                delay *= 2
            else:
                self._waited = 0.0
                self._failing_since = None
                self._down_until = 0.0
                return result

    def _failed(self, error: Exception, retries: int | None) -> RedisUnavailable:
        """Count a call that failed for good (after *retries*, or ``None``: calls that
        failed since a success); leave a server that is away alone."""
        self.failures += 1
        self._failing_since = None
        tries = "" if retries is None else f" after {retries} retries"
        if isinstance(error, _unanswered()):
            outcome = f"did not answer{tries}: {error}"
        else:  # an error reply, whose class says more than its text
            outcome = f"refused{tries}: {type(error).__name__}: {error}"
        outcome += f" ({self._waited:.1f}s in all, DEDUP_REDIS_FAULT_BUDGET)"
        if isinstance(error, _down()):
            self._down_until = time.monotonic() + self.probe_interval
            self._down_error = f"it {outcome}"
        return RedisUnavailable(f"Redis at {redact(self.url)} {outcome}")

    def node_of(self, key: str) -> str | None:
        """The ``host:port`` of the cluster primary that serves *key* (from the client's
        slot map, no call), or ``None`` off a cluster."""
        if not self.cluster:
            return None
        node = self.client.get_node_from_key(key)  # type: ignore[attr-defined]
        return f"{node.host}:{node.port}"

    def execute_packed(self, packed: bytes) -> Any:
        """Send one command already encoded in RESP and return its reply.

        For hot paths whose commands have many arguments: redis-py encodes
        each argument in Python, which for ``BITFIELD`` with a dozen
        subcommands costs several times the loopback round trip. Run it
        through :meth:`call` to get the retries.
        """
        if self.cluster:
            raise TypeError("a packed command cannot be routed to a cluster node")
        pool = self.client.connection_pool
        connection = pool.get_connection()
        try:
            connection.send_packed_command([packed])
            return connection.read_response()
        finally:
            pool.release(connection)

    def script(self, source: str) -> Script:
        """The registered Lua script for *source*, created once per connection."""
        if source not in self._scripts:
            self._scripts[source] = self.client.register_script(source)
        return self._scripts[source]

    def check_signature(
        self,
        key: str,
        signature: Mapping[str, Any],
        *,
        data_key: str,
        key_setting: str = "DEDUP_REDIS_KEY",
    ) -> None:
        """Store *signature* at *key* when the data has none yet; otherwise it
        must be equal, or :class:`RedisSignatureMismatch` names what differs.

        Data already at *data_key* without a signature (e.g. written by
        scrapy-redis) is refused: it was built with unknown rules. The check
        and the write are one atomic call, so workers starting together agree.
        """
        encoded = json.dumps(dict(signature), sort_keys=True)
        stored_raw = self.call(self.script(_CLAIM_SIGNATURE), keys=[key, data_key], args=[encoded])
        if stored_raw == b"":
            raise RedisSignatureMismatch(
                f"Redis key {data_key!r} at {redact(self.url)} holds data written without "
                f"a rules signature (by another dupefilter, such as scrapy-redis's?); use "
                f"another {key_setting}, or delete the key"
            )
        check_signature(
            json.loads(stored_raw),
            signature,
            RedisSignatureMismatch,
            f"the data at Redis key {data_key!r} ({redact(self.url)}) was built",
            other_release=f"; run every worker with that release, or use another {key_setting}",
            other_rules="; every worker sharing it must use the same settings, or another "
            f"{key_setting}",
        )


#: KEYS[1] signature, KEYS[2] data; ARGV[1] this worker's signature. Returns
#: the signature in force, or "" when the data exists without one.
_CLAIM_SIGNATURE = """
local stored = redis.call('GET', KEYS[1])
if stored then return stored end
if redis.call('EXISTS', KEYS[2]) == 1 then return '' end
redis.call('SET', KEYS[1], ARGV[1])
return ARGV[1]
"""


#: ``depth``: how many :func:`wait_while_redis_fails` run on this thread, one inside another
_opening = threading.local()


def wait_while_redis_fails(
    open_store: Callable[[], _T],
    *,
    url: str,
    setting: str,
    budget: float,
    what: str,
    before_retry: Callable[[], None] | None = None,
) -> _T:
    """:meth:`RedisConnection.opening` for any client: run *open_store* again after each
    fault of Redis at *url* (named by *setting*) until it succeeds or the server has
    failed for *budget* seconds, then raise :class:`RedisStartRefused`."""
    depth = getattr(_opening, "depth", 0)
    if depth:
        return open_store()
    failing_since: float | None = None
    pause = OPENING_PAUSE
    while True:
        started = time.monotonic()
        _opening.depth = depth + 1
        try:
            return open_store()
        except RedisStartRefused:
            raise
        except _opening_faults() as exc:
            error = exc
        finally:
            _opening.depth = depth
        if _lasting(error):
            refusal = RedisStartRefused(f"cannot open {what}: {error}")
            refuse_start(refusal)
            raise refusal from None
        if failing_since is None:
            failing_since = started
            logger.info(
                "Redis at %(url)s (%(setting)s) fails while %(what)s opens (%(error)s): "
                "trying again for %(budget)gs (DEDUP_REDIS_FAULT_BUDGET)",
                {
                    "url": redact(url),
                    "setting": setting,
                    "what": what,
                    "error": _fault_text(error),
                    "budget": budget,
                },
            )
        left = budget - (time.monotonic() - failing_since)
        if left <= 0:
            refusal = RedisStartRefused(
                f"cannot open {what}: Redis at {redact(url)} ({setting}) failed for "
                f"{time.monotonic() - failing_since:.1f}s, the whole DEDUP_REDIS_FAULT_BUDGET "
                f"of {budget:g}s ({_fault_text(error)}); start again once it answers"
            )
            refuse_start(refusal)
            raise refusal from None
        time.sleep(min(pause, left))
        pause = min(pause * 2, OPENING_PAUSE_MAX)
        if before_retry is not None:
            before_retry()


@functools.cache
def _opening_faults() -> tuple[type[Exception], ...]:
    """What :func:`wait_while_redis_fails` waits through: :func:`_faults`, this module's
    errors for them (not a refusal: a signature that differs, a URL that is not one),
    and a cluster client that found no node answering."""
    return (*_unreachable(), RedisFaultPending, RedisLeftAlone, RedisUnavailable)


def _lasting(error: BaseException) -> bool:
    """Whether *error* is one that waiting does not mend: a password or a certificate
    refused (redis-py raises both as connection errors)."""
    import ssl

    from redis.exceptions import AuthenticationError

    seen: BaseException | None = error
    while seen is not None:
        if isinstance(seen, (AuthenticationError, ssl.SSLError)):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def _fault_text(error: BaseException) -> str:
    """What failed, the way the server or the client said it."""
    if isinstance(error, RedisUnavailable):  # the client's error it was raised for
        error = error.__cause__ or error.__context__ or error
    if isinstance(error, RedisUnavailable):
        return str(error)
    return f"{type(error).__name__}: {error}"


def _follows(failure: BaseException, refusal: BaseException) -> bool:
    """Whether *failure* is *refusal*, or was raised while Scrapy undid a start that
    *refusal* ended (its engine's close raises "Engine slot not assigned" when the
    scheduler's ``from_crawler`` failed)."""
    seen: BaseException | None = failure
    while seen is not None:
        if seen is refusal:
            return True
        seen = seen.__context__
    return False


def refuse_start(error: RedisStartRefused) -> None:
    """In a crawl, log *error* once, as an ERROR line, and keep asyncio from logging it
    again under "Task exception was never retrieved" with a traceback when it ends the
    crawl's start, with what Scrapy raised while undoing that start (Scrapy still counts
    the start as failed: exit code 1). Out of a crawl (a command) the caller reports it."""
    try:
        task = asyncio.current_task()
    except RuntimeError:  # no event loop runs: not a crawl
        return
    if task is None:
        return
    logger.error("%(error)s", {"error": error})

    def retrieve(done: asyncio.Task[Any]) -> None:
        if done.cancelled():
            return
        failure = done.exception()  # retrieved: asyncio says nothing of it
        if failure is not None and not _follows(failure, error):  # reported as before
            done.get_loop().call_exception_handler(
                {
                    "message": "Task exception was never retrieved",
                    "exception": failure,
                    "future": done,
                }
            )

    task.add_done_callback(retrieve)
