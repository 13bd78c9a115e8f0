"""Idempotent requests: the answer stored under an organisation's ``Idempotency-Key``.

A use case that takes a key stores its answer with ``remember`` in the unit of work of the
change it answers for, so the answer exists exactly when the change does, and (the key being
UNIQUE per organisation) two requests with one key make one change: the loser's commit clashes
and it answers what ``replay`` finds. Keys live 24 hours (``domain.idempotency``); the webhook
worker purges older ones when it purges events.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from datetime import datetime
from typing import Any

import attrs

from fourcorner.application.access import Principal, authorise
from fourcorner.application.context import Context
from fourcorner.application.repositories import IdempotencyKeys
from fourcorner.application.storage import UnitOfWork
from fourcorner.domain.errors import IdempotencyKeyReused
from fourcorner.domain.idempotency import KEY_LIFETIME, IdempotencyKey
from fourcorner.domain.roles import Role


@attrs.frozen
class Keyed:
    """A request made with an idempotency key: the key, and the digest of what makes it the
    same request (for a document: the access point and the document's bytes)."""

    key: str
    digest: str

    @classmethod
    def of(cls, key: str, *parts: bytes) -> Keyed:
        h = hashlib.sha256()
        for part in parts:
            h.update(hashlib.sha256(part).digest())
        return cls(key, h.hexdigest())


@attrs.frozen
class Answer:
    status: int
    body: dict[str, Any]


async def replay(
    ctx: Context, principal: Principal, org_id: uuid.UUID, request: Keyed, role: Role
) -> Answer | None:
    """The answer stored for ``request``'s key in ``org_id`` (for a caller holding ``role``
    there); None when the key is new or expired; ``IdempotencyKeyReused`` when it was used
    for another request."""
    async with ctx.reads() as uow:
        await authorise(uow, principal, org_id, role)
        found = await IdempotencyKeys(uow).find(org_id, request.key)
    if found is None or not found.live_at(ctx.clock()):
        return None
    if found.request_digest != request.digest:
        raise IdempotencyKeyReused()
    return Answer(found.status, json.loads(found.answer))


async def remember(
    ctx: Context, uow: UnitOfWork, org_id: uuid.UUID, request: Keyed, answer: Answer
) -> None:
    """Store ``answer`` under ``request``'s key, in the caller's unit of work (an expired
    record of the key gives way); ``Conflict`` when a live one exists."""
    keys = IdempotencyKeys(uow)
    now = ctx.clock()
    old = await keys.find(org_id, request.key)
    if old is not None and not old.live_at(now):
        await keys.remove(old.id)
    await keys.add(
        IdempotencyKey(
            id=ctx.new_id(),
            org_id=org_id,
            key=request.key,
            request_digest=request.digest,
            status=answer.status,
            answer=json.dumps(answer.body, separators=(",", ":")),
            created_at=now,
        )
    )


async def purge(ctx: Context, *, now: datetime | None = None, batch: int = 500) -> int:
    """Delete keys older than their lifetime (24 hours)."""
    cutoff = (now or ctx.clock()) - KEY_LIFETIME
    removed = 0
    while True:
        async with ctx.uow() as uow:
            keys = IdempotencyKeys(uow)
            found = await keys.claim_created_by(cutoff, batch)
            for k in found:
                await keys.remove(k.id)
            await uow.commit()
        removed += len(found)
        if len(found) < batch:
            return removed
