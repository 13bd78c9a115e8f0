"""Ports for the network side: SMP registration, certificate inspection, key sealing, the
directory. Storage is in ``storage``; identity in ``identity``."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Protocol

import attrs

from application.storage import UnitOfWork
from domain.smp import SmpRegistration


class SmpRegistrar(Protocol):
    """Publishes participants' service metadata in an SMP.

    Called inside the unit of work of the change it publishes, before the commit: an adapter
    that raises makes the whole change roll back, so the database never claims a registration
    the SMP does not have.
    """

    async def publish(self, uow: UnitOfWork, registration: SmpRegistration) -> None: ...

    async def unpublish(self, uow: UnitOfWork, smp_id: uuid.UUID, participant: str) -> None: ...

    async def lookup(self, uow: UnitOfWork, participant: str) -> SmpRegistration | None: ...


@attrs.frozen
class InspectedCertificate:
    valid_from: datetime
    valid_until: datetime
    subject: str
    common_name: str
    fingerprint_sha256: str


class CertificateInspector(Protocol):
    """Parses and checks an uploaded certificate, its chain and key; raises ``InvalidInput``."""

    def inspect(
        self, cert_pem: str, ca_chain_pem: str, private_key_pem: str | None, now: datetime
    ) -> InspectedCertificate: ...


class KeySealer(Protocol):
    """Encrypts private keys at rest."""

    def seal(self, plaintext: bytes) -> str: ...

    def open(self, sealed: str) -> bytes: ...


class DirectoryPublisher(Protocol):
    """Asks the network's directory to index a participant's business card."""

    async def publish(self, participant: str) -> None: ...


@attrs.frozen
class SendResult:
    duration_ms: float
    status_code: int | None = None
    error: str | None = None


class WebhookSender(Protocol):
    """POSTs one signed delivery; never raises for the receiver's failures, it reports them."""

    async def send(self, url: str, body: bytes, headers: dict[str, str]) -> SendResult: ...
