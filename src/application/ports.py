"""Ports for the network side: SMP registration, certificate inspection, key sealing, the
directory, document validation. Storage is in ``storage``; identity in ``identity``."""

from __future__ import annotations

import enum
import uuid
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import AbstractAsyncContextManager
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, Literal, Protocol

import attrs

from fourcorner.application.storage import UnitOfWork
from fourcorner.domain.envelope import Addressing, Identifier, MessageLevelStatus, Sbdh
from fourcorner.domain.network_services import Environment
from fourcorner.domain.smp import SmpRegistration
from fourcorner.domain.transaction import Transaction
from fourcorner.domain.ubl import UblFacts
from fourcorner.domain.validation import ValidationResult


class SmpRegistrar(Protocol):
    """Publishes participants' service metadata in an SMP.

    Called inside the unit of work of the change it publishes, before the commit: an adapter
    that raises makes the whole change roll back, so the database never claims a registration
    the SMP does not have.
    """

    async def publish(self, uow: UnitOfWork, registration: SmpRegistration) -> None: ...

    async def unpublish(self, uow: UnitOfWork, smp_id: uuid.UUID, participant: str) -> None: ...

    async def lookup(
        self, uow: UnitOfWork, environment: Environment, participant: str
    ) -> SmpRegistration | None:
        """The participant's registration in an SMP of ``environment`` (an identifier is
        unique per environment: the same one may be registered in each)."""
        ...


@attrs.frozen
class InspectedCertificate:
    valid_from: datetime
    valid_until: datetime
    subject: str
    common_name: str
    fingerprint_sha256: str
    public_key_sha256: str  # of the SubjectPublicKeyInfo, hex


class CertificateInspector(Protocol):
    """Parses and checks an uploaded certificate, its chain and its private key, which must
    belong to the certificate (proof of possession); raises ``InvalidInput``."""

    def inspect(
        self, cert_pem: str, ca_chain_pem: str, private_key_pem: str, now: datetime
    ) -> InspectedCertificate: ...

    def public_key_sha256(self, cert_pem: str) -> str:
        """The sha256 (hex) of a stored certificate's SubjectPublicKeyInfo, without checking
        anything else; ``InvalidInput`` when it does not parse."""
        ...

    def replacement_problem(
        self, stored_pem: str, stored_chain_pem: str, new_pem: str
    ) -> str | None:
        """Why the certificate ``new_pem`` may not take the place of the stored one (issued
        under ``stored_chain_pem``), in a few words; None when it may: the same
        certificate, the network's replacing the embedded test PKI's, or a renewal (the same
        subject and key usages, a later start of validity, under the same test PKI)."""
        ...


class KeySealer(Protocol):
    """Encrypts secrets at rest, each bound to a ``context`` (the record and field that hold
    it, ``application.sealed``): a value opens only with the context it was sealed with.

    ``open`` raises ``ValueError`` saying why a value does not open. Values sealed before
    binding existed still open (with ``legacy_context``, none unless given); ``is_current`` is
    False for them, and they are sealed again.

    While the at-rest key is rotated, ``open`` also opens what the key it replaces sealed;
    ``key_of`` says which key opens a value (``ValueError`` as ``open`` when neither), so that
    those of the previous key can be sealed again. ``seal`` always uses the current key.
    """

    def seal(self, plaintext: bytes, *, context: bytes) -> str: ...

    def open(self, sealed: str, *, context: bytes, legacy_context: bytes = b"") -> bytes: ...

    def key_of(
        self, sealed: str, *, context: bytes, legacy_context: bytes = b""
    ) -> Literal["current", "previous"]: ...

    def is_current(self, sealed: str) -> bool: ...


class DirectoryPublisher(Protocol):
    """The network's directory of each environment: TEST and PROD have one each, as they have
    an SML and an SMP each, so the same identifier may have a card in both. ``publish`` asks
    the directory of ``environment`` to index the participant's business card (it fetches the
    card from that environment's SMP); ``withdraw`` asks it to remove the card. Participants
    are canonical identifiers (``0088:5798000000001``) of the scheme ``iso6523-actorid-upis``.
    Both raise ``ServiceUnavailable`` when that directory cannot be reached or refuses."""

    async def publish(self, environment: Environment, participant: str) -> None: ...

    async def withdraw(self, environment: Environment, participant: str) -> None: ...


@attrs.frozen
class SendResult:
    """A webhook delivery's attempt. ``busy``: the endpoint answered HTTP 429 or 503 (it cannot
    take the delivery now); ``retry_after``: the wait its ``Retry-After`` asked for then, when
    it gave one that reads."""

    duration_ms: float
    status_code: int | None = None
    error: str | None = None
    response_body: str | None = None  # the start of the receiver's answer (about 1 KiB)
    busy: bool = False
    retry_after: timedelta | None = None


class WebhookSender(Protocol):
    """POSTs one signed delivery; never raises for the receiver's failures, it reports them."""

    async def send(self, url: str, body: bytes, headers: dict[str, str]) -> SendResult: ...


class BlobStore(Protocol):
    """Document files and artefacts. ``put`` returns only once the bytes are durable, so a
    committed record never names a blob that a crash lost. The other way round, a crash
    between ``put`` and the commit leaves a blob that nothing names: ``stored`` and
    ``discard_incoming`` let a sweep find and remove those (``application.sweep``)."""

    def incoming(self) -> Path:
        """A fresh, empty file for streaming an upload to, on the store's own file system,
        readable by the service's user only; the caller writes it and then adopts or removes
        it."""
        ...

    async def adopt(self, key: str, incoming: Path) -> int:
        """Make the file at ``incoming`` the blob ``key``; returns its size."""
        ...

    async def put(self, key: str, data: bytes) -> int: ...

    async def put_all(self, blobs: Sequence[tuple[str, bytes | Path]]) -> list[int]:
        """Store several blobs at once, each as ``put`` (bytes) or ``adopt`` (a ``Path`` from
        ``incoming``) would; their sizes, in order, once every one is durable. Cheaper than a
        call each: the file store syncs each folder once, the database store commits once.
        On failure some may be stored: the caller removes them, or the sweep does."""
        ...

    async def put_all_in(
        self, uow: UnitOfWork, blobs: Sequence[tuple[str, bytes | Path]]
    ) -> list[int]:
        """``put_all`` with the unit of work ``uow`` (begun, not committed): a store in the
        storage's own database writes the blobs it can in ``uow``'s transaction, sent with its
        next statement or its commit (PostgreSQL: no round trip of their own), so they are
        durable with that commit and gone with a rollback; the rest (too large, or any store
        elsewhere) is stored now, durable on return, as ``put_all`` would. Call it before
        ``uow`` writes anything that must wait for a large blob. On failure the caller removes
        the blobs, or the sweep does."""
        ...

    async def get(self, key: str) -> bytes:
        """The whole blob, in memory; ``FileNotFoundError`` or ``KeyError`` when missing."""
        ...

    def chunks(self, key: str) -> AsyncIterator[bytes]:
        """The blob in pieces of at most 1 MiB, read as they are asked for, so that
        a blob of any size is streamed out in bounded memory; the first piece is read (and
        ``FileNotFoundError`` or ``KeyError`` raised) when it is asked for."""
        ...

    def local(self, key: str) -> AbstractAsyncContextManager[Path]:
        """``async with blobs.local(key) as path``: a local file holding the blob, for readers
        that need one (to map it into memory, or hand it to a library that reads files),
        valid until the block ends; ``FileNotFoundError`` or ``KeyError`` when missing. A
        store of files gives the blob's own file (not to be written); others copy the blob
        to a temporary file, streamed, and remove it after the block."""
        ...

    def path(self, key: str) -> Path | None:
        """Where the blob lies, for sending it out as a file; None when it is not a file
        (then ``chunks`` streams it)."""
        ...

    async def delete(self, key: str) -> None: ...

    async def delete_all(self, keys: Sequence[str]) -> None:
        """``delete`` each of ``keys``, at once (the database store: one statement)."""
        ...

    def stored(self, written_before: datetime) -> AsyncIterator[str]:
        """The keys of the blobs last stored (``put`` or ``adopt``) before ``written_before``,
        in no particular order; a blob stored or deleted while the listing runs may or may not
        be in it."""
        ...

    async def discard_incoming(self, written_before: datetime) -> int:
        """Remove the files at ``incoming()`` paths last written before ``written_before`` and
        never adopted (uploads a crash or a lost client left behind); returns how many."""
        ...


class DocumentValidator(Protocol):
    """Checks a business document against the published rules of its syntax.

    ``document`` is the document's bytes or the path of a file holding them: a UBL or CII
    document, or a whole SBD, whose payload is checked. Reading is hardened as for intake and
    raises ``InvalidInput`` for a document that is not well-formed or hostile; a document to
    which the rules do not apply is answered as not checked. Raises ``RulesFailed`` when the
    rules raise an error on the document instead of a verdict (an amount that is not a
    number), ``ServiceUnavailable`` when the check could not run (it took too long, or its
    worker stopped).

    ``low_priority``: a check nothing else waits on (``POST /validation``, asked by hand),
    which must not keep the documents being sent and received waiting: it is run only when no
    other document waits for the validator (an adapter that runs every check at once, with
    nothing to wait for, may ignore it)."""

    async def validate(
        self, document: Path | bytes, *, low_priority: bool = False
    ) -> ValidationResult: ...


class Envelopes(Protocol):
    """Reads and writes standard business documents (the SBDH) and message level statuses;
    reading is hardened and raises ``InvalidInput`` naming the part that is wrong."""

    def read_file(self, path: Path) -> Sbdh: ...

    def read(self, data: bytes) -> Sbdh:
        """The envelope of the SBD ``data``, a function of its bytes alone: the same bytes
        read again (a document one of this service's organisations sends to another's, read
        at intake and as it arrives) may be answered without parsing them again."""
        ...

    def write(self, envelope: Sbdh, payload: bytes) -> bytes: ...

    def write_mls(self, status: MessageLevelStatus) -> bytes: ...

    def read_mls(self, data: bytes) -> MessageLevelStatus: ...

    def read_mls_file(self, path: Path) -> MessageLevelStatus: ...

    def read_bare_file(self, path: Path) -> UblFacts | None:
        """What the envelope of a bare UBL Invoice or CreditNote is built from; None when the
        root element is anything else (an SBD is read with ``read_file``)."""
        ...

    def wrap_file(self, envelope: Sbdh, source: Path, target: Path) -> None:
        """Write to ``target`` the SBD of the bare document in ``source``, byte for byte."""
        ...

    def read_bare(self, data: bytes) -> UblFacts | None:
        """``read_bare_file`` of a document in memory."""
        ...

    def wrap(self, envelope: Sbdh, data: bytes) -> bytes:
        """``wrap_file`` of a document in memory: the SBD of the bare document ``data``."""
        ...


@attrs.frozen
class Endpoint:
    url: str
    certificate_der: bytes
    transport_profile: str
    common_name: str = ""  # the certificate's CN: the receiving access point's seat id


class LookupProblem(enum.Enum):
    """Why a receiver's endpoint could not be found; only ``UNREACHABLE`` and
    ``REVOCATION_UNKNOWN`` may pass."""

    NOT_REGISTERED = "NOT_REGISTERED"  # not in the environment's SML or SMP
    NOT_ACCEPTED = "NOT_ACCEPTED"  # registered, but not for this document type and process
    UNREACHABLE = "UNREACHABLE"  # DNS or SMP timeouts and failures: retry later
    SMP_UNTRUSTED = "SMP_UNTRUSTED"  # the SMP's answer is unsigned, altered or badly signed
    ENDPOINT_UNTRUSTED = "ENDPOINT_UNTRUSTED"  # its AP certificate is not the network's
    INSECURE = "INSECURE"  # a peer that would be reached over plain http
    # whether its SMP's or AP's certificate is revoked cannot be told yet: retry later
    REVOCATION_UNKNOWN = "REVOCATION_UNKNOWN"


PASSING_LOOKUP_PROBLEMS = frozenset({LookupProblem.UNREACHABLE, LookupProblem.REVOCATION_UNKNOWN})


class LookupFailed(Exception):
    """The receiver's endpoint could not be found; ``permanent`` if retrying cannot help."""

    def __init__(self, reason: str, problem: LookupProblem) -> None:
        super().__init__(reason)
        self.reason = reason
        self.problem = problem

    @property
    def permanent(self) -> bool:
        return self.problem not in PASSING_LOOKUP_PROBLEMS


@attrs.frozen
class PublishedEndpoint:
    """An endpoint as the receiver's SMP publishes it."""

    transport_profile: str
    url: str
    certificate_subject: str  # empty when the certificate cannot be read
    valid_until: datetime | None  # the certificate's end of validity


@attrs.frozen
class ReceiverLookup:
    """What a send to a receiver would meet: whether the network knows the receiver, its SMP,
    the document types it lists, and (for one document type) the endpoints and whether a
    document could be sent to one of them now; ``reason`` says why not."""

    registered: bool
    smp_url: str | None
    document_types: tuple[str, ...]  # "scheme::value"
    endpoints: tuple[PublishedEndpoint, ...]
    can_receive: bool
    reason: str | None = None


class EventPayloads(Protocol):
    """How a record reads outside the interface — in the payload of its events, in a stored
    JSON summary — exactly as the interface shows it (the HTTP entrypoint's response classes
    render both), so a webhook receiver and an API client read one shape, and a field is shown
    in neither until a response class names it."""

    def transaction(self, tx: Transaction) -> dict[str, Any]: ...

    def validation(self, result: ValidationResult) -> dict[str, Any]:
        """A validation result as ``POST /validation`` answers it (its JSON artefact)."""
        ...


class ParticipantLookup(Protocol):
    async def endpoint(
        self,
        receiver: Identifier,
        document: Identifier,
        process: Identifier,
        profile: str,
        environment: Environment,
    ) -> Endpoint:
        """Raises ``LookupFailed``."""
        ...

    async def receiver(
        self, receiver: Identifier, document: Identifier | None, environment: Environment
    ) -> ReceiverLookup:
        """What a send of ``document`` (any process, the AS4 profile) would meet, by the
        same discovery and checks as ``endpoint``. Raises ``LookupFailed`` (``UNREACHABLE``)
        only when the DNS or the SMP cannot be asked."""
        ...


@attrs.frozen
class Credentials:
    """An access point's certificate and private key (PEM), for signing and decrypting, and
    the environment it serves (whose AP CA a sender's certificate must chain to)."""

    cert_pem: str
    key_pem: str
    chain_pem: str = ""
    environment: Environment | None = None


@attrs.frozen
class Delivered:
    receipt: bytes
    message_id: str


@attrs.frozen
class Refused:
    """A message not delivered. ``busy``: the receiving access point answered HTTP 503 or 429
    (it cannot take the message now); ``retry_after``: the wait its ``Retry-After`` asked for
    then, when it gave one that reads."""

    code: str  # the EBMS error code, or "HTTP <status>", or the transport problem
    detail: str
    retryable: bool
    not_serviced: bool = False
    bad_receipt: bool = False
    busy: bool = False
    retry_after: timedelta | None = None


@attrs.frozen
class Prepared:
    """An AS4 message built for one receiving access point, ready to send.

    ``data`` is the whole signed and encrypted message in the transport's own form (what it
    posts, and what it checks the answer against); the caller keeps it (in the blob store)
    before the first attempt and hands it back to ``prepare`` for every retry, so each attempt
    posts exactly the same bytes. That matters: a receiver answers a MessageId it has seen with
    the receipt it stored, which acknowledges the digests of the first attempt only.
    ``sender_party`` and ``receiver_party`` are the two access points' seat ids (their
    certificates' CNs); ``reused`` says the kept message was taken as it was.
    """

    data: bytes = attrs.field(repr=False)
    sender_party: str
    receiver_party: str
    reused: bool = False
    opaque: Any = attrs.field(eq=False, repr=False, default=None)  # the adapter's parsed form


class ApTransport(Protocol):
    """Sends one document to a receiving access point and reads its answer."""

    async def prepare(
        self,
        *,
        sbd: bytes,
        addressing: Addressing,
        endpoint: Endpoint,
        credentials: Credentials,
        message_id: str,
        kept: bytes | None = None,
    ) -> Prepared:
        """The message to send: ``kept`` (an earlier attempt's ``Prepared.data``) when it was
        built with ``message_id`` for ``endpoint``'s certificate, else a new one carrying
        ``sbd``, whose header says ``addressing``."""
        ...

    async def send(self, prepared: Prepared, endpoint: Endpoint) -> Delivered | Refused: ...


@attrs.frozen
class InboundDocument:
    message_id: str
    sbd: bytes | Path  # the SBD: its bytes, or the file a large one was written to
    original_sender: Identifier
    final_recipient: Identifier
    service: Identifier  # the process
    action: str  # "<doc scheme>::<doc value>"
    sender_certificate_cn: str
    opaque: Any = attrs.field(eq=False, repr=False, default=None)  # the adapter's parsed message


REFUSAL_DETAIL = 500
"""Characters of a refusal's detail, at most. It goes back to the sender in the error signal
and into the log: the details quote what was sent bounded (``domain.text.quoted``), and this
bounds any that would not, so that no refusal repeats a large part of a message."""


class As4Refusal(Exception):
    """An inbound AS4 message refused: the ebMS error ``code`` (``EBMS:0009``) with its
    ``description`` (``InvalidHeader``), a ``detail`` for the sender's operators (cut at
    ``REFUSAL_DETAIL`` characters), and ``ref``, the MessageId the error refers to, if any
    (only one a message may carry: the adapters never pass on one that is not)."""

    def __init__(self, code: str, description: str, detail: str = "", ref: str | None = None):
        if len(detail) > REFUSAL_DETAIL:
            detail = detail[: REFUSAL_DETAIL - 1] + "…"
        super().__init__(f"{code}: {description} {detail}".strip())
        self.code, self.description, self.detail, self.ref = code, description, detail, ref


class MessageReader(Protocol):
    """The receiving side of the AS4 profile: verify and open, answer receipts and errors."""

    def read(
        self,
        content_type: str,
        body: bytes | Path,
        credentials: Credentials,
        sbd: Callable[[], Path],
    ) -> InboundDocument:
        """Reads the message ``body`` (its bytes, or the file holding it); its SBD is kept in
        memory when it is small, else written to the file ``sbd()`` makes (to be removed by
        the caller, whatever happens). Raises ``As4Refusal`` with the EBMS code of the
        problem, and ``certificate_status.CertificateStatusPending``/``Unknown`` while
        the revocation of the sender's certificate cannot be checked (yet)."""
        ...

    def receipt(self, inbound: InboundDocument, credentials: Credentials) -> bytes: ...

    def error(self, refusal: As4Refusal, credentials: Credentials) -> bytes: ...
