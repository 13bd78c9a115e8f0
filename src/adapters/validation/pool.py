"""Worker processes for validation, driven by a thread pool sized to the cores.

Each thread of the pool owns one worker process (``adapters.validation.worker``), started the
first time the thread is given a document, and waits for its answer on a pipe, without the
GIL: the event loop runs on while documents are checked, and as many are checked at once as
there are threads. A worker that takes longer than ``timeout`` is killed; one that died is
replaced before the next document; either way the caller gets ``ServiceUnavailable``. Workers
are started with ``spawn`` (a fresh interpreter: no inherited threads, locks or Saxon state)
and end when the pool closes, or when the server's process ends and their pipe closes.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from fourcorner.adapters.validation import worker
from fourcorner.domain.errors import ServiceUnavailable

_CONTEXT = multiprocessing.get_context("spawn")
CLOSED = "the validator is shutting down"


def cores() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


class _Stopped(Exception):
    pass


class _Worker:
    def __init__(self, rules_dir: Path) -> None:
        ours, theirs = _CONTEXT.Pipe()
        self.process = _CONTEXT.Process(
            target=worker.serve,
            args=(theirs, str(rules_dir)),
            name="fourcorner-validation",
            daemon=True,
        )
        self.process.start()
        theirs.close()
        self.conn: Connection = ours

    def ask(self, request: Any, timeout: float) -> Any:
        try:
            self.conn.send(request)
            if not self.conn.poll(timeout):
                raise _Stopped(f"checking the document took longer than {timeout:g} s")
            return self.conn.recv()
        except (EOFError, OSError):
            raise _Stopped("the validation worker stopped while checking the document") from None

    def stop(self) -> None:
        """Kill the process (it keeps no state); a thread waiting on its answer then reads the
        end of the pipe at once. The pipe is left to that thread, or to the collector: closing
        it here, under a thread that waits on it, would leave that thread waiting."""
        self.process.kill()
        self.process.join()


class WorkerPool:
    """``await pool.call(request)``: the worker's answer to ``request``."""

    def __init__(self, size: int, timeout: float, rules_dir: Path) -> None:
        self.size = size
        self.timeout = timeout
        self._dir = rules_dir
        self._threads = ThreadPoolExecutor(size, thread_name_prefix="validation")
        self._local = threading.local()
        self._lock = threading.Lock()
        self._workers: set[_Worker] = set()
        self._closed = False

    async def call(self, request: Any) -> Any:
        try:
            future = self._threads.submit(self._call, request)
        except RuntimeError:  # closed
            raise ServiceUnavailable(reason=CLOSED) from None
        return await asyncio.wrap_future(future)

    def _call(self, request: Any) -> Any:
        current = self._worker()
        try:
            return current.ask(request, self.timeout)
        except _Stopped as e:
            self._retire(current)
            raise ServiceUnavailable(reason=str(e)) from None

    def _worker(self) -> _Worker:
        current: _Worker | None = getattr(self._local, "worker", None)
        if current is not None and not current.process.is_alive():
            self._retire(current)
            current = None
        if current is None:
            with self._lock:
                if self._closed:
                    raise ServiceUnavailable(reason=CLOSED)
                current = _Worker(self._dir)
                self._workers.add(current)
            self._local.worker = current
        return current

    def _retire(self, current: _Worker) -> None:
        self._local.worker = None
        with self._lock:
            self._workers.discard(current)
        current.stop()
        current.conn.close()

    @property
    def closed(self) -> bool:
        return self._closed

    def pids(self) -> list[int]:
        """The process ids of the running workers."""
        with self._lock:
            return [w.process.pid for w in self._workers if w.process.pid is not None]

    def close(self) -> None:
        """Stop every worker; a document being checked is answered ``ServiceUnavailable``."""
        with self._lock:
            self._closed = True
            workers, self._workers = self._workers, set()
        for w in workers:
            w.stop()
        self._threads.shutdown(wait=False, cancel_futures=True)
