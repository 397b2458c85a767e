"""Redis with a password and TLS (``rediss://``), against a real redis-server: the shared
stores work, and the password never reaches a log or an error."""

from __future__ import annotations

import json
import logging

import pytest
from scrapy import Request, Spider
from scrapy.utils.misc import build_from_crawler
from scrapy.utils.test import get_crawler

from crawler.dupefilters import URLDupeFilter
from crawler.redis.connection import RedisUnavailable
from tests.conftest import crawl_stat, run_scrapy, scrapy_crawl_command

PASSWORD = "s3cret-Pa55word"


class NamedSpider(Spider):
    name = "named"


def dupefilter(url: str, **settings: object) -> URLDupeFilter:
    crawler = get_crawler(
        NamedSpider,
        {
            "DEDUP_URL_BACKEND": "redis-bloom",
            "DEDUP_URL_CAPACITY": 1000,
            "REDIS_URL": url,
            **settings,
        },
    )
    crawler.spider = crawler._create_spider()
    return build_from_crawler(URLDupeFilter, crawler)


@pytest.fixture
def secure_server(redis_server_factory):
    return redis_server_factory(password=PASSWORD, tls=True)


def test_password_and_tls(secure_server, caplog):
    caplog.set_level(logging.DEBUG)
    assert secure_server.url.startswith(f"rediss://:{PASSWORD}@")
    params = {"ssl_ca_certs": str(secure_server.ca_file)}
    first = dupefilter(secure_server.url, REDIS_PARAMS=params)
    first.open()
    assert not first.request_seen(Request("http://a.test/page"))
    second = dupefilter(secure_server.url, REDIS_PARAMS=params)
    second.open()
    assert second.request_seen(Request("http://a.test/page?utm_source=x"))
    first.close("finished")
    assert "rediss://:***@127.0.0.1" in caplog.text
    assert PASSWORD not in caplog.text


def test_wrong_password_names_the_url_not_the_password(secure_server):
    wrong = secure_server.url.replace(PASSWORD, "not-the-password")
    store = dupefilter(wrong, REDIS_PARAMS={"ssl_ca_certs": str(secure_server.ca_file)})
    with pytest.raises(RedisUnavailable, match=r"cannot reach Redis at rediss://:\*\*\*@") as error:
        store.open()
    assert "not-the-password" not in str(error.value)


def test_an_untrusted_certificate_is_refused(secure_server):
    store = dupefilter(secure_server.url)  # the system's CAs do not know this one
    with pytest.raises(RedisUnavailable, match="certificate") as error:
        store.open()
    assert PASSWORD not in str(error.value)


def test_a_crawl_over_tls(secure_server, demo_site_server):
    demo_site_server.reset()
    params = json.dumps({"ssl_ca_certs": str(secure_server.ca_file)})
    log = run_scrapy(
        scrapy_crawl_command(
            demo_site_server.url,
            *("-s", f"REDIS_URL={secure_server.url}", "-s", f"REDIS_PARAMS={params}"),
            *("-s", "DEDUP_URL_BACKEND=redis", "-s", "LOG_LEVEL=INFO"),
        )
    )
    hits = demo_site_server.hits()
    demo_site_server.reset()
    assert PASSWORD not in log
    assert "rediss://:***@127.0.0.1" in log
    downloads = sum(hits["by_resource"].values())
    assert downloads == len(hits["by_resource"]) > 10  # each page once
    assert crawl_stat(log, "dedup/redis-set/entries") == crawl_stat(log, "dedup/url/new")
