"""An SMP in memory: for embedders and tests that need no SMP of their own.

It is not transactional: a publish made inside a unit of work that later rolls back stays.
Use the built-in SMP (``adapters.smp.registrar``) where that matters.
"""

from __future__ import annotations

import uuid

from fourcorner.application.repositories import Smps
from fourcorner.application.storage import UnitOfWork
from fourcorner.domain.errors import ServiceUnavailable
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
    """The directory of each environment, in memory: ``published`` and ``withdrawn`` record
    the calls in order, ``cards`` what each environment's directory holds now. ``down``: the
    reason every call is refused with (``ServiceUnavailable``), as a directory that does not
    answer; None: it answers."""

    def __init__(self) -> None:
        self.published: list[tuple[Environment, str]] = []
        self.withdrawn: list[tuple[Environment, str]] = []
        self.down: str | None = None
        self._cards: dict[Environment, set[str]] = {env: set() for env in Environment}

    def _answer(self) -> None:
        if self.down is not None:
            raise ServiceUnavailable(reason=self.down)

    def cards(self, environment: Environment) -> set[str]:
        """The participants whose card the directory of ``environment`` holds."""
        return set(self._cards[environment])

    async def publish(self, environment: Environment, participant: str) -> None:
        self._answer()
        self.published.append((environment, participant.lower()))
        self._cards[environment].add(participant.lower())

    async def withdraw(self, environment: Environment, participant: str) -> None:
        self._answer()
        self.withdrawn.append((environment, participant.lower()))
        self._cards[environment].discard(participant.lower())
