"""Transactions over HTTP: intake, the full four-corner loop on one machine, reading."""

from __future__ import annotations

import asyncio
import time
import uuid
from typing import Any

import aiohttp
import pytest
from aiohttp import web

from fourcorner.application.collections import MEMBERS, TRANSACTIONS
from fourcorner.domain.envelope import seat_spid, spid_participant
from fourcorner.entrypoints.container import resolve
from sbd_factory import BASE_EXAMPLE, make_sbd

from .conftest import BACKENDS, free_port
from .test_participants import ALICE, BOB, gln, participant, whitelabel

INVOICE = "urn:oasis:names:specification:ubl:schema:xsd:Invoice-2::Invoice##urn:cen.eu:en16931:2017#compliant#urn:fdc:peppol.eu:2017:poacc:billing:3.0::2.1"
BILLING = "urn:fdc:peppol.eu:2017:poacc:billing:01:1.0"


class Inbox:
    def __init__(self) -> None:
        self.events: list[dict[str, Any]] = []

    async def handle(self, request: web.Request) -> web.Response:
        self.events.append(await request.json())
        return web.Response(status=200)


@pytest.fixture
async def inbox(aiohttp_server: Any) -> Any:
    box = Inbox()
    app = web.Application()
    app.router.add_post("/hook", box.handle)
    server = await aiohttp_server(app)
    box.url = str(server.make_url("/hook"))
    return box


async def receiving_participant(api, org, ident, who, env="TEST"):
    status, p = await participant(api, org["id"], ident, env=env, who=who)
    assert status == 201, p
    _, docs = await api.call("GET", "/document_types?filter=state:eq:active", as_=who)
    doc = next(
        d for d in docs["items"] if d["value"] == INVOICE.split("::", 1)[1] or d["value"] == INVOICE
    )
    entry = {"documentId": doc["id"], "processId": f"cenbii-procid-ubl::{BILLING}"}
    path = f"/orgs/{org['id']}/participants/{p['id']}/supported_document_types"
    status, body = await api.call("PUT", path, as_=who, json={"supportedDocumentTypes": [entry]})
    assert status == 200, body
    return p


async def until(predicate, within: float = 20.0) -> Any:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        found = await predicate()
        if found:
            return found
        await asyncio.sleep(0.05)
    raise AssertionError("not reached in time")


@pytest.mark.parametrize("backend", BACKENDS)
async def test_the_full_loop_between_two_demo_organisations(start_api, inbox, backend):
    api = await start_api(
        backend,
        workers=True,
        public=True,
        webhook_allow_private_targets=True,
        send_retry_delays="0.2",
    )
    a = await api.org(ALICE)
    b = await api.org(BOB, legal_id="5560360793")
    sender, receiver = f"0088:{gln(70)}", f"0088:{gln(71)}"
    await receiving_participant(api, a, sender, ALICE)
    await receiving_participant(api, b, receiver, BOB)
    for org, who, events in (
        (a, ALICE, ["transaction.sent", "mls.received", "transaction.send_failed"]),
        (b, BOB, ["transaction.received"]),
    ):
        status, _ = await api.call(
            "POST",
            f"/orgs/{org['id']}/webhooks",
            as_=who,
            json={"url": inbox.url + f"?org={org['id']}", "events": events},
        )
        assert status == 201
    _, aps = await api.call("GET", f"/orgs/{a['id']}/aps/alltouse", as_=ALICE)
    ap = aps["items"][0]["id"]
    sbd = make_sbd(sender=sender, receiver=receiver, mls_type="ALWAYS_SEND", payload=buyer_in("NO"))
    status, body = await api.call(
        "POST",
        f"/orgs/{a['id']}/transactions?ap={ap}",
        as_=ALICE,
        data=sbd,
        headers={"Content-Type": "application/xml"},
    )
    assert status == 202, body
    assert body["transactionStatus"] == "UNPROCESSED"
    tx_id = body["transactionId"]

    async def completed() -> Any:
        _, tx = await api.call("GET", f"/orgs/{a['id']}/transactions/{tx_id}", as_=ALICE)
        return (
            tx
            if tx["transactionStatus"] in ("COMPLETED", "FAILED") and tx.get("mlsResponseCode")
            else None
        )

    tx = await until(completed)
    assert tx["transactionStatus"] == "COMPLETED", tx
    assert tx["mlsResponseCode"] == "AB"
    assert len(tx["createdAt"].split(".")[1]) == 10  # nine digits and Z
    names = [(e["eventType"], e["orgId"]) for e in inbox.events]
    await until(lambda: _coro(len(inbox.events) >= 3))
    names = {(e["eventType"], e["orgId"]) for e in inbox.events}
    assert ("transaction.received", b["id"]) in names
    assert ("transaction.sent", a["id"]) in names
    assert ("mls.received", a["id"]) in names
    mls = next(e for e in inbox.events if e["eventType"] == "mls.received")
    assert mls["payload"] == {
        "transactionId": tx_id,
        "mlsResponseCode": "AB",
        "originalInstanceId": tx["docInstanceId"],
    }
    # both lists show it; B downloads exactly what A posted
    _, sent = await api.call("GET", f"/orgs/{a['id']}/transactions/to_network", as_=ALICE)
    assert [t["id"] for t in sent["items"]] == [tx_id]
    _, got = await api.call("GET", f"/orgs/{b['id']}/transactions/from_network", as_=BOB)
    assert [t["docInstanceId"] for t in got["items"]] == [tx["docInstanceId"]]
    received = got["items"][0]
    # the received event carries the transaction exactly as the API shows it (one renderer)
    event = next(e for e in inbox.events if e["eventType"] == "transaction.received")
    assert event["payload"] == received | {"valid": True}  # and whether it passed the rules
    sent_event = next(e for e in inbox.events if e["eventType"] == "transaction.sent")
    assert sent_event["payload"] == {k: v for k, v in tx.items() if k != "mlsResponseCode"}
    status, document = await api.call(
        "GET", f"/orgs/{b['id']}/transactions/{received['id']}/business_document", as_=BOB
    )
    assert status == 200 and document == sbd
    # both sides: the countries (COUNTRY_C1; the buyer's postal address) and the service
    # providers (the sending AP's seat id; the receiving AP's certificate CN, from the SMP)
    seat = api.container.settings().seat_id
    for side in (tx, received):
        assert (side["senderCountry"], side["receiverCountry"]) == ("SE", "NO"), side
        assert (side["senderSP"], side["receiverSP"]) == (seat, seat), side
    # a transaction's createdAt (nanoseconds) finds it in a filter
    for org, who, record, listing in (
        (a, ALICE, tx, "to_network"),
        (b, BOB, received, "from_network"),
    ):
        assert len(record["createdAt"].split(".")[1]) == 10
        for op, included in (("eq", True), ("gte", True), ("gt", False), ("lt", False)):
            path = f"/orgs/{org['id']}/transactions/{listing}"
            query = f"filter=createdAt:{op}:{record['createdAt']}"
            _, found = await api.call("GET", f"{path}?{query}", as_=who)
            assert (record["id"] in [t["id"] for t in found["items"]]) is included, (op, listing)
    _, artefacts = await api.call(
        "GET", f"/orgs/{a['id']}/transactions/{tx_id}/artefacts", as_=ALICE
    )
    assert {x["type"] for x in artefacts["items"]} == {
        "BUSINESS_DOCUMENT",
        "VALIDATION_RESULT",  # the invoice was checked at intake
        "TRANSACTION_RECEIPT",
        "MLS",
    }


@pytest.mark.parametrize("backend", BACKENDS)
async def test_a_prod_document_completes_with_its_status_back_in_prod(start_api, backend):
    """The operator's own participant 0242:<spid>, where statuses come back, is in every
    environment (an identifier is unique per environment): a PROD document's positive MLS
    goes out through the PROD access point to the PROD one, and completes the document."""
    api = await start_api(backend, workers=True, public=True, send_retry_delays="0.2")
    a = await whitelabel(api, ALICE)
    b = await whitelabel(api, BOB, legal_id="5560360793")
    sender, receiver = f"0088:{gln(72)}", f"0088:{gln(73)}"
    await receiving_participant(api, a, sender, ALICE, env="PROD")
    await receiving_participant(api, b, receiver, BOB, env="PROD")
    # the same identifier is A's in TEST: the PROD document still reaches B's PROD participant
    await receiving_participant(api, a, receiver, ALICE, env="TEST")
    _, aps = await api.call("GET", f"/orgs/{a['id']}/aps/alltouse", as_=ALICE)
    ap = {x["environment"]: x["id"] for x in aps["items"]}
    sbd = make_sbd(sender=sender, receiver=receiver, mls_type="ALWAYS_SEND", payload=buyer_in("NO"))
    status, body = await api.call(
        "POST",
        f"/orgs/{a['id']}/transactions?ap={ap['PROD']}",
        as_=ALICE,
        data=sbd,
        headers={"Content-Type": "application/xml"},
    )
    assert status == 202, body
    tx_id = body["transactionId"]

    async def done() -> Any:
        _, tx = await api.call("GET", f"/orgs/{a['id']}/transactions/{tx_id}", as_=ALICE)
        final = tx["transactionStatus"] in ("COMPLETED", "FAILED") and tx.get("mlsResponseCode")
        return tx if final or tx.get("serviceError") else None

    tx = await until(done)
    assert (tx["transactionStatus"], tx.get("mlsResponseCode")) == ("COMPLETED", "AB"), tx
    # every transaction of the loop went through a PROD access point: the document, its
    # receipt at B, and the status B sent back to the operator's PROD participant
    ctx = await resolve(api.container.context)

    async def settled() -> Any:
        # the status is taken at A while B's exchange that sent it is still finishing
        async with ctx.uow() as uow:
            stored = await uow.repository(TRANSACTIONS).all()
        ends = ("COMPLETED", "FAILED")
        return stored if all(t.transaction_status.value in ends for t in stored) else None

    stored = await until(settled)
    kinds = sorted((t.direction.value, t.kind.value) for t in stored)
    assert kinds == sorted(
        [("TO_NETWORK", "DOCUMENT"), ("FROM_NETWORK", "DOCUMENT"), ("TO_NETWORK", "MLS")]
    ), kinds
    assert {str(t.ap_id) for t in stored} == {ap["PROD"]}, stored
    mls = next(t for t in stored if t.kind.value == "MLS")
    _, got_b = await api.call("GET", f"/orgs/{b['id']}/transactions/from_network", as_=BOB)
    _, got_a = await api.call("GET", f"/orgs/{a['id']}/transactions/from_network", as_=ALICE)
    assert [t["docInstanceId"] for t in got_b["items"]] == [tx["docInstanceId"]]
    assert got_a["items"] == []
    spid = spid_participant(seat_spid(api.container.settings().seat_id)).value
    assert mls.receiver_id.lower() == spid.lower(), mls
    assert mls.transaction_status.value == "COMPLETED", mls


def buyer_in(country: str) -> bytes:
    """The example invoice with its buyer (AccountingCustomerParty) in ``country``."""
    body = BASE_EXAMPLE.read_bytes()
    buyer = body.index(b"<cac:AccountingCustomerParty>")
    code = body.index(b"<cbc:IdentificationCode>", buyer) + len(b"<cbc:IdentificationCode>")
    return body[:code] + country.encode() + body[code + 2 :]


async def _coro(value: Any) -> Any:
    return value


async def test_intake_refusals_store_nothing(api):
    a = await api.org(ALICE)
    sender = f"0088:{gln(80)}"
    await receiving_participant(api, a, sender, ALICE)
    _, aps = await api.call("GET", f"/orgs/{a['id']}/aps/alltouse", as_=ALICE)
    ap = aps["items"][0]["id"]
    url = f"/orgs/{a['id']}/transactions?ap={ap}"
    xml = {"Content-Type": "application/xml"}
    laughs = b'<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;">]><a>&lol2;</a>'
    cases = [
        (b"", xml, 400),
        (b"<StandardBusinessDocument", xml, 400),
        (laughs, xml, 400),
        (make_sbd(sender=sender)[:-40], xml, 400),
        (make_sbd(sender=f"0088:{gln(81)}"), xml, 400),  # not this organisation's participant
        (make_sbd(sender=sender), {"Content-Type": "application/json"}, 415),
    ]
    for data, headers, expected in cases:
        status, body = await api.call("POST", url, as_=ALICE, data=data, headers=headers)
        assert status == expected, (data[:60], body)
    status, body = await api.call(
        "POST",
        f"/orgs/{a['id']}/transactions",
        as_=ALICE,
        data=make_sbd(sender=sender),
        headers=xml,
    )
    assert status == 400 and body["details"][0]["field"] == "ap"
    _, listed = await api.call("GET", f"/orgs/{a['id']}/transactions/to_network", as_=ALICE)
    assert listed["items"] == []


async def test_a_member_removed_while_their_document_is_checked_is_refused_and_nothing_kept(
    api, monkeypatch
):
    """The caller's membership is checked again where the document is written (with the
    commit, on PostgreSQL): one that ended after the request was let in refuses it as
    ``authorise`` would, and nothing of it is kept, its blobs neither."""
    a, sender, ap = await _sender_setup(api)
    ctx, docs = await resolve(api.container.context), await resolve(api.container.documents)
    validate = type(docs.validator).validate

    async def then_removed(self, document):
        async with ctx.uow() as uow:
            members = uow.repository(MEMBERS)
            for m in await members.all(orgId=uuid.UUID(a["id"])):
                await members.remove(m.id)
            await uow.commit()
        return await validate(self, document)

    monkeypatch.setattr(type(docs.validator), "validate", then_removed)
    deleted: list[str] = []
    delete = type(docs.blobs).delete

    async def noted(self, key):
        deleted.append(key)
        return await delete(self, key)

    monkeypatch.setattr(type(docs.blobs), "delete", noted)
    status, body = await api.call(
        "POST",
        f"/orgs/{a['id']}/transactions?ap={ap}",
        as_=ALICE,
        data=make_sbd(sender=sender),
        headers={"Content-Type": "application/xml"},
    )
    assert status == 403 and body["code"] == "AT-1020", body
    async with ctx.uow() as uow:
        assert await uow.repository(TRANSACTIONS).all(orgId=uuid.UUID(a["id"])) == []
    assert deleted, "the document's blobs are removed"
    for key in deleted:
        with pytest.raises((FileNotFoundError, KeyError)):  # the port's two ways of missing
            await docs.blobs.get(key)


async def test_a_participant_sends_only_through_an_access_point_of_its_environment(api):
    org = await whitelabel(api, BOB, legal_id="5560360793")
    test_id, prod_id = f"0088:{gln(82)}", f"0088:{gln(83)}"
    await receiving_participant(api, org, test_id, BOB)
    status, _ = await participant(api, org["id"], prod_id, env="PROD", who=BOB)
    assert status == 201
    _, aps = await api.call("GET", f"/orgs/{org['id']}/aps/alltouse", as_=BOB)
    ap = {a["environment"]: a["id"] for a in aps["items"]}
    xml = {"Content-Type": "application/xml"}
    for sender, through, other in ((test_id, "PROD", "TEST"), (prod_id, "TEST", "PROD")):
        status, body = await api.call(
            "POST",
            f"/orgs/{org['id']}/transactions?ap={ap[through]}",
            as_=BOB,
            data=make_sbd(sender=sender, receiver=test_id),
            headers=xml,
        )
        assert status == 400 and body["code"] == "AT-1001", body
        [detail] = body["details"]
        assert detail["field"] == "ap", body
        assert f"{sender} is a {other} participant" in detail["problem"], detail
        assert f"is a {through} access point" in detail["problem"], detail
    _, listed = await api.call("GET", f"/orgs/{org['id']}/transactions/to_network", as_=BOB)
    assert listed["items"] == []
    # through its own environment's access point it is taken
    status, body = await api.call(
        "POST",
        f"/orgs/{org['id']}/transactions?ap={ap['TEST']}",
        as_=BOB,
        data=make_sbd(sender=test_id, receiver=test_id),
        headers=xml,
    )
    assert status == 202, body


async def test_upload_url_is_signed_single_use_and_sends_like_a_post(api):
    a = await api.org(ALICE)
    sender = f"0088:{gln(82)}"
    await receiving_participant(api, a, sender, ALICE)
    _, aps = await api.call("GET", f"/orgs/{a['id']}/aps/alltouse", as_=ALICE)
    status, grant = await api.call(
        "GET", f"/orgs/{a['id']}/transactions/upload_url?ap={aps['items'][0]['id']}", as_=ALICE
    )
    assert status == 200 and grant["method"] == "PUT" and grant["expiresAt"].endswith("Z")
    from urllib.parse import urlsplit

    path = urlsplit(grant["uploadUrl"]).path
    status, body = await api.call(
        "PUT", path, data=make_sbd(sender=sender), headers={"Content-Type": "application/xml"}
    )
    assert status == 202 and body["transactionStatus"] == "UNPROCESSED", body
    status, body = await api.call(
        "PUT", path, data=make_sbd(sender=sender), headers={"Content-Type": "application/xml"}
    )
    assert status == 403
    status, body = await api.call(
        "PUT",
        path[:-3] + "xyz",
        data=make_sbd(sender=sender),
        headers={"Content-Type": "application/xml"},
    )
    assert status == 403
    _, listed = await api.call("GET", f"/orgs/{a['id']}/transactions/to_network", as_=ALICE)
    assert len(listed["items"]) == 1


async def _sender_setup(api):
    a = await api.org(ALICE)
    sender = f"0088:{gln(84)}"
    await receiving_participant(api, a, sender, ALICE)
    _, aps = await api.call("GET", f"/orgs/{a['id']}/aps/alltouse", as_=ALICE)
    return a, sender, aps["items"][0]["id"]


async def test_multipart_intake_and_the_size_limit(start_api):
    api = await start_api("sqlite", max_document_bytes=30_000)
    a, sender, ap = await _sender_setup(api)
    form = aiohttp.FormData()
    form.add_field(
        "file", make_sbd(sender=sender), filename="invoice.xml", content_type="application/xml"
    )
    status, body = await api.call(
        "POST", f"/orgs/{a['id']}/transactions?ap={ap}", as_=ALICE, data=form
    )
    assert status == 202, body
    big = make_sbd(sender=sender, pad_to=100_000)
    status, body = await api.call(
        "POST",
        f"/orgs/{a['id']}/transactions?ap={ap}",
        as_=ALICE,
        data=big,
        headers={"Content-Type": "application/xml"},
    )
    assert status == 413 and body["code"] == "AT-1002"
    _, listed = await api.call("GET", f"/orgs/{a['id']}/transactions/to_network", as_=ALICE)
    assert len(listed["items"]) == 1


async def test_a_receiver_missing_from_the_smp_fails_for_good(start_api, inbox):
    api = await start_api("sqlite", workers=True, public=True, webhook_allow_private_targets=True)
    a, sender, ap = await _sender_setup(api)
    await api.call(
        "POST",
        f"/orgs/{a['id']}/webhooks",
        as_=ALICE,
        json={"url": inbox.url, "events": ["transaction.send_failed"]},
    )
    sbd = make_sbd(sender=sender, receiver=f"0088:{gln(85)}")
    _, body = await api.call(
        "POST",
        f"/orgs/{a['id']}/transactions?ap={ap}",
        as_=ALICE,
        data=sbd,
        headers={"Content-Type": "application/xml"},
    )

    async def failed() -> Any:
        _, tx = await api.call(
            "GET", f"/orgs/{a['id']}/transactions/{body['transactionId']}", as_=ALICE
        )
        return tx if tx["transactionStatus"] == "FAILED" else None

    tx = await until(failed)
    assert tx["serviceError"]["code"] == "TXE-1001"
    assert tx["serviceError"]["action"] == "FIX_AND_RETRY"
    await until(lambda: _coro(inbox.events))
    assert inbox.events[0]["eventType"] == "transaction.send_failed"
    assert inbox.events[0]["payload"]["serviceError"]["code"] == "TXE-1001"


async def test_an_unreachable_access_point_is_retried_then_failed(start_api):
    dead = f"http://127.0.0.1:{free_port()}/as4"
    api = await start_api(
        "sqlite", workers=True, public=True, ap_host=dead, send_retry_delays="0.1", send_attempts=3
    )
    a, sender, ap = await _sender_setup(api)
    b = await api.org(BOB, legal_id="5560360793")
    receiver = f"0088:{gln(86)}"
    await receiving_participant(api, b, receiver, BOB)
    sbd = make_sbd(sender=sender, receiver=receiver)
    _, body = await api.call(
        "POST",
        f"/orgs/{a['id']}/transactions?ap={ap}",
        as_=ALICE,
        data=sbd,
        headers={"Content-Type": "application/xml"},
    )

    async def failed() -> Any:
        _, tx = await api.call(
            "GET", f"/orgs/{a['id']}/transactions/{body['transactionId']}", as_=ALICE
        )
        return tx if tx["transactionStatus"] == "FAILED" else None

    tx = await until(failed)
    assert tx["serviceError"]["code"] == "TXE-2001" and tx["serviceError"]["action"] == "RETRY"
    ctx = await resolve(api.container.context)
    async with ctx.uow() as uow:
        stored = await uow.repository(TRANSACTIONS).get(uuid.UUID(body["transactionId"]))
    assert stored.attempts == 3


async def test_a_confirmed_document_gets_an_ap_status(start_api, inbox):
    api = await start_api(
        "sqlite",
        workers=True,
        public=True,
        webhook_allow_private_targets=True,
        mls_confirm_seconds=30,
    )
    a = await api.org(ALICE)
    b = await api.org(BOB, legal_id="5560360793")
    sender, receiver = f"0088:{gln(97)}", f"0088:{gln(98)}"
    await receiving_participant(api, a, sender, ALICE)
    await receiving_participant(api, b, receiver, BOB)
    await api.call(
        "POST",
        f"/orgs/{a['id']}/webhooks",
        as_=ALICE,
        json={"url": inbox.url, "events": ["mls.received"]},
    )
    _, aps = await api.call("GET", f"/orgs/{a['id']}/aps/alltouse", as_=ALICE)
    sbd = make_sbd(sender=sender, receiver=receiver, mls_type="ALWAYS_SEND")
    _, body = await api.call(
        "POST",
        f"/orgs/{a['id']}/transactions?ap={aps['items'][0]['id']}",
        as_=ALICE,
        data=sbd,
        headers={"Content-Type": "application/xml"},
    )

    async def arrived() -> Any:
        _, page = await api.call("GET", f"/orgs/{b['id']}/transactions/from_network", as_=BOB)
        return page["items"]

    (got,) = await until(arrived)
    status, answer = await api.call(
        "POST", f"/orgs/{b['id']}/transactions/{got['id']}/confirm", as_=BOB
    )
    assert status == 200 and answer["mlsResponseCode"] == "AP", answer
    await until(lambda: _coro(inbox.events))
    assert inbox.events[0]["payload"]["mlsResponseCode"] == "AP"
    assert inbox.events[0]["payload"]["transactionId"] == body["transactionId"]
    status, again = await api.call(
        "POST", f"/orgs/{b['id']}/transactions/{got['id']}/confirm", as_=BOB
    )
    assert status == 409 and again["code"] == "AT-1090"
    status, _ = await api.call(
        "POST", f"/orgs/{a['id']}/transactions/{body['transactionId']}/confirm", as_=ALICE
    )
    assert status == 404  # only a received document can be confirmed
