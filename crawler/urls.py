"""The canonical form of URLs: the public import path of :mod:`crawler.url.canonical`,
where the code lives."""

from crawler.url.canonical import (
    RULE_NAMES,
    RULES_VERSION,
    CanonicalTrace,
    UrlCanonicalizer,
    UrlRules,
    canonicalize_url,
)

__all__ = [
    "RULES_VERSION",
    "RULE_NAMES",
    "CanonicalTrace",
    "UrlCanonicalizer",
    "UrlRules",
    "canonicalize_url",
]
