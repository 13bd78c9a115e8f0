"""A delivery worker's claims leave out a full host by the host its deliveries hold
(``Delivery.host``), however many webhooks point there: past the 1,024 webhooks a worker once
named one by one, the host's backlog is not read again while the host is full, and the other
hosts' deliveries are claimed at once. A webhook whose URL changes takes its deliveries still
due to the host it names now; a delivery that holds another host than its webhook's URL names
(raised from a webhook read before the change) is counted and sent where the URL names, and
given that host when a claim reads it."""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import AsyncIterator
from typing import Any

import attrs
import pytest

from fourcorner.application import webhooks
from fourcorner.application.collections import DELIVERIES, WEBHOOKS
from fourcorner.application.delivery import DeliverySettings, DeliveryWorker
from fourcorner.application.ports import SendResult
from fourcorner.application.repositories import Deliveries
from fourcorner.application.sealed import WEBHOOK_SECRET
from fourcorner.domain.events import WEBHOOK_TEST
from fourcorner.domain.organisation import UserRef
from fourcorner.domain.webhook import Delivery, DeliveryStatus, Webhook
from fourcorner.domain.webhook_target import host_of, host_text
from fourcorner.entrypoints.container import resolve

from .test_webhook_limits import GUARD, make, trigger
from .test_webhook_per_host import running
from .test_webhooks import ALICE

SLOW = "slow.example.com"
SLOW_HOST = f"{SLOW}:443"
SLOW_HOOKS = 1100  # webhooks at the slow host: more than the 1,024 a worker once named
PER_ORG = 100  # an organisation's webhooks (``MAX_WEBHOOKS``)
FAST = 10  # deliveries to other hosts, each its own, due after all the slow host's


class SlowHost:
    """Hangs every delivery to ``SLOW`` until ``release`` is set; answers the others at once."""

    def __init__(self, fast: int) -> None:
        self.release, self.fast_sent = asyncio.Event(), asyncio.Event()
        self.hung = asyncio.Event()  # a delivery hangs
        self.fast, self.hanging = fast, 0
        self.sent: list[str] = []

    async def send(self, url: str, body: bytes, headers: dict[str, str]) -> SendResult:
        if host_of(url)[0] == SLOW:
            self.hanging += 1
            self.hung.set()
            try:
                await self.release.wait()
            finally:
                self.hanging -= 1
        self.sent.append(url)
        if sum(host_of(u)[0] != SLOW for u in self.sent) >= self.fast:
            self.fast_sent.set()
        return SendResult(duration_ms=1.0, status_code=204)


async def stored_hooks(api: Any, org_id: uuid.UUID, urls: list[str]) -> list[Webhook]:
    """Webhooks of ``org_id`` at ``urls``, stored as the resource makes them (past its bound on
    an organisation's webhooks, which the storage does not keep)."""
    ctx = await resolve(api.container.context)
    sealer = await resolve(api.container.sealer)
    now = ctx.clock()
    made = []
    for url in urls:
        ident = ctx.new_id()
        made.append(
            Webhook(
                id=ident,
                org_id=org_id,
                url=url,
                events=(WEBHOOK_TEST,),
                is_enabled=True,
                sealed_secret=WEBHOOK_SECRET.seal(sealer, ident, "whsec_test"),
                created_at=now,
                created_by=UserRef("test"),
                last_modified_at=now,
                last_modified_by=UserRef("test"),
            )
        )
    async with ctx.uow() as uow:
        await uow.repository(WEBHOOKS).add_many(made)
        await uow.commit()
    return made


async def raise_to(api: Any, org_id: uuid.UUID, hooks: list[Webhook]) -> None:
    """A test event of ``org_id`` to ``hooks``, as they are given (the URLs they hold may be
    ones read before a change)."""
    ctx = await resolve(api.container.context)
    async with ctx.uow() as uow:
        await webhooks.raise_event(ctx, uow, org_id, WEBHOOK_TEST, {"message": "hi"}, hooks)
        await uow.commit()


@contextlib.asynccontextmanager
async def working(api: Any, host: SlowHost, settings: DeliverySettings) -> AsyncIterator[Any]:
    """A worker running with ``settings``, sending to ``host``; at the end the slow host
    answers, and the worker stops once its sends and their outcomes' writes have ended."""
    worker, stop, task = await running(api, host, settings)
    try:
        yield worker
    finally:
        host.release.set()
        stop.set()
        async with asyncio.timeout(GUARD):
            await task


async def stored(api: Any) -> list[Delivery]:
    ctx = await resolve(api.container.context)
    async with ctx.reads() as uow:
        return await uow.repository(DELIVERIES).all()


async def test_past_1024_webhooks_a_full_host_is_left_out_and_its_backlog_not_read(
    api: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """1,100 webhooks (of eleven organisations) at one host that hangs, each with a delivery
    due, and ten deliveries to other hosts due after them all: the host holds its two places,
    and from the claim that filled them on, no claim reads a delivery of its backlog (each
    claim names the host, and every row a claim returns is leased); the others are sent at
    once."""
    for n in range(SLOW_HOOKS // PER_ORG):
        org = uuid.UUID(int=1 + n)
        urls = [f"https://{SLOW}/{n}/{k}" for k in range(PER_ORG)]
        await raise_to(api, org, await stored_hooks(api, org, urls))
    fast_org = uuid.UUID(int=500)
    urls = [f"https://fast{k}.example.com/in" for k in range(FAST)]
    await raise_to(api, fast_org, await stored_hooks(api, fast_org, urls))
    claims: list[tuple[list[str], list[Delivery]]] = []
    claim_due = Deliveries.claim_due

    async def recorded(self: Deliveries, *args: Any, **kwargs: Any) -> list[Delivery]:
        found = await claim_due(self, *args, **kwargs)
        claims.append((list(args[3]) if len(args) > 3 else [], found))
        return found

    monkeypatch.setattr(Deliveries, "claim_due", recorded)
    host = SlowHost(FAST)
    settings = DeliverySettings(
        concurrency=16, per_endpoint=1, per_endpoint_waiting=1, per_host=2, poll_interval=0.01
    )
    async with working(api, host, settings) as worker:
        async with asyncio.timeout(GUARD):
            await host.fast_sent.wait()
        for _ in range(5):  # and the worker goes on claiming: the backlog stays unread
            await asyncio.sleep(0.05)
        assert host.hanging == 1  # and one waiting its turn at its organisation's endpoint
        assert worker._places.by_host[SLOW, 443] == 2
        assert worker._places.full_hosts() == {(SLOW, 443)}
    first = next(i for i, (_, rows) in enumerate(claims) if rows)
    assert all(d.host == SLOW_HOST for d in claims[first][1])  # due first: it filled the host
    later = [(hosts, rows) for hosts, rows in claims[first + 1 :] if rows or hosts]
    assert later and all(hosts == [SLOW_HOST] for hosts, _ in later)
    assert not any(d.host == SLOW_HOST for _, rows in later for d in rows)
    assert sum(len(rows) for _, rows in later) == FAST  # each read once, and leased
    sent_fast = [u for u in host.sent if host_of(u)[0] != SLOW]
    assert sorted(sent_fast) == sorted(urls)


async def test_a_webhook_moved_off_a_full_host_takes_its_due_deliveries_along(api: Any) -> None:
    """A webhook whose first delivery hangs at the slow host (full with it) and whose other
    two wait there; its URL changed by PUT to another host: those two are claimed and sent to
    the new URL while the slow host still hangs, and nothing more goes to the slow host."""
    await api.many_test_events()
    org = await api.org(ALICE)
    status, made = await make(api, org["id"], f"https://{SLOW}/in")
    assert status == 201
    for _ in range(3):
        await trigger(api, org["id"])
    host = SlowHost(2)
    settings = DeliverySettings(
        per_endpoint=1, per_endpoint_waiting=1, per_host=1, poll_interval=0.01
    )
    async with working(api, host, settings) as worker:
        async with asyncio.timeout(GUARD):
            await host.hung.wait()
        assert worker._places.full_hosts() == {(SLOW, 443)}
        held = [d for d in await stored(api) if d.status is DeliveryStatus.PENDING]
        assert [d.host for d in held] == [SLOW_HOST] * 3
        new_url = "https://New.Example.com:443/in"
        status, _ = await api.call(
            "PUT", f"/orgs/{org['id']}/webhooks/{made['id']}", as_=ALICE, json={"url": new_url}
        )
        assert status == 200
        async with asyncio.timeout(GUARD):
            await host.fast_sent.wait()
        assert host.hanging == 1  # the slow host still hangs: they did not wait for it
        assert host.sent == [new_url, new_url]
    assert host.sent[2:] == [f"https://{SLOW}/in"]  # the one sent before the change
    done = await stored(api)
    assert [d.status for d in done] == [DeliveryStatus.DELIVERED] * 3
    # the one sent before: its outcome written as its claim read it
    assert sorted(d.host for d in done) == ["new.example.com:443"] * 2 + [SLOW_HOST]


async def test_a_delivery_holding_another_host_than_its_webhooks_url_is_moved_when_read(
    api: Any,
) -> None:
    """Two deliveries raised from a webhook read before its URL changed (they hold the old
    host): the claim leases one, counted at the new host, and leaves the other due (the
    endpoint is full); both hold the new host after it, so the old host being full leaves
    neither out; the one leased is sent to the new URL."""
    org_id = uuid.UUID(int=900)
    (hook,) = await stored_hooks(api, org_id, ["https://new.example.com/in"])
    before = attrs.evolve(hook, url=f"https://{SLOW}/in")
    for _ in range(2):
        await raise_to(api, org_id, [before])
    assert [d.host for d in await stored(api)] == [SLOW_HOST] * 2
    ctx = await resolve(api.container.context)
    sealer = await resolve(api.container.sealer)
    host = SlowHost(1)
    settings = DeliverySettings(per_endpoint=1, per_endpoint_waiting=0, per_host=1)
    worker = DeliveryWorker(ctx, sealer, host, settings)
    (job,) = await worker.claim(10)
    assert worker.blocked  # the other left due: the endpoint is full
    new_host = host_text(host_of(hook.url))
    assert job.delivery.host == new_host
    assert set(worker._places.by_host) == {("new.example.com", 443)}
    now = ctx.clock()
    found = {d.id: d for d in await stored(api)}
    assert [d.host for d in found.values()] == [new_host] * 2
    assert found[job.delivery.id].lease_until > now  # leased, with its new host
    (other,) = [d for d in found.values() if d.id != job.delivery.id]
    assert other.lease_until <= now  # due, not leased
    await worker._deliver(job)
    assert host.sent == [hook.url]
    after = {d.id: d.status for d in await stored(api)}
    assert after == {job.delivery.id: DeliveryStatus.DELIVERED, other.id: DeliveryStatus.PENDING}


async def test_a_put_reads_the_webhooks_deliveries_only_when_its_host_changes(
    api: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A change of the description, or of the URL within its host however spelt, moves no
    delivery and reads none; a URL at another host moves them once."""
    moves: list[tuple[uuid.UUID, str]] = []
    move_pending = Deliveries.move_pending

    async def recorded(self: Deliveries, webhook_id: uuid.UUID, host: str) -> int:
        moves.append((webhook_id, host))
        return await move_pending(self, webhook_id, host)

    monkeypatch.setattr(Deliveries, "move_pending", recorded)
    org = await api.org(ALICE)
    status, made = await make(api, org["id"], f"https://{SLOW}/in")
    assert status == 201
    path = f"/orgs/{org['id']}/webhooks/{made['id']}"
    for body in (
        {"description": "the slow one"},
        {"url": "https://a1@SLOW.example.com.:443/other"},
        {"url": "https://next.example.com/in"},
    ):
        status, _ = await api.call("PUT", path, as_=ALICE, json=body)
        assert status == 200
    assert moves == [(uuid.UUID(made["id"]), "next.example.com:443")]
