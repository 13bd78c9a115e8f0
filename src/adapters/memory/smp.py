"""An SMP in memory: for embedders and tests that need no SMP of their own.

It is not transactional: a publish made inside a unit of work that later rolls back stays.
Use the built-in SMP (``adapters.smp.registrar``) where that matters.
"""

from __future__ import annotations

import uuid

from fourcorner.application.repositories import Smps
from fourcorner.application.storage import UnitOfWork
from fourcorner.domain.network_services import Environment
from fourcorner.domain.smp import SmpRegistration


class InMemorySmpRegistrar:
    """Registrations keyed by (SMP, participant): the same identifier may be registered in
    the SMP of each environment."""

    def __init__(self) -> None:
        self.registrations: dict[tuple[uuid.UUID, str], SmpRegistration] = {}

    async def publish(self, uow: UnitOfWork, registration: SmpRegistration) -> None:
        key = (registration.smp_id, registration.participant.lower())
        self.registrations[key] = registration

    async def unpublish(self, uow: UnitOfWork, smp_id: uuid.UUID, participant: str) -> None:
        self.registrations.pop((smp_id, participant.lower()), None)

    async def lookup(
        self, uow: UnitOfWork, environment: Environment, participant: str
    ) -> SmpRegistration | None:
        for smp in await Smps(uow).of_environment(environment):
            found = self.registrations.get((smp.id, participant.lower()))
            if found is not None:
                return found
        return None


class InMemoryDirectory:
    """Records which participants were sent for indexing, and when."""

    def __init__(self) -> None:
        self.published: list[str] = []

    async def publish(self, participant: str) -> None:
        self.published.append(participant.lower())
