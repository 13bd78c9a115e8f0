"""The built-in SMP's registrar: registrations live in the service's own storage, written in
the unit of work of the change they publish, so SMP and database never disagree."""

from __future__ import annotations

import uuid

from fourcorner.application.collections import SMP_REGISTRATIONS
from fourcorner.application.storage import UnitOfWork
from fourcorner.domain.smp import SmpRegistration


class StoredSmpRegistrar:
    async def publish(self, uow: UnitOfWork, registration: SmpRegistration) -> None:
        repo = uow.repository(SMP_REGISTRATIONS)
        if await repo.get(registration.id) is None:
            await repo.add(registration)
        else:
            await repo.update(registration)

    async def unpublish(self, uow: UnitOfWork, smp_id: uuid.UUID, participant: str) -> None:
        await uow.repository(SMP_REGISTRATIONS).remove(SmpRegistration.id_for(smp_id, participant))

    async def lookup(self, uow: UnitOfWork, participant: str) -> SmpRegistration | None:
        return await uow.repository(SMP_REGISTRATIONS).first(participant=participant.lower())
