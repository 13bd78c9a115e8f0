"""The built-in SMP's registrar: registrations live in the service's own storage, written in
the unit of work of the change they publish, so SMP and database never disagree."""

from __future__ import annotations

import uuid

from fourcorner.application.repositories import SmpRegistrations
from fourcorner.application.storage import UnitOfWork
from fourcorner.domain.smp import SmpRegistration


class StoredSmpRegistrar:
    async def publish(self, uow: UnitOfWork, registration: SmpRegistration) -> None:
        repo = SmpRegistrations(uow)
        if await repo.get(registration.id) is None:
            await repo.add(registration)
        else:
            await repo.update(registration)

    async def unpublish(self, uow: UnitOfWork, smp_id: uuid.UUID, participant: str) -> None:
        await SmpRegistrations(uow).remove(SmpRegistration.id_for(smp_id, participant))

    async def lookup(self, uow: UnitOfWork, participant: str) -> SmpRegistration | None:
        return await SmpRegistrations(uow).of_participant(participant)
