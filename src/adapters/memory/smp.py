"""An SMP in memory: for embedders and tests that need no SMP of their own.

It is not transactional: a publish made inside a unit of work that later rolls back stays.
Use the built-in SMP (``adapters.smp.registrar``) where that matters.
"""

from __future__ import annotations

import uuid

from fourcorner.application.storage import UnitOfWork
from fourcorner.domain.smp import SmpRegistration


class InMemorySmpRegistrar:
    def __init__(self) -> None:
        self.registrations: dict[str, SmpRegistration] = {}

    async def publish(self, uow: UnitOfWork, registration: SmpRegistration) -> None:
        self.registrations[registration.participant.lower()] = registration

    async def unpublish(self, uow: UnitOfWork, smp_id: uuid.UUID, participant: str) -> None:
        found = self.registrations.get(participant.lower())
        if found is not None and found.smp_id == smp_id:
            del self.registrations[participant.lower()]

    async def lookup(self, uow: UnitOfWork, participant: str) -> SmpRegistration | None:
        return self.registrations.get(participant.lower())


class InMemoryDirectory:
    """Records which participants were sent for indexing, and when."""

    def __init__(self) -> None:
        self.published: list[str] = []

    async def publish(self, participant: str) -> None:
        self.published.append(participant.lower())
