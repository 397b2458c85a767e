"""Every import path the documentation names works, and the public paths kept when the
levels became packages are the code's own objects, not copies."""

from __future__ import annotations

import importlib
import re

import pytest

from tests.conftest import REPO_ROOT

#: The public API of the design (``DESIGN.md``, outside the repository) and the
#: components a project names in its settings.
DESIGN_PATHS = [
    "crawler.urls.canonicalize_url",
    "crawler.extract.main_text",
    "crawler.fingerprints.simhash",
    "crawler.neardup.NearDuplicateDetector.check_and_add",
    "crawler.addon.DedupAddon",
    "crawler.dupefilters.URLDupeFilter",
    "crawler.pipelines.NearDuplicatePipeline",
    "crawler.pipelines.ItemKeyPipeline",
    "crawler.middlewares.FrontierMiddleware",
    "crawler.middlewares.ItemPageMiddleware",
    "crawler.middlewares.LearnedRulesMiddleware",
    "crawler.schedulers.LeasingScheduler",
    "crawler.extensions.DedupLogStats",
    "crawler.gc_freeze.GCFreeze",
    "crawler.exporters.FlushingJsonLinesItemExporter",
    "crawler.logformatter.DedupLogFormatter",
    "crawler.learned_rules.LearnedRulesMiddleware",  # the path of the releases before
    "crawler.tracking_params.DEFAULT_STRIP_PARAMS",
    "crawler.settings",  # the demo project's
]
#: The design itself, where it sits beside the repository (not in a fresh clone).
DESIGN = REPO_ROOT.parent / "shared" / "DESIGN.md"
DOCUMENTS = [REPO_ROOT / "README.md", *sorted((REPO_ROOT / "docs").glob("*.md"))]
DOCUMENTS += [DESIGN] if DESIGN.is_file() else []
NAMED = sorted(
    {
        match.group(0).rstrip(".")
        for document in DOCUMENTS
        for match in re.finditer(r"(?<![\w/.])crawler(?:\.\w+)+", document.read_text("utf-8"))
    }
)


def resolve(path):
    """The object *path* names: its longest importable prefix, then attributes."""
    parts = path.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            found = importlib.import_module(".".join(parts[:cut]))
        except ModuleNotFoundError:
            continue
        for attribute in parts[cut:]:
            found = getattr(found, attribute)
        return found
    raise ModuleNotFoundError(path)


@pytest.mark.parametrize("path", sorted({*DESIGN_PATHS, *NAMED}))
def test_a_documented_path_imports(path):
    assert resolve(path) is not None


def test_the_documents_name_paths():
    # the scan above finds what the README and the manual name (it could find nothing)
    assert "crawler.addon.DedupAddon" in NAMED
    assert len(NAMED) >= 20


@pytest.mark.parametrize(
    ("public", "code"),
    [
        ("crawler.urls", "crawler.url.canonical"),
        ("crawler.extract", "crawler.content.extract"),
        ("crawler.fingerprints", "crawler.content.fingerprints"),
        ("crawler.neardup", "crawler.content.neardup"),
        ("crawler.tracking_params", "crawler.url.tracking_params"),
    ],
)
def test_a_public_path_gives_the_code_s_own_objects(public, code):
    public_module, code_module = (importlib.import_module(name) for name in (public, code))
    assert public_module.__all__
    for name in public_module.__all__:
        assert getattr(public_module, name) is getattr(code_module, name), name


def test_the_detector_of_the_public_path_has_its_index():
    from crawler.neardup import NearDuplicateDetector

    detector = NearDuplicateDetector()
    assert detector.check_and_add("doc", "one text of some length " * 20) is None
    assert len(detector.index) == 1
