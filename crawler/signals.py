"""Signals sent by the extension, in addition to Scrapy's own."""

#: Sent with ``request`` when Scrapy is done with a request: its callback's
#: output (or its errback's) was consumed, or its download failed for good.
#: The URL dupefilter then forgets it from the crash-safe frontier.
request_finished = object()
