"""When ``DEDUP_CONTENT_WORKERS = "auto"`` leaves the crawl process for worker processes."""

import threading

import pytest

import crawler.content.extraction_lane
from crawler.content.extraction_lane import ExtractionLane, ExtractionLoad, ProcessLoad


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def monotonic(self) -> float:
        return self.now


@pytest.fixture
def clock(monkeypatch):
    clock = Clock()
    monkeypatch.setattr(crawler.content.extraction_lane, "time", clock)
    return clock


def test_pages_held_below_the_limit_never_overload_the_lane(clock):
    lane = ExtractionLane(window=2.0, max_held=1_000, max_held_share=0.25)
    lane.hold(999)
    for _ in range(100):  # 100 s of pages, 999 bytes held all along
        clock.now += 1.0
        lane.release(999)
        lane.hold(999)
    assert not lane.overloaded
    lane.hold(1)
    clock.now += 0.5
    lane.release(1)
    assert lane.overloaded  # the same lane, at the limit a quarter of the window


def test_pages_at_the_limit_for_a_share_of_the_window_overload_the_lane(clock):
    lane = ExtractionLane(window=2.0, max_held=1_000, max_held_share=0.25)
    lane.hold(600)
    lane.hold(400)  # 1,000: at the limit
    clock.now += 0.49
    lane.hold(1)
    assert not lane.overloaded  # 0.49 s of 0.5
    clock.now += 0.02
    lane.release(1)
    assert lane.overloaded
    assert lane.overloaded_by == "held"
    assert lane.held == 1_000
    assert not lane.enter()


def test_pages_held_at_the_limit_overload_the_lane_without_a_page_coming_or_going(clock):
    """The first page can take long (it imports the extractor): pages held all along count
    when the lane is asked, not only when the pages held change."""
    lane = ExtractionLane(window=2.0, max_held=1_000, max_held_share=0.25)
    lane.hold(1_000)
    clock.now += 0.49
    assert not lane.overloaded
    clock.now += 0.02
    assert lane.overloaded_by == "held"


def test_stretches_at_the_limit_add_up_within_the_window_only(clock):
    lane = ExtractionLane(window=2.0, max_held=1_000, max_held_share=0.25)
    for _ in range(3):  # 0.3 s at the limit, then 1.8 s below: each stretch leaves the window
        lane.hold(1_000)
        clock.now += 0.3
        lane.release(1_000)
        clock.now += 1.8
    assert not lane.overloaded
    lane.hold(1_000)  # 0.3 s then 0.3 s, 0.4 s apart: 0.6 s of the last 2
    clock.now += 0.3
    lane.release(1_000)
    clock.now += 0.4
    lane.hold(1_000)
    clock.now += 0.3
    lane.release(1_000)
    assert lane.overloaded


def test_a_page_waiting_the_whole_window_overloads_the_lane():
    lane = ExtractionLane(window=0.2, max_held=10**9)
    assert lane.enter()
    outcome: list[bool] = []
    waiting = threading.Thread(target=lambda: outcome.append(lane.enter()))
    waiting.start()
    waiting.join(timeout=10)
    assert outcome == [False]
    assert lane.overloaded
    assert lane.overloaded_by == "waited"
    lane.leave()
    assert not lane.enter()  # for good


def test_the_lane_lets_one_page_in_at_a_time():
    lane = ExtractionLane(window=60.0, max_held=10**9)
    inside = []
    entered = threading.Event()

    def second() -> None:
        assert lane.enter()
        inside.append("second")
        entered.set()
        lane.leave()

    assert lane.enter()
    thread = threading.Thread(target=second)
    thread.start()
    assert not entered.wait(0.2)  # the second page waits while the first is in
    inside.append("first")
    lane.leave()
    thread.join(timeout=10)
    assert inside == ["first", "second"]
    assert not lane.overloaded


@pytest.mark.parametrize(
    "arguments",
    [
        {"window": 0, "max_held": 1},
        {"window": 1, "max_held": 0},
        {"window": 1, "max_held": 1, "max_held_share": 0},
        {"window": 1, "max_held": 1, "max_held_share": 1.5},
        {"window": 1, "max_held": 1, "max_cpu_share": 0},
    ],
)
def test_a_lane_is_refused_arguments_that_cannot_work(arguments):
    with pytest.raises(ValueError, match="must be"):
        ExtractionLane(**arguments)


def test_pages_take_the_lane_in_the_order_they_came():
    """A lock lets whichever thread asks first after a release in, and one page waited
    more than 0.5 s behind 60 others that way (tests/test_pipelines.py)."""
    lane = ExtractionLane(window=60.0, max_held=10**9)
    order: list[str] = []
    assert lane.enter()

    def page(name: str) -> None:
        assert lane.enter()
        order.append(name)
        lane.leave()

    threads = []
    for waiting, name in enumerate("abc", start=1):
        thread = threading.Thread(target=page, args=(name,))
        thread.start()
        threads.append(thread)
        while len(lane._queue) < waiting:  # the page is in line before the next comes
            thread.join(0.001)
    lane.leave()
    for thread in threads:
        thread.join(timeout=10)
    assert order == ["a", "b", "c"]


class ProcessClocks:
    """The time and the process's CPU time, moved by the test."""

    def __init__(self) -> None:
        self.now = 1000.0
        self.cpu = 5.0

    def run(self, seconds: float, cores: float) -> None:
        self.now += seconds
        self.cpu += seconds * cores

    def load(self, window: float = 2.0, max_share: float = 0.8) -> ProcessLoad:
        return ProcessLoad(window, max_share, clock=lambda: self.now, cpu_clock=lambda: self.cpu)


def test_a_process_under_the_share_of_a_core_is_never_busy():
    clocks = ProcessClocks()
    load = clocks.load()
    for _ in range(1000):  # 100 s at 0.79 of a core, looked at every 0.1 s
        assert not load.busy
        clocks.run(0.1, 0.79)


def test_a_process_at_the_share_for_a_whole_window_is_busy_for_good():
    clocks = ProcessClocks()
    load = clocks.load()
    for _ in range(10):  # 10 s idle, then 1.9 s at a full core: not a whole window
        assert not load.busy
        clocks.run(1.0, 0.0)
    for _ in range(19):
        assert not load.busy
        clocks.run(0.1, 1.0)
    clocks.run(0.1, 1.0)
    assert load.busy  # 2 s at a full core
    clocks.run(60.0, 0.0)
    assert load.busy


def test_a_burst_shorter_than_the_window_is_not_busy():
    """Imports and a first page's parse: a second at a full core, then little."""
    clocks = ProcessClocks()
    load = clocks.load()
    assert not load.busy
    clocks.run(1.0, 1.0)
    assert not load.busy
    for _ in range(30):
        clocks.run(0.1, 0.2)
        assert not load.busy


def test_a_lane_of_a_busy_process_is_overloaded(monkeypatch):
    clocks = ProcessClocks()
    monkeypatch.setattr(crawler.content.extraction_lane.time, "monotonic", lambda: clocks.now)
    monkeypatch.setattr(crawler.content.extraction_lane.time, "process_time", lambda: clocks.cpu)
    lane = ExtractionLane(window=2.0, max_held=10**9, max_cpu_share=0.8)
    assert lane.enter()
    lane.leave()
    clocks.run(2.0, 0.9)
    assert lane.overloaded
    assert lane.overloaded_by == "load"
    assert not lane.enter()


class PageClock:
    """The time, moved by the pages a test extracts."""

    def __init__(self) -> None:
        self.now = 1000.0

    def load(self) -> ExtractionLoad:
        return ExtractionLoad(0.5, 0.25, min_pages=5, clock=lambda: self.now)

    def extract(self, load: ExtractionLoad, pages: int, every: float, cpu: float) -> None:
        for _ in range(pages):
            self.now += every
            load.extracted(cpu)


def test_pages_extracted_under_the_share_of_a_core_never_make_the_extraction_busy():
    """A polite crawl: 20 pages a second at 10 ms each, a fifth of a core, for 100 s."""
    clock = PageClock()
    load = clock.load()
    for _ in range(2000):
        clock.extract(load, 1, every=0.05, cpu=0.010)
        assert not load.busy


def test_pages_extracted_at_the_share_of_a_core_within_the_window_make_it_busy_for_good():
    clock = PageClock()
    load = clock.load()
    clock.extract(load, 4, every=0.1, cpu=0.035)  # 0.14 s in 0.4 s, but four pages
    assert not load.busy
    clock.extract(load, 1, every=0.1, cpu=0.035)  # five, 0.175 s within 0.5 s: over 0.125
    assert load.busy
    clock.extract(load, 1, every=60.0, cpu=0.0)
    assert load.busy


def test_pages_extracted_before_the_window_do_not_count():
    """Slow pages now and then: each a trafilatura import or a large page, never a rate."""
    clock = PageClock()
    load = clock.load()
    clock.extract(load, 100, every=0.6, cpu=0.4)
    assert not load.busy


def test_one_slow_page_among_a_few_fast_ones_is_no_rate():
    """The page that imports trafilatura took 0.21 s of CPU: alone, more than the 0.125 s
    of a quarter of a core over 0.5 s; it counts for 0.025 s, a fifth of that."""
    clock = PageClock()
    load = clock.load()
    clock.extract(load, 1, every=0.0, cpu=0.21)
    clock.extract(load, 4, every=0.1, cpu=0.005)
    assert not load.busy
    clock.extract(load, 4, every=0.02, cpu=0.025)  # a rate: 0.125 s of the last 0.5
    assert load.busy


@pytest.mark.parametrize("arguments", [(0, 0.25), (0.5, 0)])
def test_an_extraction_load_is_refused_arguments_that_cannot_work(arguments):
    with pytest.raises(ValueError, match="must be positive"):
        ExtractionLoad(*arguments)


def test_a_lane_whose_extraction_takes_the_share_of_a_core_is_overloaded():
    now = [1000.0]
    extraction = ExtractionLoad(0.5, 0.25, min_pages=2, clock=lambda: now[0])
    lane = ExtractionLane(window=60.0, max_held=10**9, extraction=extraction)
    for _ in range(2):
        assert lane.overloaded_by is None
        assert lane.enter()
        lane.leave(0.1)  # the page's CPU seconds, counted as it leaves
    assert lane.overloaded_by == "extraction"
    assert not lane.enter()


def test_an_overloaded_lane_still_takes_pages_in_turn_while_the_workers_start():
    """Once overloaded, pages go to the worker processes; while they start, the lane
    takes pages that would otherwise wait for them (``overloaded_too``), one at a time."""
    lane = ExtractionLane(window=60.0, max_held=10**9)
    assert lane.enter()
    lane._waited_out = True  # overloaded, as a page that waited the whole window leaves it
    assert lane.overloaded
    entered = threading.Event()

    def second() -> None:
        assert lane.enter(overloaded_too=True)
        entered.set()
        lane.leave()

    thread = threading.Thread(target=second)
    thread.start()
    assert not entered.wait(0.2)  # in turn: the first page is still in
    lane.leave()
    thread.join(timeout=10)
    assert entered.is_set()
    assert not lane.enter()  # an ordinary page is refused all along


def test_a_page_that_waited_the_whole_window_is_refused_even_while_the_workers_start():
    lane = ExtractionLane(window=0.2, max_held=10**9)
    assert lane.enter()
    outcome: list[bool] = []
    waiting = threading.Thread(target=lambda: outcome.append(lane.enter(overloaded_too=True)))
    waiting.start()
    waiting.join(timeout=10)
    assert outcome == [False]
    lane.leave()
