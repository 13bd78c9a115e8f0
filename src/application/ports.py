"""Ports for the network side: SMP registration, certificate inspection, key sealing, the
directory. Storage is in ``storage``; identity in ``identity``."""

from __future__ import annotations

import uuid
from datetime import datetime
from pathlib import Path
from typing import Any, Protocol

import attrs

from application.storage import UnitOfWork
from domain.envelope import Envelope, Identifier, MessageLevelStatus
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


class BlobStore(Protocol):
    """Document files and artefacts. ``put`` returns only once the bytes are durable, so a
    committed record never names a blob that a crash lost."""

    def incoming(self) -> Path:
        """A fresh path for streaming an upload to, on the store's own file system."""
        ...

    async def adopt(self, key: str, incoming: Path) -> int:
        """Make the file at ``incoming`` the blob ``key``; returns its size."""
        ...

    async def put(self, key: str, data: bytes) -> int: ...

    async def get(self, key: str) -> bytes: ...

    def path(self, key: str) -> Path | None:
        """Where the blob lies, for streaming it out; None when it is not a file."""
        ...

    async def delete(self, key: str) -> None: ...


class Envelopes(Protocol):
    """Reads and writes standard business documents (the SBDH) and message level statuses;
    reading is hardened and raises ``InvalidInput`` naming the part that is wrong."""

    def read_file(self, path: Path) -> Envelope: ...

    def read(self, data: bytes) -> Envelope: ...

    def write(self, envelope: Envelope, payload: bytes) -> bytes: ...

    def write_mls(self, status: MessageLevelStatus) -> bytes: ...

    def read_mls(self, data: bytes) -> MessageLevelStatus: ...


@attrs.frozen
class Endpoint:
    url: str
    certificate_der: bytes
    transport_profile: str
    common_name: str = ""  # the certificate's CN: the receiving access point's seat id


class LookupFailed(Exception):
    """The receiver's endpoint could not be found; ``permanent`` if retrying cannot help."""

    def __init__(self, reason: str, *, permanent: bool, untrusted: bool = False) -> None:
        super().__init__(reason)
        self.reason = reason
        self.permanent = permanent
        self.untrusted = untrusted


class ParticipantLookup(Protocol):
    async def endpoint(
        self, receiver: Identifier, document: Identifier, process: Identifier, profile: str
    ) -> Endpoint: ...


@attrs.frozen
class Credentials:
    """An access point's certificate and private key (PEM), for signing and decrypting."""

    cert_pem: str
    key_pem: str
    chain_pem: str = ""


@attrs.frozen
class Delivered:
    receipt: bytes
    message_id: str


@attrs.frozen
class Refused:
    code: str  # the EBMS error code, or "HTTP <status>", or the transport problem
    detail: str
    retryable: bool
    not_serviced: bool = False
    bad_receipt: bool = False


class ApTransport(Protocol):
    """Sends one document to a receiving access point and reads its answer."""

    async def send(
        self,
        *,
        sbd: bytes,
        envelope: Envelope,
        endpoint: Endpoint,
        credentials: Credentials,
        message_id: str,
    ) -> Delivered | Refused: ...


@attrs.frozen
class InboundDocument:
    message_id: str
    sbd: bytes
    original_sender: Identifier
    final_recipient: Identifier
    service: Identifier  # the process
    action: str  # "<doc scheme>::<doc value>"
    sender_certificate_cn: str
    opaque: Any = attrs.field(eq=False, repr=False, default=None)  # the adapter's parsed message


class As4Refusal(Exception):
    def __init__(self, code: str, description: str, detail: str = "", ref: str | None = None):
        super().__init__(f"{code}: {description} {detail}".strip())
        self.code, self.description, self.detail, self.ref = code, description, detail, ref


class MessageReader(Protocol):
    """The receiving side of the AS4 profile: verify and open, answer receipts and errors."""

    def read(self, content_type: str, body: bytes, credentials: Credentials) -> InboundDocument:
        """Raises ``As4Refusal`` with the EBMS code of the problem."""
        ...

    def receipt(self, inbound: InboundDocument, credentials: Credentials) -> bytes: ...

    def error(self, refusal: As4Refusal, credentials: Credentials) -> bytes: ...
