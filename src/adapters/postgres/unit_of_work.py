"""The PostgreSQL adapter's unit of work: a pooled connection, a transaction opened lazily.

A unit of work takes a connection from the pool at its first statement (not in
``__aenter__``: one that first stores blobs in files, or a large blob in its own transaction,
holds none meanwhile) and returns it in ``__aexit__``, rolling back whatever was not committed; it commits and rolls back itself
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
- a change whose row count nobody reads (``write_later``: ``add_many``'s ``INSERT``) goes
  out pipelined with the next statement of the unit of work, a read, a write or ``COMMIT``
  (with its ``BEGIN``, when it is the first write);
- a check a change depends on (``require``: that a record is there) is put off the same way,
  as a statement that fails (a division by zero) when it finds nothing: the statement or
  the ``COMMIT`` it goes out with then raises the caller's error, and nothing is kept;
- ``add`` is ``INSERT ... ON CONFLICT DO NOTHING`` and never breaks the transaction; an
  ``update`` (``UPDATE ... WHERE id``: a row removed meanwhile is not found, never inserted
  again) that may clash with a unique group runs inside a savepoint, pipelined with it, so a
  ``Conflict`` leaves the unit of work usable, as in the other adapters.

A ``reader()`` unit of work answers reads of the cached collections from the storage's
``RecordCache`` and takes a pooled connection only when something misses the cache.

The SQL text of every statement depends only on its shape, so psycopg prepares each one on a
connection after ``prepare_threshold`` uses; transaction control (``BEGIN``, ``COMMIT``,
savepoints) is never prepared, which would only cost a round trip.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Self, TypeVar

import psycopg
from psycopg import errors
from psycopg.pq import TransactionStatus
from psycopg_pool import AsyncConnectionPool

from fourcorner.adapters.postgres.connection import (
    Connection,
    roll_back,
    roll_back_quietly,
    translate,
)
from fourcorner.adapters.postgres.listener import CHANNEL, NOTIFY
from fourcorner.adapters.sql.repository import PutOffClash, SqlRepository
from fourcorner.application.storage import Collection, UnitOfWorkEnd
from fourcorner.domain.errors import DomainError, ServiceUnavailable

if TYPE_CHECKING:
    from fourcorner.adapters.postgres.storage import PostgresStorage

T = TypeVar("T")
_SAVEPOINT = "fourcorner_write"
_BEGIN = "BEGIN"


class PostgresUnitOfWork(UnitOfWorkEnd):
    """``reading``: a ``reader()`` unit of work (cached reads, no writes, a connection only
    when a read misses)."""

    def __init__(self, storage: PostgresStorage, *, reading: bool = False) -> None:
        self._storage = storage
        self._reading = reading
        self._pool: AsyncConnectionPool[Connection] | None = None
        self._conn: Connection | None = None
        self._in_transaction = False
        self._written: set[str] = set()
        self._added: set[str] = set()
        # changes put off (``write_later``), sent before the next statement in its round trip
        self._later: list[tuple[str, Sequence[object]]] = []
        # what the check put off among them (``require``) raises when it finds nothing
        self._missing: DomainError | None = None

    async def __aenter__(self) -> Self:
        pool = self._storage.pool()
        self._pool = pool
        self._in_transaction = False
        self._written, self._added = set(), set()
        self._later, self._missing = [], None
        # a connection is taken at the first statement, not here: a unit of work that first
        # stores blobs elsewhere (files, a large blob's own transaction) holds none meanwhile
        return self

    async def _acquire(self, pool: AsyncConnectionPool[Connection]) -> Connection:
        try:
            conn = self._conn = await pool.getconn()
        except psycopg.Error as e:
            raise translate(e) from e
        return conn

    async def discard(self) -> None:
        self._written, self._added = set(), set()
        self._later, self._missing = [], None
        if self._conn is not None:
            await self._abandon(self._conn)
        self._in_transaction = False

    async def release(self) -> None:
        conn, pool = self._conn, self._pool
        self._conn = self._pool = None
        if conn is not None and pool is not None:
            await pool.putconn(conn)

    def writes_to(self, url: str, schema: str | None) -> bool:
        """Whether this unit of work writes to the database ``url`` (schema ``schema``): a
        blob store there may add its statements to its transaction (``write_later``)."""
        return not self._reading and self._storage.holds(url, schema)

    def repository(self, collection: Collection[T]) -> SqlRepository[T]:
        return self._storage.repositories(self, collection, cached=self._reading)

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
        if self._reading or not self._in_transaction:
            return
        conn = self._connection()
        self._in_transaction = False
        written, self._written = self._written, set()
        added, self._added = self._added, set()
        missing, self._missing = self._missing, None
        payload = self._storage.announcement(written, added)
        try:
            if conn.info.transaction_status is TransactionStatus.INERROR:
                # COMMIT would quietly roll back; say so instead.
                await roll_back(conn)
                raise ServiceUnavailable(reason="the transaction failed and was rolled back")
            if payload is not None or self._later:
                async with conn.pipeline():
                    await self._send_later(conn)
                    if payload is not None:
                        # announced in the transaction: delivered to the listeners at commit
                        await conn.execute(NOTIFY, (CHANNEL, payload))
                    await conn.execute("COMMIT", prepare=False)
            else:
                await conn.execute("COMMIT", prepare=False)
        except psycopg.Error as e:
            raise _failed(e, missing) from e
        finally:
            if written:  # also when COMMIT's outcome is unknown (connection lost)
                self._storage.forget(written)
        self._storage.wake(added)

    async def rollback(self) -> None:
        self._written, self._added = set(), set()
        self._later, self._missing = [], None
        if self._conn is None:  # no statement sent: nothing to roll back
            self._in_transaction = False
            return
        conn = self._conn
        self._in_transaction = False
        try:
            await roll_back(conn)
        except psycopg.Error as e:
            raise translate(e) from e

    async def fetch(
        self, query: str, params: Sequence[object], *, locking: bool = False
    ) -> list[tuple[Any, ...]]:
        if self._reading and locking:
            raise RuntimeError("a reader() unit of work cannot lock records")
        conn = await self._connected()
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
                raise translate(e) from e
            self._in_transaction = True
            return rows
        try:
            if self._later:
                async with conn.pipeline():
                    await self._send_later(conn)
                    cursor = await conn.execute(query, params)
            else:
                cursor = await conn.execute(query, params)
            return await cursor.fetchall()
        except psycopg.Error as e:
            raise _failed(e, self._missing) from e

    async def write_later(self, query: str, params: Sequence[object]) -> None:
        if self._reading:
            raise RuntimeError("a reader() unit of work cannot write")
        if not self._in_transaction:  # begun by the BEGIN that goes out first with it
            await self._connected()
            self._in_transaction = True
            self._later.append((_BEGIN, ()))
        self._later.append((query, params))

    async def require(self, query: str, params: Sequence[object], missing: DomainError) -> None:
        """Put off as ``write_later`` is: a statement that fails (a division by zero, which
        none of the others can raise) when ``query`` finds no row, so the statement or the
        commit it goes out with raises ``missing``. One such check at a time: while one is
        put off, another is read at once (with the first, which it sends)."""
        if self._reading:
            raise RuntimeError("a reader() unit of work cannot write")
        if self._missing is not None:
            if not await self.fetch(query, params):
                raise missing
            return
        # ``query`` is a repository's statement (its text from the table's columns only)
        await self.write_later(f"SELECT 1 / count(*) FROM ({query}) AS required", params)  # noqa: S608
        self._missing = missing

    async def _send_later(self, conn: Connection) -> None:
        """Inside a pipeline: the changes put off (and the BEGIN of a transaction one of them
        began), before the statement that follows them."""
        later, self._later = self._later, []
        for query, params in later:
            if query is _BEGIN:
                await conn.execute(query, prepare=False)
            else:
                await conn.execute(query, params)

    async def _flush(self, conn: Connection) -> None:
        """The changes put off, in a round trip of their own."""
        if self._later:
            try:
                async with conn.pipeline():
                    await self._send_later(conn)
            except psycopg.Error as e:
                raise _put_off(e, self._missing) from e

    async def write(self, query: str, params: Sequence[object], *, may_clash: bool) -> int:
        if self._reading:
            raise RuntimeError("a reader() unit of work cannot write")
        conn = await self._connected()
        if not self._in_transaction:
            try:
                async with conn.pipeline():
                    await conn.execute("BEGIN", prepare=False)
                    cursor = await conn.execute(query, params)
            except psycopg.Error as e:
                await self._abandon(conn)  # the transaction held this statement only
                raise translate(e) from e
            self._in_transaction = True
            return cursor.rowcount
        if not may_clash:
            try:
                if self._later:
                    try:
                        async with conn.pipeline():
                            await self._send_later(conn)
                            cursor = await conn.execute(query, params)
                    except psycopg.Error as e:
                        # this statement may not clash (may_clash=False): a clash is theirs
                        raise _put_off(e, self._missing) from e
                    return cursor.rowcount
                return (await conn.execute(query, params)).rowcount
            except psycopg.Error as e:
                raise translate(e) from e
        await self._flush(conn)  # a clash below must be this statement's
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
                raise translate(again) from again
            raise translate(e) from e
        except psycopg.Error as e:
            raise translate(e) from e
        return cursor.rowcount

    async def write_many(self, query: str, rows: Sequence[Sequence[object]]) -> int:
        if self._reading:
            raise RuntimeError("a reader() unit of work cannot write")
        conn = await self._connected()
        await self._flush(conn)
        try:
            if not self._in_transaction:
                await conn.execute("BEGIN", prepare=False)
                self._in_transaction = True
            async with conn.cursor() as cursor:
                await cursor.executemany(query, rows)  # pipelined: one round trip, about
                return cursor.rowcount  # the sum over the rows
        except psycopg.Error as e:
            raise translate(e) from e

    async def bulk(self, query: str, rows: Sequence[Sequence[object]]) -> None:
        """``COPY ... FROM STDIN`` in the unit of work's transaction: rows go out in text
        form, streamed, each column parsed by the server as its type."""
        if self._reading:
            raise RuntimeError("a reader() unit of work cannot write")
        conn = await self._connected()
        await self._flush(conn)
        try:
            if not self._in_transaction:
                await conn.execute("BEGIN", prepare=False)
                self._in_transaction = True
            async with conn.cursor() as cursor, cursor.copy(query.encode()) as copy:
                for row in rows:
                    await copy.write_row(row)
        except psycopg.Error as e:
            raise translate(e) from e

    async def _abandon(self, conn: Connection) -> None:
        self._in_transaction = False
        self._later, self._missing = [], None
        await roll_back_quietly(conn)


def _put_off(e: psycopg.Error, missing: DomainError | None) -> Exception:
    """The error of a change put off that failed: a unique clash is a ``PutOffClash``."""
    if isinstance(e, errors.UniqueViolation):
        return PutOffClash(reason="a record with this id or unique key exists")
    return _failed(e, missing)


def _failed(e: psycopg.Error, missing: DomainError | None) -> DomainError:
    """``translate``, but for the failure of a check put off (``require``): ``missing``."""
    if missing is not None and isinstance(e, errors.DivisionByZero):
        return missing
    return translate(e)
