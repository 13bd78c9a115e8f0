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
    """``PUBLISHED`` once the directory was asked to index the card (``request-pd-publish``);
    ``OUTDATED`` when the card the SMP serves changed since and the directory is still to be
    asked to index it again (``reason``: what the directory answered the last time)."""

    NOT_REQUESTED = "NOT_REQUESTED"
    PUBLISHED = "PUBLISHED"
    OUTDATED = "OUTDATED"


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
    # OUTDATED: when the served card last changed, and why the directory was not told yet
    changed_at: datetime | None = None
    reason: str | None = None

    @property
    def in_directory(self) -> bool:
        """Whether the directory was asked to index the card (it may hold an older one)."""
        return self.state is not PublicationState.NOT_REQUESTED

    def card_changed(self, now: datetime) -> DirectoryPublication:
        """The served card changed at ``now``: a card in the directory is outdated."""
        if not self.in_directory:
            return self
        return attrs.evolve(self, state=PublicationState.OUTDATED, changed_at=now, reason=None)

    def reindexed(self, now: datetime) -> DirectoryPublication:
        """The directory was asked at ``now`` to index the current card."""
        return DirectoryPublication(PublicationState.PUBLISHED, now)

    def not_reindexed(self, reason: str) -> DirectoryPublication:
        return attrs.evolve(self, reason=reason)


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
