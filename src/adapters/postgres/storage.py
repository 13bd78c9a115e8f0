"""The storage port on PostgreSQL: psycopg 3 (async) and a ``psycopg_pool`` connection pool.

Many API processes and workers may share one database; migrations are applied on ``open()``
and serialised across processes by an advisory lock (``migration``). The adapter's parts:

- ``storage`` (here): the pool and the life cycle (open, migrate, ping, close);
- ``unit_of_work``: a pooled connection and its lazily opened transaction, the statements
  of the shared SQL repository run on it;
- ``listener``: the ``NOTIFY``/``LISTEN`` channel through which the processes' commits clear
  each other's record caches and wake each other's watchers (and, with ``share_failures``,
  the channel of their failed authentications: ``failures``);
- ``connection``: how connections are opened and how driver errors become domain errors.

``reader()`` units of work answer reads of the collections in ``adapters.sql.cache`` from this
process's ``RecordCache``, kept true by the listener; while it is down the cache is suspended.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence

import psycopg
from psycopg_pool import AsyncConnectionPool

from fourcorner.adapters.changes import Watchers
from fourcorner.adapters.postgres.connection import Connection, connect_kwargs, translate
from fourcorner.adapters.postgres.listener import Listener
from fourcorner.adapters.postgres.migration import migrate
from fourcorner.adapters.postgres.unit_of_work import PostgresUnitOfWork
from fourcorner.adapters.sql.cache import RecordCache
from fourcorner.adapters.sql.dialect import POSTGRES
from fourcorner.adapters.sql.migrations import Migration
from fourcorner.adapters.sql.repository import Repositories
from fourcorner.domain.errors import ServiceUnavailable

_SCHEMA = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,62}$")

PING_WAIT = 2.0
"""The longest ``ping`` (``GET /readyz``) waits for a connection of the pool, in seconds. Work
waits up to the storage's ``timeout`` (10 s) for one; with the database gone, a readiness probe
waited that long for its 503, where a probe with a shorter timeout of its own saw a timeout."""


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
        # suspended until the listener is connected
        self._cache = RecordCache(enabled=False) if cache else None
        self.repositories = Repositories(POSTGRES, self._cache)
        self._watchers = Watchers()
        self._announced = frozenset(announce)
        self._listener = Listener(
            url, schema, timeout=timeout, cache=self._cache, watchers=self._watchers
        )
        self._shares_failures = False

    @property
    def schema(self) -> str | None:
        return self._schema

    def holds(self, url: str, schema: str | None) -> bool:
        """Whether this storage is the database ``url`` (its schema ``schema``): a blob store
        there may write in this storage's transactions (``PostgresBlobStore.put_all_in``)."""
        return url == self._url and schema == self._schema

    @property
    def cache(self) -> RecordCache | None:
        return self._cache

    def unit_of_work(self) -> PostgresUnitOfWork:
        return PostgresUnitOfWork(self)

    def watch(self, collections: Iterable[str], callback: Callable[[], None]) -> None:
        """Commits of this process, and of others for the collections they announce."""
        self._watchers.add(collections, callback)

    def share_failures(
        self, heard: Callable[[Mapping[str, int]], None], keys: Sequence[bytes]
    ) -> Callable[[Iterable[str]], None]:
        """Share failed authentications with the other processes of this database and schema,
        through the listener (``failures``; ``keys`` authenticate them, the first signing);
        called before ``open``, which starts it."""
        share = self._listener.share_failures(heard, keys)
        self._shares_failures = True
        return share

    def reader(self) -> PostgresUnitOfWork:
        return PostgresUnitOfWork(self, reading=True)

    def read_stamp(self) -> int | None:
        """The record cache's stamp (``None`` while the listener is down)."""
        return self._cache.stamp() if self._cache is not None else None

    @property
    def listening(self) -> bool:
        """Whether the record cache's listener is connected (the cache in use)."""
        return self._listener.listening

    async def wait_listening(self) -> None:
        await self._listener.wait_listening()

    def announcement(self, written: set[str], added: set[str]) -> str | None:
        """What a commit that wrote ``written`` and added to ``added`` tells the other
        processes (``listener``), or ``None`` when there is nothing they need to hear."""
        cache = self._cache
        cleared = written & cache.collections if cache is not None else set()
        woken = added & self._announced
        return self._listener.payload(cleared, woken) if cleared or woken else None

    def forget(self, written: Iterable[str]) -> None:
        """A commit (or its attempt) changed these collections: their cached records go."""
        if self._cache is not None:
            self._cache.invalidate(written)

    def wake(self, added: Iterable[str]) -> None:
        """A commit of this process added records to these collections: tell the watchers."""
        self._watchers.changed(added)

    async def open(self) -> None:
        """Open the pool (waiting for its first connection) and apply pending migrations."""
        if self._pool is not None:
            return
        pool: AsyncConnectionPool[Connection] = AsyncConnectionPool(
            self._url,
            min_size=self._min_size,
            max_size=self._max_size,
            kwargs=connect_kwargs(self._schema),
            timeout=self._timeout,
            open=False,
            name="fourcorner",
        )
        try:
            await pool.open(wait=True, timeout=self._timeout)
            conn = await pool.getconn()
            try:
                await migrate(conn, self._schema)
            finally:
                await pool.putconn(conn)
        except BaseException as e:
            await pool.close()
            if isinstance(e, psycopg.Error):
                raise translate(e) from e
            raise
        self._pool = pool
        if self._cache is not None or self._announced or self._shares_failures:
            self._listener.start()

    async def migrate(self) -> list[Migration]:
        """Apply the pending migrations (for ``fourcorner migrate``); return those applied.
        Works whether or not the storage is open."""
        try:
            if self._pool is not None:
                conn = await self._pool.getconn()
                try:
                    return await migrate(conn, self._schema)
                finally:
                    await self._pool.putconn(conn)
            connection = await psycopg.AsyncConnection.connect(
                self._url,
                connect_timeout=max(1, int(self._timeout)),
                **connect_kwargs(self._schema),
            )
            try:
                return await migrate(connection, self._schema)
            finally:
                await connection.close()
        except psycopg.Error as e:
            raise translate(e) from e

    async def ping(self) -> None:
        """``ServiceUnavailable`` when no connection of the pool answers: none came free (or
        could be opened) within ``PING_WAIT`` seconds, or the one given failed."""
        pool = self.pool()
        try:
            conn = await pool.getconn(timeout=min(PING_WAIT, self._timeout))
            try:
                await conn.execute("SELECT 1")
            finally:
                await pool.putconn(conn)
        except psycopg.Error as e:
            raise translate(e) from e

    async def close(self) -> None:
        await self._listener.stop()
        pool, self._pool = self._pool, None
        if pool is not None:
            await pool.close()

    def pool(self) -> AsyncConnectionPool[Connection]:
        """The open pool; ``ServiceUnavailable`` while the storage is not open."""
        if self._pool is None:
            raise ServiceUnavailable(reason="the database is not open")
        return self._pool
