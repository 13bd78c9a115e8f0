"""The four-corner loop on the in-memory adapters, without HTTP.

Two services in one process, each built by the real container on ``memory://`` with the
in-memory network ports in place of the network's (``build_container`` overrides): service A
sends a document from its participant to B's, B's receiving use case takes it in through the
loopback and answers with a receipt, B's positive message level status goes back the same
way and is matched to what A sent, and each side's webhook deliveries are kept by the fake
sender. The tests assert on what the fakes were given (the messages sent and read, the
lookups asked, the webhook attempts) and on what each service stored.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import attrs
import pytest
from cryptography import x509
from cryptography.hazmat.primitives.serialization import Encoding

from fourcorner.adapters.memory import (
    InMemoryApTransport,
    InMemoryMessageReader,
    InMemoryParticipantLookup,
    InMemoryWebhookSender,
    LoopbackNetwork,
)
from fourcorner.adapters.memory.webhooks import TIMED_OUT
from fourcorner.adapters.pki import ensure_test_pki
from fourcorner.adapters.sbdh import read_mls
from fourcorner.application import (
    intake,
    operator_setup,
    organisations,
    participants,
    receiving,
    services_to_use,
    users,
    webhooks,
)
from fourcorner.application.access import Principal
from fourcorner.application.collections import ARTEFACTS, DELIVERIES, PARTICIPANTS, TRANSACTIONS
from fourcorner.application.identity import Identity
from fourcorner.application.ports import (
    Credentials,
    Delivered,
    Endpoint,
    Refused,
)
from fourcorner.application.publishing import wire_profile
from fourcorner.application.transactions import blob_key, message_key
from fourcorner.domain import send_failures as txe
from fourcorner.domain.envelope import (
    MLS_DOCUMENT_TYPE,
    MLS_PROCESS,
    Addressing,
    Identifier,
    MlsType,
    seat_spid,
    spid_participant,
)
from fourcorner.domain.errors import ServiceUnavailable
from fourcorner.domain.network_services import AccessPoint, Environment
from fourcorner.domain.organisation import Organisation
from fourcorner.domain.participant import SupportedDocumentType
from fourcorner.domain.transaction import (
    NO_LEASE,
    ArtefactType,
    Direction,
    Kind,
    Status,
    Transaction,
)
from fourcorner.domain.webhook import DeliveryStatus, hex_signature, standard_signature
from fourcorner.entrypoints.config import Settings
from fourcorner.entrypoints.container import Container, build_container, resolve
from sbd_factory import (
    BILLING_PROCESS,
    INVOICE,
    PARTICIPANT_SCHEME,
    PROCESS_SCHEME,
    RECEIVER,
    SENDER,
    make_sbd,
)

# The use cases under test, named here only. (The sending worker and the MLS intake are
# reached through the container's ``sending_worker`` and ``receive``.)
receive = receiving.receive  # what the AS4 route calls with a message for one access point
receiver = receiving.receiver  # the access point a message is addressed to, with credentials
accept = intake.accept  # intake of an SBD to send

SEAT_A, SEAT_B = "POP000101", "POP000202"
PROCESS = Identifier(PROCESS_SCHEME, BILLING_PROCESS)
HOOK_A, HOOK_B = "https://hooks.example.com/a", "https://hooks.example.com/b"


@pytest.fixture(scope="module")
def pkis(tmp_path_factory: Any) -> dict[str, Path]:
    """A test PKI for each seat, made once: RSA keys are slow to make."""
    made = {}
    for seat in (SEAT_A, SEAT_B):
        data = tmp_path_factory.mktemp(f"pki-{seat}")
        ensure_test_pki(data, seat_id=seat)
        made[seat] = data / "pki"
    return made


@attrs.define
class Service:
    """One service provider: its container, the use cases' ports and its records."""

    seat: str
    container: Container
    ctx: Any
    net: Any
    docs: Any
    exchange: Any
    principal: Principal
    org: Organisation
    ap: AccessPoint
    reader: InMemoryMessageReader
    hooks: InMemoryWebhookSender
    hook_secret: str = ""

    @property
    def endpoint(self) -> Endpoint:
        pem = self.container.operator_environments()[0].ap_cert_pem
        der = x509.load_pem_x509_certificate(pem.encode()).public_bytes(Encoding.DER)
        profile = wire_profile(self.ctx.catalogue, self.ap.transport_profile)
        return Endpoint(self.ap.ap_url, der, profile, self.seat)

    async def inbox(self, content_type: str, body: Path) -> Any:
        """What the AS4 route does with a message to this access point, without HTTP."""
        to = await receiver(self.ctx, self.net.sealer, self.ap.org_id, self.ap.id)
        assert to is not None
        return await receive(self.ctx, self.docs, self.exchange, to, content_type, body)

    async def send(self, sbd: bytes) -> Transaction:
        incoming = self.docs.blobs.incoming()
        incoming.write_bytes(sbd)
        return await accept(self.ctx, self.docs, self.principal, self.org.id, self.ap.id, incoming)

    async def sending_round(self) -> int:
        return int(await (await resolve(self.container.sending_worker)).run_once())

    async def delivery_round(self) -> int:
        return int(await (await resolve(self.container.delivery_worker)).run_once())

    async def transactions(self, **where: Any) -> list[Transaction]:
        async with self.ctx.uow() as uow:
            return list(await uow.repository(TRANSACTIONS).all(**where))

    async def transaction(self, ident: uuid.UUID) -> Transaction:
        async with self.ctx.uow() as uow:
            found = await uow.repository(TRANSACTIONS).get(ident)
        assert found is not None
        return found

    async def artefact(self, ident: uuid.UUID, kind: ArtefactType) -> bytes:
        async with self.ctx.uow() as uow:
            found = await uow.repository(ARTEFACTS).first(transactionId=ident, type=kind)
        assert found is not None, kind
        return bytes(await self.docs.blobs.get(found.blob))


@attrs.define
class Loop:
    a: Service
    b: Service
    network: LoopbackNetwork
    transport: InMemoryApTransport
    lookup: InMemoryParticipantLookup


async def start(
    seat: str,
    data_dir: Path,
    network: LoopbackNetwork,
    transport: InMemoryApTransport,
    lookup: InMemoryParticipantLookup,
    **extra: Any,
) -> Service:
    config = Settings(
        data_dir=data_dir,
        database_url="memory://",
        seat_id=seat,
        public_url=f"https://{seat.lower()}.example",
        **extra,
    ).check()
    reader, hooks = InMemoryMessageReader(), InMemoryWebhookSender()
    container = build_container(
        config,
        participant_lookup=lookup,
        ap_transport=transport,
        message_reader=reader,
        webhook_sender=hooks,
    )
    await container.init_resources()
    ctx = await resolve(container.context)
    net = await resolve(container.network)
    await operator_setup.ensure_operator(
        ctx, net, container.operator_environments(), seat_spid(seat)
    )
    user = await users.sign_in(ctx, Identity(subject=f"admin-{seat}", email=f"{seat}@example.com"))
    principal = Principal(user=user)
    org = await organisations.create(
        ctx,
        principal,
        organisations.CreateOrganisation("2120000787", f"Org {seat}", "SE", "SE:ORGNR"),
    )
    (ap,) = (await services_to_use.aps_to_use(ctx, principal, org.id)).items
    service = Service(
        seat=seat,
        container=container,
        ctx=ctx,
        net=net,
        docs=await resolve(container.documents),
        exchange=await resolve(container.exchange),
        principal=principal,
        org=org,
        ap=ap,
        reader=reader,
        hooks=hooks,
    )
    network.attach(ap.ap_url, service.inbox)
    # where the network finds this service provider's own participant (it receives MLS)
    lookup.register(
        spid_participant(seat_spid(seat)), service.endpoint, [(MLS_DOCUMENT_TYPE, MLS_PROCESS)]
    )
    return service


async def add_participant(s: Service, identifier: str, *, receives: bool) -> None:
    (smp,) = (await services_to_use.smps_to_use(s.ctx, s.principal, s.org.id)).items
    p = await participants.create(
        s.ctx,
        s.net,
        s.principal,
        s.org.id,
        participants.CreateParticipant(f"participant {identifier}", identifier, smp.id, s.ap.id),
    )
    if receives:
        doc = s.ctx.catalogue.document_type_by_value(INVOICE.scheme, INVOICE.value)
        entry = SupportedDocumentType(doc.id, str(PROCESS))
        await participants.set_supported(
            s.ctx, s.net, s.principal, s.org.id, p.id, participants.SupportedDocumentTypes((entry,))
        )


async def subscribe(s: Service, url: str, events: tuple[str, ...]) -> None:
    made = await webhooks.create(
        s.ctx,
        s.net.sealer,
        s.principal,
        s.org.id,
        webhooks.CreateWebhook(url, events),
        webhooks.WebhookSettings(),
    )
    s.hook_secret = made.secret


@pytest.fixture
async def loop(tmp_path: Path, pkis: dict[str, Path]) -> AsyncIterator[Loop]:
    """A sends, B receives: A's participant SENDER, B's participant RECEIVER (which takes
    billing invoices), both known to the lookup; each organisation has a webhook."""
    network, lookup = LoopbackNetwork(), InMemoryParticipantLookup()
    transport = InMemoryApTransport(network, spool=tmp_path)
    services = []
    for seat in (SEAT_A, SEAT_B):
        data = tmp_path / seat
        data.mkdir()
        (data / "pki").symlink_to(pkis[seat], target_is_directory=True)
        services.append(await start(seat, data, network, transport, lookup))
    a, b = services
    await add_participant(a, SENDER, receives=False)
    await add_participant(b, RECEIVER, receives=True)
    lookup.register(Identifier(PARTICIPANT_SCHEME, RECEIVER), b.endpoint, [(INVOICE, PROCESS)])
    await subscribe(a, HOOK_A, ("transaction.sent", "transaction.send_failed", "mls.received"))
    await subscribe(b, HOOK_B, ("transaction.received",))
    yield Loop(a, b, network, transport, lookup)
    for s in services:
        await s.container.shutdown_resources()


def invoice(**header: Any) -> tuple[bytes, str]:
    """An SBD from SENDER to RECEIVER, and its instance identifier."""
    instance = str(uuid.uuid4())
    return make_sbd(instance_id=instance, **header), instance


def signed_by(attempt: Any, secret: str) -> bool:
    """Whether a webhook attempt carries both signatures of its body by ``secret``."""
    h = attempt.headers
    standard = standard_signature(
        secret, h["webhook-id"], int(h["webhook-timestamp"]), attempt.body
    )
    return h["webhook-signature"] == standard and h["x-webhook-sign"] == hex_signature(
        secret, attempt.body
    )


# --- the loop ---------------------------------------------------------------------------------


async def test_a_document_goes_round_the_loop_and_its_mls_comes_back(loop: Loop) -> None:
    a, b = loop.a, loop.b
    sbd, instance = invoice(mls_type=MlsType.ALWAYS_SEND)
    sent = await a.send(sbd)
    assert sent.transaction_status is Status.UNPROCESSED

    assert await a.sending_round() == 1
    # the lookup was asked for the receiver of the document, in A's environment
    (asked,) = loop.lookup.asked
    assert asked.receiver == Identifier(PARTICIPANT_SCHEME, RECEIVER)
    assert (asked.document, asked.process) == (INVOICE, PROCESS)
    assert asked.environment is Environment.TEST
    # one message, to B's access point, delivered; B read it and gave a receipt for it
    (message,) = loop.transport.sent
    assert message.endpoint.url == b.ap.ap_url
    assert (message.prepared.sender_party, message.prepared.receiver_party) == (SEAT_A, SEAT_B)
    (inbound,) = b.reader.read_messages
    assert inbound.message_id == f"{sent.id}@fourcorner"
    assert inbound.sender_certificate_cn == SEAT_A
    assert b.reader.receipts == [inbound] and b.reader.errors == []
    assert isinstance(message.outcome, Delivered)
    assert message.outcome.message_id == inbound.message_id

    # A: sent, with B's receipt kept as it came back
    done = await a.transaction(sent.id)
    assert done.transaction_status is Status.COMPLETED and done.service_error is None
    assert (done.sender_sp, done.receiver_sp) == (SEAT_A, SEAT_B)
    receipt = await a.artefact(sent.id, ArtefactType.TRANSACTION_RECEIPT)
    assert receipt == message.outcome.receipt
    assert json.loads(receipt)["refToMessageId"] == inbound.message_id

    # B: received, the document byte for byte, and a positive MLS waiting to go back
    (got,) = await b.transactions(direction=Direction.FROM_NETWORK)
    assert got.transaction_status is Status.COMPLETED
    assert (got.sender_id, got.receiver_id) == (SENDER, RECEIVER)
    assert got.doc_instance_id == instance and got.as4_message_id == inbound.message_id
    assert (got.sender_sp, got.receiver_sp) == (SEAT_A, SEAT_B)
    assert await b.artefact(got.id, ArtefactType.BUSINESS_DOCUMENT) == sbd
    assert await b.artefact(got.id, ArtefactType.TRANSACTION_RECEIPT) == receipt
    (job,) = await b.transactions(kind=Kind.MLS)
    assert (job.transaction_status, job.mls_response_code) == (Status.UNPROCESSED, "AB")
    assert job.receiver_id == spid_participant(seat_spid(SEAT_A)).value
    # its parties known from the start: B's access point, back to the one the document came from
    assert (job.sender_sp, job.receiver_sp) == (SEAT_B, SEAT_A)

    # B sends its status; A's receiving use case matches it to the document it sent
    assert await b.sending_round() == 1
    mls_message = loop.transport.sent[1]
    assert mls_message.endpoint.url == a.ap.ap_url
    assert loop.lookup.asked[1].receiver == spid_participant(seat_spid(SEAT_A))
    (mls_in,) = a.reader.read_messages
    assert mls_in.action == str(MLS_DOCUMENT_TYPE) and mls_in.sender_certificate_cn == SEAT_B
    assert a.reader.errors == []
    assert (await b.transaction(job.id)).transaction_status is Status.COMPLETED
    matched = await a.transaction(sent.id)
    assert matched.mls_response_code == "AB"
    assert matched.transaction_status is Status.COMPLETED
    status = read_mls(await a.artefact(sent.id, ArtefactType.MLS))
    assert status.response_code == "AB" and status.original_instance_id == instance
    assert (status.sender_spid, status.receiver_spid) == (seat_spid(SEAT_B), seat_spid(SEAT_A))
    assert await a.sending_round() == 0 and await b.sending_round() == 0

    # each side's webhook: the attempts the fake sender was given, signed with its secret
    assert await a.delivery_round() == 2
    assert await b.delivery_round() == 1
    kinds = {x.json()["eventType"]: x for x in a.hooks.attempts}
    assert set(kinds) == {"transaction.sent", "mls.received"}
    assert all(x.url == HOOK_A and signed_by(x, a.hook_secret) for x in a.hooks.attempts)
    sent_event = kinds["transaction.sent"].json()
    assert sent_event["orgId"] == str(a.org.id)
    assert sent_event["payload"]["id"] == str(sent.id)
    assert sent_event["payload"]["transactionStatus"] == "COMPLETED"
    assert kinds["mls.received"].json()["payload"] == {
        "transactionId": str(sent.id),
        "mlsResponseCode": "AB",
        "originalInstanceId": instance,
    }
    (received_hook,) = b.hooks.attempts
    assert received_hook.url == HOOK_B and signed_by(received_hook, b.hook_secret)
    assert received_hook.json()["eventType"] == "transaction.received"
    assert received_hook.json()["payload"]["id"] == str(got.id)
    assert received_hook.headers["content-type"] == "application/json"


async def test_a_message_sent_again_is_answered_with_the_first_receipt(loop: Loop) -> None:
    """A retry after a lost answer posts the same bytes; B answers with the receipt it
    stored and takes nothing in twice (the receipt made for the retry, found to be one when
    its document clashes with the stored one, is not sent)."""
    sbd, _ = invoice()
    await loop.a.send(sbd)
    await loop.a.sending_round()
    (first,) = loop.transport.sent
    again = await loop.transport.send(first.prepared, first.endpoint)
    assert again == first.outcome
    assert len(await loop.b.transactions(direction=Direction.FROM_NETWORK)) == 1
    assert len(loop.b.reader.read_messages) == 2


async def test_a_document_the_receiver_does_not_serve_is_refused_and_rejected(
    loop: Loop,
) -> None:
    """B's participant no longer takes invoices (the lookup still says it does): B refuses
    the message NOT_SERVICED, A's send fails for good, and the MLS RE B sends back marks it
    rejected."""
    b = loop.b
    async with b.ctx.uow() as uow:
        (bob,) = await uow.repository(PARTICIPANTS).all(orgId=b.org.id)
    await participants.set_supported(
        b.ctx, b.net, b.principal, b.org.id, bob.id, participants.SupportedDocumentTypes(())
    )
    sbd, instance = invoice()
    sent = await loop.a.send(sbd)
    await loop.a.sending_round()

    (refusal,) = loop.b.reader.errors
    assert refusal.code == "EBMS:0004" and refusal.detail == "PEPPOL:NOT_SERVICED"
    assert loop.b.reader.receipts == []
    (message,) = loop.transport.sent
    assert isinstance(message.outcome, Refused) and message.outcome.not_serviced
    failed = await loop.a.transaction(sent.id)
    assert failed.transaction_status is Status.FAILED
    assert failed.service_error == txe.NOT_SERVICED.error("EBMS:0004: Other PEPPOL:NOT_SERVICED")
    assert await loop.b.transactions(direction=Direction.FROM_NETWORK) == []

    (job,) = await loop.b.transactions(kind=Kind.MLS)
    assert (job.mls_response_code, job.doc_instance_id) == ("RE", instance)
    await loop.b.sending_round()
    rejected = await loop.a.transaction(sent.id)
    assert rejected.transaction_status is Status.REJECTED
    assert rejected.mls_response_code == "RE"
    assert read_mls(await loop.a.artefact(sent.id, ArtefactType.MLS)).response_code == "RE"

    await loop.a.delivery_round()
    kinds = sorted(x.json()["eventType"] for x in loop.a.hooks.attempts)
    assert kinds == ["mls.received", "transaction.send_failed"]


async def test_a_receiver_the_network_does_not_know_fails_the_send_unsent(loop: Loop) -> None:
    loop.lookup.unregister(Identifier(PARTICIPANT_SCHEME, RECEIVER))
    sent = await loop.a.send(invoice()[0])
    await loop.a.sending_round()
    failed = await loop.a.transaction(sent.id)
    assert failed.transaction_status is Status.FAILED
    assert failed.service_error is not None
    assert failed.service_error.code == txe.RECEIVER_NOT_FOUND.code
    assert loop.transport.sent == [] and loop.b.reader.read_messages == []


async def retrying_pair(
    tmp_path: Path, pkis: dict[str, Path]
) -> tuple[InMemoryApTransport, tuple[Service, Service]]:
    """A and B retrying failed sends at once, A's participant sending to B's; the caller
    shuts their containers down."""
    network, lookup = LoopbackNetwork(), InMemoryParticipantLookup()
    transport = InMemoryApTransport(network, spool=tmp_path)
    services = []
    for seat in (SEAT_A, SEAT_B):
        data = tmp_path / seat
        data.mkdir()
        (data / "pki").symlink_to(pkis[seat], target_is_directory=True)
        services.append(
            await start(seat, data, network, transport, lookup, send_retry_delays="0.001")
        )
    a, b = services
    await add_participant(a, SENDER, receives=False)
    await add_participant(b, RECEIVER, receives=True)
    lookup.register(Identifier(PARTICIPANT_SCHEME, RECEIVER), b.endpoint, [(INVOICE, PROCESS)])
    return transport, (a, b)


async def test_an_unreachable_access_point_is_retried_with_the_same_message(
    tmp_path: Path, pkis: dict[str, Path]
) -> None:
    """Cut off, the send waits for its next attempt; mended, the message kept from the first
    attempt goes out unchanged and is taken in once."""
    transport, (a, b) = await retrying_pair(tmp_path, pkis)
    try:
        transport.cut(b.ap.ap_url)
        sent = await a.send(invoice()[0])
        await a.sending_round()
        waiting = await a.transaction(sent.id)
        assert waiting.transaction_status is Status.PROCESSING and waiting.attempts == 1
        assert waiting.service_error is not None
        assert waiting.service_error.code == txe.AP_UNREACHABLE.code
        assert b.reader.read_messages == []

        transport.mend(b.ap.ap_url)
        while (await a.transaction(sent.id)).transaction_status is Status.PROCESSING:
            await a.sending_round()
        assert (await a.transaction(sent.id)).transaction_status is Status.COMPLETED
        first, second = transport.sent
        assert isinstance(first.outcome, Refused) and first.outcome.retryable
        assert second.prepared.reused and second.prepared.data == first.prepared.data
        assert len(await b.transactions(direction=Direction.FROM_NETWORK)) == 1
    finally:
        for s in (a, b):
            await s.container.shutdown_resources()


async def test_a_status_cut_off_is_kept_with_its_message_and_sent_again_unchanged(
    tmp_path: Path, pkis: dict[str, Path]
) -> None:
    """B's positive MLS cannot reach A: the status's document, made for the first attempt,
    is kept with the AS4 message that carries it, before that is posted; mended, the same
    bytes go out, A matches them, and both kept blobs go."""
    transport, (a, b) = await retrying_pair(tmp_path, pkis)
    try:
        sbd, instance = invoice(mls_type=MlsType.ALWAYS_SEND)
        sent = await a.send(sbd)
        await a.sending_round()
        (job,) = await b.transactions(kind=Kind.MLS)
        document, message = blob_key(job.id, ArtefactType.MLS), message_key(job.id)

        transport.cut(a.ap.ap_url)
        await b.sending_round()
        waiting = await b.transaction(job.id)
        assert waiting.transaction_status is Status.PROCESSING and waiting.attempts == 1
        kept = bytes(await b.docs.blobs.get(document))
        assert b.docs.envelopes.read(kept).document_type == MLS_DOCUMENT_TYPE
        assert await b.docs.blobs.get(message) == transport.sent[-1].prepared.data

        transport.mend(a.ap.ap_url)
        while (await b.transaction(job.id)).transaction_status is Status.PROCESSING:
            await b.sending_round()
        assert (await b.transaction(job.id)).transaction_status is Status.COMPLETED
        first, second = transport.sent[-2:]
        assert isinstance(first.outcome, Refused) and first.outcome.retryable
        assert second.prepared.reused and second.prepared.data == first.prepared.data
        assert (await a.transaction(sent.id)).mls_response_code == "AB"
        (status,) = a.reader.read_messages
        assert status.sbd == kept  # the document made for the first attempt, unchanged
        stored = read_mls(await a.artefact(sent.id, ArtefactType.MLS))
        assert (stored.response_code, stored.original_instance_id) == ("AB", instance)
        for key in (document, message):
            with pytest.raises((FileNotFoundError, KeyError)):
                await b.docs.blobs.get(key)
    finally:
        for s in (a, b):
            await s.container.shutdown_resources()


@pytest.mark.parametrize("meanwhile", ["finished", "taken over"])
async def test_a_worker_whose_lease_ran_out_posts_no_status(loop: Loop, meanwhile: str) -> None:
    """B's worker claims a status to send and stalls past its lease; meanwhile another worker
    finished the send, or claimed it again. Waking, the stale worker keeps nothing and posts
    nothing (a status's parties are known from the start, so no write of the parties checks
    this for it)."""
    a, b = loop.a, loop.b
    await a.send(invoice(mls_type=MlsType.ALWAYS_SEND)[0])
    assert await a.sending_round() == 1
    worker = await resolve(b.container.sending_worker)
    (claimed,) = await worker.claim(1)
    assert claimed.first and claimed.tx.kind is Kind.MLS
    async with b.ctx.uow() as uow:
        repo = uow.repository(TRANSACTIONS)
        stored = await repo.lock(claimed.tx.id)
        assert stored is not None
        if meanwhile == "finished":
            other = attrs.evolve(stored, transaction_status=Status.COMPLETED, lease_until=NO_LEASE)
        else:
            other = stored.claimed(b.ctx.clock() + timedelta(minutes=3), timedelta(minutes=2))
        await repo.update(other)
        await uow.commit()
    posted = len(loop.transport.sent)
    await worker.process(claimed)
    assert len(loop.transport.sent) == posted
    for key in (blob_key(claimed.tx.id, ArtefactType.MLS), message_key(claimed.tx.id)):
        with pytest.raises((FileNotFoundError, KeyError)):
            await b.docs.blobs.get(key)
    assert await b.transaction(claimed.tx.id) == other


# --- webhook attempts -------------------------------------------------------------------------


@pytest.mark.parametrize("failure", ["status", "timeout"])
async def test_a_failing_webhook_endpoint_is_recorded_and_tried_again(
    loop: Loop, failure: str
) -> None:
    a = loop.a
    if failure == "timeout":
        a.hooks.time_out(HOOK_A)
    else:
        a.hooks.fail(HOOK_A, 503)
    sent = await a.send(invoice()[0])
    await a.sending_round()
    assert await a.delivery_round() == 1
    (attempt,) = a.hooks.to(HOOK_A)
    assert attempt.json()["payload"]["id"] == str(sent.id) and signed_by(attempt, a.hook_secret)
    async with a.ctx.uow() as uow:
        (delivery,) = await uow.repository(DELIVERIES).all()
    assert delivery.status is DeliveryStatus.PENDING
    (recorded,) = delivery.attempts
    if failure == "timeout":
        assert (recorded.status_code, recorded.error) == (None, TIMED_OUT)
    else:
        assert (recorded.status_code, recorded.error) == (503, None)
    a.hooks.heal(HOOK_A)
    assert await a.delivery_round() == 0  # the next attempt is not due yet


# --- a message for another access point ------------------------------------------------------


async def test_a_message_for_another_access_point_is_refused_unread(loop: Loop) -> None:
    """B's reader refuses a message addressed to A's certificate: nothing is taken in."""
    sbd, _ = invoice()
    creds_a = loop.a.container.operator_environments()[0]
    prepared = await loop.transport.prepare(
        sbd=sbd,
        addressing=Addressing.of(loop.a.docs.envelopes.read(sbd)),
        endpoint=attrs.evolve(loop.a.endpoint, url=loop.b.ap.ap_url),
        credentials=Credentials(creds_a.ap_cert_pem, creds_a.ap_key_pem),
        message_id="elsewhere@test",
    )
    outcome = await loop.transport.send(prepared, loop.b.endpoint)
    (refusal,) = loop.b.reader.errors
    assert refusal.code == "EBMS:0102"
    # the error comes from B, not from the access point the message named: not its answer
    assert isinstance(outcome, Refused) and outcome.bad_receipt
    assert loop.b.reader.read_messages == []
    assert await loop.b.transactions(direction=Direction.FROM_NETWORK) == []
    assert await loop.b.transactions(kind=Kind.MLS) == []  # unread: no status goes back


async def test_a_document_whose_commit_may_have_been_kept_keeps_its_blobs(loop: Loop) -> None:
    """A commit that fails otherwise than by a clash (the connection lost before its answer)
    may have been kept: the document's blobs are not removed then, so a transaction that was
    committed never names a blob that is gone (the sweep removes them if nothing does)."""
    a = loop.a
    real = a.ctx.uow

    class LostAnswer:
        def __init__(self) -> None:
            self.inner = real()

        async def __aenter__(self) -> Any:
            uow = await self.inner.__aenter__()
            commit = uow.commit

            async def committed_then_lost() -> None:
                await commit()
                raise ServiceUnavailable(reason="the database cannot be reached")

            uow.commit = committed_then_lost
            return uow

        async def __aexit__(self, *exc: Any) -> None:
            await self.inner.__aexit__(*exc)

    sbd, _ = invoice()
    incoming = a.docs.blobs.incoming()
    incoming.write_bytes(sbd)
    with pytest.raises(ServiceUnavailable):
        await accept(
            attrs.evolve(a.ctx, uow=LostAnswer), a.docs, a.principal, a.org.id, a.ap.id, incoming
        )
    (kept,) = await a.transactions()
    assert await a.artefact(kept.id, ArtefactType.BUSINESS_DOCUMENT) == sbd
