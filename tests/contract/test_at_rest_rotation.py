"""Rotating the at-rest key (``application.sealed.reseal_all`` with ``rotate``, what
``fourcorner reseal`` runs), on each storage adapter.

Secrets sealed under the previous key open while it is configured; the reseal seals every one
again under the current key, after which the previous key can be dropped and everything still
opens; a second reseal does nothing; a secret neither key opens is counted and left as it is;
a record changed while the reseal runs keeps its change (the batch locks and reads again).
"""

from __future__ import annotations

import asyncio
import random
import uuid
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import attrs
import pytest

from fourcorner.adapters.pki.sealing import KeySealer
from fourcorner.application.context import Context
from fourcorner.application.sealed import (
    CERTIFICATE_KEY,
    FIELDS,
    SML_MIGRATION_KEY,
    WEBHOOK_SECRET,
    Resealed,
    SealedField,
    reseal_all,
)
from fourcorner.application.storage import UnitOfWork
from records import T0, certificate, context, locator_task, webhook

OLD, NEW, OTHER = bytes(range(32)), bytes(range(1, 33)), bytes(range(2, 34))


MAKE: tuple[tuple[SealedField[Any], Callable[[uuid.UUID, str], Any]], ...] = (
    (CERTIFICATE_KEY, certificate),
    (WEBHOOK_SECRET, webhook),
    (SML_MIGRATION_KEY, locator_task),
)


def test_every_sealed_field_is_stored_here() -> None:
    assert [field for field, _ in MAKE] == list(FIELDS)


FIELD = {field.collection.name: field for field in FIELDS}
# secrets by the name of their field's collection and record id
Secrets = dict[tuple[str, uuid.UUID], str]


async def store_secrets(ctx: Context, sealer: KeySealer, each: int) -> Secrets:
    """``each`` records of every sealed field, their secrets sealed by ``sealer``; returns the
    secrets by field and record."""
    secrets: Secrets = {}
    async with ctx.uow() as uow:
        for field, make in MAKE:
            for _ in range(each):
                ident = uuid.uuid4()
                plaintext = f"secret {ident}"
                await uow.repository(field.collection).add(
                    make(ident, field.seal(sealer, ident, plaintext))
                )
                secrets[field.collection.name, ident] = plaintext
        await uow.commit()
    return secrets


async def stored(ctx: Context, field: SealedField[Any] | str, ident: uuid.UUID) -> Any:
    field = FIELD[field] if isinstance(field, str) else field
    async with ctx.uow() as uow:
        return await uow.repository(field.collection).get(ident)


async def opened(ctx: Context, sealer: KeySealer, secrets: Secrets) -> Secrets:
    """The stored secrets as ``sealer`` opens them (``SecretUnusable`` when one does not)."""
    return {
        (name, ident): FIELD[name].open(sealer, await stored(ctx, name, ident))
        for name, ident in secrets
    }


async def sealed_values(ctx: Context, secrets: Secrets) -> list[str]:
    return [getattr(await stored(ctx, n, i), FIELD[n].attribute) for n, i in secrets]


async def test_reseal_moves_every_secret_to_the_new_key(store: Any) -> None:
    ctx = context(store.storage, lambda: T0)
    secrets = await store_secrets(ctx, KeySealer(OLD), 5)
    async with ctx.uow() as uow:  # a task without a key holds no secret
        await uow.repository(SML_MIGRATION_KEY.collection).add(locator_task(uuid.uuid4(), ""))
        await uow.commit()
    rotating = KeySealer(NEW, previous=OLD)
    assert await opened(ctx, rotating, secrets) == secrets  # the previous key opens them
    with pytest.raises(Exception, match="sealed under another at-rest key"):
        await opened(ctx, KeySealer(NEW), secrets)

    done = await reseal_all(ctx, rotating, rotate=True, batch=2)
    assert done == Resealed(len(secrets), ())
    # the previous key dropped: everything still opens, with the new key alone
    assert await opened(ctx, KeySealer(NEW), secrets) == secrets
    with pytest.raises(Exception, match="sealed under another at-rest key"):
        await opened(ctx, KeySealer(OLD), secrets)

    before = await sealed_values(ctx, secrets)
    assert await reseal_all(ctx, rotating, rotate=True, batch=2) == Resealed()
    assert await reseal_all(ctx, KeySealer(NEW), rotate=True) == Resealed()
    assert await sealed_values(ctx, secrets) == before  # nothing written again


async def test_a_secret_neither_key_opens_is_counted_and_left(store: Any) -> None:
    ctx = context(store.storage, lambda: T0)
    secrets = await store_secrets(ctx, KeySealer(OLD), 2)
    lost = await store_secrets(ctx, KeySealer(OTHER), 1)
    kept = await sealed_values(ctx, lost)

    done = await reseal_all(ctx, KeySealer(NEW, previous=OLD), rotate=True)
    assert done.resealed == len(secrets)
    assert len(done.unopened) == len(lost)
    for name, ident in lost:
        field = FIELD[name]
        (line,) = [u for u in done.unopened if str(ident) in u]
        assert line.startswith(f"the {field.secret} of {field.resource} {ident}")
        assert "sealed under another at-rest key" in line
    assert await sealed_values(ctx, lost) == kept
    assert await opened(ctx, KeySealer(NEW), secrets) == secrets
    assert await opened(ctx, KeySealer(OTHER), lost) == lost


async def test_the_start_migration_leaves_the_previous_keys_secrets(store: Any) -> None:
    """At start a process seals again only what its current key opens (v1 values): one not
    restarted yet with the new key could not open what it moved to the new key."""
    ctx = context(store.storage, lambda: T0)
    secrets = await store_secrets(ctx, KeySealer(OLD), 2)
    before = await sealed_values(ctx, secrets)
    assert await reseal_all(ctx, KeySealer(NEW, previous=OLD)) == Resealed()
    assert await sealed_values(ctx, secrets) == before


class Interleaved:
    """Units of work of ``ctx`` that run ``meanwhile`` once, just before the ``at``-th one is
    opened: another process's change between the reseal's read of a page and its batch."""

    def __init__(self, ctx: Context, at: int, meanwhile: Callable[[], Any]) -> None:
        self._uow, self._at, self._meanwhile, self._opened = ctx.uow, at, meanwhile, 0
        self.ctx = attrs.evolve(ctx, uow=self.uow)

    @asynccontextmanager
    async def uow(self) -> AsyncIterator[UnitOfWork]:
        self._opened += 1
        if self._opened == self._at:
            await self._meanwhile()
        async with self._uow() as uow:
            yield uow


async def update(ctx: Context, field: SealedField[Any], ident: uuid.UUID, **changes: Any) -> None:
    """What a request changing the record does: lock it, change it, commit."""
    async with ctx.uow() as uow:
        repo = uow.repository(field.collection)
        await repo.update(attrs.evolve(await repo.lock(ident), **changes))
        await uow.commit()


async def test_a_record_changed_between_read_and_batch_keeps_its_change(store: Any) -> None:
    ctx = context(store.storage, lambda: T0)
    rotating = KeySealer(NEW, previous=OLD)
    secrets = await store_secrets(ctx, KeySealer(OLD), 1)
    cert_field, hook_field = CERTIFICATE_KEY, WEBHOOK_SECRET
    [cert_id] = [i for n, i in secrets if n == cert_field.collection.name]
    [hook_id] = [i for n, i in secrets if n == hook_field.collection.name]

    async def certificate_renamed() -> None:
        await update(ctx, cert_field, cert_id, name="renamed")

    # unit of work 1 lists the certificates, 2 is their batch
    interleaved = Interleaved(ctx, 2, certificate_renamed)
    assert (await reseal_all(interleaved.ctx, rotating, rotate=True)).resealed == len(secrets)
    cert = await stored(ctx, cert_field, cert_id)
    assert cert.name == "renamed"
    assert (
        CERTIFICATE_KEY.open(KeySealer(NEW), cert) == secrets[cert_field.collection.name, cert_id]
    )

    # a webhook given a new secret meanwhile (sealed under the new key) keeps it
    await update(
        ctx, hook_field, hook_id, sealed_secret=WEBHOOK_SECRET.seal(KeySealer(OLD), hook_id, "old")
    )

    async def secret_replaced() -> None:
        sealed = WEBHOOK_SECRET.seal(rotating, hook_id, "whsec_new")
        await update(ctx, hook_field, hook_id, url="https://new.example.com/", sealed_secret=sealed)

    # 1 lists the certificates (current now), 2 the webhooks, 3 is the webhooks' batch
    interleaved = Interleaved(ctx, 3, secret_replaced)
    assert (await reseal_all(interleaved.ctx, rotating, rotate=True)).resealed == 0
    hook = await stored(ctx, hook_field, hook_id)
    assert hook.url == "https://new.example.com/"
    assert WEBHOOK_SECRET.open(KeySealer(NEW), hook) == "whsec_new"


@pytest.mark.postgres
@pytest.mark.parametrize("round_", range(3))
async def test_reseal_racing_updates_loses_none(open_storage: Any, round_: int) -> None:
    """The reseal beside requests that change webhooks and certificates at the same time, on
    separate connections: every change is kept, and every secret ends under the new key."""
    subject = await open_storage("postgres")
    try:
        ctx = context(subject.storage, lambda: T0)
        rotating = KeySealer(NEW, previous=OLD)
        secrets = await store_secrets(ctx, KeySealer(OLD), 12)
        rng = random.Random(round_)
        changed = [k for k in secrets if k[0] != SML_MIGRATION_KEY.collection.name]
        rng.shuffle(changed)
        expected = dict(secrets)

        async def change(name: str, ident: uuid.UUID, n: int) -> None:
            field = FIELD[name]
            await asyncio.sleep(rng.random() / 50)
            if n % 2:  # a new secret, sealed under the current key
                expected[name, ident] = f"new secret {n}"
                new = field.seal(rotating, ident, expected[name, ident])
                await update(ctx, field, ident, **{field.attribute: new, "description": f"{n}"})
            else:  # another field only
                await update(ctx, field, ident, description=f"{n}")

        await asyncio.gather(
            reseal_all(ctx, rotating, rotate=True, batch=3),
            *(change(f, i, n) for n, (f, i) in enumerate(changed)),
        )
        for n, (name, ident) in enumerate(changed):
            assert (await stored(ctx, name, ident)).description == f"{n}"
        assert await reseal_all(ctx, rotating, rotate=True, batch=3) == Resealed()
        assert await opened(ctx, KeySealer(NEW), secrets) == expected
    finally:
        await subject.close()
