"""The compiled forms of the fingerprints' loops, where the package was built with them.

:data:`compiled` is the extension module ``crawler.content._speedups``, which installing
the package compiles from ``_speedups.c`` when the machine has a C compiler, or ``None``:
where it was not built, or where the environment variable ``DEDUP_PURE_PYTHON`` is set
(worker processes inherit it). Each function that has a compiled form runs it when
:data:`compiled` is set and its pure-Python reference otherwise: the values are the same
(``tests/content/test_speedups.py`` holds each against its reference), only the time
differs.

Nothing here imports Scrapy.
"""

from __future__ import annotations

import os
from types import ModuleType

__all__ = ["PURE_PYTHON_VARIABLE", "compiled"]

#: Set (to anything) in the environment, the pure-Python references run everywhere.
PURE_PYTHON_VARIABLE = "DEDUP_PURE_PYTHON"

compiled: ModuleType | None = None
if not os.environ.get(PURE_PYTHON_VARIABLE):
    try:
        from crawler.content import _speedups as compiled
    except ImportError:  # built without a C compiler
        compiled = None
