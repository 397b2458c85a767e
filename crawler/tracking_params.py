"""The default tracking parameters: the public import path of :mod:`crawler.url.tracking_params`,
where the code lives."""

from crawler.url.tracking_params import (
    DEFAULT_STRIP_PARAMS,
)

__all__ = [
    "DEFAULT_STRIP_PARAMS",
]
