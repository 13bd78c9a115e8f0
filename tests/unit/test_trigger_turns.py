"""The test events an organisation may raise: ``per_minute`` at once, one given back every
``60 / per_minute`` seconds; a refusal says how long until the next; organisations apart;
the entries kept bounded."""

from __future__ import annotations

import contextlib
import uuid

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fourcorner.entrypoints.http.errors import TooManyTestEvents
from fourcorner.entrypoints.http.webhook_handlers import TriggerTurns

A, B = uuid.UUID(int=1), uuid.UUID(int=2)


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_a_burst_then_one_turn_every_so_often() -> None:
    clock = Clock()
    turns = TriggerTurns(10, clock=clock)
    for _ in range(10):
        turns.take(A)
    with pytest.raises(TooManyTestEvents) as refused:
        turns.take(A)
    assert refused.value.retry_after == 6 and refused.value.per_minute == 10
    turns.take(B)  # another organisation's turns are its own
    clock.now += 5.9
    with pytest.raises(TooManyTestEvents):
        turns.take(A)
    clock.now += 0.1
    turns.take(A)  # one given back after 6 s
    clock.now += 60
    for _ in range(10):  # all of them after a minute
        turns.take(A)


def test_the_entries_kept_are_bounded() -> None:
    turns = TriggerTurns(1, most=3, clock=Clock())
    for n in range(10):
        turns.take(uuid.UUID(int=n))
    assert len(turns) == 3


@given(
    per_minute=st.integers(1, 20),
    steps=st.lists(st.tuples(st.floats(0, 30), st.booleans()), max_size=200),
)
def test_no_window_holds_more_than_the_bucket_and_its_refills(
    per_minute: int, steps: list[tuple[float, bool]]
) -> None:
    """Over any span of time, the turns taken are at most ``per_minute`` and one more for each
    ``60 / per_minute`` seconds in it; a refusal's wait is at least a second and at most one
    refill's time, and a turn is there once it has passed."""
    clock = Clock()
    turns = TriggerTurns(per_minute, clock=clock)
    every = 60 / per_minute
    taken: list[float] = []
    for wait, other in steps:
        clock.now += wait
        if other:  # never in A's way
            with contextlib.suppress(TooManyTestEvents):
                turns.take(B)
            continue
        try:
            turns.take(A)
        except TooManyTestEvents as e:
            assert 1 <= e.retry_after <= max(1, int(every) + 1)
            clock.now += e.retry_after
            turns.take(A)
        taken.append(clock.now)
    for i, start in enumerate(taken):
        inside = [t for t in taken[i:] if t - start <= 60]
        assert len(inside) <= per_minute + (inside[-1] - start) / every + 1e-9
