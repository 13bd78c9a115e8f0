"""Webhooks within bounds: an organisation has at most ``MAX_WEBHOOKS`` (made at once too),
an event keeps at most ``MAX_DELIVERIES`` deliveries (a redelivery beyond is refused, nothing
queued), and one organisation's slow deliveries to a host that serves many organisations do
not hold back another's deliveries to that host."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import pytest

from fourcorner.application.delivery import DeliverySettings, DeliveryWorker
from fourcorner.application.ports import SendResult
from fourcorner.application.repositories import Deliveries
from fourcorner.domain import webhook
from fourcorner.domain.webhook import MAX_DELIVERIES, MAX_WEBHOOKS
from fourcorner.entrypoints.container import resolve
from fourcorner.entrypoints.http.webhook_handlers import PER_MINUTE

from .test_webhooks import ALICE

BOB = "bob@example.com"
GUARD = 30  # seconds a test waits for what must happen, before failing
ERROR_KEYS = {"code", "error"}
ROUNDS = 20


async def make(api: Any, org_id: str, url: str, who: str = ALICE) -> tuple[int, Any]:
    return await api.call(
        "POST",
        f"/orgs/{org_id}/webhooks",
        as_=who,
        json={"url": url, "events": ["webhook.test"]},
    )


async def trigger(api: Any, org_id: str, who: str = ALICE) -> dict[str, Any]:
    path = f"/orgs/{org_id}/webhooks/trigger-test-event"
    status, event = await api.call("POST", path, as_=who, json={"eventType": "webhook.test"})
    assert status == 200, event
    result: dict[str, Any] = event
    return result


async def test_an_organisation_has_at_most_max_webhooks(api: Any) -> None:
    org = await api.org(ALICE)
    other = await api.org(BOB, legal_id="5560360793")
    for n in range(MAX_WEBHOOKS):
        status, body = await make(api, org["id"], f"https://hooks.example.com/{n}")
        assert status == 201, body
    status, body = await make(api, org["id"], "https://hooks.example.com/more")
    assert status == 409 and body["code"] == "AT-1106" and set(body) == ERROR_KEYS, body
    assert f"{MAX_WEBHOOKS} webhooks" in body["error"] and "delete one" in body["error"]
    # a test event goes to each of them: no more deliveries than that
    event = await trigger(api, org["id"])
    assert len(event["deliveries"]) == MAX_WEBHOOKS
    # another organisation's count is its own; one deleted makes room for one
    status, body = await make(api, other["id"], "https://hooks.example.com/bob", BOB)
    assert status == 201, body
    _, listed = await api.call("GET", f"/orgs/{org['id']}/webhooks?limit=500", as_=ALICE)
    assert len(listed["items"]) == MAX_WEBHOOKS
    path = f"/orgs/{org['id']}/webhooks/batch-delete"
    status, _ = await api.call("POST", path, as_=ALICE, json={"ids": [listed["items"][0]["id"]]})
    assert status == 200
    status, body = await make(api, org["id"], "https://hooks.example.com/again")
    assert status == 201, body


async def test_webhooks_made_at_once_are_counted_one_after_the_other(
    api: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Round after round, with room for two more, four made at once: two are made, two
    refused (on PostgreSQL in overlapping transactions; counted unlocked, all four were)."""
    monkeypatch.setattr(webhook, "MAX_WEBHOOKS", 3)
    org = await api.org(ALICE)
    status, body = await make(api, org["id"], "https://hooks.example.com/first")
    assert status == 201, body
    delete = f"/orgs/{org['id']}/webhooks/batch-delete"
    for n in range(ROUNDS):
        answers = await asyncio.gather(
            *(make(api, org["id"], f"https://hooks.example.com/{n}/{i}") for i in range(4))
        )
        assert sorted(status for status, _ in answers) == [201, 201, 409, 409], (n, answers)
        _, listed = await api.call("GET", f"/orgs/{org['id']}/webhooks?limit=500", as_=ALICE)
        assert len(listed["items"]) == 3, n
        made = [body["id"] for status, body in answers if status == 201]
        status, _ = await api.call("POST", delete, as_=ALICE, json={"ids": made})
        assert status == 200


async def test_an_event_keeps_at_most_max_deliveries(api: Any) -> None:
    org = await api.org(ALICE)
    for n in range(2):
        status, body = await make(api, org["id"], f"https://hooks.example.com/{n}")
        assert status == 201, body
    event = await trigger(api, org["id"])
    path = f"/orgs/{org['id']}/webhooks/events/{event['id']}/redeliver"
    for _ in range(MAX_DELIVERIES // 2 - 1):
        status, body = await api.call("POST", path, as_=ALICE)
        assert status == 202, body
    assert len(body["deliveries"]) == MAX_DELIVERIES
    status, body = await api.call("POST", path, as_=ALICE)
    assert status == 409 and body["code"] == "AT-1107" and set(body) == ERROR_KEYS, body
    assert f"keeps at most {MAX_DELIVERIES}" in body["error"]
    assert f"to 2 webhooks would make {MAX_DELIVERIES + 2}" in body["error"]
    # nothing was queued: the event and the outbox hold what they held
    status, kept = await api.call(
        "GET", f"/orgs/{org['id']}/webhooks/events/{event['id']}", as_=ALICE
    )
    assert len(kept["deliveries"]) == MAX_DELIVERIES
    ctx = await resolve(api.container.context)
    async with ctx.reads() as uow:
        assert len(await Deliveries(uow).of_event(uuid.UUID(event["id"]))) == MAX_DELIVERIES


async def test_an_organisations_slow_deliveries_do_not_hold_back_anothers_at_one_host(
    api: Any,
) -> None:
    """Two organisations' webhooks at one host (a relay serving both): Alice's deliveries
    hang there, as many as the worker lets one endpoint have in flight and waiting, and more
    are due; Bob's delivery to the same host is sent meanwhile."""
    alice = await api.org(ALICE)
    bob = await api.org(BOB, legal_id="5560360793")
    status, _ = await make(api, alice["id"], "https://relay.example.com/alice")
    assert status == 201
    status, _ = await make(api, bob["id"], "https://relay.example.com/bob", BOB)
    assert status == 201
    for _ in range(4):  # more than the endpoint's room (two)
        await trigger(api, alice["id"])
    await trigger(api, bob["id"], BOB)
    release, bob_sent = asyncio.Event(), asyncio.Event()
    hanging: list[str] = []

    class Relay:
        async def send(self, url: str, body: bytes, headers: dict[str, str]) -> SendResult:
            if url.endswith("/bob"):
                bob_sent.set()
            else:
                hanging.append(url)
                await release.wait()
            return SendResult(duration_ms=1.0, status_code=204)

    ctx = await resolve(api.container.context)
    sealer = await resolve(api.container.sealer)
    settings = DeliverySettings(per_endpoint=1, per_endpoint_waiting=1, poll_interval=0.01)
    worker = DeliveryWorker(ctx, sealer, Relay(), settings)
    stop = asyncio.Event()
    running = asyncio.create_task(worker.run(stop))
    try:
        async with asyncio.timeout(GUARD):
            await bob_sent.wait()
        assert hanging == ["https://relay.example.com/alice"]  # one in flight, one waiting
    finally:
        release.set()
        stop.set()
        async with asyncio.timeout(GUARD):
            await running


async def test_an_organisation_raises_at_most_so_many_test_events_a_minute(api: Any) -> None:
    """Each test event goes to every webhook subscribed: a bound per organisation on how
    often one may be raised, which callers of another organisation cannot use up."""
    org = await api.org(ALICE)
    other = await api.org(BOB, legal_id="5560360793")
    path = f"/orgs/{org['id']}/webhooks/trigger-test-event"
    body = {"eventType": "webhook.test"}
    # a caller who is not its orgadmin is refused without taking a turn of the organisation
    for _ in range(PER_MINUTE + 1):
        status, _answer = await api.call("POST", path, as_=BOB, json=body)
        assert status == 403
    for _ in range(PER_MINUTE):
        await trigger(api, org["id"])
    _, events = await api.call("GET", f"/orgs/{org['id']}/webhooks/events", as_=ALICE)
    bearer = {"Authorization": f"Bearer {api.token(ALICE)}"}
    resp = await api.client.post(path, headers=bearer, json=body)
    refusal = await resp.json()
    assert resp.status == 429 and refusal["code"] == "AT-1030", refusal
    assert set(refusal) == ERROR_KEYS and f"{PER_MINUTE} test events" in refusal["error"]
    assert 1 <= int(resp.headers["Retry-After"]) <= 60 // PER_MINUTE
    # nothing raised by the refusal; another organisation's turns are its own
    _, after = await api.call("GET", f"/orgs/{org['id']}/webhooks/events", as_=ALICE)
    assert len(after["items"]) == len(events["items"]) == PER_MINUTE
    await trigger(api, other["id"], BOB)
