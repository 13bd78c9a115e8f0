"""The worker loops a process runs (``fourcorner worker``, or ``fourcorner serve`` with its
workers), each a task of its own, watched for ``GET /readyz``.

A loop ends when the process is stopping (its ``stop`` event set) and at no other time: it
catches what goes wrong in a round and tries again later. One that ended otherwise raised
something it did not expect; the process is then not ready (``ended``), and the error is
logged as the loop ends, with its traceback (``worker.ended``), rather than when the process
stops, if ever. Until they start, ``waiting`` may say why they have not (``fourcorner
worker`` sets it while it starts, or waits for something its loops need); the process is not
ready meanwhile."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable
from typing import Protocol

log = logging.getLogger("fourcorner.workers")


class Worker(Protocol):
    async def run(self, stop: asyncio.Event) -> None: ...


class WorkerLoops:
    def __init__(self) -> None:
        self._tasks: list[asyncio.Task[None]] = []
        self._stops: list[asyncio.Event] = []
        # why the loops have not started yet, in a few words; None once started (``start``)
        self.waiting: str | None = None

    def start(self, workers: Iterable[Worker], stop: asyncio.Event) -> list[asyncio.Task[None]]:
        """Each worker's ``run(stop)`` started as a task on the running loop, watched."""
        self._stops.append(stop)
        self.waiting = None
        tasks = [asyncio.create_task(w.run(stop), name=type(w).__name__) for w in workers]
        for task in tasks:
            task.add_done_callback(self._report)
        self._tasks.extend(tasks)
        return tasks

    def stopping(self) -> bool:
        return any(stop.is_set() for stop in self._stops)

    def ended(self) -> list[str]:
        """The names of the loops that have ended while the process is not stopping."""
        if self.stopping():
            return []
        return [task.get_name() for task in self._tasks if task.done()]

    def _report(self, task: asyncio.Task[None]) -> None:
        if self.stopping() or task.cancelled():
            return
        error = task.exception()
        log.error(
            "a worker loop ended: its work waits for another process's workers",
            exc_info=error,
            extra={"event": "worker.ended", "loop": task.get_name()},
        )
