"""Webhooks over HTTP: the resource, signed deliveries checked by the standardwebhooks
package, retries (exactly 3 attempts), a hanging receiver, and retention."""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import logging
import time
import uuid
from datetime import timedelta
from typing import Any

import attrs
import pytest
from aiohttp import web
from standardwebhooks import Webhook as StandardWebhook

from fourcorner.application import webhooks
from fourcorner.application.collections import DELIVERIES, EVENTS
from fourcorner.application.delivery import DeliverySettings, DeliveryWorker
from fourcorner.application.ports import SendResult
from fourcorner.entrypoints.container import resolve

from .conftest import BACKENDS

ALICE = "alice@example.com"
# 8 KiB, not ASCII, with a NUL and bytes that are not UTF-8
DOWN_PAGE = b"\x00\xff<p>the receiver is down \xe2\x80\x94 try again</p>\n" * 200


class Receiver:
    """A webhook receiver on 127.0.0.1: ``/ok``, ``/flaky`` (two failures, then 200),
    ``/down`` (always 500) and ``/hang`` (never answers in time)."""

    def __init__(self) -> None:
        self.calls: dict[str, list[tuple[float, dict[str, str], bytes]]] = {}

    async def handle(self, request: web.Request) -> web.Response:
        name = request.match_info["name"]
        body = await request.read()
        seen = self.calls.setdefault(name, [])
        seen.append((time.monotonic(), dict(request.headers), body))
        if name == "hang":
            await asyncio.sleep(30)
        if name == "down":
            return web.Response(status=500, body=DOWN_PAGE)
        if name == "flaky" and len(seen) <= 2:
            return web.Response(status=500)
        return web.Response(status=204)


@pytest.fixture
async def receiver(aiohttp_server: Any) -> Any:
    r = Receiver()
    app = web.Application()
    app.router.add_post("/{name}", r.handle)
    server = await aiohttp_server(app)
    r.url = lambda name: str(server.make_url(f"/{name}"))
    return r


async def hook(api, org_id, url, events=("webhook.test",)):
    status, body = await api.call(
        "POST",
        f"/orgs/{org_id}/webhooks",
        as_=ALICE,
        json={"url": url, "events": list(events), "description": "d"},
    )
    assert status == 201, body
    return body


async def wait_for(predicate, within: float = 10.0) -> None:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if await predicate():
            return
        await asyncio.sleep(0.02)
    raise AssertionError("condition not reached in time")


# forms of private targets a resolver reads; refused when the webhook is made or changed
PRIVATE_FORMS = [
    "http://127.1/",
    "http://2130706433/",
    "http://0177.0.0.1/",
    "http://0x7f.1/",
    "http://0/",
    "http://localhost./",
    "http://intranet/",
    "http://100.64.0.1/",
    "http://[::ffff:127.0.0.1]/",
    "http://[::1]/",
    "http://１２７.０.０.１/",
]


async def test_private_targets_in_any_form_are_refused_when_made_or_changed(api):
    org = await api.org(ALICE)
    path = f"/orgs/{org['id']}/webhooks"
    for url in PRIVATE_FORMS:
        status, err = await api.call(
            "POST", path, as_=ALICE, json={"url": url, "events": ["webhook.test"]}
        )
        assert (status, err["code"]) == (400, "AT-1001"), (url, err)
        assert err["details"][0]["field"] == "$.url"
    made = await hook(api, org["id"], "https://hooks.example.com/in")
    for url in PRIVATE_FORMS:
        status, err = await api.call("PUT", f"{path}/{made['id']}", as_=ALICE, json={"url": url})
        assert (status, err["code"]) == (400, "AT-1001"), (url, err)
        assert err["details"][0]["field"] == "$.url"
    _, got = await api.call("GET", f"{path}/{made['id']}", as_=ALICE)
    assert got["url"] == "https://hooks.example.com/in"
    _, listed = await api.call("GET", path, as_=ALICE)
    assert [w["id"] for w in listed["items"]] == [made["id"]]


async def test_a_webhook_to_port_0_is_refused_when_made_or_changed(api):
    org = await api.org(ALICE)
    path = f"/orgs/{org['id']}/webhooks"
    status, err = await api.call(
        "POST",
        path,
        as_=ALICE,
        json={"url": "https://hooks.example.com:0/in", "events": ["webhook.test"]},
    )
    assert (status, err["code"]) == (400, "AT-1001") and "port" in err["error"], err
    made = await hook(api, org["id"], "https://hooks.example.com:8443/in")
    status, err = await api.call(
        "PUT", f"{path}/{made['id']}", as_=ALICE, json={"url": "http://hooks.example.com:0/"}
    )
    assert (status, err["code"]) == (400, "AT-1001"), err
    _, listed = await api.call("GET", path, as_=ALICE)
    assert [w["url"] for w in listed["items"]] == ["https://hooks.example.com:8443/in"]


async def test_private_targets_are_accepted_when_allowed(start_api):
    api = await start_api("memory", webhook_allow_private_targets=True)
    org = await api.org(ALICE)
    for url in PRIVATE_FORMS:
        assert (await hook(api, org["id"], url))["url"] == url


async def test_the_resource_and_its_rules(api):
    org = await api.org(ALICE)
    status, body = await api.call(
        "POST",
        f"/orgs/{org['id']}/webhooks",
        as_=ALICE,
        json={
            "url": "https://hooks.example.com/in",
            "events": ["transaction.received", "mls.received"],
        },
    )
    assert status == 201 and body["secret"].startswith("whsec_") and body["type"] == "WEBHOOK"
    assert body["isEnabled"] is True and "sealedSecret" not in body
    status, got = await api.call("GET", f"/orgs/{org['id']}/webhooks/{body['id']}", as_=ALICE)
    assert "secret" not in got and got["events"] == ["transaction.received", "mls.received"]
    status, upd = await api.call(
        "PUT", f"/orgs/{org['id']}/webhooks/{body['id']}", as_=ALICE, json={"isEnabled": False}
    )
    assert status == 200 and upd["isEnabled"] is False
    for bad, rule in [
        ({"url": "ftp://x.example/", "events": ["webhook.test"]}, "http or https"),
        ({"url": "https://x.example/", "events": ["nope"]}, "unknown events"),
        ({"url": "http://127.0.0.1:9/", "events": ["webhook.test"]}, "loopback"),
        ({"url": "http://10.1.2.3/", "events": ["webhook.test"]}, "private"),
        ({"url": "http://169.254.169.254/latest", "events": ["webhook.test"]}, "metadata"),
        ({"url": "http://[::1]/", "events": ["webhook.test"]}, "loopback"),
    ]:
        status, err = await api.call("POST", f"/orgs/{org['id']}/webhooks", as_=ALICE, json=bad)
        assert status == 400 and rule in err["error"], (bad, err)
    status, body = await api.call(
        "POST", f"/orgs/{org['id']}/webhooks/batch-delete", as_=ALICE, json={"ids": [body["id"]]}
    )
    assert status == 200
    _, listed = await api.call("GET", f"/orgs/{org['id']}/webhooks", as_=ALICE)
    assert listed["items"] == []


async def test_an_event_named_twice_is_kept_once_when_made_or_changed(api):
    org = await api.org(ALICE)
    twice = ["webhook.test", "mls.received", "webhook.test"]
    made = await hook(api, org["id"], "https://hooks.example.com/in", events=twice)
    assert made["events"] == ["webhook.test", "mls.received"], made
    path = f"/orgs/{org['id']}/webhooks/{made['id']}"
    status, changed = await api.call("PUT", path, as_=ALICE, json={"events": twice[::-1]})
    assert status == 200 and changed["events"] == ["webhook.test", "mls.received"], changed
    _, got = await api.call("GET", path, as_=ALICE)
    assert got["events"] == ["webhook.test", "mls.received"], got


@pytest.mark.parametrize("backend", BACKENDS)
async def test_signed_deliveries_retries_and_failures(start_api, receiver, backend):
    api = await start_api(
        backend, workers=True, webhook_allow_private_targets=True, webhook_retry_delays="0.05,0.05"
    )
    org = await api.org(ALICE)
    ok = await hook(api, org["id"], receiver.url("ok"))
    await hook(api, org["id"], receiver.url("flaky"))
    await hook(api, org["id"], receiver.url("down"))
    status, event = await api.call(
        "POST",
        f"/orgs/{org['id']}/webhooks/trigger-test-event",
        as_=ALICE,
        json={"eventType": "webhook.test"},
    )
    assert status == 200 and event["eventType"] == "webhook.test"

    async def settled() -> bool:
        _, e = await api.call("GET", f"/orgs/{org['id']}/webhooks/events/{event['id']}", as_=ALICE)
        return e["status"] != "PENDING"

    await wait_for(settled)
    _, e = await api.call("GET", f"/orgs/{org['id']}/webhooks/events/{event['id']}", as_=ALICE)
    by_hook = {d["webhookId"]: d for d in e["deliveries"]}
    assert e["status"] == "FAILED"  # the dead receiver failed for good
    assert len(receiver.calls["ok"]) == 1
    assert len(receiver.calls["flaky"]) == 3  # delivered on the third attempt
    assert len(receiver.calls["down"]) == 3  # exactly three attempts, then FAILED
    assert by_hook[ok["id"]]["status"] == "DELIVERED"
    statuses = sorted(d["status"] for d in e["deliveries"])
    assert statuses == ["DELIVERED", "DELIVERED", "FAILED"]
    failed = next(d for d in e["deliveries"] if d["status"] == "FAILED")
    assert [a["statusCode"] for a in failed["attempts"]] == [500, 500, 500]
    # each attempt keeps the first KiB of the answer (a cut character is replaced)
    kept = DOWN_PAGE[:1024].decode(errors="replace")
    assert [a["responseBody"] for a in failed["attempts"]] == [kept] * 3
    assert by_hook[ok["id"]]["attempts"][0]["responseBody"] == ""
    assert all(a["durationMs"] >= 0 and a["at"] for a in failed["attempts"])
    # every request verifies with an independent implementation, and carries the hex header
    verifier = StandardWebhook(ok["secret"])
    _, headers, body = receiver.calls["ok"][0]
    payload = verifier.verify(body, {k.lower(): v for k, v in headers.items()})
    assert payload["eventType"] == "webhook.test" and payload["orgId"] == org["id"]
    assert payload["id"] == event["id"] and payload["payload"]["message"]
    expected = hmac.new(ok["secret"].encode(), body, hashlib.sha256).hexdigest()
    assert {k.lower(): v for k, v in headers.items()}["x-webhook-sign"] == expected
    # filters on the events list
    _, failed_events = await api.call(
        "GET",
        f"/orgs/{org['id']}/webhooks/events?filter=status:eq:FAILED&filter=eventType:eq:webhook.test",
        as_=ALICE,
    )
    assert [x["id"] for x in failed_events["items"]] == [event["id"]]


async def test_a_hanging_receiver_does_not_delay_the_others(start_api, receiver):
    api = await start_api(
        "sqlite",
        workers=True,
        webhook_allow_private_targets=True,
        webhook_timeout=1.0,
        webhook_retry_delays="0.05,0.05",
    )
    org = await api.org(ALICE)
    await hook(api, org["id"], receiver.url("hang"))
    await hook(api, org["id"], receiver.url("ok"))
    started = time.monotonic()
    for _ in range(3):
        await api.call(
            "POST",
            f"/orgs/{org['id']}/webhooks/trigger-test-event",
            as_=ALICE,
            json={"event": "webhook.test"},
        )

    async def delivered() -> bool:
        return len(receiver.calls.get("ok", [])) == 3

    await wait_for(delivered, within=5)
    assert max(t for t, _, _ in receiver.calls["ok"]) - started < 0.9  # before the hang timed out

    async def gave_up() -> bool:
        _, page = await api.call(
            "GET", f"/orgs/{org['id']}/webhooks/events?filter=status:eq:FAILED", as_=ALICE
        )
        return len(page["items"]) == 3

    await wait_for(gave_up, within=15)
    _, page = await api.call(
        "GET", f"/orgs/{org['id']}/webhooks/events?filter=status:eq:FAILED", as_=ALICE
    )
    attempts = [
        a for e in page["items"] for d in e["deliveries"] for a in d["attempts"] if a["error"]
    ]
    assert attempts and all(a["error"] == "timed out" for a in attempts)


async def test_events_older_than_14_days_are_purged(api):
    org = await api.org(ALICE)
    ctx = await resolve(api.container.context)
    now = ctx.clock()
    import uuid

    org_id = uuid.UUID(org["id"])
    for age in (
        timedelta(days=15),
        timedelta(days=14, minutes=1),
        timedelta(days=13),
        timedelta(0),
    ):
        aged = attrs.evolve(ctx, clock=lambda age=age: now - age)
        hooks = await webhooks.webhooks_of(ctx, org_id)
        async with ctx.uow() as uow:
            await webhooks.raise_event(
                aged, uow, org_id, "webhook.test", {"message": str(age)}, hooks
            )
            await uow.commit()
    assert await webhooks.purge(ctx, now=now) == 2
    async with ctx.uow() as uow:
        left = await uow.repository(EVENTS).all(orgId=org_id)
    assert sorted(e.payload["message"] for e in left) == ["0:00:00", "13 days, 0:00:00"]


async def test_an_outcome_for_a_delivery_purged_while_it_was_sent_is_dropped(api, caplog):
    """Retention removes an old event and its delivery while that delivery is being sent: the
    outcome is not written back (the delivery stays gone) and the other outcomes are."""
    org = await api.org(ALICE)
    await hook(api, org["id"], "https://hooks.example.com/in")
    ctx = await resolve(api.container.context)
    now = ctx.clock()
    org_id = uuid.UUID(org["id"])
    for age in (timedelta(days=15), timedelta(0)):
        aged = attrs.evolve(ctx, clock=lambda age=age: now - age)
        hooks = await webhooks.webhooks_of(ctx, org_id)
        async with ctx.uow() as uow:
            await webhooks.raise_event(
                aged, uow, org_id, "webhook.test", {"message": str(age)}, hooks
            )
            await uow.commit()

    class PurgingSender:
        async def send(self, url: str, body: bytes, headers: dict[str, str]) -> SendResult:
            if b"15 days" in body:
                assert await webhooks.purge(ctx) == 1
            return SendResult(duration_ms=1.0, status_code=204)

    sealer = await resolve(api.container.sealer)
    worker = DeliveryWorker(ctx, sealer, PurgingSender(), DeliverySettings())
    with caplog.at_level(logging.ERROR, logger="fourcorner.webhooks"):
        assert await worker.run_once() == 2
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR] == []
    async with ctx.uow() as uow:
        events = await uow.repository(EVENTS).all(orgId=org_id)
        deliveries = await uow.repository(DELIVERIES).all(orgId=org_id)
    assert [e.payload["message"] for e in events] == ["0:00:00"]
    assert [(d.event_id, d.status.value) for d in deliveries] == [(events[0].id, "DELIVERED")]
    assert events[0].status.value == "DELIVERED"


async def test_trigger_refuses_other_events(api):
    org = await api.org(ALICE)
    status, body = await api.call(
        "POST",
        f"/orgs/{org['id']}/webhooks/trigger-test-event",
        as_=ALICE,
        json={"eventType": "transaction.sent"},
    )
    assert status == 400 and body["code"] == "AT-1001"


@pytest.mark.parametrize("backend", BACKENDS)
async def test_an_event_goes_to_the_webhooks_as_they_are_once_each_change_is_made(
    start_api, backend
):
    """``webhooks_of`` may answer from the record cache: each webhook made, disabled or
    deleted here is seen by the next event raised, none is left out or kept."""
    api = await start_api(backend)
    org = await api.org(ALICE)
    org_id = uuid.UUID(org["id"])
    ctx = await resolve(api.container.context)

    async def raised() -> set[str]:
        hooks = await webhooks.webhooks_of(ctx, org_id)
        async with ctx.uow() as uow:
            event = await webhooks.raise_event(ctx, uow, org_id, "webhook.test", {}, hooks)
            await uow.commit()
        return {str(d.webhook_id) for d in event.deliveries}

    assert await raised() == set()
    a = await hook(api, org["id"], "https://hooks.example.com/a")
    assert await raised() == {a["id"]}
    b = await hook(api, org["id"], "https://hooks.example.com/b")
    assert await raised() == {a["id"], b["id"]}
    path = f"/orgs/{org['id']}/webhooks/{a['id']}"
    status, _ = await api.call("PUT", path, as_=ALICE, json={"isEnabled": False})
    assert status == 200 and await raised() == {b["id"]}
    status, _ = await api.call("PUT", path, as_=ALICE, json={"isEnabled": True})
    assert status == 200 and await raised() == {a["id"], b["id"]}
    status, _ = await api.call(
        "POST", f"/orgs/{org['id']}/webhooks/batch-delete", as_=ALICE, json={"ids": [b["id"]]}
    )
    assert status == 200 and await raised() == {a["id"]}


@pytest.mark.parametrize("backend", BACKENDS)
async def test_a_webhook_disabled_or_deleted_after_its_event_was_raised_is_not_called(
    start_api, backend
):
    """An event raised to the webhooks read just before one was disabled and another deleted
    (as when they change while the event is raised): neither is called; their deliveries are
    given up, with the reason, when the worker claims them."""
    api = await start_api(backend)
    org = await api.org(ALICE)
    org_id = uuid.UUID(org["id"])
    ctx = await resolve(api.container.context)
    off = await hook(api, org["id"], "https://hooks.example.com/off")
    gone = await hook(api, org["id"], "https://hooks.example.com/gone")
    hooks = await webhooks.webhooks_of(ctx, org_id)
    status, _ = await api.call(
        "PUT", f"/orgs/{org['id']}/webhooks/{off['id']}", as_=ALICE, json={"isEnabled": False}
    )
    assert status == 200
    status, _ = await api.call(
        "POST", f"/orgs/{org['id']}/webhooks/batch-delete", as_=ALICE, json={"ids": [gone["id"]]}
    )
    assert status == 200
    async with ctx.uow() as uow:
        await webhooks.raise_event(ctx, uow, org_id, "webhook.test", {}, hooks)
        await uow.commit()

    class NoSender:
        async def send(self, url: str, body: bytes, headers: dict[str, str]) -> SendResult:
            raise AssertionError(f"{url} was called")

    sealer = await resolve(api.container.sealer)
    worker = DeliveryWorker(ctx, sealer, NoSender(), DeliverySettings())
    assert await worker.run_once() == 2
    async with ctx.uow() as uow:
        deliveries = await uow.repository(DELIVERIES).all(orgId=org_id)
    outcomes = {
        str(d.webhook_id): (d.status.value, [a.error for a in d.attempts]) for d in deliveries
    }
    assert outcomes == {
        off["id"]: ("FAILED", ["the webhook is disabled"]),
        gone["id"]: ("FAILED", ["the webhook was deleted"]),
    }


async def test_the_worker_keeps_an_endpoints_state_only_while_it_has_deliveries_to_it(api):
    """What the worker holds by endpoint (its gate, its count of leased deliveries, the
    webhooks a claim saw at it) is there while a delivery to it is in flight, so a full
    endpoint's backlog is left due, and is dropped when the last one has ended: one webhook
    whose URL names a new host before each event leaves nothing behind of the hosts before."""
    await api.many_test_events()
    org = await api.org(ALICE)
    made = await hook(api, org["id"], "https://h0.hooks.example.com/in")
    twin = await hook(api, org["id"], "https://h0.hooks.example.com/other")
    held, called = asyncio.Event(), asyncio.Event()

    class Holding:
        async def send(self, url: str, body: bytes, headers: dict[str, str]) -> SendResult:
            called.set()
            await held.wait()
            return SendResult(duration_ms=1.0, status_code=204)

    ctx = await resolve(api.container.context)
    sealer = await resolve(api.container.sealer)
    one_at_a_time = DeliverySettings(per_endpoint=1, per_endpoint_waiting=0)
    worker = DeliveryWorker(ctx, sealer, Holding(), one_at_a_time)

    async def trigger() -> None:
        path = f"/orgs/{org['id']}/webhooks/trigger-test-event"
        status, _ = await api.call("POST", path, as_=ALICE, json={"eventType": "webhook.test"})
        assert status == 200

    def kept() -> tuple[set[Any], ...]:
        places = worker._places
        return set(worker._sending), set(places.by_endpoint), set(places.hooks_of)

    def kept_by_host() -> tuple[set[Any], set[Any]]:
        return set(worker._places.by_host), worker._places.full_hosts()

    await trigger()  # to both webhooks, at one endpoint that takes one delivery at a time
    first = asyncio.create_task(worker.run_once())
    await called.wait()
    endpoint = (uuid.UUID(org["id"]), ("h0.hooks.example.com", 443))  # the organisation's share
    assert kept() == ({endpoint},) * 3
    assert worker._places.hooks_of[endpoint] == {uuid.UUID(made["id"]), uuid.UUID(twin["id"])}
    assert kept_by_host() == ({endpoint[1]}, set())  # the host is not full
    assert worker.blocked  # the other delivery is left due while the endpoint is full
    assert await worker.claim(10) == []  # and a claim now skips it
    held.set()
    assert await first == 1
    assert kept() == (set(), set(), set())
    assert await worker.run_once() == 1  # the one left due, now that there is room
    assert kept() == (set(), set(), set())

    status, _ = await api.call(
        "POST", f"/orgs/{org['id']}/webhooks/batch-delete", as_=ALICE, json={"ids": [twin["id"]]}
    )
    assert status == 200
    for i in range(1, 51):
        status, _ = await api.call(
            "PUT",
            f"/orgs/{org['id']}/webhooks/{made['id']}",
            as_=ALICE,
            json={"url": f"https://h{i}.hooks.example.com/in"},
        )
        assert status == 200
        await trigger()
        assert await worker.run_once() == 1
        assert kept() == (set(), set(), set())
        assert kept_by_host() == (set(), set())
