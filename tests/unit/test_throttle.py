"""Throttling failed authentication: the allowance per key, its recovery, and bounded memory."""

from __future__ import annotations

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
