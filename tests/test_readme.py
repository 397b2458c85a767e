"""The README's settings table and the defaults module cannot drift apart."""

from __future__ import annotations

import ast
import re

from crawler import defaults
from tests.conftest import REPO_ROOT

ROW = re.compile(r"^\| `(DEDUP_[A-Z_]+)` \| (.+?) \| (.+) \|$")


def settings_table() -> dict[str, str]:
    text = (REPO_ROOT / "README.md").read_text("utf-8")
    section = text.split("## Settings", 1)[1].split("\n## ", 1)[0]
    return {m.group(1): m.group(2) for m in map(ROW.match, section.splitlines()) if m}


def test_every_setting_is_documented_with_its_default():
    table = settings_table()
    names = sorted(name for name in vars(defaults) if name.startswith("DEDUP_"))
    assert sorted(table) == names
    for name in names:
        shown = table[name].strip("`")
        if name == "DEDUP_URL_STRIP_PARAMS":
            assert shown == "the tracking list below"
            continue
        assert ast.literal_eval(shown) == getattr(defaults, name), name
