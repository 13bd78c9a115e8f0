"""The aggregates the service stores, as collections of the storage port.

Each collection's columns are named as the interface names its fields (camelCase JSON): the
filters a client may give a list (``filter=<field>:<op>:<value>``), the fields free-text
search looks in and the sorts are declared here, beside the storage columns the service finds
records by (``application.repositories``), so these wire names stay out of the domain.
"""

from __future__ import annotations

import re
from operator import attrgetter
from typing import Any

from fourcorner.application.storage import Collection
from fourcorner.domain.api_key import ApiKey
from fourcorner.domain.catalogue import neutral
from fourcorner.domain.certificates import Certificate
from fourcorner.domain.events import EVENT_NAMES
from fourcorner.domain.filtering import FieldSpec, FieldType, fields
from fourcorner.domain.idempotency import IdempotencyKey
from fourcorner.domain.member import Member, MemberStatus
from fourcorner.domain.network_services import AccessPoint, Smp
from fourcorner.domain.organisation import REQUESTABLE_MODES, Mode, Organisation
from fourcorner.domain.participant import Participant, ParticipantStatus
from fourcorner.domain.roles import ORG_ROLES
from fourcorner.domain.sml import LocatorOperation, LocatorState, LocatorTask
from fourcorner.domain.smp import SmpRegistration
from fourcorner.domain.transaction import (
    Artefact,
    ArtefactType,
    Direction,
    Status,
    Transaction,
    UsedUpload,
)
from fourcorner.domain.user import DeletedIdentity, User
from fourcorner.domain.webhook import Delivery, DeliveryStatus, Event, Webhook


def col(name: str, kind: FieldType, attribute: str | None = None, **options: Any) -> FieldSpec:
    """The column ``name`` holding a record's ``attribute`` (``name`` in snake case unless
    given; a dotted path reads a nested one)."""
    return FieldSpec(name, kind, attrgetter(attribute or _snake(name)), **options)


def _snake(name: str) -> str:
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name).lower()


STRING, ENUM, BOOL, UUID, DATETIME = (
    FieldType.STRING,
    FieldType.ENUM,
    FieldType.BOOL,
    FieldType.UUID,
    FieldType.DATETIME,
)
_ID = col("id", UUID)
_CREATED_AT = col("createdAt", DATETIME)
_ORG_ID = col("orgId", UUID)
_NAME = col("name", STRING)
_ENVIRONMENT = col("environment", ENUM, choices=("TEST", "PROD"))
_TRANSPORT_PROFILE = col("transportProfile", STRING, normalise=neutral)
_ORG_ROLE = col("role", ENUM, choices=tuple(r.value for r in ORG_ROLES))
_DELIVERY_STATUS = col("status", ENUM, choices=tuple(s.value for s in DeliveryStatus))


_ORGANISATION_FILTERS = fields(
    _ID,
    col("legalName", STRING),
    col("shortName", STRING),
    col("countryCode", STRING),
    col("legalIdentifier", STRING),
    col("legalIdentifierCode", STRING),
    col("organisationMode", ENUM, choices=tuple(m.value for m in Mode)),
    col(
        "modeChangeRequest",
        ENUM,
        choices=tuple(m.value for m in REQUESTABLE_MODES),
        nullable=True,
    ),
    col("sharedModeEnabled", BOOL),
    _CREATED_AT,
    col("lastModifiedAt", DATETIME),
)
ORGANISATIONS: Collection[Organisation] = Collection(
    name="organisations",
    type=Organisation,
    columns={
        **_ORGANISATION_FILTERS,
        **fields(col("legalKey", STRING), col("createdBy", STRING, "created_by.user_id")),
    },
    filterable=frozenset(_ORGANISATION_FILTERS),
    search=("legalName", "shortName", "legalIdentifier"),
    unique=(("legalKey",),),
)

_USER_FILTERS = fields(
    col("id", STRING),
    col("email", STRING),
    _NAME,
    col("role", ENUM, choices=("user", "superadmin")),
    col("countryCode", STRING),
    _CREATED_AT,
)
USERS: Collection[User] = Collection(
    name="users",
    type=User,
    # identityKey: the identity (issuer, subject) that signs the user in; None on records
    # not yet bound
    columns={**_USER_FILTERS, **fields(col("identityKey", STRING))},
    filterable=frozenset(_USER_FILTERS),
    search=("name", "email"),
    unique=(("identityKey",),),
)

DELETED_IDENTITIES: Collection[DeletedIdentity] = Collection(
    name="deleted_identities",
    type=DeletedIdentity,
    columns=fields(_ID, _CREATED_AT, col("identityKey", STRING)),
    filterable=frozenset(),
    unique=(("identityKey",),),
)

_MEMBER_FILTERS = fields(
    _ID,
    _ORG_ROLE,
    col("status", ENUM, choices=tuple(s.value for s in MemberStatus)),
    col("userRef", STRING),
    col("firstName", STRING),
    col("lastName", STRING),
    _CREATED_AT,
)
MEMBERS: Collection[Member] = Collection(
    name="members",
    type=Member,
    columns={
        **_MEMBER_FILTERS,
        # None for an invitation (no user yet), so invitations never clash on it
        "userRef": FieldSpec("userRef", STRING, lambda m: m.user_ref or None),
        # invitedEmail: an open invitation's address, one per organisation, found at sign-in
        **fields(_ORG_ID, col("invitedEmail", STRING)),
    },
    # status is the list itself (members, or pending members), not a client filter
    filterable=frozenset(_MEMBER_FILTERS) - {"status"},
    # email: the member's address, and an invitation's (migration 0018 for older records)
    search=("firstName", "lastName", "userRef", col("email", STRING)),
    unique=(("orgId", "userRef"), ("invitedEmail", "orgId")),
)

_API_KEY_FILTERS = fields(
    _ID, _NAME, _ORG_ROLE, col("isActive", BOOL), col("expires", DATETIME), _CREATED_AT
)
API_KEYS: Collection[ApiKey] = Collection(
    name="api_keys",
    type=ApiKey,
    columns={**_API_KEY_FILTERS, **fields(_ORG_ID, col("keyHash", STRING))},
    filterable=frozenset(_API_KEY_FILTERS),
    search=("name",),
    unique=(("keyHash",),),
)

_PARTICIPANT_FILTERS = fields(
    _ID,
    _NAME,
    col("participantIdentifier", STRING, "identifier_key"),
    _ENVIRONMENT,
    col("smpRef", UUID),
    col("apRef", UUID),
    _TRANSPORT_PROFILE,
    col("status", ENUM, choices=tuple(s.value for s in ParticipantStatus)),
    _CREATED_AT,
)
PARTICIPANTS: Collection[Participant] = Collection(
    name="participants",
    type=Participant,
    # directoryDueAt: when the directory is asked again for an OUTDATED card (the workers')
    columns={
        **_PARTICIPANT_FILTERS,
        **fields(
            _ORG_ID,
            col("identifierKey", STRING),
            col("directoryDueAt", DATETIME, "directory_due"),
        ),
    },
    filterable=frozenset(_PARTICIPANT_FILTERS),
    search=("name", "participantIdentifier"),
    # an identifier is unique per environment, as in the network (an SML each): the same
    # one may be registered in TEST and in PROD
    unique=(("identifierKey", "environment"),),
)

_CERTIFICATE_FILTERS = fields(
    _ID,
    _NAME,
    col("service", ENUM, choices=("AP", "SMP")),
    col("environment", ENUM, choices=("test", "production")),
    col("validUntil", DATETIME),
    _CREATED_AT,
)
CERTIFICATES: Collection[Certificate] = Collection(
    name="certificates",
    type=Certificate,
    # heldKey: a public key is registered once (application.certificate_keys)
    columns={**_CERTIFICATE_FILTERS, **fields(_ORG_ID, col("heldKey", STRING))},
    filterable=frozenset(_CERTIFICATE_FILTERS),
    search=("name",),
    unique=(("heldKey",),),
)

_AP_FILTERS = fields(
    _ID, _NAME, _ENVIRONMENT, _TRANSPORT_PROFILE, col("certificateRef", UUID), _CREATED_AT
)
ACCESS_POINTS: Collection[AccessPoint] = Collection(
    name="access_points",
    type=AccessPoint,
    columns={**_AP_FILTERS, **fields(_ORG_ID)},
    filterable=frozenset(_AP_FILTERS),
    search=("name",),
)

_SMP_FILTERS = fields(_ID, _NAME, _ENVIRONMENT, _CREATED_AT)
SMPS: Collection[Smp] = Collection(
    name="smps",
    type=Smp,
    columns={**_SMP_FILTERS, **fields(_ORG_ID)},
    filterable=frozenset(_SMP_FILTERS),
    search=("name",),
)

SMP_REGISTRATIONS: Collection[SmpRegistration] = Collection(
    name="smp_registrations",
    type=SmpRegistration,
    columns=fields(_ID, _CREATED_AT, col("smpId", UUID), col("participant", STRING)),
    filterable=frozenset({"smpId", "participant"}),
    unique=(("smpId", "participant"),),
)

# The outbox of registrations in the network's SML (application.sml)
LOCATOR_TASKS: Collection[LocatorTask] = Collection(
    name="locator_tasks",
    type=LocatorTask,
    columns=fields(
        _ID,
        _CREATED_AT,
        _ENVIRONMENT,
        col("operation", ENUM, choices=tuple(o.value for o in LocatorOperation)),
        col("state", ENUM, choices=tuple(s.value for s in LocatorState)),
        col("nextAttemptAt", DATETIME),
        col("leaseUntil", DATETIME),
    ),
    filterable=frozenset(),
)

_WEBHOOK_FILTERS = fields(_ID, col("url", STRING), col("isEnabled", BOOL), _CREATED_AT)
WEBHOOKS: Collection[Webhook] = Collection(
    name="webhooks",
    type=Webhook,
    columns={**_WEBHOOK_FILTERS, **fields(_ORG_ID)},
    filterable=frozenset(_WEBHOOK_FILTERS),
    search=("url",),
)

_EVENT_FILTERS = fields(
    _ID, col("eventType", ENUM, choices=EVENT_NAMES), _DELIVERY_STATUS, _CREATED_AT
)


def _payload(*keys: str) -> FieldSpec:
    """The first of ``keys`` an event's payload holds as text ("" for none): a field search
    covers (migrations 0018 and 0019 read the stored payload the same way)."""

    def get(event: Event) -> str:
        for key in keys:
            value = event.payload.get(key)
            if isinstance(value, str):
                return value
        return ""

    return FieldSpec(keys[0], STRING, get)


EVENTS: Collection[Event] = Collection(
    name="events",
    type=Event,
    columns={**_EVENT_FILTERS, **fields(_ORG_ID)},
    filterable=frozenset(_EVENT_FILTERS),
    # the type, the event's id, and the transaction it is about (a document's events carry
    # the transaction as their payload, an MLS's its transactionId) with its participants and
    # its document's instance identifier, as the transactions list searches them
    search=(
        "eventType",
        "id",
        _payload("transactionId", "id"),
        _payload("senderId"),
        _payload("receiverId"),
        _payload("docInstanceId"),
    ),
    default_sort="-createdAt",  # newest first
)

_NEXT_ATTEMPT_AT = col("nextAttemptAt", DATETIME)
_LEASE_UNTIL = col("leaseUntil", DATETIME)
DELIVERIES: Collection[Delivery] = Collection(
    name="deliveries",
    type=Delivery,
    columns=fields(
        _ID,
        col("eventId", UUID),
        col("webhookId", UUID),
        _DELIVERY_STATUS,
        _NEXT_ATTEMPT_AT,
        _LEASE_UNTIL,
        _CREATED_AT,
        _ORG_ID,
        col("host", STRING),  # its webhook's host and port, for the claims (``Delivery.host``)
    ),
    filterable=frozenset(),
    lease="leaseUntil",
)

_TRANSACTION_FILTERS = fields(
    _ID,
    col("transactionStatus", ENUM, choices=tuple(s.value for s in Status)),
    col("senderId", STRING),
    col("receiverId", STRING),
    col("docTypeId", STRING),
    col("processId", STRING),
    col("docInstanceId", STRING),
    col("apId", UUID),
    # shown with nanoseconds (API.md); compared at the stored precision, microseconds
    col("createdAt", DATETIME, shown=9),
)


def _to_network(tx: Transaction) -> bool:
    return tx.direction is Direction.TO_NETWORK


TRANSACTIONS: Collection[Transaction] = Collection(
    name="transactions",
    type=Transaction,
    columns={
        **_TRANSACTION_FILTERS,
        **fields(
            col("direction", ENUM, choices=("TO_NETWORK", "FROM_NETWORK")),
            col("kind", ENUM, choices=("DOCUMENT", "MLS")),
            _NEXT_ATTEMPT_AT,
            _LEASE_UNTIL,
            col("as4MessageId", STRING),
            col("dedupKey", STRING),
            col("messageKey", STRING),
            _ORG_ID,
        ),
    },
    filterable=frozenset(_TRANSACTION_FILTERS),
    search=("senderId", "receiverId", "docInstanceId"),
    # a document once (``dedupKey``, per organisation), and a received AS4 message once
    # (``messageKey``, whatever organisation took it in: a retry finds it so)
    unique=(("dedupKey",), ("messageKey",)),
    default_sort="-createdAt",  # newest first
    # the sending worker claims what goes to the network: a received document is no work of its
    wakes=_to_network,
)

_ARTEFACT_FILTERS = fields(
    _ID,
    col("transactionId", UUID),
    col("type", ENUM, choices=tuple(t.value for t in ArtefactType)),
    _CREATED_AT,
)
ARTEFACTS: Collection[Artefact] = Collection(
    name="artefacts",
    type=Artefact,
    columns={**_ARTEFACT_FILTERS, **fields(_ORG_ID)},
    filterable=frozenset(_ARTEFACT_FILTERS),
    search=("type", col("contentType", STRING), "id"),
)

UPLOADS: Collection[UsedUpload] = Collection(
    name="uploads",
    type=UsedUpload,
    columns=fields(_ID, _CREATED_AT),
    filterable=frozenset(),
)

IDEMPOTENCY_KEYS: Collection[IdempotencyKey] = Collection(
    name="idempotency_keys",
    type=IdempotencyKey,
    columns=fields(_ID, _ORG_ID, col("key", STRING), _CREATED_AT),
    filterable=frozenset(),
    unique=(("orgId", "key"),),
)

ALL: tuple[Collection[Any], ...] = (
    ORGANISATIONS,
    USERS,
    MEMBERS,
    API_KEYS,
    PARTICIPANTS,
    CERTIFICATES,
    ACCESS_POINTS,
    SMPS,
    SMP_REGISTRATIONS,
    WEBHOOKS,
    EVENTS,
    DELIVERIES,
    TRANSACTIONS,
    ARTEFACTS,
    UPLOADS,
    DELETED_IDENTITIES,
    IDEMPOTENCY_KEYS,
    LOCATOR_TASKS,
)
