"""A received AS4 message is taken once, whatever organisation its receiver belongs to when it
arrives: a sending access point that tries a message again (its receipt lost) after the
receiver moved to another organisation of this service is answered with the receipt the
message had, and the document is not stored a second time. The message is known by the
sending access point (its certificate's CN) with its MessageId, the receiver and the access
point it came in at, held unique in storage: another access point's message with the same
MessageId is another message, so no sender can make another's vanish by choosing its
MessageId."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any
from urllib.parse import urlsplit

import pytest

from sbd_factory import make_sbd

from .test_as4_endpoint import error_code, message, post
from .test_participants import ALICE, BOB, gln
from .test_received_document_identity import other_ap
from .test_transactions import receiving_participant


class Service:
    """Two organisations of the service, Bob's and Alice's, receiving through the operator's
    shared TEST access point (its AS4 path ``path``); a participant moves between them."""

    def __init__(self, api: Any) -> None:
        self.api = api
        self.orgs: dict[str, dict[str, Any]] = {}
        self.where: dict[str, tuple[str, str]] = {}  # receiver -> (who, participant id)
        self.path = ""

    async def start(self) -> Service:
        self.orgs[BOB] = await self.api.org(BOB, legal_id="5560360793")
        self.orgs[ALICE] = await self.api.org(ALICE)
        org = self.orgs[BOB]["id"]
        _, aps = await self.api.call("GET", f"/orgs/{org}/aps/alltouse", as_=BOB)
        self.path = urlsplit(aps["items"][0]["apUrl"]).path
        return self

    async def receives(self, who: str, receiver: str) -> None:
        """``receiver`` becomes a participant of ``who``'s organisation, taking invoices."""
        p = await receiving_participant(self.api, self.orgs[who], receiver, who)
        self.where[receiver] = (who, p["id"])

    async def moves(self, receiver: str, to: str) -> None:
        """``receiver`` leaves its organisation and joins ``to``'s."""
        who, pid = self.where.pop(receiver)
        path = f"/orgs/{self.orgs[who]['id']}/participants/batch-delete"
        status, body = await self.api.call("POST", path, as_=who, json={"ids": [pid]})
        assert status == 200 and body["ids"] == [pid], body
        await self.receives(to, receiver)

    async def received(self, who: str) -> list[dict[str, Any]]:
        org = self.orgs[who]["id"]
        path = f"/orgs/{org}/transactions/from_network?limit=500"
        status, page = await self.api.call("GET", path, as_=who)
        assert status == 200, page
        items: list[dict[str, Any]] = page["items"]
        return items

    async def post(self, msg: Any) -> bytes:
        """``msg`` posted: its signed receipt (anything else fails the test)."""
        status, answer = await post(self.api, self.path, msg)
        assert status == 200 and error_code(answer) is None and b"Receipt" in answer, answer
        return answer


def invoice(api: Any, sender: str, receiver: str, **signed: Any) -> Any:
    """A new invoice from ``sender`` to ``receiver`` in an AS4 message (its own MessageId
    unless ``signed`` names one, signed by the test access point unless by ``signer``)."""
    sbd = make_sbd(sender=sender, receiver=receiver, instance_id=str(uuid.uuid4()))
    return message(api, sbd, sender=sender, receiver=receiver, **signed)


async def test_a_message_sent_again_after_its_receiver_moved_gets_its_first_receipt(api):
    """Taken in for Bob's organisation, the message comes again (the same bytes: its receipt
    was lost) once its receiver has moved to Alice's: it is answered with the receipt it had,
    and neither organisation stores it again. A new message to the receiver is Alice's."""
    service = await Service(api).start()
    sender, receiver = f"0088:{gln(601)}", f"0088:{gln(602)}"
    await service.receives(BOB, receiver)
    msg = invoice(api, sender, receiver)
    first = await service.post(msg)
    await service.moves(receiver, ALICE)
    assert await service.post(msg) == first
    assert [t["receiverId"] for t in await service.received(BOB)] == [receiver]
    assert await service.received(ALICE) == []
    # the move took effect: a new message to the receiver is taken in for Alice's organisation
    new = await service.post(invoice(api, sender, receiver))
    assert new != first
    assert [t["receiverId"] for t in await service.received(ALICE)] == [receiver]
    assert len(await service.received(BOB)) == 1


async def test_two_sending_access_points_with_one_message_id_are_two_messages(api):
    """Another access point sends first with the MessageId of a message still to come: both
    are stored, each with its own receipt (the MessageId alone names no message), and after
    the receiver moved each one's retry gets its own first receipt, stored nothing again."""
    service = await Service(api).start()
    receiver = f"0088:{gln(611)}"
    await service.receives(BOB, receiver)
    message_id = f"{uuid.uuid4()}@test"
    hostile = invoice(
        api, f"0088:{gln(612)}", receiver, signer=other_ap(api), message_id=message_id
    )
    victim = invoice(api, f"0088:{gln(613)}", receiver, message_id=message_id)
    receipts = [await service.post(hostile), await service.post(victim)]
    assert receipts[0] != receipts[1]
    stored = await service.received(BOB)
    assert sorted(t["senderId"] for t in stored) == sorted([f"0088:{gln(612)}", f"0088:{gln(613)}"])
    await service.moves(receiver, ALICE)
    assert [await service.post(hostile), await service.post(victim)] == receipts
    assert len(await service.received(BOB)) == 2
    assert await service.received(ALICE) == []


async def test_another_document_under_a_message_id_used_before_is_not_stored(api, caplog):
    """ebMS MessageIds are unique: a sender that reuses one for another document is answered
    with the first message's receipt, the new document is not stored, and the operator is
    told (``as4.message_id_reused``, with the sender and the MessageId)."""
    service = await Service(api).start()
    sender, receiver = f"0088:{gln(631)}", f"0088:{gln(632)}"
    await service.receives(BOB, receiver)
    message_id = f"{uuid.uuid4()}@test"
    first = await service.post(invoice(api, sender, receiver, message_id=message_id))
    caplog.clear()
    with caplog.at_level("WARNING", logger="fourcorner.events"):
        again = await service.post(invoice(api, sender, receiver, message_id=message_id))
    assert again == first
    assert len(await service.received(BOB)) == 1
    told = [r for r in caplog.records if getattr(r, "event", "") == "as4.message_id_reused"]
    assert len(told) == 1 and told[0].message_id == message_id, caplog.records
    # the same message again (its receipt lost) is a replay, and tells nothing
    caplog.clear()
    msg = invoice(api, sender, receiver)
    replayed = await service.post(msg)
    assert await service.post(msg) == replayed
    assert not [r for r in caplog.records if getattr(r, "event", "") == "as4.message_id_reused"]


@pytest.mark.postgres
async def test_one_message_twice_at_once_is_stored_once_on_postgres(start_api):
    """Round after round on PostgreSQL, a message arrives twice at the same moment: it is
    stored once and both copies get its receipt. Its receiver then moves to another
    organisation and the message arrives twice at once again (a sender that retried twice):
    both are answered with that receipt, and nothing more is stored."""
    api = await start_api("postgres")
    service = await Service(api).start()
    sender = f"0088:{gln(620)}"
    rounds = 8
    for n in range(rounds):
        receiver = f"0088:{gln(621 + n)}"
        await service.receives(BOB, receiver)
        msg = invoice(api, sender, receiver)
        answers = await asyncio.gather(service.post(msg), service.post(msg))
        assert answers[0] == answers[1], n
        await service.moves(receiver, ALICE)
        again = await asyncio.gather(service.post(msg), service.post(msg))
        assert list(again) == list(answers), n
        assert len(await service.received(BOB)) == n + 1
        assert await service.received(ALICE) == []
