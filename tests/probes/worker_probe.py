"""Run in a content worker process by ``tests/test_pipelines.py``: what it has imported."""

from __future__ import annotations

import sys


def imported(names: list[str]) -> dict[str, bool]:
    return {name: name in sys.modules for name in names}
