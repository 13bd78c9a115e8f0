"""Secrets stored in records, sealed at rest and bound to the record and field that hold them.

A certificate's private key and a webhook's signing secret are sealed with the context
``<collection>/<record id>/<field>`` (``KeySealer``'s associated data), so a sealed value
copied into another record, or another field, does not open there; what needed it refuses
with ``SecretUnusable`` saying why, instead of failing obscurely.

Values sealed before this binding (v1) still open; ``reseal_all`` seals them again, bound,
and runs at start (``fourcorner serve`` and ``fourcorner migrate``) as a data migration.
"""

from __future__ import annotations

import logging
import uuid
from typing import Any, Generic, TypeVar

import attrs

from fourcorner.application.collections import CERTIFICATES, WEBHOOKS
from fourcorner.application.context import Context
from fourcorner.application.ports import KeySealer
from fourcorner.application.storage import Collection, Cursor, Query
from fourcorner.domain.certificates import Certificate
from fourcorner.domain.errors import SecretUnusable
from fourcorner.domain.webhook import Webhook

log = logging.getLogger("fourcorner.sealed")

R = TypeVar("R", Certificate, Webhook)


@attrs.frozen
class SealedField(Generic[R]):
    """One record field that holds a sealed secret."""

    collection: Collection[R]
    attribute: str  # the record's attribute, e.g. "sealed_key"
    resource: str  # "certificate"
    secret: str  # "private key"

    def context(self, ident: uuid.UUID) -> bytes:
        return f"{self.collection.name}/{ident}/{self.attribute}".encode()

    def seal(self, sealer: KeySealer, ident: uuid.UUID, plaintext: str) -> str:
        """``plaintext`` sealed for the field of record ``ident`` (a record not stored yet may
        be sealed for: its id is chosen first)."""
        return sealer.seal(plaintext.encode(), context=self.context(ident))

    def open(self, sealer: KeySealer, record: R, user: str = "") -> str:
        """The secret of ``record``; ``SecretUnusable`` naming ``user`` (what cannot be used;
        the record itself by default) when it does not open there."""
        sealed: str = getattr(record, self.attribute)
        try:
            plaintext = sealer.open(sealed, context=self.context(record.id)).decode()
        except UnicodeDecodeError:
            reason = "it is not text"
        except ValueError as e:
            reason = str(e)
        else:
            if plaintext.strip():
                return plaintext
            reason = "it is empty: none was stored"  # a certificate registered without its key
        raise SecretUnusable(
            user=user or f"{self.resource} {record.id}",
            secret=f"the {self.secret} of {self.resource} {record.id}",
            reason=reason,
        )

    def reseal(self, sealer: KeySealer, record: R) -> R | None:
        """``record`` with its secret sealed again, bound, when it was sealed before binding
        existed; None when it is current already. ``SecretUnusable`` when it does not open."""
        if sealer.is_current(getattr(record, self.attribute)):
            return None
        plaintext = self.open(sealer, record)
        changes: dict[str, Any] = {self.attribute: self.seal(sealer, record.id, plaintext)}
        return attrs.evolve(record, **changes)


CERTIFICATE_KEY: SealedField[Certificate] = SealedField(
    CERTIFICATES, "sealed_key", "certificate", "private key"
)
WEBHOOK_SECRET: SealedField[Webhook] = SealedField(
    WEBHOOKS, "sealed_secret", "webhook", "signing secret"
)
FIELDS: tuple[SealedField[Any], ...] = (CERTIFICATE_KEY, WEBHOOK_SECRET)

PAGE = 200


async def reseal_all(ctx: Context, sealer: KeySealer) -> int:
    """Seal every secret stored before binding existed again, bound to its record; returns how
    many. Idempotent and safe beside other processes doing the same: each record is locked,
    read again and written back in a unit of work of its own. A secret that does not open is
    logged and left as it is (what needs it refuses with ``SecretUnusable``)."""
    done = 0
    for field in FIELDS:
        query = Query(limit=PAGE)
        while True:
            async with ctx.uow() as uow:
                page = await uow.repository(field.collection).list(query)
            for record in page.items:
                if sealer.is_current(getattr(record, field.attribute)):
                    continue
                done += await _reseal_one(ctx, sealer, field, record.id)
            if page.next_cursor is None:
                break
            query = attrs.evolve(query, after=Cursor.decode(page.next_cursor))
    if done:
        log.info("secrets sealed again, bound to their records", extra={"resealed": done})
    return done


async def _reseal_one(
    ctx: Context, sealer: KeySealer, field: SealedField[Any], ident: uuid.UUID
) -> int:
    async with ctx.uow() as uow:
        repo = uow.repository(field.collection)
        record = await repo.lock(ident)
        if record is None:
            return 0
        try:
            updated = field.reseal(sealer, record)
        except SecretUnusable as e:
            log.error("a stored secret does not open", extra={"problem": e.message()})
            return 0
        if updated is None:
            return 0
        await repo.update(updated)
        await uow.commit()
    return 1
