"""Redelivering a stored event, and what a pending event shows: each attempt's status, the
first KiB of the answer and its duration, and when the next attempt is due."""

from __future__ import annotations

import asyncio
import uuid
from datetime import datetime, timedelta
from typing import Any

import pytest

from fourcorner.application import webhooks
from fourcorner.application.access import Principal
from fourcorner.application.collections import DELIVERIES, EVENTS
from fourcorner.entrypoints.container import resolve

from .conftest import BACKENDS
from .test_webhooks import ALICE, DOWN_PAGE, hook, wait_for
from .test_webhooks import receiver as receiver  # the fixture

BOB = "bob@example.com"


def _at(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


async def _trigger(api: Any, org_id: str) -> dict[str, Any]:
    status, event = await api.call(
        "POST",
        f"/orgs/{org_id}/webhooks/trigger-test-event",
        as_=ALICE,
        json={"eventType": "webhook.test"},
    )
    assert status == 200, event
    return event


async def _event(api: Any, org_id: str, event_id: str) -> dict[str, Any]:
    status, event = await api.call("GET", f"/orgs/{org_id}/webhooks/events/{event_id}", as_=ALICE)
    assert status == 200, event
    return event


@pytest.mark.parametrize("backend", BACKENDS)
async def test_a_pending_event_shows_when_its_next_attempt_is_due(start_api, receiver, backend):
    api = await start_api(
        backend, workers=True, webhook_allow_private_targets=True, webhook_retry_delays="60,60"
    )
    org = await api.org(ALICE)
    await hook(api, org["id"], receiver.url("down"))
    event = await _trigger(api, org["id"])
    assert event["status"] == "PENDING"
    assert _at(event["nextAttemptAt"]) <= _at(event["createdAt"]) + timedelta(seconds=1)

    async def tried() -> bool:
        found = await _event(api, org["id"], event["id"])
        return bool(found["deliveries"][0]["attempts"])

    await wait_for(tried)
    found = await _event(api, org["id"], event["id"])
    (delivery,) = found["deliveries"]
    (attempt,) = delivery["attempts"]
    assert attempt["statusCode"] == 500
    assert attempt["durationMs"] >= 0
    assert attempt["responseBody"] == DOWN_PAGE[:1024].decode("utf-8", "replace")
    assert found["status"] == "PENDING"
    due = _at(attempt["at"]) + timedelta(seconds=60)
    assert _at(delivery["nextAttemptAt"]) == due
    assert _at(found["nextAttemptAt"]) == due


@pytest.mark.parametrize("backend", BACKENDS)
async def test_a_failed_event_is_redelivered_to_its_webhooks(start_api, receiver, backend):
    api = await start_api(
        backend, workers=True, webhook_allow_private_targets=True, webhook_retry_delays="0.05,0.05"
    )
    org = await api.org(ALICE)
    flaky = await hook(api, org["id"], receiver.url("flaky"))  # 500, 500, then 204
    down = await hook(api, org["id"], receiver.url("down"))  # always 500
    event = await _trigger(api, org["id"])

    def settled(want: str) -> Any:
        async def check() -> bool:
            found = await _event(api, org["id"], event["id"])
            return bool(found["status"] == want)

        return check

    await wait_for(settled("FAILED"), within=10)
    before = await _event(api, org["id"], event["id"])
    assert before["nextAttemptAt"] is None
    assert {d["webhookId"] for d in before["deliveries"]} == {flaky["id"], down["id"]}

    # a webhook made since is not added; a disabled one is left out
    await hook(api, org["id"], receiver.url("ok"))
    status, redone = await api.call(
        "POST", f"/orgs/{org['id']}/events/{event['id']}/redeliver", as_=ALICE
    )
    assert status == 202, redone
    assert redone["status"] == "PENDING" and redone["nextAttemptAt"] is not None
    assert [d["webhookId"] for d in redone["deliveries"][2:]] == sorted(
        (flaky["id"], down["id"]), key=[d["webhookId"] for d in before["deliveries"]].index
    )
    assert redone["deliveries"][:2] == before["deliveries"]
    await wait_for(settled("FAILED"), within=10)
    after = await _event(api, org["id"], event["id"])
    assert len(after["deliveries"]) == 4
    fresh = {d["webhookId"]: d for d in after["deliveries"][2:]}
    assert fresh[flaky["id"]]["status"] == "DELIVERED"
    assert [a["statusCode"] for a in fresh[down["id"]]["attempts"]] == [500, 500, 500]
    assert "ok" not in receiver.calls
    # the same body, signed the same way (one event, one webhook-id)
    sent = [c for c in receiver.calls["flaky"] if c[2]]
    assert sent[-1][2] == sent[-2][2]
    assert sent[-1][1]["webhook-id"] == sent[-2][1]["webhook-id"]

    # the other route to it, for an orgmember, another organisation, an unknown event
    status, again = await api.call(
        "POST", f"/orgs/{org['id']}/webhooks/events/{event['id']}/redeliver", as_=ALICE
    )
    assert status == 202 and len(again["deliveries"]) == 6
    other = await api.org(BOB, legal_id="5560360793")
    status, body = await api.call(
        "POST", f"/orgs/{other['id']}/events/{event['id']}/redeliver", as_=BOB
    )
    assert status == 404, body
    status, body = await api.call(
        "POST", f"/orgs/{org['id']}/events/{event['id']}/redeliver", as_=BOB
    )
    assert status == 403, body
    status, body = await api.call(
        "POST", f"/orgs/{org['id']}/events/{uuid.uuid4()}/redeliver", as_=ALICE
    )
    assert status == 404, body


async def test_an_event_whose_webhooks_are_gone_has_nothing_to_redeliver(api):
    org = await api.org(ALICE)
    made = await hook(api, org["id"], "https://hooks.example.com/a")
    event = await _trigger(api, org["id"])
    status, body = await api.call(
        "POST",
        f"/orgs/{org['id']}/webhooks/batch-delete",
        as_=ALICE,
        json={"ids": [made["id"]]},
    )
    assert status == 200, body
    status, body = await api.call(
        "POST", f"/orgs/{org['id']}/events/{event['id']}/redeliver", as_=ALICE
    )
    assert status == 409 and body["code"] == "AT-1102", body
    assert len((await _event(api, org["id"], event["id"]))["deliveries"]) == 1


async def test_concurrent_redeliveries_lose_no_delivery(api):
    """20 rounds of four redeliveries of one event at once (no worker): every delivery made
    is on the event, none twice."""
    await api.many_test_events()
    org = await api.org(ALICE)
    await hook(api, org["id"], "https://hooks.example.com/a")
    await hook(api, org["id"], "https://hooks.example.com/b")
    ctx = await resolve(api.container.context)
    for _ in range(20):
        event = await _trigger(api, org["id"])
        answers = await asyncio.gather(
            *(
                api.call("POST", f"/orgs/{org['id']}/events/{event['id']}/redeliver", as_=ALICE)
                for _ in range(4)
            )
        )
        assert [s for s, _ in answers] == [202] * 4, answers
        async with ctx.uow() as uow:
            stored = await uow.repository(EVENTS).get(uuid.UUID(event["id"]))
            rows = await uow.repository(DELIVERIES).all(eventId=uuid.UUID(event["id"]))
        assert stored is not None
        summaries = [d.delivery_id for d in stored.deliveries]
        assert len(summaries) == 2 + 4 * 2 == len(set(summaries))
        assert set(summaries) == {d.id for d in rows}


async def test_redelivery_races_the_purge_without_a_trace(api):
    """An event purged while it is being redelivered is either redelivered or gone, with no
    delivery left behind."""
    org = await api.org(ALICE)
    await hook(api, org["id"], "https://hooks.example.com/a")
    ctx = await resolve(api.container.context)
    me = await api.me(ALICE)
    for _ in range(10):
        event = await _trigger(api, org["id"])
        later = datetime.fromisoformat(event["createdAt"].replace("Z", "+00:00")) + timedelta(
            days=15
        )
        user = Principal(user=await _user(ctx, me["id"]))
        outcome = await asyncio.gather(
            webhooks.redeliver(ctx, user, uuid.UUID(org["id"]), uuid.UUID(event["id"])),
            webhooks.purge(ctx, now=later),
            return_exceptions=True,
        )
        assert not isinstance(outcome[1], BaseException), outcome
        async with ctx.uow() as uow:
            stored = await uow.repository(EVENTS).get(uuid.UUID(event["id"]))
            rows = await uow.repository(DELIVERIES).all(eventId=uuid.UUID(event["id"]))
        if stored is None:
            assert rows == []
        else:
            assert {d.delivery_id for d in stored.deliveries} == {d.id for d in rows}


async def _user(ctx: Any, user_id: str) -> Any:
    from fourcorner.application.collections import USERS

    async with ctx.uow() as uow:
        return await uow.repository(USERS).get(user_id)
