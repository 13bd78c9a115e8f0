"""Concurrent deletes of one record: one request deletes it and answers its id, the others
find nothing (404), on every backend; nothing is reported deleted twice. A record deleted
while another is made on it: one of the two is refused, and nothing refers to a record that
is gone."""

from __future__ import annotations

import asyncio

from .test_participants import ALICE, ap_certificate, gln, participant, whitelabel

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


async def test_an_access_point_made_on_a_certificate_being_deleted(api):
    org = await whitelabel(api)
    base = f"/orgs/{org['id']}"
    for n in range(ROUNDS * 2):
        body, _, _ = ap_certificate(api, "raced", f"POP00095{n}", 30)
        status, cert = await api.call("POST", f"{base}/certificates", as_=ALICE, json=body)
        assert status == 201, cert
        ap = {
            "name": "raced",
            "certificateRef": cert["id"],
            "transportProfile": "net-transport-as4-v2_0",
            "environment": "TEST",
        }
        (deleted, _), (made, _) = await asyncio.gather(
            api.call(
                "POST", f"{base}/certificates/batch_delete", as_=ALICE, json={"ids": [cert["id"]]}
            ),
            api.call("POST", f"{base}/aps", as_=ALICE, json=ap),
        )
        assert (deleted, made) in ((200, 400), (409, 201)), (deleted, made)
    _, certs = await api.call("GET", f"{base}/certificates", as_=ALICE)
    _, aps = await api.call("GET", f"{base}/aps", as_=ALICE)
    assert {a["certificateRef"] for a in aps["items"]} <= {c["id"] for c in certs["items"]}


async def test_a_participant_made_on_an_access_point_being_deleted(api):
    org = await whitelabel(api)
    base = f"/orgs/{org['id']}"
    body, _, _ = ap_certificate(api, "ours", "POP000960", 30)
    status, cert = await api.call("POST", f"{base}/certificates", as_=ALICE, json=body)
    assert status == 201, cert
    _, smps = await api.call("GET", f"{base}/smps/alltouse?filter=environment:eq:TEST", as_=ALICE)
    for n in range(ROUNDS * 2):
        ap = {
            "name": "raced",
            "certificateRef": cert["id"],
            "transportProfile": "net-transport-as4-v2_0",
            "environment": "TEST",
        }
        status, made_ap = await api.call("POST", f"{base}/aps", as_=ALICE, json=ap)
        assert status == 201, made_ap
        receiver = {
            "name": "raced",
            "participantIdentifier": f"0088:{gln(960 + n)}",
            "smpRef": smps["items"][0]["id"],
            "apRef": made_ap["id"],
        }
        (deleted, _), (made, _) = await asyncio.gather(
            api.call("POST", f"{base}/aps/batch-delete", as_=ALICE, json={"ids": [made_ap["id"]]}),
            api.call("POST", f"{base}/participants", as_=ALICE, json=receiver),
        )
        assert (deleted, made) in ((200, 400), (409, 201)), (deleted, made)
    _, aps = await api.call("GET", f"{base}/aps", as_=ALICE)
    _, receivers = await api.call("GET", f"{base}/participants", as_=ALICE)
    assert {p["apRef"] for p in receivers["items"]} <= {a["id"] for a in aps["items"]}
