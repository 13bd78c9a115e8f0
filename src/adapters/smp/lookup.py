"""The SMP lookup client behind the service's ``ParticipantLookup`` port.

``endpoint`` is what a send uses; ``receiver`` answers "can they receive this?" through the
same client calls (discovery, the verified ServiceMetadata, ``usable`` on each endpoint), so
it reports exactly what a send would meet.
"""

from __future__ import annotations

import functools

from cryptography.hazmat.primitives.serialization import Encoding
from cryptography.x509.oid import NameOID

from fourcorner.adapters.smp.answers import DEFAULT_TRANSPORT_PROFILE, published_certificate
from fourcorner.adapters.smp.client import SmpLookupClient
from fourcorner.adapters.smp.errors import Problem, SmpLookupError
from fourcorner.application.ports import (
    Endpoint,
    LookupFailed,
    LookupProblem,
    PublishedEndpoint,
    ReceiverLookup,
)
from fourcorner.domain.envelope import Identifier
from fourcorner.domain.network_services import Environment

_PROBLEMS = {problem: LookupProblem[problem.name] for problem in Problem}


def _failed(error: SmpLookupError) -> LookupFailed:
    return LookupFailed(error.reason, _PROBLEMS[error.problem])


class SmpParticipantLookup:
    def __init__(self, client: SmpLookupClient) -> None:
        self._client = client

    async def endpoint(
        self,
        receiver: Identifier,
        document: Identifier,
        process: Identifier,
        profile: str,
        environment: Environment,
    ) -> Endpoint:
        try:
            found = await self._client.endpoint(
                f"{receiver.scheme}::{receiver.value}",
                (document.scheme, document.value),
                (process.scheme, process.value),
                profile,
                environment=environment,
            )
        except SmpLookupError as e:
            raise _failed(e) from None
        names = found.certificate.subject.get_attributes_for_oid(NameOID.COMMON_NAME)
        return Endpoint(
            url=found.url,
            certificate_der=found.certificate.public_bytes(Encoding.DER),
            transport_profile=found.transport_profile,
            common_name=str(names[0].value) if names else "",
        )

    async def receiver(
        self, receiver: Identifier, document: Identifier | None, environment: Environment
    ) -> ReceiverLookup:
        participant = f"{receiver.scheme}::{receiver.value}"
        try:
            smp_url, listed = await self._client.document_types(participant, environment)
        except SmpLookupError as e:
            if not e.permanent:
                raise _failed(e) from None
            registered = e.problem is not Problem.NOT_REGISTERED
            return ReceiverLookup(registered, None, (), (), False, e.reason)
        types = tuple(f"{scheme}::{value}" for scheme, value in listed)
        if document is None:
            reason = None if types else "the SMP lists no document type for the receiver"
            return ReceiverLookup(True, smp_url, types, (), bool(types), reason)
        try:
            verified = await self._client.metadata(
                participant, (document.scheme, document.value), environment
            )
        except SmpLookupError as e:
            if not e.permanent:
                raise _failed(e) from None
            return ReceiverLookup(True, smp_url, types, (), False, e.reason)
        published: list[PublishedEndpoint] = []
        reason = None
        can_receive = False
        for process in verified.metadata.processes:
            for endpoint in process.endpoints:
                certificate = published_certificate(endpoint)
                published.append(
                    PublishedEndpoint(
                        transport_profile=endpoint.transport_profile,
                        url=endpoint.address,
                        certificate_subject=certificate.subject.rfc4514_string()
                        if certificate
                        else "",
                        valid_until=certificate.not_valid_after_utc if certificate else None,
                    )
                )
                if endpoint.transport_profile != DEFAULT_TRANSPORT_PROFILE:
                    continue
                try:
                    await self._client.checked(
                        functools.partial(self._client.usable, endpoint, verified),
                        "the endpoint certificate",
                    )
                    can_receive = True
                except SmpLookupError as e:
                    reason = reason or e.reason
        if not can_receive and reason is None:
            reason = f"no endpoint with transport profile {DEFAULT_TRANSPORT_PROFILE!r}"
        return ReceiverLookup(
            True,
            verified.smp_url,
            types,
            tuple(published),
            can_receive,
            None if can_receive else reason,
        )

    async def aclose(self) -> None:
        await self._client.aclose()
