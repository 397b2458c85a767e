from __future__ import annotations

import subprocess
import sys

import pytest

from crawler.state.open_files import processes_holding


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_finds_the_process_holding_a_file(tmp_path):
    held, other = tmp_path / "held", tmp_path / "other"
    held.write_bytes(b"")
    other.write_bytes(b"")
    holder = subprocess.Popen(
        [sys.executable, "-c", f"f = open({str(held)!r}, 'ab'); print(flush=True); input()"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    )
    try:
        assert holder.stdout is not None
        holder.stdout.readline()  # the file is open
        assert processes_holding(held) == [holder.pid]
        assert processes_holding(other) == []
        assert processes_holding(tmp_path / "absent") == []
    finally:
        holder.communicate(b"\n", timeout=10)
    assert processes_holding(held) == []
