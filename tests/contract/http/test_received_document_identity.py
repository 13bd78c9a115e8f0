"""A received document is known by its SBDH InstanceIdentifier together with who sent it: the
access point that signed it and the SBDH sender. The identifier is unique only per sender,
who chooses it, so any trusted access point could otherwise make another party's document
vanish (while its sender gets a positive receipt) by sending first with the same value; and
refusing one sender's document must not hold back the status another's is owed."""

from __future__ import annotations

import uuid

from fourcorner.application.collections import TRANSACTIONS
from fourcorner.domain.transaction import Kind
from fourcorner.entrypoints.container import resolve
from sbd_factory import make_sbd

from .test_as4_endpoint import error_code, message, pki, post, received, setup
from .test_mls_matching import another_access_point
from .test_participants import BOB, gln

OTHER_AP = "POP000777"


def other_ap(api):
    """The certificate and key of another access point of the network (CN ``OTHER_AP``)."""
    return another_access_point(api, OTHER_AP)


async def mls_jobs(api):
    ctx = await resolve(api.container.context)
    async with ctx.uow() as uow:
        return await uow.repository(TRANSACTIONS).all(kind=Kind.MLS)


async def test_another_senders_instance_identifier_does_not_suppress_a_document(api):
    """Documents with one InstanceIdentifier from another access point (even one that claims
    the same SBDH sender) and from another sender of the same access point come first: the
    document sent after them is stored and receipted all the same, as each of them is."""
    b, receiver, path = await setup(api)
    instance = str(uuid.uuid4())
    victim, other_sender = f"0088:{gln(82)}", f"0088:{gln(81)}"

    def document(sender, **signed):
        sbd = make_sbd(sender=sender, receiver=receiver, instance_id=instance)
        return message(api, sbd, sender=sender, receiver=receiver, **signed)

    for msg in (
        document(victim, signer=other_ap(api)),  # another access point, the victim's sender
        document(other_sender),  # the victim's access point, another sender
        document(victim),
    ):
        status, answer = await post(api, path, msg)
        assert status == 200 and error_code(answer) is None and b"Receipt" in answer
    stored = await received(api, b["id"])
    assert sorted(t["senderId"] for t in stored) == sorted([victim, victim, other_sender])
    assert {t["docInstanceId"] for t in stored} == {instance}


async def test_the_same_sender_retrying_under_a_new_message_id_is_the_same_document(api):
    """The same access point and SBDH sender sending the same InstanceIdentifier again under
    another MessageId: it arrived before, so it is receipted and not stored twice."""
    b, receiver, path = await setup(api)
    sender, instance = f"0088:{gln(83)}", str(uuid.uuid4())
    sbd = make_sbd(sender=sender, receiver=receiver, instance_id=instance)
    receipts = []
    for _ in range(2):  # a new MessageId each time
        status, answer = await post(api, path, message(api, sbd, sender=sender, receiver=receiver))
        assert status == 200 and error_code(answer) is None and b"Receipt" in answer
        receipts.append(answer)
    assert receipts[0] != receipts[1]  # each message its own receipt
    (stored,) = await received(api, b["id"])
    assert stored["docInstanceId"] == instance


async def test_a_refused_hostile_document_does_not_block_a_later_rejection(api):
    """Another access point's document, refused, with the InstanceIdentifier and SBDH sender
    of a document refused later: each gets its MLS RE, addressed to its own access point; the
    same document refused again still gets one."""
    _, _, path = await setup(api)
    sender, unknown = f"0088:{gln(84)}", f"0088:{gln(85)}"
    sbd = make_sbd(sender=sender, receiver=unknown, instance_id=str(uuid.uuid4()))
    for signed in ({"signer": other_ap(api)}, {}, {}):
        msg = message(api, sbd, sender=sender, receiver=unknown, **signed)
        status, answer = await post(api, path, msg)
        assert status == 200 and "PEPPOL:NOT_SERVICED" in (error_code(answer) or "")
    jobs = await mls_jobs(api)
    assert sorted(j.receiver_sp for j in jobs) == sorted([OTHER_AP, pki(api).seat_id])
    assert {j.mls_response_code for j in jobs} == {"RE"}


async def test_a_confirmation_reaches_the_status_of_the_document_confirmed(api):
    """Two senders' documents with one InstanceIdentifier, each asking for a positive status:
    the receiving organisation confirms one, and only the status about that one becomes AP."""
    b, receiver, path = await setup(api)
    instance = str(uuid.uuid4())
    first, second = f"0088:{gln(86)}", f"0088:{gln(87)}"
    for sender, signed in ((first, {"signer": other_ap(api)}), (second, {})):
        sbd = make_sbd(
            sender=sender, receiver=receiver, instance_id=instance, mls_type="ALWAYS_SEND"
        )
        status, answer = await post(
            api, path, message(api, sbd, sender=sender, receiver=receiver, **signed)
        )
        assert status == 200 and error_code(answer) is None
    confirmed = next(t for t in await received(api, b["id"]) if t["senderId"] == second)
    status, answer = await api.call(
        "POST", f"/orgs/{b['id']}/transactions/{confirmed['id']}/confirm", as_=BOB
    )
    assert status == 200 and answer["mlsResponseCode"] == "AP", answer
    codes = {str(j.about): j.mls_response_code for j in await mls_jobs(api)}
    assert codes[confirmed["id"]] == "AP"
    assert sorted(codes.values()) == ["AB", "AP"]
