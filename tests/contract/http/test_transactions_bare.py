"""Intake of a bare UBL Invoice or CreditNote: the service builds the SBDH from the document,
and the transaction is the one the same document sent inside an SBD makes."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import aiohttp

from fourcorner.adapters.sbdh import read_envelope
from fourcorner.domain.envelope import MlsType
from sbd_factory import CREDIT_NOTE, EXAMPLES, make_sbd

from .test_participants import ALICE, participant

SENDER, RECEIVER = "0007:2120000787", "0007:5560360793"  # the example SBD's parties
EXAMPLE_SBD = Path(EXAMPLES).parent / "invoice.sbd.xml"
XML = {"Content-Type": "application/xml"}
SUPPLIER_ENDPOINT = b'<cbc:EndpointID schemeID="0007">2120000787</cbc:EndpointID>'
# what two transactions of one document may differ in
OWN = ("id", "docInstanceId", "createdAt", "transactionStatus")


def example_invoice() -> bytes:
    """``examples/invoice.xml``: the invoice inside ``examples/invoice.sbd.xml``, on its own."""
    return (EXAMPLE_SBD.parent / "invoice.xml").read_bytes()


def example_credit_note() -> bytes:
    """The published credit note with the example SBD's parties as its endpoints."""
    body = (EXAMPLES / "base-creditnote-correction.xml").read_bytes()
    for old, new in (
        (
            b'<cbc:EndpointID schemeID="0088">9482348239847239874<',
            b'<cbc:EndpointID schemeID="0007">2120000787<',
        ),
        (
            b'<cbc:EndpointID schemeID="0002">FR23342<',
            b'<cbc:EndpointID schemeID="0007">5560360793<',
        ),
    ):
        assert body.count(old) == 1
        body = body.replace(old, new)
    return body


async def _setup(api: Any) -> tuple[dict[str, Any], str]:
    org = await api.org(ALICE)
    status, body = await participant(api, org["id"], SENDER)
    assert status == 201, body
    _, aps = await api.call("GET", f"/orgs/{org['id']}/aps/alltouse", as_=ALICE)
    return org, aps["items"][0]["id"]


async def _send(api: Any, org: dict[str, Any], ap: str, data: bytes, query: str = "") -> Any:
    url = f"/orgs/{org['id']}/transactions?ap={ap}{query}"
    status, body = await api.call("POST", url, as_=ALICE, data=data, headers=XML)
    assert status == 202, body
    _, tx = await api.call(
        "GET", f"/orgs/{org['id']}/transactions/{body['transactionId']}", as_=ALICE
    )
    return tx


async def _stored(api: Any, org: dict[str, Any], tx: dict[str, Any]) -> bytes:
    path = f"/orgs/{org['id']}/transactions/{tx['id']}/business_document"
    status, document = await api.call("GET", path, as_=ALICE)
    assert status == 200
    return document


def _fields(tx: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in tx.items() if k not in OWN}


async def test_a_bare_invoice_makes_the_transaction_its_sbd_makes(api):
    org, ap = await _setup(api)
    invoice = example_invoice()
    bare = await _send(api, org, ap, invoice, "&mlsType=ALWAYS_SEND&mlsTo=0242:000001")
    # the example SBD's COUNTRY_C1 is SE; the supplier of its invoice is in GB
    sbd = EXAMPLE_SBD.read_bytes().replace(
        b"<sh:InstanceIdentifier>SE</sh:InstanceIdentifier>",
        b"<sh:InstanceIdentifier>GB</sh:InstanceIdentifier>",
    )
    wrapped = await _send(api, org, ap, sbd)
    assert _fields(bare) == _fields(wrapped)
    assert (bare["senderId"], bare["receiverId"], bare["senderCountry"]) == (SENDER, RECEIVER, "GB")
    uuid.UUID(bare["docInstanceId"])  # a new instance identifier, a UUID
    assert bare["docInstanceId"] != wrapped["docInstanceId"]
    stored = await _stored(api, org, bare)
    envelope = read_envelope(stored)
    assert envelope.mls_type is MlsType.ALWAYS_SEND
    assert envelope.mls_to is not None and envelope.mls_to.value == "0242:000001"
    assert envelope.instance_identifier == bare["docInstanceId"]
    # the invoice travels byte for byte (its XML declaration aside)
    assert invoice.split(b"?>", 1)[1].strip() in stored


async def test_a_bare_credit_note_makes_the_transaction_its_sbd_makes(api):
    org, ap = await _setup(api)
    credit_note = example_credit_note()
    bare = await _send(api, org, ap, credit_note)
    form = aiohttp.FormData()
    form.add_field("file", credit_note, filename="cn.xml", content_type="application/xml")
    url = f"/orgs/{org['id']}/transactions?ap={ap}"
    status, body = await api.call("POST", url, as_=ALICE, data=form)  # a form's file part too
    assert status == 202, body
    sbd = make_sbd(
        sender=SENDER,
        receiver=RECEIVER,
        document=CREDIT_NOTE,
        country_c1="GB",
        payload=credit_note,
    )
    wrapped = await _send(api, org, ap, sbd)
    assert _fields(bare) == _fields(wrapped)
    assert "CreditNote" in bare["docTypeId"]
    envelope = read_envelope(await _stored(api, org, bare))
    assert envelope.mls_type is None and envelope.mls_to is None


async def test_bare_refusals_name_the_element_and_store_nothing(api):
    org, ap = await _setup(api)
    url = f"/orgs/{org['id']}/transactions?ap={ap}"
    invoice = example_invoice()
    no_endpoint = invoice.replace(SUPPLIER_ENDPOINT, b"")
    unknown = invoice.replace(b'schemeID="0007">2120000787', b'schemeID="9999">2120000787')
    order = (
        b'<Order xmlns="urn:oasis:names:specification:ubl:schema:xsd:Order-2"><ID>1</ID></Order>'
    )
    cases = [
        (no_endpoint, "", 400, "Invoice/AccountingSupplierParty/Party/EndpointID"),
        (unknown, "", 400, "Invoice/AccountingSupplierParty/Party/EndpointID/@schemeID"),
        (invoice, "&mlsType=SOMETIMES", 400, "mlsType"),
        (invoice, "&mlsTo=not-a-participant", 400, "mlsTo"),
        (EXAMPLE_SBD.read_bytes(), "&mlsType=ALWAYS_SEND", 400, "mlsType"),
        (order, "", 400, "Order"),  # neither an SBD nor a UBL Invoice or CreditNote
    ]
    for data, query, expected, field in cases:
        status, body = await api.call("POST", url + query, as_=ALICE, data=data, headers=XML)
        assert status == expected, (field, body)
        assert body["code"] == "AT-1001" and field in [d["field"] for d in body["details"]], body
    # the supplier is not one of this organisation's participants
    theirs = invoice.replace(b'schemeID="0007">2120000787', b'schemeID="0007">5560360793')
    status, body = await api.call("POST", url, as_=ALICE, data=theirs, headers=XML)
    assert status == 403 and body["code"] == "AT-1022", body
    assert "0007:5560360793" in body["error"]
    _, listed = await api.call("GET", f"/orgs/{org['id']}/transactions/to_network", as_=ALICE)
    assert listed["items"] == []


async def test_the_upload_url_takes_a_bare_invoice(api):
    org, ap = await _setup(api)
    _, grant = await api.call(
        "GET", f"/orgs/{org['id']}/transactions/upload_url?ap={ap}", as_=ALICE
    )
    path = urlsplit(grant["uploadUrl"]).path
    status, body = await api.call(
        "PUT", path + "?mlsType=NEVER", data=example_invoice(), headers=XML
    )
    assert status == 400 and body["details"][0]["field"] == "mlsType", body
    # a refused query does not spend the single-use URL
    status, body = await api.call(
        "PUT", path + "?mlsType=FAILURE_ONLY", data=example_invoice(), headers=XML
    )
    assert status == 202, body
    tx = {"id": body["transactionId"]}
    envelope = read_envelope(await _stored(api, org, tx))
    assert envelope.sender.value == SENDER and envelope.mls_type is MlsType.FAILURE_ONLY


async def test_a_document_neither_an_sbd_nor_a_ubl_invoice_says_so(api):
    org, ap = await _setup(api)
    url = f"/orgs/{org['id']}/transactions?ap={ap}"
    for data in (b"<a/>", b"<a><b/></a>", b'<Order xmlns="urn:x"><ID>1</ID></Order>'):
        status, body = await api.call("POST", url, as_=ALICE, data=data, headers=XML)
        assert status == 400 and body["code"] == "AT-1001", body
        assert "neither" in body["error"] and "SBD" in body["error"], body
        assert "UBL Invoice or CreditNote" in body["error"], body
