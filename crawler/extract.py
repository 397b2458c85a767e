"""A page's main text: the public import path of :mod:`crawler.content.extract`,
where the code lives (its ``__all__``)."""

from crawler.content.extract import *  # noqa: F403
from crawler.content.extract import __all__  # noqa: F401
