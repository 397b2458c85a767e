"""Default values of every ``DEDUP_*`` setting, in alphabetical order.

The add-on applies them at add-on priority; components that are enabled one
by one (``DUPEFILTER_CLASS``, ``ITEM_PIPELINES``) fall back to them too, so a
project gets the same behaviour either way. The README's settings table is
checked against this module by the tests.
"""

from __future__ import annotations

from crawler.tracking_params import DEFAULT_STRIP_PARAMS

#: Periodically snapshot the local seen-URL store after this many new URLs.
DEDUP_SNAPSHOT_EVERY = 100_000

#: Where local state (seen URLs, crash-safe frontier) persists; ``None``
#: means ``JOBDIR`` when set, else memory only.
DEDUP_STATE_DIR: str | None = None

#: Seen-URL store: ``bloom`` (local, persisted), ``memory`` (local, exact).
DEDUP_URL_BACKEND = "bloom"

#: Expected number of distinct URLs; sizes the Bloom filter.
DEDUP_URL_CAPACITY = 10_000_000

#: Target false-positive rate of the Bloom filter (a false positive is a lost page).
DEDUP_URL_ERROR_RATE = 0.001

#: Treat ``http://`` and ``https://`` forms of a URL as the same URL.
DEDUP_URL_FOLD_HTTPS = False

#: Query parameters never stripped (glob patterns; ``"host:pattern"`` for one site).
DEDUP_URL_KEEP_PARAMS: list[str] = []

#: Lowercase URL paths, for sites whose paths are case-insensitive.
DEDUP_URL_LOWERCASE_PATH = False

#: Record scheduled-but-unfinished requests so a killed crawl resumes without loss.
DEDUP_URL_RESUME = True

#: Query parameters stripped before comparing URLs (glob patterns;
#: ``"host:pattern"`` for one site). Defaults to a curated tracking list.
DEDUP_URL_STRIP_PARAMS: list[str] = list(DEFAULT_STRIP_PARAMS)
