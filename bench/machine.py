"""What a benchmark ran on: printed beside its figures, shared by the bench scripts."""

from __future__ import annotations

import os
import platform
from importlib.metadata import version
from pathlib import Path
from typing import Any


def cpu_model() -> str:
    """The processor's model name, or "" where /proc/cpuinfo does not say."""
    cpuinfo = Path("/proc/cpuinfo")
    if not cpuinfo.exists():
        return ""
    for line in cpuinfo.read_text(errors="replace").splitlines():
        if line.startswith("model name"):
            return line.partition(":")[2].strip()
    return ""


def machine_facts(*packages: str) -> dict[str, Any]:
    """Python, the versions of *packages*, and the hardware."""
    return {
        "python": platform.python_version(),
        "implementation": platform.python_implementation(),
        **{package: version(package) for package in packages},
        "cpu_count": os.cpu_count(),
        "cpu_model": cpu_model(),
        "platform": platform.platform(),
    }
