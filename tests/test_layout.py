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
    "crawler.item_key_pipeline",
    "crawler.extensions",
    "crawler.logformatter",
    "crawler.exporters",
}
#: The add-on enables every component: it names their classes; the import path of a
#: component in an earlier release names it too.
WIRING = {"crawler.addon", "crawler.learned_rules"}
#: Components another component's module names for its public path: projects set
#: ``crawler.pipelines.ItemKeyPipeline`` in ``ITEM_PIPELINES`` beside the pipeline it follows.
PUBLIC_ALIASES = {"crawler.pipelines": {"crawler.item_key_pipeline"}}


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
    imported = set(imported_modules(path)) & COMPONENTS - PUBLIC_ALIASES.get(name, set())
    assert imported <= {name}, f"{name} imports {sorted(imported)}"


def test_the_check_sees_a_component_import():
    # the add-on does import them: the test above would catch a module that did
    assert set(imported_modules(PACKAGE / "addon.py")) & COMPONENTS == COMPONENTS - {
        "crawler.dupefilters",
        "crawler.schedulers",
    }


#: The levels, lowest first: a module of a package imports only from its own package, the
#: packages before it and :data:`BASE`.
PACKAGES = ["crawler.state", "crawler.redis", "crawler.url", "crawler.content"]
#: What every package may import: the defaults of every setting, the signals, the hashes
#: that keep the GIL and the messages logged once.
BASE = {"crawler", "crawler.defaults", "crawler.hashing", "crawler.log_once", "crawler.signals"}


def package_of(module):
    for package in PACKAGES:
        if module == package or module.startswith(package + "."):
            return package
    return None


def crawler_imports(path):
    """The ``crawler`` modules *path* imports (a name imported from a module counts as
    the module, unless it is a module itself)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text("utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and not node.level:
            if node.module.split(".")[0] == "crawler":
                found.add(node.module)
                for alias in node.names:  # from crawler.url import canonical
                    if package_of(f"{node.module}.{alias.name}") or node.module == "crawler":
                        found.add(f"{node.module}.{alias.name}")
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.split(".")[0] == "crawler")
    return found


def allowed_imports(package):
    return PACKAGES[: PACKAGES.index(package) + 1]


LEVEL_MODULES = [
    path for path in MODULES if package_of(module_name(path).removesuffix(".__init__"))
]


@pytest.mark.parametrize("path", LEVEL_MODULES, ids=module_name)
def test_each_package_imports_only_from_the_packages_below_it(path):
    package = package_of(module_name(path).removesuffix(".__init__"))
    allowed = allowed_imports(package)
    wrong = {
        imported
        for imported in crawler_imports(path)
        if imported not in BASE and package_of(imported) not in allowed
    }
    assert not wrong, f"{module_name(path)} ({package}) imports {sorted(wrong)}"


def test_the_level_check_sees_an_import_from_above():
    # crawler.content.representatives compares URLs in canonical form: a level above
    # imports from the URL level, which the URL level may not do the other way round
    representatives = PACKAGE / "content" / "representatives.py"
    assert "crawler.url.canonical" in crawler_imports(representatives)
    assert "crawler.url" not in allowed_imports("crawler.redis")
    assert "crawler.content" not in allowed_imports("crawler.url")


#: Modules longer than :data:`MAX_LINES`, each with why it is one idea (or that it is not
#: yet: then it is to be split).
LONG_MODULES = {
    # the demo site's pages and their variants, data more than code
    "crawler.demo.site": 1400,
    # filtering, each way a request can meet the store (new, resumed, a redirect, a start
    # request, a declared canonical URL, learned rules, Redis failing, a full disk); what
    # serves them is elsewhere: crawler.dupefilter_report, crawler.dupefilter_redis_faults,
    # crawler.url.resume, crawler.url.canonical_links, crawler.url.stores,
    # crawler.url.learned_rules
    "crawler.dupefilters": 680,
    # one detector: exact and near matches, both stages, the guards on each
    "crawler.content.neardup": 750,
    # the canonical form: one rule after the other, each with its doctests
    "crawler.url.canonical": 700,
    # the in-memory banded index and exact table, columns of NumPy arrays
    "crawler.content.index.memory": 650,
    # the Redis connection and its fault policy (retries, budget, signature)
    "crawler.redis.connection": 650,
    # PageFingerprinter (LONG_CLASSES) and the measured thresholds of "auto", each with the
    # crawls that set it
    "crawler.content.page_fingerprinter": 530,
    # one pipeline's decisions (unique, a copy, a better copy, held, fetched again,
    # unchanged since the last fetch), each with its outcome; the work is its
    # collaborators': crawler.pipeline_report, crawler.content.page_fingerprinter,
    # crawler.content.held_items, .representatives, crawler.url.recrawl
    "crawler.pipelines": 600,
    # the shared seen store's Lua scripts and their callers (for each kind: add, contains,
    # and add then a tail of the caller's, crawler.url.stores.redis_add_then)
    "crawler.url.stores.redis": 575,
    # the shared content index: its Lua script (look-up in both stages, verification and
    # insert in one call, so that two workers keep one copy) and the records it packs
    "crawler.content.index.redis": 550,
    # one file format (checksummed snapshot, append-only journal, their headers and
    # signatures) and how a torn or foreign file is told and refused
    "crawler.state.persistence": 550,
}
MAX_LINES = 500


@pytest.mark.parametrize("path", MODULES, ids=module_name)
def test_no_module_is_longer_than_the_limit_unless_listed(path):
    name = module_name(path)
    lines = len(path.read_text("utf-8").splitlines())
    assert lines <= LONG_MODULES.get(name, MAX_LINES), (
        f"{name} has {lines} lines: split it, or list it in LONG_MODULES saying why"
    )


def test_every_long_module_listed_is_still_long():
    for name in LONG_MODULES:
        path = REPO_ROOT.joinpath(*name.split(".")).with_suffix(".py")
        assert len(path.read_text("utf-8").splitlines()) > MAX_LINES, f"{name}: unlist it"


#: Classes longer than :data:`MAX_CLASS_LINES` (docstrings included), each with why it is
#: one idea.
LONG_CLASSES = {
    # filtering: each way a request meets the store (new, resumed, redirected, a start
    # request, a declared canonical URL, learned rules, Redis failing, a full disk) is a
    # method; resume, the fault policy, rel=canonical, learned rules and the report are
    # collaborators
    "crawler.dupefilters.URLDupeFilter": 555,
    # one decision, exact or near: both stages, verification and the guards on each; the
    # index, fingerprints and text normalization are elsewhere
    "crawler.content.neardup.NearDuplicateDetector": 490,
    # each decision on an item (unique, a copy, a better copy, held, fetched again,
    # unchanged) with its outcome; PageFingerprinter fingerprints, ContentReport reports
    "crawler.pipelines.NearDuplicatePipeline": 480,
    # the demo site's pages and their variants, data more than code
    "crawler.demo.site._SiteBuilder": 465,
    # what the components ask of a page's record: whether it is due, the conditional
    # headers to send, what a fetch's outcome does to its interval
    "crawler.url.recrawl.Recrawl": 330,
    # scrapy-redis's scheduler with leases: take, renew, release, and give back a killed
    # worker's leases
    "crawler.schedulers.LeasingScheduler": 330,
    # the evidence for and against each rule: learning, verification and retraction
    "crawler.url.learning.UrlRuleLearner": 310,
    # a crawl's rules: evidence from three signals in, rewritten URLs and filtered
    # requests out, shared through Redis, persisted, given back when retracted; which
    # requests wait and the pages rules rewrite are crawler.url.probable_repeats and
    # crawler.url.rewritten_pages
    "crawler.url.learned_rules.LearnedRules": 330,
    # one pool's life on the event loop: hand-over, the order of answers, time limits,
    # deaths and replacement, closing; a worker's pipes and their framing are
    # crawler.content.worker_pipes
    "crawler.content.loop_worker_processes.LoopWorkerProcesses": 340,
    # where a page is fingerprinted (a thread of the crawl process, worker processes
    # called from threads or from the event loop) and when the workers start (the spare,
    # the first, all of them); the lane's
    # signs are crawler.content.extraction_lane, the bodies in flight crawler.content.bodies
    "crawler.content.page_fingerprinter.PageFingerprinter": 345,
}
MAX_CLASS_LINES = 300


def class_lengths(path):
    prefix = module_name(path)
    for node in ast.walk(ast.parse(path.read_text("utf-8"))):
        if isinstance(node, ast.ClassDef):
            yield f"{prefix}.{node.name}", node.end_lineno - node.lineno + 1


@pytest.mark.parametrize("path", MODULES, ids=module_name)
def test_no_class_is_longer_than_the_limit_unless_listed(path):
    for name, lines in class_lengths(path):
        assert lines <= LONG_CLASSES.get(name, MAX_CLASS_LINES), (
            f"{name} has {lines} lines: split it, or list it in LONG_CLASSES saying why"
        )


def test_every_long_class_listed_is_still_long():
    lengths = dict(pair for path in MODULES for pair in class_lengths(path))
    for name in LONG_CLASSES:
        assert lengths[name] > MAX_CLASS_LINES, f"{name}: unlist it"


#: The seen stores and sets, by class name: components use them through the one
#: interface, ``crawler.url.stores.SeenStore``, never by asking which one they hold.
STORE_CLASSES = {
    "BloomSeenSet",
    "MemorySeenSet",
    "GenerationalSeenSet",
    "JournaledSeenStore",
    "UnpersistedSeenStore",
    "SharedSeenStore",
    "RedisSetSeenStore",
    "RedisBloomSeenStore",
    "ShardedRedisSeenStore",
    "REDIS_SEEN_STORES",
}


def store_type_checks(source: str) -> list[str]:
    """The ``isinstance(x, <store class>)`` calls in *source*, as written, but those
    asserted (a type narrowed for the type checker, no branch taken on it)."""
    tree = ast.parse(source)
    asserted = {id(node.test) for node in ast.walk(tree) if isinstance(node, ast.Assert)}
    asserted |= {
        id(node.test.operand)
        for node in ast.walk(tree)
        if isinstance(node, ast.Assert) and isinstance(node.test, ast.UnaryOp)
    }
    checks = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and getattr(node.func, "id", None) == "isinstance"):
            continue
        if id(node) in asserted:
            continue
        names = {
            getattr(child, "id", None) or getattr(child, "attr", None)
            for child in ast.walk(node.args[1])
        }
        if names & STORE_CLASSES:
            checks.append(ast.unparse(node))
    return checks


@pytest.mark.parametrize(
    "path",
    [
        path
        for path in sorted(PACKAGE.rglob("*.py"))
        if path.parent != PACKAGE / "url" / "stores"  # the stores build on each other
    ],
    ids=module_name,
)
def test_no_module_asks_which_seen_store_it_holds(path):
    assert store_type_checks(path.read_text("utf-8")) == []


def test_the_store_check_sees_a_dispatch():
    source = (
        "if isinstance(self.seen, (JournaledSeenStore, *REDIS_SEEN_STORES)):\n    pass\n"
        "assert not isinstance(store, stores.RedisBloomSeenStore)\n"
        "ok = isinstance(store, stores.RedisBloomSeenStore)\n"
    )
    assert store_type_checks(source) == [
        "isinstance(self.seen, (JournaledSeenStore, *REDIS_SEEN_STORES))",
        "isinstance(store, stores.RedisBloomSeenStore)",
    ]


#: Where ``DEDUP_*`` settings are read and checked: each level's reader, and the defaults
#: module for the few both levels read (the switches, the audit file, the log interval).
SETTINGS_READERS = {
    "crawler.defaults",
    "crawler.url.configuration",
    "crawler.content.configuration",
    "crawler.redis.connection",
    "crawler.redis.leases",  # the leasing scheduler's
}
_SETTING_GETTERS = {"get", "getbool", "getint", "getfloat", "getlist", "getdict", "getdictorlist"}
_SETTING_GETTERS |= {"getwithbase", "getpriority"}


def dedup_setting_reads(source):
    """The reads of a ``DEDUP_*`` setting in *source*, on anything named ``...settings``: a
    getter given the setting's name (a string, an f-string or ``name=``) or a default of
    :mod:`crawler.defaults` (``defaults.DEDUP_X``, ``DEDUP_X``, ``getattr(defaults, name)``),
    and ``settings["DEDUP_..."]``. A name held in a variable, without a default, is not
    seen."""
    reads = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            arguments = [*node.args, *(keyword.value for keyword in node.keywords)]
            if (
                node.func.attr in _SETTING_GETTERS
                and _is_settings(node.func.value)
                and (
                    _names_a_dedup_setting(arguments[:1])
                    or _names_a_dedup_setting([k.value for k in node.keywords if k.arg == "name"])
                    or any(map(_is_a_default, arguments))
                )
            ):
                reads.add(ast.unparse(node))
        elif (
            isinstance(node, ast.Subscript)
            and not isinstance(node.ctx, ast.Store)
            and _is_settings(node.value)
            and _names_a_dedup_setting([node.slice])
        ):
            reads.add(ast.unparse(node))
    return sorted(reads)


def _is_settings(node):
    return ast.unparse(node).lower().endswith("settings")


def _names_a_dedup_setting(nodes):
    for node in nodes:
        if isinstance(node, ast.JoinedStr) and node.values:  # f"DEDUP_{kind}_KEY"
            node = node.values[0]
        if isinstance(node, ast.Constant) and str(node.value).startswith("DEDUP_"):
            return True
    return False


def _is_a_default(node):
    if isinstance(node, ast.Name):  # from crawler.defaults import DEDUP_URL_LEARN
        return node.id.startswith("DEDUP_")
    if isinstance(node, ast.Attribute):  # defaults.DEDUP_URL_LEARN
        return node.attr.startswith("DEDUP_")
    return (  # getattr(defaults, name)
        isinstance(node, ast.Call)
        and getattr(node.func, "id", None) == "getattr"
        and getattr(node.args[0], "id", None) == "defaults"
    )


@pytest.mark.parametrize(
    "path",
    [path for path in MODULES if module_name(path) not in SETTINGS_READERS],
    ids=module_name,
)
def test_settings_are_read_by_the_readers_only(path):
    assert dedup_setting_reads(path.read_text("utf-8")) == []


def test_the_settings_check_sees_a_read():
    source = (
        'a = settings.getbool("DEDUP_URL_LEARN", defaults.DEDUP_URL_LEARN)\n'
        "b = settings.getint(name, getattr(defaults, name))\n"
        'c = crawler.settings["DEDUP_STATE_DIR"]\n'
        'settings.set("DEDUP_STATE_DIR", "x")\n'
        'd = settings.getint("CONCURRENT_REQUESTS")\n'
        'print(f"default: {getattr(defaults, name)}")\n'
        'e = self.crawler.settings.get(f"DEDUP_REDIS_{kind}_KEY")\n'
        "f = settings.getfloat(name, DEDUP_LEASE_TTL)\n"
        'g = settings.get(name="DEDUP_WORKER_ID")\n'
        # not settings: the options of a call, the environment, a stored signature
        'h = self.options.get("extractor", defaults.DEDUP_EXTRACTOR)\n'
        'i = os.environ.get("DEDUP_PURE_PYTHON")\n'
        'j = signature["DEDUP_URL_BACKEND"]\n'
    )
    assert dedup_setting_reads(source) == [
        "crawler.settings['DEDUP_STATE_DIR']",
        "self.crawler.settings.get(f'DEDUP_REDIS_{kind}_KEY')",
        "settings.get(name='DEDUP_WORKER_ID')",
        "settings.getbool('DEDUP_URL_LEARN', defaults.DEDUP_URL_LEARN)",
        "settings.getfloat(name, DEDUP_LEASE_TTL)",
        "settings.getint(name, getattr(defaults, name))",
    ]
