import scrapy


class Story(scrapy.Item):
    """An article, as many projects define their items: no field for the page's HTML."""

    title = scrapy.Field()
    body = scrapy.Field()
    date = scrapy.Field()
