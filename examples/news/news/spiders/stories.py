from urllib.parse import urlsplit

import scrapy

from news.items import Story


class StoriesSpider(scrapy.Spider):
    """Every story of a news site, as most spiders are written: ``scrapy crawl stories -a
    url=https://news.example/``.

    Starts from ``start_urls``, follows every link of the site, and yields the title, body
    and date of each page whose path starts with ``/articles/``, and one teaser item for
    each story a listing page (``/articles?page=N``) lists. No item holds the page's HTML.
    """

    name = "stories"

    def __init__(self, url=None, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if not url:
            raise ValueError("run it as: scrapy crawl stories -a url=https://news.example/")
        self.start_urls = [url]
        self.allowed_domains = [urlsplit(url).hostname]

    def parse(self, response):
        if not isinstance(response, scrapy.http.HtmlResponse):
            return
        path = urlsplit(response.url).path
        if path.startswith("/articles/"):
            yield self.story(
                title=response.css("h1 ::text").get(default="").strip(),
                body="\n".join(response.css("article p ::text").getall()),
                date=response.css("time::attr(datetime)").get(),
            )
        elif path == "/articles":
            for teaser in response.css("section.teaser"):
                yield {
                    "headline": teaser.css("h2 ::text").get(default="").strip(),
                    "teaser": " ".join(teaser.css("p ::text").getall()),
                }
        yield from response.follow_all(css="a")

    def story(self, **fields):
        return fields


class StoryItemsSpider(StoriesSpider):
    """The same, with its stories as ``news.items.Story`` items."""

    name = "story_items"

    def story(self, **fields):
        return Story(**fields)
