"""The SQLite adapter's migration target: one connection, migrators serialised by SQLite's
write lock."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from datetime import UTC, datetime

from fourcorner.adapters.sql import migrations
from fourcorner.adapters.sql.migrations import Migration
from fourcorner.domain import clock
from fourcorner.domain.errors import ServiceUnavailable


class SqliteMigrations:
    """``adapters.sql.migrations.MigrationTarget`` on a SQLite connection."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self._conn = conn
        # unicode_lower(text): lower-cased as Python lowers it, as ``Collection.search_text``
        # writes a record's search text (SQLite's lower() lowers ASCII letters only)
        conn.create_function("unicode_lower", 1, _unicode_lower, deterministic=True)

    async def begin(self) -> None:
        self._conn.execute("BEGIN IMMEDIATE")  # the write lock serialises migrators

    async def prepare(self) -> None:
        self._conn.execute(
            "CREATE TABLE IF NOT EXISTS schema_migrations ("
            "version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)"
        )

    async def applied(self) -> set[int]:
        return {row[0] for row in self._conn.execute("SELECT version FROM schema_migrations")}

    async def apply(self, migration: Migration) -> None:
        for statement in _statements(migration.sql):
            self._conn.execute(statement)
        self._conn.execute(
            "INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)",
            (migration.version, migration.name, clock.sortable(datetime.now(UTC))),
        )

    async def commit(self) -> None:
        self._conn.execute("COMMIT")

    async def rollback(self) -> None:
        if self._conn.in_transaction:
            self._conn.execute("ROLLBACK")


def _unicode_lower(text: object) -> str | None:
    return None if text is None else str(text).lower()


def _statements(script: str) -> Iterator[str]:
    """The statements of a script, one at a time (``executescript`` would commit first)."""
    pending = ""
    for line in script.splitlines(keepends=True):
        pending += line
        if sqlite3.complete_statement(pending):
            yield pending.strip()
            pending = ""
    if pending.strip() and not all(
        ln.strip().startswith("--") or not ln.strip() for ln in pending.splitlines()
    ):
        yield pending.strip()


async def migrate(conn: sqlite3.Connection) -> list[Migration]:
    try:
        return await migrations.apply_pending(SqliteMigrations(conn), migrations.load("sqlite"))
    except sqlite3.Error as e:
        raise ServiceUnavailable(reason="migrating the database failed") from e
