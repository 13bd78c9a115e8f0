"""Receiving documents from the network (corner 3).

An AS4 message is verified, checked against its SBDH, and taken in one unit of work with the
signed receipt that answers it, so an acknowledged document is never lost and a replay is
answered with the original receipt: a message is taken once (its sending access point, receiver
and MessageId, ``message_key_of``), even when its receiver moved to another organisation of
this service before the sender tried again. The same document (instance identifier) arriving again
under another MessageId from the same sender (its access point and SBDH sender: the identifier
is unique only per sender) is answered and not stored twice. A message level status addressed
to this service is handed to ``mls``; a verified document this access point refuses gets an
MLS RE back (``mls.refused``). A billing document is checked against the validation rules
once its receipt is made: the result is kept with it, or, when the receiving organisation
refuses documents that fail (``inboundValidation``), it is not taken and an MLS RE names the
failed rules (``mls.invalid``).
"""

from __future__ import annotations

import asyncio
import functools
import logging
import uuid
from collections.abc import Callable
from pathlib import Path

import attrs

from fourcorner.application import mls, telemetry, webhooks
from fourcorner.application.certificate_status import CertificateStatusUnknown, settled
from fourcorner.application.collections import (
    ACCESS_POINTS,
    ARTEFACTS,
    CERTIFICATES,
    ORGANISATIONS,
    TRANSACTIONS,
)
from fourcorner.application.context import Context
from fourcorner.application.intake import validation_blobs
from fourcorner.application.ports import (
    As4Refusal,
    Credentials,
    InboundDocument,
    KeySealer,
    MessageReader,
)
from fourcorner.application.publishing import WILDCARD_SCHEME
from fourcorner.application.repositories import Artefacts, Participants, Transactions
from fourcorner.application.sending import Exchange, credentials_of
from fourcorner.application.transactions import (
    Documents,
    NewBlob,
    blob_key,
    delete_blobs,
    store_artefacts,
)
from fourcorner.domain import events, wildcard
from fourcorner.domain.envelope import (
    MLS_DOCUMENT_TYPE,
    Identifier,
    MlsType,
    Sbdh,
    spid_participant,
)
from fourcorner.domain.errors import (
    Conflict,
    DomainError,
    InvalidInput,
    RulesFailed,
    ServiceUnavailable,
)
from fourcorner.domain.network_services import AccessPoint
from fourcorner.domain.organisation import ValidationPolicy
from fourcorner.domain.participant import Participant
from fourcorner.domain.transaction import ArtefactType, Transaction
from fourcorner.domain.validation import ValidationResult

log = logging.getLogger("fourcorner.receiving")


@attrs.frozen
class Answer:
    status: int
    content_type: str
    body: bytes


SIGNAL = "application/soap+xml; charset=utf-8"


NOT_SERVICED = "PEPPOL:NOT_SERVICED"


class OtherEnvironment(As4Refusal):
    """A document for a participant of the other environment (a PROD participant's at the
    TEST access point, or the reverse): a receiver this access point does not serve, so the
    AS4 profile's ``EBMS:0004`` with ``PEPPOL:NOT_SERVICED``, which senders take as final.
    No message level status answers it: it would go out in an environment that is not the
    document's."""

    def __init__(self, receiver: Participant, ap: AccessPoint, ref: str) -> None:
        super().__init__("EBMS:0004", "Other", NOT_SERVICED, ref)
        self.reason = (
            f"{receiver.participant_identifier} is a {receiver.environment.value} participant, "
            f"this is a {ap.environment.value} access point"
        )


@attrs.frozen
class Receiver:
    """The access point an inbound message is addressed to, with its credentials."""

    ap: AccessPoint
    credentials: Credentials


async def receiver(
    ctx: Context, sealer: KeySealer, org_id: uuid.UUID, ap_id: uuid.UUID
) -> Receiver | None:
    """The access point ``ap_id`` of organisation ``org_id``, or None: looked up before the
    message is read, so a message to no access point is refused unread."""
    async with ctx.reads() as uow:
        ap = await uow.repository(ACCESS_POINTS).get(ap_id)
        if ap is None or ap.org_id != org_id:
            return None
        return Receiver(ap, await credentials_of(sealer, uow, ap))


async def receive(
    ctx: Context,
    docs: Documents,
    exchange: Exchange,
    to: Receiver,
    content_type: str,
    body: bytes | Path,
) -> Answer:
    """Take one AS4 message for ``to`` (``body``: its bytes, or the file holding it). Its SBD
    is held in memory, or a large one goes to a file of the blob store, which becomes the
    document's blob or is removed."""
    made: list[Path] = []

    def sbd() -> Path:
        made.append(docs.blobs.incoming())
        return made[-1]

    try:
        return await _receive(ctx, docs, exchange, to, content_type, body, sbd)
    finally:
        for path in made:
            path.unlink(missing_ok=True)


async def _receive(
    ctx: Context,
    docs: Documents,
    exchange: Exchange,
    to: Receiver,
    content_type: str,
    body: bytes | Path,
    sbd: Callable[[], Path],
) -> Answer:
    ap, creds = to.ap, to.credentials
    reader = exchange.reader
    inbound: InboundDocument | None = None
    envelope: Sbdh | None = None
    try:
        message, read = await _checked_read(
            functools.partial(_read, docs, reader, content_type, body, creds), body, sbd, ap
        )
        inbound = message
        envelope = _envelope(inbound, read)
        consistent(inbound, envelope)
        if envelope.document_type == MLS_DOCUMENT_TYPE and envelope.receiver == spid_participant(
            exchange.spid
        ):
            await mls.take(ctx, docs, ap, inbound, envelope)
            telemetry.received(ap.org_id, inbound.sender_certificate_cn, inbound.message_id)
            return Answer(200, SIGNAL, reader.receipt(inbound, creds))
        return await _take_document(ctx, docs, exchange, ap, creds, inbound, envelope)
    except As4Refusal as refusal:
        sender = inbound.sender_certificate_cn if inbound is not None else None
        reason = f"{refusal.description} {refusal.detail}".strip()
        if isinstance(refusal, OtherEnvironment):
            reason += f": {refusal.reason}"
        telemetry.refused(ap.org_id, refusal.code, sender, reason)
        if (
            inbound is not None
            and envelope is not None
            and not isinstance(refusal, OtherEnvironment)
        ):
            await mls.refused(ctx, exchange, ap, inbound, envelope, refusal)
        return Answer(200, SIGNAL, reader.error(refusal, creds))


INLINE = 256 * 1024
"""A message of at most this many bytes, held in memory (the AS4 route spools a larger one to
a file), is read on the event loop as long as its SBD is held in memory too."""


Read = tuple[InboundDocument, Sbdh | DomainError]


class _LargeSbd(Exception):
    """The SBD of a message read on the event loop is too large to be held in memory."""


def _held() -> Path:
    raise _LargeSbd


async def _read_message(
    read: Callable[[Callable[[], Path]], Read], body: bytes | Path, sbd: Callable[[], Path]
) -> Read:
    """``read`` (``_read`` of the message ``body``) on the event loop for a small message (at
    most ``INLINE`` bytes, in memory), where handing it to a thread and back costs more than
    its reading; in a thread for a file, and for a small message whose SBD turns out too large
    to be held in memory (which decompressing would write to the file ``sbd()`` makes: it is
    read again there, from the start), so the loop never waits for more than a small
    message's reading."""
    if isinstance(body, bytes) and len(body) <= INLINE:
        try:
            return read(_held)
        except _LargeSbd:
            pass
    return await asyncio.to_thread(read, sbd)


async def _checked_read(
    read: Callable[[Callable[[], Path]], Read],
    body: bytes | Path,
    sbd: Callable[[], Path],
    ap: AccessPoint,
) -> Read:
    """``_read_message``; when the revocation of the sender's certificate was not known yet
    (its OCSP answer or its issuer's revocation list), once more after waiting for it (a bounded time). A status that stays
    unknown (``FOURCORNER_REVOCATION=hard``) is ``ServiceUnavailable``, an HTTP 503 the
    sending access point tries again after, rather than a refusal it takes as final. Why it
    is not known (its URL, what its fetch met) is logged, not told the sender."""
    try:
        return await settled(lambda: _read_message(read, body, sbd))
    except CertificateStatusUnknown as e:
        telemetry.deferred(ap.org_id, e.reason)
        raise ServiceUnavailable(
            reason="the revocation of the sender's certificate cannot be checked yet"
        ) from None


def _read(
    docs: Documents,
    reader: MessageReader,
    content_type: str,
    body: bytes | Path,
    creds: Credentials,
    sbd: Callable[[], Path],
) -> Read:
    """The message read (a large SBD to the file ``sbd()`` makes), and the SBD's envelope or
    why it has none (for a message read in a thread, in one thread hop for both)."""
    inbound = reader.read(content_type, body, creds, sbd)
    try:
        if isinstance(inbound.sbd, bytes):
            return inbound, docs.envelopes.read(inbound.sbd)
        return inbound, docs.envelopes.read_file(inbound.sbd)
    except DomainError as e:
        return inbound, e


def _envelope(inbound: InboundDocument, read: Sbdh | DomainError) -> Sbdh:
    if isinstance(read, DomainError):
        raise As4Refusal(
            "EBMS:0004", "Other", f"the SBD is not valid: {read.message()}", inbound.message_id
        )
    return read


def _same_participant(a: Identifier, b: Identifier) -> bool:
    """Participant schemes and values compare case-insensitively."""
    return a.scheme.lower() == b.scheme.lower() and a.value.lower() == b.value.lower()


def consistent(inbound: InboundDocument, envelope: Sbdh) -> None:
    """The ebMS header and the SBDH agree (NETWORK.md), else EBMS:0003."""
    problems = []
    if not _same_participant(inbound.original_sender, envelope.sender):
        problems.append("originalSender differs from the SBDH Sender")
    if not _same_participant(inbound.final_recipient, envelope.receiver):
        problems.append("finalRecipient differs from the SBDH Receiver")
    if inbound.service != envelope.process:  # Service@type is the PROCESSID scheme
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
    async with ctx.reads() as uow:
        # the receiver of this access point's environment (an identifier is unique per
        # environment); one of the other environment only says why it is refused
        receiver, other = await Participants(uow).in_environment(
            envelope.receiver.value, ap.environment
        )
        own = await uow.repository(CERTIFICATES).get(ap.certificate_ref)
        org = await uow.repository(ORGANISATIONS).get(receiver.org_id) if receiver else None
    served = receiver is not None and receiver.ap_ref == ap.id and serves(ctx, receiver, envelope)
    if other is not None or receiver is None or not served:
        if (replayed := await _original(ctx, docs, ap, inbound, envelope)) is not None:
            return replayed  # taken when it was served: answered as it was then
        if other is not None:
            raise OtherEnvironment(other, ap, inbound.message_id)
        raise As4Refusal("EBMS:0004", "Other", NOT_SERVICED, inbound.message_id)
    receipt = reader.receipt(inbound, creds)  # a signature over a few references: no thread
    # checked once received (the receipt says it arrived, not that it is valid)
    result = await _validated(docs, inbound)
    policy = org.inbound_validation if org else ValidationPolicy.REPORT
    if result is not None and result.errors and policy is ValidationPolicy.REFUSE:
        if (replayed := await _original(ctx, docs, ap, inbound, envelope)) is not None:
            return replayed  # taken before the organisation refused such documents
        await mls.invalid(ctx, exchange, ap, inbound, envelope, result.errors)
        telemetry.received(receiver.org_id, inbound.sender_certificate_cn, inbound.message_id)
        return Answer(200, SIGNAL, receipt)
    tx = Transaction.inbound(
        id=ctx.new_id(),
        org_id=receiver.org_id,
        ap=ap,
        document=envelope,
        sender_sp=inbound.sender_certificate_cn,
        receiver_sp=own.common_name if own else exchange.seat_id,  # this access point's seat id
        message_id=inbound.message_id,
        created_ns=ctx.clock_ns(),
    )
    job = (
        mls.positive_job(ctx, exchange, tx, envelope, ap)
        if envelope.mls_type is MlsType.ALWAYS_SEND
        else None
    )
    reports = [] if result is None else validation_blobs(docs, tx, result)
    document, signal = ArtefactType.BUSINESS_DOCUMENT, ArtefactType.TRANSACTION_RECEIPT
    blobs = [  # the artefacts in this order
        *reports,
        NewBlob(blob_key(tx.id, document), document, "application/xml", inbound.sbd),
        NewBlob(blob_key(tx.id, signal), signal, "application/soap+xml", receipt),
    ]
    hooks = await webhooks.webhooks_of(ctx, tx.org_id)  # before any blob is written
    try:
        async with ctx.uow() as uow:
            # the blobs in the transaction where the store can, the rest by the bulk path:
            # all may go out together with the commit (PostgreSQL: one round trip); the same
            # document arriving again clashes there at the latest
            artefacts = await store_artefacts(ctx, docs, uow, tx, blobs)
            await uow.repository(TRANSACTIONS).add_many([tx])
            await uow.repository(ARTEFACTS).add_many(artefacts)
            valid = None if result is None else result.valid
            payload = docs.payloads.transaction(tx) | {"valid": valid}
            await webhooks.raise_event(
                ctx, uow, tx.org_id, events.TRANSACTION_RECEIVED, payload, hooks
            )
            if job is not None:
                await uow.repository(TRANSACTIONS).add(job)
            await uow.commit()
    except Conflict:
        # this message arrived before (``message_key``: a replay, its receiver perhaps of
        # another organisation then) and is answered with the receipt it had; or the same
        # document did, the same instance identifier from the same sending access point and
        # SBDH sender (``dedup_key``), under another MessageId: answered with its own
        await delete_blobs(docs, blobs)
        if (replayed := await _original(ctx, docs, ap, inbound, envelope)) is not None:
            return replayed
    else:
        telemetry.received(tx.org_id, inbound.sender_certificate_cn, inbound.message_id)
        telemetry.transaction_status(tx)
        if job is not None:
            telemetry.transaction_status(job)  # the status that goes back, waiting
    return Answer(200, SIGNAL, receipt)


async def _original(
    ctx: Context, docs: Documents, ap: AccessPoint, inbound: InboundDocument, envelope: Sbdh
) -> Answer | None:
    """The answer this message had when it was taken (``received_as``: a replay, under
    whatever organisation took it in), or None. Asked only where the document is not stored:
    a replay of a stored message clashes with the stored record (``message_key``, unique in
    storage), so the usual message, taken at once, costs no read for it."""
    async with ctx.reads() as uow:
        replay = await Transactions(uow).received_as(
            inbound.message_id, ap.id, inbound.sender_certificate_cn, envelope.receiver.value
        )
        if replay is None:
            return None
        if replay.doc_instance_id != envelope.instance_identifier:
            # ebMS MessageIds are unique: the sender reused one for another document, which
            # is answered as the first was and not stored (its sender must send it anew)
            telemetry.message_id_reused(
                replay.org_id, inbound.sender_certificate_cn, inbound.message_id
            )
        stored = await Artefacts(uow).first_of_type(replay.id, ArtefactType.TRANSACTION_RECEIPT)
    if stored is None:
        return None
    return Answer(200, SIGNAL, await docs.blobs.get(stored.blob))


async def _validated(docs: Documents, inbound: InboundDocument) -> ValidationResult | None:
    """What the rules find in a received document; None when they gave no verdict on it (it
    is received all the same, with no result): the rules raised an error on it, the validator
    could not read it as a document it checks, or the validator failed (a bug of ours, logged:
    answering with an error would only make the sender retry the same document for ever). The
    validator being unavailable (shutting down) is not caught: the sender tries again later."""
    try:
        return await docs.validator.validate(inbound.sbd)
    except (RulesFailed, InvalidInput):
        return None
    except ServiceUnavailable:
        raise
    except Exception:
        log.exception(
            "the validator failed on a received document",
            extra={"message_id": inbound.message_id},
        )
        return None


def serves(ctx: Context, receiver: Participant, envelope: Sbdh) -> bool:
    """Whether the receiver announced this document type (exactly, or by wildcard) and
    process."""
    for entry in receiver.supported_document_types:
        doc = ctx.catalogue.document_type(entry.document_id)
        if doc is None or entry.process_id != str(envelope.process):
            continue
        if doc.value == envelope.document_type.value:
            return True
        by_wildcard = doc.scheme == WILDCARD_SCHEME and not entry.exact_match_only
        if by_wildcard and wildcard.covers(
            wildcard.registered(doc.value), envelope.document_type.value
        ):
            return True
    return False
