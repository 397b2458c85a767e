"""A message logged once (:class:`crawler.log_once.LogOnce`), from any thread, where it is
called."""

from __future__ import annotations

import logging
import threading

from crawler.log_once import LogOnce

logger = logging.getLogger("tests.log_once")


def redis_failed(warning: LogOnce, error: str) -> bool:
    return warning("Redis failed: %(error)s", {"error": error})


def test_the_first_call_is_logged_as_logged_by_its_caller(caplog):
    warning = LogOnce(logger, logging.WARNING)
    with caplog.at_level(logging.WARNING, logger="tests.log_once"):
        assert redis_failed(warning, "timeout")
        assert not redis_failed(warning, "refused")
    assert caplog.record_tuples == [("tests.log_once", logging.WARNING, "Redis failed: timeout")]
    assert caplog.records[0].funcName == "redis_failed"
    assert warning.said


def test_threads_calling_at_once_log_one_record(caplog):
    warning = LogOnce(logger, logging.ERROR)
    start = threading.Barrier(8)
    said = []

    def call() -> None:
        start.wait()
        said.append(warning("State unwritable", extra={"spider": None}))

    threads = [threading.Thread(target=call) for _ in range(8)]
    with caplog.at_level(logging.ERROR, logger="tests.log_once"):
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    assert sorted(said) == [False] * 7 + [True]
    assert [record.getMessage() for record in caplog.records] == ["State unwritable"]
