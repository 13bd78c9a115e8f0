"""The validation pool's own bookkeeping (``adapters.validation.pool``), with real workers
given documents they refuse at once: a worker started for a caller that stopped waiting
serves the next, a request that cannot be pickled takes no worker, a worker that must go is
reaped off the event loop, closing the pool closes every pipe, and requests of low priority
wait behind every other."""

from __future__ import annotations

import asyncio
import pickle
import threading
from pathlib import Path

import pytest

from fourcorner.adapters.validation import pool
from fourcorner.adapters.validation.pool import WorkerPool
from fourcorner.adapters.validation.rules import data_dir
from fourcorner.adapters.validation.validator import SaxonValidator
from fourcorner.domain.errors import InvalidInput, ServiceUnavailable

REFUSED = b"not a document"  # answered by intake's parser, without compiling any rules
GUARD = 60  # seconds a test waits for what the code under test must do, before failing


async def _refused(workers: WorkerPool) -> None:
    kind, _ = await workers.call(REFUSED)
    assert kind == "invalid"


async def test_a_worker_started_for_a_caller_that_stopped_waiting_serves_the_next(monkeypatch):
    entered, go = threading.Event(), threading.Event()
    made: list[pool._Worker] = []

    class Held(pool._Worker):
        def __init__(self, rules_dir: Path) -> None:
            entered.set()
            go.wait(GUARD)
            super().__init__(rules_dir)
            made.append(self)

    monkeypatch.setattr(pool, "_Worker", Held)
    workers = WorkerPool(1, 600, data_dir())
    try:
        first = asyncio.create_task(_refused(workers))
        await asyncio.to_thread(entered.wait, GUARD)  # its worker is being started
        first.cancel()
        with pytest.raises(asyncio.CancelledError):
            await first
        second = asyncio.create_task(_refused(workers))
        go.set()
        await second
        (worker,) = made  # one worker made, and given to the second caller
        assert workers.pids() == [worker.process.pid]
    finally:
        workers.close()
    assert worker.conn.closed and not worker.alive()


async def test_a_request_that_cannot_be_pickled_takes_no_worker():
    workers = WorkerPool(1, 600, data_dir())
    try:
        await _refused(workers)
        (pid,) = workers.pids()
        with pytest.raises((pickle.PicklingError, AttributeError, TypeError)):
            await workers.call(lambda: None)
        assert len(workers._idle) == 1  # free at once, not busy until its timeout
        await _refused(workers)
        assert workers.pids() == [pid]
    finally:
        workers.close()


async def test_a_worker_that_must_go_is_reaped_off_the_event_loop():
    """A worker killed in uninterruptible I/O ends only when that I/O does: the event loop
    must not wait for it."""
    workers = WorkerPool(1, 600, data_dir())
    try:
        await _refused(workers)
        (worker,) = workers._idle
        process, join = worker.process, worker.process.join
        loop_free, reaped = threading.Event(), threading.Event()
        waited: list[bool] = []

        def stuck(timeout: float | None = None) -> None:
            waited.append(loop_free.wait(GUARD))  # False: the event loop was waiting here
            join(timeout)
            reaped.set()

        process.join = stuck  # type: ignore[method-assign]
        workers._idle.clear()
        workers._release(worker, False)  # as after a timeout
        loop_free.set()
        assert await asyncio.to_thread(reaped.wait, GUARD)
        assert waited == [True]
        assert worker.conn.closed and not process.is_alive() and workers.pids() == []
        await _refused(workers)  # replaced
    finally:
        workers.close()


async def test_closing_the_pool_closes_the_pipes_of_idle_workers():
    workers = WorkerPool(2, 600, data_dir())
    await asyncio.gather(_refused(workers), _refused(workers))
    idle = list(workers._idle)
    assert idle and not any(w.conn.closed for w in idle)
    workers.close()
    assert all(w.conn.closed and not w.alive() for w in idle)


@pytest.mark.parametrize(("cores", "workers"), [(1, 1), (2, 1), (3, 2), (8, 7)])
def test_by_default_one_core_is_left_to_the_process_that_asks(
    monkeypatch: pytest.MonkeyPatch, cores: int, workers: int
) -> None:
    monkeypatch.setattr(pool, "cores", lambda: cores)
    assert pool.default_workers() == workers


async def _served_in_order(workers: WorkerPool, asked: list[tuple[str, bool]]) -> list[str]:
    """The names of ``asked`` (name, low_priority) in the order they were answered, each
    asked while the pool's one worker is held, so that all wait for it."""
    held = await workers._acquire()
    answered: list[str] = []

    async def ask(name: str, low_priority: bool) -> None:
        kind, _ = await workers.call(REFUSED, low_priority=low_priority)
        assert kind == "invalid"
        answered.append(name)

    tasks = []
    for name, low_priority in asked:
        tasks.append(asyncio.create_task(ask(name, low_priority)))
        async with asyncio.timeout(GUARD):  # each waits before the next is asked
            while len(workers._waiting) + len(workers._waiting_low) < len(tasks):  # noqa: ASYNC110
                await asyncio.sleep(0)
    workers._release(held, True)
    async with asyncio.timeout(GUARD):
        await asyncio.gather(*tasks)
    return answered


async def test_requests_of_low_priority_are_served_after_every_other_waiting():
    """Checks asked by hand (``POST /validation``) wait behind the documents sent and
    received, however many came first; each kind first come first served."""
    workers = WorkerPool(1, 600, data_dir())
    try:
        asked = [("low 1", True), ("low 2", True), ("usual 1", False), ("low 3", True)]
        asked += [("usual 2", False)]
        order = await _served_in_order(workers, asked)
        assert order == ["usual 1", "usual 2", "low 1", "low 2", "low 3"]
        # a low one that stopped waiting is passed over, and the next served
        held = await workers._acquire()
        gone = asyncio.create_task(workers.call(REFUSED, low_priority=True))
        kept = asyncio.create_task(workers.call(REFUSED, low_priority=True))
        async with asyncio.timeout(GUARD):
            while len(workers._waiting_low) < 2:  # noqa: ASYNC110
                await asyncio.sleep(0)
        gone.cancel()
        workers._release(held, True)
        async with asyncio.timeout(GUARD):
            assert (await kept)[0] == "invalid"
        assert gone.cancelled()
    finally:
        workers.close()


async def test_closing_the_pool_answers_the_requests_of_low_priority_waiting():
    workers = WorkerPool(1, 600, data_dir())
    held = await workers._acquire()
    waiting = asyncio.create_task(workers.call(REFUSED, low_priority=True))
    async with asyncio.timeout(GUARD):
        while not workers._waiting_low:  # noqa: ASYNC110
            await asyncio.sleep(0)
    workers.close()
    with pytest.raises(ServiceUnavailable):
        await waiting
    assert not held.alive()


async def test_the_validator_asks_its_pool_at_the_priority_it_is_given():
    own = SaxonValidator(workers=1, cache=0)
    try:
        held = await own.pool._acquire()
        answered: list[str] = []

        async def check(name: str, low_priority: bool) -> None:
            with pytest.raises(InvalidInput):
                await own.validate(REFUSED, low_priority=low_priority)
            answered.append(name)

        by_hand = asyncio.create_task(check("by hand", True))
        async with asyncio.timeout(GUARD):
            while not own.pool._waiting_low:  # noqa: ASYNC110
                await asyncio.sleep(0.001)
        sent = asyncio.create_task(check("sent", False))
        async with asyncio.timeout(GUARD):
            while not own.pool._waiting:  # noqa: ASYNC110
                await asyncio.sleep(0.001)
        own.pool._release(held, True)
        async with asyncio.timeout(GUARD):
            await asyncio.gather(by_hand, sent)
        assert answered == ["sent", "by hand"]
    finally:
        await own.aclose()
