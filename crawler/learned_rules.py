"""The import path of :class:`~crawler.middlewares.LearnedRulesMiddleware` in the releases
before the URL level became a package (projects set up by hand name it in
``DOWNLOADER_MIDDLEWARES``); the learned rules themselves are in
:mod:`crawler.url.learned_rules`."""

from crawler.middlewares import LearnedRulesMiddleware

__all__ = ["LearnedRulesMiddleware"]
