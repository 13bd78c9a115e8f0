"""``Storage.watch``: an outbox worker's wake-up. It hears of records added by commits of its
own process on every adapter, and of other processes' on PostgreSQL for the collections they
announce; updates, rollbacks and other collections stay quiet."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

import attrs
import pytest

from adapters.postgres import PostgresStorage
from application.collections import ORGANISATIONS, USERS
from domain.organisation import UserRef
from domain.roles import Role
from domain.user import User

if TYPE_CHECKING:  # fixtures' types; conftest modules are not imported by name
    from conftest import StorageUnderTest

from datetime import UTC, datetime

T0 = datetime(2026, 1, 2, 10, 0, tzinfo=UTC)


def user(ident: str, name: str = "Ann") -> User:
    me = UserRef(ident)
    return User(
        id=ident,
        email=f"{ident}@example.com",
        name=name,
        role=Role.USER,
        terms_accepted_at=T0,
        created_at=T0,
        created_by=me,
        last_modified_at=T0,
        last_modified_by=me,
    )


async def test_watchers_hear_of_records_this_process_adds(store: StorageUnderTest) -> None:
    heard: list[str] = []
    store.storage.watch({USERS.name}, lambda: heard.append("users"))
    store.storage.watch({ORGANISATIONS.name}, lambda: heard.append("organisations"))
    async with store.unit_of_work() as uow:
        await uow.repository(USERS).add(user("u-1"))
        await uow.commit()
    assert heard == ["users"]
    async with store.unit_of_work() as uow:
        await uow.repository(USERS).update(user("u-1", name="Bea"))
        await uow.commit()
    async with store.unit_of_work() as uow:
        await uow.repository(USERS).add(user("u-2"))
        await uow.rollback()
    assert heard == ["users"]


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
        heard = asyncio.Event()
        watcher.watch({USERS.name}, heard.set)
        async with writer.unit_of_work() as uow:
            await uow.repository(USERS).add(user("w-1"))
            await uow.commit()
        async with asyncio.timeout(1):
            await heard.wait()
        heard.clear()
        async with writer.unit_of_work() as uow:  # an update is no new work
            await uow.repository(USERS).update(attrs.evolve(user("w-1"), name="Cid"))
            await uow.commit()
        await asyncio.sleep(0.2)
        assert not heard.is_set()
    finally:
        await writer.close()
        await watcher.close()
