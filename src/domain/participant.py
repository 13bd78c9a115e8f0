"""Participants: receivers registered in an SMP, reachable through one access point."""

from __future__ import annotations

import enum
import uuid
from datetime import datetime

import attrs

from fourcorner.domain.network_services import Environment
from fourcorner.domain.organisation import Address, Contact, UserRef


class ParticipantStatus(enum.Enum):
    """``ACTIVE`` once registered in its SMP and, where the environment has an SML configured,
    in the SML; ``PENDING`` while the SML registration is still to be confirmed (it is retried);
    ``FAILED`` when the SML refused it for good (``statusReason`` says why)."""

    ACTIVE = "ACTIVE"
    PENDING = "PENDING"
    FAILED = "FAILED"


class PublicationState(enum.Enum):
    NOT_REQUESTED = "NOT_REQUESTED"
    PUBLISHED = "PUBLISHED"


@attrs.frozen
class BusinessCard:
    legal_name: str = ""
    legal_identifier: str = ""
    legal_identifier_code: str = ""
    country_code: str = ""
    website: str = ""
    tax_identifier: str = ""
    global_location_number: str = ""
    duns: str = ""
    business_address: Address | None = None
    contacts: tuple[Contact, ...] = ()


@attrs.frozen
class SupportedDocumentType:
    document_id: str
    process_id: str
    exact_match_only: bool = False


@attrs.frozen
class DirectoryPublication:
    state: PublicationState = PublicationState.NOT_REQUESTED
    published_at: datetime | None = None


@attrs.frozen
class Participant:
    id: uuid.UUID
    org_id: uuid.UUID
    name: str
    participant_identifier: str  # as given: "<ICD>:<value>"
    identifier_key: str  # canonical lower-case form: unique per environment
    smp_ref: uuid.UUID
    ap_ref: uuid.UUID
    environment: Environment
    transport_profile: str
    created_at: datetime
    created_by: UserRef
    last_modified_at: datetime
    last_modified_by: UserRef
    business_card: BusinessCard | None = None
    supported_document_types: tuple[SupportedDocumentType, ...] = ()
    status: ParticipantStatus = ParticipantStatus.ACTIVE
    directory: DirectoryPublication = DirectoryPublication()
    warning: str | None = None
    status_reason: str | None = None
