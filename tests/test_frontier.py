from __future__ import annotations

from crawler.frontier import Frontier
from crawler.request_keys import request_key

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
