"""What each answer shows: a response class per record (``rendering``), listing its fields;
the answers that are not records are in ``answers``; the ``Answer`` of each is here.

Secrets and the service's own bookkeeping (key hashes, sealed keys and secrets, the identity
binding, lookup keys, leases and attempts) are absent because no class here names them; the
unit test ``test_responses`` checks that a field added to a record stays out of its answer.
The values of nested objects (contacts, addresses, deliveries) are the records' own.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from datetime import datetime
from typing import Any

import attrs
import cattrs

from fourcorner.application.ports import PublishedEndpoint
from fourcorner.domain.certificates import CertificateEnvironment, Service
from fourcorner.domain.clock import iso_ns
from fourcorner.domain.events import EVENT_NAMES
from fourcorner.domain.member import MemberStatus
from fourcorner.domain.network_services import Environment
from fourcorner.domain.organisation import (
    REQUESTABLE_MODES,
    Address,
    Contact,
    Mode,
    UserRef,
    ValidationPolicy,
)
from fourcorner.domain.participant import (
    BusinessCard,
    DirectoryPublication,
    ParticipantStatus,
    SupportedDocumentType,
)
from fourcorner.domain.roles import Role
from fourcorner.domain.send_failures import ServiceError
from fourcorner.domain.transaction import ArtefactType, Direction, Status
from fourcorner.domain.webhook import DeliveryStatus, DeliverySummary
from fourcorner.entrypoints.http.answers import (
    AcceptedResponse,
    ConfirmationResponse,
    ErrorResponse,
    IdsResponse,
    MigrationKeyResponse,
    StatusResponse,
    UploadUrlResponse,
    ValidationResponse,
)
from fourcorner.entrypoints.http.rendering import Answer, given, response_class, shown, tag

_ORG_ROLES = {"type": "string", "enum": [Role.ORGADMIN.value, Role.ORGMEMBER.value]}
_USER_ROLES = {"type": "string", "enum": [Role.USER.value, Role.SUPERADMIN.value]}
_EVENT_NAME = {"type": "string", "enum": list(EVENT_NAMES)}
_REQUESTED_MODE = {
    "anyOf": [{"type": "string", "enum": [m.value for m in REQUESTABLE_MODES]}, {"type": "null"}]
}

# --- organisations, users, members, API keys --------------------------------------------------


@response_class
class OrganisationCertificate:
    """A certificate of the organisation, as its record lists them."""

    name: str
    type: str = shown(schema={"type": "string", "enum": ["TEST", "PRODUCTION"]})
    id: uuid.UUID


@response_class
class OrganisationResponse:
    id: uuid.UUID
    legal_name: str
    country_code: str
    legal_identifier: str
    legal_identifier_code: str
    created_at: datetime
    created_by: UserRef
    last_modified_at: datetime
    last_modified_by: UserRef
    short_name: str
    organisation_mode: Mode
    mode_change_request: Mode | None = shown(schema=_REQUESTED_MODE)
    contacts: tuple[Contact, ...]
    business_address: Address | None
    website: str
    shared_mode_enabled: bool
    validation: ValidationPolicy = shown(
        description="a billing document sent that fails a fatal rule: refused (422 AT-1131), "
        "or sent with the result reported"
    )
    inbound_validation: ValidationPolicy = shown(
        description="a billing document received that fails a fatal rule: reported, or "
        "refused with an MLS RE naming the rules"
    )
    type: str = tag("ORGANISATION")
    certificates: tuple[OrganisationCertificate, ...] = given()


@response_class
class UserResponse:
    id: str
    email: str
    created_at: datetime
    created_by: UserRef
    last_modified_at: datetime
    last_modified_by: UserRef
    name: str
    phone: str
    country_code: str
    opted_in_to_receive_info: bool
    role: Role = shown(schema=_USER_ROLES)
    terms_accepted_at: datetime | None
    type: str = tag("USER")


@response_class
class Membership:
    """One organisation the user is a member of."""

    org_id: uuid.UUID
    role: Role = shown(schema=_ORG_ROLES)
    legal_name: str
    legal_identifier: str
    member_since: datetime | None
    member_ref: uuid.UUID


@response_class
class MeResponse(UserResponse):
    memberships: tuple[Membership, ...] = given()


@response_class
class MemberResponse:
    id: uuid.UUID
    org_id: uuid.UUID
    user_ref: str
    role: Role = shown(schema=_ORG_ROLES)
    status: MemberStatus
    created_at: datetime
    created_by: UserRef
    last_modified_at: datetime
    first_name: str
    last_name: str
    member_since: datetime | None
    email: str
    type: str = tag("MEMBER")


@response_class
class ApiKeyResponse:
    id: uuid.UUID
    org_id: uuid.UUID
    name: str
    description: str
    expires: datetime
    is_active: bool
    role: Role = shown(schema=_ORG_ROLES)
    prefix: str
    created_at: datetime
    created_by: UserRef
    last_modified_at: datetime
    type: str = tag("API_KEY")


@response_class
class NewApiKeyResponse(ApiKeyResponse):
    key: str = given(description="The key itself, shown this once only.")


# --- participants and the network's infrastructure ------------------------------------------


@response_class
class ParticipantResponse:
    id: uuid.UUID
    org_id: uuid.UUID
    name: str
    participant_identifier: str
    smp_ref: uuid.UUID
    ap_ref: uuid.UUID
    environment: Environment
    transport_profile: str
    created_at: datetime
    created_by: UserRef
    last_modified_at: datetime
    last_modified_by: UserRef
    business_card: BusinessCard | None
    supported_document_types: tuple[SupportedDocumentType, ...]
    status: ParticipantStatus
    directory: DirectoryPublication
    warning: str | None
    status_reason: str | None  # why it is PENDING or FAILED in the network's SML
    type: str = tag("PARTICIPANT")


@attrs.frozen
class SupportedDocumentTypeResponse:
    document_id: str
    process_id: str
    exact_match_only: bool


@response_class
class AccessPointResponse:
    id: uuid.UUID
    org_id: uuid.UUID
    name: str
    ap_url: str
    certificate_ref: uuid.UUID
    transport_profile: str
    environment: Environment
    created_at: datetime
    created_by: UserRef
    last_modified_at: datetime
    last_modified_by: UserRef
    description: str
    type: str = tag("AP")


@response_class
class CertificateResponse:
    id: uuid.UUID
    org_id: uuid.UUID
    name: str
    service: Service
    environment: CertificateEnvironment
    transport_profile: str
    cert_pem: str
    ca_chain_pem: str
    valid_from: datetime
    valid_until: datetime
    subject: str
    fingerprint: str
    created_at: datetime
    created_by: UserRef
    last_modified_at: datetime
    last_modified_by: UserRef
    description: str
    type: str = tag("CERTIFICATE")


@response_class
class SmpResponse:
    id: uuid.UUID
    name: str
    environment: Environment
    url: str
    created_at: datetime
    type: str = tag("SMP")


@attrs.frozen
class ReceiverLookupResponse:
    registered: bool
    smp_url: str | None
    document_types: tuple[str, ...]
    endpoints: tuple[PublishedEndpoint, ...]
    can_receive: bool
    reason: str | None


# --- webhooks -------------------------------------------------------------------------------


@response_class
class WebhookResponse:
    id: uuid.UUID
    org_id: uuid.UUID
    url: str
    events: tuple[str, ...] = shown(schema={"type": "array", "items": _EVENT_NAME})
    is_enabled: bool
    created_at: datetime
    created_by: UserRef
    last_modified_at: datetime
    last_modified_by: UserRef
    description: str
    type: str = tag("WEBHOOK")


@response_class
class NewWebhookResponse(WebhookResponse):
    secret: str = given(description="whsec_... signing secret, shown once")


@response_class
class EventResponse:
    id: uuid.UUID
    org_id: uuid.UUID
    event_type: str = shown(schema=_EVENT_NAME)
    payload: Mapping[str, Any]
    created_at: datetime
    status: DeliveryStatus
    deliveries: tuple[DeliverySummary, ...]
    next_attempt_at: datetime | None
    type: str = tag("WEBHOOK_EVENT")


# --- transactions ---------------------------------------------------------------------------


@response_class
class TransactionResponse:
    """A transaction; ``serviceError`` and ``mlsResponseCode`` only when there is one."""

    id: uuid.UUID
    transport_profile: str
    sender_id: str
    receiver_id: str
    doc_type_id: str
    process_id: str
    sender_country: str
    receiver_country: str
    sender_sp: str = shown(json="senderSP")
    receiver_sp: str = shown(json="receiverSP")
    doc_instance_id: str
    transaction_status: Status
    created_at: datetime = shown(source="created_ns", render=iso_ns)
    ap_id: uuid.UUID
    direction: Direction
    service_error: ServiceError | None = shown(omit_none=True)
    mls_response_code: str | None = shown(omit_none=True)


@attrs.frozen
class ArtefactResponse:
    id: uuid.UUID
    type: ArtefactType
    content_type: str
    size: int
    created_at: datetime


ORGANISATION = Answer(OrganisationResponse, "Organisation")
USER = Answer(UserResponse, "User")
ME = Answer(MeResponse, "UserWithMemberships")
MEMBER = Answer(MemberResponse, "Member")
API_KEY = Answer(ApiKeyResponse, "ApiKey")
NEW_API_KEY = Answer(NewApiKeyResponse, "NewApiKey")
PARTICIPANT = Answer(ParticipantResponse, "Participant")
SUPPORTED = Answer(SupportedDocumentTypeResponse, "SupportedDocumentTypeEntry")
ACCESS_POINT = Answer(AccessPointResponse, "AccessPoint")
CERTIFICATE = Answer(CertificateResponse, "Certificate")
SMP = Answer(SmpResponse, "Smp")
RECEIVER_LOOKUP = Answer(ReceiverLookupResponse, "ReceiverLookup")
WEBHOOK = Answer(WebhookResponse, "Webhook")
NEW_WEBHOOK = Answer(NewWebhookResponse, "NewWebhook")
EVENT = Answer(EventResponse, "WebhookEvent")
TRANSACTION = Answer(TransactionResponse, "Transaction")
ARTEFACT = Answer(ArtefactResponse, "Artefact")
IDS = Answer(IdsResponse, "ChangedIds", record=False)
STATUS = Answer(StatusResponse, "Status", record=False)
ACCEPTED = Answer(AcceptedResponse, "Accepted", record=False)
UPLOAD_URL = Answer(UploadUrlResponse, "UploadUrl", record=False)
CONFIRMATION = Answer(ConfirmationResponse, "Confirmation", record=False)
MIGRATION_KEY = Answer(MigrationKeyResponse, "MigrationKey", record=False)
VALIDATION = Answer(ValidationResponse, "ValidationResult")
ERROR = Answer(ErrorResponse, "Error", record=False)


class ResponsePayloads:
    """``application.ports.EventPayloads``: a record rendered by the response class that
    answers for it over HTTP (an event's transaction, a validation summary), so the two cannot
    differ."""

    def __init__(self, conv: cattrs.Converter) -> None:
        self._conv = conv

    def transaction(self, tx: Any) -> dict[str, Any]:
        return TRANSACTION.dump(self._conv, tx)

    def validation(self, result: Any) -> dict[str, Any]:
        return VALIDATION.dump(self._conv, result)
