# Scrapy settings for news project, as `scrapy startproject news` writes them, and one line
# more: the dedup add-on (the last setting below).

BOT_NAME = "news"

SPIDER_MODULES = ["news.spiders"]
NEWSPIDER_MODULE = "news.spiders"

ROBOTSTXT_OBEY = True

CONCURRENT_REQUESTS_PER_DOMAIN = 1
DOWNLOAD_DELAY = 1

FEED_EXPORT_ENCODING = "utf-8"

# Each page downloaded once, and each article kept once: see the README of crawl dedup.
ADDONS = {"crawler.addon.DedupAddon": 0}
