"""The storage port on PostgreSQL: psycopg 3 (async) and a ``psycopg_pool`` connection pool.

Many API processes and workers may share one database; migrations are applied on ``open()``
and serialised across processes by an advisory lock.

A unit of work takes a connection from the pool in ``__aenter__`` and returns it in
``__aexit__``, rolling back whatever was not committed; it commits and rolls back itself
(psycopg's connection context manager, which commits on exit, is not used). Connections are
in autocommit mode and a transaction is opened lazily, to spend as few round trips as
possible:

- a unit of work that sends nothing costs nothing, and reads before the first write run as
  single statements, one round trip each: at READ COMMITTED every statement takes its own
  snapshot anyway, so wrapping reads in BEGIN/COMMIT would add two round trips and nothing
  else. Such reads hold nothing: a decision that must still hold at commit takes its
  records with ``lock``/``lock_many`` (``FOR UPDATE``, which begins the transaction) first;
- the first write goes out pipelined with its ``BEGIN`` (one round trip), later statements
  run in that transaction, and ``commit()`` sends ``COMMIT`` only when one was begun;
- ``add`` is ``INSERT ... ON CONFLICT DO NOTHING`` and never breaks the transaction; an
  ``update`` (``UPDATE ... WHERE id``: a row removed meanwhile is not found, never inserted
  again) that may clash with a unique group runs inside a savepoint, pipelined with it, so a
  ``Conflict`` leaves the unit of work usable, as in the other adapters.

``reader()`` units of work answer reads of the collections in ``adapters.sql.cache`` from this
process's ``RecordCache``: a commit that wrote one of them sends ``pg_notify`` on the
``fourcorner_records`` channel (pipelined with ``COMMIT``, so no extra round trip), and a
listener connection of every process (``LISTEN``, TCP keepalives on) clears the named
collections when the notification arrives. While the listener is down the cache is suspended.
A reader takes a pooled connection only when something misses the cache.

The SQL text of every statement depends only on its shape, so psycopg prepares each one on a
connection after ``prepare_threshold`` uses; transaction control (``BEGIN``, ``COMMIT``,
savepoints) is never prepared, which would only cost a round trip. ``psycopg.errors.UniqueViolation`` becomes
``domain.errors.Conflict``, text holding U+0000 (which PostgreSQL cannot store) becomes
``domain.errors.InvalidInput``, and every other ``psycopg.Error`` (connection lost, pool
exhausted, server shutting down) becomes ``domain.errors.ServiceUnavailable``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
import uuid
from collections.abc import Callable, Iterable, Sequence
from types import TracebackType
from typing import Any, Self, TypeVar

import psycopg
from psycopg import errors, sql
from psycopg.pq import TransactionStatus
from psycopg_pool import AsyncConnectionPool, PoolTimeout

from fourcorner.adapters.changes import Watchers
from fourcorner.adapters.sql import migrations
from fourcorner.adapters.sql.cache import RecordCache
from fourcorner.adapters.sql.codec import make_converter
from fourcorner.adapters.sql.dialect import POSTGRES
from fourcorner.adapters.sql.migrations import Migration
from fourcorner.adapters.sql.repository import SqlRepository
from fourcorner.adapters.sql.table import Tables
from fourcorner.application.storage import Collection
from fourcorner.domain.errors import Conflict, DomainError, InvalidInput, ServiceUnavailable

T = TypeVar("T")
Connection = psycopg.AsyncConnection[Any]

_SCHEMA = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,62}$")
_SAVEPOINT = "fourcorner_write"
CHANNEL = "fourcorner_records"
_NOTIFY = "SELECT pg_notify(%s, %s)"
log = logging.getLogger("fourcorner.storage")


def _translate(e: psycopg.Error) -> DomainError:
    if isinstance(e, errors.UniqueViolation):
        return Conflict(reason="a record with this id or unique key exists")
    if isinstance(e, psycopg.DataError) and "NUL" in str(e):
        # PostgreSQL text cannot hold U+0000 (SQLite and memory can): refuse the value.
        return InvalidInput.one("$", "text may not contain the character U+0000")
    if isinstance(e, PoolTimeout):
        return ServiceUnavailable(reason="no database connection came free in time")
    if isinstance(e, psycopg.OperationalError | psycopg.InterfaceError):
        return ServiceUnavailable(reason="the database cannot be reached")
    return ServiceUnavailable(reason="the database refused a statement")


class PostgresStorage:
    """State in the PostgreSQL database at ``url`` (a libpq URL or conninfo string).

    ``schema``: keep the tables in this schema (created when missing) by setting the
    connections' ``search_path``; otherwise the server's default applies. ``timeout``
    bounds opening the pool and waiting for a free connection, in seconds. ``cache``: keep
    records for ``reader()`` units of work (module docstring). ``announce``: collections whose
    added records are announced to the other processes, for their ``watch``ers.
    """

    def __init__(
        self,
        url: str,
        *,
        schema: str | None = None,
        min_size: int = 1,
        max_size: int = 10,
        timeout: float = 10.0,
        cache: bool = True,
        announce: Iterable[str] = (),
    ) -> None:
        if schema is not None and not _SCHEMA.match(schema):
            raise ValueError(f"schema {schema!r} is not a plain identifier")
        self._url = url
        self._schema = schema
        self._min_size = min_size
        self._max_size = max_size
        self._timeout = timeout
        self._pool: AsyncConnectionPool[Connection] | None = None
        self._tables = Tables(POSTGRES)
        self._converter = make_converter()
        # suspended until the listener is connected
        self._cache = RecordCache(enabled=False) if cache else None
        self._listener: asyncio.Task[None] | None = None
        self._listening = asyncio.Event()
        self._sender = uuid.uuid4().hex[:12]
        self._watchers = Watchers()
        self._announced = frozenset(announce)

    @property
    def schema(self) -> str | None:
        return self._schema

    @property
    def cache(self) -> RecordCache | None:
        return self._cache

    def unit_of_work(self) -> PostgresUnitOfWork:
        return PostgresUnitOfWork(self)

    def watch(self, collections: Iterable[str], callback: Callable[[], None]) -> None:
        """Commits of this process, and of others for the collections they announce."""
        self._watchers.add(collections, callback)

    def reader(self) -> PostgresUnitOfWork:
        return PostgresUnitOfWork(self, reading=True)

    @property
    def listening(self) -> bool:
        """Whether the record cache's listener is connected (the cache in use)."""
        return self._listening.is_set()

    async def wait_listening(self) -> None:
        await self._listening.wait()

    def _channel_payload(self, cleared: set[str], woken: set[str]) -> str:
        """``<schema>:<sender>:<collections to clear>:<collections added to>``: listeners of
        other schemas ignore it, and so does this storage's own (it acted at commit)."""
        return (
            f"{self._schema or ''}:{self._sender}:"
            f"{','.join(sorted(cleared))}:{','.join(sorted(woken))}"
        )

    async def _listen(self, cache: RecordCache | None) -> None:
        """Clear cached collections as other processes' commits are announced; reconnect with
        a growing pause when the connection fails, the cache suspended meanwhile."""
        pause = 0.1
        kwargs = self._connect_kwargs() | {
            "keepalives": 1,
            "keepalives_idle": 5,
            "keepalives_interval": 2,
            "keepalives_count": 2,
            "application_name": f"fourcorner-listener:{self._schema or ''}",
        }
        schema = f"{self._schema or ''}:"
        own = f"{schema}{self._sender}:"
        while True:
            try:
                conn = await psycopg.AsyncConnection.connect(
                    self._url, connect_timeout=max(1, int(self._timeout)), **kwargs
                )
                async with conn:
                    await conn.execute(f"LISTEN {CHANNEL}")
                    if cache is not None:
                        cache.resume()
                    self._listening.set()
                    pause = 0.1
                    async for note in conn.notifies():
                        payload = note.payload
                        if payload.startswith(schema) and not payload.startswith(own):
                            _, _, cleared, woken = payload.rsplit(":", 3)
                            if cache is not None and cleared:
                                cache.invalidate(cleared.split(","))
                            if woken:
                                self._watchers.changed(woken.split(","))
            except (psycopg.Error, OSError) as e:
                log.warning("the record cache's listener lost its connection: %s", e)
            finally:
                self._listening.clear()
                if cache is not None:
                    cache.suspend()
            await asyncio.sleep(pause)
            pause = min(pause * 2, 5.0)

    def _connect_kwargs(self) -> dict[str, Any]:
        kwargs: dict[str, Any] = {"autocommit": True}
        if self._schema is not None:
            kwargs["options"] = f"-c search_path={self._schema}"
        return kwargs

    async def open(self) -> None:
        """Open the pool (waiting for its first connection) and apply pending migrations."""
        if self._pool is not None:
            return
        pool: AsyncConnectionPool[Connection] = AsyncConnectionPool(
            self._url,
            min_size=self._min_size,
            max_size=self._max_size,
            kwargs=self._connect_kwargs(),
            timeout=self._timeout,
            open=False,
            name="fourcorner",
        )
        try:
            await pool.open(wait=True, timeout=self._timeout)
            conn = await pool.getconn()
            try:
                await _migrate(conn, self._schema)
            finally:
                await pool.putconn(conn)
        except BaseException as e:
            await pool.close()
            if isinstance(e, psycopg.Error):
                raise _translate(e) from e
            raise
        self._pool = pool
        if self._cache is not None or self._announced:
            self._listener = asyncio.create_task(self._listen(self._cache))

    async def migrate(self) -> list[Migration]:
        """Apply the pending migrations (for ``fourcorner migrate``); return those applied.
        Works whether or not the storage is open."""
        try:
            if self._pool is not None:
                conn = await self._pool.getconn()
                try:
                    return await _migrate(conn, self._schema)
                finally:
                    await self._pool.putconn(conn)
            connection = await psycopg.AsyncConnection.connect(
                self._url, connect_timeout=max(1, int(self._timeout)), **self._connect_kwargs()
            )
            try:
                return await _migrate(connection, self._schema)
            finally:
                await connection.close()
        except psycopg.Error as e:
            raise _translate(e) from e

    async def ping(self) -> None:
        pool = self._open_pool()
        try:
            conn = await pool.getconn()
            try:
                await conn.execute("SELECT 1")
            finally:
                await pool.putconn(conn)
        except psycopg.Error as e:
            raise _translate(e) from e

    async def close(self) -> None:
        listener, self._listener = self._listener, None
        if listener is not None:
            listener.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await listener
        pool, self._pool = self._pool, None
        if pool is not None:
            await pool.close()

    def _open_pool(self) -> AsyncConnectionPool[Connection]:
        if self._pool is None:
            raise ServiceUnavailable(reason="the database is not open")
        return self._pool


class PostgresUnitOfWork:
    """``reading``: a ``reader()`` unit of work (cached reads, no writes, a connection only
    when a read misses)."""

    def __init__(self, storage: PostgresStorage, *, reading: bool = False) -> None:
        self._storage = storage
        self._reading = reading
        self._cache = storage._cache if reading else None
        self._pool: AsyncConnectionPool[Connection] | None = None
        self._conn: Connection | None = None
        self._in_transaction = False
        self._written: set[str] = set()
        self._added: set[str] = set()

    async def __aenter__(self) -> Self:
        pool = self._storage._open_pool()
        self._pool = pool
        self._in_transaction = False
        self._written, self._added = set(), set()
        if not self._reading:
            await self._acquire(pool)
        return self

    async def _acquire(self, pool: AsyncConnectionPool[Connection]) -> Connection:
        try:
            conn = self._conn = await pool.getconn()
        except psycopg.Error as e:
            raise _translate(e) from e
        return conn

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        conn, pool = self._conn, self._pool
        self._conn = self._pool = None
        self._in_transaction = False
        self._written, self._added = set(), set()
        if conn is None or pool is None:
            return
        try:
            if conn.info.transaction_status is not TransactionStatus.IDLE:
                await conn.execute("ROLLBACK", prepare=False)
        except psycopg.Error:
            pass  # the connection is broken; the pool discards it
        finally:
            await pool.putconn(conn)

    def repository(self, collection: Collection[T]) -> SqlRepository[T]:
        storage = self._storage
        return SqlRepository(self, storage._tables(collection), storage._converter, self._cache)

    def _connection(self) -> Connection:
        if self._conn is None:
            raise RuntimeError("a unit of work is used inside `async with uow:` only")
        return self._conn

    async def _connected(self) -> Connection:
        if self._conn is not None:
            return self._conn
        if self._pool is None:
            raise RuntimeError("a unit of work is used inside `async with uow:` only")
        return await self._acquire(self._pool)

    def wrote(self, collection: str, *, added: bool = False) -> None:
        if self._reading:
            raise RuntimeError("a reader() unit of work cannot write")
        self._written.add(collection)
        if added:
            self._added.add(collection)

    async def commit(self) -> None:
        if self._reading:
            return
        conn = self._connection()
        if not self._in_transaction:
            return
        self._in_transaction = False
        written, self._written = self._written, set()
        added, self._added = self._added, set()
        cache = self._storage._cache
        cleared = written & cache.collections if cache is not None else set()
        woken = added & self._storage._announced
        try:
            if conn.info.transaction_status is TransactionStatus.INERROR:
                # COMMIT would quietly roll back; say so instead.
                await conn.execute("ROLLBACK", prepare=False)
                raise ServiceUnavailable(reason="the transaction failed and was rolled back")
            if cleared or woken:
                # announced in the transaction: delivered to the listeners at commit
                payload = self._storage._channel_payload(cleared, woken)
                async with conn.pipeline():
                    await conn.execute(_NOTIFY, (CHANNEL, payload))
                    await conn.execute("COMMIT", prepare=False)
            else:
                await conn.execute("COMMIT", prepare=False)
        except psycopg.Error as e:
            raise _translate(e) from e
        finally:
            if written and self._storage._cache is not None:
                # also when COMMIT's outcome is unknown (connection lost)
                self._storage._cache.invalidate(written)
        self._storage._watchers.changed(added)

    async def rollback(self) -> None:
        self._written, self._added = set(), set()
        if self._conn is None and self._reading:
            return
        conn = self._connection()
        self._in_transaction = False
        if conn.info.transaction_status is TransactionStatus.IDLE:
            return
        try:
            await conn.execute("ROLLBACK", prepare=False)
        except psycopg.Error as e:
            raise _translate(e) from e

    async def fetch(
        self, query: str, params: Sequence[object], *, locking: bool = False
    ) -> list[tuple[Any, ...]]:
        if self._reading:
            if locking:
                raise RuntimeError("a reader() unit of work cannot lock records")
            conn = await self._connected()
        else:
            conn = self._connection()
        if locking and not self._in_transaction:
            # Row locks last as long as the transaction: without one they would end with
            # the statement. Begin it with this query, in one round trip.
            try:
                async with conn.pipeline():
                    await conn.execute("BEGIN", prepare=False)
                    cursor = await conn.execute(query, params)
                rows = await cursor.fetchall()
            except psycopg.Error as e:
                await self._abandon(conn)
                raise _translate(e) from e
            self._in_transaction = True
            return rows
        try:
            cursor = await conn.execute(query, params)
            return await cursor.fetchall()
        except psycopg.Error as e:
            raise _translate(e) from e

    async def write(self, query: str, params: Sequence[object], *, may_clash: bool) -> int:
        if self._reading:
            raise RuntimeError("a reader() unit of work cannot write")
        conn = self._connection()
        if not self._in_transaction:
            try:
                async with conn.pipeline():
                    await conn.execute("BEGIN", prepare=False)
                    cursor = await conn.execute(query, params)
            except psycopg.Error as e:
                await self._abandon(conn)  # the transaction held this statement only
                raise _translate(e) from e
            self._in_transaction = True
            return cursor.rowcount
        if not may_clash:
            try:
                return (await conn.execute(query, params)).rowcount
            except psycopg.Error as e:
                raise _translate(e) from e
        try:
            async with conn.pipeline():
                await conn.execute(f"SAVEPOINT {_SAVEPOINT}", prepare=False)
                cursor = await conn.execute(query, params)
                await conn.execute(f"RELEASE SAVEPOINT {_SAVEPOINT}", prepare=False)
        except errors.UniqueViolation as e:
            try:
                await conn.execute(
                    f"ROLLBACK TO SAVEPOINT {_SAVEPOINT}; RELEASE SAVEPOINT {_SAVEPOINT}",
                    prepare=False,
                )
            except psycopg.Error as again:
                raise _translate(again) from again
            raise _translate(e) from e
        except psycopg.Error as e:
            raise _translate(e) from e
        return cursor.rowcount

    async def write_many(self, query: str, rows: Sequence[Sequence[object]]) -> int:
        if self._reading:
            raise RuntimeError("a reader() unit of work cannot write")
        conn = self._connection()
        try:
            if not self._in_transaction:
                await conn.execute("BEGIN", prepare=False)
                self._in_transaction = True
            async with conn.cursor() as cursor:
                await cursor.executemany(query, rows)  # pipelined: one round trip, about
                return cursor.rowcount  # the sum over the rows
        except psycopg.Error as e:
            raise _translate(e) from e

    async def _abandon(self, conn: Connection) -> None:
        self._in_transaction = False
        try:
            if conn.info.transaction_status is not TransactionStatus.IDLE:
                await conn.execute("ROLLBACK", prepare=False)
        except psycopg.Error:
            pass  # broken: the error being raised already says the database is unavailable


class _Migrations:
    """``adapters.sql.migrations.MigrationTarget`` on one autocommit connection."""

    def __init__(self, conn: Connection, schema: str | None) -> None:
        self._conn = conn
        self._schema = schema

    async def begin(self) -> None:
        await self._conn.execute("BEGIN", prepare=False)
        # One lock per schema: migrators of other schemas (test runs) do not wait on us.
        await self._conn.execute(
            "SELECT pg_advisory_xact_lock(hashtext(%s))",
            (f"fourcorner.migrations:{self._schema or ''}",),
        )

    async def prepare(self) -> None:
        if self._schema is not None:
            cursor = await self._conn.execute(
                "SELECT 1 FROM pg_namespace WHERE nspname = %s", (self._schema,)
            )
            if await cursor.fetchone() is None:
                await self._conn.execute(
                    sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(self._schema))
                )
        await self._conn.execute(
            "CREATE TABLE IF NOT EXISTS schema_migrations ("
            "version INTEGER PRIMARY KEY, name TEXT NOT NULL, "
            "applied_at TIMESTAMPTZ NOT NULL DEFAULT now())"
        )

    async def applied(self) -> set[int]:
        cursor = await self._conn.execute("SELECT version FROM schema_migrations")
        return {row[0] for row in await cursor.fetchall()}

    async def apply(self, migration: Migration) -> None:
        await self._conn.execute(migration.sql.encode(), prepare=False)  # one simple query
        await self._conn.execute(
            "INSERT INTO schema_migrations (version, name) VALUES (%s, %s)",
            (migration.version, migration.name),
        )

    async def commit(self) -> None:
        await self._conn.execute("COMMIT", prepare=False)

    async def rollback(self) -> None:
        if self._conn.info.transaction_status is not TransactionStatus.IDLE:
            await self._conn.execute("ROLLBACK", prepare=False)


async def _migrate(conn: Connection, schema: str | None) -> list[Migration]:
    try:
        return await migrations.apply_pending(
            _Migrations(conn, schema), migrations.load("postgres")
        )
    except psycopg.Error as e:
        raise ServiceUnavailable(reason="migrating the database failed") from e
