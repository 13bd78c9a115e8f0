"""Transactions: documents sent to the network (corner 2) or received from it (corner 3)."""

from __future__ import annotations

import enum
import uuid
from datetime import datetime

import attrs

from fourcorner.domain.webhook import NO_LEASE


class Direction(enum.Enum):
    TO_NETWORK = "TO_NETWORK"
    FROM_NETWORK = "FROM_NETWORK"


class Status(enum.Enum):
    UNPROCESSED = "UNPROCESSED"
    PROCESSING = "PROCESSING"
    COMPLETED = "COMPLETED"
    FAILED = "FAILED"
    REJECTED = "REJECTED"


class Kind(enum.Enum):
    DOCUMENT = "DOCUMENT"
    MLS = "MLS"  # a message level status this service sends about a document it received


class ArtefactType(enum.Enum):
    BUSINESS_DOCUMENT = "BUSINESS_DOCUMENT"
    VALIDATION_RESULT = "VALIDATION_RESULT"
    TRANSACTION_RECEIPT = "TRANSACTION_RECEIPT"
    MLS = "MLS"


@attrs.frozen
class ServiceError:
    code: str
    message: str
    category: str
    action: str


@attrs.frozen
class TransportFailure:
    """One entry of the TXE catalogue."""

    code: str
    title: str
    category: str
    action: str
    retryable: bool

    def error(self, detail: str) -> ServiceError:
        return ServiceError(self.code, f"{self.title}: {detail}", self.category, self.action)


# The TXE catalogue: why sending failed, and what the sender can do about it.
RECEIVER_NOT_FOUND = TransportFailure(
    "TXE-1001",
    "The receiver is not registered in the network",
    "ROUTING_ERROR",
    "FIX_AND_RETRY",
    False,
)
DOCUMENT_NOT_ACCEPTED = TransportFailure(
    "TXE-1006",
    "The receiver does not accept this document type and process",
    "ROUTING_ERROR",
    "FIX_AND_RETRY",
    False,
)
SMP_UNTRUSTED = TransportFailure(
    "TXE-1002",
    "The receiver's SMP answer could not be verified",
    "SECURITY_ERROR",
    "CONTACT",
    False,
)
SMP_UNREACHABLE = TransportFailure(
    "TXE-1003", "The receiver's SMP could not be reached", "TRANSPORT_ERROR", "RETRY", True
)
ENDPOINT_UNTRUSTED = TransportFailure(
    "TXE-1004",
    "The receiver's access point certificate is not trusted; nothing was sent",
    "SECURITY_ERROR",
    "CONTACT",
    False,
)
PEER_NOT_HTTPS = TransportFailure(
    "TXE-1005",
    "The receiver's SMP or access point is not reached over https; nothing was sent",
    "SECURITY_ERROR",
    "CONTACT",
    False,
)
AP_UNREACHABLE = TransportFailure(
    "TXE-2001", "The receiving access point could not be reached", "TRANSPORT_ERROR", "RETRY", True
)
AP_HTTP_ERROR = TransportFailure(
    "TXE-2002",
    "The receiving access point answered with an error",
    "TRANSPORT_ERROR",
    "RETRY",
    True,
)
AP_REFUSED = TransportFailure(
    "TXE-2003",
    "The receiving access point refused the message",
    "DELIVERY_ERROR",
    "DO_NOT_RETRY",
    False,
)
NOT_SERVICED = TransportFailure(
    "TXE-2004",
    "The receiving access point does not serve this receiver, document type or process",
    "VALIDATION_ERROR",
    "FIX_AND_RETRY",
    False,
)
RECEIPT_INVALID = TransportFailure(
    "TXE-2005", "The receipt could not be verified", "SECURITY_ERROR", "CONTACT", False
)
REJECTED_BY_RECEIVER = TransportFailure(
    "TXE-3001", "The receiver rejected the document", "VALIDATION_ERROR", "FIX_AND_RETRY", False
)
SENDER_UNUSABLE = TransportFailure(
    "TXE-4001",
    "The sending access point cannot be used",
    "CONFIGURATION_ERROR",
    "CONTACT",
    False,
)
TXE_CATALOGUE = (
    RECEIVER_NOT_FOUND,
    SMP_UNTRUSTED,
    SMP_UNREACHABLE,
    ENDPOINT_UNTRUSTED,
    PEER_NOT_HTTPS,
    DOCUMENT_NOT_ACCEPTED,
    AP_UNREACHABLE,
    AP_HTTP_ERROR,
    AP_REFUSED,
    NOT_SERVICED,
    RECEIPT_INVALID,
    REJECTED_BY_RECEIVER,
    SENDER_UNUSABLE,
)


@attrs.frozen
class Transaction:
    id: uuid.UUID
    org_id: uuid.UUID
    direction: Direction
    ap_id: uuid.UUID
    transport_profile: str
    sender_id: str
    receiver_id: str
    doc_type_id: str  # the document type as "<scheme>::<value>"
    process_id: str  # "<scheme>::<value>"
    sender_country: str
    doc_instance_id: str
    transaction_status: Status
    created_at: datetime
    created_ns: int  # the creation time in nanoseconds since the epoch
    last_modified_at: datetime
    kind: Kind = Kind.DOCUMENT
    receiver_country: str = ""
    sender_sp: str = ""
    receiver_sp: str = ""
    as4_message_id: str = ""
    attempts: int = 0
    next_attempt_at: datetime = NO_LEASE
    lease_until: datetime = NO_LEASE
    service_error: ServiceError | None = None
    mls_response_code: str | None = None
    mls_to: str = ""  # where a message level status about this document goes
    mls_type: str = ""
    # for an MLS this service sends with code RE: why (status reason code and description)
    mls_reason: str = ""
    mls_description: str = ""
    # for an MLS this service sends: the transaction (received document) it is about
    about: uuid.UUID | None = None

    @property
    def dedup_key(self) -> str:
        return f"{self.direction.value}:{self.org_id}:{self.kind.value}:{self.doc_instance_id}"


@attrs.frozen
class Artefact:
    id: uuid.UUID
    transaction_id: uuid.UUID
    org_id: uuid.UUID
    type: ArtefactType
    content_type: str
    size: int
    blob: str  # the blob store's key
    created_at: datetime


@attrs.frozen
class UsedUpload:
    """A pre-signed upload URL that has been used (they are single-use)."""

    id: uuid.UUID
    created_at: datetime
