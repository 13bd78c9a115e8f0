"""A message level status reaches only the sent document it is about: two organisations send
documents with the same instance identifier, and neither gets the other's status; a status
that could be about either, or comes from an access point the document never went to, is
refused and changes nothing."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import urlsplit

import pytest
from cryptography import x509

from fourcorner.adapters.pki import issue_leaf
from fourcorner.adapters.sbdh import (
    MLS_DOCUMENT_TYPE,
    MLS_PROCESS,
    mls_envelope,
    write_mls,
    write_sbd,
)
from fourcorner.application.collections import ACCESS_POINTS, PARTICIPANTS
from fourcorner.domain.envelope import MessageLevelStatus, seat_spid, spid_participant
from fourcorner.domain.network_services import OPERATOR_ORG_ID, Environment
from fourcorner.entrypoints.container import resolve
from sbd_factory import make_as4_message, make_sbd

from .conftest import BACKENDS
from .test_as4_endpoint import error_code, pki
from .test_participants import ALICE, BOB, gln
from .test_transactions import _coro, inbox, receiving_participant, until

__all__ = ["inbox"]


async def send(api: Any, org: dict[str, Any], who: str, sbd: bytes) -> str:
    _, aps = await api.call("GET", f"/orgs/{org['id']}/aps/alltouse", as_=who)
    status, body = await api.call(
        "POST",
        f"/orgs/{org['id']}/transactions?ap={aps['items'][0]['id']}",
        as_=who,
        data=sbd,
        headers={"Content-Type": "application/xml"},
    )
    assert status == 202, body
    return str(body["transactionId"])


async def transaction(api: Any, org: dict[str, Any], who: str, tx_id: str) -> dict[str, Any]:
    _, tx = await api.call("GET", f"/orgs/{org['id']}/transactions/{tx_id}", as_=who)
    return dict(tx)


async def completed(api: Any, org: dict[str, Any], who: str, tx_id: str) -> dict[str, Any]:
    async def done() -> Any:
        tx = await transaction(api, org, who, tx_id)
        return tx if tx["transactionStatus"] in ("COMPLETED", "FAILED") else None

    tx: dict[str, Any] = await until(done)
    assert tx["transactionStatus"] == "COMPLETED", tx
    return tx


async def artefact_types(api: Any, org: dict[str, Any], who: str, tx_id: str) -> set[str]:
    _, found = await api.call("GET", f"/orgs/{org['id']}/transactions/{tx_id}/artefacts", as_=who)
    return {a["type"] for a in found["items"]}


async def mls_path(api: Any) -> str:
    """Where statuses reach this service: the access point serving ``0242:<SPID>``."""
    ctx = await resolve(api.container.context)
    ours = spid_participant(seat_spid(pki(api).seat_id)).value
    async with ctx.uow() as uow:
        p = await uow.repository(PARTICIPANTS).first(
            identifierKey=ours.lower(), environment=Environment.TEST
        )
    return f"/as4/{OPERATOR_ORG_ID}/{p.ap_ref}"


def another_access_point(
    api: Any, cn: str, crl_urls: Sequence[str] = (), ocsp_url: str | None = None
) -> tuple[Any, Any]:
    """The certificate and key of another access point of the network, whose CN is ``cn``
    (naming ``crl_urls`` as its CRL distribution point, ``ocsp_url`` as its OCSP
    responder)."""
    t = pki(api)
    now = datetime.now(UTC)
    return issue_leaf(
        t.ap_ca,
        t.ap_ca_key,
        cn,
        not_before=now - timedelta(hours=1),
        not_after=now + timedelta(days=1),
        key=t.smp_key,
        crl_urls=crl_urls,
        ocsp_url=ocsp_url,
    )


def status_message(
    api: Any,
    code: str,
    about: str,
    *,
    signer: tuple[Any, Any] | None = None,
    to_spid: str | None = None,
    message_id: str | None = None,
) -> Any:
    """The AS4 message of a status about instance identifier ``about`` to this service, from
    the access point ``signer`` (default: this service's own, where the documents were
    delivered) to the service provider ``to_spid`` (default: this one)."""
    t = pki(api)
    cert, key = signer or (t.ap_certificate, t.ap_key)
    c3 = cert.subject.get_attributes_for_oid(x509.NameOID.COMMON_NAME)[0].value
    ours = spid_participant(seat_spid(t.seat_id))
    now = datetime.now(UTC)
    rejected = code == "RE"
    status = MessageLevelStatus(
        response_code=code,
        original_instance_id=about,
        id=str(uuid.uuid4()),
        issued_at=now,
        sender_spid=seat_spid(c3),
        receiver_spid=to_spid or seat_spid(t.seat_id),
        description="the totals do not add up" if rejected else "",
        reasons=(("NA", "BV", "the totals do not add up"),) if rejected else (),
    )
    envelope = mls_envelope(
        status, receiver=ours, instance_id=str(uuid.uuid4()), created_at=now, country_c1="SE"
    )
    return make_as4_message(
        t,
        write_sbd(envelope, write_mls(status)),
        sender=envelope.sender,
        receiver=ours,
        document=MLS_DOCUMENT_TYPE,
        process=MLS_PROCESS,
        signer=(cert, key),
        timestamp=now,
        message_id=message_id,
    )


async def post_message(api: Any, msg: Any, path: str | None = None) -> str | None:
    """The ebMS error ``msg`` is answered with, or None for a receipt."""
    path = path or await mls_path(api)
    resp = await api.client.post(path, data=msg.body, headers=msg.http_headers)
    assert resp.status == 200
    answer = await resp.read()
    assert error_code(answer) is not None or b"Receipt" in answer
    return error_code(answer)


async def post_status(
    api: Any,
    code: str,
    about: str,
    *,
    signer: tuple[Any, Any] | None = None,
    path: str | None = None,
    to_spid: str | None = None,
) -> str | None:
    """Send a status about ``about`` (``status_message``) to this service: the ebMS error it
    answers, or None for a receipt."""
    msg = status_message(api, code, about, signer=signer, to_spid=to_spid)
    return await post_message(api, msg, path)


def statuses(box: Any) -> list[tuple[str, str, str]]:
    return [
        (e["orgId"], e["payload"]["transactionId"], e["payload"]["mlsResponseCode"])
        for e in box.events
        if e["eventType"] == "mls.received"
    ]


@pytest.mark.parametrize("backend", BACKENDS)
async def test_a_status_reaches_only_the_document_it_is_about(start_api, inbox, backend):
    api = await start_api(
        backend,
        workers=True,
        public=True,
        webhook_allow_private_targets=True,
        send_retry_delays="0.2",
    )
    a = await api.org(ALICE)
    b = await api.org(BOB, legal_id="5560360793")
    pa, pb = f"0088:{gln(60)}", f"0088:{gln(61)}"
    await receiving_participant(api, a, pa, ALICE)
    await receiving_participant(api, b, pb, BOB)
    for org, who in ((a, ALICE), (b, BOB)):
        status, _ = await api.call(
            "POST",
            f"/orgs/{org['id']}/webhooks",
            as_=who,
            json={"url": inbox.url, "events": ["mls.received"]},
        )
        assert status == 201
    shared = str(uuid.uuid4())
    # A sends first and asks for no positive status; B then sends a document with the same
    # instance identifier and asks for one (ALWAYS_SEND): the AB that comes back is B's
    tx_a = await send(api, a, ALICE, make_sbd(sender=pa, receiver=pb, instance_id=shared))
    await completed(api, a, ALICE, tx_a)
    tx_b = await send(
        api,
        b,
        BOB,
        make_sbd(sender=pb, receiver=pa, instance_id=shared, mls_type="ALWAYS_SEND"),
    )
    await completed(api, b, BOB, tx_b)
    await until(lambda: _coro(statuses(inbox)))
    assert statuses(inbox) == [(b["id"], tx_b, "AB")]
    assert (await transaction(api, b, BOB, tx_b))["mlsResponseCode"] == "AB"
    got_a = await transaction(api, a, ALICE, tx_a)
    assert "mlsResponseCode" not in got_a and got_a["transactionStatus"] == "COMPLETED"
    assert "MLS" in await artefact_types(api, b, BOB, tx_b)
    assert "MLS" not in await artefact_types(api, a, ALICE, tx_a)
    # a rejection about the shared identifier could be about either document: refused
    assert "EBMS:0004" in (await post_status(api, "RE", shared) or "")
    # a document only A sent: a status from an access point it never went to is refused, and
    # so are a positive one it did not ask for, one for another service provider and one sent
    # to an access point that does not take statuses; its own access point's rejection is taken
    own = str(uuid.uuid4())
    tx_own = await send(api, a, ALICE, make_sbd(sender=pa, receiver=pb, instance_id=own))
    await completed(api, a, ALICE, tx_own)
    stranger = another_access_point(api, "POP000123")
    assert "EBMS:0004" in (await post_status(api, "RE", own, signer=stranger) or "")
    assert "EBMS:0004" in (await post_status(api, "AB", own) or "")
    assert "EBMS:0004" in (await post_status(api, "RE", own, to_spid="000999") or "")
    ctx = await resolve(api.container.context)
    async with ctx.uow() as uow:
        operator_aps = await uow.repository(ACCESS_POINTS).all(orgId=OPERATOR_ORG_ID)
    where = await mls_path(api)
    (elsewhere,) = {urlsplit(x.ap_url).path for x in operator_aps} - {where}
    # the PROD access point, which serves the operator's PROD 0242 participant: a status
    # about a document sent in TEST is no answer there
    assert "PEPPOL:NOT_SERVICED" in (await post_status(api, "RE", own, path=elsewhere) or "")
    for tx_id, org, who in ((tx_a, a, ALICE), (tx_b, b, BOB), (tx_own, a, ALICE)):
        assert (await transaction(api, org, who, tx_id))["transactionStatus"] == "COMPLETED"
    assert await post_status(api, "RE", own) is None
    rejected = await transaction(api, a, ALICE, tx_own)
    assert rejected["transactionStatus"] == "REJECTED"
    assert rejected["mlsResponseCode"] == "RE"
    assert rejected["serviceError"]["code"] == "TXE-3001"
    await until(lambda: _coro(len(statuses(inbox)) == 2))
    assert statuses(inbox) == [(b["id"], tx_b, "AB"), (a["id"], tx_own, "RE")]
    # a document has at most one status: a second one (another rejection, or a rejection
    # after the AB it asked for) is refused and changes nothing
    assert "EBMS:0004" in (await post_status(api, "RE", own) or "")
    asked = str(uuid.uuid4())
    sbd = make_sbd(sender=pa, receiver=pb, instance_id=asked, mls_type="ALWAYS_SEND")
    tx_asked = await send(api, a, ALICE, sbd)
    await completed(api, a, ALICE, tx_asked)
    await until(lambda: _coro(len(statuses(inbox)) == 3))
    assert statuses(inbox)[2] == (a["id"], tx_asked, "AB")
    assert "EBMS:0004" in (await post_status(api, "RE", asked) or "")
    after = await transaction(api, a, ALICE, tx_asked)
    assert after["transactionStatus"] == "COMPLETED" and after["mlsResponseCode"] == "AB"
    assert (await transaction(api, a, ALICE, tx_own))["mlsResponseCode"] == "RE"
    assert len(statuses(inbox)) == 3


@pytest.mark.parametrize("backend", BACKENDS)
async def test_a_retried_status_gets_a_receipt_not_an_error(start_api, backend):
    """A C2 whose HTTP answer was lost sends the same status again with the same MessageId
    (NETWORK.md: a retry keeps the MessageId; a duplicate is never delivered twice): it is
    answered with a receipt again, and taken once. Another message about the same document,
    or the same MessageId signed by another access point, is no retry: refused."""
    api = await start_api(backend, workers=True, public=True, send_retry_delays="0.2")
    a = await api.org(ALICE)
    b = await api.org(BOB, legal_id="5560360793")
    pa, pb = f"0088:{gln(60)}", f"0088:{gln(61)}"
    await receiving_participant(api, a, pa, ALICE)
    await receiving_participant(api, b, pb, BOB)
    own = str(uuid.uuid4())
    tx = await send(api, a, ALICE, make_sbd(sender=pa, receiver=pb, instance_id=own))
    await completed(api, a, ALICE, tx)
    message_id = f"{uuid.uuid4()}@c3.test"
    msg = status_message(api, "RE", own, message_id=message_id)
    assert await post_message(api, msg) is None
    assert await post_message(api, msg) is None  # the same bytes again
    assert "EBMS:0004" in (await post_status(api, "RE", own) or "")  # another message
    stranger = another_access_point(api, "POP000124")
    forged = status_message(api, "RE", own, signer=stranger, message_id=message_id)
    assert "EBMS:0004" in (await post_message(api, forged) or "")
    got = await transaction(api, a, ALICE, tx)
    assert (got["transactionStatus"], got["mlsResponseCode"]) == ("REJECTED", "RE")
    _, found = await api.call("GET", f"/orgs/{a['id']}/transactions/{tx}/artefacts", as_=ALICE)
    assert [x["type"] for x in found["items"]].count("MLS") == 1


@pytest.mark.parametrize("backend", BACKENDS)
async def test_statuses_racing_for_one_document_are_taken_once(start_api, backend):
    """Statuses about one document posted at once, round after round: two different
    messages, of which one is taken and the other refused; the same message twice, taken once
    and answered with a receipt both times. Each document ends with one status, one MLS
    artefact and one mls.received event, however the two met."""
    api = await start_api(backend, workers=True, public=True)
    a = await api.org(ALICE)
    b = await api.org(BOB, legal_id="5560360793")
    pa, pb = f"0088:{gln(62)}", f"0088:{gln(63)}"
    await receiving_participant(api, a, pa, ALICE)
    await receiving_participant(api, b, pb, BOB)
    path = await mls_path(api)
    for round_ in range(6):
        own = str(uuid.uuid4())
        tx = await send(api, a, ALICE, make_sbd(sender=pa, receiver=pb, instance_id=own))
        await completed(api, a, ALICE, tx)
        if round_ % 2 == 0:  # two messages about the same document
            answers = await asyncio.gather(
                post_message(api, status_message(api, "RE", own), path),
                post_message(api, status_message(api, "RE", own), path),
            )
            assert answers.count(None) == 1, answers
            refused = next(x for x in answers if x is not None)
            assert refused.startswith("EBMS:0004") and "status already" in refused
        else:  # one message, twice at once (a retry crossing the first attempt)
            msg = status_message(api, "RE", own, message_id=f"{uuid.uuid4()}@c3.test")
            answers = await asyncio.gather(
                post_message(api, msg, path), post_message(api, msg, path)
            )
            assert answers == [None, None]
        got = await transaction(api, a, ALICE, tx)
        assert (got["transactionStatus"], got["mlsResponseCode"]) == ("REJECTED", "RE")
        _, found = await api.call("GET", f"/orgs/{a['id']}/transactions/{tx}/artefacts", as_=ALICE)
        assert [x["type"] for x in found["items"]].count("MLS") == 1
        _, heard = await api.call(
            "GET", f"/orgs/{a['id']}/webhooks/events?filter=eventType:eq:mls.received", as_=ALICE
        )
        about = [e for e in heard["items"] if e["payload"]["transactionId"] == tx]
        assert len(about) == 1, heard
