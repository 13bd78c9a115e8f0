"""The four-corner loop: sending documents to the network (corner 2) and receiving them
from it (corner 3), with message level statuses back to the sender.

Sending is a worker over the transactions outbox, like webhook delivery: claims hold a lease,
a crashed worker's claim expires, and transient failures are retried with backoff. A send's
AS4 message is built once and kept in the blob store until the send is finished, so every
attempt posts the same bytes: a receiver that took an earlier attempt (whose answer was lost,
or whose sender crashed) answers with the receipt it stored, and that receipt checks out.
Receiving verifies, stores and answers with a signed receipt in one unit of work, so an
acknowledged document is never lost and a replay is answered with the original receipt.
Message level statuses that reach this service are matched to what was sent in ``mls``.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from datetime import timedelta
from pathlib import Path
from typing import Any

import attrs

from fourcorner.application import mls, telemetry, webhooks
from fourcorner.application.access import Principal, authorise
from fourcorner.application.collections import (
    ACCESS_POINTS,
    ARTEFACTS,
    CERTIFICATES,
    PARTICIPANTS,
    TRANSACTIONS,
)
from fourcorner.application.context import Context
from fourcorner.application.listing import condition, equals, one_of
from fourcorner.application.ports import (
    ApTransport,
    As4Refusal,
    Credentials,
    Delivered,
    InboundDocument,
    LookupFailed,
    LookupProblem,
    MessageReader,
    ParticipantLookup,
)
from fourcorner.application.publishing import wire_profile
from fourcorner.application.sealed import CERTIFICATE_KEY
from fourcorner.application.storage import Query, UnitOfWork
from fourcorner.application.transactions import Documents, blob_key, message_key, working_keys
from fourcorner.domain import events
from fourcorner.domain import transaction as txe
from fourcorner.domain.clock import from_ns, iso_ns
from fourcorner.domain.envelope import (
    MLS_DOCUMENT_TYPE,
    MLS_PROCESS,
    Identifier,
    MessageLevelStatus,
    MlsType,
    Sbdh,
    mls_envelope,
    seat_spid,
    spid_participant,
)
from fourcorner.domain.errors import Conflict, DomainError, NotFound, SecretUnusable
from fourcorner.domain.filtering import Op
from fourcorner.domain.network_services import AccessPoint
from fourcorner.domain.roles import Role
from fourcorner.domain.transaction import (
    Artefact,
    ArtefactType,
    Direction,
    Kind,
    Status,
    Transaction,
)
from fourcorner.domain.webhook import NO_LEASE

log = logging.getLogger("fourcorner.exchange")

# How a failed lookup of the receiver fails the send (only an unreachable DNS or SMP retries).
LOOKUP_FAILURES = {
    LookupProblem.NOT_REGISTERED: txe.RECEIVER_NOT_FOUND,
    LookupProblem.NOT_ACCEPTED: txe.DOCUMENT_NOT_ACCEPTED,
    LookupProblem.UNREACHABLE: txe.SMP_UNREACHABLE,
    LookupProblem.SMP_UNTRUSTED: txe.SMP_UNTRUSTED,
    LookupProblem.ENDPOINT_UNTRUSTED: txe.ENDPOINT_UNTRUSTED,
    LookupProblem.INSECURE: txe.PEER_NOT_HTTPS,
}


@attrs.frozen
class Exchange:
    lookup: ParticipantLookup
    transport: ApTransport
    reader: MessageReader
    seat_id: str  # this service provider's seat id (its AP certificates' CN)
    retry_delays: tuple[timedelta, ...] = (timedelta(seconds=30), timedelta(minutes=5))
    max_attempts: int = 3
    lease: timedelta = timedelta(minutes=2)
    concurrency: int = 16
    poll_interval: float = 0.1
    # How long a positive MLS (ALWAYS_SEND) waits for the receiving organisation to confirm
    # the document (then AP is sent instead of AB); at most 20 minutes by the network's policy.
    confirm_window: timedelta = timedelta(0)

    @property
    def spid(self) -> str:
        return seat_spid(self.seat_id)


def record(tx: Transaction) -> dict[str, Any]:
    """A transaction as the interface shows it (also the payload of its events); optional
    fields are left out when absent."""
    out: dict[str, Any] = {
        "id": str(tx.id),
        "transportProfile": tx.transport_profile,
        "senderId": tx.sender_id,
        "receiverId": tx.receiver_id,
        "docTypeId": tx.doc_type_id,
        "processId": tx.process_id,
        "senderCountry": tx.sender_country,
        "receiverCountry": tx.receiver_country,
        "senderSP": tx.sender_sp,
        "receiverSP": tx.receiver_sp,
        "docInstanceId": tx.doc_instance_id,
        "transactionStatus": tx.transaction_status.value,
        "createdAt": iso_ns(tx.created_ns),
        "apId": str(tx.ap_id),
        "direction": tx.direction.value,
    }
    if tx.service_error is not None:
        out["serviceError"] = attrs.asdict(tx.service_error)
    if tx.mls_response_code is not None:
        out["mlsResponseCode"] = tx.mls_response_code
    return out


async def credentials_of(ctx: Context, uow: UnitOfWork, ap: AccessPoint) -> Credentials:
    cert = await uow.repository(CERTIFICATES).get(ap.certificate_ref)
    if cert is None:
        raise DomainError()
    key = CERTIFICATE_KEY.open(ctx.net.sealer, cert, user=f"access point {ap.id}")
    return Credentials(cert.cert_pem, key, cert.ca_chain_pem)


# --- sending (corner 2) ---------------------------------------------------------------------


class SendingWorker:
    def __init__(self, ctx: Context, docs: Documents, exchange: Exchange) -> None:
        self._ctx, self._docs, self._x = ctx, docs, exchange
        self._in_flight: set[asyncio.Task[None]] = set()
        self._wake = asyncio.Event()

    def wake(self) -> None:
        self._wake.set()

    async def claim(self, limit: int) -> list[Transaction]:
        now = self._ctx.clock()
        due = Query(
            where=(
                equals(TRANSACTIONS, "direction", Direction.TO_NETWORK),
                one_of(TRANSACTIONS, "transactionStatus", (Status.UNPROCESSED, Status.PROCESSING)),
                condition(TRANSACTIONS, "nextAttemptAt", Op.LTE, now),
                condition(TRANSACTIONS, "leaseUntil", Op.LT, now),
            ),
            limit=limit,
        )
        async with self._ctx.uow() as uow:
            claimed = []
            for tx in await uow.repository(TRANSACTIONS).claim(due):
                tx = attrs.evolve(
                    tx,
                    transaction_status=Status.PROCESSING,
                    lease_until=now + self._x.lease,
                    last_modified_at=now,
                )
                await uow.repository(TRANSACTIONS).update(tx)
                claimed.append(tx)
            await uow.commit()
        for tx in claimed:
            telemetry.transaction_status(tx)
        return claimed

    async def run_once(self) -> int:
        jobs = await self.claim(self._x.concurrency)
        await asyncio.gather(*(self._process(tx) for tx in jobs))
        return len(jobs)

    async def run(self, stop: asyncio.Event) -> None:
        while not stop.is_set():
            free = self._x.concurrency - len(self._in_flight)
            jobs: list[Transaction] = []
            if free > 0:
                try:
                    jobs = await self.claim(free)
                except Exception:
                    log.exception("claiming transactions failed")
            for tx in jobs:
                task = asyncio.create_task(self._process(tx))
                self._in_flight.add(task)
                task.add_done_callback(self._in_flight.discard)
            if not jobs:
                self._wake.clear()
                waiters = [
                    asyncio.ensure_future(stop.wait()),
                    asyncio.ensure_future(self._wake.wait()),
                ]
                await asyncio.wait(
                    waiters, timeout=self._x.poll_interval, return_when=asyncio.FIRST_COMPLETED
                )
                for w in waiters:
                    w.cancel()
        if self._in_flight:
            await asyncio.wait(self._in_flight, timeout=30)

    async def _process(self, tx: Transaction) -> None:
        try:
            await self._send(tx)
        except Exception:
            log.exception("sending failed unexpectedly", extra={"transaction_id": str(tx.id)})

    async def _send(self, tx: Transaction) -> None:
        ctx = self._ctx
        try:
            async with ctx.uow() as uow:
                ap = await uow.repository(ACCESS_POINTS).get(tx.ap_id)
                creds = await credentials_of(ctx, uow, ap) if ap else None
        except SecretUnusable as e:
            telemetry.send_failed(tx, txe.SENDER_UNUSABLE.code, e.message(), final=True)
            await self._finish(tx, failure=txe.SENDER_UNUSABLE.error(e.message()))
            return
        if ap is None or creds is None:
            gone = "the access point no longer exists"
            telemetry.send_failed(tx, txe.AP_REFUSED.code, gone, final=True)
            await self._finish(tx, failure=txe.AP_REFUSED.error(gone))
            return
        if tx.kind is Kind.MLS:
            sbd = await self._mls_document(tx)
        else:
            sbd = await self._docs.blobs.get(blob_key(tx.id, ArtefactType.BUSINESS_DOCUMENT))
        envelope = self._docs.envelopes.read(sbd)
        try:
            endpoint = await self._x.lookup.endpoint(
                envelope.receiver,
                envelope.document_type,
                envelope.process,
                wire_profile(ctx.catalogue, tx.transport_profile),
                ap.environment,
            )
        except LookupFailed as e:
            telemetry.lookup_failed(tx, str(e.problem), e.reason)
            await self._retry_or_fail(tx, LOOKUP_FAILURES[e.problem], e.reason)
            return
        kept_key = message_key(tx.id)
        try:
            kept: bytes | None = await self._docs.blobs.get(kept_key)
        except (FileNotFoundError, KeyError):
            kept = None
        prepared = await self._x.transport.prepare(
            sbd=sbd,
            envelope=envelope,
            endpoint=endpoint,
            credentials=creds,
            message_id=f"{tx.id}@fourcorner",
            kept=kept,
        )
        # Kept before it is posted, so a retry (after a lost answer or a crash) posts the same
        # bytes and the receiver's stored receipt for them checks out; the parties are recorded
        # before it is posted too, so a message level status about it finds them.
        if not prepared.reused:
            await self._docs.blobs.put(kept_key, prepared.data)
        if (tx.sender_sp, tx.receiver_sp) != (prepared.sender_party, prepared.receiver_party):
            tx = await self._update(
                tx, sender_sp=prepared.sender_party, receiver_sp=prepared.receiver_party
            )
        started = time.perf_counter()
        outcome = await self._x.transport.send(prepared, endpoint)
        took = time.perf_counter() - started
        if isinstance(outcome, Delivered):
            telemetry.sent(tx, "ok", took)
            await self._finish(tx, receipt=outcome.receipt)
            return
        kind = (
            txe.NOT_SERVICED
            if outcome.not_serviced
            else txe.RECEIPT_INVALID
            if outcome.bad_receipt
            else txe.AP_UNREACHABLE
            if outcome.retryable and outcome.code.startswith("connection")
            else txe.AP_HTTP_ERROR
            if outcome.retryable
            else txe.AP_REFUSED
        )
        telemetry.sent(tx, kind.code, took)
        await self._retry_or_fail(tx, kind, f"{outcome.code}: {outcome.detail}")

    async def _mls_document(self, tx: Transaction) -> bytes:
        """The MLS SBD of an MLS job, made once and kept, so a retry resends the same bytes."""
        key = blob_key(tx.id, ArtefactType.MLS)
        try:
            return await self._docs.blobs.get(key)
        except (FileNotFoundError, KeyError):
            pass
        now = self._ctx.clock()
        rejected = tx.mls_response_code == "RE"
        status = MessageLevelStatus(
            response_code=tx.mls_response_code or "AB",
            original_instance_id=tx.doc_instance_id,
            id=str(uuid.uuid4()),
            issued_at=now,
            sender_spid=self._x.spid,
            receiver_spid=seat_spid(tx.receiver_sp),
            description=tx.mls_description if rejected else "",
            reasons=(("NA", tx.mls_reason, tx.mls_description),) if rejected else (),
        )
        receiver = Identifier("iso6523-actorid-upis", tx.receiver_id)
        envelope = mls_envelope(
            status,
            receiver=receiver,
            instance_id=str(uuid.uuid4()),
            created_at=now,
            country_c1=tx.sender_country,
        )
        sbd = self._docs.envelopes.write(envelope, self._docs.envelopes.write_mls(status))
        await self._docs.blobs.put(key, sbd)
        return sbd

    async def _retry_or_fail(
        self, tx: Transaction, kind: txe.TransportFailure, detail: str
    ) -> None:
        attempts = tx.attempts + 1
        final = not (kind.retryable and attempts < self._x.max_attempts)
        telemetry.send_failed(tx, kind.code, detail, final=final)
        if not final:
            delay = self._x.retry_delays[min(attempts - 1, len(self._x.retry_delays) - 1)]
            await self._update(
                tx,
                attempts=attempts,
                next_attempt_at=self._ctx.clock() + delay,
                lease_until=NO_LEASE,
                service_error=kind.error(detail),
            )
            return
        await self._finish(attrs.evolve(tx, attempts=attempts), failure=kind.error(detail))

    async def _update(self, tx: Transaction, **changes: Any) -> Transaction:
        """Apply the sending worker's ``changes`` to the stored transaction, read under a lock:
        what others wrote meanwhile (a message level status) stays."""
        async with self._ctx.uow() as uow:
            current = await uow.repository(TRANSACTIONS).lock(tx.id) or tx
            updated = attrs.evolve(current, **changes, last_modified_at=self._ctx.clock())
            await uow.repository(TRANSACTIONS).update(updated)
            await uow.commit()
        return updated

    async def _finish(
        self,
        tx: Transaction,
        *,
        receipt: bytes | None = None,
        failure: txe.ServiceError | None = None,
    ) -> None:
        ctx, now = self._ctx, self._ctx.clock()
        key = blob_key(tx.id, ArtefactType.TRANSACTION_RECEIPT)
        if receipt is not None:
            size = await self._docs.blobs.put(key, receipt)
        async with ctx.uow() as uow:
            current = await uow.repository(TRANSACTIONS).lock(tx.id) or tx
            done = attrs.evolve(
                current,
                transaction_status=Status.COMPLETED if failure is None else Status.FAILED,
                service_error=failure,
                attempts=tx.attempts,
                lease_until=NO_LEASE,
                last_modified_at=now,
            )
            if current.transaction_status is Status.REJECTED:  # its status arrived first
                done = attrs.evolve(
                    done, transaction_status=Status.REJECTED, service_error=current.service_error
                )
            await uow.repository(TRANSACTIONS).update(done)
            if receipt is not None:
                await uow.repository(ARTEFACTS).add(
                    Artefact(
                        ctx.new_id(),
                        tx.id,
                        tx.org_id,
                        ArtefactType.TRANSACTION_RECEIPT,
                        "application/soap+xml",
                        size,
                        key,
                        now,
                    )
                )
            if tx.kind is Kind.DOCUMENT:
                name = (
                    events.TRANSACTION_SENT if failure is None else events.TRANSACTION_SEND_FAILED
                )
                await webhooks.raise_event(ctx, uow, tx.org_id, name, record(done))
            await uow.commit()
        telemetry.transaction_status(done, now)
        for finished in working_keys(done):
            await self._docs.blobs.delete(finished)


# --- receiving (corner 3) -------------------------------------------------------------------


@attrs.frozen
class Answer:
    status: int
    content_type: str
    body: bytes


SIGNAL = "application/soap+xml; charset=utf-8"


@attrs.frozen
class Receiver:
    """The access point an inbound message is addressed to, with its credentials."""

    ap: AccessPoint
    credentials: Credentials


async def receiver(ctx: Context, org_id: uuid.UUID, ap_id: uuid.UUID) -> Receiver | None:
    """The access point ``ap_id`` of organisation ``org_id``, or None: looked up before the
    message is read, so a message to no access point is refused unread."""
    async with ctx.uow() as uow:
        ap = await uow.repository(ACCESS_POINTS).get(ap_id)
        if ap is None or ap.org_id != org_id:
            return None
        return Receiver(ap, await credentials_of(ctx, uow, ap))


async def receive(
    ctx: Context,
    docs: Documents,
    exchange: Exchange,
    to: Receiver,
    content_type: str,
    body: Path,
) -> Answer:
    """Take one AS4 message for ``to`` from the file ``body``. Its SBD goes to a file of the
    blob store, which becomes the document's blob or is removed."""
    sbd = docs.blobs.incoming()
    try:
        return await _receive(ctx, docs, exchange, to, content_type, body, sbd)
    finally:
        sbd.unlink(missing_ok=True)


async def _receive(
    ctx: Context,
    docs: Documents,
    exchange: Exchange,
    to: Receiver,
    content_type: str,
    body: Path,
    sbd: Path,
) -> Answer:
    ap, creds = to.ap, to.credentials
    reader = exchange.reader
    inbound: InboundDocument | None = None
    envelope: Sbdh | None = None
    try:
        inbound = await asyncio.to_thread(reader.read, content_type, body, creds, sbd)
        envelope = await _envelope(docs, inbound)
        _consistent(inbound, envelope)
        if envelope.document_type == MLS_DOCUMENT_TYPE and envelope.receiver == spid_participant(
            exchange.spid
        ):
            await mls.take(ctx, docs, ap, inbound, envelope)
            telemetry.received(ap.org_id, inbound.sender_certificate_cn, inbound.message_id)
            return Answer(200, SIGNAL, await asyncio.to_thread(reader.receipt, inbound, creds))
        return await _take_document(ctx, docs, exchange, ap, creds, inbound, envelope)
    except As4Refusal as refusal:
        sender = inbound.sender_certificate_cn if inbound is not None else None
        reason = f"{refusal.description} {refusal.detail}".strip()
        telemetry.refused(ap.org_id, refusal.code, sender, reason)
        if inbound is not None and envelope is not None:
            await _refused(ctx, exchange, ap, inbound, envelope, refusal)
        return Answer(200, SIGNAL, await asyncio.to_thread(reader.error, refusal, creds))


async def _refused(
    ctx: Context,
    exchange: Exchange,
    ap: AccessPoint,
    inbound: InboundDocument,
    envelope: Sbdh,
    refusal: As4Refusal,
) -> None:
    """A verified document this access point refuses: an MLS RE goes back to its sender
    (never in reply to an MLS, and at most one per document)."""
    if envelope.document_type == MLS_DOCUMENT_TYPE:
        return
    now = ctx.clock()
    ns = time.time_ns()
    reason = "FD" if "NOT_SERVICED" in refusal.detail else "SV"
    job = Transaction(
        id=ctx.new_id(),
        org_id=ap.org_id,
        direction=Direction.TO_NETWORK,
        kind=Kind.MLS,
        ap_id=ap.id,
        transport_profile=ap.transport_profile,
        sender_id=spid_participant(exchange.spid).value,
        receiver_id=_mls_receiver(envelope.mls_to, inbound.sender_certificate_cn),
        doc_type_id=str(MLS_DOCUMENT_TYPE),
        process_id=str(MLS_PROCESS),
        sender_country=envelope.country_c1,
        doc_instance_id=envelope.instance_identifier,
        transaction_status=Status.UNPROCESSED,
        created_at=from_ns(ns),
        created_ns=ns,
        last_modified_at=now,
        next_attempt_at=now,
        receiver_sp=inbound.sender_certificate_cn,
        mls_response_code="RE",
        mls_reason=reason,
        mls_description=f"{refusal.code} {refusal.detail}".strip()[:500],
    )
    try:
        async with ctx.uow() as uow:
            await uow.repository(TRANSACTIONS).add(job)
            await uow.commit()
    except Conflict:
        return  # an MLS about this document is on its way already
    telemetry.transaction_status(job)


def _mls_receiver(mls_to: Identifier | None, sender_seat: str) -> str:
    """The MLS_TO of the document when it names the sending service provider (its 6-digit
    main id equals the sender's seat id digits), else ``0242:<sender SPID>``."""
    c2 = seat_spid(sender_seat)
    main_id = mls_to.value.split(":", 1)[1][:6] if mls_to is not None else ""
    if mls_to is not None and mls_to.value.startswith("0242:") and main_id.upper() == c2.upper():
        return mls_to.value
    return spid_participant(c2).value


async def _envelope(docs: Documents, inbound: InboundDocument) -> Sbdh:
    try:
        return await asyncio.to_thread(docs.envelopes.read_file, inbound.sbd)
    except DomainError as e:
        raise As4Refusal(
            "EBMS:0004", "Other", f"the SBD is not valid: {e.message()}", inbound.message_id
        ) from None


def _consistent(inbound: InboundDocument, envelope: Sbdh) -> None:
    """The ebMS header and the SBDH agree (NETWORK.md), else EBMS:0003."""
    problems = []
    if inbound.original_sender.value.lower() != envelope.sender.value.lower():
        problems.append("originalSender differs from the SBDH Sender")
    if inbound.final_recipient.value.lower() != envelope.receiver.value.lower():
        problems.append("finalRecipient differs from the SBDH Receiver")
    if inbound.service.value != envelope.process.value:
        problems.append("Service differs from the PROCESSID scope")
    if inbound.action != str(envelope.document_type):
        problems.append("Action differs from the DOCUMENTID scope")
    if problems:
        raise As4Refusal("EBMS:0003", "ValueInconsistent", "; ".join(problems), inbound.message_id)


async def _take_document(
    ctx: Context,
    docs: Documents,
    exchange: Exchange,
    ap: AccessPoint,
    creds: Credentials,
    inbound: InboundDocument,
    envelope: Sbdh,
) -> Answer:
    reader = exchange.reader
    async with ctx.uow() as uow:
        replay = await uow.repository(TRANSACTIONS).first(as4MessageId=inbound.message_id)
        if replay is not None:
            stored = await uow.repository(ARTEFACTS).first(
                transactionId=replay.id, type=ArtefactType.TRANSACTION_RECEIPT
            )
            if stored is not None:
                return Answer(200, SIGNAL, await docs.blobs.get(stored.blob))
        receiver = await uow.repository(PARTICIPANTS).first(
            identifierKey=envelope.receiver.value.lower()
        )
        own = await uow.repository(CERTIFICATES).get(ap.certificate_ref)
    if receiver is None or receiver.ap_ref != ap.id or not _serves(ctx, receiver, envelope):
        raise As4Refusal("EBMS:0004", "Other", "PEPPOL:NOT_SERVICED", inbound.message_id)
    receipt = await asyncio.to_thread(reader.receipt, inbound, creds)
    ns = time.time_ns()
    now = from_ns(ns)
    tx = Transaction(
        id=ctx.new_id(),
        org_id=receiver.org_id,
        direction=Direction.FROM_NETWORK,
        ap_id=ap.id,
        transport_profile=ap.transport_profile,
        sender_id=envelope.sender.value,
        receiver_id=envelope.receiver.value,
        doc_type_id=str(envelope.document_type),
        process_id=str(envelope.process),
        sender_country=envelope.country_c1,
        receiver_country=envelope.receiver_country,
        doc_instance_id=envelope.instance_identifier,
        transaction_status=Status.COMPLETED,
        created_at=now,
        created_ns=ns,
        last_modified_at=now,
        sender_sp=inbound.sender_certificate_cn,
        receiver_sp=own.common_name if own else exchange.seat_id,  # this access point's seat id
        as4_message_id=inbound.message_id,
        mls_to=str(envelope.mls_to) if envelope.mls_to else "",
        mls_type=envelope.mls_type.value if envelope.mls_type else "",
    )
    doc_key = blob_key(tx.id, ArtefactType.BUSINESS_DOCUMENT)
    receipt_key = blob_key(tx.id, ArtefactType.TRANSACTION_RECEIPT)
    doc_size = await docs.blobs.adopt(doc_key, inbound.sbd)
    receipt_size = await docs.blobs.put(receipt_key, receipt)
    try:
        async with ctx.uow() as uow:
            await uow.repository(TRANSACTIONS).add(tx)
            await uow.repository(ARTEFACTS).add(
                Artefact(
                    ctx.new_id(),
                    tx.id,
                    tx.org_id,
                    ArtefactType.BUSINESS_DOCUMENT,
                    "application/xml",
                    doc_size,
                    doc_key,
                    now,
                )
            )
            await uow.repository(ARTEFACTS).add(
                Artefact(
                    ctx.new_id(),
                    tx.id,
                    tx.org_id,
                    ArtefactType.TRANSACTION_RECEIPT,
                    "application/soap+xml",
                    receipt_size,
                    receipt_key,
                    now,
                )
            )
            await webhooks.raise_event(ctx, uow, tx.org_id, events.TRANSACTION_RECEIVED, record(tx))
            if envelope.mls_type is MlsType.ALWAYS_SEND:
                job = _mls_job(ctx, exchange, tx, ap, now)
                job = attrs.evolve(job, next_attempt_at=now + exchange.confirm_window)
                await uow.repository(TRANSACTIONS).add(job)
            await uow.commit()
    except Conflict:
        # the same document (instance identifier) arrived before under another MessageId
        await docs.blobs.delete(doc_key)
        await docs.blobs.delete(receipt_key)
    else:
        telemetry.received(tx.org_id, inbound.sender_certificate_cn, inbound.message_id)
        telemetry.transaction_status(tx)
        if envelope.mls_type is MlsType.ALWAYS_SEND:
            telemetry.transaction_status(job)  # the status that goes back, waiting
    return Answer(200, SIGNAL, receipt)


def _serves(ctx: Context, receiver: Any, envelope: Sbdh) -> bool:
    """Whether the receiver announced this document type (exactly, or by wildcard) and
    process."""
    for entry in receiver.supported_document_types:
        doc = ctx.catalogue.document_type(entry.document_id)
        if doc is None or entry.process_id != str(envelope.process):
            continue
        if doc.value == envelope.document_type.value:
            return True
        wildcard = doc.scheme == "net-doctype-wildcard" and not entry.exact_match_only
        if wildcard and envelope.document_type.value.startswith(doc.value.rstrip("*")):
            return True
    return False


def _mls_job(
    ctx: Context, exchange: Exchange, about: Transaction, ap: AccessPoint, now: Any
) -> Transaction:
    """An MLS to send back to the document's sender (kind MLS, processed by the sender)."""
    ns = time.time_ns()
    mls_to = Identifier(*about.mls_to.split("::", 1)) if "::" in about.mls_to else None
    return Transaction(
        id=ctx.new_id(),
        org_id=about.org_id,
        direction=Direction.TO_NETWORK,
        kind=Kind.MLS,
        ap_id=ap.id,
        transport_profile=ap.transport_profile,
        sender_id=str(spid_participant(exchange.spid).value),
        receiver_id=_mls_receiver(mls_to, about.sender_sp),
        doc_type_id=str(MLS_DOCUMENT_TYPE),
        process_id=str(MLS_PROCESS),
        sender_country=about.sender_country,
        doc_instance_id=about.doc_instance_id,
        transaction_status=Status.UNPROCESSED,
        created_at=from_ns(ns),
        created_ns=ns,
        last_modified_at=now,
        next_attempt_at=now,
        receiver_sp=about.sender_sp,
        about=about.id,
        mls_response_code="AB",
    )


async def confirm(
    ctx: Context, principal: Principal, org_id: uuid.UUID, transaction_id: uuid.UUID
) -> Transaction:
    """The receiving organisation confirms a received document: the positive MLS that waits
    for it (ALWAYS_SEND, within the confirmation window) goes out as AP instead of AB."""
    async with ctx.uow() as uow:
        await authorise(uow, principal, org_id, Role.ORGMEMBER)
        received = await uow.repository(TRANSACTIONS).get(transaction_id)
        if (
            received is None
            or received.org_id != org_id
            or received.direction is not Direction.FROM_NETWORK
        ):
            raise NotFound(resource="received transaction", ident=str(transaction_id))
        pending = await uow.repository(TRANSACTIONS).first(
            kind=Kind.MLS, docInstanceId=received.doc_instance_id, orgId=org_id
        )
        job = await uow.repository(TRANSACTIONS).lock(pending.id) if pending else None
        if job is None:
            raise Conflict(reason="the sender asked for no positive message level status")
        if job.transaction_status is not Status.UNPROCESSED or job.attempts:
            raise Conflict(reason="the message level status about this document was sent already")
        job = attrs.evolve(job, mls_response_code="AP", next_attempt_at=ctx.clock())
        await uow.repository(TRANSACTIONS).update(job)
        await uow.commit()
    return job
