"""On PostgreSQL, with 60,000 participants stored and analysed, of which 600 have an OUTDATED
business card (half of them due), the directory workers' claim of due cards
(``directory_worker.due``, ``FOR UPDATE SKIP LOCKED``) reads through the partial index of
``directory_due_at``: ``EXPLAIN`` shows no sequential scan, and the claim reads about as many
rows as it takes, whatever the size of the table."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import attrs
import psycopg
import pytest
from psycopg import sql

import scale_records
from fourcorner.adapters.postgres import PostgresStorage
from fourcorner.adapters.sql.dialect import POSTGRES
from fourcorner.adapters.sql.table import Table
from fourcorner.application.collections import ORGANISATIONS, PARTICIPANTS
from fourcorner.application.directory_worker import due
from fourcorner.domain.participant import DirectoryPublication, DirectoryRetry, PublicationState

from .test_query_plans import _plan, _reads

SHAPE = scale_records.Shape(transactions=0, organisations=60, participants=60_000)
NOW = scale_records.START
EVERY = 100  # one participant in this many is OUTDATED; one in this many others PUBLISHED
LIMIT = 20


def _publication(k: int, p: Any) -> Any:
    if k % EVERY == 0:  # OUTDATED: every other one due, the others due in an hour
        when = NOW - timedelta(milliseconds=k) if k % (2 * EVERY) == 0 else NOW + timedelta(hours=1)
        directory = DirectoryPublication(PublicationState.OUTDATED, NOW, NOW, "down")
        return attrs.evolve(p, directory=directory, directory_retry=DirectoryRetry(1, 1, when))
    if k % EVERY == 1:
        return attrs.evolve(p, directory=DirectoryPublication(PublicationState.PUBLISHED, NOW))
    return p


async def _seed(url: str, schema: str) -> None:
    storage = PostgresStorage(url, schema=schema, cache=False)
    await storage.open()
    try:
        orgs = scale_records.organisations(SHAPE)
        async with storage.unit_of_work() as uow:
            await uow.repository(ORGANISATIONS).add_many([o.organisation for o in orgs])
            await uow.commit()
        k = 0
        for org in orgs:
            batch = []
            for p in org.participants:
                batch.append(_publication(k, p))
                k += 1
            async with storage.unit_of_work() as uow:
                await uow.repository(PARTICIPANTS).add_many(batch)
                await uow.commit()
    finally:
        await storage.close()


@pytest.fixture(scope="module")
def seeded(postgres_url_and_schema: tuple[str, str]) -> Iterator[tuple[str, str]]:
    url, run_schema = postgres_url_and_schema
    schema = f"{run_schema}_due"
    try:
        asyncio.run(_seed(url, schema))
        with psycopg.connect(url, autocommit=True, options=f"-c search_path={schema}") as conn:
            conn.execute("ANALYZE")
        yield url, schema
    finally:
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema)))


@pytest.mark.postgres
def test_the_claim_of_due_cards_reads_the_partial_index(seeded: tuple[str, str]) -> None:
    url, schema = seeded
    table = Table(PARTICIPANTS, POSTGRES)
    for moment, taken in ((NOW, LIMIT), (NOW - timedelta(hours=2), 0)):
        plan = _plan(url, schema, table.claim(due(moment, LIMIT)))
        reads = list(_reads(plan, PARTICIPANTS.name))
        assert reads, plan
        for kind, read, index in reads:
            assert kind != "Seq Scan" and index == "participants_directory_due_idx", reads
            assert read <= taken + 1, reads


@pytest.mark.postgres
def test_the_table_is_large_and_the_due_cards_few(seeded: tuple[str, str]) -> None:
    """The premise: the table holds what the module says."""
    url, schema = seeded
    with psycopg.connect(url, autocommit=True, options=f"-c search_path={schema}") as conn:
        row = conn.execute(
            "SELECT count(*), count(directory_due_at), "
            "count(*) FILTER (WHERE directory_due_at <= %s) FROM participants",
            (NOW,),
        ).fetchone()
    assert row == (SHAPE.participants, SHAPE.participants // EVERY, SHAPE.participants // 200)
