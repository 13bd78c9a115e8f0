"""A participant lookup in memory: who is registered, for which documents, at which endpoint.

It stands in for SML discovery and the SMPs (``adapters.smp.lookup``) where the receivers are
known in advance (embedders, the test harness): ``register`` a participant with its endpoint
and the (document type, process) pairs it receives, and ``fail`` one to make lookups of it
fail as the network's would (``UNREACHABLE`` to be retried, the others for good). Every lookup
asked is kept in ``asked`` for tests to assert on.
"""

from __future__ import annotations

import contextlib

import attrs
from cryptography import x509

from fourcorner.application.ports import (
    Endpoint,
    LookupFailed,
    LookupProblem,
    PublishedEndpoint,
    ReceiverLookup,
)
from fourcorner.domain.envelope import Identifier
from fourcorner.domain.network_services import Environment


@attrs.frozen
class Registered:
    """A participant as the network publishes it, in one environment."""

    endpoint: Endpoint
    accepts: frozenset[tuple[Identifier, Identifier]]  # (document type, process)
    environment: Environment = Environment.TEST
    smp_url: str = "memory://smp"


@attrs.frozen
class Asked:
    receiver: Identifier
    document: Identifier | None
    process: Identifier | None
    profile: str | None
    environment: Environment


def _key(participant: Identifier) -> tuple[str, str]:
    return participant.scheme.lower(), participant.value.lower()


class InMemoryParticipantLookup:
    def __init__(self) -> None:
        self.registered: dict[tuple[str, str], Registered] = {}
        self.failing: dict[tuple[str, str], LookupProblem] = {}
        self.asked: list[Asked] = []

    def register(
        self,
        participant: Identifier,
        endpoint: Endpoint,
        accepts: list[tuple[Identifier, Identifier]] | tuple[tuple[Identifier, Identifier], ...],
        environment: Environment = Environment.TEST,
    ) -> None:
        """``participant`` receives ``accepts`` at ``endpoint`` (in place of what it had)."""
        self.registered[_key(participant)] = Registered(endpoint, frozenset(accepts), environment)

    def unregister(self, participant: Identifier) -> None:
        self.registered.pop(_key(participant), None)

    def fail(self, participant: Identifier, problem: LookupProblem) -> None:
        """Lookups of ``participant`` fail with ``problem`` until ``heal``."""
        self.failing[_key(participant)] = problem

    def heal(self, participant: Identifier) -> None:
        self.failing.pop(_key(participant), None)

    def _found(self, receiver: Identifier, environment: Environment) -> Registered:
        problem = self.failing.get(_key(receiver))
        if problem is not None:
            raise LookupFailed(f"{receiver.value}: {problem.value} (as told)", problem)
        found = self.registered.get(_key(receiver))
        if found is None or found.environment is not environment:
            raise LookupFailed(
                f"{receiver.value} is not registered in {environment.value}",
                LookupProblem.NOT_REGISTERED,
            )
        return found

    async def endpoint(
        self,
        receiver: Identifier,
        document: Identifier,
        process: Identifier,
        profile: str,
        environment: Environment,
    ) -> Endpoint:
        self.asked.append(Asked(receiver, document, process, profile, environment))
        found = self._found(receiver, environment)
        if (document, process) not in found.accepts:
            raise LookupFailed(
                f"{receiver.value} does not receive {document} in {process}",
                LookupProblem.NOT_ACCEPTED,
            )
        if found.endpoint.transport_profile != profile:
            raise LookupFailed(
                f"{receiver.value} has no endpoint for {profile}", LookupProblem.NOT_ACCEPTED
            )
        return found.endpoint

    async def receiver(
        self, receiver: Identifier, document: Identifier | None, environment: Environment
    ) -> ReceiverLookup:
        self.asked.append(Asked(receiver, document, None, None, environment))
        try:
            found = self._found(receiver, environment)
        except LookupFailed as e:
            if not e.permanent:
                raise
            return ReceiverLookup(False, None, (), (), False, e.reason)
        types = tuple(sorted({str(doc) for doc, _ in found.accepts}))
        if document is None:
            return ReceiverLookup(True, found.smp_url, types, (), False, "no document type named")
        if all(doc != document for doc, _ in found.accepts):
            why = f"{receiver.value} does not receive {document}"
            return ReceiverLookup(True, found.smp_url, types, (), False, why)
        return ReceiverLookup(True, found.smp_url, types, (_published(found.endpoint),), True)


def _published(endpoint: Endpoint) -> PublishedEndpoint:
    subject, valid_until = "", None
    with contextlib.suppress(ValueError):
        certificate = x509.load_der_x509_certificate(endpoint.certificate_der)
        subject = certificate.subject.rfc4514_string()
        valid_until = certificate.not_valid_after_utc
    return PublishedEndpoint(endpoint.transport_profile, endpoint.url, subject, valid_until)
