"""Worker processes for validation, whose answers the event loop reads itself.

The pool starts up to ``size`` worker processes (``adapters.validation.worker``), each the
first time a document finds no idle one, and gives each document to one idle worker; a
document that finds none waits for the first to be free. The request is written to the
worker's pipe and its answer read from it by the event loop (the pipe is watched while the
worker checks, and read as it becomes readable): no thread is woken per document, and the
event loop runs on while documents are checked. A request larger than the pipe's buffer is
written by a thread, which would otherwise block the loop while the worker reads it.

A worker that takes longer than ``timeout`` is killed; one that died is replaced before the
next document; either way the caller gets ``ServiceUnavailable``. A caller that stops waiting
leaves its worker to finish: the answer is read and dropped, and the worker serves the next
document. A document that waits for a worker waits in one of two queues: one asked for
with ``low_priority`` (a check by hand, ``POST /validation``) is given a worker only when no
other document waits, so the documents being sent and received never wait behind those checks,
however many come (at most the one being checked). Workers are started with ``spawn`` (a fresh interpreter: no inherited threads, locks
or Saxon state) and end when the pool closes, or when the server's process ends and their
pipe closes.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import os
import pickle
import struct
import threading
from collections import deque
from collections.abc import Callable
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from fourcorner.adapters.validation import worker
from fourcorner.domain.errors import ServiceUnavailable

_CONTEXT = multiprocessing.get_context("spawn")
CLOSED = "the validator is shutting down"
_DIED = "the validation worker stopped while checking the document"
_INLINE = 32 * 1024  # requests written by the event loop; a pipe holds at least 64 KiB
# bytes read from a worker's pipe at a time (a larger buffer is mapped and unmapped each time)
_READ = 64 * 1024


def cores() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def default_workers() -> int:
    """Validation processes when none are configured: one per core but one, at least one. The
    process that asks (serve's event loop, taking documents in and answering) and the others
    beside it need a core too: on 2 cores, the loop (serve, worker, PostgreSQL) with one
    validation process did 1.1x the transactions a second of two, at a third of the latency
    and 0.75x the validators' CPU a transaction (two processes of rules competing with the
    loop for the cores)."""
    return max(1, cores() - 1)


class _Stopped(Exception):
    pass


def _ignore(worker: _Worker, ok: bool) -> None:
    pass


class _Worker:
    """One worker process, its end of the pipe, and the document it is checking, if any."""

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
        self.fd = ours.fileno()
        self.loop: asyncio.AbstractEventLoop | None = None  # watching the pipe, while busy
        self.answer: asyncio.Future[Any] | None = None
        self._timer: asyncio.TimerHandle | None = None
        self._done: Callable[[_Worker, bool], None] = _ignore
        self._buffer = bytearray()

    def alive(self) -> bool:
        return self.process.is_alive()

    def ask(
        self, message: bytes, timeout: float, done: Callable[[_Worker, bool], None]
    ) -> asyncio.Future[Any]:
        """Send ``message`` (a pickled request); the future returned gets the answer (or
        ``_Stopped``), and ``done(self, ok)`` is called once the worker is free again (``ok``)
        or must go."""
        loop = asyncio.get_running_loop()
        self.loop, self._done = loop, done
        self.answer = loop.create_future()
        self._buffer.clear()
        self._timer = loop.call_later(timeout, self._late, timeout)
        if len(message) <= _INLINE:
            try:
                self.conn.send_bytes(message)
            except OSError:
                self._finish(_Stopped(_DIED))
                return self.answer
            loop.add_reader(self.fd, self._readable)
        else:
            sent = loop.run_in_executor(None, self.conn.send_bytes, message)
            sent.add_done_callback(self._sent)
        return self.answer

    def _sent(self, sent: asyncio.Future[None]) -> None:
        if self.answer is None or self.loop is None:  # stopped meanwhile
            return
        if sent.cancelled() or sent.exception() is not None:
            self._finish(_Stopped(_DIED))
        else:
            self.loop.add_reader(self.fd, self._readable)

    def _readable(self) -> None:
        try:
            chunk = os.read(self.fd, _READ)
        except OSError:
            chunk = b""
        if not chunk:
            self._finish(_Stopped(_DIED))
            return
        buffer = self._buffer
        buffer += chunk
        # the frame of ``Connection.send_bytes``: a 4-byte size, or -1 and an 8-byte size
        if len(buffer) < 4:
            return
        (size,) = struct.unpack_from("!i", buffer)
        start = 4
        if size == -1:
            if len(buffer) < 12:
                return
            (size,) = struct.unpack_from("!Q", buffer, 4)
            start = 12
        if len(buffer) < start + size:
            return
        try:
            value = pickle.loads(memoryview(buffer)[start : start + size])  # noqa: S301 - our worker
        except Exception as e:  # a worker that answers garbage must go
            self._finish(_Stopped(f"the validation worker answered badly: {e}"))
            return
        buffer.clear()
        self._finish(value)

    def _late(self, timeout: float) -> None:
        self._finish(_Stopped(f"checking the document took longer than {timeout:g} s"))

    def _finish(self, outcome: Any) -> None:
        """Hand ``outcome`` to the caller (if still waiting) and free or drop the worker."""
        answer, loop, timer = self.answer, self.loop, self._timer
        if answer is None:
            return
        self.answer = self.loop = self._timer = None
        if timer is not None:
            timer.cancel()
        if loop is not None and not loop.is_closed():
            loop.remove_reader(self.fd)
        stopped = isinstance(outcome, _Stopped)
        if not answer.done():
            if stopped:
                answer.set_exception(outcome)
            else:
                answer.set_result(outcome)
        self._done(self, not stopped)

    def fail(self, reason: str) -> None:
        """Stop waiting for the answer (the pool is closing): the caller gets ``reason``."""
        if self.answer is not None and self.loop is not None and not self.loop.is_closed():
            self.loop.call_soon_threadsafe(self._finish, _Stopped(reason))

    def stop(self) -> None:
        """Kill the process (it keeps no state) and wait for it to end."""
        self.process.kill()
        self.process.join()


class WorkerPool:
    """``await pool.call(request)``: a worker's answer to ``request``."""

    def __init__(self, size: int, timeout: float, rules_dir: Path) -> None:
        self.size = size
        self.timeout = timeout
        self._dir = rules_dir
        self._lock = threading.Lock()
        self._workers: set[_Worker] = set()
        self._idle: list[_Worker] = []
        # documents waiting for a worker: first those of intake and AS4 inbound, then the
        # ones asked for with ``low_priority``, each queue first come first served
        self._waiting: deque[asyncio.Future[_Worker | None]] = deque()
        self._waiting_low: deque[asyncio.Future[_Worker | None]] = deque()
        self._starting = 0
        self._closed = False

    async def call(self, request: Any, *, low_priority: bool = False) -> Any:
        """``low_priority``: given a worker only when no other request waits for one."""
        message = pickle.dumps(request, pickle.HIGHEST_PROTOCOL)  # before a worker is taken
        current = await self._acquire(low_priority)
        try:
            return await current.ask(message, self.timeout, self._release)
        except _Stopped as e:
            raise ServiceUnavailable(reason=CLOSED if self._closed else str(e)) from None

    async def _acquire(self, low_priority: bool = False) -> _Worker:
        while True:
            with self._lock:
                if self._closed:
                    raise ServiceUnavailable(reason=CLOSED)
                while self._idle:
                    current = self._idle.pop()
                    if current.alive():
                        return current
                    self._drop(current)
                start = len(self._workers) + self._starting < self.size
                if start:
                    self._starting += 1
                else:
                    waiter: asyncio.Future[_Worker | None] = (
                        asyncio.get_running_loop().create_future()
                    )
                    (self._waiting_low if low_priority else self._waiting).append(waiter)
            if start:
                return await self._start()
            try:
                given = await waiter
            except asyncio.CancelledError:
                late = waiter.result() if waiter.done() and not waiter.cancelled() else None
                if late is not None:
                    self._release(late, True)  # given, but no longer wanted
                raise
            if given is not None:
                return given
            # None: a worker went away; try again (perhaps starting one)

    async def _start(self) -> _Worker:
        start = asyncio.ensure_future(asyncio.to_thread(_Worker, self._dir))
        try:
            await asyncio.shield(start)
        except BaseException:  # failed, or cancelled: the worker made serves the next document
            start.add_done_callback(self._abandoned)
            raise
        current = self._started(start)
        if current is None:
            raise ServiceUnavailable(reason=CLOSED)
        return current

    def _started(self, start: asyncio.Future[_Worker]) -> _Worker | None:
        """The worker ``start`` made, now the pool's; None when it failed or the pool closed
        meanwhile (the worker is then stopped)."""
        made = None if start.cancelled() or start.exception() is not None else start.result()
        with self._lock:
            self._starting -= 1
            if made is not None:
                if not self._closed:
                    self._workers.add(made)
                    return made
                self._drop(made)
                return None
        self._wake(None)
        return None

    def _abandoned(self, start: asyncio.Future[_Worker]) -> None:
        """``start`` is done, but its caller stopped waiting: the worker (if made) goes to the
        next document."""
        current = self._started(start)
        if current is not None:
            self._release(current, True)

    def _release(self, current: _Worker, ok: bool) -> None:
        """``current`` is free (``ok``) or must go; the first document waiting gets it, or,
        when it went, a chance to start another."""
        if not ok:
            with self._lock:
                self._drop(current)
            self._wake(None)
            return
        with self._lock:
            if self._closed:  # stopped by ``close``
                current.conn.close()
                return
            waiter = self._next_waiting()
            if waiter is None:
                self._idle.append(current)
                return
        if not _give(waiter, current, self._free):
            self._release(current, True)  # its event loop is gone: the next one then

    def _free(self, current: _Worker) -> None:
        self._release(current, True)

    def _wake(self, given: _Worker | None) -> None:
        with self._lock:
            waiter = self._next_waiting()
        if waiter is not None:
            _give(waiter, given)

    def _next_waiting(self) -> asyncio.Future[_Worker | None] | None:
        """The request to serve next (the lock held), taken off its queue: the first of those
        waiting at the usual priority, else the first asked for with ``low_priority``; None
        when none waits (a caller that stopped waiting is passed over)."""
        for queue in (self._waiting, self._waiting_low):
            while queue:
                waiter = queue.popleft()
                if not waiter.done():
                    return waiter
        return None

    def _drop(self, current: _Worker) -> None:
        """Forget ``current`` (the lock held), kill it and close its pipe. A thread waits for
        the process to end: one in uninterruptible I/O ends only when that I/O does, and the
        event loop must not wait for it."""
        self._workers.discard(current)
        current.process.kill()
        current.conn.close()
        threading.Thread(target=current.process.join, name="fourcorner-reap", daemon=True).start()

    @property
    def closed(self) -> bool:
        return self._closed

    def pids(self) -> list[int]:
        """The process ids of the running workers."""
        with self._lock:
            return [w.process.pid for w in self._workers if w.process.pid is not None]

    def close(self) -> None:
        """Stop every worker; a document being checked, or waiting for a worker, is answered
        ``ServiceUnavailable``."""
        with self._lock:
            self._closed = True
            workers, self._workers = self._workers, set()
            idle, self._idle = self._idle, []
            waiting = [*self._waiting, *self._waiting_low]
            self._waiting, self._waiting_low = deque(), deque()
        for w in workers:
            w.stop()
            w.fail(CLOSED)  # a busy worker's pipe is closed once the loop stops watching it
        for w in idle:
            w.conn.close()
        for waiter in waiting:
            if not waiter.done():
                _give(waiter, ServiceUnavailable(reason=CLOSED))


def _give(waiter: asyncio.Future[Any], value: Any, unwanted: Any = None) -> bool:
    """Resolve ``waiter`` with ``value`` (an exception is raised in it), from any thread;
    False when its event loop is gone. ``unwanted(value)`` when it no longer waits."""
    loop = waiter.get_loop()
    if loop.is_closed():
        return False
    try:
        running: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
    except RuntimeError:
        running = None
    if running is loop:
        _resolve(waiter, value, unwanted)
    else:
        loop.call_soon_threadsafe(_resolve, waiter, value, unwanted)
    return True


def _resolve(waiter: asyncio.Future[Any], value: Any, unwanted: Any) -> None:
    if waiter.done():
        if unwanted is not None:
            unwanted(value)
        return
    if isinstance(value, BaseException):
        waiter.set_exception(value)
    else:
        waiter.set_result(value)
