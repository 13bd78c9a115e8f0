"""The workers' wait between rounds (``application.idle``): it ends at the first of a stop, a
wake-up and the poll's end, and leaves no task behind."""

from __future__ import annotations

import asyncio

import pytest

from fourcorner.application.idle import idle

LONG = 30.0  # a poll the tests must never wait out


async def _timed(stop: asyncio.Event, seconds: float, wake: asyncio.Event | None) -> float:
    before = set(asyncio.all_tasks())
    loop = asyncio.get_running_loop()
    start = loop.time()
    await asyncio.wait_for(idle(stop, seconds, wake), LONG)
    elapsed = loop.time() - start
    await asyncio.sleep(0)  # let the cancelled waiters finish
    assert set(asyncio.all_tasks()) <= before, "idle left a waiter running"
    return elapsed


def _later(event: asyncio.Event, seconds: float) -> asyncio.TimerHandle:
    return asyncio.get_running_loop().call_later(seconds, event.set)


@pytest.mark.parametrize("with_wake", [False, True])
async def test_a_stop_ends_the_wait_before_the_poll(with_wake: bool) -> None:
    stop = asyncio.Event()
    _later(stop, 0.05)
    elapsed = await _timed(stop, LONG, asyncio.Event() if with_wake else None)
    assert 0.04 <= elapsed < 5
    assert stop.is_set()


async def test_a_stop_already_set_ends_the_wait_at_once() -> None:
    stop = asyncio.Event()
    stop.set()
    assert await _timed(stop, LONG, asyncio.Event()) < 5
    assert stop.is_set()  # never cleared: every worker's loop reads it next


async def test_a_wake_up_ends_the_wait_before_the_poll() -> None:
    stop, wake = asyncio.Event(), asyncio.Event()
    _later(wake, 0.05)
    elapsed = await _timed(stop, LONG, wake)
    assert 0.04 <= elapsed < 5
    assert not stop.is_set()


async def test_a_wake_up_from_the_round_before_ends_the_wait_at_once() -> None:
    """A wake-up set while the round ran (after it looked for work, perhaps) is not lost: the
    next round starts at once, and the wake-up is spent."""
    stop, wake = asyncio.Event(), asyncio.Event()
    wake.set()
    assert await _timed(stop, LONG, wake) < 5
    assert not wake.is_set()
    elapsed = await _timed(stop, 0.1, wake)  # spent: the next wait is a whole poll
    assert elapsed >= 0.09


async def test_a_wake_up_that_ends_a_wait_is_spent() -> None:
    stop, wake = asyncio.Event(), asyncio.Event()
    _later(wake, 0.02)
    await _timed(stop, LONG, wake)
    assert not wake.is_set()


@pytest.mark.parametrize("with_wake", [False, True])
async def test_without_stop_or_wake_up_the_poll_elapses(with_wake: bool) -> None:
    stop = asyncio.Event()
    elapsed = await _timed(stop, 0.1, asyncio.Event() if with_wake else None)
    assert 0.09 <= elapsed < 5
    assert not stop.is_set()


async def test_a_cancelled_wait_leaves_no_waiter() -> None:
    stop, wake = asyncio.Event(), asyncio.Event()
    before = set(asyncio.all_tasks())
    waiting = asyncio.create_task(idle(stop, LONG, wake))
    for _ in range(100):  # until idle waits: its task and its two waiters
        if len(asyncio.all_tasks() - before) >= 3:
            break
        await asyncio.sleep(0)
    else:
        pytest.fail("idle never started waiting")
    waiting.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiting
    await asyncio.sleep(0)
    assert set(asyncio.all_tasks()) <= before
