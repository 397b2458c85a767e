"""Learned URL rules in real crawls of a shop whose parameters no tracking list knows
(``crawler.demo.param_site``, served by a real HTTP server)."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import time

import pytest
from scrapy import Request, Spider
from scrapy import signals as scrapy_signals
from scrapy.http import HtmlResponse
from scrapy.settings import Settings
from scrapy.utils.misc import build_from_crawler
from scrapy.utils.test import get_crawler

from crawler import signals as dedup_signals
from crawler.demo.param_site import IRRELEVANT_PARAMS, RELEVANT_PARAMS, ParamSite
from crawler.dupefilters import URLDupeFilter
from crawler.redis.connection import RedisConnection
from crawler.url.configuration import learner_from_settings
from crawler.url.learned_rules import (
    SNAPSHOT_NAME,
    SharedRules,
    describe_rule,
    read_saved_rules,
)
from crawler.url.learning import LearnedRule, RuleKey
from crawler.url.request_meta import META_TAKEN_BACK, META_VERIFYING
from tests.conftest import run_scrapy, scrapy_command, scrapy_crawl_command, start_scrapy

PRODUCTS = 150
LEARNED = re.compile(r"Learned URL rule [^:]+:\d+: \?(\w+)")


@pytest.fixture
def shop(demo_site_process_factory):
    return demo_site_process_factory(site="params", articles=PRODUCTS)


def crawl(server, *settings: str) -> str:
    arguments = ["-s", "LOG_LEVEL=INFO", *settings]
    return run_scrapy(scrapy_crawl_command(server.url, *arguments), timeout=300)


def resources(server, **options) -> frozenset[str]:
    return ParamSite(products=PRODUCTS, seed=server.seed, **options).resources


def test_learning_downloads_each_resource_about_once(shop, tmp_path):
    audit = tmp_path / "audit.jsonl"
    log = crawl(shop, "-s", f"JOBDIR={tmp_path / 'job'}", "-s", f"DEDUP_AUDIT_FILE={audit}")

    hits = shop.hits()
    assert set(hits["by_resource"]) == resources(shop)  # none lost to a rule
    per_resource = hits["total"] / len(resources(shop))
    assert per_resource <= 1.3, per_resource
    saved = read_saved_rules(tmp_path / "job")
    assert saved is not None
    learned = {rule.name for rule in saved[0].learned()}
    assert {"ref", "from", "share", "v"} <= learned <= set(IRRELEVANT_PARAMS)
    assert not learned & set(RELEVANT_PARAMS)
    assert set(LEARNED.findall(log)) == learned
    filtered = [json.loads(line) for line in audit.read_text().splitlines()]
    by_rule = [line for line in filtered if "learned_rules" in line]
    assert by_rule
    assert all("learned-rule" in line["rules"] for line in by_rule)
    assert (tmp_path / "job" / SNAPSHOT_NAME).exists()


def test_a_tree_served_again_under_a_second_prefix_is_learned_as_a_prefix(
    demo_site_process_factory,
):
    """The small shop (36 products, 96 resources) served again under /v2/, linked from the
    footers. Runs of 2026-12-05: 7.15 downloads a resource stock; 2.50 to 2.66 learning
    parameters only; 2.11 to 2.49 (seven crawls) with the /v2/* prefix learned from the
    content level's copies alone; 1.49 to 1.94 (nine crawls) with the bodies paired too
    once their links into their own tree are written without /v2/ (most /v2/ downloads
    left are a resource's first: the /v2/ link comes first on many pages). The bound
    sits between the last two."""
    server = demo_site_process_factory(site="params-prefix", articles=36)
    log = crawl(server)

    hits = server.hits()
    site_resources = ParamSite(products=36, seed=server.seed, second_prefix=True).resources
    assert set(hits["by_resource"]) == site_resources  # none lost to a rule
    assert re.search(r"Learned URL rule [^:]+:\d+: /v2/\*: ", log)
    assert hits["total"] / len(site_resources) <= 2.2, hits["total"] / len(site_resources)


def test_without_learning_the_same_crawl_downloads_each_resource_several_times(shop):
    log = crawl(shop, "-s", "DEDUP_URL_LEARN=False")

    hits = shop.hits()
    assert set(hits["by_resource"]) == resources(shop)
    assert hits["total"] / len(resources(shop)) >= 3
    assert "Learned URL rule" not in log


def test_a_site_whose_parameters_all_change_content_gets_no_rule(demo_site_process_factory):
    server = demo_site_process_factory(site="params-relevant", articles=PRODUCTS)
    log = crawl(server)

    hits = server.hits()
    assert set(hits["by_resource"]) == resources(server, irrelevant_links=False)
    assert set(hits["by_resource"].values()) == {1}
    assert "Learned URL rule" not in log
    refused = re.findall(r"'dedup/url/learned/refused': (\d+)", log)
    assert refused and int(refused[0]) >= 4  # page, sort, id, q


def test_rules_persist_and_can_be_inspected_and_forgotten(shop, tmp_path):
    job = ["-s", f"JOBDIR={tmp_path / 'job'}"]
    crawl(shop, *job)

    inspected = scrapy_command("dedup-inspect", "--json", *job)
    assert inspected.returncode == 0, inspected.stderr
    rules = {
        rule["rule"].split(": ")[1]: rule
        for rule in json.loads(inspected.stdout)["learned_url_rules"]
    }
    assert rules["?ref"]["state"] == "learned"
    assert rules["?ref"]["pages_confirming"] >= 3
    assert rules["?page"]["state"] == "refused"
    assert rules["?page"]["counter_examples"] >= 1

    host = rules["?ref"]["rule"].split(": ")[0]
    forgotten = scrapy_command("dedup-forget", "--rule", f"{host}: ?ref", *job)
    assert forgotten.returncode == 0, forgotten.stderr
    assert forgotten.stdout.split() == ["forgotten", host + ":", "?ref"]
    text = scrapy_command("dedup-inspect", *job).stdout
    assert f"{host}: ?from  learned" in text
    assert f"{host}: ?ref " not in text

    shop.reset()
    log = crawl(shop, *job)
    assert re.search(r"Learned URL rules from earlier runs: .*\?from", log)
    assert "?ref" not in log.split("Learned URL rules from earlier runs: ")[1].splitlines()[0]
    # the pages ?ref hid in the first run are downloaded now that it is forgotten
    hidden = rules["?ref"]["requests_filtered"] - rules["?ref"]["downloaded_to_verify"]
    assert hidden > 0
    assert re.search(
        rf"URL rule \S+ \?ref is no longer learned: {hidden} requests it filtered in "
        "earlier runs are scheduled again",
        log,
    ), log[-3000:]
    # with or without ?ref: a page downloaded as /a?ref=x hides a later request for /a
    downloaded_again = shop.hits()["total"]
    assert downloaded_again >= hidden


def test_a_refusal_wins_in_the_shared_rules(redis_server):
    shared = SharedRules(RedisConnection(redis_server.url), "shop:dupefilter:url-rules")
    learned = LearnedRule("s.example", "param", "sort", state="learned", confirmations=3)
    refused = LearnedRule("s.example", "param", "sort", state="refused", counter_examples=1)

    assert shared.publish(learned).state == "learned"
    assert shared.publish(refused).state == "refused"
    assert shared.publish(learned) == refused  # a later worker's evidence does not undo it
    assert shared.read() == [refused]
    assert shared.forget(["s.example: ?sort"]) == 1
    assert shared.read() == []


def test_workers_sharing_redis_learn_and_apply_the_same_rules(shop, redis_server):
    workers = [
        start_scrapy(
            scrapy_crawl_command(
                shop.url,
                *("-s", "LOG_LEVEL=INFO", "-s", "DEDUP_URL_BACKEND=redis"),
                *("-s", f"REDIS_URL={redis_server.url}", "-s", f"DEDUP_WORKER_ID=w{number}"),
                *("-s", "SCHEDULER=crawler.schedulers.LeasingScheduler"),
                *("-s", "SCHEDULER_PERSIST=True", "-s", "DEDUP_CONTENT_WORKERS=0"),
            )
        )
        for number in range(2)
    ]
    logs = []
    for worker in workers:
        _, log = worker.communicate(timeout=300)
        assert worker.returncode == 0, log[-3000:]
        logs.append(log)

    hits = shop.hits()
    assert set(hits["by_resource"]) == resources(shop)  # none lost to a rule
    # 3.69 without learning; 1.37 and 1.41 measured (2.6 when LeasingScheduler did not
    # drop before download the requests queued before a rule)
    assert hits["total"] / len(resources(shop)) <= 2.0
    shared = SharedRules(RedisConnection(redis_server.url), "site:dupefilter:url-rules")
    states = {rule.name: rule.state for rule in shared.read()}
    assert {name for name, state in states.items() if state == "learned"} >= {"ref", "from", "v"}
    assert not {name for name, state in states.items() if state == "learned"} & set(RELEVANT_PARAMS)
    learned = [name for name, state in states.items() if state == "learned"]
    for log in logs:  # each worker applies the shared rules, learned here or by the other
        rules_in_force = re.findall(r"'dedup/url/learned/rules': (\d+)", log)
        assert 3 <= int(rules_in_force[-1]) <= len(learned)
        adopted = re.findall(r"URL rule \S+ \?(\w+) learned by another worker", log)
        assert set(adopted) <= set(learned)

    redis_settings = ["-s", "DEDUP_URL_BACKEND=redis", "-s", f"REDIS_URL={redis_server.url}"]
    inspected = scrapy_command("dedup-inspect", "--json", *redis_settings)
    assert inspected.returncode == 0, inspected.stderr
    listed = {
        rule["rule"].split(": ")[1] for rule in json.loads(inspected.stdout)["learned_url_rules"]
    }
    assert listed == {f"?{name}" for name in states}
    forgotten = scrapy_command("dedup-forget", "--rule", "*", *redis_settings)
    assert forgotten.returncode == 0, forgotten.stderr
    assert shared.read() == []


def test_a_rule_retracted_gives_back_the_requests_it_filtered(demo_site_process_factory):
    """``tab`` changes one product page in ten: the other pages confirm it changes nothing,
    a crawl may learn it before a page with reviews says otherwise. One request at a time
    makes the order, and so the outcome, the same in every run. With the default evidence
    (3 pages) this crawl refuses ``tab`` at its third pair, a product with reviews; with
    one page of evidence, it learns it from the first pair, and one distinct URL in three
    that the rule filters verified then meets a product with reviews: the rule is
    retracted."""
    server = demo_site_process_factory(site="params-tabs", articles=60)
    log = crawl(
        server,
        *("-s", "CONCURRENT_REQUESTS=1", "-s", "DEDUP_URL_LEARN_VERIFY_EVERY=3"),
        *("-s", "DEDUP_URL_LEARN_MIN_EVIDENCE=1", "-s", "DEDUP_CONTENT_WORKERS=0"),
    )

    assert "Learned URL rule localhost:" in log and "?tab: " in log.split("Retracted")[0]
    retracted = re.search(
        r"Retracted learned URL rule \S+ \?tab: .* (\d+) requests it filtered", log
    )
    assert retracted, log[-3000:]
    given_back = int(retracted.group(1))
    assert given_back > 0
    assert re.search(rf"'dedup/url/learned/rescheduled': {given_back}\b", log)
    # every page downloaded, those the rule had filtered included
    site = ParamSite(products=60, seed=server.seed, tabs=True)
    assert set(server.hits()["by_resource"]) == site.resources


def filter_with_a_learned_rule(**settings):
    crawler = get_crawler(Spider, {"DEDUP_URL_BACKEND": "memory", **settings})
    dupefilter = build_from_crawler(URLDupeFilter, crawler)
    dupefilter.open()
    learner = dupefilter.learned.learner
    for page in ("a", "b", "c"):
        learner.observe_body(f"http://s.example/{page}", page)
        learner.observe_body(f"http://s.example/{page}?ref=x", page)
    assert learner.rewrite("http://s.example/d?ref=y")[1]
    return crawler, dupefilter


def learn_ref_from_new_pages(learner):
    for page in ("e", "f", "g"):
        learner.observe_body(f"http://s.example/{page}", page)
        learner.observe_body(f"http://s.example/{page}?ref=x", page)


def test_a_request_let_through_to_verify_a_rule_is_downloaded():
    crawler, dupefilter = filter_with_a_learned_rule(DEDUP_URL_LEARN_VERIFY_EVERY=3)
    assert not dupefilter.request_seen(Request("http://s.example/d"))
    decisions = []
    for source in ("nav", "side", "top"):
        request = Request(f"http://s.example/d?ref={source}")
        decisions.append(dupefilter.request_seen(request))
    assert decisions == [True, True, False]
    # scheduled to verify the rule: the check before download lets it through
    assert not dupefilter.filtered_before_download(request)
    assert crawler.stats.get_value("dedup/url/learned/verified") == 1
    assert crawler.stats.get_value("dedup/url/learned/filtered") == 2
    dupefilter.close("finished")


def test_the_urls_a_rule_hid_are_counted_once_each_and_inspected():
    """What a rule hides is countable: the pages it would lose if it were wrong."""
    _, dupefilter = filter_with_a_learned_rule(DEDUP_URL_LEARN_VERIFY_EVERY=3)
    assert not dupefilter.request_seen(Request("http://s.example/d"))
    links = ["d?ref=nav", "d?ref=side", "d?ref=nav", "d?ref=nav", "d?ref=top"]
    seen = [dupefilter.request_seen(Request(f"http://s.example/{link}")) for link in links]
    assert seen == [True, True, True, True, False]  # the third distinct URL verifies
    rule = dupefilter.learned.learner.rules[RuleKey("s.example", "param", "ref")]
    described = describe_rule(rule)
    assert (described["requests_filtered"], described["downloaded_to_verify"]) == (3, 1)
    dupefilter.close("finished")


def test_a_url_downloaded_to_verify_a_rule_is_verified_once_however_often_linked():
    """One in N distinct pages a rule hides is verified: a page linked from every page
    would otherwise take the verifications, and be downloaded again each time."""
    crawler, dupefilter = filter_with_a_learned_rule(DEDUP_URL_LEARN_VERIFY_EVERY=2)
    for page in ("d", "e"):
        assert not dupefilter.request_seen(Request(f"http://s.example/{page}"))
    links = ["d?ref=nav", "d?ref=side", "d?ref=side", "d?ref=side", "e?ref=nav", "e?ref=top"]
    seen = [dupefilter.request_seen(Request(f"http://s.example/{link}")) for link in links]
    # d?ref=side verifies the rule once; e?ref=top, the fourth distinct URL, next
    assert seen == [True, False, True, True, True, False]
    assert crawler.stats.get_value("dedup/url/learned/verified") == 2
    rule = dupefilter.learned.learner.rules[RuleKey("s.example", "param", "ref")]
    assert (rule.filtered, rule.verified) == (4, 2)
    dupefilter.close("finished")


def test_a_request_queued_before_a_rule_is_dropped_before_download_when_a_repeat():
    crawler, dupefilter = filter_with_a_learned_rule()
    learner = dupefilter.learned.learner
    learner.forget("*", "*")
    queued = [Request("http://s.example/d?ref=nav"), Request("http://s.example/d?ref=top")]
    assert [dupefilter.request_seen(request) for request in queued] == [False, False]
    learn_ref_from_new_pages(learner)  # the rule is learned after both were queued

    assert [dupefilter.filtered_before_download(request) for request in queued] == [False, True]
    assert crawler.stats.get_value("dedup/url/learned/filtered") == 1
    dupefilter.close("finished")


def download(crawler, url, text):
    """What the learned rules hear of a download: a 200 with *text* at *url*."""
    request = Request(url)
    response = HtmlResponse(url, body=f"<p>{text}</p>".encode(), request=request)
    crawler.signals.send_catch_log(
        scrapy_signals.response_received, response=response, request=request, spider=None
    )


def test_a_page_downloaded_before_a_rule_is_a_repeat_under_its_other_urls_after():
    """``/d?ref=nav`` downloaded before ``ref`` is learned is the page ``/d`` once it is:
    a request for ``/d`` queued before the rule is dropped before download and held under
    ``ref``; one for ``/d``, ``/d?ref=top`` or ``/d?ref=nav`` made after it, a repeat."""
    crawler = get_crawler(Spider, {"DEDUP_URL_BACKEND": "memory"})
    dupefilter = build_from_crawler(URLDupeFilter, crawler)
    dupefilter.open()
    queued = Request("http://s.example/d")
    early = Request("http://s.example/d?ref=nav")
    assert not dupefilter.request_seen(queued)
    assert not dupefilter.request_seen(early)
    download(crawler, early.url, "d")
    for page in ("a", "b", "c"):
        download(crawler, f"http://s.example/{page}", page)
        download(crawler, f"http://s.example/{page}?ref=x", page)
    assert dupefilter.learned.learner.rewrite(early.url)[1]  # ref is learned

    assert dupefilter.filtered_before_download(queued)
    ref = RuleKey("s.example", "param", "ref")
    assert dupefilter.learned.hidden.holds(ref, "http://s.example/d")
    for url in ("http://s.example/d", "http://s.example/d?ref=top", early.url):
        assert dupefilter.request_seen(Request(url)), url
    dupefilter.close("finished")


def test_a_page_a_rule_stood_for_is_downloaded_once_the_rule_is_retracted():
    """``/d?tab=reviews`` downloaded while ``tab`` was learned records ``/d`` as seen: a
    request for ``/d`` then is held under ``tab``, given back when a counter-example
    retracts it, and one made after that is downloaded (once)."""
    crawler = get_crawler(Spider, {"DEDUP_URL_BACKEND": "memory"})
    dupefilter = build_from_crawler(URLDupeFilter, crawler)
    dupefilter.open()
    for page in ("a", "b", "c"):
        download(crawler, f"http://s.example/{page}", page)
        download(crawler, f"http://s.example/{page}?tab=reviews", page)
    tab = RuleKey("s.example", "param", "tab")
    assert dupefilter.learned.learner.rules[tab].state == "learned"
    assert not dupefilter.request_seen(Request("http://s.example/d?tab=reviews"))  # as /d
    download(crawler, "http://s.example/d?tab=reviews", "reviews of d")
    held = Request("http://s.example/d")
    assert dupefilter.request_seen(held)
    assert dupefilter.learned.hidden.holds(tab, "http://s.example/d")

    # the content level keeps /e and its reviews as two texts: tab is retracted
    for url, text in (("http://s.example/e", "e"), ("http://s.example/e?tab=reviews", "r")):
        crawler.signals.send_catch_log(dedup_signals.content_decided, url=url, content_key=text)
    assert dupefilter.learned.learner.rules[tab].state == "retracted"
    assert not dupefilter.learned.hidden.holds(tab, "http://s.example/d")  # given back
    assert not dupefilter.request_seen(Request("http://s.example/d"))
    assert dupefilter.request_seen(Request("http://s.example/d"))
    dupefilter.close("finished")


def test_a_request_dropped_as_a_page_downloaded_under_other_rules_is_held_under_all():
    """``/d?tab=reviews`` queued, ``/d?ref=x`` downloaded once ``ref`` is learned, then
    ``tab`` learned: the queued request repeats ``/d?ref=x`` while both rules hold, and is
    held under both (a retracted ``tab`` gives it back)."""
    crawler = get_crawler(Spider, {"DEDUP_URL_BACKEND": "memory"})
    dupefilter = build_from_crawler(URLDupeFilter, crawler)
    dupefilter.open()
    queued = Request("http://s.example/d?tab=reviews")
    assert not dupefilter.request_seen(queued)
    for parameter, pages in (("ref", "abc"), ("tab", "efg")):
        for page in pages:
            download(crawler, f"http://s.example/{page}", page)
            download(crawler, f"http://s.example/{page}?{parameter}=x", page)
        if parameter == "ref":
            download(crawler, "http://s.example/d?ref=x", "d")

    assert dupefilter.filtered_before_download(queued)
    for name in ("tab", "ref"):
        rule = RuleKey("s.example", "param", name)
        assert dupefilter.learned.hidden.holds(rule, queued.url), name
    dupefilter.close("finished")


def test_a_url_requested_before_a_rule_and_again_after_is_a_repeat():
    """Queued as ``/d?ref=nav`` before ``ref`` is learned, not downloaded yet: the same
    URL again after it is a repeat of the request queued, not a new ``/d``."""
    _, dupefilter = filter_with_a_learned_rule()
    learner = dupefilter.learned.learner
    learner.forget("*", "*")
    assert not dupefilter.request_seen(Request("http://s.example/d?ref=nav"))
    learn_ref_from_new_pages(learner)
    assert dupefilter.request_seen(Request("http://s.example/d?ref=nav"))
    assert not dupefilter.request_seen(Request("http://s.example/d?ref=top"))  # a new /d
    dupefilter.close("finished")


def test_a_request_let_through_to_verify_a_rule_is_marked_and_not_dropped_later():
    _, dupefilter = filter_with_a_learned_rule(DEDUP_URL_LEARN_VERIFY_EVERY=1)
    assert not dupefilter.request_seen(Request("http://s.example/d"))
    request = Request("http://s.example/d?ref=nav")
    assert not dupefilter.request_seen(request)  # every filtered URL verifies
    assert request.meta[META_VERIFYING]
    assert not dupefilter.filtered_before_download(request)
    dupefilter.close("finished")


def test_a_request_taken_back_from_a_killed_worker_is_never_dropped_before_download():
    _, dupefilter = filter_with_a_learned_rule()
    learner = dupefilter.learned.learner
    learner.forget("*", "*")
    request = Request("http://s.example/d?ref=nav")
    assert not dupefilter.request_seen(request)
    learn_ref_from_new_pages(learner)
    # its first attempt, on the worker later killed, recorded the rewritten key
    assert not dupefilter.filtered_before_download(request.copy())
    taken_back = request.replace(meta={**request.meta, META_TAKEN_BACK: True})
    assert not dupefilter.filtered_before_download(taken_back)
    assert dupefilter.filtered_before_download(request.copy())  # a plain repeat is dropped
    dupefilter.close("finished")


def test_requests_past_the_held_limit_are_counted_and_still_verified(monkeypatch):
    monkeypatch.setattr("crawler.url.hidden_requests.MAX_HIDDEN_REQUESTS", 1)
    crawler, dupefilter = filter_with_a_learned_rule(DEDUP_URL_LEARN_VERIFY_EVERY=3)
    assert not dupefilter.request_seen(Request("http://s.example/d"))
    sources = ("nav", "side", "top", "foot", "mail", "menu")
    decisions = [dupefilter.request_seen(Request(f"http://s.example/d?ref={s}")) for s in sources]
    assert decisions == [True, True, False, True, True, False]
    assert crawler.stats.get_value("dedup/url/learned/not_held") == 3
    assert dupefilter.learned.hidden._count == 1
    dupefilter.close("finished")


def test_a_worker_killed_while_learning_loses_nothing(shop, redis_server):
    """Two workers share the queue (leases), the seen store and the rules; one is killed
    with SIGKILL a third of the way: the other finishes with every page downloaded, under
    the rules both learned."""
    command = scrapy_crawl_command(
        shop.url,
        *("-s", "LOG_LEVEL=INFO", "-s", "DEDUP_URL_BACKEND=redis"),
        *("-s", f"REDIS_URL={redis_server.url}", "-s", "DEDUP_LEASE_TTL=2"),
        *("-s", "SCHEDULER=crawler.schedulers.LeasingScheduler", "-s", "SCHEDULER_PERSIST=True"),
        *("-s", "DEDUP_CONTENT_WORKERS=0", "-s", "DOWNLOAD_DELAY=0.01"),
    )
    victim = start_scrapy([*command, "-s", "DEDUP_WORKER_ID=victim"], stderr=subprocess.DEVNULL)
    survivor = start_scrapy([*command, "-s", "DEDUP_WORKER_ID=survivor"])
    deadline = time.monotonic() + 60
    while shop.hits()["total"] < len(resources(shop)) // 3:
        assert victim.poll() is None and time.monotonic() < deadline
        time.sleep(0.01)
    os.kill(victim.pid, signal.SIGKILL)
    victim.wait(timeout=10)
    _, log = survivor.communicate(timeout=300)
    assert survivor.returncode == 0, log[-3000:]

    assert set(shop.hits()["by_resource"]) == resources(shop)  # nothing lost
    shared = SharedRules(RedisConnection(redis_server.url), "site:dupefilter:url-rules")
    learned = {rule.name for rule in shared.read() if rule.state == "learned"}
    assert {"ref", "from"} <= learned <= set(IRRELEVANT_PARAMS)


def by_hand_arguments() -> list[str]:
    """The README's "the same by hand" block as ``-s`` options, the add-on switched off."""
    from tests.test_addon import by_hand_settings

    arguments = ["-s", "ADDONS={}"]
    for name, value in by_hand_settings().items():
        arguments += ["-s", f"{name}={value if isinstance(value, str) else json.dumps(value)}"]
    return arguments


def test_by_hand_as_the_readme_says_downloads_what_the_add_on_downloads(
    demo_site_process_factory,
):
    """Issue 31: set up by hand, the learned rules applied only when a request was scheduled
    (2.41 downloads a resource against 1.72 with the add-on on a real site). With the
    README's block (LearnedRulesMiddleware included), both set-ups download a resource as
    often, within 5%. Learning depends on the order pages arrive: ten pairs of single crawls
    on a 2-core Xeon of 2026 gave 1.18 to 1.24 downloads a resource with the add-on (mean
    1.21) and 1.17 to 1.22 by hand (mean 1.20), one pair 5.2% apart; so each set-up is
    crawled three times, interleaved, and their means compared."""
    downloads: dict[str, list[float]] = {"add-on": [], "by hand": []}
    for _ in range(3):
        for how, arguments in (("add-on", []), ("by hand", by_hand_arguments())):
            shop = demo_site_process_factory(site="params", articles=PRODUCTS)
            log = crawl(shop, *arguments)
            assert "crawler.middlewares.LearnedRulesMiddleware" in log, how
            hits = shop.hits()
            assert set(hits["by_resource"]) == resources(shop), how  # none lost to a rule
            downloads[how].append(hits["total"] / len(resources(shop)))
    add_on, by_hand = (sum(runs) / len(runs) for runs in downloads.values())
    assert abs(by_hand - add_on) <= 0.05 * add_on, downloads


@pytest.mark.parametrize(
    ("setting", "value"),
    [
        ("DEDUP_URL_LEARN_MIN_EVIDENCE", 0),
        ("DEDUP_URL_LEARN_VERIFY_EVERY", -1),
    ],
)
def test_a_bad_learning_setting_is_named(setting, value):
    with pytest.raises(ValueError, match=f"^{setting}={value}: "):
        learner_from_settings(Settings({setting: value}))


def test_the_learning_settings_reach_the_learner():
    learner = learner_from_settings(
        Settings({"DEDUP_URL_LEARN_VERIFY_EVERY": 7, "DEDUP_URL_LEARN_MIN_EVIDENCE": 4})
    )
    assert learner is not None
    assert (learner.verify_every, learner.min_evidence) == (7, 4)


@pytest.mark.parametrize(("every", "reviewed"), [(10, 60), (50, 12)])
def test_the_tabs_sites_review_one_product_in_ten_or_in_fifty(every, reviewed):
    site = ParamSite(products=600, tabs=True, reviewed_every=every)
    reviews = {resource for resource in site.resources if resource.endswith("?tab=reviews")}
    assert len(reviews) == len(site.reviewed) == reviewed
    product = next(iter(site.reviewed))
    own = site.resolve(f"/products/{product.slug}").body
    assert site.resolve(f"/products/{product.slug}?tab=reviews").body != own


def test_a_tabs_site_needs_a_positive_share():
    with pytest.raises(ValueError, match="reviewed_every must be at least 1, got 0"):
        ParamSite(tabs=True, reviewed_every=0)
