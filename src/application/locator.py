"""The port of the network's service metadata locator (SML): its management interface, as
the built-in SMP uses it to register itself and its participants (``application.sml``)."""

from __future__ import annotations

import enum
from typing import Protocol

from fourcorner.domain.network_services import Environment


class LocatorFault(enum.Enum):
    """What the SML answered; only ``UNREACHABLE`` is worth retrying."""

    UNREACHABLE = "UNREACHABLE"  # no answer, a timeout, HTTP 5xx, an InternalErrorFault
    ALREADY_REGISTERED = "ALREADY_REGISTERED"  # Create: the identifier is registered already
    NOT_FOUND = "NOT_FOUND"  # NotFoundFault
    UNAUTHORIZED = "UNAUTHORIZED"  # UnauthorizedFault: not ours, or our certificate refused
    BAD_REQUEST = "BAD_REQUEST"  # BadRequestFault (a wrong migration key among them)


class LocatorError(Exception):
    def __init__(self, reason: str, fault: LocatorFault) -> None:
        super().__init__(reason)
        self.reason = reason
        self.fault = fault

    @property
    def transient(self) -> bool:
        return self.fault is LocatorFault.UNREACHABLE


class ServiceLocator(Protocol):
    """The network's SML, for the built-in SMP of each environment that has one configured.
    Participants are canonical identifiers (``0088:5798000000001``) of the scheme
    ``iso6523-actorid-upis``. Every call raises ``LocatorError``."""

    def serves(self, environment: Environment) -> bool:
        """Whether an SML is configured for ``environment`` (else nothing is registered)."""
        ...

    def smp_id(self, environment: Environment) -> str: ...

    async def register_smp(self, environment: Environment, url: str) -> None:
        """Create the SMP's entry (its id, ``url`` as logical address), or update it."""
        ...

    async def create(self, environment: Environment, participant: str) -> None: ...

    async def delete(self, environment: Environment, participant: str) -> None: ...

    async def prepare_migration(
        self, environment: Environment, participant: str, key: str
    ) -> None: ...

    async def migrate(self, environment: Environment, participant: str, key: str) -> None: ...

    async def registered(self, environment: Environment, participant: str) -> bool:
        """Whether the SML lists ``participant`` as ours."""
        ...


class NoLocator:
    """No SML anywhere: participants are active once the built-in SMP has them."""

    def serves(self, environment: Environment) -> bool:
        return False

    def smp_id(self, environment: Environment) -> str:
        return ""

    async def register_smp(self, environment: Environment, url: str) -> None:
        raise LocatorError("no SML is configured", LocatorFault.UNREACHABLE)

    async def create(self, environment: Environment, participant: str) -> None:
        raise LocatorError("no SML is configured", LocatorFault.UNREACHABLE)

    async def delete(self, environment: Environment, participant: str) -> None:
        raise LocatorError("no SML is configured", LocatorFault.UNREACHABLE)

    async def prepare_migration(self, environment: Environment, participant: str, key: str) -> None:
        raise LocatorError("no SML is configured", LocatorFault.UNREACHABLE)

    async def migrate(self, environment: Environment, participant: str, key: str) -> None:
        raise LocatorError("no SML is configured", LocatorFault.UNREACHABLE)

    async def registered(self, environment: Environment, participant: str) -> bool:
        raise LocatorError("no SML is configured", LocatorFault.UNREACHABLE)

    async def aclose(self) -> None:
        return None
