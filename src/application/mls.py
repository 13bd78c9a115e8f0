"""Message level statuses: those this service sends back about documents it received (an RE
for a document it refuses, an AB or, once the receiving organisation confirms, AP for one
whose sender asked for a status), and those that reach it about documents it sent.

Sent statuses are transactions of kind MLS, sent by the sending worker like documents.

Of a status that reaches this service (corner 2): which sent document it is about, and what
it changes there.

An MLS names the document it is about only by its SBDH InstanceIdentifier
(``DocumentReference/ID``), which the sending organisation chooses: two organisations may
well send documents with the same one. So the status is matched on the sent transaction's own
identity, never by the instance identifier alone:

- it arrives at the access point that serves its addressee (our ``0242:<SPID>``);
- it is signed by the access point the document was delivered to (the receiving certificate's
  CN, recorded on the transaction before the document was posted);
- its ReceiverParty is the service provider that sent the document (the SPID of the sending
  certificate's CN, recorded likewise);
- a positive status (``AP``, ``AB``) answers only a document that asked for one
  (``MLS_TYPE`` ``ALWAYS_SEND``; NETWORK.md §5).

A status that matches no sent document, or the documents of more than one organisation (which
nothing in it can tell apart), is refused with a signed error and changes nothing: it is never
given to an organisation it may not be about.
"""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path

from fourcorner.application import telemetry, webhooks
from fourcorner.application.access import Principal, authorise
from fourcorner.application.collections import ACCESS_POINTS, ARTEFACTS, TRANSACTIONS
from fourcorner.application.context import Context
from fourcorner.application.ports import As4Refusal, InboundDocument
from fourcorner.application.repositories import Participants, Transactions
from fourcorner.application.sending import Exchange
from fourcorner.application.transactions import Documents
from fourcorner.domain import events
from fourcorner.domain.envelope import (
    MLS_DOCUMENT_TYPE,
    MessageLevelStatus,
    MlsType,
    Sbdh,
    seat_spid,
)
from fourcorner.domain.errors import Conflict, DomainError, IllegalTransition, NotFound
from fourcorner.domain.network_services import AccessPoint
from fourcorner.domain.roles import Role
from fourcorner.domain.transaction import Artefact, ArtefactType, Direction, Kind, Transaction
from fourcorner.domain.validation import FailedAssert

# --- sent by this service (corner 3) --------------------------------------------------------


async def refused(
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
    await _rejection(
        ctx,
        exchange,
        ap,
        inbound,
        envelope,
        reason="FD" if "NOT_SERVICED" in refusal.detail else "SV",
        description=f"{refusal.code} {refusal.detail}".strip()[:500],
    )


async def invalid(
    ctx: Context,
    exchange: Exchange,
    ap: AccessPoint,
    inbound: InboundDocument,
    envelope: Sbdh,
    failed: tuple[FailedAssert, ...],
) -> None:
    """A received document that fails fatal validation rules, which its receiver's
    organisation refuses: an MLS RE goes back with one line response per failed rule (its
    location as the line, status reason code BV, business rule violation; the rule's id and
    text as the description)."""
    lines = tuple(
        (f.location[:_LINE] or "NA", "BV", f"{f.id}: {f.text}"[:_DESCRIPTION]) for f in failed
    )
    rules = ", ".join(dict.fromkeys(f.id for f in failed))
    await _rejection(
        ctx,
        exchange,
        ap,
        inbound,
        envelope,
        reason="BV",
        description=f"the document fails the validation rules: {rules}"[:_DESCRIPTION],
        lines=lines,
    )


_LINE = 1000
_DESCRIPTION = 500


async def _rejection(
    ctx: Context,
    exchange: Exchange,
    ap: AccessPoint,
    inbound: InboundDocument,
    envelope: Sbdh,
    *,
    reason: str,
    description: str,
    lines: tuple[tuple[str, str, str], ...] = (),
) -> None:
    job = Transaction.mls_about(
        envelope,
        id=ctx.new_id(),
        org_id=ap.org_id,
        ap=ap,
        spid=exchange.spid,
        sender_seat=inbound.sender_certificate_cn,
        response_code="RE",
        created_ns=ctx.clock_ns(),
        due=ctx.clock(),
        reason=reason,
        description=description,
        lines=lines,
    )
    try:
        async with ctx.uow() as uow:
            await uow.repository(TRANSACTIONS).add(job)
            await uow.commit()
    except Conflict:
        # an MLS about this document (from this sender: its instance identifier is its own)
        # is on its way already
        return
    telemetry.transaction_status(job)


def positive_job(
    ctx: Context, exchange: Exchange, received: Transaction, document: Sbdh, ap: AccessPoint
) -> Transaction:
    """The AB that goes back to the sender of ``received`` (which asked for it: ALWAYS_SEND)
    once the confirmation window is over; stored with the received document."""
    return Transaction.mls_about(
        document,
        id=ctx.new_id(),
        org_id=received.org_id,
        ap=ap,
        spid=exchange.spid,
        seat=received.receiver_sp,  # this access point, as the received document records it
        sender_seat=received.sender_sp,
        response_code="AB",
        created_ns=ctx.clock_ns(),
        due=received.created_at + exchange.confirm_window,
        about=received.id,
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
        pending = await Transactions(uow).mls_about(received)
        job = await uow.repository(TRANSACTIONS).lock(pending.id) if pending else None
        if job is None:
            raise Conflict(reason="the sender asked for no positive message level status")
        try:
            job = job.confirmed(ctx.clock())
        except IllegalTransition as e:  # answered as the conflict it is, as before
            raise Conflict(reason=e.reason) from None
        await uow.repository(TRANSACTIONS).update(job)
        await uow.commit()
    return job


# --- received by this service (corner 2) ----------------------------------------------------


def is_about(tx: Transaction, status: MessageLevelStatus, signer: str) -> bool:
    """Whether ``status``, signed by the access point whose certificate's CN is ``signer``,
    is about the sent document ``tx`` (whose instance identifier it names)."""
    return (
        tx.direction is Direction.TO_NETWORK
        and tx.kind is Kind.DOCUMENT
        and tx.doc_instance_id == status.original_instance_id
        and bool(tx.receiver_sp)
        and tx.receiver_sp == signer
        and bool(tx.sender_sp)
        and seat_spid(tx.sender_sp).upper() == status.receiver_spid.upper()
        and (status.response_code == "RE" or tx.mls_type == MlsType.ALWAYS_SEND.value)
    )


def _answered_already(inbound: InboundDocument) -> As4Refusal:
    """A second status about one document: a document has at most one (NETWORK.md), and the
    one taken stands. The message that brought it, again (the same MessageId from the same
    access point: a retry whose answer was lost), is no second status: it gets a receipt."""
    return As4Refusal(
        "EBMS:0004",
        "Other",
        "the document this status is about has a message level status already",
        inbound.message_id,
    )


def _read_mls(docs: Documents, sbd: bytes | Path) -> MessageLevelStatus:
    if isinstance(sbd, bytes):
        return docs.envelopes.read_mls(sbd)
    return docs.envelopes.read_mls_file(sbd)


async def take(
    ctx: Context,
    docs: Documents,
    ap: AccessPoint,
    inbound: InboundDocument,
    envelope: Sbdh,
) -> None:
    """Record the status on the one sent document it is about; ``As4Refusal`` otherwise."""
    sbd = inbound.sbd
    try:
        # one held in memory is small (``MessageReader.read``): a thread hop costs more
        status = (
            _read_mls(docs, sbd)
            if isinstance(sbd, bytes)
            else await asyncio.to_thread(_read_mls, docs, sbd)
        )
    except DomainError as e:
        raise As4Refusal(
            "EBMS:0004", "Other", f"the MLS is not valid: {e.message()}", inbound.message_id
        ) from None
    async with ctx.uow() as uow:
        # the addressee in this access point's environment (an identifier is unique per
        # environment: the operator's 0242 participant is in each)
        addressee = await Participants(uow).by_identifier(envelope.receiver.value, ap.environment)
        sent = await Transactions(uow).sent_documents(status.original_instance_id)
        candidates = [t for t in sent if is_about(t, status, inbound.sender_certificate_cn)]
        # a status comes back in the environment its document went out in: one about a
        # document sent through a TEST access point is no answer at the PROD one
        aps = uow.repository(ACCESS_POINTS)
        sent_through = {ap_id: await aps.get(ap_id) for ap_id in {t.ap_id for t in candidates}}
        about = [
            t
            for t in candidates
            if (through := sent_through[t.ap_id]) is not None
            and through.environment is ap.environment
        ]
    if addressee is None or addressee.ap_ref != ap.id:
        raise As4Refusal("EBMS:0004", "Other", "PEPPOL:NOT_SERVICED", inbound.message_id)
    if not about:
        raise As4Refusal(
            "EBMS:0004", "Other", "PEPPOL:NOT_SERVICED (no such document)", inbound.message_id
        )
    if len(about) > 1:
        raise As4Refusal(
            "EBMS:0004",
            "Other",
            "the document this status is about cannot be told apart from another one",
            inbound.message_id,
        )
    (original,) = about
    signer = inbound.sender_certificate_cn
    if original.answered_by(inbound.message_id, signer):
        return  # the message taken before, again (its answer lost): answered as it was
    if original.mls_response_code is not None:
        raise _answered_already(inbound)
    now = ctx.clock()
    key = f"{original.id.hex}-mls-{ctx.new_id().hex[:8]}"
    hooks = await webhooks.webhooks_of(ctx, original.org_id)  # read before the unit of work

    def taken(tx: Transaction) -> Transaction:
        return tx.mls_received(
            status.response_code,
            status.description,
            now,
            message_id=inbound.message_id,
            signer=signer,
        )

    async with ctx.uow() as uow:
        # First: a small one goes in this unit of work (durable with it, gone with a
        # rollback), a large one is stored now, before any lock is held.
        (size,) = await docs.blobs.put_all_in(uow, [(key, inbound.sbd)])
        repo = uow.repository(TRANSACTIONS)
        # As read above (most often): recorded in one statement, if it still is. Otherwise
        # (another status, or a change of the document meanwhile) decided again on the stored
        # one, read under a lock.
        current, updated = original, taken(original)
        if not await repo.replace(original, updated):
            locked = await repo.lock(original.id)
            assert locked is not None
            current = locked
            if current.mls_response_code is None:
                updated = taken(current)
                await repo.update(updated)
        if current.mls_response_code is None:  # else: another status was taken meanwhile
            # a new id, its row count unread: it goes out with the event or the commit
            await uow.repository(ARTEFACTS).add_many(
                [
                    Artefact(
                        ctx.new_id(),
                        original.id,
                        original.org_id,
                        ArtefactType.MLS,
                        "application/xml",
                        size,
                        key,
                        now,
                    )
                ]
            )
            await webhooks.raise_event(
                ctx,
                uow,
                original.org_id,
                events.MLS_RECEIVED,
                {
                    "transactionId": str(original.id),
                    "mlsResponseCode": status.response_code,
                    "originalInstanceId": status.original_instance_id,
                },
                hooks,
            )
            await uow.commit()
    if current.mls_response_code is not None:  # rolled back: a large blob stored goes too
        await docs.blobs.delete(key)
        if current.answered_by(inbound.message_id, signer):
            return  # this very message, which came twice at once
        raise _answered_already(inbound)
    if updated.transaction_status is not current.transaction_status:
        telemetry.transaction_status(updated)
