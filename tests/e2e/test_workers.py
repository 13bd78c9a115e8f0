"""Delivery workers as separate processes on one PostgreSQL: two workers deliver every event
exactly once, and a worker killed with SIGKILL mid-burst loses nothing."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

import pg
from fourcorner.adapters.pki import ensure_test_pki
from fourcorner.application import organisations, users, webhooks
from fourcorner.application.access import Principal
from fourcorner.application.collections import DELIVERIES, EVENTS
from fourcorner.application.identity import Identity
from fourcorner.application.organisations import CreateOrganisation
from fourcorner.application.webhooks import CreateWebhook, WebhookSettings
from fourcorner.domain.webhook import DeliveryStatus
from fourcorner.entrypoints.config import Settings
from fourcorner.entrypoints.container import build_container, resolve, web_app

pytestmark = [pytest.mark.slow, pytest.mark.postgres]
BIN = Path(sys.executable).parent / "fourcorner"


class Counting:
    def __init__(self, delay: float) -> None:
        self.delay = delay
        self.seen: Counter[str] = Counter()

    async def handle(self, request: web.Request) -> web.Response:
        await request.read()
        await asyncio.sleep(self.delay)
        self.seen[request.headers["webhook-id"]] += 1
        return web.Response(status=200)


@pytest.fixture
async def world(tmp_path: Path, aiohttp_server: Any):
    pg.require()
    with pg.fresh_schema("fc_workers") as schema:
        ensure_test_pki(tmp_path)
        env = {
            **{k: v for k, v in os.environ.items() if not k.startswith("FOURCORNER_")},
            "FOURCORNER_DATA_DIR": str(tmp_path),
            "FOURCORNER_DATABASE_URL": pg.URL,
            "FOURCORNER_DATABASE_SCHEMA": schema,
            "FOURCORNER_WEBHOOK_ALLOW_PRIVATE_TARGETS": "true",
            "FOURCORNER_LOG_LEVEL": "warning",
        }
        settings = Settings.load(env)
        container = build_container(settings)
        await web_app(container)  # a server's start: the certificates the workers wait for
        ctx = await resolve(container.context)
        yield env, ctx, await resolve(container.sealer), aiohttp_server
        await container.shutdown_resources()


async def prepare(
    ctx: Any, sealer: Any, aiohttp_server: Any, receiver: Counting, events: int
) -> list[uuid.UUID]:
    app = web.Application()
    app.router.add_post("/in", receiver.handle)
    server = await aiohttp_server(app)
    user = await users.sign_in(ctx, Identity("w", "w@example.com"))
    me = Principal(user=user)
    org = await organisations.create(
        ctx, me, CreateOrganisation("2120000787", "W", "SE", "SE:ORGNR")
    )
    await webhooks.create(
        ctx,
        sealer,
        me,
        org.id,
        CreateWebhook(str(server.make_url("/in")), ("webhook.test",)),
        WebhookSettings(allow_private_targets=True),
    )
    ids = []
    hooks = await webhooks.webhooks_of(ctx, org.id)
    for start in range(0, events, 200):
        async with ctx.uow() as uow:
            for i in range(start, min(events, start + 200)):
                e = await webhooks.raise_event(ctx, uow, org.id, "webhook.test", {"n": i}, hooks)
                ids.append(e.id)
            await uow.commit()
    return ids


def start_worker(env: dict[str, str], **extra: str) -> subprocess.Popen[bytes]:
    log = open(Path(env["FOURCORNER_DATA_DIR"]) / "worker.log", "ab")  # noqa: SIM115
    return subprocess.Popen([str(BIN), "worker"], env={**env, **extra}, stderr=log)


async def pending(ctx: Any) -> int:
    async with ctx.uow() as uow:
        return await uow.repository(DELIVERIES).count(status=DeliveryStatus.PENDING)


async def wait_all_delivered(ctx: Any, within: float) -> None:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if await pending(ctx) == 0:
            return
        await asyncio.sleep(0.2)
    raise AssertionError(f"{await pending(ctx)} deliveries still pending")


async def test_two_workers_deliver_each_event_exactly_once(world: Any) -> None:
    env, ctx, sealer, aiohttp_server = world
    receiver = Counting(delay=0.0)
    ids = await prepare(ctx, sealer, aiohttp_server, receiver, 1000)
    workers = [start_worker(env), start_worker(env)]
    try:
        await wait_all_delivered(ctx, within=120)
    finally:
        for w in workers:
            w.terminate()
            w.wait(timeout=20)
    assert len(receiver.seen) == 1000
    assert set(receiver.seen) == {f"msg_{i.hex}" for i in ids}
    assert max(receiver.seen.values()) == 1  # exactly once
    async with ctx.uow() as uow:
        assert await uow.repository(EVENTS).count(status=DeliveryStatus.DELIVERED) == 1000


async def test_a_killed_worker_loses_nothing(world: Any) -> None:
    env, ctx, sealer, aiohttp_server = world
    receiver = Counting(delay=0.005)
    ids = await prepare(ctx, sealer, aiohttp_server, receiver, 300)
    # one send in flight at a time, so a kill costs at most one duplicate, and a short lease
    # (with a timeout it outlasts), so the killed worker's delivery is taken over soon
    extra = {
        "FOURCORNER_WEBHOOK_CONCURRENCY": "1",
        "FOURCORNER_WEBHOOK_LEASE_SECONDS": "5",
        "FOURCORNER_WEBHOOK_TIMEOUT": "2",
    }
    kills = 0
    for fraction in (0.2, 0.45, 0.7):
        worker = start_worker(env, **extra)
        while sum(receiver.seen.values()) < fraction * len(ids):
            await asyncio.sleep(0.01)
            assert worker.poll() is None
        worker.send_signal(signal.SIGKILL)
        worker.wait(timeout=10)
        kills += 1
    last = start_worker(env, **extra)
    try:
        await wait_all_delivered(ctx, within=120)
    finally:
        last.terminate()
        last.wait(timeout=20)
    assert set(receiver.seen) == {f"msg_{i.hex}" for i in ids}  # nothing lost
    duplicates = sum(n - 1 for n in receiver.seen.values())
    assert duplicates <= kills
