"""The storage port on SQLite: one file, one connection, one unit of work at a time.

``SqliteStorage`` opens a single ``sqlite3`` connection in ``open()`` (WAL journal,
``synchronous=NORMAL``, foreign keys on, a 5 s busy timeout, explicit transactions) and
applies the pending migrations. Units of work are serialised in this process by an
``asyncio.Lock`` held from ``__aenter__`` to ``__aexit__``; the first write (or locking read)
of each starts ``BEGIN IMMEDIATE`` (so a transaction never has to upgrade its lock and fail),
and it ends with ``COMMIT`` or ``ROLLBACK``; plain reads before that run on their own.

Driver calls run synchronously on the event loop: they take tens of microseconds, less than
handing them to a thread would. The price is that everything waits while a unit of work is
open, so **never do network I/O (or any other slow await) inside a unit of work** on this
adapter: read, decide, write, commit, and talk to the outside world afterwards. Waiting for
another process's write lock (up to the busy timeout) also blocks the loop; one process per
database file is the intended use.

``reader()`` units of work answer reads of the collections in ``adapters.sql.cache`` from this
process's ``RecordCache``. A commit of this process that wrote one of them clears it; another
process's commits are noticed by ``PRAGMA data_version`` (``notice_other_writers``), which
then clears everything: at the start of every reader and of every ``read_stamp``, except that
one look serves the rest of the event loop's pass in which it was taken. A reader whose read misses takes the unit-of-work lock for that read
only, so opening a reader inside a unit of work of the same task raises ``RuntimeError``
rather than waiting for itself.

Driver errors are translated (``connection.translate``): a unique clash becomes
``domain.errors.Conflict``, every other ``sqlite3.Error`` (a locked or unreadable database, a
full disk) becomes ``domain.errors.ServiceUnavailable``; no ``sqlite3`` exception crosses the
port. ``connection`` opens the connection, ``migration`` is the migration target.
"""

from __future__ import annotations

import asyncio
import pathlib
import sqlite3
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Self, TypeVar

from fourcorner.adapters.changes import Watchers
from fourcorner.adapters.sql.cache import RecordCache
from fourcorner.adapters.sql.dialect import SQLITE
from fourcorner.adapters.sql.migrations import Migration
from fourcorner.adapters.sql.repository import Repositories, SqlRepository
from fourcorner.adapters.sqlite.connection import connect, translate
from fourcorner.adapters.sqlite.migration import migrate
from fourcorner.application.storage import Collection, UnitOfWorkEnd
from fourcorner.domain.errors import DomainError, ServiceUnavailable

T = TypeVar("T")


class SqliteStorage:
    """All state in one SQLite file at ``path`` (its directory is created when missing)."""

    def __init__(self, path: str | pathlib.Path, *, cache: bool = True) -> None:
        self._path = pathlib.Path(path)
        self._conn: sqlite3.Connection | None = None
        self._lock = asyncio.Lock()
        self._cache = RecordCache() if cache else None
        self.repositories = Repositories(SQLITE, self._cache)
        self._data_version: int | None = None
        self._version_cursor: sqlite3.Cursor | None = None  # asks PRAGMA data_version
        # the event loop in whose current pass data_version was looked at (``None``: look)
        self._looked_in: asyncio.AbstractEventLoop | None = None
        self._holder: asyncio.Task[Any] | None = None  # the task inside a unit of work
        self._watchers = Watchers()

    def watch(self, collections: Iterable[str], callback: Callable[[], None]) -> None:
        """This process's commits only: other processes' are seen by polling."""
        self._watchers.add(collections, callback)

    @property
    def cache(self) -> RecordCache | None:
        return self._cache

    def reader(self) -> SqliteReader:
        return SqliteReader(self)

    def read_stamp(self) -> int | None:
        """The record cache's stamp, after a look for other connections' commits."""
        if self._cache is None:
            return None
        self.notice_other_writers()
        return self._cache.stamp()

    def notice_other_writers(self) -> None:
        """Clear the cache if another connection committed since the last look.

        A look (``PRAGMA data_version``: about 11k instructions and two ``fcntl`` calls,
        SQLite's read lock on the WAL index taken and let go) serves every caller until the
        event loop has run the callbacks that were ready when it was taken: it schedules one
        more (``call_soon``) that ends it. The loop runs ready callbacks first in, first out,
        and a request read from a socket after the look reaches its handler through a callback
        queued after that one (a task woken by the protocol's ``data_received``); so whoever
        is served by a look is handling a request that had arrived before it, and sees every
        commit made before that request was sent, as a look of its own would have shown. Under
        load a pass handles many requests, and they share one look. Outside an event loop,
        every call looks."""
        cache = self._cache
        if cache is None:
            return
        loop = asyncio.events._get_running_loop()
        if loop is not None and loop is self._looked_in:
            return
        try:
            conn = self.connection()
            cursor = self._version_cursor
            if cursor is None or cursor.connection is not conn:  # one cursor: a little faster
                cursor = self._version_cursor = conn.cursor()
            version = cursor.execute("PRAGMA data_version").fetchone()[0]
        except sqlite3.Error as e:
            raise translate(e) from e
        if version != self._data_version:
            self._data_version = version
            cache.invalidate_all()
        if loop is not None:
            self._looked_in = loop
            loop.call_soon(self._pass_ended)

    def _pass_ended(self) -> None:
        self._looked_in = None

    async def hold(self) -> sqlite3.Connection:
        """Wait for the unit-of-work lock and take it for this task; the connection."""
        await self._lock.acquire()
        self._holder = asyncio.current_task()
        try:
            return self.connection()
        except BaseException:
            self.let_go()
            raise

    def let_go(self) -> None:
        self._holder = None
        self._lock.release()

    def held_here(self) -> bool:
        """Whether this very task holds the unit-of-work lock (its reads would wait for
        themselves)."""
        return self._holder is not None and self._holder is asyncio.current_task()

    async def read_committed(self, sql: str, params: Sequence[object]) -> list[tuple[Any, ...]]:
        """The rows of a query run under the unit-of-work lock, outside any transaction: what
        is committed."""
        if self.held_here():
            raise RuntimeError(
                "a reader() inside a unit of work of the same task would wait for it"
            )
        async with self._lock:
            try:
                return self.connection().execute(sql, params).fetchall()
            except sqlite3.Error as e:
                raise translate(e) from e

    def forget(self, written: Iterable[str]) -> None:
        """A commit (or its attempt) changed these collections: their cached records go."""
        if self._cache is not None:
            self._cache.invalidate(written)

    def wake(self, added: Iterable[str]) -> None:
        """A commit added records to these collections: tell their watchers."""
        self._watchers.changed(added)

    @property
    def path(self) -> pathlib.Path:
        return self._path

    def unit_of_work(self) -> SqliteUnitOfWork:
        return SqliteUnitOfWork(self)

    async def open(self) -> None:
        """Open the connection and apply the pending migrations."""
        if self._conn is not None:
            return
        conn = connect(self._path)
        try:
            await migrate(conn)
        except BaseException:
            conn.close()
            raise
        self._conn = conn

    async def migrate(self) -> list[Migration]:
        """Apply the pending migrations (for ``fourcorner migrate``); return those applied."""
        if self._conn is not None:
            async with self._lock:
                return await migrate(self._conn)
        conn = connect(self._path)
        try:
            return await migrate(conn)
        finally:
            conn.close()

    async def ping(self) -> None:
        conn = self._conn
        if conn is None:
            raise ServiceUnavailable(reason="the database is not open")
        try:
            conn.execute("SELECT 1").fetchall()
        except sqlite3.Error as e:
            raise translate(e) from e

    async def close(self) -> None:
        async with self._lock:
            conn, self._conn = self._conn, None
            if conn is None:
                return
            try:
                conn.execute("PRAGMA optimize")
            except sqlite3.Error:
                pass  # only a planner hint; closing matters more
            finally:
                conn.close()

    def connection(self) -> sqlite3.Connection:
        if self._conn is None:
            raise ServiceUnavailable(reason="the database is not open")
        return self._conn


class SqliteUnitOfWork(UnitOfWorkEnd):
    def __init__(self, storage: SqliteStorage) -> None:
        self._storage = storage
        self._conn: sqlite3.Connection | None = None
        self._begun_here = False  # this unit of work opened the transaction now open
        self._lost = False  # SQLite rolled the transaction back itself (disk full, I/O)
        self._written: set[str] = set()  # collections this transaction changed
        self._added: set[str] = set()  # ... and added records to

    async def __aenter__(self) -> Self:
        self._conn = await self._storage.hold()
        self._begun_here = self._lost = False
        self._written, self._added = set(), set()
        return self

    async def discard(self) -> None:
        await self.rollback()

    async def release(self) -> None:
        self._conn = None
        self._storage.let_go()

    async def commit(self) -> None:
        written, self._written = self._written, set()
        added, self._added = self._added, set()
        try:
            if self._lost:
                self._lost = False
                raise ServiceUnavailable(reason="the transaction failed and was rolled back")
            self._end("COMMIT")
        finally:
            if written:
                self._storage.forget(written)
        self._storage.wake(added)

    async def rollback(self) -> None:
        self._lost = False
        self._written, self._added = set(), set()
        self._end("ROLLBACK")

    def wrote(self, collection: str, *, added: bool = False) -> None:
        self._written.add(collection)
        if added:
            self._added.add(collection)

    def repository(self, collection: Collection[T]) -> SqlRepository[T]:
        return self._storage.repositories(self, collection)

    def _end(self, statement: str) -> None:
        conn = self._conn
        self._begun_here = False
        if conn is None or not conn.in_transaction:
            return
        try:
            conn.execute(statement)
        except sqlite3.Error as e:
            raise translate(e) from e

    def _begun(self) -> sqlite3.Connection:
        conn = self._conn
        if conn is None:
            raise RuntimeError("a unit of work is used inside `async with uow:` only")
        if self._lost:
            raise ServiceUnavailable(reason="the transaction failed and was rolled back")
        if not conn.in_transaction:
            conn.execute("BEGIN IMMEDIATE")
            self._begun_here = True
        return conn

    def _failed(self, e: sqlite3.Error) -> DomainError:
        # Most failed statements are undone alone and the transaction carries on; after some
        # (a full disk, an I/O error) SQLite rolls the whole transaction back. Then the unit
        # of work must not carry on in a new transaction as if its earlier writes stood.
        conn = self._conn
        if self._begun_here and conn is not None and not conn.in_transaction:
            self._begun_here = False
            self._lost = True
        return translate(e)

    async def fetch(
        self, sql: str, params: Sequence[object], *, locking: bool = False
    ) -> list[tuple[Any, ...]]:
        # Reads before the first write need no transaction of their own: units of work of this
        # process never overlap, and a read that locks (lock, claim) begins one first, as a
        # write does. A unit of work that only reads costs no BEGIN and no COMMIT.
        conn = self._conn
        try:
            if not locking and conn is not None and not conn.in_transaction and not self._lost:
                return conn.execute(sql, params).fetchall()
            return self._begun().execute(sql, params).fetchall()
        except sqlite3.Error as e:
            raise self._failed(e) from e

    async def write(self, sql: str, params: Sequence[object], *, may_clash: bool) -> int:
        try:
            return self._begun().execute(sql, params).rowcount
        except sqlite3.Error as e:
            raise self._failed(e) from e

    async def write_many(self, sql: str, rows: Sequence[Sequence[object]]) -> int:
        try:
            return self._begun().executemany(sql, rows).rowcount
        except sqlite3.Error as e:
            raise self._failed(e) from e

    async def write_later(self, sql: str, params: Sequence[object]) -> None:
        await self.write(sql, params, may_clash=False)  # no round trip to save

    async def require(self, sql: str, params: Sequence[object], missing: DomainError) -> None:
        if not await self.fetch(sql, params):  # no round trip to save
            raise missing

    async def bulk(self, sql: str, rows: Sequence[Sequence[object]]) -> None:
        await self.write_many(sql, rows)  # inside the unit of work's one transaction


class SqliteReader(UnitOfWorkEnd):
    """A ``reader()`` unit of work: a cache hit takes no lock; a miss reads under the
    unit-of-work lock, outside any transaction, so only committed records are cached."""

    def __init__(self, storage: SqliteStorage) -> None:
        self._storage = storage

    async def __aenter__(self) -> Self:
        if self._storage.held_here():
            # its reads would wait for the lock this very task holds
            raise RuntimeError("a reader() inside a unit of work of the same task")
        self._storage.notice_other_writers()
        return self

    async def commit(self) -> None:
        return None

    async def rollback(self) -> None:
        return None

    def repository(self, collection: Collection[T]) -> SqlRepository[T]:
        return self._storage.repositories(self, collection, cached=True)

    async def fetch(
        self, sql: str, params: Sequence[object], *, locking: bool = False
    ) -> list[tuple[Any, ...]]:
        if locking:
            raise RuntimeError("a reader() unit of work cannot lock records")
        return await self._storage.read_committed(sql, params)

    async def write(self, sql: str, params: Sequence[object], *, may_clash: bool) -> int:
        raise RuntimeError("a reader() unit of work cannot write")

    async def write_many(self, sql: str, rows: Sequence[Sequence[object]]) -> int:
        raise RuntimeError("a reader() unit of work cannot write")

    async def write_later(self, sql: str, params: Sequence[object]) -> None:
        raise RuntimeError("a reader() unit of work cannot write")

    async def require(self, sql: str, params: Sequence[object], missing: DomainError) -> None:
        raise RuntimeError("a reader() unit of work cannot write")

    async def bulk(self, sql: str, rows: Sequence[Sequence[object]]) -> None:
        raise RuntimeError("a reader() unit of work cannot write")

    def wrote(self, collection: str, *, added: bool = False) -> None:
        raise RuntimeError("a reader() unit of work cannot write")
