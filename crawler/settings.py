"""Settings of the demo project.

The extension itself needs none of these: an existing project switches it on
with ``ADDONS = {"crawler.addon.DedupAddon": 0}`` (see the README).
"""

BOT_NAME = "crawler"

SPIDER_MODULES = ["crawler.spiders"]
NEWSPIDER_MODULE = "crawler.spiders"
COMMANDS_MODULE = "crawler.commands"

ADDONS = {"crawler.addon.DedupAddon": 0}

ROBOTSTXT_OBEY = False
TELNETCONSOLE_ENABLED = False
LOG_LEVEL = "INFO"
FEED_EXPORT_ENCODING = "utf-8"
