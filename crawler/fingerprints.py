"""A text's fingerprints: the public import path of :mod:`crawler.content.fingerprints`,
where the code lives (its ``__all__``)."""

from crawler.content.fingerprints import *  # noqa: F403
from crawler.content.fingerprints import __all__  # noqa: F401
