"""The SMP lookup client behind the service's ``ParticipantLookup`` port."""

from __future__ import annotations

from cryptography.hazmat.primitives.serialization import Encoding
from cryptography.x509.oid import NameOID

from adapters.smp.client import SmpLookupClient, SmpLookupError
from application.ports import Endpoint, LookupFailed
from domain.envelope import Identifier


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
            untrusted = "signature" in e.reason or "trusted" in e.reason
            raise LookupFailed(e.reason, permanent=e.permanent, untrusted=untrusted) from None
        names = found.certificate.subject.get_attributes_for_oid(NameOID.COMMON_NAME)
        return Endpoint(
            url=found.url,
            certificate_der=found.certificate.public_bytes(Encoding.DER),
            transport_profile=found.transport_profile,
            common_name=str(names[0].value) if names else "",
        )

    async def aclose(self) -> None:
        await self._client.aclose()
