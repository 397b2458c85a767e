"""Serve the demo site over HTTP and count every request a crawler makes.

Run it as a process::

    python -m crawler.demo.server [--port 0] [--articles 24] [--host-name localhost] [--site params]

``--site params`` serves the shop of :mod:`crawler.demo.param_site` instead (its
parameters are known to no list; ``--articles`` is then its number of products);
``--site recrawl`` the site of :mod:`crawler.demo.recrawl_site`, which changes between crawls
(``--articles`` pages). A page served with validators (``ETag``, ``Last-Modified``) answers a
conditional GET whose validators match with ``304 Not Modified``.

It prints one line, ``READY http://localhost:PORT/``, once it serves, then serves until SIGTERM
or SIGINT. Or run it in-process with :class:`DemoServer`.

Control endpoints, never linked from the site and never counted:

- ``/__demo/hits``: JSON ``{"total": n, "body_bytes": n, "by_target": {...},
  "by_resource": {...}, "by_host": {...}, "by_status": {...}}``;
- ``/__demo/reset``: zero the counters (GET or POST); answers with the zeroed counts;
- ``/__demo/advance`` (``--site recrawl`` only): the site's next round; answers with the paths
  changed, added and removed;
- ``/__demo/change/N`` (``--site recrawl`` only): page ``N`` changes, alone, in a round of
  its own.
"""

from __future__ import annotations

import argparse
import json
import logging
import signal
import sys
import threading
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from crawler.demo.param_site import REVIEWED_EVERY, ParamSite
from crawler.demo.recrawl_site import RecrawlSite, not_modified
from crawler.demo.site import LISTING_PAGE_SIZE, Resolution, build_site

if TYPE_CHECKING:
    from collections.abc import Mapping
    from types import FrameType, TracebackType

    from typing_extensions import Self

    from crawler.demo.site import DemoSite

logger = logging.getLogger(__name__)

CONTROL_PREFIX = "/__demo/"
#: The headers a ``304 Not Modified`` repeats.
VALIDATORS = ("ETag", "Last-Modified")
BIND_ADDRESS = "127.0.0.1"


class HitCounter:
    """Thread-safe request counts.

    Counts every request by its raw target (path and query as received), by the resource it
    was served (redirects and 404s have none), by ``Host`` header spelling and by status, and
    the bytes of the bodies sent.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._total = 0
        self._body_bytes = 0
        self._by_target: Counter[str] = Counter()
        self._by_resource: Counter[str] = Counter()
        self._by_host: Counter[str] = Counter()
        self._by_status: Counter[str] = Counter()

    def record(
        self, target: str, resource_id: str | None, host: str, status: int, body_bytes: int = 0
    ) -> None:
        """Count one request, answered with a body of *body_bytes*."""
        with self._lock:
            self._total += 1
            self._body_bytes += body_bytes
            self._by_target[target] += 1
            if resource_id is not None:
                self._by_resource[resource_id] += 1
            self._by_host[host] += 1
            self._by_status[str(status)] += 1

    def snapshot(self) -> dict[str, Any]:
        """The counts so far, as plain JSON-ready dicts."""
        with self._lock:
            return {
                "total": self._total,
                "body_bytes": self._body_bytes,
                "by_target": dict(self._by_target),
                "by_resource": dict(self._by_resource),
                "by_host": dict(self._by_host),
                "by_status": dict(self._by_status),
            }

    def reset(self) -> None:
        """Zero every count."""
        with self._lock:
            self._total = 0
            self._body_bytes = 0
            for counter in (self._by_target, self._by_resource, self._by_host, self._by_status):
                counter.clear()


class DemoHTTPServer(ThreadingHTTPServer):
    """A threading HTTP server bound to 127.0.0.1 that serves a :class:`DemoSite`.

    The site is built after binding, so its absolute links carry the real port even when
    ``port`` is 0.
    """

    daemon_threads = True
    request_queue_size = 64

    def __init__(
        self,
        port: int = 0,
        *,
        articles: int = 24,
        seed: int = 7,
        host_name: str = "localhost",
        verbose: bool = False,
        site: str = "articles",
        listing_size: int = LISTING_PAGE_SIZE,
    ) -> None:
        super().__init__((BIND_ADDRESS, port), DemoRequestHandler)
        self.site: DemoSite | ParamSite | RecrawlSite
        if site == "recrawl":
            self.site = RecrawlSite(articles, seed, host_name, self.server_address[1])
        elif site.startswith("params"):
            self.site = ParamSite(
                host_name,
                self.server_address[1],
                products=articles,
                seed=seed,
                irrelevant_links=site != "params-relevant",
                tabs=site.startswith("params-tabs"),
                reviewed_every=50 if site == "params-tabs-rare" else REVIEWED_EVERY,
                second_prefix=site == "params-prefix",
            )
        else:
            self.site = build_site(
                host=host_name,
                port=self.server_address[1],
                articles=articles,
                seed=seed,
                copies_first=site == "copies-first",
                listing_size=listing_size,
            )
        self.hits = HitCounter()
        self.verbose = verbose

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A crawler closing its connection early is not worth a traceback on stderr.
        logger.debug(
            "Request from %(client)s failed", {"client": client_address}, exc_info=sys.exc_info()
        )


class DemoRequestHandler(BaseHTTPRequestHandler):
    """Answers site requests from the server's :class:`DemoSite`, and the control endpoints."""

    server: DemoHTTPServer
    protocol_version = "HTTP/1.1"
    server_version = "LanternDemo/1.0"

    def do_GET(self) -> None:
        self._respond(send_body=True)

    def do_HEAD(self) -> None:
        self._respond(send_body=False)

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        self.rfile.read(length)
        if self._target().startswith(CONTROL_PREFIX):
            self._control(send_body=True)
        else:
            self._send(405, {"Content-Type": "text/plain", "Allow": "GET, HEAD"}, b"", True)

    def _target(self) -> str:
        """The request target as origin-form (``/path?query``), even if sent absolute."""
        if self.path.startswith(("http://", "https://")):
            parts = urlsplit(self.path)
            return (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        return self.path

    def _respond(self, send_body: bool) -> None:
        target = self._target()
        if target.startswith(CONTROL_PREFIX):
            self._control(send_body)
            return
        resolution = self.server.site.resolve(target)
        if not_modified(resolution, self.headers):
            headers = resolution.headers
            kept = {name: headers[name] for name in VALIDATORS if name in headers}
            resolution = Resolution(304, kept, b"", resolution.resource_id)
        self.server.hits.record(
            self.path,
            resolution.resource_id,
            self.headers.get("Host", ""),
            resolution.status,
            len(resolution.body) if send_body else 0,
        )
        self._send(resolution.status, resolution.headers, resolution.body, send_body)

    def _control(self, send_body: bool) -> None:
        endpoint = urlsplit(self._target()).path[len(CONTROL_PREFIX) :]
        if endpoint == "hits":
            status, payload = 200, self.server.hits.snapshot()
        elif endpoint == "reset":
            self.server.hits.reset()
            status, payload = 200, self.server.hits.snapshot()
        elif endpoint == "advance" and isinstance(self.server.site, RecrawlSite):
            status, payload = 200, self.server.site.advance()
        elif endpoint.startswith("change/") and isinstance(self.server.site, RecrawlSite):
            try:
                status, payload = 200, self.server.site.change(int(endpoint[7:]))
            except (KeyError, ValueError):
                status, payload = 404, {"error": f"no page {endpoint[7:]!r} to change"}
        else:
            status, payload = 404, {"error": f"unknown control endpoint {endpoint!r}"}
        body = json.dumps(payload, sort_keys=True).encode("utf-8")
        self._send(status, {"Content-Type": "application/json"}, body, send_body)

    def _send(self, status: int, headers: Mapping[str, str], body: bytes, send_body: bool) -> None:
        self.send_response(status)
        for name, value in headers.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if send_body:
            self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        if self.server.verbose:
            logger.info(
                "%(client)s %(message)s",
                {"client": self.address_string(), "message": format % args},
            )

    def log_error(self, format: str, *args: Any) -> None:
        logger.warning(
            "%(client)s %(message)s",
            {"client": self.address_string(), "message": format % args},
        )


class DemoServer:
    """The demo site served from a daemon thread of the current process.

    ``start()`` binds 127.0.0.1 (port 0 picks a free port) and returns the base URL (again,
    without rebinding, if already serving);
    ``hits()`` and ``reset()`` read and zero the request counts without going through HTTP;
    ``stop()`` shuts the server down and frees the port. As a context manager it starts on
    entry and stops on exit.
    """

    def __init__(
        self,
        articles: int = 24,
        *,
        seed: int = 7,
        host_name: str = "localhost",
        port: int = 0,
        verbose: bool = False,
        site: str = "articles",
        listing_size: int = LISTING_PAGE_SIZE,
    ) -> None:
        self.site_kind = site
        self.listing_size = listing_size
        self.articles = articles
        self.seed = seed
        self.host_name = host_name
        self.requested_port = port
        self.verbose = verbose
        self._server: DemoHTTPServer | None = None
        self._thread: threading.Thread | None = None

    def start(self) -> str:
        """Bind, serve in a daemon thread, and return the base URL (``http://host:port/``).

        Calling it again while serving changes nothing and returns the same URL.
        """
        if self._server is not None:
            return self.url
        self._server = DemoHTTPServer(
            self.requested_port,
            articles=self.articles,
            seed=self.seed,
            host_name=self.host_name,
            verbose=self.verbose,
            site=self.site_kind,
            listing_size=self.listing_size,
        )
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": 0.1},
            name="demo-site-server",
            daemon=True,
        )
        self._thread.start()
        return self.url

    def stop(self) -> None:
        """Stop serving and free the port; does nothing if the server is not running."""
        if self._server is None:
            return
        self._server.shutdown()
        self._server.server_close()
        if self._thread is not None:
            self._thread.join()
        self._server = self._thread = None

    @property
    def _running(self) -> DemoHTTPServer:
        if self._server is None:
            raise RuntimeError("DemoServer is not running: call start() first")
        return self._server

    @property
    def site(self) -> DemoSite | ParamSite | RecrawlSite:
        """The site being served (its ``port`` is the bound port)."""
        return self._running.site

    @property
    def port(self) -> int:
        """The bound port."""
        return self._running.server_address[1]

    @property
    def url(self) -> str:
        """The base URL, e.g. ``http://localhost:43121/``."""
        return self.site.base_url

    def hits(self) -> dict[str, Any]:
        """The request counts, as ``/__demo/hits`` returns them."""
        return self._running.hits.snapshot()

    def reset(self) -> None:
        """Zero the request counts."""
        self._running.hits.reset()

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc_value: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()


def main(argv: list[str] | None = None) -> int:
    """Serve the demo site until SIGTERM or SIGINT; print ``READY <url>`` once serving."""
    parser = argparse.ArgumentParser(
        prog="python -m crawler.demo.server", description="Serve the dedup demo site."
    )
    parser.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (0: any free)")
    parser.add_argument("--articles", type=int, default=24, help="number of articles")
    parser.add_argument("--seed", type=int, default=7, help="seed of the generated text")
    parser.add_argument(
        "--listing-size",
        type=int,
        default=LISTING_PAGE_SIZE,
        help="articles on each listing page of the demo site",
    )
    parser.add_argument(
        "--host-name", default="localhost", help="host name written in absolute links"
    )
    parser.add_argument("--verbose", action="store_true", help="log every request to stderr")
    parser.add_argument(
        "--site",
        choices=(
            "articles",
            "copies-first",
            "params",
            "params-relevant",
            "params-tabs",
            "params-tabs-rare",
            "params-prefix",
            "recrawl",
        ),
        default="articles",
        help="the demo site (copies-first: its home page links every copy of an article), "
        "a shop whose parameters no list knows, or a site that changes between crawls "
        "(recrawl: GET /__demo/advance moves it to its next round)",
    )
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.WARNING,
        format="%(asctime)s [%(name)s] %(levelname)s: %(message)s",
        stream=sys.stderr,
    )
    stopping = threading.Event()

    def request_stop(signum: int, frame: FrameType | None) -> None:
        stopping.set()

    signal.signal(signal.SIGTERM, request_stop)
    signal.signal(signal.SIGINT, request_stop)
    server = DemoServer(
        args.articles,
        seed=args.seed,
        host_name=args.host_name,
        port=args.port,
        verbose=args.verbose,
        site=args.site,
        listing_size=args.listing_size,
    )
    url = server.start()
    try:
        print(f"READY {url}", flush=True)
        while not stopping.wait(timeout=0.5):
            pass
    finally:
        server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
