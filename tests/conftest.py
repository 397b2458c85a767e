"""Shared fixtures: the demo site served by a real HTTP server in a subprocess."""

from __future__ import annotations

import json
import os
import re
import select
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from hypothesis import settings as hypothesis_settings

from crawler.demo.site import LISTING_PAGE_SIZE, build_site

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

    from crawler.demo.site import DemoSite

REPO_ROOT = Path(__file__).resolve().parent.parent

# Property tests draw the same examples on every run, so that a run fails only on a change,
# without a time limit an example (hypothesis's 200 ms deadline failed a regex expansion
# that took 270 ms on a busy 2-core machine: a timing, not an outcome);
# HYPOTHESIS_PROFILE=deep draws new random examples, ten times as many, to look for more.
hypothesis_settings.register_profile("derandomized", derandomize=True, database=None, deadline=None)
hypothesis_settings.register_profile("deep", max_examples=1000, deadline=None)
hypothesis_settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "derandomized"))
READY_TIMEOUT = 20.0
#: Starts of a new redis-server on other ports when it exits at once (a port taken meanwhile).
PORT_ATTEMPTS = 3
READY_LINE = re.compile(r"^READY (http://([^/:]+):(\d+)/)$")


class DemoSiteProcess:
    """``python -m crawler.demo.server`` in a subprocess, the way Scrapy's tests run mockserver.

    ``start()`` waits for the ``READY <url>`` line (at most 20 s) and fails with the server's
    output if it does not come; ``stop()`` terminates the process and waits for it.
    """

    def __init__(
        self,
        articles: int = 24,
        seed: int = 7,
        host_name: str = "localhost",
        site: str = "articles",
        listing_size: int = LISTING_PAGE_SIZE,
    ) -> None:
        self.site = site
        self.listing_size = listing_size
        self.articles = articles
        self.seed = seed
        self.host_name = host_name
        self.process: subprocess.Popen[str] | None = None
        self.ready_line = ""
        self.url = ""
        self.port = 0

    def start(self) -> None:
        command = [
            sys.executable,
            "-m",
            "crawler.demo.server",
            "--port",
            "0",
            "--articles",
            str(self.articles),
            "--seed",
            str(self.seed),
            "--host-name",
            self.host_name,
            "--site",
            self.site,
            "--listing-size",
            str(self.listing_size),
        ]
        self.process = subprocess.Popen(
            command, cwd=REPO_ROOT, stdout=subprocess.PIPE, text=True, env=_child_env()
        )
        assert self.process.stdout is not None
        readable, _, _ = select.select([self.process.stdout], [], [], READY_TIMEOUT)
        line = self.process.stdout.readline().rstrip("\n") if readable else ""
        match = READY_LINE.match(line)
        if match is None:
            self.stop()
            raise RuntimeError(f"demo server did not become ready, first line: {line!r}")
        self.ready_line = line
        self.url = match.group(1)
        self.port = int(match.group(3))

    def stop(self) -> int | None:
        """Terminate the server; return its exit code."""
        if self.process is None:
            return None
        self.process.terminate()
        try:
            code = self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            code = self.process.wait()
        if self.process.stdout is not None:
            self.process.stdout.close()
        self.process = None
        return code

    def _control(self, endpoint: str) -> dict[str, Any]:
        with urllib.request.urlopen(f"{self.url}__demo/{endpoint}", timeout=10) as response:
            result: dict[str, Any] = json.load(response)
            return result

    def hits(self) -> dict[str, Any]:
        """The server's request counts (``GET /__demo/hits``)."""
        return self._control("hits")

    def reset(self) -> None:
        """Zero the server's request counts (``GET /__demo/reset``)."""
        self._control("reset")

    def model(self) -> DemoSite:
        """The same site, built in this process, with the server's port in absolute links."""
        return build_demo_model(
            self.port, articles=self.articles, seed=self.seed, listing_size=self.listing_size
        )


def _child_env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO_ROOT), env.get("PYTHONPATH")]))
    return env


def build_demo_model(
    port: int, articles: int = 24, seed: int = 7, listing_size: int = LISTING_PAGE_SIZE
) -> DemoSite:
    """Build the demo site model the server serves, for computing expectations in tests."""
    return build_site(
        host="localhost", port=port, articles=articles, seed=seed, listing_size=listing_size
    )


@pytest.fixture(scope="session")
def demo_site_server() -> Iterator[DemoSiteProcess]:
    """The default demo site (24 articles, seed 7) served by a subprocess for the session."""
    server = DemoSiteProcess()
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def demo_site_model(demo_site_server: DemoSiteProcess) -> DemoSite:
    """The model of the site ``demo_site_server`` serves, with the same port."""
    return demo_site_server.model()


@pytest.fixture
def demo_site_process_factory() -> Iterator[Callable[..., DemoSiteProcess]]:
    """Start extra demo server processes (``DemoSiteProcess`` options); stopped after the test."""
    started: list[DemoSiteProcess] = []

    def start(**options: Any) -> DemoSiteProcess:
        process = DemoSiteProcess(**options)
        started.append(process)
        process.start()
        return process

    yield start
    for process in started:
        process.stop()


# -- a real redis-server ---------------------------------------------------------------------


class ManualClock:
    """A clock a test moves by hand (``clock.now += 60``), for time slices."""

    def __init__(self, now: float = 1_000_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


class RedisServerProcess:
    """``redis-server`` on a free 127.0.0.1 port, no persistence unless asked.

    With *password*, clients must authenticate; with *tls*, :attr:`url` is a
    ``rediss://`` URL to a TLS port whose self-signed certificate is
    :attr:`ca_file` (the plain port stays, for the readiness check); with *dump*, it
    starts from that RDB file (copied into *directory*).
    """

    def __init__(
        self,
        directory: Path,
        *,
        appendonly: bool = False,
        password: str | None = None,
        tls: bool = False,
        cluster: bool = False,
        dump: Path | None = None,
    ) -> None:
        self.directory = directory
        self.dump = dump
        self.appendonly = appendonly
        self.password = password
        self.cluster = cluster
        # the cluster bus port stays across restarts: the other nodes know it
        self.port, self.cluster_port, self.tls_port = _free_ports(cluster=cluster, tls=tls)
        self._started = False
        self.ca_file = directory / "redis-cert.pem"
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        userinfo = f":{self.password}@" if self.password else ""
        if self.tls_port is not None:
            return f"rediss://{userinfo}127.0.0.1:{self.tls_port}/0"
        return f"redis://{userinfo}127.0.0.1:{self.port}/0"

    def _options(self) -> list[str]:
        options = ["--requirepass", self.password] if self.password else []
        if self.cluster:
            options += ["--cluster-enabled", "yes", "--cluster-node-timeout", "5000"]
            options += ["--cluster-port", str(self.cluster_port)]  # the bus, not port + 10000
        if self.tls_port is not None:
            key_file = self.directory / "redis-key.pem"
            _write_self_signed_certificate(self.ca_file, key_file)
            options += [
                *("--tls-port", str(self.tls_port)),
                *("--tls-cert-file", str(self.ca_file), "--tls-key-file", str(key_file)),
                *("--tls-ca-cert-file", str(self.ca_file), "--tls-auth-clients", "no"),
            ]
        return options

    def start(self) -> None:
        """Start the server and wait until it answers. On its first start, a server that
        exits at once is given other ports, up to :data:`PORT_ATTEMPTS` times: a free port
        can be taken (by a connection's local port) before redis-server binds it."""
        for _ in range(0 if self._started else PORT_ATTEMPTS - 1):  # a restart keeps its ports
            if self._start_once():
                self._started = True
                return
            self.port, self.cluster_port, self.tls_port = _free_ports(
                cluster=self.cluster_port is not None, tls=self.tls_port is not None
            )
        self._start_once(last=True)
        self._started = True

    def _start_once(self, *, last: bool = False) -> bool:
        """Whether the server started; ``False`` when it exited at once and this is not the
        *last* attempt; :exc:`RuntimeError` when it did not answer in time."""
        if self.dump is not None and not (self.directory / "dump.rdb").exists():
            shutil.copy(self.dump, self.directory / "dump.rdb")
        command = [
            "redis-server",
            "--port",
            str(self.port),
            "--bind",
            "127.0.0.1",
            "--dir",
            str(self.directory),
            "--save",
            "",
            "--appendonly",
            "yes" if self.appendonly else "no",
            "--appendfsync",
            "always",
            *self._options(),
        ]
        self.process = subprocess.Popen(
            command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        deadline = time.monotonic() + READY_TIMEOUT
        while True:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1) as conn:
                    conn.sendall(b"PING\r\n")
                    if conn.recv(16).startswith((b"+PONG", b"-NOAUTH")):
                        return True
            except OSError:
                pass
            exited = self.process.poll() is not None
            if time.monotonic() > deadline or exited:
                self.stop()
                if exited and not last:
                    return False
                raise RuntimeError(f"redis-server did not start on port {self.port}")
            time.sleep(0.05)

    def stop(self) -> None:
        if self.process is not None:
            self.process.terminate()
            self.process.wait(timeout=10)
            self.process = None

    def kill(self) -> None:
        if self.process is not None:
            self.process.kill()
            self.process.wait(timeout=10)
            self.process = None


def _write_self_signed_certificate(certificate_file: Path, key_file: Path) -> None:
    """A certificate for 127.0.0.1, valid for a day, that is its own authority."""
    import datetime
    import ipaddress

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.timezone.utc)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    certificate_file.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )


def _free_ports(*, cluster: bool, tls: bool) -> tuple[int, int | None, int | None]:
    """A port for a redis-server, and one for its cluster bus and its TLS listener where it
    has them: free now, and distinct (bound together, so the system cannot hand one out
    twice)."""
    sockets = [socket.socket() for _ in range(1 + cluster + tls)]
    try:
        for sock in sockets:
            sock.bind(("127.0.0.1", 0))
        ports: list[int] = [sock.getsockname()[1] for sock in sockets]
    finally:
        for sock in sockets:
            sock.close()
    port = ports.pop(0)
    cluster_port = ports.pop(0) if cluster else None
    tls_port = ports.pop(0) if tls else None
    return port, cluster_port, tls_port


def require_redis_server() -> None:
    if shutil.which("redis-server") is None:
        message = "redis-server is not installed (Debian package redis-server)"
        if os.environ.get("CI") == "true":
            pytest.fail(message)
        pytest.skip(message)


@pytest.fixture
def redis_server(tmp_path: Path) -> Iterator[RedisServerProcess]:
    """A fresh, empty redis-server for one test."""
    require_redis_server()
    server = RedisServerProcess(tmp_path)
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def redis_server_factory(tmp_path: Path) -> Iterator[Callable[..., RedisServerProcess]]:
    """Start redis-servers with options (``appendonly=True``); stopped after the test."""
    require_redis_server()
    started: list[RedisServerProcess] = []

    def start(**options: Any) -> RedisServerProcess:
        server = RedisServerProcess(tmp_path / f"redis-{len(started)}", **options)
        server.directory.mkdir()
        started.append(server)
        server.start()
        return server

    yield start
    for server in started:
        server.stop()


@pytest.fixture
def redis_cluster(redis_cluster_nodes: list[RedisServerProcess]) -> str:
    """The URL of one primary of :func:`redis_cluster_nodes`."""
    return redis_cluster_nodes[0].url


@pytest.fixture
def redis_cluster_nodes(
    redis_server_factory: Callable[..., RedisServerProcess],
) -> list[RedisServerProcess]:
    """A Redis Cluster of three primaries on 127.0.0.1 (``redis-cli --cluster create``)."""
    return start_redis_cluster(redis_server_factory)


def start_redis_cluster(
    redis_server_factory: Callable[..., RedisServerProcess], **options: Any
) -> list[RedisServerProcess]:
    """Three redis-servers with *options* (``appendonly=True``) made one cluster of three
    primaries, no replica; returns once every node says the cluster is ok."""
    nodes = [redis_server_factory(cluster=True, **options) for _ in range(3)]
    subprocess.run(
        [
            "redis-cli",
            "--cluster",
            "create",
            *(f"127.0.0.1:{node.port}" for node in nodes),
            "--cluster-replicas",
            "0",
            "--cluster-yes",
        ],
        check=True,
        capture_output=True,
        timeout=60,
    )
    wait_for_cluster_ok(nodes, READY_TIMEOUT)
    return nodes


def wait_for_cluster_ok(nodes: list[RedisServerProcess], timeout: float) -> None:
    """Return once every node of a cluster says its state is ok."""
    import redis

    deadline = time.monotonic() + timeout
    for node in nodes:
        client = redis.Redis(port=node.port)
        try:
            while client.cluster("info").get("cluster_state") != "ok":
                if time.monotonic() > deadline:
                    raise RuntimeError(f"the Redis Cluster was not ok within {timeout} s")
                time.sleep(0.1)
        finally:
            client.close()


# -- real crawls ------------------------------------------------------------------------------


def scrapy_crawl_command(url: str, *arguments: str, spider: str = "site") -> list[str]:
    """``scrapy crawl <spider> -a url=<url> <arguments>`` run by this Python."""
    return [sys.executable, "-m", "scrapy", "crawl", spider, "-a", f"url={url}", *arguments]


def start_scrapy(command: list[str], stderr: Any = subprocess.PIPE) -> subprocess.Popen[str]:
    """Start a scrapy command from the repository root; its log goes to *stderr*."""
    return subprocess.Popen(
        command,
        cwd=REPO_ROOT,
        env=_child_env(),
        stdout=subprocess.DEVNULL,
        stderr=stderr,
        text=True,
    )


def run_scrapy(command: list[str], timeout: float = 120) -> str:
    """Run a scrapy command from the repository root until it ends; it must succeed.
    Returns its log (stderr)."""
    completed = subprocess.run(
        command,
        cwd=REPO_ROOT,
        env=_child_env(),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    assert completed.returncode == 0, completed.stderr[-3000:]
    return completed.stderr


def scrapy_command(
    *arguments: str, input: str | None = None, cwd: Path = REPO_ROOT, timeout: float = 60
) -> subprocess.CompletedProcess[str]:
    """Run ``scrapy <arguments>`` with this Python in *cwd* (the demo project by
    default) and return it finished, whatever its exit code."""
    return subprocess.run(
        [sys.executable, "-m", "scrapy", *arguments],
        cwd=cwd,
        env=_child_env(),
        input=input,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def crawl_stat(log: str, name: str) -> float | None:
    """The value of the stat *name* in a crawl's "Dumping Scrapy stats" log."""
    match = re.search(rf"'{re.escape(name)}': ([0-9.e+-]+)", log)
    return float(match.group(1)) if match else None


def final_stat(log: str, name: str) -> int:
    """The value of the integer stat *name* in the stats a crawl's log dumps at close
    (0 when absent, as Scrapy's stats getters say)."""
    match = re.search(rf"^ ?[{{ ]'{re.escape(name)}': (\d+),?}}?$", log, re.MULTILINE)
    return int(match.group(1)) if match else 0


@pytest.fixture
def tmpfs_factory(tmp_path: Path) -> Iterator[Callable[[str], Path]]:
    """Mount a tmpfs with mount *options* (``"size=256k"``, ``"ro,size=64k"``) and return
    its directory, unmounted after the test; skips where this process cannot mount one
    (it takes root)."""
    mounted: list[Path] = []

    def mount(options: str) -> Path:
        mount_point = tmp_path / f"tmpfs-{len(mounted)}"
        mount_point.mkdir()
        done = subprocess.run(
            ["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(mount_point)],
            capture_output=True,
            check=False,
        )
        if done.returncode:
            pytest.skip(f"cannot mount a tmpfs here: {done.stderr.decode().strip()}")
        mounted.append(mount_point)
        return mount_point

    yield mount
    for mount_point in mounted:
        subprocess.run(["umount", "--lazy", str(mount_point)], check=False)  # even while busy


@pytest.fixture
def small_filesystem(
    tmpfs_factory: Callable[[str], Path],
) -> tuple[Path, Callable[[], None]]:
    """A 256 KiB tmpfs, grown to 64 MiB by calling the returned function."""
    mount_point = tmpfs_factory("size=256k")

    def grow() -> None:
        subprocess.run(["mount", "-o", "remount,size=64m", str(mount_point)], check=True)

    return mount_point, grow


@pytest.fixture
def on_reactor_thread() -> Iterator[None]:
    """The test's thread taken for the reactor's (Twisted's I/O thread), as in a crawl:
    what runs there must never wait for a server."""
    from twisted.python import threadable

    before = threadable.ioThread
    threadable.registerAsIOThread()
    yield
    threadable.ioThread = before
