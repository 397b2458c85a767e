"""From a page (HTML or text) to what the content index needs, in one call.

Pure and picklable, so the pipeline can run it in a worker process: extraction
and fingerprinting are the CPU-heavy part of content dedup.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from dataclasses import dataclass, field, replace

from crawler.content.bodies import body_key
from crawler.content.extract import Extractor, extract, load_extractor
from crawler.content.fingerprints import page_size_class
from crawler.content.text_fingerprints import TextFingerprint, fingerprint_text


@dataclass(frozen=True)
class PageFingerprint:
    """``status`` is the extraction's (``"ok"`` for given text); ``fingerprint``
    is ``None`` when the page has no text; ``fallback``: the other extractor's text;
    ``extractor_cpu`` and ``fingerprints_cpu``: the CPU seconds the thread that did the work
    spent extracting the main text (decoding the page included) and computing its
    fingerprints, so that what the content level costs around them is known (``0`` for a
    page given up: ``"timeout"``); ``worker_start_cpu``: on the first page a worker process
    returns, the CPU seconds its start took (the interpreter, the imports), once a process
    whatever the crawl's length. They are not part of equality: two results of one page
    are equal."""

    status: str
    fingerprint: TextFingerprint | None
    fallback: bool = False
    extractor_cpu: float = field(default=0.0, compare=False)
    fingerprints_cpu: float = field(default=0.0, compare=False)
    worker_start_cpu: float = field(default=0.0, compare=False)


@dataclass(frozen=True, slots=True)
class EncodedPage:
    """A page the crawl decoded already (a ``str``), carried to a worker process as its
    UTF-8 bytes: the crawl process encodes it once, for its body key and the transfer
    (pickling the ``str`` would encode it again), and
    :func:`fingerprint_page` decodes it back to the same ``str``, lone surrogates
    included.

    >>> EncodedPage.of("<p>caf\u00e9 \\udc80</p>").decoded() == "<p>caf\u00e9 \\udc80</p>"
    True
    """

    data: bytes

    @classmethod
    def of(cls, page: str) -> EncodedPage:
        return cls(page.encode("utf-8", "surrogatepass"))

    def decoded(self) -> str:
        return self.data.decode("utf-8", "surrogatepass")


@dataclass(frozen=True, slots=True)
class ResponseBody:
    """A page as Scrapy downloaded it, where the item holds its text as ``response.text``
    gave it: carried to a worker process as the response's body, which is the page already
    in bytes, instead of encoding the text again (a third of a millisecond on a real page
    in the crawl process). :meth:`decoded` gives the same ``str`` as ``response.text``: it
    decodes as Scrapy's ``TextResponse.text`` does, with the response's encoding.

    >>> ResponseBody("caf\u00e9".encode("cp1252"), "cp1252").decoded()
    'café'
    """

    body: bytes
    encoding: str

    @property
    def data(self) -> bytes:
        return self.body

    def decoded(self) -> str:
        from w3lib.encoding import html_to_unicode

        return html_to_unicode(f"charset={self.encoding}", self.body)[1]


def body_for_worker(
    html: str | bytes, encoding: str | None, downloaded: ResponseBody | None
) -> tuple[bytes, EncodedPage | ResponseBody | None, str | None]:
    """The key of a page's body in the cache of bodies fingerprinted lately; the bytes sent
    to a worker in place of *html* when it is a ``str`` (*downloaded*, as Scrapy downloaded
    it, or encoded here); the encoding its bytes are read with."""
    encoded: EncodedPage | ResponseBody | None = None
    if isinstance(html, str):
        encoded = downloaded if downloaded is not None else EncodedPage.of(html)
    if downloaded is not None:
        encoding = downloaded.encoding
    return body_key(html if encoded is None else encoded.data, encoding), encoded, encoding


def fingerprint_page(
    html: str | bytes | EncodedPage | ResponseBody | None,
    text: str | None = None,
    *,
    url: str | None = None,
    encoding: str | None = None,
    max_bytes: int = 5_000_000,
    extractor: Extractor = "trafilatura",
    fold_repeats: bool = False,
    min_repeats: int = 2,
) -> PageFingerprint:
    """Fingerprint *text* when given, else the main text extracted from *html* (with
    the size of the page it was taken from). Text longer than *max_bytes* characters is
    cut to its head (status ``"truncated"``), as a page is.

    >>> fingerprint_page(None, "").fingerprint is None
    True
    >>> fingerprint_page(b"\\x89PNG\\r\\n\\x1a\\n...").status
    'binary'
    """
    status, page_chars, fallback = "ok", 0, False
    started = time.thread_time()
    if isinstance(html, (EncodedPage, ResponseBody)):
        html = html.decoded()
    if text is None:
        extraction = extract(html, url, encoding=encoding, max_bytes=max_bytes, extractor=extractor)
        status, text, page_chars = extraction.status, extraction.text, extraction.page_chars
        fallback = extraction.fallback
    extracted = time.thread_time()
    if not isinstance(text, str) or not text.strip():
        return PageFingerprint(status, None, fallback, extractor_cpu=extracted - started)
    if len(text) > max_bytes:
        # text given in the item, as long as the extraction would have cut a page
        status, text = "truncated", text[:max_bytes]
    text_fingerprint = fingerprint_text(text, fold_repeats=fold_repeats, min_repeats=min_repeats)
    return PageFingerprint(
        status,
        replace(text_fingerprint, page_size=page_size_class(page_chars)),
        fallback,
        extractor_cpu=extracted - started,
        fingerprints_cpu=time.thread_time() - extracted,
    )


class _OutOfTime(BaseException):
    """Raised in a worker process by its timer, inside the page's extraction (not an
    :exc:`Exception`: the extractors catch those and go on)."""


def _out_of_time(signum: int, frame: object) -> None:
    raise _OutOfTime


#: Seconds between two ``SIGALRM`` once a page's time is up, until it is given up.
_OUT_OF_TIME_AGAIN = 0.05


#: In a worker process: the CPU seconds :func:`start_worker` found its start took, until
#: the first page it returns reports them.
_unreported_start_cpu = 0.0


def fingerprint_page_within(
    seconds: float,
    html: str | bytes | EncodedPage | ResponseBody | None,
    text: str | None = None,
    **options: object,
) -> PageFingerprint:
    """:func:`fingerprint_page` given up after *seconds* (:func:`_fingerprint_page_within`);
    the first page a worker process returns carries what its start cost."""
    global _unreported_start_cpu
    page = _fingerprint_page_within(seconds, html, text, **options)
    if _unreported_start_cpu:
        page = replace(page, worker_start_cpu=_unreported_start_cpu)
        _unreported_start_cpu = 0.0
    return page


def _fingerprint_page_within(
    seconds: float,
    html: str | bytes | EncodedPage | ResponseBody | None,
    text: str | None = None,
    **options: object,
) -> PageFingerprint:
    """:func:`fingerprint_page`, given up after *seconds* of this process's work on it:
    status ``"timeout"``, no fingerprint. The time counts from when the page starts here,
    not from when it was queued. For the main thread of a worker process (the limit is a
    ``SIGALRM`` timer); ``0``: no limit. A signal cannot interrupt one long call into C
    code: the caller keeps a deadline of its own for a worker that never returns. A
    timer the process had set already is set again for what is left of it."""
    if seconds <= 0:
        return fingerprint_page(html, text, **options)  # type: ignore[arg-type]
    started = time.monotonic()
    previous_handler = signal.signal(signal.SIGALRM, _out_of_time)
    # fired again until the page is given up: Python swallows an exception raised while a
    # garbage-collector callback or a __del__ runs (hypothesis installs such a callback)
    previous_delay, previous_interval = signal.setitimer(
        signal.ITIMER_REAL, seconds, _OUT_OF_TIME_AGAIN
    )
    try:
        try:
            return fingerprint_page(html, text, **options)  # type: ignore[arg-type]
        finally:
            # inside the handled block: a timer that fires right as the page is done
            # raises here, and the page counts as given up rather than the task failing
            signal.setitimer(signal.ITIMER_REAL, 0)
    except _OutOfTime:
        return PageFingerprint("timeout", None)
    finally:
        signal.signal(signal.SIGALRM, previous_handler)
        if previous_delay:
            left = max(previous_delay - (time.monotonic() - started), 0.001)
            signal.setitimer(signal.ITIMER_REAL, left, previous_interval)


def start_worker(extractor: str, parent_pid: int, check_every: float = 1.0) -> None:
    """Initialize a worker process: import *extractor*, and exit once the process that
    started it (*parent_pid*) is gone. A crawl killed with ``kill -9`` cannot stop its
    workers, and a worker waiting for pages would otherwise wait forever."""
    load_extractor(extractor)
    fingerprint_text("Warm up the tables 12 of the first page, once.")

    def watch() -> None:
        while os.getppid() == parent_pid:
            time.sleep(check_every)
        os._exit(0)

    threading.Thread(target=watch, name="parent-watch", daemon=True).start()
    global _unreported_start_cpu
    _unreported_start_cpu = time.process_time()


#: The environment variables that set how many threads NumPy's BLAS starts (OpenBLAS, which
#: NumPy's wheels bundle; OpenMP and MKL builds).
BLAS_THREADS_VARIABLES = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")


def single_threaded_blas() -> dict[str, str]:
    """The environment a worker process is started with for one BLAS thread.

    A worker imports NumPy only where the fingerprints' compiled forms were not built (the
    pure-Python forms use it); its OpenBLAS then starts a thread per core: 0.13 s of CPU in
    each worker for threads it never needs, since the workers themselves keep the cores busy
    and their BLAS call (the SimHash's matrix product) is small. A variable the user set is
    left as it is.
    """
    return {name: "1" for name in BLAS_THREADS_VARIABLES if name not in os.environ}
