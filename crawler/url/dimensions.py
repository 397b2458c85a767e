"""The dimensions of a URL that a learned rule can remove, and removing them.

A *dimension* is one part of a canonical URL that may make no difference to the page:
a query parameter, a last path segment that names the directory's page
(:data:`PATH_ALIASES`: ``/docs/index.html``), a first path segment (a *prefix*:
``/en/guide`` and ``/guide``) or the choice between two (a *swap*: ``/v3/guide`` and
``/docs/guide``). :func:`url_dimensions` lists a URL's dimensions with the URL without each,
so that pages whose URLs differ in one dimension can be paired
(:mod:`crawler.url.learning`); :class:`HostRules` removes the dimensions learned for a
host from its URLs.

Nothing here imports Scrapy.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Iterator

__all__ = [
    "ANY_SEGMENT",
    "COPY_MARKERS",
    "PATH_ALIASES",
    "HostRules",
    "RuleKey",
    "UrlParts",
    "field_name",
    "first_segment",
    "join_url",
    "parent_path",
    "path_body_ids",
    "prefix_name",
    "segment_is_alias",
    "split_url",
    "swap_name",
    "swap_segments",
    "url_dimensions",
]

#: Last path segments that serve the page of their directory on most servers.
PATH_ALIASES = frozenset(
    {
        "index.html",
        "index.htm",
        "index.shtml",
        "index.php",
        "index.asp",
        "index.aspx",
        "index.jsp",
        "default.asp",
        "default.aspx",
        "default.htm",
        "default.html",
    }
)

#: First path segments that name a copy of a page (``/amp/...``, ``/print/...``): never a
#: prefix or a swap (see the module's documentation).
COPY_MARKERS = frozenset(
    {"amp", "print", "printable", "printer", "printview", "mobile", "mirror", "lite"}
)


class RuleKey(NamedTuple):
    """What a rule removes: ``kind`` is ``"param"`` (a query parameter, by its
    encoded name), ``"alias"`` (a last path segment), ``"prefix"`` (a first path
    segment, named ``"en/*"``) or ``"swap"`` (two first path segments, named
    ``"docs/*=/v3/*"``), on the URLs of ``host``.

    >>> str(RuleKey("s.example", "swap", "docs/*=/v3/*"))
    's.example: /docs/*=/v3/*'
    """

    host: str
    kind: str
    name: str

    def __str__(self) -> str:
        if self.kind == "param":
            return f"{self.host}: ?{self.name}"
        return f"{self.host}: /{self.name}"


class UrlParts(NamedTuple):
    origin: str  # scheme://netloc
    host: str  # netloc
    path: str
    fields: tuple[str, ...]  # query fields, encoded, in canonical order


def split_url(url: str) -> UrlParts | None:
    """The parts of a canonical http(s) URL; ``None`` for anything else."""
    scheme, sep, rest = url.partition("://")
    if not sep or scheme not in ("http", "https"):
        return None
    netloc, slash, path_query = rest.partition("/")
    if not netloc:
        return None
    path, _, query = ("/" + path_query if slash else "/").partition("?")
    fields = tuple(query.split("&")) if query else ()
    return UrlParts(scheme + "://" + netloc, netloc, path, fields)


def join_url(parts: UrlParts, path: str, fields: Iterable[str]) -> str:
    query = "&".join(fields)
    return parts.origin + path + ("?" + query if query else "")


def field_name(query_field: str) -> str:
    return query_field.partition("=")[0]


def parent_path(path: str) -> str:
    return path.rsplit("/", 1)[0] or "/"


def first_segment(path: str) -> tuple[str, str] | None:
    """A path's first segment and the path after it (from its slash), when the path
    goes on after that segment and it marks no copy: ``/en/guide`` -> ``("en", "/guide")``."""
    segment, slash, rest = path[1:].partition("/")
    if not slash or not segment or segment.lower() in COPY_MARKERS:
        return None
    return segment, "/" + rest


def prefix_name(segment: str) -> str:
    return f"{segment}/*"


def swap_name(first: str, second: str) -> str:
    low, high = sorted((first, second))
    return f"{low}/*=/{high}/*"


def swap_segments(name: str) -> tuple[str, str]:
    low, _, high = name.removesuffix("/*").partition("/*=/")
    return low, high


#: Where a swap's skeleton has its first segment: no canonical URL holds a NUL.
ANY_SEGMENT = "/\x00"


def segment_is_alias(path: str) -> bool:
    return path.rsplit("/", 1)[-1].lower() in PATH_ALIASES


def url_dimensions(
    parts: UrlParts, *, prefixes: bool = True
) -> Iterator[tuple[tuple[str, str], str, str]]:
    """Each dimension of a URL: its value there and the URL without it (a swap's:
    without its first segment, which :data:`ANY_SEGMENT` stands for). *prefixes*:
    whether the first path segment is one."""
    names = sorted({field_name(f) for f in parts.fields})
    for name in names:
        value = "&".join(f for f in parts.fields if field_name(f) == name)
        others = [f for f in parts.fields if field_name(f) != name]
        yield ("param", name), value, join_url(parts, parts.path, others)
    segment = parts.path.rsplit("/", 1)[-1]
    if segment_is_alias(parts.path):
        yield (
            ("alias", segment.lower()),
            segment,
            join_url(parts, parent_path(parts.path), parts.fields),
        )
    first = first_segment(parts.path) if prefixes else None
    if first is not None:
        segment, rest = first
        yield ("prefix", prefix_name(segment)), segment, join_url(parts, rest, parts.fields)
        yield ("swap", ""), segment, join_url(parts, ANY_SEGMENT + rest, parts.fields)


class HostRules(NamedTuple):
    """What the learned rules of one host remove: parameter names, alias segments, and
    for each first path segment that a prefix or a swap rewrites, what replaces it
    (``""``, or ``"/"`` and the class's first segment) and the rules that say so."""

    params: frozenset[str]
    aliases: frozenset[str]
    prefixes: dict[str, tuple[str, list[RuleKey]]]

    @classmethod
    def of(cls, keys: Iterable[RuleKey]) -> HostRules:
        """The rules of one host, learned."""
        params: set[str] = set()
        aliases: set[str] = set()
        deleted: dict[str, RuleKey] = {}
        # swaps: the segments they join, in classes
        parent: dict[str, str] = {}
        swaps: list[RuleKey] = []

        def root(segment: str) -> str:
            while parent.setdefault(segment, segment) != segment:
                segment = parent[segment]
            return segment

        for key in keys:
            if key.kind == "param":
                params.add(key.name)
            elif key.kind == "alias":
                aliases.add(key.name)
            elif key.kind == "prefix":
                deleted[key.name.removesuffix("/*")] = key
            elif key.kind == "swap":
                first, second = swap_segments(key.name)
                parent[root(first)] = root(second)
                swaps.append(key)
        classes: dict[str, list[str]] = {}
        for segment in parent:
            classes.setdefault(root(segment), []).append(segment)
        prefixes: dict[str, tuple[str, list[RuleKey]]] = {
            segment: ("", [key]) for segment, key in deleted.items()
        }
        for members in classes.values():
            removed = [deleted[member] for member in members if member in deleted]
            joined = [key for key in swaps if swap_segments(key.name)[0] in members]
            replacement = "" if removed else "/" + min(members)
            for member in members:
                if replacement != "/" + member:
                    prefixes[member] = (replacement, joined + removed)
        return cls(frozenset(params), frozenset(aliases), prefixes)

    def __bool__(self) -> bool:
        return bool(self.params or self.aliases or self.prefixes)

    def rewrite(self, url: str, parts: UrlParts) -> tuple[str, list[RuleKey]]:
        """*url*, split in *parts*, without what these rules remove, and the rules that
        removed something; *url* itself and ``[]`` when none applies."""
        applied: list[RuleKey] = []
        path = parts.path
        if self.prefixes:
            first = first_segment(path)
            if first is not None and first[0] in self.prefixes:
                replacement, keys = self.prefixes[first[0]]
                path = replacement + first[1]
                applied += keys
        segment = path.rsplit("/", 1)[-1].lower()
        if segment in self.aliases:
            path = parent_path(path)
            applied.append(RuleKey(parts.host, "alias", segment))
        fields = parts.fields
        if self.params and fields:
            removed = sorted({name for f in fields if (name := field_name(f)) in self.params})
            if removed:
                fields = tuple(f for f in fields if field_name(f) not in self.params)
                applied += [RuleKey(parts.host, "param", name) for name in removed]
        if not applied:
            return url, []
        return join_url(parts, path, fields), applied


def path_body_ids(path: str, body: bytes, body_id: Callable[[bytes], str]) -> dict[str, str]:
    """The digest (*body_id* of a body) that a page at *path* compares as a prefix and as a
    swap: the body with its links that repeat its first path segment (``/v2/...`` on a page
    of ``/v2/``) written without it, so that two copies of a tree whose pages link within
    their own tree pair at once, before the content level decides. Empty when the path has
    no first segment or the body never repeats it.

    >>> ids = path_body_ids("/v2/a", b'<a href="/v2/b">', bytes.hex)
    >>> bytes.fromhex(ids["prefix"]), ids["swap"] == ids["prefix"]
    (b'<a href="/b">', True)
    """
    first = first_segment(path)
    if first is None:
        return {}
    repeated = f"/{first[0]}/".encode()
    if repeated not in body:
        return {}
    written_without = body_id(body.replace(repeated, b"/"))
    return {"prefix": written_without, "swap": written_without}
