"""The dedup state a project's settings point at, opened for the commands.

* :func:`spider_settings`: the project's settings as a spider's crawl sees them;
* :func:`read_local_seen_store`, :func:`read_local_content_index`: a state
  directory loaded without writing, truncating or locking anything, so that it
  can be read while a crawl is using it;
* :func:`redis_signature`: the rules signature of shared Redis state, read
  without claiming it (a crawl's ``open()`` writes it when it is missing).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from scrapy.exceptions import UsageError
from scrapy.spiderloader import get_spider_loader
from scrapy.utils.project import inside_project

from crawler.content.index.journaled import JournaledContentIndex
from crawler.state.persistence import StateFileError, read_header
from crawler.url.configuration import (
    LOCAL_BACKENDS,
    seen_set_factory,
    url_rules_from_settings,
    url_signature,
)
from crawler.url.stores.journaled import JournaledSeenStore

if TYPE_CHECKING:
    from pathlib import Path

    from scrapy.settings import BaseSettings

    from crawler.url.stores.redis_shards import RedisSeenStore


def spider_settings(settings: BaseSettings, spider_name: str | None) -> tuple[BaseSettings, str]:
    """Return the settings a crawl of *spider_name* runs with (the project's,
    updated by the spider's ``custom_settings``) and the spider's name.

    Without a name, the project's only spider is meant; a project with several
    raises :class:`~scrapy.exceptions.UsageError` listing them, and so does a
    directory outside any project.
    """
    if not inside_project():
        raise UsageError("run this command in a Scrapy project (where scrapy.cfg is)")
    spider_loader = get_spider_loader(settings)
    if spider_name is None:
        names = sorted(spider_loader.list())
        if len(names) != 1:
            listed = ", ".join(names) if names else "none"
            raise UsageError(f"name the spider whose dedup state to use (spiders: {listed})")
        spider_name = names[0]
    try:
        spider_class = spider_loader.load(spider_name)
    except KeyError:
        raise UsageError(f"Spider not found: {spider_name}") from None
    spider_copy = settings.copy()
    spider_class.update_settings(spider_copy)
    return spider_copy, spider_name


def project_url_signature(settings: BaseSettings, store: Any) -> dict[str, Any]:
    """The rules signature a crawl with *settings* would give *store*, as read
    back from a state file or Redis (JSON)."""
    signature = url_signature(url_rules_from_settings(settings), store)
    loaded: dict[str, Any] = json.loads(json.dumps(signature))
    return loaded


def read_local_seen_store(settings: BaseSettings, state_dir: Path) -> JournaledSeenStore | None:
    """The seen-URL store in *state_dir*, loaded read-only with the rules it was
    written with, or ``None`` when the directory holds none.

    Its backend is the one its files record (``bloom`` or ``memory``), whatever
    ``DEDUP_URL_BACKEND`` says now; compare ``store.signature`` with
    :func:`project_url_signature` to tell whether a crawl would accept it.
    """
    probe = JournaledSeenStore(seen_set_factory(settings, "memory"), state_dir, {})
    header = read_header(probe.snapshot_path) or read_header(probe.journal.path)
    if header is None:
        return None
    suffix = probe.kind.removeprefix(probe.seen.kind)  # kinds: "bloom-seen-urls", ...
    for backend in LOCAL_BACKENDS:
        if header.get("kind") == backend + suffix:
            signature = dict(header.get("signature", {}))
            written_with = settings.copy()
            for name, value in signature.items():
                if name.startswith("DEDUP_URL_") and name != "DEDUP_URL_BACKEND":
                    written_with.set(name, value, priority="cmdline")
            new_set = seen_set_factory(written_with, backend)
            store = JournaledSeenStore(new_set, state_dir, signature)
            store.read()
            return store
    raise StateFileError(
        f"{probe.snapshot_path} holds {header.get('kind')!r} state, not a seen-URL store"
    )


def read_local_content_index(state_dir: Path) -> JournaledContentIndex | None:
    """The content index in *state_dir*, loaded read-only with the rules it was
    written with, or ``None`` when the directory holds none."""
    index = JournaledContentIndex(state_dir, {})
    header = read_header(index.snapshot_path) or read_header(index.journal.path)
    if header is None:
        return None
    index = JournaledContentIndex(state_dir, dict(header.get("signature", {})))
    index.read()
    return index


def redis_signature(store: RedisSeenStore) -> dict[str, Any] | None:
    """The rules signature stored next to a shared seen store, or ``None``."""
    connection = store.connection
    raw = connection.call(connection.client.get, store.signature_key)
    if raw is None:
        return None
    signature: dict[str, Any] = json.loads(raw)
    return signature
