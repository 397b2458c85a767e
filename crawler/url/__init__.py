"""The URL level, below its Scrapy components (:mod:`crawler.dupefilters`,
:mod:`crawler.middlewares`, :mod:`crawler.schedulers`):

* the canonical form of a URL (:mod:`~crawler.url.canonical`, public as
  :mod:`crawler.urls`), its parts (:mod:`~crawler.url.parts`) and the tracking parameters
  it drops (:mod:`~crawler.url.tracking_params`, :mod:`~crawler.url.tracking_registries`);
* the rules learned from the bodies a crawl downloads (:mod:`~crawler.url.learning`, pure;
  :mod:`~crawler.url.learned_rules`, kept and shared) and ``rel=canonical``
  (:mod:`~crawler.url.canonical_links`);
* the seen stores (:mod:`crawler.url.stores`) and their time slices
  (:mod:`~crawler.url.generations`), the keys and meta keys of requests
  (:mod:`~crawler.url.request_keys`, :mod:`~crawler.url.request_meta`), the local frontier
  that resumes a killed crawl (:mod:`~crawler.url.frontier`,
  :mod:`~crawler.url.held_requests`);
* the URL level's settings read into values and stores (:mod:`~crawler.url.configuration`).
"""
