"""SpareWorker: a worker pool started early, taken as the first worker or stopped."""

from __future__ import annotations

import math
from concurrent.futures import Future

import pytest

from crawler.content.spare_worker import SpareWorker


class Pool:
    """What SpareWorker asks of a pool: its ``started`` future, and ``close``."""

    def __init__(self, error: BaseException | None = None, *, fails_to_close: bool = False):
        self.started: Future[None] = Future()
        if error is None:
            self.started.set_result(None)
        else:
            self.started.set_exception(error)
        self.closed = False
        self.fails_to_close = fails_to_close

    def close(self) -> None:
        if self.fails_to_close:
            raise RuntimeError("the event loop stopped")
        self.closed = True


def test_a_spare_is_taken_once_and_then_is_no_more():
    pool = Pool()
    spare = SpareWorker(pool)  # type: ignore[arg-type]
    assert spare.older_than(-1.0)
    assert spare.take() is pool
    assert spare.take() is None
    assert not spare.older_than(-math.inf)  # neither taken nor stopped twice
    assert not pool.closed


def test_a_spare_that_could_not_start_is_closed_instead_of_taken():
    pool = Pool(RuntimeError("the extractor cannot be imported"))
    spare = SpareWorker(pool)  # type: ignore[arg-type]
    assert spare.take() is None
    assert pool.closed


def test_a_spare_stopped_is_closed_and_a_failing_close_is_no_callers_concern(caplog):
    pool, failing = Pool(), Pool(fails_to_close=True)
    SpareWorker(pool).stop("kept up")  # type: ignore[arg-type]
    assert pool.closed
    spare = SpareWorker(failing)  # type: ignore[arg-type]
    spare.stop()
    assert spare.processes is None


@pytest.mark.parametrize("seconds", [0.0, 10.0])
def test_no_spare_is_never_old(seconds: float):
    assert not SpareWorker().older_than(seconds)
    assert SpareWorker().take() is None
