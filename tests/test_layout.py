"""The layout shows the design: the Scrapy components (the URL level's dupefilter, the
middleware, the scheduler, the pipelines, the extension) are wired by the add-on, and none
imports another for helpers; what they share lives in modules of its own."""

from __future__ import annotations

import ast

import pytest

from tests.conftest import REPO_ROOT

PACKAGE = REPO_ROOT / "crawler"
COMPONENTS = {
    "crawler.dupefilters",
    "crawler.middlewares",
    "crawler.schedulers",
    "crawler.pipelines",
    "crawler.extensions",
}
#: The add-on enables every component: it names their classes.
WIRING = {"crawler.addon"}


def module_name(path):
    return ".".join(path.relative_to(REPO_ROOT).with_suffix("").parts)


def imported_modules(path):
    """Every module *path* imports, at its top or inside a function."""
    for node in ast.walk(ast.parse(path.read_text("utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and not node.level:
            yield node.module
            for alias in node.names:
                yield f"{node.module}.{alias.name}"
        elif isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)


MODULES = sorted(PACKAGE.rglob("*.py"))


@pytest.mark.parametrize("path", MODULES, ids=module_name)
def test_no_module_imports_a_scrapy_component_for_helpers(path):
    name = module_name(path)
    if name in WIRING:
        return
    imported = set(imported_modules(path)) & COMPONENTS
    assert imported <= {name}, f"{name} imports {sorted(imported)}"


def test_the_check_sees_a_component_import():
    # the add-on does import them: the test above would catch a module that did
    assert set(imported_modules(PACKAGE / "addon.py")) & COMPONENTS == COMPONENTS - {
        "crawler.dupefilters",
        "crawler.schedulers",
    }
