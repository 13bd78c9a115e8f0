"""``Storage.watch``: an outbox worker's wake-up. It hears of records added by commits of its
own process on every adapter, and of other processes' on PostgreSQL for the collections they
announce; updates, rollbacks and other collections stay quiet."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

import attrs
import pytest

from fourcorner.adapters.postgres import PostgresStorage
from fourcorner.application.collections import ORGANISATIONS, TRANSACTIONS, USERS
from fourcorner.domain.transaction import Direction, Transaction
from records import user

from .test_repositories import received as received_in

if TYPE_CHECKING:  # fixtures' types; conftest modules are not imported by name
    from conftest import StorageUnderTest


def received(n: int, **changes: object) -> Transaction:
    """A received document of its own AS4 message (``message_key`` is unique)."""
    return received_in(n, **{"as4_message_id": f"m-{n}@test", **changes})


async def test_watchers_hear_of_records_this_process_adds(store: StorageUnderTest) -> None:
    heard: list[str] = []
    store.storage.watch({USERS.name}, lambda: heard.append("users"))
    store.storage.watch({ORGANISATIONS.name}, lambda: heard.append("organisations"))
    async with store.unit_of_work() as uow:
        await uow.repository(USERS).add(user("u-1"))
        await uow.commit()
    assert heard == ["users"]
    async with store.unit_of_work() as uow:
        await uow.repository(USERS).update(user("u-1", "Bea"))
        await uow.commit()
    async with store.unit_of_work() as uow:
        await uow.repository(USERS).add(user("u-2"))
        await uow.rollback()
    assert heard == ["users"]


async def test_a_received_document_is_no_work_for_the_sending_worker(
    store: StorageUnderTest,
) -> None:
    """``Collection.wakes``: the sending worker watches transactions to claim those that go to
    the network; adding a received one (``add`` or ``add_many``) does not wake it, adding one
    to send among received ones does."""
    heard: list[str] = []
    store.storage.watch({TRANSACTIONS.name}, lambda: heard.append("transactions"))
    async with store.unit_of_work() as uow:
        await uow.repository(TRANSACTIONS).add(received(1))
        await uow.repository(TRANSACTIONS).add_many([received(2), received(3)])
        await uow.commit()
    assert heard == []
    async with store.unit_of_work() as uow:
        outbound = received(5, direction=Direction.TO_NETWORK)
        await uow.repository(TRANSACTIONS).add_many([received(4), outbound])
        await uow.commit()
    assert heard == ["transactions"]
    async with store.unit_of_work() as uow:
        await uow.repository(TRANSACTIONS).add(received(6, direction=Direction.TO_NETWORK))
        await uow.commit()
    assert heard == ["transactions", "transactions"]


@pytest.mark.postgres
async def test_postgres_watchers_hear_of_records_another_process_adds(
    postgres_url_and_schema: tuple[str, str],
) -> None:
    url, schema = postgres_url_and_schema
    writer = PostgresStorage(url, schema=schema, announce=[USERS.name])
    watcher = PostgresStorage(url, schema=schema)
    await writer.open()
    await watcher.open()
    try:
        async with asyncio.timeout(10):
            await watcher.wait_listening()
        calls: list[int] = []
        heard = asyncio.Event()

        def hear() -> None:
            calls.append(1)
            heard.set()

        watcher.watch({USERS.name}, hear)
        async with writer.unit_of_work() as uow:
            await uow.repository(USERS).add(user("w-1"))
            await uow.commit()
        async with asyncio.timeout(1):
            await heard.wait()
        heard.clear()
        async with writer.unit_of_work() as uow:  # an update is no new work
            await uow.repository(USERS).update(attrs.evolve(user("w-1"), name="Cid"))
            await uow.commit()
        async with writer.unit_of_work() as uow:  # announced after the update, in order
            await uow.repository(USERS).add(user("w-2"))
            await uow.commit()
        async with asyncio.timeout(1):
            await heard.wait()
        assert len(calls) == 2  # the two adds, not the update
    finally:
        await writer.close()
        await watcher.close()
