"""Upgrading a PostgreSQL database to migration 0014 (UUID and datetime columns typed): the
records stored before it, as the code before it wrote them (every column text), read back the
same, list in the same order and are found by the same conditions."""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Any
from unittest import mock

import attrs
import psycopg
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from psycopg import sql

from fourcorner.adapters.postgres import PostgresStorage
from fourcorner.adapters.postgres.migration import PostgresMigrations
from fourcorner.adapters.sql import migrations
from fourcorner.adapters.sql.codec import make_converter
from fourcorner.adapters.sql.dialect import POSTGRES
from fourcorner.adapters.sql.table import Table
from fourcorner.application.collections import ALL
from fourcorner.application.storage import Collection, Cursor, Order, Query
from fourcorner.domain.filtering import Condition

if TYPE_CHECKING:
    from conftest import Samples

TYPED = 14  # the migration that gives UUID and datetime columns their types
# The dialect before it: every UUID and datetime column text in "C" collation.
UNTYPED = attrs.evolve(POSTGRES, uuid=POSTGRES.text, timestamp=POSTGRES.text)
# columns that migrations after it added (0017: when the directory is asked again; 0022: the
# key of a received AS4 message; 0023: the host a delivery goes to), which the code before it
# did not write and this test does not migrate to
LATER_COLUMNS = {
    "participants": {"directoryDueAt"},
    "transactions": {"messageKey"},
    "deliveries": {"host"},
}


def _as_of_typed(collection: Collection[Any]) -> Collection[Any]:
    """``collection`` with the columns (and unique groups) its table had once migration
    ``TYPED`` was applied."""
    later = LATER_COLUMNS.get(collection.name, set())
    return attrs.evolve(
        collection,
        columns={k: v for k, v in collection.columns.items() if k not in later},
        unique=tuple(group for group in collection.unique if not later.intersection(group)),
    )


def test_the_migration_is_where_this_test_says() -> None:
    labels = [m.label for m in migrations.load("postgres")]
    assert any(label.startswith(f"{TYPED:04d}_column_types") for label in labels)


async def _walk(storage: PostgresStorage, collection: Collection[Any], **query: Any) -> list[Any]:
    order = query.pop("order", Order())
    found: list[Any] = []
    after: Cursor | None = None
    async with storage.unit_of_work() as uow:
        repo = uow.repository(collection)
        while True:
            page = await repo.list(Query(after=after, limit=2, order=order, **query))
            found.extend(page.items)
            if page.next_cursor is None:
                return found
            after = Cursor.decode(page.next_cursor, order, collection.columns[order.field])


@pytest.mark.postgres
@settings(
    max_examples=4,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(data=st.data())
async def test_records_stored_before_0014_read_back_the_same(
    postgres_url_and_schema: tuple[str, str], samples: type[Samples], data: st.DataObject
) -> None:
    url, run_schema = postgres_url_and_schema
    schema = f"{run_schema}_types_{uuid.uuid4().hex[:8]}"
    before = [m for m in migrations.load("postgres") if m.version < TYPED]
    converter = make_converter()
    stored: dict[str, list[Any]] = {}
    conn = await psycopg.AsyncConnection.connect(
        url, autocommit=True, options=f"-c search_path={schema}"
    )
    try:
        await migrations.apply_pending(PostgresMigrations(conn, schema), before)
        for collection in ALL:
            items = data.draw(samples.record_lists(collection, max_size=4), label=collection.name)
            table = Table(_as_of_typed(collection), UNTYPED)
            for item in items:
                await conn.execute(table.insert_sql, table.values(item, converter.dumps(item)))
            stored[collection.name] = items
    finally:
        await conn.close()
    storage = PostgresStorage(url, schema=schema, cache=False)
    # 0014 alone: the migrations after it change data on purpose (0015 gives members their
    # user's email, 0016 ends the keys of creators who left; each has an upgrade test of its
    # own), and these random records would meet their conditions
    load = migrations.load
    try:
        with mock.patch.object(
            migrations, "load", lambda kind: [m for m in load(kind) if m.version <= TYPED]
        ):
            await storage.open()
        for collection in ALL:
            items = stored[collection.name]
            async with storage.unit_of_work() as uow:
                repo = uow.repository(collection)
                for item in items:
                    assert await repo.get(item.id) == item
            then = _as_of_typed(collection)
            order = Order(data.draw(st.sampled_from(sorted(then.columns)), label="sort"))
            column, ident = collection.columns[order.field], collection.columns["id"]
            expected = sorted(
                items, key=lambda i: order.key(column.column(i), str(ident.column(i)))
            )
            assert await _walk(storage, collection, order=order) == expected
            if items:
                condition: Condition = data.draw(samples.conditions(then, items))
                matching = [
                    i for i in sorted(items, key=_list_key(collection)) if condition.matches(i)
                ]
                assert await _walk(storage, collection, where=(condition,)) == matching
    finally:
        await storage.close()
        async with await psycopg.AsyncConnection.connect(url, autocommit=True) as admin:
            await admin.execute(
                sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema))
            )


def _list_key(collection: Collection[Any]) -> Any:
    created, ident = collection.columns["createdAt"], collection.columns["id"]
    return lambda i: (str(created.column(i)), str(ident.column(i)))
