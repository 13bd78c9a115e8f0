"""On PostgreSQL, with 100,000 transactions and as many events stored (through the bulk path)
and analysed, every filter of the transaction and event lists, and their sort by creation time
both ways, is answered through an index: ``EXPLAIN`` shows no sequential scan of the table.

The organisation queried is a large one (a fifth of every record), the case where a plan
that reads the whole table would look cheapest to the planner.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from psycopg import sql

import scale_records
from fourcorner.adapters.postgres import PostgresStorage
from fourcorner.adapters.sql.dialect import POSTGRES
from fourcorner.adapters.sql.table import Table
from fourcorner.application.collections import DELIVERIES, EVENTS, ORGANISATIONS, TRANSACTIONS
from fourcorner.application.listing import ListRequest, build_query, equals
from fourcorner.application.repositories import Transactions
from fourcorner.application.storage import Collection
from fourcorner.domain import clock
from fourcorner.domain.transaction import Direction, Transaction
from fourcorner.domain.webhook import Event

SHAPE = scale_records.Shape(
    transactions=100_000,
    organisations=50,
    participants=150,
    events_per_transaction=1,
    big_share=0.2,
)
BATCH = 10_000


async def _seed(url: str, schema: str) -> tuple[list[Transaction], list[Event]]:
    """Store the records; return the large organisation's transactions and events."""
    storage = PostgresStorage(url, schema=schema, cache=False)
    await storage.open()
    orgs = scale_records.organisations(SHAPE)
    big = orgs[0].organisation.id
    rng = random.Random(SHAPE.seed)
    mine: list[Transaction] = []
    my_events: list[Event] = []
    try:
        async with storage.unit_of_work() as uow:
            await uow.repository(ORGANISATIONS).add_many([o.organisation for o in orgs])
            await uow.commit()
        batch: list[Transaction] = []
        for tx, org in scale_records.transactions(SHAPE, orgs):
            batch.append(tx)
            if org.organisation.id == big:
                mine.append(tx)
            if len(batch) == BATCH:
                my_events += await _store(storage, batch, orgs, rng)
                batch = []
        my_events += await _store(storage, batch, orgs, rng)
    finally:
        await storage.close()
    return mine, my_events


async def _store(
    storage: PostgresStorage,
    batch: list[Transaction],
    orgs: list[scale_records.Org],
    rng: random.Random,
) -> list[Event]:
    """Store the transactions with their events and deliveries; return the large
    organisation's events."""
    by_id = {o.organisation.id: o for o in orgs}
    events: list[Event] = []
    deliveries: list[Any] = []
    for tx in batch:
        found, sent = scale_records.events(SHAPE, tx, by_id[tx.org_id], rng)
        events += found
        deliveries += sent
    async with storage.unit_of_work() as uow:
        await uow.repository(TRANSACTIONS).add_many(batch)
        await uow.repository(EVENTS).add_many(events)
        await uow.repository(DELIVERIES).add_many(deliveries)
        await uow.commit()
    return [e for e in events if e.org_id == orgs[0].organisation.id]


@pytest.fixture(scope="module")
def seeded(postgres_url_and_schema: tuple[str, str]) -> Iterator[tuple[Any, ...]]:
    import asyncio

    url, run_schema = postgres_url_and_schema
    schema = f"{run_schema}_plans"
    try:
        mine, events = asyncio.run(_seed(url, schema))
        with psycopg.connect(url, autocommit=True, options=f"-c search_path={schema}") as conn:
            conn.execute("ANALYZE")
        yield url, schema, mine, events
    finally:
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema)))


def _filters(mine: list[Transaction]) -> list[str]:
    """A filter on every field of the transaction list, with values its records hold."""
    tx = mine[len(mine) // 2]
    at = clock.iso_ns(tx.created_ns)
    later = clock.iso_ns(tx.created_ns + 3_600_000_000_000)
    return [
        f"id:eq:{tx.id}",
        f"id:in:{tx.id}|{mine[0].id}",
        "transactionStatus:eq:FAILED",
        "transactionStatus:in:FAILED|REJECTED",
        f"senderId:eq:{tx.sender_id}",
        f"receiverId:eq:{tx.receiver_id}",
        f"docTypeId:eq:{scale_records.DOC_TYPES[2]}",
        f"processId:eq:{tx.process_id}",
        f"docInstanceId:eq:{tx.doc_instance_id}",
        f"apId:eq:{tx.ap_id}",
        f"createdAt:gte:{at}",
        f"createdAt:lt:{at}",
        f"createdAt:eq:{at}",
        f"createdAt:gte:{at}&transactionStatus:eq:FAILED",
        f"createdAt:gte:{at}&createdAt:lt:{later}&transactionStatus:eq:COMPLETED",
    ]


def _event_filters(events: list[Event]) -> list[str]:
    event = events[len(events) // 2]
    at = clock.iso(event.created_at)
    return [
        f"id:eq:{event.id}",
        "eventType:eq:transaction.sent",
        "eventType:in:transaction.sent|transaction.received",
        "status:eq:FAILED",
        "status:in:PENDING|FAILED",
        f"createdAt:gte:{at}",
        f"createdAt:lt:{at}",
    ]


def _plan(url: str, schema: str, statement: Any) -> dict[str, Any]:
    """The plan of ``statement``, run (``EXPLAIN ANALYZE``), as PostgreSQL's JSON gives it."""
    with (
        psycopg.connect(url, autocommit=True, options=f"-c search_path={schema}") as conn,
        psycopg.ClientCursor(conn) as cursor,
    ):
        explain = b"EXPLAIN (ANALYZE, FORMAT JSON) " + statement.sql.encode()
        cursor.execute(explain, statement.params)
        row = cursor.fetchone()
        assert row is not None
        plan: dict[str, Any] = row[0][0]["Plan"]
        return plan


def _reads(plan: dict[str, Any], table: str) -> Iterator[tuple[str, int, str]]:
    """Each node of ``plan`` that reads ``table``: its type, the rows it read (those it
    returned and those its filter removed) and the index it used."""
    if plan.get("Relation Name") == table:
        read = plan["Actual Rows"] * plan.get("Actual Loops", 1)
        read += plan.get("Rows Removed by Filter", 0) + plan.get("Rows Removed by Index Recheck", 0)
        yield plan["Node Type"], read, plan.get("Index Name", "")
    for child in plan.get("Plans", ()):
        yield from _reads(child, table)


def _check(
    url: str, schema: str, collection: Collection[Any], scope: tuple[Any, ...], requests: list[Any]
) -> list[str]:
    """The requests whose page scans the table, or reads more than ``MOST_READ`` rows."""
    table = Table(collection, POSTGRES)
    costly = []
    for request in requests:
        query = build_query(collection, request, scope=scope)
        plan = _plan(url, schema, table.page(query))
        reads = list(_reads(plan, collection.name))
        if any(kind == "Seq Scan" or read > MOST_READ for kind, read, _ in reads):
            costly.append(f"{request}: {reads}")
    return costly


SORTS = ("createdAt", "-createdAt")
# A page of 100 reads at most this many rows: the large organisation has 20,000 transactions,
# so a plan that walks its records in time order, filtering, reads 4,000 for a value one in
# 40 of them holds (a document type); one that reads 10 rows for each it keeps, walking the
# whole table's time index for a value a tenth of it holds, may well be the cheapest
MOST_READ = 2_000


@pytest.mark.postgres
def test_every_filter_of_the_transaction_lists_uses_an_index(seeded: tuple[Any, ...]) -> None:
    url, schema, mine, _ = seeded
    org = mine[0].org_id
    for direction in Direction:
        scope = (equals(TRANSACTIONS, "orgId", org), *Transactions.documents(direction))
        requests = [
            ListRequest(filters=tuple(f.split("&")), sort=sort, limit=100)
            for f in _filters(mine)
            for sort in SORTS
        ]
        requests.append(ListRequest(search="inv-0000", limit=100))
        scanned = _check(url, schema, TRANSACTIONS, scope, requests)
        assert not scanned, "\n\n".join(scanned)


@pytest.mark.postgres
def test_every_filter_of_the_event_list_uses_an_index(seeded: tuple[Any, ...]) -> None:
    url, schema, _, events = seeded
    scope = (equals(EVENTS, "orgId", events[0].org_id),)
    requests = [
        ListRequest(filters=(f,), sort=sort, limit=100)
        for f in _event_filters(events)
        for sort in SORTS
    ]
    scanned = _check(url, schema, EVENTS, scope, requests)
    assert not scanned, "\n\n".join(scanned)


@pytest.mark.postgres
def test_the_plans_are_of_a_large_table(seeded: tuple[Any, ...]) -> None:
    """The premise: the tables hold what the module says, analysed."""
    url, schema, mine, events = seeded
    with psycopg.connect(url, autocommit=True, options=f"-c search_path={schema}") as conn:
        for name, count in (("transactions", SHAPE.transactions), ("events", SHAPE.events)):
            row = conn.execute(
                "SELECT reltuples FROM pg_class WHERE relname = %s "
                "AND relnamespace = %s::regnamespace",
                (name, schema),
            ).fetchone()
            assert row is not None and row[0] >= count * 0.9
    assert len(mine) == SHAPE.transactions * SHAPE.big_share
    assert {e.org_id for e in events} == {mine[0].org_id}
