"""The PostgreSQL adapter's migration target: one autocommit connection, migrators of one
schema serialised across processes by an advisory lock."""

from __future__ import annotations

import psycopg
from psycopg import sql
from psycopg.pq import TransactionStatus

from fourcorner.adapters.postgres.connection import Connection
from fourcorner.adapters.sql import migrations
from fourcorner.adapters.sql.migrations import Migration
from fourcorner.domain.errors import ServiceUnavailable


class PostgresMigrations:
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


async def migrate(conn: Connection, schema: str | None) -> list[Migration]:
    """Apply the pending migrations on ``conn``; return those applied."""
    try:
        return await migrations.apply_pending(
            PostgresMigrations(conn, schema), migrations.load("postgres")
        )
    except psycopg.Error as e:
        raise ServiceUnavailable(reason="migrating the database failed") from e
