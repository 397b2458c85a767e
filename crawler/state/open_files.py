"""Which processes hold a file open: how a command tells that a crawl is using
a state directory (a crawl keeps its journals open for appending)."""

from __future__ import annotations

import os
from pathlib import Path

_PROC = Path("/proc")


def processes_holding(path: Path) -> list[int] | None:
    """Return the ids of the other processes that have *path* open, or ``None``
    when this system cannot tell (no ``/proc``, as on macOS and Windows).

    * only processes whose open files this user may list are seen, that is,
      the user's own (a crawl run by another user goes unnoticed);
    * the file is matched by device and inode, so any spelling of its path,
      symlinks included, is found.
    """
    if not (_PROC / "self" / "fd").is_dir():
        return None
    try:
        target = path.stat()
    except FileNotFoundError:
        return []
    wanted = (target.st_dev, target.st_ino)
    holders = []
    for entry in _PROC.iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            descriptors = list((entry / "fd").iterdir())
        except OSError:  # not ours to list, or gone meanwhile
            continue
        for descriptor in descriptors:
            try:
                opened = descriptor.stat()
            except OSError:
                continue
            if (opened.st_dev, opened.st_ino) == wanted:
                holders.append(int(entry.name))
                break
    return sorted(holders)
