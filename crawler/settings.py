"""Settings of the demo project.

The extension itself needs none of these: an existing project switches it on
with ``ADDONS = {"crawler.addon.DedupAddon": 0}`` (see the README).
"""

BOT_NAME = "crawler"

SPIDER_MODULES = ["crawler.spiders"]
NEWSPIDER_MODULE = "crawler.spiders"
# Only the demo command: the others are registered for every project through the
# "scrapy.commands" entry point (pyproject.toml).
COMMANDS_MODULE = "crawler.commands.demo"

ADDONS = {"crawler.addon.DedupAddon": 0}

ROBOTSTXT_OBEY = False
TELNETCONSOLE_ENABLED = False
LOG_LEVEL = "INFO"
FEED_EXPORT_ENCODING = "utf-8"
