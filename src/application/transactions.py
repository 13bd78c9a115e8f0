"""Use cases of transactions: the documents' storage keys, and reading transactions and
their artefacts. Taking a document in to send is ``application.intake``."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from pathlib import Path

import attrs

from fourcorner.application.access import Principal, authorise
from fourcorner.application.collections import (
    ARTEFACTS,
    TRANSACTIONS,
)
from fourcorner.application.context import Context
from fourcorner.application.listing import ListRequest, build_query, select
from fourcorner.application.ports import BlobStore, DocumentValidator, Envelopes, EventPayloads
from fourcorner.application.repositories import Artefacts, Transactions
from fourcorner.application.scoped import InOrg, list_in_org, owned
from fourcorner.application.storage import Page, UnitOfWork
from fourcorner.domain.errors import (
    NotFound,
)
from fourcorner.domain.roles import Role
from fourcorner.domain.transaction import (
    Artefact,
    ArtefactType,
    Direction,
    Kind,
    Status,
    Transaction,
)


@attrs.frozen
class Documents:
    """The ports of document intake: where files go, how envelopes are read, and how
    business documents are checked against the published rules."""

    blobs: BlobStore
    envelopes: Envelopes
    max_bytes: int
    validator: DocumentValidator
    payloads: EventPayloads  # how records read outside the interface (events, summaries)


def blob_key(transaction_id: uuid.UUID, kind: ArtefactType) -> str:
    """The key of a transaction's blob. Every blob key begins with the 32 hex digits of the
    transaction it belongs to and a dash (``transaction_of``): the blob sweep relies on it."""
    return f"{transaction_id.hex}-{kind.value.lower()}"


@attrs.frozen
class NewBlob:
    """A blob to store with a transaction (bytes, or an ``incoming`` file to adopt), and what
    the artefact naming it says."""

    key: str
    kind: ArtefactType
    content_type: str
    source: bytes | Path


async def store_artefacts(
    ctx: Context, docs: Documents, uow: UnitOfWork, tx: Transaction, blobs: Sequence[NewBlob]
) -> list[Artefact]:
    """Store ``blobs`` together with the unit of work ``uow`` that records ``tx``
    (``BlobStore.put_all_in``: in its transaction where the store can, so durable with its
    commit, or at once, at the cost of one folder sync or one database commit for all of them)
    and return the artefacts naming them, in order, for the caller to add in ``uow`` (the
    blobs are removed by the caller, or the sweep, when that fails). Called before ``uow``
    writes: a large blob stored meanwhile holds nothing of its transaction."""
    sizes = await docs.blobs.put_all_in(uow, [(blob.key, blob.source) for blob in blobs])
    return [
        Artefact(
            ctx.new_id(),
            tx.id,
            tx.org_id,
            blob.kind,
            blob.content_type,
            size,
            blob.key,
            tx.created_at,
        )
        for blob, size in zip(blobs, sizes, strict=True)
    ]


async def delete_blobs(docs: Documents, blobs: Sequence[NewBlob]) -> None:
    """Undo ``store_artefacts``: the blobs removed (those never written are no matter)."""
    for blob in blobs:
        await docs.blobs.delete(blob.key)


def message_key(transaction_id: uuid.UUID) -> str:
    """The AS4 message the sending worker keeps between the attempts of a send."""
    return f"{transaction_id.hex}-as4-message"


def working_keys(tx: Transaction) -> tuple[str, ...]:
    """The blobs that sending ``tx`` keeps until it is finished: the AS4 message and, for a
    message level status, its document. No artefact names them."""
    keys = (message_key(tx.id),)
    return (*keys, blob_key(tx.id, ArtefactType.MLS)) if tx.kind is Kind.MLS else keys


def transaction_of(key: str) -> uuid.UUID | None:
    """The transaction a blob key belongs to; None for a key this service does not make."""
    if len(key) < 34 or key[32] != "-":
        return None
    try:
        return uuid.UUID(hex=key[:32])
    except ValueError:
        return None


async def blobs_in_use(uow: UnitOfWork, ids: Sequence[uuid.UUID]) -> set[str]:
    """The keys of the blobs transactions ``ids`` use: those their artefacts name, and the
    ``working_keys`` of those still to be sent."""
    used: set[str] = set()
    if not ids:
        return used
    for tx in await Transactions(uow).with_ids(ids):
        if tx.transaction_status in (Status.UNPROCESSED, Status.PROCESSING):
            used.update(working_keys(tx))
    for artefact in await Artefacts(uow).of_transactions(ids):
        used.add(artefact.blob)
    return used


# --- reading --------------------------------------------------------------------------------


async def list_transactions(
    ctx: Context,
    principal: Principal,
    org_id: uuid.UUID,
    direction: Direction,
    request: ListRequest,
) -> Page[Transaction]:
    scope = Transactions.documents(direction)
    return await list_in_org(
        ctx, principal, org_id, TRANSACTIONS, request, Role.ORGMEMBER, scope=scope
    )


get = InOrg(TRANSACTIONS, "transaction", Role.ORGMEMBER).get


async def artefacts(
    ctx: Context, principal: Principal, org_id: uuid.UUID, ident: uuid.UUID
) -> list[Artefact]:
    async with ctx.reads() as uow:
        await authorise(uow, principal, org_id, Role.ORGMEMBER)
        await owned(uow, TRANSACTIONS, org_id, ident, "transaction")
        return await Artefacts(uow).of_transaction(ident)


async def list_artefacts(
    ctx: Context, principal: Principal, org_id: uuid.UUID, ident: uuid.UUID, request: ListRequest
) -> Page[Artefact]:
    """A page of the transaction's artefacts: a list like any other (``request``)."""
    query = build_query(ARTEFACTS, request, owner=ident)
    return select(ARTEFACTS, await artefacts(ctx, principal, org_id, ident), query)


async def artefact(
    ctx: Context,
    principal: Principal,
    org_id: uuid.UUID,
    ident: uuid.UUID,
    artefact_id: uuid.UUID | None = None,
    kind: ArtefactType | None = None,
) -> Artefact:
    for a in await artefacts(ctx, principal, org_id, ident):
        if a.id == artefact_id or (artefact_id is None and a.type is kind):
            return a
    raise NotFound(resource="artefact", ident=str(artefact_id or kind))
