"""The canonical form of URLs: the public import path of :mod:`crawler.url.canonical`,
where the code lives (its ``__all__``)."""

from crawler.url.canonical import *  # noqa: F403
from crawler.url.canonical import __all__  # noqa: F401
