"""A webhook delivery's outcome is the claim's that holds it: a worker whose lease ran out
while it sent (a hanging endpoint) may find that another worker has claimed the delivery
since, sent it and recorded what it met; the late worker's outcome is then not written over
it, on the delivery nor on its event. The workers run on a clock the test moves (the
context's ``clock``): a lease runs out when the test says, without waiting for it."""

from __future__ import annotations

import asyncio
import logging
from datetime import UTC, datetime, timedelta
from typing import Any

import attrs
import pytest

from fourcorner.application.collections import DELIVERIES
from fourcorner.application.context import Context
from fourcorner.application.delivery import DeliverySettings, DeliveryWorker
from fourcorner.application.ports import SendResult
from fourcorner.domain.webhook import DeliveryStatus
from fourcorner.entrypoints.container import resolve

from .test_webhook_limits import make, trigger
from .test_webhooks import ALICE

GUARD = 30  # seconds a test waits for what must happen, before failing
LEASE = timedelta(seconds=60)
TICK = timedelta(microseconds=1)


class Clock:
    """The workers' time, standing still until the test moves it."""

    def __init__(self) -> None:
        self.now = datetime.now(UTC)

    def __call__(self) -> datetime:
        return self.now


async def on_clock(api: Any) -> tuple[Context, Clock]:
    """The server's context, on a clock of the test's."""
    clock = Clock()
    return attrs.evolve(await resolve(api.container.context), clock=clock), clock


class Answers:
    """A webhook receiver answering ``status``; with ``hang``, each send first waits for
    ``release`` (``entered`` set once it waits)."""

    def __init__(self, status: int, *, hang: bool = False) -> None:
        self.status, self.hang = status, hang
        self.entered, self.release = asyncio.Event(), asyncio.Event()

    async def send(self, url: str, body: bytes, headers: dict[str, str]) -> SendResult:
        if self.hang:
            self.entered.set()
            await self.release.wait()
        return SendResult(duration_ms=1.0, status_code=self.status)


async def outlived(
    late: DeliveryWorker,
    sent: Answers | FirstHangs,
    taker: DeliveryWorker,
    clock: Clock,
    caplog: pytest.LogCaptureFixture,
) -> str:
    """``late``'s send (to ``sent``, which hangs until released) outlives its lease, ``taker``
    claims the delivery meanwhile and delivers it, then the late send ends: the late outcome
    is not written; what the warning said of it."""
    async with asyncio.timeout(GUARD):
        first = asyncio.create_task(late.run_once())
        await sent.entered.wait()
        clock.now += LEASE  # the lease's last moment: the delivery is still held
        assert await taker.run_once() == 0
        clock.now += TICK  # its lease runs out as it waits
        assert await taker.run_once() == 1  # claimed again, sent, delivered
        sent.release.set()  # the late send ends: a failure, to be retried
        with caplog.at_level(logging.WARNING, logger="fourcorner.webhooks"):
            assert await first == 1
    async with late._ctx.uow() as uow:
        [stored] = await uow.repository(DELIVERIES).all()
    assert stored.status is DeliveryStatus.DELIVERED, stored
    assert [a.status_code for a in stored.attempts] == [204]
    [warned] = [r.getMessage() for r in caplog.records if "not recorded" in r.getMessage()]
    return warned


async def test_a_worker_whose_lease_ran_out_leaves_the_outcome_to_the_one_that_took_over(
    api: Any, caplog: pytest.LogCaptureFixture
) -> None:
    org = await api.org(ALICE)
    status, _ = await make(api, org["id"], "https://hooks.example.com/slow")
    assert status == 201
    event = await trigger(api, org["id"])
    ctx, clock = await on_clock(api)
    sealer = await resolve(api.container.sealer)
    hanging, quick = Answers(500, hang=True), Answers(204)
    late = DeliveryWorker(ctx, sealer, hanging, DeliverySettings(lease=LEASE))
    taker = DeliveryWorker(ctx, sealer, quick, DeliverySettings())
    warned = await outlived(late, hanging, taker, clock, caplog)
    assert "another worker claimed it" in warned
    path = f"/orgs/{org['id']}/webhooks/events/{event['id']}"
    status, shown = await api.call("GET", path, as_=ALICE)
    assert status == 200, shown
    [delivery] = shown["deliveries"]
    assert delivery["status"] == "DELIVERED", delivery
    assert [a["statusCode"] for a in delivery["attempts"]] == [204], delivery


class FirstHangs:
    """A webhook receiver whose first send waits for ``release`` (``entered`` set once it
    waits) and answers 500; every later one answers 204 at once."""

    def __init__(self) -> None:
        self.entered, self.release = asyncio.Event(), asyncio.Event()
        self.sends = 0

    async def send(self, url: str, body: bytes, headers: dict[str, str]) -> SendResult:
        self.sends += 1
        if self.sends == 1:
            self.entered.set()
            await self.release.wait()
            return SendResult(duration_ms=1.0, status_code=500)
        return SendResult(duration_ms=1.0, status_code=204)


async def test_a_worker_that_claimed_its_own_delivery_again_says_so(
    api: Any, caplog: pytest.LogCaptureFixture
) -> None:
    """The lease of a worker's send runs out and the same worker claims the delivery again
    (and delivers it): the late outcome is not written, and the warning names this worker,
    not another."""
    org = await api.org(ALICE)
    status, _ = await make(api, org["id"], "https://hooks.example.com/slow")
    assert status == 201
    await trigger(api, org["id"])
    ctx, clock = await on_clock(api)
    sealer = await resolve(api.container.sealer)
    receiver = FirstHangs()
    worker = DeliveryWorker(ctx, sealer, receiver, DeliverySettings(lease=LEASE))
    warned = await outlived(worker, receiver, worker, clock, caplog)
    assert "this worker claimed it again" in warned
    assert (worker._leases, worker._superseded) == ({}, set())
