"""A host that hangs, whatever organisations' webhooks point at it, holds at most ``per_host`` of
a delivery worker's places: the other hosts' deliveries go out meanwhile, and the deliveries
left due there are each delivered once when it answers again. However the webhooks' URLs spell
the host (a user name, capitals, the default port, a trailing dot), it is one host, and one
organisation's endpoint there."""

from __future__ import annotations

import asyncio
import uuid
from collections import Counter
from typing import Any

from fourcorner.application.collections import DELIVERIES
from fourcorner.application.delivery import DeliverySettings, DeliveryWorker
from fourcorner.application.ports import SendResult
from fourcorner.domain.webhook import DeliveryStatus
from fourcorner.domain.webhook_target import host_of
from fourcorner.entrypoints.container import resolve

from .test_membership_races import org_number
from .test_webhook_limits import GUARD, make, trigger
from .test_webhooks import ALICE

ORGS = 5  # organisations one user made, each with a webhook at the slow host
EVENTS = 3  # raised by each: more than an organisation's endpoint may hold (two)
SLOW = "slow.example.com"
# the slow host as the organisations' webhooks spell it, each its own way
SPELLINGS = [
    f"https://{SLOW}/",
    f"https://a1@{SLOW}/",
    f"https://{SLOW.upper()}/",
    f"https://{SLOW}:443/",
    f"https://{SLOW}./",
    "https://a2@Slow.Example.Com.:443/",
]


def at_slow_host(url: str) -> bool:
    return host_of(url) == (SLOW, 443)


class SlowHost:
    """Hangs every delivery to ``SLOW`` until ``release`` is set; answers the others at once."""

    def __init__(self) -> None:
        self.release, self.fast_sent = asyncio.Event(), asyncio.Event()
        self.all_sent = asyncio.Event()  # as many as the organisations' deliveries
        self.hanging = 0
        self.most_hanging = 0
        self.sent: Counter[tuple[str, str]] = Counter()  # by URL and message id

    async def send(self, url: str, body: bytes, headers: dict[str, str]) -> SendResult:
        if at_slow_host(url):
            self.hanging += 1
            self.most_hanging = max(self.most_hanging, self.hanging)
            try:
                await self.release.wait()
            finally:
                self.hanging -= 1
        else:
            self.fast_sent.set()
        self.sent[url, headers["webhook-id"]] += 1
        if sum(self.sent.values()) >= ORGS * EVENTS + 1:
            self.all_sent.set()
        return SendResult(duration_ms=1.0, status_code=204)


async def slow_host_backlog(api: Any) -> list[uuid.UUID]:
    """``ORGS`` organisations of one user, each raising ``EVENTS`` to its webhook at the slow
    host (each spelling it its own way); then another's delivery to another host, due last.
    The organisations' ids."""
    await api.many_test_events()
    orgs = [await api.org(ALICE, legal_id=org_number(7000 + n)) for n in range(ORGS)]
    for n, org in enumerate(orgs):
        status, _ = await make(api, org["id"], f"{SPELLINGS[n]}{n}")
        assert status == 201
    for org in orgs:
        for _ in range(EVENTS):
            await trigger(api, org["id"])
    other = await api.org(ALICE, legal_id=org_number(7000 + ORGS))
    status, _ = await make(api, other["id"], "https://fast.example.com/in")
    assert status == 201
    await trigger(api, other["id"])
    return [uuid.UUID(org["id"]) for org in [*orgs, other]]


async def deliveries_of(api: Any, orgs: list[uuid.UUID]) -> list[Any]:
    ctx = await resolve(api.container.context)
    found: list[Any] = []
    async with ctx.reads() as uow:
        for org_id in orgs:
            found += await uow.repository(DELIVERIES).all(orgId=org_id)
    return found


async def leased_to_slow_host(api: Any, orgs: list[uuid.UUID], hooks: set[uuid.UUID]) -> int:
    now = (await resolve(api.container.context)).clock()
    return sum(
        1
        for d in await deliveries_of(api, orgs)
        if d.webhook_id in hooks and d.status is DeliveryStatus.PENDING and d.lease_until > now
    )


async def slow_hooks(api: Any, orgs: list[uuid.UUID]) -> set[uuid.UUID]:
    hooks: set[uuid.UUID] = set()
    for org_id in orgs:
        _, listed = await api.call("GET", f"/orgs/{org_id}/webhooks", as_=ALICE)
        hooks |= {uuid.UUID(h["id"]) for h in listed["items"] if at_slow_host(h["url"])}
    return hooks


async def running(api: Any, host: SlowHost, settings: DeliverySettings) -> Any:
    ctx = await resolve(api.container.context)
    sealer = await resolve(api.container.sealer)
    worker = DeliveryWorker(ctx, sealer, host, settings)
    stop = asyncio.Event()
    return worker, stop, asyncio.create_task(worker.run(stop))


async def test_many_organisations_at_one_hanging_host_leave_the_other_places_to_other_hosts(
    api: Any,
) -> None:
    """Five organisations' webhooks at one host that hangs, each with more deliveries due than
    its endpoint may hold (without the bound by host, they took all six places of the worker):
    the host holds at most half of them, and the delivery to another host, due after all of
    theirs, is sent meanwhile."""
    orgs = await slow_host_backlog(api)
    hooks = await slow_hooks(api, orgs)
    host = SlowHost()
    settings = DeliverySettings(
        concurrency=6, per_endpoint=1, per_endpoint_waiting=1, poll_interval=0.01
    )
    assert settings.host_places == 3
    worker, stop, task = await running(api, host, settings)
    try:
        async with asyncio.timeout(GUARD):
            await host.fast_sent.wait()
        for _ in range(5):  # and the worker goes on claiming: the slow host gets no more
            assert await leased_to_slow_host(api, orgs, hooks) <= 3
            await asyncio.sleep(0.05)
        assert 1 <= host.most_hanging <= 3
        assert worker._places.by_host[SLOW, 443] <= 3
    finally:
        host.release.set()
        stop.set()
        async with asyncio.timeout(GUARD):
            await task


async def test_deliveries_left_due_at_a_full_host_are_each_delivered_once_it_answers(
    api: Any,
) -> None:
    """With ``per_host`` two: while the slow host hangs, two of its fifteen deliveries are
    leased and the others stay due, unleased, with no attempt made; once it answers, every
    delivery, the other host's too, is delivered once, at its first attempt."""
    orgs = await slow_host_backlog(api)
    hooks = await slow_hooks(api, orgs)
    host = SlowHost()
    settings = DeliverySettings(
        per_endpoint=1, per_endpoint_waiting=1, per_host=2, poll_interval=0.01
    )
    worker, stop, task = await running(api, host, settings)
    try:
        async with asyncio.timeout(GUARD):
            await host.fast_sent.wait()
        assert await leased_to_slow_host(api, orgs, hooks) == 2
        waiting = [d for d in await deliveries_of(api, orgs) if d.webhook_id in hooks]
        assert len(waiting) == ORGS * EVENTS
        assert Counter(d.status for d in waiting) == {DeliveryStatus.PENDING: ORGS * EVENTS}
        assert sum(not d.attempts for d in waiting) == ORGS * EVENTS
        host.release.set()
        async with asyncio.timeout(GUARD):
            await host.all_sent.wait()
    finally:
        host.release.set()
        stop.set()
        async with asyncio.timeout(GUARD):
            await task  # its sends in flight, and their outcomes' writes, end first
    assert len(host.sent) == ORGS * EVENTS + 1 and set(host.sent.values()) == {1}
    delivered = await deliveries_of(api, orgs)
    assert len(delivered) == ORGS * EVENTS + 1
    assert all(d.status is DeliveryStatus.DELIVERED for d in delivered)
    assert all(len(d.attempts) == 1 for d in delivered)
    assert (worker._places.by_endpoint, worker._places.by_host) == ({}, {})


async def test_one_organisations_spellings_of_a_host_are_one_endpoint(api: Any) -> None:
    """One organisation's webhooks at the slow host, each URL spelling it otherwise (keyed by
    the URL's text, each was an endpoint of its own, with places of its own): its endpoint
    there holds at most ``per_endpoint`` sending and ``per_endpoint_waiting`` waiting, and
    another organisation's delivery to another host is sent meanwhile."""
    await api.many_test_events()
    org = await api.org(ALICE, legal_id=org_number(7100))
    for n, url in enumerate(SPELLINGS):
        status, _ = await make(api, org["id"], f"{url}{n}")
        assert status == 201
    for _ in range(2):
        await trigger(api, org["id"])
    other = await api.org(ALICE, legal_id=org_number(7101))
    status, _ = await make(api, other["id"], "https://fast.example.com/in")
    assert status == 201
    await trigger(api, other["id"])
    orgs = [uuid.UUID(org["id"]), uuid.UUID(other["id"])]
    hooks = await slow_hooks(api, orgs)
    assert len(hooks) == len(SPELLINGS)
    host = SlowHost()
    settings = DeliverySettings(
        concurrency=20, per_endpoint=1, per_endpoint_waiting=1, per_host=10, poll_interval=0.01
    )
    worker, stop, task = await running(api, host, settings)
    try:
        async with asyncio.timeout(GUARD):
            await host.fast_sent.wait()
        for _ in range(5):
            assert await leased_to_slow_host(api, orgs, hooks) <= 2
            await asyncio.sleep(0.05)
        assert host.most_hanging == 1
        assert worker._places.by_endpoint[uuid.UUID(org["id"]), (SLOW, 443)] <= 2
    finally:
        host.release.set()
        stop.set()
        async with asyncio.timeout(GUARD):
            await task
