"""The parts of an http(s) URL, each in canonical form: splitting a URL into scheme,
authority, path and query; the authority's host (case, percent-decoding, IDNA, IPv6), port
and user info; percent-encoding and dot segments of a path. :mod:`crawler.url.canonical`
applies them as its rules; each adds the name of the rule it applied to a trace, when given one."""

from __future__ import annotations

import ipaddress
import re
from urllib.parse import unquote

import idna

# C0 controls, space, and every other character for which str.isspace() is true.
SURROUNDING_JUNK = (
    "".join(map(chr, range(0x21)))
    + "\x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"
    + "\u2028\u2029\u202f\u205f\u3000"
)
TAB_NEWLINE = str.maketrans("", "", "\t\n\r")

_DEFAULT_PORTS = {"http": "80", "https": "443"}

_UNRESERVED = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
_SUB_DELIMS = "!$&'()*+,;="
_HEX = "0123456789ABCDEFabcdef"

# Escapes that are not in canonical form: a lowercase hex digit, or an unreserved character.
_FIXABLE_ESCAPE = (
    r"%(?:[0-9A-Fa-f][a-f]|[a-f][0-9A-F]|3[0-9]|4[1-9A-F]|5[0-9A]|6[1-9A-F]|7[0-9A]|2[DE]|5F|7E)"
)
_STRAY_PERCENT = r"%(?![0-9A-Fa-f]{2})"

# A host that contains any of these (after decoding and IDNA) cannot be canonicalized.
_FORBIDDEN_HOST_CHAR = re.compile(r"[\x00-\x20\x7f-\x9f\s\"#%/:<>?@\[\\\]^`{|}\ud800-\udfff]")
_IPV6_LITERAL_CHARS = re.compile(r"[0-9A-Fa-f:.]+")

LOWERCASE_ESCAPE = re.compile(r"%[0-9a-f]{2}")

# Characters that never need a change of percent-encoding, per component.
CANONICAL_PATH = re.compile(r"[A-Za-z0-9\-._~!$&'()*+,;=:@/]*")
CANONICAL_QUERY = re.compile(r"[A-Za-z0-9\-._~!$&'()*+,;=:@/?]*")
_AUTHORITY_END = re.compile(r"[/?#]")

_IDNA_MAX_HOST = 1024


class _PercentNormalizer:
    """Rewrites one URL component into canonical percent-encoding (rule 5).

    ``allowed`` lists the characters, besides unreserved ones, that stay literal in the
    component. With ``space_as_plus``, a space (literal or ``%20``) is written ``+``.
    """

    __slots__ = ("_byte_escapes", "_escape_fixes", "_pattern")

    def __init__(self, allowed: str, *, space_as_plus: bool = False) -> None:
        literal = re.escape("".join(sorted(_UNRESERVED)) + allowed)
        alternatives = [_FIXABLE_ESCAPE]
        if space_as_plus:
            alternatives.append("%20")
        alternatives += [_STRAY_PERCENT, "[^" + literal + "%]+"]
        self._pattern = re.compile("|".join(alternatives))
        self._byte_escapes = [f"%{byte:02X}" for byte in range(256)]
        if space_as_plus:
            self._byte_escapes[0x20] = "+"
        self._escape_fixes: dict[str, str] = {"%": "%25"}
        for high in _HEX:
            for low in _HEX:
                byte = int(high + low, 16)
                char = chr(byte)
                if char in _UNRESERVED:
                    fixed = char
                elif byte == 0x20 and space_as_plus:
                    fixed = "+"
                else:
                    fixed = "%" + (high + low).upper()
                self._escape_fixes["%" + high + low] = fixed

    def __call__(self, text: str) -> str:
        return self._pattern.sub(self._fix, text)

    def _fix(self, match: re.Match[str]) -> str:
        found = match.group()
        fixed = self._escape_fixes.get(found)
        if fixed is not None:
            return fixed
        escapes = self._byte_escapes
        return "".join([escapes[byte] for byte in found.encode("utf-8", "surrogatepass")])


normalize_path_encoding = _PercentNormalizer(_SUB_DELIMS + ":@/")
normalize_query_encoding = _PercentNormalizer(_SUB_DELIMS + ":@/?", space_as_plus=True)
_normalize_user_encoding = _PercentNormalizer(_SUB_DELIMS)
_normalize_password_encoding = _PercentNormalizer(_SUB_DELIMS + ":")


def uppercase_escape(match: re.Match[str]) -> str:
    return match.group().upper()


def remove_dot_segments(path: str) -> str:
    """Resolve ``.`` and ``..`` segments of an absolute path (RFC 3986, section 5.2.4)."""
    segments = path.split("/")
    output: list[str] = []
    for segment in segments[1:]:
        if segment == "..":
            if output:
                output.pop()
        elif segment != ".":
            output.append(segment)
    if segments[-1] in (".", ".."):
        output.append("")
    return "/" + "/".join(output)


def split_http_url(url: str) -> tuple[str, str, str, str] | None:
    """Split an absolute http(s) URL into (scheme, authority, path, query).

    Returns None for any other URL, and for one with an empty authority. The fragment is
    dropped; the scheme is lowercased.
    """
    head = url[:8].lower()
    if head.startswith("http://"):
        scheme, start = "http", 7
    elif head.startswith("https://"):
        scheme, start = "https", 8
    else:
        return None
    end = url.find("/", start)
    authority = url[start:] if end < 0 else url[start:end]
    if "?" in authority or "#" in authority:
        found = _AUTHORITY_END.search(url, start)
        end = found.start() if found else -1
        authority = url[start:] if end < 0 else url[start:end]
    if not authority:
        return None
    if end < 0:
        return scheme, authority, "", ""
    rest = url[end:]
    fragment = rest.find("#")
    if fragment >= 0:
        rest = rest[:fragment]
    query = rest.find("?")
    if query < 0:
        return scheme, authority, rest, ""
    return scheme, authority, rest[:query], rest[query + 1 :]


def canonical_authority(
    scheme: str, netloc: str, fold_https: bool, trace: list[str] | None
) -> tuple[str, str, str] | None:
    """Return (scheme, netloc, host) in canonical form, or None if the authority is invalid."""
    userinfo, at, hostport = netloc.rpartition("@")
    if hostport.startswith("["):
        end = hostport.find("]")
        if end < 0:
            return None
        raw_host, port_part = hostport[: end + 1], hostport[end + 1 :]
        if port_part and port_part[0] != ":":
            return None
    else:
        raw_host, colon, port = hostport.partition(":")
        port_part = colon + port
    host = canonical_host(raw_host, trace)
    if host is None:
        return None

    out_scheme = "https" if fold_https else scheme
    if trace is not None and out_scheme != scheme:
        trace.append("fold-https")
    port = port_part[1:]
    if port:
        if not (port.isascii() and port.isdigit()):
            return None
        significant = port.lstrip("0")
        if len(significant) > 5 or int(significant or "0") > 65535:
            return None
        number = significant or "0"
        if number in (_DEFAULT_PORTS[scheme], _DEFAULT_PORTS[out_scheme]):
            port = ""
            if trace is not None:
                trace.append("drop-default-port")
        else:
            if trace is not None and number != port:
                trace.append("normalize-port")
            port = number
    elif port_part and trace is not None:
        trace.append("normalize-port")

    netloc_out = host
    if at:
        raw_user, colon, raw_password = userinfo.partition(":")
        user = _normalize_user_encoding(raw_user)
        password = _normalize_password_encoding(raw_password)
        if password:
            netloc_out = user + ":" + password + "@" + host
        elif user:
            netloc_out = user + "@" + host
        if trace is not None:
            if (user, password) != (raw_user, raw_password):
                trace.append("normalize-percent-encoding")
            if not password and (colon or not user):
                trace.append("drop-empty-userinfo")
    if port:
        netloc_out += ":" + port
    return out_scheme, netloc_out, host


def canonical_host(raw_host: str, trace: list[str] | None) -> str | None:
    """Return the canonical form of a host (name or bracketed IPv6), or None if invalid."""
    if raw_host.startswith("["):
        return _canonical_ipv6(raw_host, trace)
    host = raw_host
    if "%" in host:
        try:
            host = unquote(host, errors="strict")
        except UnicodeDecodeError:
            return None
        if trace is not None and host != raw_host:
            trace.append("decode-host")
    lowered = host.lower()
    if trace is not None and lowered != host:
        trace.append("lowercase-host")
    host = lowered
    if host.endswith("."):
        host = host.rstrip(".")
        if trace is not None:
            trace.append("strip-host-trailing-dot")
    if not host.isascii():
        encoded = _idna_encode(host)
        if encoded is not None:
            if trace is not None:
                trace.append("idna-host")
            host = encoded
            if host.endswith("."):  # IDNA maps other full stops (such as U+3002) to "."
                host = host.rstrip(".")
                if trace is not None:
                    trace.append("strip-host-trailing-dot")
    if not host or _FORBIDDEN_HOST_CHAR.search(host):
        return None
    return host


def _idna_encode(host: str) -> str | None:
    """Punycode of a non-ASCII host, or None when neither IDNA 2008 nor 2003 accepts it."""
    if len(host) > _IDNA_MAX_HOST:
        return None
    try:
        return idna.encode(host, uts46=True).decode("ascii").lower()
    except (UnicodeError, ValueError):
        pass
    try:
        # IDNA 2003 still accepts some names browsers resolve (symbols, emoji).
        return host.encode("idna").decode("ascii").lower()
    except (UnicodeError, ValueError):
        return None


def _canonical_ipv6(raw_host: str, trace: list[str] | None) -> str | None:
    literal = raw_host[1:-1] if raw_host.endswith("]") else ""
    if not _IPV6_LITERAL_CHARS.fullmatch(literal):
        return None
    try:
        address = ipaddress.IPv6Address(literal)
    except ValueError:
        return None
    host = "[" + _format_ipv6(address.packed) + "]"
    if trace is not None and host != raw_host:
        trace.append("normalize-ipv6")
    return host


def _format_ipv6(packed: bytes) -> str:
    """Write an IPv6 address as RFC 5952 recommends, without a dotted IPv4 tail."""
    groups = [packed[index] << 8 | packed[index + 1] for index in range(0, 16, 2)]
    best_start, best_length = -1, 1
    index = 0
    while index < 8:
        if groups[index]:
            index += 1
            continue
        start = index
        while index < 8 and not groups[index]:
            index += 1
        if index - start > best_length:
            best_start, best_length = start, index - start
    texts = [format(group, "x") for group in groups]
    if best_start < 0:
        return ":".join(texts)
    return ":".join(texts[:best_start]) + "::" + ":".join(texts[best_start + best_length :])
