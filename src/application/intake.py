"""Intake: a document taken in to send — an SBD, or a bare UBL Invoice or CreditNote wrapped
in an SBDH built from it — posted or put to a pre-signed upload URL. The document is checked
(its envelope against the catalogue, its sender, its access point's environment, the
validation rules) before anything is stored, then stored and queued for the sending worker."""

from __future__ import annotations

import json
import uuid
from datetime import timedelta
from pathlib import Path

import attrs

from fourcorner.application import idempotency, telemetry
from fourcorner.application.access import Principal, authorise, authorised_still
from fourcorner.application.collections import (
    API_KEYS,
    ARTEFACTS,
    CERTIFICATES,
    TRANSACTIONS,
    UPLOADS,
    USERS,
)
from fourcorner.application.context import Context
from fourcorner.application.idempotency import Answer, Keyed
from fourcorner.application.ports import Envelopes
from fourcorner.application.repositories import Participants, Transactions
from fourcorner.application.services_to_use import usable
from fourcorner.application.transactions import (
    Documents,
    NewBlob,
    blob_key,
    delete_blobs,
    store_artefacts,
)
from fourcorner.domain.envelope import Sbdh
from fourcorner.domain.errors import (
    Conflict,
    Detail,
    DocumentInvalid,
    DuplicateTransaction,
    Forbidden,
    InvalidInput,
    NotAMember,
)
from fourcorner.domain.network_services import AccessPoint
from fourcorner.domain.organisation import ValidationPolicy
from fourcorner.domain.participant import Participant
from fourcorner.domain.roles import Role
from fourcorner.domain.transaction import (
    ArtefactType,
    Transaction,
    UsedUpload,
)
from fourcorner.domain.ubl import MlsRequest, UblFacts, ubl_envelope
from fourcorner.domain.validation import ValidationResult

UPLOAD_VALIDITY = timedelta(minutes=30)


def summary_key(transaction_id: uuid.UUID) -> str:
    """The JSON summary of a transaction's validation; its SVRL is under ``blob_key``."""
    return f"{blob_key(transaction_id, ArtefactType.VALIDATION_RESULT)}-json"


def validation_blobs(docs: Documents, tx: Transaction, result: ValidationResult) -> list[NewBlob]:
    """The blobs of a checked document's ``VALIDATION_RESULT`` artefacts, to store with its
    transaction (``store_artefacts``): the SVRL and the JSON summary; none when it was not
    checked."""
    if not result.checked:
        return []
    summary = json.dumps(docs.payloads.validation(result)).encode()
    kind = ArtefactType.VALIDATION_RESULT
    return [
        NewBlob(blob_key(tx.id, kind), kind, "application/xml", result.svrl),
        NewBlob(summary_key(tx.id), kind, "application/json", summary),
    ]


def _check_catalogue(ctx: Context, envelope: Sbdh) -> None:
    problems = []
    doc = ctx.catalogue.document_type_by_value(
        envelope.document_type.scheme, envelope.document_type.value
    )
    if doc is None:
        problems.append(
            Detail(
                "BusinessScope/Scope[Type=DOCUMENTID]",
                f"{envelope.document_type} is not a known document type",
            )
        )
    elif doc.state == "removed":
        problems.append(Detail("BusinessScope/Scope[Type=DOCUMENTID]", f"{doc.name} is removed"))
    if str(envelope.process) not in ctx.catalogue.process_ids():
        problems.append(
            Detail(
                "BusinessScope/Scope[Type=PROCESSID]", f"{envelope.process} is not a known process"
            )
        )
    if problems:
        raise InvalidInput(problems)


def _same_environment(sender: Participant, ap: AccessPoint) -> None:
    """A participant sends only through an access point of its own environment (TEST or
    PROD): the receiver is looked up, and the message signed, in the access point's."""
    if sender.environment is not ap.environment:
        raise InvalidInput.one(
            "ap",
            f"{sender.participant_identifier} is a {sender.environment.value} participant and "
            f"the access point {ap.name!r} is a {ap.environment.value} access point: a "
            f"participant sends only through an access point of its own environment",
        )


def accepted(tx: Transaction) -> Answer:
    """The answer to a document taken in: 202 with its transaction id and status."""
    body = {"transactionId": str(tx.id), "transactionStatus": tx.transaction_status.value}
    return Answer(202, body)


async def submit(
    ctx: Context,
    docs: Documents,
    principal: Principal,
    org_id: uuid.UUID,
    ap_id: uuid.UUID,
    incoming: bytes | Path,
    keyed: Keyed | None = None,
    mls: MlsRequest = MlsRequest(),  # noqa: B008 - frozen
    upload: UploadGrant | None = None,
) -> Answer:
    """``accept``, answered; with an idempotency key (``keyed``), the answer a request with
    that key got before (``IdempotencyKeyReused`` if it was another request), else the new
    answer, stored with the transaction. Of two requests with one key at once, one makes the
    transaction and the other answers the same (its commit clashes on the key). ``upload``:
    the pre-signed upload URL the document came through, spent with the transaction."""
    if keyed is not None:
        earlier = await idempotency.replay(ctx, principal, org_id, keyed, Role.ORGMEMBER)
        if earlier is not None:
            _remove(incoming)
            return earlier
    try:
        return accepted(
            await accept(ctx, docs, principal, org_id, ap_id, incoming, keyed, mls, upload)
        )
    except (Conflict, DuplicateTransaction):
        if keyed is not None:
            earlier = await idempotency.replay(ctx, principal, org_id, keyed, Role.ORGMEMBER)
            if earlier is not None:
                return earlier
        raise


async def accept(
    ctx: Context,
    docs: Documents,
    principal: Principal,
    org_id: uuid.UUID,
    ap_id: uuid.UUID,
    incoming: bytes | Path,
    keyed: Keyed | None = None,
    mls: MlsRequest = MlsRequest(),  # noqa: B008 - frozen
    upload: UploadGrant | None = None,
) -> Transaction:
    """Take an SBD (``incoming``: its bytes, or the file a large one was streamed to) to send through ``ap_id``: read and
    check its header, store it, and record the transaction as UNPROCESSED — all before any
    network I/O. A file is removed whatever happens. A document this organisation sent
    already is refused with ``DuplicateTransaction`` naming that transaction; ``keyed``: its
    answer is stored under that idempotency key with it (``Conflict`` if the key is taken).
    A bare UBL Invoice or CreditNote is first wrapped in an SBD built from it (``_read``),
    with the MLS scopes ``mls`` asks for; its sender must be one of the organisation's
    participants (``Forbidden`` otherwise). ``upload``, the pre-signed URL it came through, is
    spent in the transaction that records it: a refused document leaves it unspent, and of
    two documents put to one URL at once, one is taken (``Forbidden`` for the other)."""
    try:
        return await _accept(ctx, docs, principal, org_id, ap_id, incoming, keyed, mls, upload)
    finally:
        _remove(incoming)


def _remove(incoming: bytes | Path) -> None:
    if isinstance(incoming, Path):
        incoming.unlink(missing_ok=True)


async def _accept(
    ctx: Context,
    docs: Documents,
    principal: Principal,
    org_id: uuid.UUID,
    ap_id: uuid.UUID,
    incoming: bytes | Path,
    keyed: Keyed | None,
    mls: MlsRequest,
    upload: UploadGrant | None,
) -> Transaction:
    # read as any request reads (the caller checked again, uncached, where the transaction
    # is written)
    async with ctx.reads() as uow:
        access = await authorise(uow, principal, org_id, Role.ORGMEMBER)
        aps = (await usable(uow, access.org))[1]
        ap = next((a for a in aps if a.id == ap_id), None)
        certificate = await uow.repository(CERTIFICATES).get(ap.certificate_ref) if ap else None
    if ap is None:
        raise InvalidInput.one("ap", "not an access point this organisation may use (aps/alltouse)")
    envelope, built, incoming = _read(ctx, docs, incoming, mls)
    _check_catalogue(ctx, envelope)
    async with ctx.reads() as uow:
        # the organisation's participant in the access point's environment; else its
        # participant of the other one, which _same_environment refuses with the reason
        here, other = await Participants(uow).in_environment(
            envelope.sender.value, ap.environment, org_id=org_id
        )
    sender = here or other
    if sender is None:
        if built:  # the sender comes from the document: it may not send for this one
            raise Forbidden(
                reason=f"the sender {envelope.sender.value} (AccountingSupplierParty/Party/"
                "EndpointID) is not one of this organisation's participants"
            )
        raise InvalidInput.one(
            "StandardBusinessDocumentHeader/Sender/Identifier",
            f"{envelope.sender.value} is not a participant of this organisation",
        )
    _same_environment(sender, ap)
    # a billing document is checked before anything is stored; fatal errors refuse it unless
    # the organisation chose to send anyway, with the result on the transaction
    result = await docs.validator.validate(incoming)
    if result.errors and access.org.validation is ValidationPolicy.REFUSE:
        raise DocumentInvalid(failed=result.errors)
    tx = Transaction.outbound(
        id=ctx.new_id(),
        org_id=org_id,
        ap=ap,
        document=envelope,
        # the sending access point's seat id; the receiving one's is known once looked up
        sender_sp=certificate.common_name if certificate else "",
        created_ns=ctx.clock_ns(),
    )
    document = NewBlob(
        blob_key(tx.id, ArtefactType.BUSINESS_DOCUMENT),
        ArtefactType.BUSINESS_DOCUMENT,
        "application/xml",
        incoming,
    )
    blobs = [*validation_blobs(docs, tx, result), document]  # the artefacts in this order
    committing = False
    try:
        async with ctx.uow() as uow:
            # the blobs, the transaction by the bulk path and the caller's check (a member's
            # required, not read): all may go out with the next statement (PostgreSQL: with
            # the artefacts and the COMMIT, in one round trip); a document sent already
            # clashes there, or at the commit at the latest, and a membership gone fails it
            artefacts = await store_artefacts(ctx, docs, uow, tx, blobs)
            await uow.repository(TRANSACTIONS).add_many([tx])
            await authorised_still(uow, principal, org_id, Role.ORGMEMBER, ctx.clock())
            if upload is not None:
                await uow.repository(UPLOADS).add(UsedUpload(upload.nonce, tx.created_at))
            await uow.repository(ARTEFACTS).add_many(artefacts)
            if keyed is not None:
                await idempotency.remember(ctx, uow, org_id, keyed, accepted(tx))
            committing = True
            await uow.commit()
    except Conflict:
        await delete_blobs(docs, blobs)
        async with ctx.uow() as uow:
            # the clash may have come before the caller was checked: nothing about it is
            # told to one who may not post here
            await authorise(uow, principal, org_id, Role.ORGMEMBER)
            if upload is not None and await uow.repository(UPLOADS).get(upload.nonce):
                raise _spent() from None
            sent = await Transactions(uow).by_dedup_key(tx.dedup_key)
        if sent is None:  # not the document: the idempotency key clashed
            raise
        raise DuplicateTransaction(
            transaction_id=str(sent.id), doc_instance_id=tx.doc_instance_id
        ) from None
    except BaseException as e:
        # a commit that failed otherwise than by a clash or the caller's membership (checked
        # with it) may have been kept (the connection lost before its answer): its blobs
        # stay, and the sweep removes them if nothing names them
        if not committing or isinstance(e, NotAMember):
            await delete_blobs(docs, blobs)
        raise
    telemetry.transaction_status(tx)
    return tx


def _read(
    ctx: Context, docs: Documents, incoming: bytes | Path, mls: MlsRequest
) -> tuple[Sbdh, bool, bytes | Path]:
    """The envelope of the document ``incoming``, whether it was built here, and the SBD: a
    bare UBL Invoice or CreditNote is replaced by the SBD that wraps it (in the file, for a
    file). ``mls`` is for bare documents only (an SBD's header names its own MLS scopes)."""
    envelopes = docs.envelopes
    envelope: Sbdh | None = None
    if isinstance(incoming, bytes):
        facts, envelope = _read_bytes(envelopes, incoming)
    else:
        facts = envelopes.read_bare_file(incoming)
    if facts is not None:
        built = ubl_envelope(
            facts,
            known_icd=lambda icd: ctx.catalogue.scheme_by_icd(icd) is not None,
            instance_identifier=str(ctx.new_id()),
            created_at=ctx.clock(),
            mls=mls,
        )
        if isinstance(incoming, bytes):
            incoming = envelopes.wrap(built, incoming)
        else:
            wrapped = docs.blobs.incoming()
            try:
                envelopes.wrap_file(built, incoming, wrapped)
                wrapped.replace(incoming)
            finally:
                wrapped.unlink(missing_ok=True)
    if envelope is None:  # not read yet: a file, or the SBD built around a bare document
        if isinstance(incoming, bytes):
            envelope = envelopes.read(incoming)
        else:
            envelope = envelopes.read_file(incoming)
    if facts is None and not mls.empty:
        name = "mlsType" if mls.mls_type is not None else "mlsTo"
        raise InvalidInput.one(
            name, "is for a bare UBL document; an SBD's header names its own MLS scopes"
        )
    return envelope, facts is not None, incoming


_SBD_ROOT = b"StandardBusinessDocument"
_SNIFFED = 2048  # bytes looked at for it: an SBD's root start tag is in them


def _read_bytes(envelopes: Envelopes, data: bytes) -> tuple[UblFacts | None, Sbdh | None]:
    """The facts of the bare UBL document ``data``, or the envelope of the SBD ``data``
    (``_read``'s first step, for bytes). What names an SBD's root near its start is read as
    an SBD at once, sparing the usual document a first parse that only finds it is one;
    ``read_bare`` is asked only when that fails, and the SBD reader's refusal stands when it
    finds no bare UBL document either, as when ``read_bare`` is asked first."""
    if _SBD_ROOT not in data[:_SNIFFED]:
        return envelopes.read_bare(data), None
    try:
        return None, envelopes.read(data)
    except InvalidInput as e:
        refused = e
    facts = envelopes.read_bare(data)
    if facts is None:
        raise refused
    return facts, None


# --- pre-signed uploads ---------------------------------------------------------------------


@attrs.frozen
class UploadGrant:
    nonce: uuid.UUID
    org_id: uuid.UUID
    ap_id: uuid.UUID
    user_id: str | None
    key_id: uuid.UUID | None
    expires_at: float  # seconds since the epoch


async def grant_upload(
    ctx: Context, principal: Principal, org_id: uuid.UUID, ap_id: uuid.UUID
) -> UploadGrant:
    async with ctx.uow() as uow:
        access = await authorise(uow, principal, org_id, Role.ORGMEMBER)
        aps = (await usable(uow, access.org))[1]
    if all(a.id != ap_id for a in aps):
        raise InvalidInput.one("ap", "not an access point this organisation may use (aps/alltouse)")
    return UploadGrant(
        nonce=ctx.new_id(),
        org_id=org_id,
        ap_id=ap_id,
        user_id=principal.user.id if principal.user else None,
        key_id=principal.key.id if principal.key else None,
        expires_at=(ctx.clock() + UPLOAD_VALIDITY).timestamp(),
    )


def _spent() -> Forbidden:
    return Forbidden(reason="the upload URL has been used already")


async def check_upload(ctx: Context, grant: UploadGrant) -> None:
    """Refuse a grant that has expired or was used before (single use); it is spent by
    ``submit`` with the transaction it brings, so a refused document does not spend it."""
    if ctx.clock().timestamp() > grant.expires_at:
        raise Forbidden(reason="the upload URL has expired")
    async with ctx.uow() as uow:
        if await uow.repository(UPLOADS).get(grant.nonce) is not None:
            raise _spent()


async def principal_of(ctx: Context, grant: UploadGrant) -> Principal:
    """Whoever asked for an upload URL, as they are now (a removed user or revoked key fails)."""
    async with ctx.uow() as uow:
        if grant.user_id is not None:
            user = await uow.repository(USERS).get(grant.user_id)
            if user is not None:
                return Principal(user=user)
        elif grant.key_id is not None:
            key = await uow.repository(API_KEYS).get(grant.key_id)
            if key is not None and key.usable_at(ctx.clock()):
                return Principal(key=key)
    raise Forbidden(reason="whoever asked for this upload URL may no longer upload")
