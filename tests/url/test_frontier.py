from __future__ import annotations

from crawler.url.frontier import Frontier
from crawler.url.request_keys import request_key

KEY_A = request_key("GET", "https://example.com/a")
KEY_B = request_key("GET", "https://example.com/b")
KEY_C = request_key("GET", "https://example.com/c")


def test_unfinished_requests_come_back_in_order(tmp_path):
    frontier = Frontier(tmp_path, {})
    assert frontier.open() == ([], False)
    frontier.scheduled(KEY_A, b"request-a")
    frontier.scheduled(KEY_B, b"request-b")
    frontier.scheduled(KEY_C, b"request-c")
    frontier.finished(KEY_B)
    frontier.journal.close()  # killed: no close()
    assert Frontier(tmp_path, {}).open() == ([b"request-a", b"request-c"], False)


def test_open_compacts_and_a_second_kill_keeps_pending(tmp_path):
    frontier = Frontier(tmp_path, {})
    frontier.open()
    frontier.scheduled(KEY_A, b"request-a")
    frontier.scheduled(KEY_B, b"request-b")
    frontier.finished(KEY_A)
    frontier.journal.close()
    second = Frontier(tmp_path, {})
    assert second.open() == ([b"request-b"], False)
    assert second.journal.records == 1
    second.journal.close()  # killed again before finishing anything
    assert Frontier(tmp_path, {}).open() == ([b"request-b"], False)


def test_finished_crawl_leaves_nothing_pending(tmp_path):
    frontier = Frontier(tmp_path, {})
    frontier.open()
    frontier.scheduled(KEY_A, b"request-a")
    frontier.close(crawl_finished=True, queue_persisted=False)
    assert Frontier(tmp_path, {}).open() == ([], False)


def test_clean_stop_with_saved_queue_is_marked(tmp_path):
    frontier = Frontier(tmp_path, {})
    frontier.open()
    frontier.scheduled(KEY_A, b"request-a")
    frontier.close(crawl_finished=False, queue_persisted=True)
    resumed = Frontier(tmp_path, {})
    assert resumed.open() == ([b"request-a"], True)
    resumed.scheduled(KEY_B, b"request-b")
    resumed.journal.close()  # killed after the clean restart: the queue is lost again
    assert Frontier(tmp_path, {}).open() == ([b"request-a", b"request-b"], False)


def test_clean_stop_without_saved_queue_resumes(tmp_path):
    frontier = Frontier(tmp_path, {})
    frontier.open()
    frontier.scheduled(KEY_A, b"request-a")
    frontier.close(crawl_finished=False, queue_persisted=False)
    assert Frontier(tmp_path, {}).open() == ([b"request-a"], False)


def test_how_many_items_were_written_comes_back_until_the_request_finishes(tmp_path):
    frontier = Frontier(tmp_path, {})
    frontier.open()
    frontier.scheduled(KEY_A, b"request-a")
    frontier.scheduled(KEY_B, b"request-b")
    frontier.scheduled(KEY_C, b"request-c")
    frontier.items_settled(KEY_A, 1)
    frontier.items_settled(KEY_A, 3)
    frontier.items_settled(KEY_C, 1)
    frontier.finished(KEY_C)
    frontier.journal.close()  # killed
    resumed = Frontier(tmp_path, {})
    assert resumed.open() == ([b"request-a", b"request-b"], False)
    assert resumed.settled_items == {KEY_A: 3}
    resumed.journal.close()  # killed again: the compacted journal keeps the count
    again = Frontier(tmp_path, {})
    assert again.open() == ([b"request-a", b"request-b"], False)
    assert again.settled_items == {KEY_A: 3}
    again.finished(KEY_A)
    again.journal.close()
    last = Frontier(tmp_path, {})
    assert last.open() == ([b"request-b"], False)
    assert last.settled_items == {}
