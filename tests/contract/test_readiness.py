"""The readiness check of the PostgreSQL storage (``ping``, behind ``GET /readyz``) answers
promptly while the database is away, each time it is asked, and passes again once it is
back: its wait for a connection is bounded (``PING_WAIT``), not the pool's 10 s."""

from __future__ import annotations

import asyncio
import time

import pytest

import pg
from fourcorner.adapters.postgres import PostgresStorage
from fourcorner.adapters.postgres.storage import PING_WAIT
from fourcorner.domain.errors import ServiceUnavailable
from tcp_proxy import Proxy

pytestmark = pytest.mark.postgres


async def test_ping_answers_promptly_while_the_database_is_away() -> None:
    pg.require()
    proxy = Proxy.before(pg.URL)
    await proxy.restore()
    with pg.fresh_schema("fc_ping") as schema:
        storage = PostgresStorage(proxy.url(pg.URL), schema=schema, cache=False)
        await storage.open()
        try:
            await storage.ping()
            await proxy.cut()  # the port is closed: no connection can be opened
            for _ in range(3):
                started = time.monotonic()
                with pytest.raises(ServiceUnavailable):
                    await storage.ping()
                assert time.monotonic() - started < PING_WAIT + 1
            await proxy.restore()
            deadline = time.monotonic() + 30
            while True:
                try:
                    await storage.ping()
                    break
                except ServiceUnavailable:
                    assert time.monotonic() < deadline, "the storage did not recover"
                    await asyncio.sleep(0.2)
        finally:
            await storage.close()
            await proxy.cut()
