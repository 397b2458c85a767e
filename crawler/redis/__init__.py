"""What every shared Redis store stands on: the connection, its fault policy and the
signature a store is built with (:mod:`~crawler.redis.connection`), and the leases by
which workers hand requests to each other (:mod:`~crawler.redis.leases`). The stores
themselves live with their level (:mod:`crawler.url.stores`, :mod:`crawler.content.index`).

``import redis`` in these modules is redis-py (absolute imports), not this package."""
