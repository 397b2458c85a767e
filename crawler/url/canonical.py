"""Canonical URLs: one spelling per resource, used as the key of URL deduplication.

Two URLs that lead to the same resource should get the same canonical form, and two URLs
that may lead to different resources must keep different ones. :class:`UrlCanonicalizer`
applies these rules to absolute ``http`` and ``https`` URLs, listed in order of concern;
the name in front of each rule is what :meth:`UrlCanonicalizer.explain` reports.

1. Whitespace

   - ``strip-whitespace``: surrounding whitespace and C0 control characters are removed:
     ``" http://example.com/ \\n"`` -> ``http://example.com/``.
   - ``remove-tab-newline``: tabs, CR and LF inside the URL are removed, as browsers do:
     ``"http://exa\\tmple.com/a\\nb"`` -> ``http://example.com/ab``. Spaces inside the URL
     are percent-encoded (rules 5 and 6), so an http(s) result never contains whitespace.

2. Scheme and authority

   - ``lowercase-scheme``: ``HTTP://example.com/`` -> ``http://example.com/``.
   - ``lowercase-host``: ``http://WWW.Example.COM/`` -> ``http://www.example.com/``.
   - ``decode-host``: a percent-encoded host is decoded (UTF-8):
     ``http://ex%41mple.com/`` -> ``http://example.com/``.
   - ``idna-host``: an internationalized host is converted to punycode (IDNA 2008 with
     UTS #46 mapping, as browsers do): ``http://Bücher.de/`` -> ``http://xn--bcher-kva.de/``.
     A host that IDNA rejects is kept, lowercased.
   - ``normalize-ipv6``: an IPv6 literal is written as in RFC 5952 (lowercase, longest run
     of zero groups compressed, no dotted IPv4 tail): ``http://[0:0::1]/`` ->
     ``http://[::1]/``.
   - ``strip-host-trailing-dot``: ``http://example.com./`` -> ``http://example.com/``.
   - ``drop-default-port``: ``http://example.com:80/`` -> ``http://example.com/``, and
     ``:443`` for https.
   - ``normalize-port``: an empty port or leading zeros are dropped:
     ``http://example.com:/`` -> ``http://example.com/``, ``:0081`` -> ``:81``.
   - ``drop-empty-userinfo``: an empty user name and password are dropped:
     ``http://:@example.com/`` -> ``http://example.com/``, and an empty password:
     ``http://user:@example.com/`` -> ``http://user@example.com/``. A non-empty userinfo
     is kept, case included.

3. Fragment and empty query

   - ``drop-fragment``: ``http://example.com/a#top`` -> ``http://example.com/a``.
   - ``drop-empty-query``: ``http://example.com/a?`` -> ``http://example.com/a``.

4. Path structure

   - ``resolve-dot-segments``: ``.`` and ``..`` segments are resolved (RFC 3986, 5.2.4):
     ``http://example.com/a/./b/../c`` -> ``http://example.com/a/c``. Encoded dots count:
     ``/a/%2E%2E/b`` -> ``/b``.
   - ``root-path``: an empty path becomes ``/``: ``http://example.com`` ->
     ``http://example.com/``.

5. Percent-encoding (``normalize-percent-encoding``), applied to the path, the query and the
   userinfo, each with its own set of characters allowed as is:

   - escapes of unreserved characters (``A-Z a-z 0-9 - . _ ~``) are decoded:
     ``/%7Euser`` -> ``/~user``;
   - other escapes are kept and their hex digits uppercased: ``/a%2fb`` -> ``/a%2Fb``,
     so a reserved character keeps its encoded or literal form;
   - characters that may not appear literally are encoded, non-ASCII ones as UTF-8:
     ``/a b/é`` -> ``/a%20b/%C3%A9``; a ``%`` that does not start an escape becomes
     ``%25``: ``/100%`` -> ``/100%25``.

6. Query (``&``-separated fields, each ``name`` or ``name=value``)

   - space is written ``+`` (form encoding): ``?q=a%20b``, ``?q=a b`` and ``?q=a+b`` all
     give ``?q=a+b``; a literal plus stays ``%2B``. In the path ``+`` is a literal plus
     and a space is ``%20``.
   - ``drop-empty-query-fields``: ``?&a=1&&b=2&`` -> ``?a=1&b=2``.
   - ``strip-tracking-params``: fields whose name matches
     :attr:`UrlRules.strip_params` and not :attr:`UrlRules.keep_params` are removed:
     ``?id=1&utm_source=x`` -> ``?id=1``.
   - ``sort-query``: fields are sorted by name, then value, keeping repeated names:
     ``?b=2&a=3&a=1`` -> ``?a=1&a=3&b=2``.
   - A field without ``=`` is kept distinct from one with an empty value (``?b`` is not
     ``?b=``): some applications tell them apart (``?edit`` vs ``?edit=``).

7. Path details

   - ``strip-trailing-slash``: trailing slashes of a non-root path are removed:
     ``/docs/`` -> ``/docs``; ``/`` stays ``/``. Slashes inside the path are kept.
   - ``strip-session-id``: path parameters that carry a session id (``jsessionid``,
     ``phpsessid``, ``sid``, ``sessionid``, ``aspsessionid*``, any case) are removed,
     the rest of the path is kept: ``/cart;jsessionid=A1B2/item`` -> ``/cart/item``.
   - ``lowercase-path`` (only with :attr:`UrlRules.lowercase_path`): ASCII letters of the
     path are lowercased: ``/Docs/API`` -> ``/docs/api``.

8. Scheme folding

   - ``fold-https`` (only with :attr:`UrlRules.fold_https`): ``http`` URLs are written
     ``https``, so both schemes give one canonical form: ``http://example.com/`` ->
     ``https://example.com/``. Without it the two schemes stay distinct.

Anything else comes back with only surrounding whitespace removed: URLs with another
scheme (``mailto:``, ``data:``, ``ftp:``...), relative or scheme-relative references, and
http(s) URLs that cannot be parsed (no host, a host with forbidden characters, a bad port,
a broken IPv6 literal). Canonicalization never raises on a ``str`` and is idempotent.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Any, NamedTuple, TypeVar
from urllib.parse import unquote_plus

from crawler.url.parts import (
    CANONICAL_PATH,
    CANONICAL_QUERY,
    LOWERCASE_ESCAPE,
    SURROUNDING_JUNK,
    TAB_NEWLINE,
    canonical_authority,
    canonical_host,
    normalize_path_encoding,
    normalize_query_encoding,
    remove_dot_segments,
    split_http_url,
    uppercase_escape,
)
from crawler.url.tracking_params import DEFAULT_STRIP_PARAMS

if TYPE_CHECKING:
    from collections.abc import Iterable

__all__ = [
    "DEFAULT_STRIP_PARAMS",
    "RULES_VERSION",
    "RULE_NAMES",
    "CanonicalTrace",
    "UrlCanonicalizer",
    "UrlRules",
    "canonicalize_url",
]

#: Bumped whenever a change to the rules can change the canonical form of some URL, so that
#: stores persisted with older canonical forms are detected by :meth:`UrlRules.describe`.
RULES_VERSION = 1

#: Rule names reported by :meth:`UrlCanonicalizer.explain`, in the documented order.
RULE_NAMES: tuple[str, ...] = (
    "strip-whitespace",
    "remove-tab-newline",
    "lowercase-scheme",
    "lowercase-host",
    "decode-host",
    "idna-host",
    "normalize-ipv6",
    "strip-host-trailing-dot",
    "drop-default-port",
    "normalize-port",
    "drop-empty-userinfo",
    "drop-fragment",
    "drop-empty-query",
    "resolve-dot-segments",
    "root-path",
    "normalize-percent-encoding",
    "drop-empty-query-fields",
    "strip-tracking-params",
    "sort-query",
    "strip-trailing-slash",
    "strip-session-id",
    "lowercase-path",
    "fold-https",
)
_RULE_ORDER = {name: index for index, name in enumerate(RULE_NAMES)}

_SESSION_ID_PARAM = re.compile(
    r";(?:jsessionid|phpsessid|sessionid|sid|aspsessionid[a-z]*)=[^/;]*", re.IGNORECASE
)

_T = TypeVar("_T")

_AUTHORITY_CACHE_SIZE = 8192
_AUTHORITY_CACHE_MAX_KEY = 512
#: Canonical forms and explanations of the URLs met last (a site's navigation links come
#: back on each of its pages), each table emptied when full: about 2 MB each at most.
_URL_CACHE_SIZE = 8192
_URL_CACHE_MAX_KEY = 1024


@dataclass(frozen=True)
class UrlRules:
    """Options of URL canonicalization; the default is the documented rule set.

    - ``strip_params``: glob patterns (``*``, ``?``, ``[seq]``, ``[!seq]``) of query
      parameter names to remove, matched against the whole decoded name, ignoring case.
      An entry written ``"example.com:ref"`` applies only to the host ``example.com`` and
      its subdomains; entries without a colon apply everywhere.
    - ``keep_params``: patterns, written the same way, of names never removed; they win
      over ``strip_params``.
    - ``lowercase_path``: lowercase the ASCII letters of the path.
    - ``fold_https``: give ``http`` and ``https`` URLs the same canonical form, with the
      ``https`` scheme.

    Lists are accepted and stored as tuples. A value of the wrong type raises ``TypeError``,
    a malformed entry (empty pattern, invalid domain) ``ValueError``.

    >>> UrlRules(keep_params=["utm_id"]).describe()["keep_params"]
    ['utm_id']
    """

    strip_params: tuple[str, ...] = DEFAULT_STRIP_PARAMS
    keep_params: tuple[str, ...] = ()
    lowercase_path: bool = False
    fold_https: bool = False

    def __post_init__(self) -> None:
        for name in ("strip_params", "keep_params"):
            entries = _as_entry_tuple(name, getattr(self, name))
            object.__setattr__(self, name, entries)
            for entry in entries:
                _parse_param_entry(name, entry)
        for name in ("lowercase_path", "fold_https"):
            value = getattr(self, name)
            if not isinstance(value, bool):
                raise TypeError(f"{name} must be a bool, got {value!r}")

    @classmethod
    def from_options(cls, **options: Any) -> UrlRules:
        """Build rules from keyword options named like the fields.

        - lists are accepted wherever a tuple is expected;
        - an unknown option raises ``TypeError`` naming it.

        >>> UrlRules.from_options(keep_params=["ref"], fold_https=True).fold_https
        True
        """
        known = {field.name for field in fields(cls)}
        for name in options:
            if name not in known:
                raise TypeError(
                    f"unknown URL canonicalization option {name!r}; "
                    f"expected one of: {', '.join(sorted(known))}"
                )
        return cls(**options)

    def describe(self) -> dict[str, object]:
        """Describe the rules as JSON-serializable data, the signature of canonical forms.

        - equal rules give equal descriptions, whatever the order, case or repetition of
          pattern entries;
        - any option that can change a canonical form changes the description, and so does
          :data:`RULES_VERSION`.

        >>> UrlRules(strip_params=["B", "a", "b"]).describe()["strip_params"]
        ['a', 'b']
        """
        return {
            "rules_version": RULES_VERSION,
            "strip_params": _describe_entries("strip_params", self.strip_params),
            "keep_params": _describe_entries("keep_params", self.keep_params),
            "lowercase_path": self.lowercase_path,
            "fold_https": self.fold_https,
        }


def _as_entry_tuple(option: str, value: object) -> tuple[str, ...]:
    if isinstance(value, (str, bytes)) or not isinstance(value, (tuple, list)):
        raise TypeError(f"{option} must be a list or tuple of strings, got {value!r}")
    for entry in value:
        if not isinstance(entry, str):
            raise TypeError(f"{option} entries must be strings, got {entry!r}")
    return tuple(value)


def _parse_param_entry(option: str, entry: str) -> tuple[str, str]:
    """Split a pattern entry into (canonical domain or "", lowercased glob)."""
    domain, colon, glob = entry.strip().partition(":")
    if not colon:
        domain, glob = "", domain
    glob = glob.strip()
    if not glob:
        raise ValueError(f"{option} entry {entry!r} has an empty parameter pattern")
    if not colon:
        return "", glob.lower()
    canonical = canonical_host(domain.strip(), None)
    if canonical is None or canonical.startswith("["):
        raise ValueError(
            f"{option} entry {entry!r}: {domain!r} is not a valid domain; "
            "write 'domain:pattern' or just 'pattern'"
        )
    return canonical, glob.lower()


def _describe_entries(option: str, entries: tuple[str, ...]) -> list[str]:
    described = set()
    for entry in entries:
        domain, glob = _parse_param_entry(option, entry)
        described.add(f"{domain}:{glob}" if domain else glob)
    return sorted(described)


def _glob_to_regex(glob: str) -> str:
    """Translate an fnmatch-style glob into a regular expression matching a whole name."""
    parts: list[str] = []
    index, length = 0, len(glob)
    while index < length:
        char = glob[index]
        index += 1
        if char == "*":
            if not parts or parts[-1] != ".*":
                parts.append(".*")
        elif char == "?":
            parts.append(".")
        elif char == "[":
            end = index
            if glob[end : end + 1] == "!":
                end += 1
            if glob[end : end + 1] == "]":  # a "]" right after "[" or "[!" is literal
                end += 1
            end = glob.find("]", end)
            if end < 0:
                parts.append(re.escape(char))
                continue
            parts.append(_glob_class_to_regex(glob[index:end]))
            index = end + 1
        else:
            parts.append(re.escape(char))
    return "".join(parts)


def _glob_class_to_regex(body: str) -> str:
    negate = body.startswith("!")
    if negate:
        body = body[1:]
    items = []
    index = 0
    while index < len(body):
        if index + 2 < len(body) and body[index + 1] == "-":
            low, high = body[index], body[index + 2]
            if low <= high:
                items.append(re.escape(low) + "-" + re.escape(high))
            index += 3
        else:
            items.append(re.escape(body[index]))
            index += 1
    if not items:
        return "[^\\s\\S]" if not negate else "."
    return "[" + ("^" if negate else "") + "".join(items) + "]"


class _NameMatcher:
    """Tells whether a lowercased, decoded parameter name matches a set of globs."""

    __slots__ = ("_literals", "_wildcards", "globs")

    def __init__(self, globs: Iterable[str]) -> None:
        self.globs = tuple(sorted(set(globs)))
        self._literals = frozenset(glob for glob in self.globs if not _has_wildcard(glob))
        wildcards = [glob for glob in self.globs if _has_wildcard(glob)]
        self._wildcards = (
            re.compile("|".join(f"(?:{_glob_to_regex(glob)})" for glob in wildcards), re.DOTALL)
            if wildcards
            else None
        )

    def __bool__(self) -> bool:
        return bool(self.globs)

    def matches(self, name: str) -> bool:
        if name in self._literals:
            return True
        return self._wildcards is not None and self._wildcards.fullmatch(name) is not None


def _has_wildcard(glob: str) -> bool:
    return "*" in glob or "?" in glob or "[" in glob


class _ParamFilter:
    """Decides which query fields to strip, for the hosts it was built for."""

    __slots__ = ("_decisions", "_keep", "_strip")

    _MAX_DECISIONS = 4096

    def __init__(self, strip: _NameMatcher, keep: _NameMatcher) -> None:
        self._strip = strip
        self._keep = keep
        self._decisions: dict[str, bool] = {}

    def __bool__(self) -> bool:
        return bool(self._strip)

    def strips(self, field: str) -> bool:
        name = field.partition("=")[0]
        decision = self._decisions.get(name)
        if decision is None:
            key = unquote_plus(name) if ("%" in name or "+" in name) else name
            key = key.lower()
            decision = self._strip.matches(key) and not self._keep.matches(key)
            if len(self._decisions) >= self._MAX_DECISIONS:
                self._decisions.clear()
            self._decisions[name] = decision
        return decision


def _field_sort_key(field: str) -> tuple[str, str, str]:
    return field.partition("=")


class CanonicalTrace(NamedTuple):
    """What :meth:`UrlCanonicalizer.trace` tells about one URL."""

    canonical: str
    rules: list[str]
    stripped_params: list[str]


def _remember(table: dict[str, _T], url: str, value: _T) -> None:
    if len(url) <= _URL_CACHE_MAX_KEY:
        if len(table) >= _URL_CACHE_SIZE:
            table.clear()
        table[url] = value


class UrlCanonicalizer:
    """Callable that turns a URL into its canonical form under some :class:`UrlRules`.

    - everything is compiled once, in the constructor; calls only run the rules;
    - it never raises on a ``str`` and is idempotent;
    - :meth:`explain` names the rules that changed a URL.

    >>> canonicalize = UrlCanonicalizer()
    >>> canonicalize("HTTP://Example.COM:80/a/./b/?utm_source=x&b=2&a=1#top")
    'http://example.com/a/b?a=1&b=2'
    """

    def __init__(self, rules: UrlRules | None = None) -> None:
        self.rules = rules if rules is not None else UrlRules()
        strip_globs: dict[str, list[str]] = {}
        keep_globs: dict[str, list[str]] = {}
        for option, entries, table in (
            ("strip_params", self.rules.strip_params, strip_globs),
            ("keep_params", self.rules.keep_params, keep_globs),
        ):
            for entry in entries:
                domain, glob = _parse_param_entry(option, entry)
                table.setdefault(domain, []).append(glob)
        self._global_strip = strip_globs.pop("", [])
        self._global_keep = keep_globs.pop("", [])
        self._domain_strip = strip_globs
        self._domain_keep = keep_globs
        self._domains = frozenset(strip_globs) | frozenset(keep_globs)
        self._default_filter = _ParamFilter(
            _NameMatcher(self._global_strip), _NameMatcher(self._global_keep)
        )
        self._domain_filters: dict[tuple[str, ...], _ParamFilter] = {}
        self._fold_https = self.rules.fold_https
        self._lowercase_path = self.rules.lowercase_path
        self._http_authorities: dict[str, tuple[str, str, str] | None] = {}
        self._https_authorities: dict[str, tuple[str, str, str] | None] = {}
        self._canonical_of: dict[str, str] = {}
        self._rules_of: dict[str, tuple[str, ...]] = {}

    def __call__(self, url: str) -> str:
        try:
            return self._canonical_of[url]
        except KeyError:
            canonical = self._canonicalize(url, None)
            _remember(self._canonical_of, url, canonical)
            return canonical

    def explain(self, url: str) -> list[str]:
        """Name the rules that changed ``url``, in the order of :data:`RULE_NAMES`.

        >>> UrlCanonicalizer().explain("http://EXAMPLE.com/?utm_source=x&b=1&a=2")
        ['lowercase-host', 'strip-tracking-params', 'sort-query']
        """
        try:
            return list(self._rules_of[url])
        except KeyError:
            trace: list[str] = []
            self._canonicalize(url, trace)
            rules = sorted(set(trace), key=_RULE_ORDER.__getitem__)
            _remember(self._rules_of, url, tuple(rules))
            return rules

    def handles(self, url: str) -> bool:
        """Whether the rules apply to ``url``: an absolute http(s) URL with a valid
        authority. Any other string comes back from canonicalization unchanged, only
        whitespace-stripped.

        >>> canonicalize = UrlCanonicalizer()
        >>> canonicalize.handles("HTTP://Example.com"), canonicalize.handles("http://[::1/")
        (True, False)
        """
        text = url.strip(SURROUNDING_JUNK)
        parts = split_http_url(text if text.isprintable() else text.translate(TAB_NEWLINE))
        if parts is None:
            return False
        scheme, netloc, _, _ = parts
        return canonical_authority(scheme, netloc, self._fold_https, None) is not None

    def trace(self, url: str) -> CanonicalTrace:
        """The canonical form of ``url``, the rules that changed it (as :meth:`explain`)
        and the names of the query parameters that ``strip-tracking-params`` removed,
        decoded, in the order of the URL.

        >>> UrlCanonicalizer().trace("http://example.com/?utm_source=x&id=1&fbclid=y")
        ... # doctest: +NORMALIZE_WHITESPACE
        CanonicalTrace(canonical='http://example.com/?id=1',
                       rules=['strip-tracking-params'], stripped_params=['utm_source', 'fbclid'])
        """
        trace: list[str] = []
        stripped: list[str] = []
        canonical = self._canonicalize(url, trace, stripped)
        return CanonicalTrace(canonical, sorted(set(trace), key=_RULE_ORDER.__getitem__), stripped)

    def _canonicalize(
        self, url: str, trace: list[str] | None, stripped: list[str] | None = None
    ) -> str:
        text = url.strip(SURROUNDING_JUNK)
        if trace is not None and text != url:
            trace.append("strip-whitespace")
        cleaned = text if text.isprintable() else text.translate(TAB_NEWLINE)
        parts = split_http_url(cleaned)
        if parts is None:
            return text
        scheme, netloc, path, raw_query = parts
        if trace is not None:
            mark = len(trace)
            authority = canonical_authority(scheme, netloc, self._fold_https, trace)
            if authority is None:
                del trace[mark:]
        else:
            cache = self._http_authorities if scheme == "http" else self._https_authorities
            try:
                authority = cache[netloc]
            except KeyError:
                authority = canonical_authority(scheme, netloc, self._fold_https, None)
                if len(netloc) <= _AUTHORITY_CACHE_MAX_KEY:
                    if len(cache) >= _AUTHORITY_CACHE_SIZE:
                        cache.clear()
                    cache[netloc] = authority
        if authority is None:
            return text
        out_scheme, out_netloc, host = authority
        path = self._canonical_path(path, trace)
        query = self._canonical_query(raw_query, host, trace, stripped) if raw_query else ""
        if trace is not None:
            if cleaned != text:
                trace.append("remove-tab-newline")
            if not cleaned.startswith(scheme):
                trace.append("lowercase-scheme")
            if "#" in cleaned:
                trace.append("drop-fragment")
            if not raw_query and "?" in cleaned.partition("#")[0]:
                trace.append("drop-empty-query")
        if query:
            return out_scheme + "://" + out_netloc + path + "?" + query
        return out_scheme + "://" + out_netloc + path

    def _canonical_path(self, path: str, trace: list[str] | None) -> str:
        if not path:
            if trace is not None:
                trace.append("root-path")
            return "/"
        if not CANONICAL_PATH.fullmatch(path):
            original = path
            path = normalize_path_encoding(path)
            if trace is not None and path != original:
                trace.append("normalize-percent-encoding")
        if ";" in path:
            before = path
            path = _SESSION_ID_PARAM.sub("", path)
            if trace is not None and path != before:
                trace.append("strip-session-id")
        if "/." in path:
            before = path
            path = remove_dot_segments(path)
            if trace is not None and path != before:
                trace.append("resolve-dot-segments")
        if path[-1] == "/" and len(path) > 1:
            path = path.rstrip("/") or "/"
            if trace is not None:
                trace.append("strip-trailing-slash")
        if self._lowercase_path:
            before = path
            path = path.lower()
            if "%" in path:
                path = LOWERCASE_ESCAPE.sub(uppercase_escape, path)
            if trace is not None and path != before:
                trace.append("lowercase-path")
        return path

    def _canonical_query(
        self, query: str, host: str, trace: list[str] | None, stripped: list[str] | None
    ) -> str:
        if not CANONICAL_QUERY.fullmatch(query):
            normalized = normalize_query_encoding(query)
            if trace is not None and normalized != query:
                trace.append("normalize-percent-encoding")
            query = normalized
        query_fields = query.split("&")
        if "" in query_fields:
            query_fields = [field for field in query_fields if field]
            if trace is not None:
                trace.append("drop-empty-query-fields")
        param_filter = self._filter_for_host(host) if self._domains else self._default_filter
        if param_filter and query_fields:
            kept = [field for field in query_fields if not param_filter.strips(field)]
            if len(kept) != len(query_fields):
                if stripped is not None:
                    stripped += [
                        unquote_plus(field.partition("=")[0])
                        for field in query_fields
                        if field not in kept
                    ]
                query_fields = kept
                if trace is not None:
                    trace.append("strip-tracking-params")
        if len(query_fields) > 1:
            ordered = sorted(query_fields, key=_field_sort_key)
            if trace is not None and ordered != query_fields:
                trace.append("sort-query")
            query_fields = ordered
        return "&".join(query_fields)

    def _filter_for_host(self, host: str) -> _ParamFilter:
        matched = []
        domain = host
        while True:
            if domain in self._domains:
                matched.append(domain)
            dot = domain.find(".")
            if dot < 0:
                break
            domain = domain[dot + 1 :]
        if not matched:
            return self._default_filter
        key = tuple(matched)
        param_filter = self._domain_filters.get(key)
        if param_filter is None:
            strip = list(self._global_strip)
            keep = list(self._global_keep)
            for domain in key:
                strip += self._domain_strip.get(domain, ())
                keep += self._domain_keep.get(domain, ())
            param_filter = _ParamFilter(_NameMatcher(strip), _NameMatcher(keep))
            self._domain_filters[key] = param_filter
        return param_filter


@functools.lru_cache(maxsize=64)
def _canonicalizer_for(options: tuple[tuple[str, object], ...]) -> UrlCanonicalizer:
    return UrlCanonicalizer(UrlRules.from_options(**dict(options)))


def _options_key(options: dict[str, Any]) -> tuple[tuple[str, object], ...]:
    return tuple(
        sorted(
            (name, tuple(value) if isinstance(value, list) else value)
            for name, value in options.items()
        )
    )


def canonicalize_url(url: str, **options: Any) -> str:
    """Return the canonical form of ``url`` (see the module documentation for the rules).

    - ``options`` are those of :meth:`UrlRules.from_options`; the canonicalizer built for
      each distinct set of options is cached;
    - URLs other than absolute http(s) ones come back with only surrounding whitespace
      removed;
    - never raises on a ``str``; canonicalizing a canonical URL returns it unchanged.

    >>> canonicalize_url("http://Example.com/docs/?b=2&a=1&fbclid=x")
    'http://example.com/docs?a=1&b=2'
    >>> canonicalize_url("http://example.com/", fold_https=True)
    'https://example.com/'
    """
    if not options:
        return _canonicalizer_for(())(url)
    return _canonicalizer_for(_options_key(options))(url)
