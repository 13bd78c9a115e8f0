"""The validation pool's own bookkeeping (``adapters.validation.pool``), with real workers
given documents they refuse at once: a worker started for a caller that stopped waiting
serves the next, a request that cannot be pickled takes no worker, a worker that must go is
reaped off the event loop, and closing the pool closes every pipe."""

from __future__ import annotations

import asyncio
import pickle
import threading
from pathlib import Path

import pytest

from fourcorner.adapters.validation import pool
from fourcorner.adapters.validation.pool import WorkerPool
from fourcorner.adapters.validation.rules import data_dir

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
