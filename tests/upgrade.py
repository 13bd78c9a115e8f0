"""A database upgraded from an older schema: the migrations before ``upgrade`` applied, rows
written as the code of that time wrote them, then a storage opened, which applies the rest.

``rows``: ``(statement, values)`` pairs, the statement an ``INSERT`` whose ``{}`` takes the
placeholders of the values (``?`` in SQLite, ``%s`` in PostgreSQL)."""

from __future__ import annotations

import json
import pathlib
import sqlite3
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any

import psycopg
import pytest
from psycopg import sql

from fourcorner.adapters.postgres import PostgresStorage
from fourcorner.adapters.postgres.migration import PostgresMigrations
from fourcorner.adapters.sql import migrations
from fourcorner.adapters.sql.codec import make_converter
from fourcorner.adapters.sql.dialect import SQLITE
from fourcorner.adapters.sql.table import Table
from fourcorner.adapters.sqlite import SqliteStorage
from fourcorner.adapters.sqlite.migration import SqliteMigrations
from fourcorner.application.collections import TRANSACTIONS
from fourcorner.domain import clock
from fourcorner.domain.api_key import ApiKey
from fourcorner.domain.member import Member
from fourcorner.domain.transaction import Artefact, Transaction
from fourcorner.domain.user import User
from fourcorner.domain.webhook import Event

Rows = Sequence[tuple[str, tuple[Any, ...]]]
Upgraded = Callable[[int, Rows], AbstractAsyncContextManager[Any]]


def _before(dialect: str, upgrade: int) -> list[migrations.Migration]:
    return [m for m in migrations.load(dialect) if m.version < upgrade]


def _filled(statement: str, values: tuple[Any, ...], marker: str) -> str:
    return statement.format(", ".join([marker] * len(values)))


@asynccontextmanager
async def sqlite_upgraded(
    path: pathlib.Path, upgrade: int, rows: Rows
) -> AsyncIterator[SqliteStorage]:
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        await migrations.apply_pending(SqliteMigrations(conn), _before("sqlite", upgrade))
        for statement, values in rows:
            conn.execute(_filled(statement, values, "?"), values)
    finally:
        conn.close()
    storage = SqliteStorage(path)
    await storage.open()  # applies ``upgrade`` and the rest
    try:
        yield storage
    finally:
        await storage.close()


@asynccontextmanager
async def postgres_upgraded(
    url: str, schema: str, upgrade: int, rows: Rows
) -> AsyncIterator[PostgresStorage]:
    """In a schema ``schema`` of its own, dropped afterwards."""
    conn = await psycopg.AsyncConnection.connect(
        url, autocommit=True, options=f"-c search_path={schema}"
    )
    try:
        await migrations.apply_pending(
            PostgresMigrations(conn, schema), _before("postgres", upgrade)
        )
        for statement, values in rows:
            await conn.execute(_filled(statement, values, "%s"), values)
    finally:
        await conn.close()
    storage = PostgresStorage(url, schema=schema)
    await storage.open()  # applies ``upgrade`` and the rest
    try:
        yield storage
    finally:
        await storage.close()
        async with await psycopg.AsyncConnection.connect(url, autocommit=True) as admin:
            await admin.execute(
                sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema))
            )


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def upgraded(request: Any, tmp_path: pathlib.Path) -> Upgraded:
    """``upgraded(upgrade, rows)``: the database of each SQL adapter, upgraded as above (the
    PostgreSQL one in a schema of its own under this run's)."""
    if request.param == "sqlite":
        return lambda upgrade, rows: sqlite_upgraded(tmp_path / "db.sqlite", upgrade, rows)
    url, run_schema = request.getfixturevalue("postgres_url_and_schema")
    return lambda upgrade, rows: postgres_upgraded(url, f"{run_schema}_{upgrade}", upgrade, rows)


# --- rows of the current schema, as the code writes them -------------------------------------

INSERT_USER = (
    'INSERT INTO "users" ("id", "email", "name", "role", "country_code", "created_at", '
    '"search_text", "data") VALUES ({})'
)
INSERT_MEMBER = (
    'INSERT INTO "members" ("id", "role", "status", "user_ref", "first_name", "last_name", '
    '"created_at", "org_id", "search_text", "data", "invited_email") VALUES ({})'
)
INSERT_EVENT = (
    'INSERT INTO "events" ("id", "event_type", "status", "created_at", "org_id", "search_text", '
    '"data") VALUES ({})'
)
INSERT_ARTEFACT = (
    'INSERT INTO "artefacts" ("id", "transaction_id", "type", "created_at", "org_id", '
    '"search_text", "data") VALUES ({})'
)
INSERT_API_KEY = (
    'INSERT INTO "api_keys" ("id", "name", "role", "is_active", "expires", "created_at", '
    '"org_id", "key_hash", "search_text", "data") VALUES ({})'
)
_CONV = make_converter()


def user_row(user: User) -> tuple[str, tuple[Any, ...]]:
    data = json.dumps(_CONV.unstructure(user))
    created = clock.sortable(user.created_at)
    row = (user.id, user.email, user.name, user.role.value, "", created, "", data)
    return INSERT_USER, row


def member_row(
    m: Member, *, without: str = "", search_text: str = ""
) -> tuple[str, tuple[Any, ...]]:
    """``without``: a field the record's JSON leaves out (written before the field was)."""
    data = _CONV.unstructure(m)
    data.pop(without, None)
    row = (
        *(str(m.id), m.role.value, m.status.value, m.user_ref or None, "", ""),
        *(clock.sortable(m.created_at), str(m.org_id), search_text, json.dumps(data)),
        m.invited_email,
    )
    return INSERT_MEMBER, row


def event_row(e: Event, *, search_text: str = "") -> tuple[str, tuple[Any, ...]]:
    data = json.dumps(_CONV.unstructure(e))
    created = clock.sortable(e.created_at)
    row = (str(e.id), e.event_type, e.status.value, created, str(e.org_id), search_text, data)
    return INSERT_EVENT, row


def artefact_row(a: Artefact, *, search_text: str = "") -> tuple[str, tuple[Any, ...]]:
    data = json.dumps(_CONV.unstructure(a))
    row = (
        *(str(a.id), str(a.transaction_id), a.type.value, clock.sortable(a.created_at)),
        *(str(a.org_id), search_text, data),
    )
    return INSERT_ARTEFACT, row


def key_row(k: ApiKey) -> tuple[str, tuple[Any, ...]]:
    data = json.dumps(_CONV.unstructure(k))
    row = (
        *(str(k.id), k.name, k.role.value, int(k.is_active), clock.sortable(k.expires)),
        *(clock.sortable(k.created_at), str(k.org_id), k.key_hash, "", data),
    )
    return INSERT_API_KEY, row


def transaction_row(tx: Transaction, *, without: Sequence[str] = ()) -> tuple[str, tuple[Any, ...]]:
    """The row of ``tx`` as the code writes it today, less the columns ``without`` (by their
    field names: columns added since the time the row stands for)."""
    names = Table(TRANSACTIONS, SQLITE).columns  # field name -> column name, either dialect
    values = {f: v for f, v in TRANSACTIONS.row(tx).items() if f not in without}
    columns = ", ".join(f'"{c}"' for c in [*(names[f] for f in values), "search_text", "data"])
    statement = 'INSERT INTO "transactions" (' + columns + ") VALUES ({})"  # noqa: S608
    data = json.dumps(_CONV.unstructure(tx))
    return statement, (*values.values(), TRANSACTIONS.search_text(tx), data)
