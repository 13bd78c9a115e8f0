"""Throttling failed authentication: the allowance per key, its recovery, and bounded memory."""

from __future__ import annotations

import math
import tracemalloc

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fourcorner.entrypoints.http.throttle import FailureTracker, address_key, prefix_key


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def attempt(tracker: FailureTracker, *keys: str) -> bool:
    """One failing attempt: let through (and counted) unless the tracker refuses it."""
    if tracker.retry_after(keys):
        return False
    tracker.failed(keys)
    return True


@given(
    limit=st.integers(1, 20),
    window=st.floats(1.0, 600.0),
    gaps=st.lists(st.floats(0.0, 30.0), max_size=200),
)
def test_no_window_lets_through_more_than_its_allowance(limit, window, gaps):
    clock = Clock()
    tracker = FailureTracker(limit, window, clock=clock)
    through: list[float] = []
    for gap in gaps:
        clock.now += gap
        if attempt(tracker, "addr:192.0.2.1"):
            through.append(clock.now)
    interval = window / limit
    # the generic cell rate algorithm: a burst of ``limit``, then one per interval
    for i, start in enumerate(through):
        for j in range(i, len(through)):
            span = through[j] - start
            assert j - i + 1 <= limit + span / interval + 1e-6


@given(limit=st.integers(1, 20), window=st.floats(1.0, 600.0), failures=st.integers(0, 60))
def test_the_allowance_comes_back_after_retry_after(limit, window, failures):
    clock = Clock()
    tracker = FailureTracker(limit, window, clock=clock)
    for _ in range(failures):
        tracker.failed(["k"])
    wait = tracker.retry_after(["k"])
    assert (wait > 0) == (failures >= limit)
    clock.now += wait
    assert tracker.retry_after(["k"]) == 0


@given(
    limit=st.integers(0, 5),
    failed=st.lists(st.sampled_from(["a", "b", "p"]), max_size=20),
    asked=st.lists(st.sampled_from(["a", "b", "c", "p"]), min_size=1, max_size=3),
)
def test_a_tracker_that_remembers_no_failure_refuses_no_one(limit, failed, asked):
    """What lets the authenticator skip working out a caller's keys (``remembers_any``)."""
    tracker = FailureTracker(limit, 60.0, clock=Clock())
    assert not tracker.remembers_any()
    for key in failed:
        tracker.failed([key])
    assert tracker.remembers_any() == (limit > 0 and bool(failed))
    if not tracker.remembers_any():
        assert tracker.retry_after(asked) == 0


def test_a_burst_of_limit_failures_then_refusal_for_each_key_on_its_own():
    clock = Clock()
    tracker = FailureTracker(3, 60.0, clock=clock)
    assert [attempt(tracker, "a", "p") for _ in range(4)] == [True, True, True, False]
    assert tracker.retry_after(["a"]) == 20  # one more every 60/3 seconds
    assert tracker.retry_after(["b"]) == 0
    # refused when any of its keys is over: another address with the same prefix
    assert not attempt(tracker, "b", "p")
    clock.now += 20
    assert attempt(tracker, "a", "p") and not attempt(tracker, "a", "p")


def test_limit_zero_counts_and_refuses_nothing():
    tracker = FailureTracker(0, 60.0)
    assert all(attempt(tracker, "a") for _ in range(1000))
    assert len(tracker) == 0


def test_memory_stays_bounded_under_a_flood_of_distinct_keys():
    tracker = FailureTracker(5, 60.0, max_tracked=1000)
    for i in range(2000):  # warm up: the table full
        tracker.failed([f"addr:10.{i >> 16 & 255}.{i >> 8 & 255}.{i & 255}"])
    tracemalloc.start()
    try:
        base = tracemalloc.take_snapshot()
        for i in range(25_000):
            tracker.failed([prefix_key(f"fck_{i:06d}"), f"addr:{i}"])
        grown = sum(s.size_diff for s in tracemalloc.take_snapshot().compare_to(base, "filename"))
    finally:
        tracemalloc.stop()
    # 50,000 new keys went through (about 150 bytes each if kept): the table holds 1,000
    assert grown < 1_000_000
    assert len(tracker) == 1000


@pytest.mark.parametrize(
    ("remote", "key"),
    [
        ("192.0.2.7", "addr:192.0.2.7"),
        ("::ffff:192.0.2.7", "addr:192.0.2.7"),
        ("2001:db8:1:2:3:4:5:6", "addr:2001:db8:1:2::/64"),
        ("2001:db8:1:2:ffff::1", "addr:2001:db8:1:2::/64"),
        (None, "addr:"),
        ("not an address", "addr:not an address"),
    ],
)
def test_addresses_are_counted_by_host_or_ipv6_64(remote, key):
    assert address_key(remote) == key


def test_settings_are_checked():
    with pytest.raises(ValueError):
        FailureTracker(-1, 60.0)
    with pytest.raises(ValueError):
        FailureTracker(5, 0.0)
    with pytest.raises(ValueError):
        FailureTracker(5, 60.0, max_tracked=0)


def shared_pair(limit: int, window: float, clock: Clock) -> list[FailureTracker]:
    """Two processes' trackers, each telling the other its failures at once."""
    first = FailureTracker(limit, window, clock=clock)
    second = FailureTracker(limit, window, clock=clock)
    first.share(lambda keys: second.heard(dict.fromkeys(keys, 1)))
    second.share(lambda keys: first.heard(dict.fromkeys(keys, 1)))
    return [first, second]


@given(
    limit=st.integers(1, 10),
    window=st.floats(1.0, 600.0),
    attempts=st.lists(
        st.tuples(
            st.floats(0.0, 30.0),
            st.integers(0, 1),
            st.lists(st.sampled_from(["addr:a", "addr:b", "key:p"]), min_size=1, unique=True),
        ),
        max_size=60,
    ),
)
def test_two_processes_sharing_failures_refuse_as_one_would(limit, window, attempts):
    """Failures spread over two processes that hear each other are let through and refused
    exactly as one process taking them all would: the allowance is not had once per process."""
    clock = Clock()
    pair = shared_pair(limit, window, clock)
    alone = FailureTracker(limit, window, clock=clock)
    for gap, which, keys in attempts:
        clock.now += gap
        assert pair[which].retry_after(keys) == alone.retry_after(keys)
        assert pair[1 - which].retry_after(keys) == alone.retry_after(keys)
        assert attempt(pair[which], *keys) == attempt(alone, *keys)


@given(
    limit=st.integers(1, 20),
    window=st.floats(1.0, 600.0),
    notes=st.lists(
        st.dictionaries(st.sampled_from(["addr:a", "key:p"]), st.integers(-5, 10**9), min_size=1),
        max_size=20,
    ),
    gaps=st.lists(st.floats(0.0, 30.0), min_size=20, max_size=20),
)
def test_failures_heard_never_refuse_longer_than_the_limit_at_once(limit, window, notes, gaps):
    """Whatever other processes (or a forged notification) say, a key is refused at most as
    long as ``limit`` failures at once make it: one interval."""
    clock = Clock()
    tracker = FailureTracker(limit, window, clock=clock)
    for note, gap in zip(notes, gaps, strict=False):
        clock.now += gap
        tracker.heard(note)
        assert tracker.retry_after(["addr:a", "key:p"]) <= math.ceil(window / limit - 1e-6)


def test_failures_heard_add_to_those_counted_here_up_to_the_allowance_spent():
    clock = Clock()
    tracker = FailureTracker(3, 60.0, clock=clock)
    tracker.heard({"addr:a": 2})
    assert attempt(tracker, "addr:a") and not attempt(tracker, "addr:a")
    assert tracker.retry_after(["addr:a"]) == 20
    tracker.heard({"addr:a": 1000})
    assert tracker.retry_after(["addr:a"]) == 20  # already spent: no further
    # a key this process took further by its own failures stays where they put it
    for _ in range(4):  # a prefix's failures are counted also while it is refused
        tracker.failed(["key:p"])
    tracker.heard({"key:p": 1})
    assert tracker.retry_after(["key:p"]) == 40
    # the limit 0 hears nothing
    off = FailureTracker(0, 60.0, clock=clock)
    off.heard({"addr:a": 5})
    assert len(off) == 0


def test_failures_heard_are_remembered_within_the_bound():
    tracker = FailureTracker(5, 60.0, max_tracked=10)
    for i in range(100):
        tracker.heard({f"addr:{i}": 1, f"key:{i}": 2})
    assert len(tracker) == 10


def test_each_failure_counted_is_given_to_the_share_and_nothing_else_is():
    tracker = FailureTracker(3, 60.0, clock=Clock())
    given_keys: list[tuple[str, ...]] = []
    tracker.share(lambda keys: given_keys.append(tuple(keys)))
    tracker.failed(k for k in ["addr:a", "key:p"])  # an iterator: counted and shared both
    tracker.retry_after(["addr:a"])
    tracker.heard({"addr:b": 1})  # heard from another: not told again
    assert given_keys == [("addr:a", "key:p")]
    assert tracker.retry_after(["addr:a"]) == 0 and tracker.retry_after(["key:p"]) == 0
    tracker.failed(["addr:a", "key:p"])
    tracker.failed(["addr:a"])
    assert tracker.retry_after(["addr:a"]) == 20 and tracker.retry_after(["key:p"]) == 0


def test_a_wait_of_one_interval_is_that_interval_whatever_the_float_rounding():
    """A key refused for one interval is told that interval, not a second more: the wait is
    computed from several clock readings and may come out a hair above it (12.000000000000114
    seconds at this clock, which the property above found)."""
    clock = Clock()
    clock.now = 1005.5543310920929
    tracker = FailureTracker(1, 12.0, clock=clock)
    tracker.heard({"addr:a": 1})
    assert tracker.retry_after(["addr:a"]) == 12
