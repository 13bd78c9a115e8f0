"""Sending a document twice: a duplicate names the transaction that sent it, and an
``Idempotency-Key`` makes a retried POST answer as the first one did (24 hours, per
organisation, one transaction however many requests race)."""

from __future__ import annotations

import asyncio
import uuid
from datetime import timedelta
from typing import Any

import aiohttp
import attrs

from fourcorner.application import idempotency
from fourcorner.application.collections import IDEMPOTENCY_KEYS
from fourcorner.entrypoints.container import resolve
from sbd_factory import make_sbd

from .test_participants import ALICE, BOB, gln
from .test_transactions import receiving_participant

XML = {"Content-Type": "application/xml"}


async def _setup(api: Any, who: str = ALICE, n: int = 60, **org: Any) -> tuple[str, str, str]:
    made = await api.org(who, **org)
    sender = f"0088:{gln(n)}"
    await receiving_participant(api, made, sender, who)
    _, aps = await api.call("GET", f"/orgs/{made['id']}/aps/alltouse", as_=who)
    return made["id"], sender, aps["items"][0]["id"]


async def _post(
    api: Any, org: str, ap: str, data: Any, key: str | None = None, who: str = ALICE
) -> tuple[int, Any]:
    headers = dict(XML) if isinstance(data, bytes) else {}
    if key is not None:
        headers["Idempotency-Key"] = key
    return await api.call(
        "POST", f"/orgs/{org}/transactions?ap={ap}", as_=who, data=data, headers=headers
    )


async def _sent(api: Any, org: str, who: str = ALICE) -> list[str]:
    _, page = await api.call("GET", f"/orgs/{org}/transactions/to_network?limit=500", as_=who)
    return [t["id"] for t in page["items"]]


async def test_a_duplicate_names_the_transaction_that_sent_it(api):
    org, sender, ap = await _setup(api)
    sbd = make_sbd(sender=sender)
    status, first = await _post(api, org, ap, sbd)
    assert status == 202, first
    status, again = await _post(api, org, ap, sbd)
    assert status == 409, again
    assert again["code"] == "AT-1100"
    assert again["transactionId"] == first["transactionId"]
    assert first["transactionId"] in again["error"]
    assert await _sent(api, org) == [first["transactionId"]]


async def test_the_same_key_and_request_get_the_same_answer(api):
    org, sender, ap = await _setup(api)
    sbd = make_sbd(sender=sender)
    status, first = await _post(api, org, ap, sbd, key="order-1")
    assert status == 202, first
    for _ in range(2):
        assert await _post(api, org, ap, sbd, key="order-1") == (202, first)
    # the same document as a multipart form is the same request
    form = aiohttp.FormData()
    form.add_field("file", sbd, filename="invoice.xml", content_type="application/xml")
    assert await _post(api, org, ap, form, key="order-1") == (202, first)
    assert await _sent(api, org) == [first["transactionId"]]
    # the key is still held after the transaction moved on
    _, tx = await api.call("GET", f"/orgs/{org}/transactions/{first['transactionId']}", as_=ALICE)
    assert tx["id"] == first["transactionId"]


async def test_the_same_key_with_another_request_is_refused(api):
    org, sender, ap = await _setup(api)
    status, first = await _post(api, org, ap, make_sbd(sender=sender), key="k")
    assert status == 202, first
    status, body = await _post(api, org, ap, make_sbd(sender=sender), key="k")
    assert status == 409 and body["code"] == "AT-1101", body
    assert "Idempotency-Key" in body["error"]
    assert await _sent(api, org) == [first["transactionId"]]
    # a key that was never used sends
    status, other = await _post(api, org, ap, make_sbd(sender=sender), key="k2")
    assert status == 202 and other["transactionId"] != first["transactionId"]


async def test_keys_belong_to_their_organisation(api):
    a, a_sender, a_ap = await _setup(api)
    b, b_sender, b_ap = await _setup(api, BOB, 61, legal_id="5560360793")
    status, first = await _post(api, a, a_ap, make_sbd(sender=a_sender), key="shared")
    assert status == 202
    status, second = await _post(api, b, b_ap, make_sbd(sender=b_sender), key="shared", who=BOB)
    assert status == 202, second
    assert second["transactionId"] != first["transactionId"]
    assert await _sent(api, b, BOB) == [second["transactionId"]]
    # Bob's key does not answer Alice, nor hers him
    status, body = await _post(api, a, a_ap, make_sbd(sender=a_sender), key="shared")
    assert status == 409 and body["code"] == "AT-1101"


async def test_a_malformed_key_is_refused_before_anything_is_stored(api):
    org, sender, ap = await _setup(api)
    for key in ("", "x" * 256, "clé"):
        status, body = await _post(api, org, ap, make_sbd(sender=sender), key=key)
        assert status == 400, (key, body)
        assert body["code"] == "AT-1001"
        assert body["details"][0]["field"] == "Idempotency-Key"
    assert await _sent(api, org) == []
    status, body = await _post(api, org, ap, make_sbd(sender=sender), key=" ~" + "k" * 253)
    assert status == 202, body


async def test_a_key_lives_24_hours_and_is_purged_after(api):
    org, sender, ap = await _setup(api)
    status, first = await _post(api, org, ap, make_sbd(sender=sender), key="daily")
    assert status == 202
    ctx = await resolve(api.container.context)

    async def age(by: timedelta) -> None:
        async with ctx.uow() as uow:
            keys = uow.repository(IDEMPOTENCY_KEYS)
            for k in await keys.all(orgId=uuid.UUID(org)):
                await keys.update(attrs.evolve(k, created_at=k.created_at - by))
            await uow.commit()

    await age(timedelta(hours=23, minutes=59))
    status, body = await _post(api, org, ap, make_sbd(sender=sender), key="daily")
    assert status == 409 and body["code"] == "AT-1101"
    assert await idempotency.purge(ctx) == 0
    await age(timedelta(minutes=2))
    # expired: the key names a new request now
    status, second = await _post(api, org, ap, make_sbd(sender=sender), key="daily")
    assert status == 202, second
    assert second["transactionId"] != first["transactionId"]
    await age(timedelta(hours=25))
    assert await idempotency.purge(ctx) == 1
    async with ctx.uow() as uow:
        assert await uow.repository(IDEMPOTENCY_KEYS).all() == []


async def test_concurrent_requests_with_one_key_make_one_transaction(api):
    """20 rounds: two requests with one key at once; the same request gets the same answer
    twice, and of two different requests one is sent and the other refused."""
    org, sender, ap = await _setup(api)
    expected: list[str] = []
    for round_ in range(20):
        key = f"race-{round_}"
        same = round_ % 2 == 0
        first, second = make_sbd(sender=sender), make_sbd(sender=sender)
        answers = await asyncio.gather(
            _post(api, org, ap, first, key=key),
            _post(api, org, ap, first if same else second, key=key),
        )
        statuses = sorted(status for status, _ in answers)
        if same:
            assert statuses == [202, 202], answers
            assert answers[0][1] == answers[1][1]
        else:
            assert statuses == [202, 409], answers
            refused = next(body for status, body in answers if status == 409)
            assert refused["code"] == "AT-1101"
        expected.append(next(body for status, body in answers if status == 202)["transactionId"])
        assert sorted(await _sent(api, org)) == sorted(expected)
