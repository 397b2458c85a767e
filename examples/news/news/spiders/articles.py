from urllib.parse import urlsplit

import scrapy


class ArticlesSpider(scrapy.Spider):
    """Every article of a news site: ``scrapy crawl articles -a url=https://news.example/``.

    Follows every link of the site, and makes an item of each page whose path starts with
    ``/articles/``, with its HTML for the content level to read.
    """

    name = "articles"

    def __init__(self, url=None, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if not url:
            raise ValueError("run it as: scrapy crawl articles -a url=https://news.example/")
        self.url = url
        self.allowed_domains = [urlsplit(url).hostname]

    async def start(self):
        # Not start_urls: Scrapy sends those with dont_filter=True, past the dupefilter, and
        # a link back to the home page would download it a second time.
        yield scrapy.Request(self.url)

    def parse(self, response):
        if not isinstance(response, scrapy.http.HtmlResponse):
            return
        if urlsplit(response.url).path.startswith("/articles/"):
            yield {
                "url": response.url,
                "title": response.css("h1 ::text").get(default="").strip(),
                "html": response.text,
            }
        yield from response.follow_all(css="a")
