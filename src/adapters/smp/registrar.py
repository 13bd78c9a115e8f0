"""The built-in SMP's registrar: registrations live in the service's own storage, written in
the unit of work of the change they publish, so SMP and database never disagree."""

from __future__ import annotations

import uuid

from fourcorner.application.repositories import SmpRegistrations, Smps
from fourcorner.application.storage import UnitOfWork
from fourcorner.domain.network_services import Environment
from fourcorner.domain.smp import SmpRegistration


class StoredSmpRegistrar:
    async def publish(self, uow: UnitOfWork, registration: SmpRegistration) -> None:
        """Add or replace the registration. The caller holds its participant (locked, or
        added in this unit of work), as every change of a participant's entry does: no
        other unit of work adds or removes the entry between the read and the write."""
        repo = SmpRegistrations(uow)
        if await repo.get(registration.id) is None:
            await repo.add(registration)
        else:
            await repo.update(registration)

    async def unpublish(self, uow: UnitOfWork, smp_id: uuid.UUID, participant: str) -> None:
        await SmpRegistrations(uow).remove(SmpRegistration.id_for(smp_id, participant))

    async def lookup(
        self, uow: UnitOfWork, environment: Environment, participant: str
    ) -> SmpRegistration | None:
        smps = [smp.id for smp in await Smps(uow).of_environment(environment)]
        return await SmpRegistrations(uow).of_participant_in(participant, smps)
