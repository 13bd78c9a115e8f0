"""Message level statuses that reach this service (corner 2): which sent document one is
about, and what it changes there.

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

import attrs

from fourcorner.application import telemetry, webhooks
from fourcorner.application.collections import ARTEFACTS, PARTICIPANTS, TRANSACTIONS
from fourcorner.application.context import Context
from fourcorner.application.ports import As4Refusal, InboundDocument
from fourcorner.application.transactions import Documents
from fourcorner.domain import events
from fourcorner.domain import transaction as txe
from fourcorner.domain.envelope import MessageLevelStatus, MlsType, Sbdh, seat_spid
from fourcorner.domain.errors import DomainError
from fourcorner.domain.network_services import AccessPoint
from fourcorner.domain.transaction import (
    Artefact,
    ArtefactType,
    Direction,
    Kind,
    Status,
    Transaction,
)


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


async def take(
    ctx: Context,
    docs: Documents,
    ap: AccessPoint,
    inbound: InboundDocument,
    envelope: Sbdh,
) -> None:
    """Record the status on the one sent document it is about; ``As4Refusal`` otherwise."""
    try:
        status: MessageLevelStatus = await asyncio.to_thread(
            docs.envelopes.read_mls_file, inbound.sbd
        )
    except DomainError as e:
        raise As4Refusal(
            "EBMS:0004", "Other", f"the MLS is not valid: {e.message()}", inbound.message_id
        ) from None
    async with ctx.uow() as uow:
        addressee = await uow.repository(PARTICIPANTS).first(
            identifierKey=envelope.receiver.value.lower()
        )
        sent = await uow.repository(TRANSACTIONS).all(
            docInstanceId=status.original_instance_id,
            direction=Direction.TO_NETWORK,
            kind=Kind.DOCUMENT,
        )
    if addressee is None or addressee.ap_ref != ap.id:
        raise As4Refusal("EBMS:0004", "Other", "PEPPOL:NOT_SERVICED", inbound.message_id)
    about = [t for t in sent if is_about(t, status, inbound.sender_certificate_cn)]
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
    now = ctx.clock()
    key = f"{original.id.hex}-mls-{uuid.uuid4().hex[:8]}"
    size = await docs.blobs.adopt(key, inbound.sbd)
    rejected = status.response_code == "RE"
    async with ctx.uow() as uow:
        current = await uow.repository(TRANSACTIONS).lock(original.id)
        assert current is not None
        updated = attrs.evolve(
            current,
            mls_response_code=status.response_code,
            transaction_status=Status.REJECTED if rejected else current.transaction_status,
            service_error=txe.REJECTED_BY_RECEIVER.error(status.description)
            if rejected
            else current.service_error,
            last_modified_at=now,
        )
        await uow.repository(TRANSACTIONS).update(updated)
        await uow.repository(ARTEFACTS).add(
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
        )
        await uow.commit()
    if updated.transaction_status is not current.transaction_status:
        telemetry.transaction_status(updated)
