"""The sending worker against a scripted transport, on every storage backend: the message is
kept and the parties recorded before the first post, a retry hands the kept message back (so
the same bytes go out), the kept message goes once the send is finished, what others wrote to
the transaction meanwhile (a message level status) is not overwritten, and a send another
worker finished is not finished again."""

from __future__ import annotations

import asyncio
import json
import logging
import random
import uuid
from datetime import timedelta
from typing import Any

import attrs
import pytest

from fourcorner.application import sending
from fourcorner.application.collections import ARTEFACTS, EVENTS, TRANSACTIONS
from fourcorner.application.ports import Delivered, Endpoint, Prepared, Refused
from fourcorner.application.sending import Exchange, SendingWorker
from fourcorner.application.transactions import blob_key, message_key
from fourcorner.domain import send_failures as txe
from fourcorner.domain.envelope import Addressing, Identifier
from fourcorner.domain.network_services import Environment
from fourcorner.domain.retry import RetryPolicy
from fourcorner.domain.transaction import ArtefactType, Status, Transaction
from fourcorner.entrypoints.container import resolve
from sbd_factory import make_sbd

from .test_participants import ALICE, gln
from .test_transactions import receiving_participant

PEER = "POP000777"


class Lookup:
    async def endpoint(
        self,
        receiver: Identifier,
        document: Identifier,
        process: Identifier,
        profile: str,
        environment: Environment,
    ) -> Endpoint:
        return Endpoint("https://peer.invalid/as4", b"peer certificate", profile)


class ScriptedTransport:
    """Answers each post with the next of ``answers``; ``during`` runs while it posts."""

    def __init__(self, ctx: Any, answers: list[Delivered | Refused], during: Any = None) -> None:
        self.ctx, self.answers, self.during = ctx, answers, during
        self.kept: list[bytes | None] = []
        self.posted: list[bytes] = []
        self.at_post: list[Transaction] = []
        self.addressed: list[Addressing] = []

    async def prepare(
        self, *, message_id: str, addressing: Addressing, kept: bytes | None = None, **_: Any
    ) -> Prepared:
        self.kept.append(kept)
        self.addressed.append(addressing)
        if kept is not None:
            return Prepared(kept, "PFC000001", PEER, reused=True)
        return Prepared(f"{message_id} {uuid.uuid4()}".encode(), "PFC000001", PEER)

    async def send(self, prepared: Prepared, endpoint: Endpoint) -> Delivered | Refused:
        self.posted.append(prepared.data)
        tx_id = uuid.UUID(prepared.data.decode().split("@", 1)[0])
        async with self.ctx.uow() as uow:
            self.at_post.append(await uow.repository(TRANSACTIONS).get(tx_id))
        if self.during is not None:
            await self.during(tx_id)
        return self.answers.pop(0)


async def setup(api: Any) -> tuple[Any, Any, uuid.UUID]:
    a = await api.org(ALICE)
    sender = f"0088:{gln(65)}"
    await receiving_participant(api, a, sender, ALICE)
    _, aps = await api.call("GET", f"/orgs/{a['id']}/aps/alltouse", as_=ALICE)
    ctx = await resolve(api.container.context)
    docs = await resolve(api.container.documents)
    return ctx, docs, await upload(api, a["id"], aps["items"][0]["id"], sender)


async def upload(api: Any, org_id: str, ap_id: str, sender: str) -> uuid.UUID:
    body = await api.send(ALICE, org_id, ap_id, make_sbd(sender=sender))
    return uuid.UUID(body["transactionId"])


async def reject(ctx: Any, tx_id: uuid.UUID) -> None:
    """What a rejection (MLS RE) does to a sent transaction (``mls.take``)."""
    async with ctx.uow() as uow:
        tx = await uow.repository(TRANSACTIONS).lock(tx_id)
        await uow.repository(TRANSACTIONS).update(tx.mls_received("RE", "refused", ctx.clock()))
        await uow.commit()


def worker(api: Any, ctx: Any, docs: Any, transport: ScriptedTransport) -> SendingWorker:
    exchange = Exchange(
        lookup=Lookup(),
        transport=transport,
        reader=None,  # receiving is not exercised here
        seat_id="PFC000001",
        retry=RetryPolicy((timedelta(0),)),
    )
    return SendingWorker(ctx, api.container.sealer(), docs, exchange)


async def stored(ctx: Any, tx_id: uuid.UUID) -> Transaction:
    async with ctx.uow() as uow:
        tx = await uow.repository(TRANSACTIONS).get(tx_id)
    assert tx is not None
    return tx


async def kept(docs: Any, tx_id: uuid.UUID) -> bool:
    try:
        await docs.blobs.get(message_key(tx_id))
    except (FileNotFoundError, KeyError):
        return False
    return True


async def test_a_retry_sends_the_kept_message(api: Any) -> None:
    ctx, docs, tx_id = await setup(api)
    lost = Refused("connection: ServerDisconnectedError", "", retryable=True)
    transport = ScriptedTransport(ctx, [lost, Delivered(b"<receipt/>", f"{tx_id}@fourcorner")])
    sending = worker(api, ctx, docs, transport)
    assert await sending.run_once() == 1
    assert (await stored(ctx, tx_id)).attempts == 1 and await kept(docs, tx_id)
    # the parties were recorded before the message was posted
    assert (transport.at_post[0].sender_sp, transport.at_post[0].receiver_sp) == (
        "PFC000001",
        PEER,
    )
    assert await sending.run_once() == 1
    assert transport.kept == [None, transport.posted[0]]
    assert transport.posted[0] == transport.posted[1]
    done = await stored(ctx, tx_id)
    assert done.transaction_status is Status.COMPLETED and done.receiver_sp == PEER
    assert not await kept(docs, tx_id)


@pytest.mark.parametrize("busy", [False, True], ids=["refused", "busy"])
async def test_a_receivers_long_words_are_kept_and_logged_cut(
    api: Any, caplog: pytest.LogCaptureFixture, busy: bool
) -> None:
    """A receiving access point chooses how much its error says (up to the answer's limit of
    megabytes): the transaction keeps, its event carries and the log repeats at most
    ``DETAIL_LENGTH`` characters of it, cut once. A busy receiver's words are cut before
    they are put in what this service says about them (when the next attempt is), which is
    kept whole, its closing parenthesis included."""
    ctx, docs, tx_id = await setup(api)
    said = "EBMS:0004 " + "x" * 1_000_000
    refusal = Refused("EBMS:0004", said, retryable=False)
    if busy:
        refusal = Refused(
            "HTTP 503", said, retryable=True, busy=True, retry_after=timedelta(seconds=120)
        )
    transport = ScriptedTransport(ctx, [refusal])
    with caplog.at_level(logging.WARNING, logger="fourcorner"):
        assert await worker(api, ctx, docs, transport).run_once() == 1
    after = await stored(ctx, tx_id)
    assert after.service_error is not None
    message = after.service_error.message
    detail = sending.cause_of(refusal)
    words = detail[: txe.DETAIL_LENGTH] + "…"  # cut once: one ellipsis
    if busy:
        assert after.transaction_status is Status.PROCESSING
        # the worker here waits no delay between attempts: no span, so the refusal counts
        at = after.next_attempt_at
        lead = f"next attempt at {at:%Y-%m-%dT%H:%M:%SZ}, 1 of its 3 attempts used"
        assert message == f"{txe.AP_BUSY.title}: {lead} ({words})"
    else:
        assert after.transaction_status is Status.FAILED
        assert message == f"{txe.AP_REFUSED.title}: {words}"
        async with ctx.uow() as uow:
            (event,) = await uow.repository(EVENTS).all(eventType="transaction.send_failed")
        assert len(json.dumps(event.payload)) < 20_000
    assert message.count("…") == 1
    (logged,) = [r for r in caplog.records if getattr(r, "event", "") == "send.failed"]
    assert logged.cause == words


class Puts:
    """The blob store, recording which blobs went in a unit of work (``put_all_in``) and
    which on their own (``put``, ``put_all``)."""

    def __init__(self, blobs: Any) -> None:
        self.blobs, self.alone, self.in_uow = blobs, list[str](), list[list[str]]()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.blobs, name)

    async def put(self, key: str, data: bytes) -> int:
        self.alone.append(key)
        return int(await self.blobs.put(key, data))

    async def put_all(self, blobs: Any) -> list[int]:
        self.alone += [key for key, _ in blobs]
        return list(await self.blobs.put_all(blobs))

    async def put_all_in(self, uow: Any, blobs: Any) -> list[int]:
        self.in_uow.append([key for key, _ in blobs])
        return list(await self.blobs.put_all_in(uow, blobs))


async def receipt_artefact(ctx: Any, tx_id: Any) -> tuple[str, int]:
    """The blob and size the transaction's one receipt artefact names."""
    async with ctx.uow() as uow:
        (artefact,) = await uow.repository(ARTEFACTS).all(
            transactionId=tx_id, type=ArtefactType.TRANSACTION_RECEIPT
        )
    return artefact.blob, artefact.size


@attrs.frozen
class SentOnce:
    ctx: Any
    docs: Any
    tx_id: Any
    transport: ScriptedTransport
    puts: Puts
    receipt_key: str


async def send_once(api: Any, receipt: bytes) -> SentOnce:
    """A document sent by one round of a worker whose blob store counts its puts, the
    receiving access point answering with ``receipt``."""
    ctx, docs, tx_id = await setup(api)
    transport = ScriptedTransport(ctx, [Delivered(receipt, f"{tx_id}@fourcorner")])
    puts = Puts(docs.blobs)
    assert await worker(api, ctx, attrs.evolve(docs, blobs=puts), transport).run_once() == 1
    key = blob_key(tx_id, ArtefactType.TRANSACTION_RECEIPT)
    assert await docs.blobs.get(key) == receipt
    return SentOnce(ctx, docs, tx_id, transport, puts, key)


async def test_the_kept_message_and_the_receipt_go_with_the_transaction(api: Any) -> None:
    """A first attempt stores the message it keeps with the parties it records, and the
    receipt with the end of the send: in those units of work, no round trip of their own."""
    receipt = b"<receipt/>"
    sent = await send_once(api, receipt)
    assert sent.puts.alone == []
    assert sent.puts.in_uow == [[message_key(sent.tx_id)], [sent.receipt_key]]
    assert sent.transport.at_post[0].receiver_sp == PEER  # kept and addressed before the post
    assert (await stored(sent.ctx, sent.tx_id)).transaction_status is Status.COMPLETED
    assert await receipt_artefact(sent.ctx, sent.tx_id) == (sent.receipt_key, len(receipt))


async def test_a_large_kept_message_or_receipt_is_stored_before_its_record(
    api: Any, monkeypatch: Any
) -> None:
    """A kept message larger than ``KEPT_WITH_PARTIES`` is stored on its own, before the
    transaction that records the parties, which holds no lock while it is written; so is a
    receipt that large (its size is the receiving access point's choice), before the end of
    the send is recorded."""
    monkeypatch.setattr(sending, "KEPT_WITH_PARTIES", 10)
    receipt = b"<receipt />"
    sent = await send_once(api, receipt)
    assert sent.puts.alone == [message_key(sent.tx_id), sent.receipt_key]
    assert sent.puts.in_uow == []
    assert sent.transport.at_post[0].receiver_sp == PEER
    assert (await stored(sent.ctx, sent.tx_id)).transaction_status is Status.COMPLETED
    assert await receipt_artefact(sent.ctx, sent.tx_id) == (sent.receipt_key, len(receipt))


async def test_a_receipt_no_larger_than_the_bound_goes_with_the_end_of_the_send(
    api: Any, monkeypatch: Any
) -> None:
    """At ``KEPT_WITH_PARTIES`` bytes exactly, the receipt still goes in the unit of work
    that records the end of the send."""
    receipt = b"<receipt/>"
    monkeypatch.setattr(sending, "KEPT_WITH_PARTIES", len(receipt))
    sent = await send_once(api, receipt)
    assert sent.puts.alone == [message_key(sent.tx_id)]
    assert sent.puts.in_uow == [[sent.receipt_key]]


class Reads:
    """The envelopes port, counting the SBDs read."""

    def __init__(self, envelopes: Any) -> None:
        self.envelopes, self.read_count = envelopes, 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self.envelopes, name)

    def read(self, data: bytes) -> Any:
        self.read_count += 1
        return self.envelopes.read(data)


async def test_a_document_is_addressed_as_its_header_says_without_reading_it_again(
    api: Any,
) -> None:
    """The message's addressing (the AS4 headers that must agree with the SBD's header) is
    what was recorded from the header when the document was taken in, read whole then: the
    SBD is not parsed again to send it."""
    ctx, docs, tx_id = await setup(api)
    transport = ScriptedTransport(ctx, [Delivered(b"<receipt/>", f"{tx_id}@fourcorner")])
    reads = Reads(docs.envelopes)
    sending = worker(api, ctx, attrs.evolve(docs, envelopes=reads), transport)
    assert await sending.run_once() == 1
    assert reads.read_count == 0
    sbd = await docs.blobs.get(blob_key(tx_id, ArtefactType.BUSINESS_DOCUMENT))
    assert transport.addressed == [Addressing.of(docs.envelopes.read(sbd))]


async def test_a_claim_that_finds_fewer_than_it_asks_for_is_not_repeated_at_once(
    api: Any,
) -> None:
    """The running worker asks for as many as it has room for; given fewer, none was left
    due, so it waits for a wake-up or its poll instead of claiming again at once (which
    would find none: a round trip or two for nothing)."""
    ctx, docs, tx_id = await setup(api)
    transport = ScriptedTransport(ctx, [Delivered(b"<receipt/>", f"{tx_id}@fourcorner")])
    sending = worker(api, ctx, docs, transport)
    sending._x = attrs.evolve(sending._x, poll_interval=30)
    claimed: list[int] = []
    claim = sending.claim

    async def counted(limit: int) -> list[Any]:
        jobs = await claim(limit)
        claimed.append(len(jobs))
        return jobs

    sent = asyncio.Event()
    process = sending.process

    async def processed(job: Any) -> None:
        await process(job)
        sent.set()

    sending.claim = counted  # type: ignore[method-assign]
    sending.process = processed  # type: ignore[method-assign]
    stop = asyncio.Event()
    running = asyncio.create_task(sending.run(stop))
    async with asyncio.timeout(10):
        await sent.wait()
    stop.set()
    await running
    assert claimed == [1]
    assert (await stored(ctx, tx_id)).transaction_status is Status.COMPLETED
    assert not await kept(docs, tx_id)  # the last send in flight: its blobs went as it ended


async def test_a_message_kept_by_a_worker_that_stopped_is_sent_as_kept(api: Any) -> None:
    """A worker that claimed a transaction and kept its message, then stopped before any
    attempt was recorded, left it PROCESSING: once its lease has run out, the next worker
    sends the kept bytes (only a transaction claimed for the first time is sent without
    looking for them)."""
    ctx, docs, tx_id = await setup(api)
    transport = ScriptedTransport(ctx, [Delivered(b"<receipt/>", f"{tx_id}@fourcorner")])
    sending = worker(api, ctx, docs, transport)
    [job] = await sending.claim(1)
    assert job.first and job.tx.transaction_status is Status.PROCESSING
    message = f"{tx_id}@fourcorner kept before the worker stopped".encode()
    await docs.blobs.put(message_key(tx_id), message)
    async with ctx.uow() as uow:  # its lease runs out
        tx = await uow.repository(TRANSACTIONS).lock(tx_id)
        over = ctx.clock() - timedelta(seconds=1)
        await uow.repository(TRANSACTIONS).update(attrs.evolve(tx, lease_until=over))
        await uow.commit()
    assert await sending.run_once() == 1
    assert transport.kept == [message] and transport.posted == [message]
    assert (await stored(ctx, tx_id)).transaction_status is Status.COMPLETED
    assert not await kept(docs, tx_id)


async def test_a_status_that_arrives_while_sending_is_kept(api: Any) -> None:
    ctx, docs, tx_id = await setup(api)

    async def rejected_meanwhile(tx_id: uuid.UUID) -> None:
        await reject(ctx, tx_id)

    transport = ScriptedTransport(
        ctx, [Delivered(b"<receipt/>", f"{tx_id}@fourcorner")], during=rejected_meanwhile
    )
    assert await worker(api, ctx, docs, transport).run_once() == 1
    done = await stored(ctx, tx_id)
    assert done.transaction_status is Status.REJECTED and done.mls_response_code == "RE"
    assert done.receiver_sp == PEER
    async with ctx.uow() as uow:
        artefacts = await uow.repository(ARTEFACTS).all(transactionId=tx_id)
        events = await uow.repository(EVENTS).all(eventType="transaction.sent")
    assert ArtefactType.TRANSACTION_RECEIPT in {a.type for a in artefacts}
    assert len(events) == 1


async def test_a_rejection_racing_the_end_of_a_send_is_never_lost(api: Any) -> None:
    """20 rounds: a rejection is written at a random moment after the document was posted,
    while the worker records the receipt and finishes the send."""
    ctx, docs, first = await setup(api)
    async with ctx.uow() as uow:
        sent = await uow.repository(TRANSACTIONS).get(first)
    rng = random.Random(7)
    racing: list[asyncio.Task[None]] = []
    for round_ in range(20):
        tx_id = first
        if round_:
            tx_id = await upload(api, str(sent.org_id), str(sent.ap_id), sent.sender_id)

        async def later(tx_id: uuid.UUID) -> None:
            for _ in range(rng.randrange(16)):
                await asyncio.sleep(0)
            await reject(ctx, tx_id)

        async def posted(tx_id: uuid.UUID) -> None:
            racing.append(asyncio.create_task(later(tx_id)))

        receipt = Delivered(b"<receipt/>", f"{tx_id}@fourcorner")
        transport = ScriptedTransport(ctx, [receipt], during=posted)
        assert await worker(api, ctx, docs, transport).run_once() == 1
        await asyncio.gather(*racing)
        racing.clear()
        done = await stored(ctx, tx_id)
        assert (done.transaction_status, done.mls_response_code) == (Status.REJECTED, "RE"), round_
        async with ctx.uow() as uow:
            receipts = await uow.repository(ARTEFACTS).all(
                transactionId=tx_id, type=ArtefactType.TRANSACTION_RECEIPT
            )
        assert len(receipts) == 1, round_


async def test_a_worker_whose_send_another_finished_changes_nothing(
    api: Any, caplog: pytest.LogCaptureFixture
) -> None:
    """A worker slow past its lease: another claimed the transaction and finished it while
    the first was posting. The first one's end is refused (``IllegalTransition``): the stored
    transaction, its artefacts and its events stay as the other left them."""
    ctx, docs, tx_id = await setup(api)

    async def finished_by_another(tx_id: uuid.UUID) -> None:
        async with ctx.uow() as uow:
            tx = await uow.repository(TRANSACTIONS).lock(tx_id)
            await uow.repository(TRANSACTIONS).update(tx.completed(ctx.clock()))
            await uow.commit()

    late = Refused("connection: ServerDisconnectedError", "", retryable=True)
    transport = ScriptedTransport(ctx, [late], during=finished_by_another)
    with caplog.at_level(logging.WARNING, logger="fourcorner.exchange"):
        assert await worker(api, ctx, docs, transport).run_once() == 1
    done = await stored(ctx, tx_id)
    assert (done.transaction_status, done.attempts, done.service_error) == (
        Status.COMPLETED,
        0,
        None,
    )
    async with ctx.uow() as uow:
        failed = await uow.repository(EVENTS).all(eventType="transaction.send_failed")
    assert failed == []
    (abandoned,) = [r for r in caplog.records if r.name == "fourcorner.exchange"]
    assert (
        abandoned.levelno == logging.WARNING
        and "cannot be given a failed attempt" in abandoned.message
    )
