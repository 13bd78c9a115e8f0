"""Validation in the flow: a billing document is checked at intake (POST and the upload URL)
and, when received, after the AS4 receipt; the organisation's settings decide whether fatal
errors refuse it; every checked transaction has its VALIDATION_RESULT artefacts."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from lxml import etree
from tests.unit.test_validation_mutations import DROPS, NS

from fourcorner.application.collections import ARTEFACTS, TRANSACTIONS
from fourcorner.entrypoints.container import resolve
from sbd_factory import BASE_EXAMPLE, make_sbd

from .test_participants import ALICE, BOB, gln
from .test_transactions import inbox as inbox
from .test_transactions import receiving_participant, until

XML = {"Content-Type": "application/xml"}
ORDER = (
    "urn:oasis:names:specification:ubl:schema:xsd:Order-2::Order"
    "##urn:fdc:peppol.eu:poacc:trns:order:3::2.1"
)
# the example invoice without its issue date: BR-03 (and the rules on dates after it) fail
NO_ISSUE_DATE = BASE_EXAMPLE.read_bytes().replace(b"<cbc:IssueDate>2017-11-13</cbc:IssueDate>", b"")


async def sending_org(api: Any, n: int) -> tuple[dict[str, Any], str, str]:
    org = await api.org(ALICE)
    sender = f"0088:{gln(n)}"
    await receiving_participant(api, org, sender, ALICE)
    _, aps = await api.call("GET", f"/orgs/{org['id']}/aps/alltouse", as_=ALICE)
    return org, sender, aps["items"][0]["id"]


async def send(api: Any, org: dict[str, Any], ap: str, sbd: bytes) -> tuple[int, Any]:
    return await api.call(
        "POST", f"/orgs/{org['id']}/transactions?ap={ap}", as_=ALICE, data=sbd, headers=XML
    )


async def stored(api: Any) -> tuple[int, int]:
    ctx = await resolve(api.container.context)
    async with ctx.reads() as uow:
        txs = await uow.repository(TRANSACTIONS).count()
        arts = await uow.repository(ARTEFACTS).count()
    return txs, arts


@pytest.mark.parametrize("api", ["memory", "sqlite"], indirect=True)
async def test_a_document_that_fails_the_rules_is_refused_and_nothing_is_stored(api):
    org, sender, ap = await sending_org(api, 90)
    before = await stored(api)
    status, body = await send(api, org, ap, make_sbd(sender=sender, payload=NO_ISSUE_DATE))
    assert status == 422, body
    assert body["code"] == "AT-1131"
    assert (body["category"], body["action"]) == ("VALIDATION_ERROR", "FIX_AND_RETRY")
    ids = [d["id"] for d in body["details"]]
    assert "BR-03" in ids, body
    for d in body["details"]:
        assert d["location"].startswith("/") and d["text"], d
        assert (d["field"], d["problem"]) == (d["location"], d["text"])
    assert await stored(api) == before


async def test_a_valid_invoice_is_sent_with_its_validation_result(api):
    org, sender, ap = await sending_org(api, 91)
    status, body = await send(api, org, ap, make_sbd(sender=sender))
    assert status == 202, body
    summary, svrl = await validation_artefacts(api, org, body["transactionId"])
    assert summary["valid"] is True and summary["checked"] is True
    assert summary["errors"] == []
    assert summary["customizationId"].startswith("urn:cen.eu:en16931:2017")
    assert b"schematron-output" in svrl


async def test_report_lets_an_organisation_send_anyway_and_the_transaction_carries_it(api):
    org, sender, ap = await sending_org(api, 92)
    path = f"/orgs/{org['id']}"
    status, updated = await api.call("PUT", path, as_=ALICE, json={"validation": "report"})
    assert status == 200, updated
    assert (updated["validation"], updated["inboundValidation"]) == ("report", "report")
    status, body = await send(api, org, ap, make_sbd(sender=sender, payload=NO_ISSUE_DATE))
    assert status == 202, body
    summary, svrl = await validation_artefacts(api, org, body["transactionId"])
    assert summary["valid"] is False
    assert "BR-03" in {e["id"] for e in summary["errors"]}
    assert all(e["flag"] == "fatal" for e in summary["errors"])
    assert b"BR-03" in svrl
    # and back to refuse
    status, updated = await api.call("PUT", path, as_=ALICE, json={"validation": "refuse"})
    assert status == 200 and updated["validation"] == "refuse"
    status, body = await send(api, org, ap, make_sbd(sender=sender, payload=NO_ISSUE_DATE))
    assert status == 422 and body["code"] == "AT-1131", body


async def test_the_settings_default_to_refuse_and_report_and_take_only_those_values(api):
    org = await api.org(ALICE)
    _, got = await api.call("GET", f"/orgs/{org['id']}", as_=ALICE)
    assert (got["validation"], got["inboundValidation"]) == ("refuse", "report")
    status, body = await api.call(
        "PUT", f"/orgs/{org['id']}", as_=ALICE, json={"validation": "ignore"}
    )
    assert status == 400, body


async def test_a_document_the_rules_do_not_apply_to_is_sent_without_a_result(api):
    org, sender, ap = await sending_org(api, 93)
    order = b'<Order xmlns="urn:oasis:names:specification:ubl:schema:xsd:Order-2"/>'
    sbd = make_sbd(sender=sender, payload=order, document=ORDER)
    status, body = await send(api, org, ap, sbd)
    assert status == 202, body
    _, artefacts = await api.call(
        "GET", f"/orgs/{org['id']}/transactions/{body['transactionId']}/artefacts", as_=ALICE
    )
    assert [a["type"] for a in artefacts["items"]] == ["BUSINESS_DOCUMENT"]


async def test_the_upload_url_validates_the_same_way(api):
    org, sender, ap = await sending_org(api, 94)
    _, grant = await api.call(
        "GET", f"/orgs/{org['id']}/transactions/upload_url?ap={ap}", as_=ALICE
    )
    path = grant["uploadUrl"].split("://", 1)[1].split("/", 1)[1]
    resp = await api.client.put(
        "/" + path, data=make_sbd(sender=sender, payload=NO_ISSUE_DATE), headers=XML
    )
    body = await resp.json()
    assert resp.status == 422, body
    assert body["code"] == "AT-1131" and "BR-03" in [d["id"] for d in body["details"]]


async def test_every_artefact_answers_a_media_type_its_operation_documents(api):
    """A validation result's JSON summary was served as application/json from an operation
    that documented application/xml only."""
    org, sender, ap = await sending_org(api, 92)
    status, body = await send(api, org, ap, make_sbd(sender=sender))
    assert status == 202, body
    base = f"/orgs/{org['id']}/transactions/{body['transactionId']}/artefacts"
    doc = await (await api.client.get("/openapi.json")).json()
    path = "/orgs/{orgId}/transactions/{transactionId}/artefacts/{artefactId}"
    documented = doc["paths"][path]["get"]["responses"]["200"]["content"]
    _, artefacts = await api.call("GET", base, as_=ALICE)
    served = set()
    for a in artefacts["items"]:
        headers = {"Authorization": f"Bearer {api.token(ALICE)}"}
        resp = await api.client.get(f"{base}/{a['id']}", headers=headers)
        assert resp.status == 200 and resp.content_type == a["contentType"], a
        assert resp.content_type in documented, (a, list(documented))
        served.add(resp.content_type)
        if resp.content_type == "application/json":
            name = documented["application/json"]["schema"]["$ref"].rsplit("/", 1)[1]
            schema = doc["components"]["schemas"][name]
            keys = set(await resp.json())
            assert set(schema["required"]) <= keys <= set(schema["properties"]), keys
    assert served == {"application/xml", "application/json"}, artefacts


async def validation_artefacts(
    api: Any, org: dict[str, Any], tx_id: str, who: str = ALICE
) -> tuple[dict[str, Any], bytes]:
    """The JSON summary and the SVRL of a transaction's VALIDATION_RESULT artefacts."""
    base = f"/orgs/{org['id']}/transactions/{tx_id}/artefacts"
    _, artefacts = await api.call("GET", base, as_=who)
    results = {
        a["contentType"]: a["id"] for a in artefacts["items"] if a["type"] == "VALIDATION_RESULT"
    }
    assert set(results) == {"application/json", "application/xml"}, artefacts
    status, summary = await api.call("GET", f"{base}/{results['application/json']}", as_=who)
    assert status == 200, summary
    status, svrl = await api.call("GET", f"{base}/{results['application/xml']}", as_=who)
    assert status == 200, svrl
    return summary, svrl


# --- received -------------------------------------------------------------------------------


async def two_orgs(start_api: Any, inbox: Any) -> tuple[Any, dict, dict, str, str, str]:
    """A server with workers; organisation A sends anything (validation report), B receives
    and sends its transaction.received events to ``inbox``."""
    api = await start_api(
        "sqlite",
        workers=True,
        public=True,
        webhook_allow_private_targets=True,
        send_retry_delays="0.2",
    )
    a = await api.org(ALICE)
    b = await api.org(BOB, legal_id="5560360793")
    sender, receiver = f"0088:{gln(95)}", f"0088:{gln(96)}"
    await receiving_participant(api, a, sender, ALICE)
    await receiving_participant(api, b, receiver, BOB)
    status, _ = await api.call("PUT", f"/orgs/{a['id']}", as_=ALICE, json={"validation": "report"})
    assert status == 200
    status, _ = await api.call(
        "POST",
        f"/orgs/{b['id']}/webhooks",
        as_=BOB,
        json={"url": inbox.url, "events": ["transaction.received"]},
    )
    assert status == 201
    _, aps = await api.call("GET", f"/orgs/{a['id']}/aps/alltouse", as_=ALICE)
    return api, a, b, sender, receiver, aps["items"][0]["id"]


async def sent(api: Any, org: dict[str, Any], tx_id: str) -> dict[str, Any]:
    async def finished() -> Any:
        _, tx = await api.call("GET", f"/orgs/{org['id']}/transactions/{tx_id}", as_=ALICE)
        done = tx["transactionStatus"] in ("COMPLETED", "FAILED", "REJECTED")
        return tx if done and tx.get("mlsResponseCode") else None

    return await until(finished)


async def test_a_received_document_is_recorded_with_its_result_by_default(start_api, inbox):
    api, a, b, sender, receiver, ap = await two_orgs(start_api, inbox)
    sbd = make_sbd(sender=sender, receiver=receiver, mls_type="ALWAYS_SEND", payload=NO_ISSUE_DATE)
    status, body = await send(api, a, ap, sbd)
    assert status == 202, body
    tx = await sent(api, a, body["transactionId"])
    assert (tx["transactionStatus"], tx["mlsResponseCode"]) == ("COMPLETED", "AB"), tx
    await until(lambda: _now(inbox.events))
    (event,) = inbox.events
    assert event["eventType"] == "transaction.received"
    assert event["payload"]["valid"] is False
    _, got = await api.call("GET", f"/orgs/{b['id']}/transactions/from_network", as_=BOB)
    (received,) = got["items"]
    assert received["id"] == event["payload"]["id"]
    summary, _ = await validation_artefacts(api, b, received["id"], who=BOB)
    assert summary["valid"] is False and "BR-03" in {e["id"] for e in summary["errors"]}
    # the event is found by its transaction, participants and document instance, in its
    # organisation only
    for text in (received["id"].upper(), sender, receiver, received["docInstanceId"].upper()):
        _, events = await api.call(
            "GET", f"/orgs/{b['id']}/webhooks/events?search={quote(text)}", as_=BOB
        )
        assert [e["id"] for e in events["items"]] == [event["id"]], text
    _, events = await api.call(
        "GET", f"/orgs/{a['id']}/webhooks/events?search={quote(received['id'])}", as_=ALICE
    )
    assert events["items"] == []


async def test_a_valid_received_document_says_so_in_its_event(start_api, inbox):
    api, a, _, sender, receiver, ap = await two_orgs(start_api, inbox)
    status, body = await send(api, a, ap, make_sbd(sender=sender, receiver=receiver))
    assert status == 202, body
    await until(lambda: _now(inbox.events))
    assert inbox.events[0]["payload"]["valid"] is True


async def test_refuse_answers_a_received_document_that_fails_with_an_mls_re(start_api, inbox):
    api, a, b, sender, receiver, ap = await two_orgs(start_api, inbox)
    status, _ = await api.call(
        "PUT", f"/orgs/{b['id']}", as_=BOB, json={"inboundValidation": "refuse"}
    )
    assert status == 200
    sbd = make_sbd(sender=sender, receiver=receiver, payload=NO_ISSUE_DATE)
    status, body = await send(api, a, ap, sbd)
    assert status == 202, body
    tx = await sent(api, a, body["transactionId"])
    assert (tx["transactionStatus"], tx["mlsResponseCode"]) == ("REJECTED", "RE"), tx
    # the RE names every failed rule in a line response of its own: BV, the rule's id
    _, artefacts = await api.call(
        "GET", f"/orgs/{a['id']}/transactions/{tx['id']}/artefacts", as_=ALICE
    )
    mls = next(x for x in artefacts["items"] if x["type"] == "MLS")
    _, document = await api.call(
        "GET", f"/orgs/{a['id']}/transactions/{tx['id']}/artefacts/{mls['id']}", as_=ALICE
    )
    envelopes = await resolve(api.container.documents)
    status_doc = envelopes.envelopes.read_mls(document)
    assert status_doc.response_code == "RE"
    rules = {description.split(":")[0] for _, reason, description in status_doc.reasons}
    assert "BR-03" in rules, status_doc.reasons
    assert {reason for _, reason, _ in status_doc.reasons} == {"BV"}
    assert all(line.startswith("/") for line, _, _ in status_doc.reasons)
    # not delivered as received: no transaction, no event
    _, got = await api.call("GET", f"/orgs/{b['id']}/transactions/from_network", as_=BOB)
    assert got["items"] == []
    assert inbox.events == []


async def _now(value: Any) -> Any:
    return value


@settings(
    max_examples=10,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(drop=st.sampled_from(DROPS), policy=st.sampled_from(["refuse", "report"]))
@pytest.mark.parametrize("api", ["memory"], indirect=True)
async def test_intake_follows_the_rules_and_the_setting_for_any_dropped_element(api, drop, policy):
    """An invoice without a mandatory element: refused naming its rule (nothing stored), or
    sent with a result that names it, as the organisation chose."""
    path, rule = drop
    root = etree.fromstring(BASE_EXAMPLE.read_bytes())
    (gone,) = root.xpath(path, namespaces=NS)
    gone.getparent().remove(gone)
    if not hasattr(api, "sending"):  # one organisation for every example of this server
        api.sending = await sending_org(api, 97)
    org, sender, ap = api.sending
    await api.call("PUT", f"/orgs/{org['id']}", as_=ALICE, json={"validation": policy})
    before = await stored(api)
    status, body = await send(api, org, ap, make_sbd(sender=sender, payload=etree.tostring(root)))
    if policy == "refuse":
        assert (status, body["code"]) == (422, "AT-1131"), body
        assert rule in {d["id"] for d in body["details"]}
        assert await stored(api) == before
    else:
        assert status == 202, body
        summary, _ = await validation_artefacts(api, org, body["transactionId"])
        assert summary["valid"] is False and rule in {e["id"] for e in summary["errors"]}
