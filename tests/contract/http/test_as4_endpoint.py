"""The AS4 endpoint of an access point: refusals answer signed ebMS errors and store nothing;
a replay gets the original receipt and no second transaction."""

from __future__ import annotations

import asyncio
import logging
import os
import shutil
import threading
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from urllib.parse import urlsplit

import aiohttp
import pytest
from lxml import etree

from fourcorner.adapters.as4.service import IN_MEMORY, As4MessageReader
from fourcorner.adapters.pki import issue_leaf, new_ca
from fourcorner.adapters.pki.testpki import load_test_pki
from fourcorner.application import receiving
from fourcorner.application.collections import TRANSACTIONS
from fourcorner.application.repositories import Transactions
from fourcorner.domain.transaction import Kind
from fourcorner.entrypoints.container import build_container, resolve, web_app
from sbd_factory import BASE_EXAMPLE, make_as4_message, make_sbd

from .conftest import Api, settings_for
from .test_participants import ALICE, BOB, gln, participant, whitelabel
from .test_transactions import BILLING, INVOICE, receiving_participant

EB = "http://docs.oasis-open.org/ebxml-msg/ebms/v3.0/ns/core/200704/"


def pki(api):
    return load_test_pki(api.container.settings().data_dir / "pki")


def message(api, sbd: bytes, *, sender: str, receiver: str, signer=None, message_id=None, **over):
    """``sbd`` as an access point sends it to ``api``'s (``make_as4_message``)."""
    return make_as4_message(
        pki(api),
        sbd,
        sender=sender,
        receiver=receiver,
        signer=signer,
        message_id=message_id,
        **over,
    )


async def post(api, path, msg, body=None):
    resp = await api.client.post(path, data=body or msg.body, headers=msg.http_headers)
    return resp.status, await resp.read()


def error_code(answer: bytes) -> str | None:
    root = etree.fromstring(answer)
    found = root.find(f".//{{{EB}}}Error")
    return (
        None
        if found is None
        else f"{found.get('errorCode')} {found.findtext(f'{{{EB}}}ErrorDetail')}"
    )


async def setup(api):
    b = await api.org(BOB, legal_id="5560360793")
    receiver = f"0088:{gln(90)}"
    await receiving_participant(api, b, receiver, BOB)
    _, aps = await api.call("GET", f"/orgs/{b['id']}/aps/alltouse", as_=BOB)
    ap = aps["items"][0]
    from urllib.parse import urlsplit

    return b, receiver, urlsplit(ap["apUrl"]).path


async def received(api, org_id):
    _, page = await api.call("GET", f"/orgs/{org_id}/transactions/from_network", as_=BOB)
    return page["items"]


async def test_a_replay_gets_the_original_receipt_and_no_second_transaction(api):
    b, receiver, path = await setup(api)
    sender = f"0088:{gln(91)}"
    msg = message(api, make_sbd(sender=sender, receiver=receiver), sender=sender, receiver=receiver)
    status, first = await post(api, path, msg)
    assert status == 200 and error_code(first) is None and b"Receipt" in first
    status, again = await post(api, path, msg)
    assert status == 200 and again == first
    assert len(await received(api, b["id"])) == 1


async def test_a_message_taken_at_once_reads_no_earlier_one_of_its_message_id(api, monkeypatch):
    """A replay of a stored message is the same document, whose record clashes with the
    stored one: only then is the message looked up by its MessageId (a read the usual
    message, taken at once, does without)."""
    asked: list[str] = []
    received_as = Transactions.received_as

    async def counted(self, message_id, *args):
        asked.append(message_id)
        return await received_as(self, message_id, *args)

    monkeypatch.setattr(Transactions, "received_as", counted)
    b, receiver, path = await setup(api)
    sender = f"0088:{gln(91)}"
    msg = message(api, make_sbd(sender=sender, receiver=receiver), sender=sender, receiver=receiver)
    status, first = await post(api, path, msg)
    assert status == 200 and error_code(first) is None and asked == []
    status, again = await post(api, path, msg)
    assert status == 200 and again == first and len(asked) == 1
    assert len(await received(api, b["id"])) == 1


async def test_a_message_id_of_another_organisations_document_is_no_replay(api):
    """The MessageId is the sender's to choose: a message to one organisation's participant
    that carries the MessageId of a document another organisation received on the same access
    point is a new message. It is taken in for its own receiver, and answered with its own
    receipt, never with the other organisation's."""
    b, receiver, path = await setup(api)
    a = await api.org(ALICE)
    other_receiver = f"0088:{gln(92)}"
    await receiving_participant(api, a, other_receiver, ALICE)
    sender = f"0088:{gln(91)}"
    message_id = f"{uuid.uuid4()}@test"

    def to(ident):
        sbd = make_sbd(sender=sender, receiver=ident)
        return message(api, sbd, sender=sender, receiver=ident, message_id=message_id)

    status, bobs_receipt = await post(api, path, to(receiver))
    assert status == 200 and error_code(bobs_receipt) is None
    status, answer = await post(api, path, to(other_receiver))
    assert status == 200 and error_code(answer) is None and b"Receipt" in answer
    assert answer != bobs_receipt
    _, page = await api.call("GET", f"/orgs/{a['id']}/transactions/from_network", as_=ALICE)
    assert [t["receiverId"] for t in page["items"]] == [other_receiver]
    assert len(await received(api, b["id"])) == 1


async def test_one_message_id_to_two_organisations_at_once_reaches_both(api):
    """Sent at the same moment, round after round, two messages with one MessageId to
    receivers of two organisations each get their own receipt and transaction, and each sent
    again is answered with its own receipt."""
    b, receiver, path = await setup(api)
    a = await api.org(ALICE)
    other_receiver = f"0088:{gln(93)}"
    await receiving_participant(api, a, other_receiver, ALICE)
    sender = f"0088:{gln(91)}"
    rounds = 8
    for _ in range(rounds):
        message_id = f"{uuid.uuid4()}@test"
        msgs = [
            message(
                api,
                make_sbd(sender=sender, receiver=r),
                sender=sender,
                receiver=r,
                message_id=message_id,
            )
            for r in (receiver, other_receiver)
        ]
        answers = await asyncio.gather(*(post(api, path, m) for m in msgs))
        assert all(status == 200 and error_code(body) is None for status, body in answers)
        assert answers[0][1] != answers[1][1]
        # each sent again is a replay of its own: answered with its own receipt
        again = await asyncio.gather(*(post(api, path, m) for m in msgs))
        assert [body for _, body in again] == [body for _, body in answers]
    _, page = await api.call("GET", f"/orgs/{a['id']}/transactions/from_network", as_=ALICE)
    assert [t["receiverId"] for t in page["items"]] == [other_receiver] * rounds
    assert [t["receiverId"] for t in await received(api, b["id"])] == [receiver] * rounds


async def test_refusals_are_signed_errors_and_store_nothing(api):
    b, receiver, path = await setup(api)
    sender = f"0088:{gln(92)}"
    sbd = make_sbd(sender=sender, receiver=receiver)
    now = datetime.now(UTC)
    rogue_ca, rogue_key = new_ca("rogue CA")
    rogue = issue_leaf(
        rogue_ca,
        rogue_key,
        "POP000999",
        not_before=now - timedelta(hours=1),
        not_after=now + timedelta(days=1),
    )
    unknown = f"0088:{gln(93)}"
    cases = {
        "untrusted signer": (
            message(api, sbd, sender=sender, receiver=receiver, signer=rogue),
            None,
            "EBMS:0101",
        ),
        "unknown receiver": (
            message(
                api, make_sbd(sender=sender, receiver=unknown), sender=sender, receiver=unknown
            ),
            None,
            "PEPPOL:NOT_SERVICED",
        ),
        "mismatched envelope": (
            message(api, sbd, sender=sender, receiver=unknown),
            None,
            "EBMS:0003",
        ),
    }
    good = message(api, sbd, sender=sender, receiver=receiver)
    flipped = bytearray(good.body)
    flipped[-200] ^= 0x01  # inside the encrypted attachment
    cases["flipped ciphertext byte"] = (good, bytes(flipped), "EBMS:")
    signed = bytearray(good.body)
    at = bytes(signed).index(b"originalSender")
    signed[at + 60] ^= 0x01  # inside the signed Messaging header
    cases["flipped signed header byte"] = (good, bytes(signed), "EBMS:")
    for label, (msg, body, expected) in cases.items():
        status, answer = await post(api, path, msg, body)
        assert status == 200, label
        code = error_code(answer)
        assert code is not None and expected in code, (label, code)
    assert await received(api, b["id"]) == []


async def test_schemes_the_ebms_header_and_the_sbdh_disagree_on_are_refused(api):
    """Service@type is the PROCESSID scheme, and the originalSender and finalRecipient types
    the Sender and Receiver schemes (NETWORK.md "Consistency between SBDH, payload and AS4
    header"): the values agreeing is not enough."""
    b, receiver, path = await setup(api)
    sender = f"0088:{gln(94)}"
    sbd = make_sbd(sender=sender, receiver=receiver)
    cases = {
        "Service": {"service_type": "other-procid-scheme"},
        "originalSender": {"original_sender": ("other-actorid-scheme", sender)},
        "finalRecipient": {"final_recipient": ("other-actorid-scheme", receiver)},
    }
    for label, over in cases.items():
        msg = message(api, sbd, sender=sender, receiver=receiver, **over)
        status, answer = await post(api, path, msg)
        code = error_code(answer)
        assert status == 200 and code, label
        assert code.startswith(f"EBMS:0003 {label} differs from the "), code
    assert await received(api, b["id"]) == []
    # the participant scheme compares case-insensitively, as its values do
    upper = ("ISO6523-ACTORID-UPIS", sender)
    msg = message(api, sbd, sender=sender, receiver=receiver, original_sender=upper)
    status, answer = await post(api, path, msg)
    assert status == 200 and error_code(answer) is None and b"Receipt" in answer
    assert len(await received(api, b["id"])) == 1


async def test_unknown_access_points_and_garbage(api):
    b, _, path = await setup(api)
    status, _ = await api.call("POST", f"/as4/{b['id']}/{uuid.uuid4()}", data=b"x")
    assert status == 404
    # ids that are not UUIDs: the answer names the id, not the path
    status, err = await api.call("POST", "/as4/not-uuid/x", data=b"x")
    assert status == 404 and err["error"] == "No access point with id 'x'.", err
    status, err = await api.call("POST", f"/as4/{b['id']}/not-uuid", data=b"x")
    assert status == 404 and err["error"] == "No access point with id 'not-uuid'.", err
    resp = await api.client.post(
        path, data=b"not a multipart", headers={"Content-Type": "text/plain"}
    )
    assert resp.status == 200 and error_code(await resp.read()) is not None
    assert await received(api, b["id"]) == []


async def test_an_independent_as4_implementation_sends_to_our_endpoint(api):
    """The PyPI ``as4`` package sends to this service's own AS4 endpoint; it accepts our
    signed receipt, and the document is stored for the receiving organisation."""
    as4 = pytest.importorskip("as4") if os.environ.get("CI") != "true" else __import__("as4")
    import as4.peppol as as4_peppol

    b, receiver, path = await setup(api)
    sender = f"0088:{gln(94)}"
    t = pki(api)
    now = datetime.now(UTC)
    their_cert, their_key = issue_leaf(
        t.ap_ca,
        t.ap_ca_key,
        "POP000123",
        not_before=now - timedelta(hours=1),
        not_after=now + timedelta(days=1),
        key=t.smp_key,
    )
    local = as4_peppol.create_peppol_internal_party(
        "POP000123", their_cert, as4.AS4LocalPrivateKey(their_key)
    )
    remote = as4_peppol.create_peppol_external_party(t.seat_id, t.ap_certificate)
    exchange = as4_peppol.PeppolSendingExchange(
        profile=as4_peppol.PeppolAS4Profile, local_party=local, remote_party=remote
    )
    invoice = BASE_EXAMPLE.read_bytes()
    args = as4_peppol.PeppolAS4MessageBuilderArgs(
        sender=sender,
        recipient=receiver,
        document_type_identifier=as4_peppol.BusdoxDocidQnsDocumentIdentifier.from_identifier_value(
            INVOICE
        ),
        document_identification_instance_identifier=str(uuid.uuid4()),
        process_identifier=BILLING,
        c1_country_id="SE",
    )
    headers, body = exchange.build(invoice, args)
    exchange.mark_sent()
    resp = await api.client.post(path, data=body, headers=dict(headers))
    signal = await resp.read()
    assert resp.status == 200 and error_code(signal) is None, signal[:500]
    exchange.receive_signal(signal)  # raises unless as4 accepts our receipt
    assert exchange.state == as4.ExchangeState.ACKNOWLEDGED
    stored = await received(api, b["id"])
    assert [t["senderId"] for t in stored] == [sender]


async def test_a_refused_document_gets_an_mls_rejection_queued_once(api):
    _, _, path = await setup(api)
    sender = f"0088:{gln(95)}"
    unknown = f"0088:{gln(96)}"
    msg = message(api, make_sbd(sender=sender, receiver=unknown), sender=sender, receiver=unknown)
    for _ in range(2):  # refused twice: still one MLS about the document
        status, answer = await post(api, path, msg)
        assert status == 200 and "PEPPOL:NOT_SERVICED" in (error_code(answer) or "")
    ctx = await resolve(api.container.context)
    async with ctx.uow() as uow:
        jobs = await uow.repository(TRANSACTIONS).all(kind=Kind.MLS)
    assert len(jobs) == 1
    (job,) = jobs
    assert job.mls_response_code == "RE" and job.mls_reason == "FD"
    assert job.receiver_id == f"0242:{pki(api).seat_id[3:]}"  # the sender's SPID
    assert job.transaction_status.value == "UNPROCESSED"


async def test_a_participant_of_the_other_environment_is_refused_and_nothing_stored(api, caplog):
    """A PROD participant's document at the TEST access point (and the reverse) is refused
    with the signed EBMS:0004 PEPPOL:NOT_SERVICED; nothing is stored, not even an MLS."""
    org = await whitelabel(api, BOB, legal_id="5560360793")
    test_id, prod_id, sender = f"0088:{gln(97)}", f"0088:{gln(98)}", f"0088:{gln(99)}"
    status, _ = await participant(api, org["id"], test_id, env="TEST", who=BOB)
    assert status == 201
    status, _ = await participant(api, org["id"], prod_id, env="PROD", who=BOB)
    assert status == 201
    _, aps = await api.call("GET", f"/orgs/{org['id']}/aps/alltouse", as_=BOB)
    path = {a["environment"]: urlsplit(a["apUrl"]).path for a in aps["items"]}
    caplog.set_level(logging.WARNING, logger="fourcorner")
    for receiver, at in ((prod_id, "TEST"), (test_id, "PROD")):
        sbd = make_sbd(sender=sender, receiver=receiver)
        msg = message(api, sbd, sender=sender, receiver=receiver)
        status, answer = await post(api, path[at], msg)
        assert status == 200 and error_code(answer) == "EBMS:0004 PEPPOL:NOT_SERVICED", answer
        other = "PROD" if at == "TEST" else "TEST"
        reasons = [getattr(r, "reason", "") for r in caplog.records]
        why = f"{receiver} is a {other} participant, this is a {at} access point"
        assert any(why in reason for reason in reasons), reasons
    ctx = await resolve(api.container.context)
    async with ctx.uow() as uow:
        assert await uow.repository(TRANSACTIONS).all() == []


# --- reading the body: only for a known access point, streamed, bounded -----------------------


class Body:
    """A streamed request body of ``chunks`` MiB that counts how much was taken from it."""

    def __init__(self, chunks: int) -> None:
        self.chunks, self.given = chunks, 0

    async def __aiter__(self):  # type: ignore[no-untyped-def]
        while self.given < self.chunks:
            self.given += 1
            yield b"\0" * (1024 * 1024)


async def post_unread(api, path: str, body: Body) -> int | None:
    """POST ``body``; the status, or None when the server closed before answering."""
    try:
        resp = await api.client.post(
            path, data=body.__aiter__(), headers={"Content-Type": "multipart/related"}
        )
        return resp.status
    except aiohttp.ClientError:
        return None


def spooled(docs) -> list[Path]:  # type: ignore[no-untyped-def]
    probe = docs.blobs.incoming()  # the store makes the (empty) file it names
    probe.unlink()
    return sorted(probe.parent.iterdir())


def no_errors_logged(caplog: pytest.LogCaptureFixture) -> None:
    """Nothing the server logged is an error (no "unhandled error", no aiohttp traceback)."""
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR] == []


async def test_a_message_to_no_access_point_is_refused_unread(api, caplog):
    b, _, path = await setup(api)
    other = await api.org(BOB, legal_id="2120000787")
    ap_id = path.rsplit("/", 1)[1]
    for target in (
        f"/as4/{b['id']}/{uuid.uuid4()}",  # no such access point
        f"/as4/{other['id']}/{ap_id}",  # an access point of another organisation
        "/as4/not-a-uuid/either",
    ):
        body = Body(64)
        assert await post_unread(api, target, body) in (404, None), target
        assert body.given < body.chunks, f"{target}: the body was read"
    assert spooled(await resolve(api.container.documents)) == []
    assert await received(api, b["id"]) == []
    no_errors_logged(caplog)


async def test_an_oversized_message_is_refused_while_streaming(start_api, caplog):
    api = await start_api("sqlite", max_document_bytes=100_000)  # a limit of 1.2 MB
    b, _, path = await setup(api)
    body = Body(64)
    assert await post_unread(api, path, body) in (413, None)
    assert body.given < body.chunks
    assert spooled(await resolve(api.container.documents)) == []
    assert await received(api, b["id"]) == []
    no_errors_logged(caplog)


async def test_spooled_messages_leave_no_files_behind(api, caplog):
    b, receiver, path = await setup(api)
    sender = f"0088:{gln(97)}"
    good = message(
        api, make_sbd(sender=sender, receiver=receiver), sender=sender, receiver=receiver
    )
    status, answer = await post(api, path, good)
    assert status == 200 and error_code(answer) is None
    unknown = f"0088:{gln(98)}"
    refused = message(
        api, make_sbd(sender=sender, receiver=unknown), sender=sender, receiver=unknown
    )
    status, answer = await post(api, path, refused)
    assert status == 200 and "PEPPOL:NOT_SERVICED" in (error_code(answer) or "")
    assert spooled(await resolve(api.container.documents)) == []
    assert len(await received(api, b["id"])) == 1
    no_errors_logged(caplog)


class WatchedGate(asyncio.Semaphore):
    """The inbound gate, telling when someone waits at it and how many were inside at once."""

    def __init__(self, value: int) -> None:
        super().__init__(value)
        self.waiting = asyncio.Event()
        self.inside = self.most = 0

    async def acquire(self) -> bool:
        if self.locked():
            self.waiting.set()
        await super().acquire()
        self.inside += 1
        self.most = max(self.most, self.inside)
        return True

    def release(self) -> None:
        self.inside -= 1
        super().release()


async def test_messages_are_taken_in_then_processed_one_gate_turn_at_a_time(
    tmp_path, aiohttp_client, shared_pki, caplog
):
    """The gate bounds the messages processed at once, not those arriving: a message waits
    at it with its body taken in (a sender slow to send holds no turn,
    test_as4_slow_senders)."""
    shutil.copytree(shared_pki, tmp_path / "pki")
    gate = WatchedGate(1)
    container = build_container(settings_for("sqlite", tmp_path), as4_gate=gate)
    api = Api(await aiohttp_client(await web_app(container)), container)
    b, receiver, path = await setup(api)
    docs = await resolve(container.documents)
    sender = f"0088:{gln(99)}"
    msgs = [
        message(api, make_sbd(sender=sender, receiver=receiver), sender=sender, receiver=receiver)
        for _ in range(4)
    ]
    await gate.acquire()  # the one turn is taken
    first = asyncio.create_task(post(api, path, msgs[0]))
    await gate.waiting.wait()  # the message is at the gate, its body taken in (in memory)
    assert spooled(docs) == []
    gate.release()
    answers = [await first, *await asyncio.gather(*(post(api, path, m) for m in msgs[1:]))]
    assert all(s == 200 and error_code(a) is None for s, a in answers)
    assert gate.most == 1
    assert len(await received(api, b["id"])) == 4
    no_errors_logged(caplog)


async def test_a_small_message_is_read_where_it_arrives_and_a_large_sbd_in_a_thread(
    api, monkeypatch
):
    """A message held in memory is read on the event loop (a thread hop costs more than its
    reading); one whose SBD turns out too large to be held in memory is read again in a
    thread, where its SBD goes to a file, and is taken whole."""
    b, receiver, path = await setup(api)
    sender = f"0088:{gln(89)}"
    here, threads = threading.get_ident(), []
    read = As4MessageReader.read

    def watched(self, *args):  # type: ignore[no-untyped-def]
        threads.append(threading.get_ident())
        return read(self, *args)

    monkeypatch.setattr(As4MessageReader, "read", watched)
    small = message(
        api, make_sbd(sender=sender, receiver=receiver), sender=sender, receiver=receiver
    )
    status, answer = await post(api, path, small)
    assert status == 200 and error_code(answer) is None
    assert threads == [here]
    large = make_sbd(sender=sender, receiver=receiver, pad_to=IN_MEMORY + 64 * 1024)
    msg = message(api, large, sender=sender, receiver=receiver)
    assert len(msg.body) <= receiving.INLINE  # gzip: a small message with a large SBD
    threads.clear()
    status, answer = await post(api, path, msg)
    assert status == 200 and error_code(answer) is None
    assert threads[0] == here and threads[1:] and all(t != here for t in threads[1:])
    assert spooled(await resolve(api.container.documents)) == []
    items = await received(api, b["id"])
    assert len(items) == 2
    stored = []
    for t in items:
        _, artefacts = await api.call(
            "GET", f"/orgs/{b['id']}/transactions/{t['id']}/artefacts", as_=BOB
        )
        doc = next(x for x in artefacts["items"] if x["type"] == "BUSINESS_DOCUMENT")
        _, body = await api.call(
            "GET", f"/orgs/{b['id']}/transactions/{t['id']}/artefacts/{doc['id']}", as_=BOB
        )
        stored.append(body)
    assert large in stored
