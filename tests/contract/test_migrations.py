"""The migration runner: idempotent, recorded, atomic per migration, serialised on PostgreSQL;
and the migrated schema has a table for every collection, laid out as ``Table`` says."""

from __future__ import annotations

import asyncio
import pathlib
import sqlite3
from typing import Any

import psycopg
import pytest
from psycopg import sql

from fourcorner.adapters.postgres import PostgresStorage
from fourcorner.adapters.postgres.migration import PostgresMigrations
from fourcorner.adapters.sql import migrations
from fourcorner.adapters.sql.dialect import POSTGRES, SQLITE
from fourcorner.adapters.sql.migrations import Migration
from fourcorner.adapters.sql.table import Table
from fourcorner.adapters.sqlite import SqliteStorage
from fourcorner.adapters.sqlite.migration import SqliteMigrations
from fourcorner.application.collections import ALL

SQLITE_LABELS = [m.label for m in migrations.load("sqlite")]
POSTGRES_LABELS = [m.label for m in migrations.load("postgres")]
BROKEN = [
    Migration(1, "fine", "CREATE TABLE fine (x INTEGER);"),
    Migration(2, "broken", "CREATE TABLE half (x INTEGER);\nSELECT * FROM no_such_table;"),
]


def test_every_migration_exists_for_both_dialects_in_sequence() -> None:
    assert SQLITE_LABELS == POSTGRES_LABELS
    # numbers are handed out ahead of work done in parallel, so one may be missing for a while
    versions = [m.version for m in migrations.load("sqlite")]
    assert versions[0] == 1 and versions == sorted(set(versions))


# --- SQLite ----------------------------------------------------------------------------------


async def test_sqlite_migrating_twice_applies_nothing_the_second_time(
    tmp_path: pathlib.Path,
) -> None:
    storage = SqliteStorage(tmp_path / "deep" / "dir" / "db.sqlite")
    assert [m.label for m in await storage.migrate()] == SQLITE_LABELS
    assert await storage.migrate() == []
    await storage.open()
    try:
        assert await storage.migrate() == []
    finally:
        await storage.close()
    with sqlite3.connect(storage.path) as conn:
        rows = conn.execute("SELECT version, name, applied_at FROM schema_migrations").fetchall()
    assert [f"{v:04d}_{n}" for v, n, _ in sorted(rows)] == SQLITE_LABELS
    assert all(len(at) == 27 for _, _, at in rows)


async def test_sqlite_a_failing_migration_leaves_no_trace(tmp_path: pathlib.Path) -> None:
    conn = sqlite3.connect(tmp_path / "db.sqlite", isolation_level=None)
    try:
        with pytest.raises(sqlite3.OperationalError):
            await migrations.apply_pending(SqliteMigrations(conn), BROKEN)
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master")}
        assert "fine" in tables
        assert "half" not in tables
        assert conn.execute("SELECT version FROM schema_migrations").fetchall() == [(1,)]
        assert not conn.in_transaction
    finally:
        conn.close()


async def test_sqlite_schema_has_every_collection(tmp_path: pathlib.Path) -> None:
    storage = SqliteStorage(tmp_path / "db.sqlite")
    await storage.migrate()
    with sqlite3.connect(storage.path) as conn:
        for collection in ALL:
            table = Table(collection, SQLITE)
            columns = {r[1]: r[2] for r in conn.execute(f'PRAGMA table_info("{table.name}")')}
            assert columns == _expected_columns(table, collection), _missing(collection)
            unique = set()
            for index in conn.execute(f'PRAGMA index_list("{table.name}")'):
                # a UNIQUE constraint ("u"), or a unique index a later migration created ("c"):
                # SQLite cannot add a constraint to an existing table
                if index[2] and index[3] in ("u", "c"):
                    info = conn.execute(f'PRAGMA index_info("{index[1]}")').fetchall()
                    unique.add(tuple(r[2] for r in sorted(info)))
            assert unique == _expected_unique(table, collection), _missing(collection)


async def test_sqlite_0013_keeps_participants_and_makes_identifiers_unique_per_environment(
    tmp_path: pathlib.Path,
) -> None:
    """0013 builds the participants table again (SQLite cannot drop a constraint): the rows
    stay, with their indexes, and an identifier may then be in TEST and in PROD once each."""
    conn = sqlite3.connect(tmp_path / "db.sqlite", isolation_level=None)

    def insert(ident: str, env: str, key: str) -> None:
        conn.execute(
            "INSERT INTO participants (id, name, participant_identifier, environment, smp_ref, "
            "ap_ref, transport_profile, status, created_at, org_id, identifier_key, "
            "search_text, data) VALUES "
            "(?, 'n', ?, ?, 's', 'a', 'p', 'ACTIVE', '2026-01-01', 'o', ?, '', '{}')",
            (ident, key, env, key),
        )

    try:
        every = migrations.load("sqlite")
        await migrations.apply_pending(SqliteMigrations(conn), [m for m in every if m.version < 13])
        insert("p1", "TEST", "0088:1")
        with pytest.raises(sqlite3.IntegrityError):
            insert("p2", "PROD", "0088:1")  # before: unique across the service
        await migrations.apply_pending(SqliteMigrations(conn), every)
        assert conn.execute("SELECT id, environment FROM participants").fetchall() == [
            ("p1", "TEST")
        ]
        insert("p2", "PROD", "0088:1")
        with pytest.raises(sqlite3.IntegrityError):
            insert("p3", "PROD", "0088:1")
        indexes = {r[1] for r in conn.execute('PRAGMA index_list("participants")')}
        assert {"participants_created_at_id_idx", "participants_org_id_idx"} <= indexes
    finally:
        conn.close()


def _expected_columns(table: Table, collection: Any) -> dict[str, str]:
    types = {
        table.columns[f]: table.dialect.column_type(s.type) for f, s in collection.columns.items()
    }
    return {**types, "search_text": table.dialect.text, "data": "TEXT"}


def _expected_unique(table: Table, collection: Any) -> set[tuple[str, ...]]:
    return {tuple(table.columns[f] for f in group) for group in collection.unique}


def _missing(collection: Any) -> str:
    return (
        f"the {collection.name} table differs from its Collection: add a migration "
        "(adapters.sql.table.ddl_script) for both dialects"
    )


# --- PostgreSQL ------------------------------------------------------------------------------


@pytest.fixture
def fresh_schema(postgres_url_and_schema: tuple[str, str]) -> Any:
    """A schema name of the run's, not yet created; dropped after the test."""
    url, run_schema = postgres_url_and_schema
    name = f"{run_schema}_m"
    yield url, name
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(name)))


@pytest.mark.postgres
async def test_postgres_concurrent_migrators_apply_each_migration_once(
    fresh_schema: tuple[str, str],
) -> None:
    url, schema = fresh_schema
    first, second = await asyncio.gather(
        PostgresStorage(url, schema=schema).migrate(),
        PostgresStorage(url, schema=schema).migrate(),
    )
    assert sorted(m.label for m in first + second) == POSTGRES_LABELS
    assert await PostgresStorage(url, schema=schema).migrate() == []
    storage = PostgresStorage(url, schema=schema)
    await storage.open()
    try:
        assert await storage.migrate() == []
    finally:
        await storage.close()
    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
        cursor = await conn.execute(
            sql.SQL("SELECT version, name FROM {}.schema_migrations ORDER BY version").format(
                sql.Identifier(schema)
            )
        )
        rows = await cursor.fetchall()
    assert [f"{v:04d}_{n}" for v, n in rows] == POSTGRES_LABELS


@pytest.mark.postgres
async def test_postgres_a_failing_migration_leaves_no_trace(
    fresh_schema: tuple[str, str],
) -> None:
    url, schema = fresh_schema
    conn = await psycopg.AsyncConnection.connect(
        url, autocommit=True, options=f"-c search_path={schema}"
    )
    try:
        with pytest.raises(psycopg.errors.UndefinedTable):
            await migrations.apply_pending(PostgresMigrations(conn, schema), BROKEN)
        cursor = await conn.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = %s",
            (schema,),
        )
        tables = {r[0] for r in await cursor.fetchall()}
        assert tables == {"fine", "schema_migrations"}
        cursor = await conn.execute("SELECT version FROM schema_migrations")
        assert await cursor.fetchall() == [(1,)]
    finally:
        await conn.close()


@pytest.mark.postgres
async def test_postgres_schema_has_every_collection(fresh_schema: tuple[str, str]) -> None:
    url, schema = fresh_schema
    await PostgresStorage(url, schema=schema).migrate()
    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
        for collection in ALL:
            table = Table(collection, POSTGRES)
            cursor = await conn.execute(
                "SELECT column_name, upper(data_type), collation_name "
                "FROM information_schema.columns WHERE table_schema = %s AND table_name = %s",
                (schema, table.name),
            )
            columns = {
                name: kind + (' COLLATE "C"' if collation == "C" else "")
                for name, kind, collation in await cursor.fetchall()
            }
            assert columns == _expected_columns(table, collection), _missing(collection)
            cursor = await conn.execute(
                "SELECT array_agg(a.attname ORDER BY k.n) FROM pg_index i "
                "JOIN pg_class t ON t.oid = i.indrelid "
                "JOIN pg_namespace s ON s.oid = t.relnamespace "
                "CROSS JOIN unnest(i.indkey) WITH ORDINALITY AS k(attnum, n) "
                "JOIN pg_attribute a ON a.attrelid = t.oid AND a.attnum = k.attnum "
                "WHERE s.nspname = %s AND t.relname = %s AND i.indisunique "
                "AND NOT i.indisprimary GROUP BY i.indexrelid",
                (schema, table.name),
            )
            unique = {tuple(r[0]) for r in await cursor.fetchall()}
            assert unique == _expected_unique(table, collection), _missing(collection)


LZ4 = next(m for m in migrations.load("postgres") if m.name == "lz4_compression")
LZ4_TABLES = {"transactions", "events", "artefacts", "deliveries", "blob_chunks"}


async def _compression(conn: psycopg.AsyncConnection[Any], schema: str) -> dict[str, str]:
    """The compression method of each table's ``data`` column (``attcompression``: ``l``
    lz4, ``p`` pglz, empty the server's default, which is pglz unless configured)."""
    cursor = await conn.execute(
        "SELECT t.relname, a.attcompression FROM pg_attribute a "
        "JOIN pg_class t ON t.oid = a.attrelid "
        "JOIN pg_namespace s ON s.oid = t.relnamespace "
        "WHERE s.nspname = %s AND a.attname = 'data' AND t.relkind = 'r'",
        (schema,),
    )
    return dict(await cursor.fetchall())


async def _lz4_possible(conn: psycopg.AsyncConnection[Any]) -> bool:
    """The server takes SET COMPRESSION lz4: PostgreSQL 14 or later, built with lz4."""
    cursor = await conn.execute(
        "SELECT current_setting('server_version_num')::int >= 140000 AND EXISTS ("
        "SELECT FROM pg_settings WHERE name = 'default_toast_compression' "
        "AND 'lz4' = ANY(enumvals))"
    )
    row = await cursor.fetchone()
    return bool(row and row[0])


async def _migrated_to_lz4(url: str, schema: str, *, before: str = "", pretend: str = "") -> None:
    """The migrations up to ``LZ4`` applied in ``schema``, then ``before`` run there, then
    ``LZ4`` as it was released; ``pretend``: the ``server_version_num`` its guard reads (a
    ``current_setting`` of the schema's own, found before pg_catalog's)."""
    path = f"{schema},pg_catalog" if pretend else schema
    async with await psycopg.AsyncConnection.connect(
        url, autocommit=True, options=f"-c search_path={path}"
    ) as conn:
        target = PostgresMigrations(conn, schema)
        earlier = [m for m in migrations.load("postgres") if m.version < LZ4.version]
        await migrations.apply_pending(target, earlier)
        if before:
            await conn.execute(before.encode())
        if pretend:
            await conn.execute(
                sql.SQL(
                    "CREATE FUNCTION {}.current_setting(name text) RETURNS text LANGUAGE sql "
                    "AS $$ SELECT CASE WHEN name = 'server_version_num' THEN {} "
                    "ELSE pg_catalog.current_setting(name) END $$"
                ).format(sql.Identifier(schema), sql.Literal(pretend))
            )
            cursor = await conn.execute("SELECT current_setting('server_version_num')")
            assert await cursor.fetchone() == (pretend,)  # what the guard will read
        assert await migrations.apply_pending(target, [LZ4]) == [LZ4]


@pytest.mark.postgres
async def test_postgres_values_written_with_every_transaction_are_compressed_with_lz4(
    fresh_schema: tuple[str, str],
) -> None:
    """pglz, the default, spent a tenth of the server's time in the loop (migration 0020): a
    server that has lz4 (14 or later, built with it) compresses those columns with it, one
    that has not keeps the default."""
    url, schema = fresh_schema
    await PostgresStorage(url, schema=schema).migrate()
    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
        methods = await _compression(conn, schema)
        chosen = "l" if await _lz4_possible(conn) else ""
    assert {name: methods[name] for name in LZ4_TABLES} == dict.fromkeys(LZ4_TABLES, chosen)
    # the others keep the default
    assert {name: m for name, m in methods.items() if name not in LZ4_TABLES} == dict.fromkeys(
        methods.keys() - LZ4_TABLES, ""
    )


@pytest.mark.postgres
@pytest.mark.parametrize("version", ["130000", "139999", "90624"])
async def test_postgres_a_server_older_than_14_keeps_pglz(
    fresh_schema: tuple[str, str], version: str
) -> None:
    """SET COMPRESSION came with PostgreSQL 14: migration 0020, as released, on a server that
    says it is older (its guard's other branch) changes no column and is recorded applied."""
    url, schema = fresh_schema
    await _migrated_to_lz4(url, schema, pretend=version)
    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
        methods = await _compression(conn, schema)
    assert set(methods.values()) == {""}
    assert methods.keys() >= LZ4_TABLES


@pytest.mark.postgres
async def test_postgres_a_server_refusing_lz4_keeps_pglz_on_every_column(
    fresh_schema: tuple[str, str],
) -> None:
    """A server built without lz4 refuses SET COMPRESSION lz4 with ``feature_not_supported``:
    migration 0020 then keeps pglz on every column, none half-changed, and is recorded
    applied. The refusal is raised here at the last of its columns, one that cannot be
    compressed at all (the same error code), after the others were set."""
    url, schema = fresh_schema
    uncompressible = 'ALTER TABLE "blob_chunks" ALTER COLUMN "data" TYPE integer USING 0'
    await _migrated_to_lz4(url, schema, before=uncompressible)
    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
        methods = await _compression(conn, schema)
    assert {name: methods[name] for name in LZ4_TABLES} == dict.fromkeys(LZ4_TABLES, "")
