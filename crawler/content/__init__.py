"""The content level, below its Scrapy components (:mod:`crawler.pipelines`,
:class:`crawler.middlewares.ItemPageMiddleware`):

* a page's main text (:mod:`~crawler.content.extract`, public as :mod:`crawler.extract`;
  :mod:`~crawler.content.agreement`), its normalized form
  (:mod:`~crawler.content.normalization`) and its fingerprints
  (:mod:`~crawler.content.fingerprints`, public as :mod:`crawler.fingerprints`;
  :mod:`~crawler.content.feature_hashes`, :mod:`~crawler.content.numbers_signature`);
* the near-duplicate detector (:mod:`~crawler.content.neardup`, public as
  :mod:`crawler.neardup`) and its indexes (:mod:`crawler.content.index`);
* where pages are fingerprinted (:mod:`~crawler.content.pages`,
  :mod:`~crawler.content.page_fingerprinter`, :mod:`~crawler.content.extraction_lane`,
  :mod:`~crawler.content.bodies`);
* the items: the page each came from (:mod:`~crawler.content.item_pages`), the copy a reader
  would keep (:mod:`~crawler.content.representatives`, :mod:`~crawler.content.held_items`),
  item keys (:mod:`~crawler.content.item_keys`);
* the records of a file (:mod:`~crawler.content.records`, ``scrapy dedup-text``) and the
  content level's settings read into values (:mod:`~crawler.content.configuration`).
"""
