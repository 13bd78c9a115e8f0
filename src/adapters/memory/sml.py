"""An SML in memory: for embedders and tests that register participants without a network.

``InMemorySml`` is the locator's state (SMPs, participants by environment, prepared
migrations), shared by the ``InMemoryLocator`` of each SMP that uses it, so two operators can
move a participant between them. It answers as the SML does: a participant registered by
another SMP cannot be created, only migrated with the key its SMP prepared. ``down`` makes
every call fail as an unreachable SML would; ``delay`` makes each call take that long.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping

import attrs

from fourcorner.application.locator import LocatorError, LocatorFault
from fourcorner.domain.network_services import Environment


@attrs.define
class InMemorySml:
    smps: dict[tuple[Environment, str], str] = attrs.Factory(dict)  # -> logical address
    participants: dict[tuple[Environment, str], str] = attrs.Factory(dict)  # -> SMP id
    migrations: dict[tuple[Environment, str], str] = attrs.Factory(dict)  # -> prepared key
    down: bool = False
    delay: float = 0.0  # seconds each call takes
    calls: list[tuple[str, Environment, str]] = attrs.Factory(list)

    def smp_of(self, environment: Environment, participant: str) -> str | None:
        return self.participants.get((environment, participant.lower()))


class InMemoryLocator:
    """One SMP's view of an ``InMemorySml``: ``smp_ids`` names the SMP in each environment it
    is registered for (an environment without one has no SML)."""

    def __init__(self, smp_ids: Mapping[Environment, str], sml: InMemorySml | None = None) -> None:
        self._ids = dict(smp_ids)
        self.sml = sml or InMemorySml()

    def serves(self, environment: Environment) -> bool:
        return environment in self._ids

    def smp_id(self, environment: Environment) -> str:
        return self._ids.get(environment, "")

    async def _call(self, operation: str, environment: Environment, subject: str) -> str:
        self.sml.calls.append((operation, environment, subject))
        if self.sml.delay:
            await asyncio.sleep(self.sml.delay)
        if self.sml.down:
            raise LocatorError("the SML cannot be reached", LocatorFault.UNREACHABLE)
        smp = self._ids.get(environment)
        if smp is None:
            raise LocatorError(f"no SML for {environment.value}", LocatorFault.UNREACHABLE)
        if operation != "register_smp" and (environment, smp) not in self.sml.smps:
            raise LocatorError(f"the SMP {smp} is not registered", LocatorFault.NOT_FOUND)
        return smp

    async def register_smp(self, environment: Environment, url: str) -> None:
        smp = await self._call("register_smp", environment, url)
        self.sml.smps[(environment, smp)] = url

    async def create(self, environment: Environment, participant: str) -> None:
        smp = await self._call("create", environment, participant)
        key = (environment, participant.lower())
        if key in self.sml.participants:
            owner = self.sml.participants[key]
            raise LocatorError(
                f"the participant {participant} is registered already (by {owner})",
                LocatorFault.ALREADY_REGISTERED,
            )
        self.sml.participants[key] = smp

    def _own(self, smp: str, environment: Environment, participant: str) -> tuple[Environment, str]:
        key = (environment, participant.lower())
        if key not in self.sml.participants:
            raise LocatorError(f"no participant {participant}", LocatorFault.NOT_FOUND)
        if self.sml.participants[key] != smp:
            raise LocatorError(
                f"the participant {participant} is not registered by {smp}",
                LocatorFault.UNAUTHORIZED,
            )
        return key

    async def delete(self, environment: Environment, participant: str) -> None:
        smp = await self._call("delete", environment, participant)
        key = self._own(smp, environment, participant)
        del self.sml.participants[key]
        self.sml.migrations.pop(key, None)

    async def prepare_migration(self, environment: Environment, participant: str, key: str) -> None:
        smp = await self._call("prepare_migration", environment, participant)
        self.sml.migrations[self._own(smp, environment, participant)] = key

    async def migrate(self, environment: Environment, participant: str, key: str) -> None:
        smp = await self._call("migrate", environment, participant)
        wanted = (environment, participant.lower())
        if wanted not in self.sml.participants:
            raise LocatorError(f"no participant {participant}", LocatorFault.NOT_FOUND)
        if self.sml.migrations.get(wanted) != key:
            raise LocatorError(
                f"no migration of {participant} was prepared with this key",
                LocatorFault.BAD_REQUEST,
            )
        self.sml.participants[wanted] = smp
        del self.sml.migrations[wanted]

    async def registered(self, environment: Environment, participant: str) -> bool:
        smp = await self._call("registered", environment, participant)
        return self.sml.smp_of(environment, participant) == smp

    async def aclose(self) -> None:
        return None
