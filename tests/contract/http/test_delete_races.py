"""Concurrent deletes of one record: one request deletes it and answers its id, the others
find nothing (404), on every backend; nothing is reported deleted twice."""

from __future__ import annotations

import asyncio

from .test_participants import ALICE, gln, participant

ROUNDS, AT_ONCE = 4, 4


async def _race(api, path: str, ident: str) -> None:
    answers = await asyncio.gather(
        *(api.call("POST", path, as_=ALICE, json={"ids": [ident]}) for _ in range(AT_ONCE))
    )
    statuses = sorted(status for status, _ in answers)
    assert statuses == [200] + [404] * (AT_ONCE - 1), answers
    assert [body for status, body in answers if status == 200] == [{"ids": [ident]}]


async def test_concurrent_deletes_of_one_participant_delete_it_once(api):
    org = await api.org(ALICE)
    for n in range(ROUNDS):
        status, made = await participant(api, org["id"], f"0088:{gln(940 + n)}")
        assert status == 201, made
        await _race(api, f"/orgs/{org['id']}/participants/batch-delete", made["id"])
    _, listed = await api.call("GET", f"/orgs/{org['id']}/participants", as_=ALICE)
    assert listed["items"] == []


async def test_concurrent_deletes_of_one_webhook_delete_it_once(api):
    org = await api.org(ALICE)
    for _ in range(ROUNDS):
        status, made = await api.call(
            "POST",
            f"/orgs/{org['id']}/webhooks",
            as_=ALICE,
            json={"url": "https://hooks.example.com/in", "events": ["webhook.test"]},
        )
        assert status == 201, made
        await _race(api, f"/orgs/{org['id']}/webhooks/batch-delete", made["id"])
    _, listed = await api.call("GET", f"/orgs/{org['id']}/webhooks", as_=ALICE)
    assert listed["items"] == []
