"""The demo site: a generated news/docs site full of URL variants and near-duplicate pages.

:func:`build_site` makes the pure model (:mod:`crawler.demo.site`); :mod:`crawler.demo.server`
serves it over HTTP (``python -m crawler.demo.server``, or ``DemoServer`` in-process).
"""

from __future__ import annotations

from crawler.demo.site import Article, DemoSite, Resolution, Variant, build_site

__all__ = ["Article", "DemoSite", "Resolution", "Variant", "build_site"]
