"""The SMP lookup client behind the service's ``ParticipantLookup`` port."""

from __future__ import annotations

from cryptography.hazmat.primitives.serialization import Encoding

from adapters.smp import client
from adapters.smp.client import SmpLookupClient, SmpLookupError
from application.ports import Endpoint, LookupFailed, LookupProblem
from domain.envelope import Identifier

_PROBLEMS = {
    client.NOT_REGISTERED: LookupProblem.NOT_REGISTERED,
    client.NOT_ACCEPTED: LookupProblem.NOT_ACCEPTED,
    client.UNREACHABLE: LookupProblem.UNREACHABLE,
    client.UNTRUSTED: LookupProblem.UNTRUSTED,
}


class SmpParticipantLookup:
    def __init__(self, client: SmpLookupClient) -> None:
        self._client = client

    async def endpoint(
        self, receiver: Identifier, document: Identifier, process: Identifier, profile: str
    ) -> Endpoint:
        try:
            found = await self._client.endpoint(
                f"{receiver.scheme}::{receiver.value}",
                (document.scheme, document.value),
                (process.scheme, process.value),
                profile,
            )
        except SmpLookupError as e:
            problem = _PROBLEMS[e.kind]
            raise LookupFailed(
                e.reason,
                permanent=e.permanent,
                untrusted=problem is LookupProblem.UNTRUSTED,
                problem=problem,
            ) from None
        return Endpoint(
            url=found.url,
            certificate_der=found.certificate.public_bytes(Encoding.DER),
            transport_profile=found.transport_profile,
        )

    async def aclose(self) -> None:
        await self._client.aclose()
