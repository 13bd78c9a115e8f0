"""A busy webhook endpoint (HTTP 429 or 503 with ``Retry-After``, as rate-limited receivers
answer) delays a delivery without using up its attempts: the sender reads the wait it asks
for, the delivery is stored due no sooner (in the write that records the attempt), the event
shows the endpoint was busy and when the next attempt is, and once the endpoint takes it the
delivery is delivered. Meanwhile the worker holds the webhook's other deliveries back until
then, unsent, and sends those of other webhooks."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from typing import Any

import pytest
from aiohttp import web

from fourcorner.application.collections import DELIVERIES
from fourcorner.application.delivery import DeliverySettings, DeliveryWorker
from fourcorner.domain.clock import iso
from fourcorner.domain.webhook import NO_LEASE, Delivery, DeliveryStatus
from fourcorner.entrypoints.container import resolve

from .conftest import BACKENDS
from .test_send_busy import OnClock, second

ALICE = "alice@example.com"


class Endpoint:
    """A webhook receiver on 127.0.0.1: a POST to ``/{name}`` is answered by the next of
    ``script[name]`` (status and Retry-After; 200 once the script is used up)."""

    def __init__(self) -> None:
        self.script: dict[str, list[tuple[int, str | None]]] = {}
        self.calls: dict[str, int] = {}
        self.base = ""

    async def handle(self, request: web.Request) -> web.Response:
        name = request.match_info["name"]
        await request.read()
        self.calls[name] = self.calls.get(name, 0) + 1
        script = self.script.get(name, [])
        status, retry_after = script.pop(0) if script else (200, None)
        headers = {"Retry-After": retry_after} if retry_after is not None else {}
        return web.Response(
            status=status, text="slow down" if status != 200 else "", headers=headers
        )


class Hooks(OnClock):
    """A server on a clock the test moves (``at``), its organisation and webhooks to
    ``endpoint``; its delivery worker is run one round at a time."""

    def __init__(self, api: Any, endpoint: Endpoint, clock: list[datetime]) -> None:
        self.api, self.endpoint, self.clock = api, endpoint, clock
        self.org: dict[str, Any] = {}

    async def hook(self, name: str) -> str:
        status, made = await self.api.call(
            "POST",
            f"/orgs/{self.org['id']}/webhooks",
            as_=ALICE,
            json={"url": f"{self.endpoint.base}/{name}", "events": ["webhook.test"]},
        )
        assert status == 201, made
        return str(made["id"])

    async def trigger(self) -> str:
        status, event = await self.api.call(
            "POST",
            f"/orgs/{self.org['id']}/webhooks/trigger-test-event",
            as_=ALICE,
            json={"eventType": "webhook.test"},
        )
        assert status == 200, event
        return str(event["id"])

    async def worker(self, **settings: Any) -> DeliveryWorker:
        """The server's worker, or with ``settings`` one of its own (as another process's)."""
        if not settings:
            return await resolve(self.api.container.delivery_worker)
        ctx = await resolve(self.api.container.context)
        sealer = await resolve(self.api.container.sealer)
        sender = await resolve(self.api.container.webhook_sender)
        policy = (await resolve(self.api.container.delivery_settings)).retry
        return DeliveryWorker(ctx, sealer, sender, DeliverySettings(retry=policy, **settings))

    async def deliveries(self, event_id: str) -> list[Delivery]:
        """The stored deliveries of an event."""
        ctx = await resolve(self.api.container.context)
        async with ctx.uow() as uow:
            return list(await uow.repository(DELIVERIES).all(eventId=uuid.UUID(event_id)))

    async def delivery(self, event_id: str) -> Delivery:
        """The stored delivery of an event to the one webhook."""
        [d] = await self.deliveries(event_id)
        return d

    async def shown(self, event_id: str) -> dict[str, Any]:
        path = f"/orgs/{self.org['id']}/webhooks/events/{event_id}"
        status, event = await self.api.call("GET", path, as_=ALICE)
        assert status == 200, event
        return dict(event)


@pytest.fixture
async def hooks(start_api: Any, aiohttp_server: Any) -> Callable[..., Any]:
    async def start(backend: str, endpoint: Endpoint, at: datetime) -> Hooks:
        app = web.Application()
        app.router.add_post("/{name}", endpoint.handle)
        server = await aiohttp_server(app, host="127.0.0.1")
        endpoint.base = str(server.make_url("")).rstrip("/")
        clock = [at]
        api = await start_api(backend, webhook_allow_private_targets=True, clock=lambda: clock[0])
        h = Hooks(api, endpoint, clock)
        h.org = await api.org(ALICE)
        return h

    return start


@pytest.mark.parametrize("backend", BACKENDS)
async def test_a_busy_endpoint_delays_the_delivery_as_asked_without_using_an_attempt(
    hooks: Any, backend: str
) -> None:
    """429 with ``Retry-After: 120`` (longer than the 30 s a failure waits), then 200."""
    t0 = datetime.now(UTC).replace(microsecond=0)
    endpoint = Endpoint()
    endpoint.script["in"] = [(429, "120")]
    h = await hooks(backend, endpoint, t0)
    await h.hook("in")
    event_id = await h.trigger()
    worker = await h.worker()
    assert await worker.run_once() == 1 and endpoint.calls == {"in": 1}
    busy = await h.delivery(event_id)
    # due when the endpoint asked, no attempt used, the claim given back, the first busy
    # refusal kept
    assert (busy.status, busy.used, busy.busy_since) == (DeliveryStatus.PENDING, 0, t0)
    assert busy.next_attempt_at == t0 + timedelta(seconds=120)
    assert busy.lease_until == NO_LEASE
    shown = await h.shown(event_id)
    assert (shown["status"], shown["nextAttemptAt"]) == ("PENDING", iso(busy.next_attempt_at))
    [delivery] = shown["deliveries"]
    assert delivery["nextAttemptAt"] == iso(busy.next_attempt_at)
    [attempt] = delivery["attempts"]
    assert (attempt["statusCode"], attempt["counted"], attempt["error"]) == (429, False, None)
    assert attempt["busy"] == (
        "the endpoint is busy (HTTP 429, Retry-After 120 s): next attempt at "
        f"{second(busy.next_attempt_at)}, not counted as an attempt"
    )
    # not due a second earlier, to a worker that does not hold the webhook back either (as
    # another process's): the stored time alone keeps it
    h.at = busy.next_attempt_at - timedelta(seconds=1)
    assert await (await h.worker(batch=10)).run_once() == 0
    assert await worker.run_once() == 0 and endpoint.calls == {"in": 1}
    h.at = busy.next_attempt_at
    assert await worker.run_once() == 1 and endpoint.calls == {"in": 2}
    done = await h.delivery(event_id)
    assert (done.status, done.used, [a.status_code for a in done.attempts]) == (
        DeliveryStatus.DELIVERED,
        1,
        [429, 200],
    )
    shown = await h.shown(event_id)
    assert shown["status"] == "DELIVERED" and shown["nextAttemptAt"] is None
    assert [a["counted"] for a in shown["deliveries"][0]["attempts"]] == [False, True]


@pytest.mark.parametrize("backend", BACKENDS)
async def test_a_retry_after_date_is_a_wait_from_the_services_clock(
    hooks: Any, backend: str
) -> None:
    """503 with an HTTP-date 90 s after the service's clock (which runs 10 minutes ahead of
    the machine's here): due then."""
    t0 = datetime.now(UTC).replace(microsecond=0) + timedelta(minutes=10)
    endpoint = Endpoint()
    endpoint.script["in"] = [(503, format_datetime(t0 + timedelta(seconds=90), usegmt=True))]
    h = await hooks(backend, endpoint, t0)
    await h.hook("in")
    event_id = await h.trigger()
    assert await (await h.worker()).run_once() == 1
    busy = await h.delivery(event_id)
    assert (busy.used, busy.next_attempt_at) == (0, t0 + timedelta(seconds=90))
    assert busy.attempts[0].busy is not None
    assert busy.attempts[0].busy.startswith("the endpoint is busy (HTTP 503, Retry-After 90 s)")


@pytest.mark.parametrize("backend", BACKENDS)
async def test_the_webhooks_other_deliveries_are_held_back_until_then_and_others_sent(
    hooks: Any, backend: str
) -> None:
    """Three events to a webhook whose endpoint takes one delivery at a time: the first is
    refused (429, ``Retry-After: 60``); the two waiting their turn are given back unsent, due
    then, with nothing used, and a claim meanwhile leaves the webhook's due deliveries alone,
    while another webhook's at the same host are sent. When the hold ends all three are
    delivered, one request each."""
    t0 = datetime.now(UTC).replace(microsecond=0)
    endpoint = Endpoint()
    endpoint.script["busy"] = [(429, "60")]
    h = await hooks(backend, endpoint, t0)
    await h.hook("busy")
    events = [await h.trigger() for _ in range(3)]
    worker = await h.worker(per_endpoint=1, per_endpoint_waiting=2)
    assert await worker.run_once() == 3 and endpoint.calls == {"busy": 1}
    stored = [await h.delivery(e) for e in events]
    [refused] = [d for d in stored if d.attempts]
    assert (refused.next_attempt_at, refused.used) == (t0 + timedelta(seconds=60), 0)
    held = [d for d in stored if not d.attempts]
    assert len(held) == 2
    for d in held:
        assert (d.status, d.used, d.busy_since) == (DeliveryStatus.PENDING, 0, None)
        assert (d.next_attempt_at, d.lease_until) == (t0 + timedelta(seconds=60), NO_LEASE)
        assert (await h.shown(str(d.event_id)))["nextAttemptAt"] == iso(d.next_attempt_at)

    # a new event is due now: held back by this worker for the busy webhook, sent to another
    # webhook at the same host
    h.at = t0 + timedelta(seconds=1)
    other = await h.hook("other")
    late = await h.trigger()
    assert await worker.run_once() == 1 and endpoint.calls == {"busy": 1, "other": 1}
    by_hook = {str(d.webhook_id): d for d in await h.deliveries(late)}
    assert by_hook.pop(other).status is DeliveryStatus.DELIVERED
    [waiting] = by_hook.values()
    assert (waiting.status, waiting.attempts) == (DeliveryStatus.PENDING, ())

    h.at = t0 + timedelta(seconds=60)
    while await worker.run_once():  # three at a time to the one endpoint
        pass
    assert endpoint.calls == {"busy": 5, "other": 1}
    for event_id in (*events, late):
        assert {d.status for d in await h.deliveries(event_id)} == {DeliveryStatus.DELIVERED}
