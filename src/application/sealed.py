"""Secrets stored in records, sealed at rest and bound to the record and field that hold them.

A certificate's private key, a webhook's signing secret and a pending SML migration key are
sealed with the context ``<collection>/<record id>/<field>`` (``KeySealer``'s associated data),
so a sealed value copied into another record, or another field, does not open there; what
needed it refuses with ``SecretUnusable`` saying why, instead of failing obscurely. ``FIELDS``
names every field that holds one.

``reseal_all`` seals stored secrets again, each record locked and read again in the unit of
work that rewrites it. At start (``fourcorner serve`` and ``fourcorner migrate``) it is a data
migration: values sealed before this binding (v1) are sealed again, bound, when the current key
opens them. With ``rotate`` (``fourcorner reseal``) it also seals again under the current key
what only the previous one opens, once every process has both keys (a process still without
the new key could not open them).
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import AsyncIterator
from typing import Any, Generic, Literal, TypeVar

import attrs

from fourcorner.application.collections import CERTIFICATES, LOCATOR_TASKS, WEBHOOKS
from fourcorner.application.context import Context
from fourcorner.application.ports import KeySealer
from fourcorner.application.storage import Collection, Cursor, Query
from fourcorner.domain.certificates import Certificate
from fourcorner.domain.errors import SecretUnusable
from fourcorner.domain.sml import LocatorTask
from fourcorner.domain.webhook import Webhook

log = logging.getLogger("fourcorner.sealed")

R = TypeVar("R", Certificate, Webhook, LocatorTask)


@attrs.frozen
class SealedField(Generic[R]):
    """One record field that holds a sealed secret (an empty one holds none)."""

    collection: Collection[R]
    attribute: str  # the record's attribute, e.g. "sealed_key"
    resource: str  # "certificate"
    secret: str  # "private key"

    def context(self, ident: uuid.UUID) -> bytes:
        return f"{self.collection.name}/{ident}/{self.attribute}".encode()

    def name(self, ident: uuid.UUID) -> str:
        """``the private key of certificate <id>``."""
        return f"the {self.secret} of {self.resource} {ident}"

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
        raise self._unusable(record, reason, user)

    def key_of(self, sealer: KeySealer, record: R) -> Literal["current", "previous"]:
        """Which at-rest key opens the secret of ``record`` (``KeySealer.key_of``);
        ``SecretUnusable`` when neither does."""
        try:
            return sealer.key_of(getattr(record, self.attribute), context=self.context(record.id))
        except ValueError as e:
            raise self._unusable(record, str(e)) from None

    def due(self, sealer: KeySealer, record: R, *, rotate: bool = False) -> bool:
        """Whether the secret of ``record`` is to be sealed again: a v1 value the current key
        opens; with ``rotate``, also any value only the previous key opens. ``SecretUnusable``
        when it is to be looked at and does not open (a v2 value is not looked at without
        ``rotate``); False when the record holds none."""
        sealed: str = getattr(record, self.attribute)
        if not sealed or (sealer.is_current(sealed) and not rotate):
            return False
        key = self.key_of(sealer, record)
        return key == "previous" or not sealer.is_current(sealed) if rotate else key == "current"

    def reseal(self, sealer: KeySealer, record: R, *, rotate: bool = False) -> R | None:
        """``record`` with its secret sealed again, bound, under the current key, when it is
        ``due``; None when it is not. ``SecretUnusable`` when it does not open."""
        if not self.due(sealer, record, rotate=rotate):
            return None
        plaintext = sealer.open(getattr(record, self.attribute), context=self.context(record.id))
        sealed = sealer.seal(plaintext, context=self.context(record.id))
        changes: dict[str, Any] = {self.attribute: sealed}
        return attrs.evolve(record, **changes)

    def _unusable(self, record: R, reason: str, user: str = "") -> SecretUnusable:
        return SecretUnusable(
            user=user or f"{self.resource} {record.id}", secret=self.name(record.id), reason=reason
        )


CERTIFICATE_KEY: SealedField[Certificate] = SealedField(
    CERTIFICATES, "sealed_key", "certificate", "private key"
)
WEBHOOK_SECRET: SealedField[Webhook] = SealedField(
    WEBHOOKS, "sealed_secret", "webhook", "signing secret"
)
SML_MIGRATION_KEY: SealedField[LocatorTask] = SealedField(
    LOCATOR_TASKS, "sealed_key", "SML task", "migration key"
)
# every field that holds a sealed secret (tests/unit/test_sealed_fields.py finds them all)
FIELDS: tuple[SealedField[Any], ...] = (CERTIFICATE_KEY, WEBHOOK_SECRET, SML_MIGRATION_KEY)

PAGE = 200


@attrs.frozen
class Resealed:
    """What ``reseal_all`` did: how many secrets it sealed again, and which it could not open
    (``SecretUnusable.message``-like lines: the secret and why), left as they were."""

    resealed: int = 0
    unopened: tuple[str, ...] = ()


async def reseal_all(
    ctx: Context, sealer: KeySealer, *, rotate: bool = False, batch: int = PAGE
) -> Resealed:
    """Seal again every stored secret that is ``due`` (``SealedField.due``), ``batch`` records
    at a time, each batch in a unit of work of its own that locks its records and reads them
    again before it writes them (what another process changed meanwhile is decided on anew,
    never overwritten with what was read before). Idempotent, and safe beside other processes
    doing the same or changing the records. A secret that does not open is logged and left as
    it is (what needs it refuses with ``SecretUnusable``)."""
    done, unopened = 0, list[str]()
    for field in FIELDS:
        async for records in _pages(ctx, field, batch):
            due = [r.id for r in records if _due(field, sealer, r, rotate, unopened)]
            if due:
                done += await _reseal_batch(ctx, sealer, field, due, rotate, unopened)
    if done:
        log.info("secrets sealed again under the current key", extra={"resealed": done})
    return Resealed(done, tuple(unopened))


async def first_sealed(ctx: Context) -> str | None:
    """The name of a stored secret (``SealedField.name``), the first found; None when the
    database holds none (every record's field empty)."""
    for field in FIELDS:
        async for records in _pages(ctx, field, PAGE):
            for record in records:
                if getattr(record, field.attribute):
                    return field.name(record.id)
    return None


async def _pages(ctx: Context, field: SealedField[Any], batch: int) -> AsyncIterator[list[Any]]:
    """The records of ``field``'s collection, ``batch`` at a time, each page read in a unit
    of work of its own."""
    query = Query(limit=batch)
    while True:
        async with ctx.uow() as uow:
            page = await uow.repository(field.collection).list(query)
        yield list(page.items)
        if page.next_cursor is None:
            return
        query = attrs.evolve(query, after=Cursor.decode(page.next_cursor))


def _due(
    field: SealedField[Any], sealer: KeySealer, record: Any, rotate: bool, unopened: list[str]
) -> bool:
    try:
        return field.due(sealer, record, rotate=rotate)
    except SecretUnusable as e:
        _note(e, unopened)
        return False


def _note(error: SecretUnusable, unopened: list[str]) -> None:
    log.error("a stored secret does not open", extra={"problem": error.message()})
    unopened.append(f"{error.secret} ({error.reason})")


async def _reseal_batch(
    ctx: Context,
    sealer: KeySealer,
    field: SealedField[Any],
    idents: list[uuid.UUID],
    rotate: bool,
    unopened: list[str],
) -> int:
    async with ctx.uow() as uow:
        repo = uow.repository(field.collection)
        before, after = [], []
        for record in await repo.lock_many(idents):  # as they are now, held until the commit
            try:
                resealed = field.reseal(sealer, record, rotate=rotate)
            except SecretUnusable as e:  # changed meanwhile to one that does not open
                _note(e, unopened)
                continue
            if resealed is not None:
                before.append(record)
                after.append(resealed)
        if not after:
            return 0
        await repo.update_many(after, before=before)
        await uow.commit()
    return len(after)
