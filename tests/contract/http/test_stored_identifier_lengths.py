"""Identifiers a peer or a caller chooses that are stored in indexed columns are bounded, so
that storing them never fails (a PostgreSQL index entry holds at most 2704 bytes): an ebMS
MessageId and an SBDH InstanceIdentifier of 255 characters are taken in on every backend; one
of 256 is refused in the answer each path gives for that header (a signed EBMS:0009 error, a
signed EBMS:0004 error for an invalid SBD, 400 naming the field), never a server error, and
neither that answer nor the log repeats it back."""

from __future__ import annotations

import logging
import secrets

import pytest
from lxml import etree

from sbd_factory import make_sbd

from .test_as4_endpoint import EB, error_code, message, post, received, setup
from .test_participants import ALICE, gln
from .test_transactions import receiving_participant

IDENTIFICATION = "StandardBusinessDocumentHeader/DocumentIdentification"


def long_id(length: int) -> str:
    """``length`` characters that do not compress: random, ending like a MessageId."""
    return (secrets.token_urlsafe(length) + "x" * length)[: length - 5] + "@test"


@pytest.mark.parametrize("length", [255, 256, 4000])
@pytest.mark.parametrize(
    ("field", "refusal"), [("MessageId", "EBMS:0009"), ("InstanceIdentifier", "EBMS:0004")]
)
async def test_an_as4_identifier_of_up_to_255_characters_is_received(
    api, field, refusal, length, caplog
):
    """The ebMS MessageId, and the SBDH InstanceIdentifier: 255 characters get a receipt and a
    transaction; more, a signed error naming the limit, and nothing stored. The error refers
    to the message only by a MessageId a message may carry: an over-long one is not echoed
    (no RefToMessageId), and the refusal's log line does not repeat it either."""
    caplog.set_level(logging.INFO, logger="fourcorner")
    b, receiver, path = await setup(api)
    sender = f"0088:{gln(83)}"
    ident = long_id(length)
    by_message = field == "MessageId"
    sbd = make_sbd(sender=sender, receiver=receiver, instance_id=None if by_message else ident)
    msg = message(
        api, sbd, sender=sender, receiver=receiver, message_id=ident if by_message else None
    )
    status, answer = await post(api, path, msg)
    assert status == 200, answer[:300]
    if length <= 255:
        assert error_code(answer) is None and b"Receipt" in answer
        assert len(await received(api, b["id"])) == 1
    else:
        code = error_code(answer) or ""
        assert code.startswith(refusal) and "longer than 255 characters" in code, code
        assert field in code or by_message
        assert await received(api, b["id"]) == []
        refs = etree.fromstring(answer).findall(f".//{{{EB}}}RefToMessageId")
        assert [r.text for r in refs] == ([] if by_message else [msg.message_id])
        assert ident not in answer.decode()
        logged = [r.__dict__ for r in caplog.records if getattr(r, "event", "") == "as4.refused"]
        assert len(logged) == 1
        assert all(ident not in str(value) for record in logged for value in record.values())


@pytest.mark.parametrize("length", [255, 256, 3000])
async def test_an_instance_identifier_of_up_to_255_characters_is_sent(api, length):
    a = await api.org(ALICE)
    sender = f"0088:{gln(85)}"
    await receiving_participant(api, a, sender, ALICE)
    _, aps = await api.call("GET", f"/orgs/{a['id']}/aps/alltouse", as_=ALICE)
    status, body = await api.call(
        "POST",
        f"/orgs/{a['id']}/transactions?ap={aps['items'][0]['id']}",
        as_=ALICE,
        data=make_sbd(sender=sender, instance_id=long_id(length)),
        headers={"Content-Type": "application/xml"},
    )
    _, listed = await api.call("GET", f"/orgs/{a['id']}/transactions/to_network", as_=ALICE)
    if length <= 255:
        assert status == 202, body
        assert len(listed["items"]) == 1
    else:
        assert status == 400 and body["code"] == "AT-1001", body
        fields = [d["field"] for d in body["details"]]
        assert fields == [f"{IDENTIFICATION}/InstanceIdentifier"], body
        assert listed["items"] == []
