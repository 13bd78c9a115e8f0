"""The aggregates the service stores, as collections of the storage port.

Each collection"s columns are named as the interface names its fields (camelCase JSON): the
filters a client may give a list (``filter=<field>:<op>:<value>``), the fields free-text
search looks in and the sorts are declared here, beside the storage columns the service finds
records by (``application.repositories``), so these wire names stay out of the domain.
"""

from __future__ import annotations

from typing import Any

from fourcorner.application.storage import Collection
from fourcorner.domain.api_key import ApiKey
from fourcorner.domain.catalogue import neutral
from fourcorner.domain.events import EVENT_NAMES
from fourcorner.domain.filtering import FieldSpec, FieldType, fields
from fourcorner.domain.idempotency import IdempotencyKey
from fourcorner.domain.infrastructure import AccessPoint, Certificate, Smp
from fourcorner.domain.member import Member, MemberStatus
from fourcorner.domain.organisation import REQUESTABLE_MODES, Mode, Organisation
from fourcorner.domain.participant import Participant
from fourcorner.domain.roles import ORG_ROLES
from fourcorner.domain.smp import SmpRegistration
from fourcorner.domain.transaction import Artefact, ArtefactType, Status, Transaction, UsedUpload
from fourcorner.domain.user import DeletedIdentity, User
from fourcorner.domain.webhook import Delivery, DeliveryStatus, Event, Webhook


def _org_id(spec_get: str = "org_id") -> FieldSpec:
    return FieldSpec("orgId", FieldType.UUID, lambda r: getattr(r, spec_get))


_ORGANISATION_FILTERS = fields(
    FieldSpec("id", FieldType.UUID, lambda o: o.id),
    FieldSpec("legalName", FieldType.STRING, lambda o: o.legal_name),
    FieldSpec("shortName", FieldType.STRING, lambda o: o.short_name),
    FieldSpec("countryCode", FieldType.STRING, lambda o: o.country_code),
    FieldSpec("legalIdentifier", FieldType.STRING, lambda o: o.legal_identifier),
    FieldSpec("legalIdentifierCode", FieldType.STRING, lambda o: o.legal_identifier_code),
    FieldSpec(
        "organisationMode",
        FieldType.ENUM,
        lambda o: o.organisation_mode,
        choices=tuple(m.value for m in Mode),
    ),
    FieldSpec(
        "modeChangeRequest",
        FieldType.ENUM,
        lambda o: o.mode_change_request,
        choices=tuple(m.value for m in REQUESTABLE_MODES),
        nullable=True,
    ),
    FieldSpec("sharedModeEnabled", FieldType.BOOL, lambda o: o.shared_mode_enabled),
    FieldSpec("createdAt", FieldType.DATETIME, lambda o: o.created_at),
    FieldSpec("lastModifiedAt", FieldType.DATETIME, lambda o: o.last_modified_at),
)

ORGANISATIONS: Collection[Organisation] = Collection(
    name="organisations",
    type=Organisation,
    columns={
        **_ORGANISATION_FILTERS,
        "legalKey": FieldSpec("legalKey", FieldType.STRING, lambda o: o.legal_key),
        "createdBy": FieldSpec("createdBy", FieldType.STRING, lambda o: o.created_by.user_id),
    },
    filterable=frozenset(_ORGANISATION_FILTERS),
    search=("legalName", "shortName", "legalIdentifier"),
    unique=(("legalKey",),),
)

_USER_FILTERS = fields(
    FieldSpec("id", FieldType.STRING, lambda u: u.id),
    FieldSpec("email", FieldType.STRING, lambda u: u.email),
    FieldSpec("name", FieldType.STRING, lambda u: u.name),
    FieldSpec("role", FieldType.ENUM, lambda u: u.role, choices=("user", "superadmin")),
    FieldSpec("countryCode", FieldType.STRING, lambda u: u.country_code),
    FieldSpec("createdAt", FieldType.DATETIME, lambda u: u.created_at),
)

USERS: Collection[User] = Collection(
    name="users",
    type=User,
    columns={
        **_USER_FILTERS,
        # the identity (issuer, subject) that signs the user in; None on records not yet bound
        "identityKey": FieldSpec("identityKey", FieldType.STRING, lambda u: u.identity_key),
    },
    filterable=frozenset(_USER_FILTERS),
    search=("name", "email"),
    unique=(("identityKey",),),
)

DELETED_IDENTITIES: Collection[DeletedIdentity] = Collection(
    name="deleted_identities",
    type=DeletedIdentity,
    columns={
        "id": FieldSpec("id", FieldType.UUID, lambda d: d.id),
        "createdAt": FieldSpec("createdAt", FieldType.DATETIME, lambda d: d.created_at),
        "identityKey": FieldSpec("identityKey", FieldType.STRING, lambda d: d.identity_key),
    },
    filterable=frozenset(),
    unique=(("identityKey",),),
)

_MEMBER_FILTERS = fields(
    FieldSpec("id", FieldType.UUID, lambda m: m.id),
    FieldSpec("role", FieldType.ENUM, lambda m: m.role, choices=tuple(r.value for r in ORG_ROLES)),
    FieldSpec(
        "status", FieldType.ENUM, lambda m: m.status, choices=tuple(s.value for s in MemberStatus)
    ),
    FieldSpec("userRef", FieldType.STRING, lambda m: m.user_ref),
    FieldSpec("firstName", FieldType.STRING, lambda m: m.first_name),
    FieldSpec("lastName", FieldType.STRING, lambda m: m.last_name),
    FieldSpec("createdAt", FieldType.DATETIME, lambda m: m.created_at),
)

MEMBERS: Collection[Member] = Collection(
    name="members",
    type=Member,
    columns={
        **_MEMBER_FILTERS,
        # None for an invitation (no user yet), so invitations never clash on it
        "userRef": FieldSpec("userRef", FieldType.STRING, lambda m: m.user_ref or None),
        "orgId": _org_id(),
        # an open invitation"s address: one per organisation, found at sign-in
        "invitedEmail": FieldSpec("invitedEmail", FieldType.STRING, lambda m: m.invited_email),
    },
    # status is the list itself (members, or pending members), not a client filter
    filterable=frozenset(_MEMBER_FILTERS) - {"status"},
    search=("firstName", "lastName", "userRef"),
    unique=(("orgId", "userRef"), ("invitedEmail", "orgId")),
)

_API_KEY_FILTERS = fields(
    FieldSpec("id", FieldType.UUID, lambda k: k.id),
    FieldSpec("name", FieldType.STRING, lambda k: k.name),
    FieldSpec("role", FieldType.ENUM, lambda k: k.role, choices=tuple(r.value for r in ORG_ROLES)),
    FieldSpec("isActive", FieldType.BOOL, lambda k: k.is_active),
    FieldSpec("expires", FieldType.DATETIME, lambda k: k.expires),
    FieldSpec("createdAt", FieldType.DATETIME, lambda k: k.created_at),
)

API_KEYS: Collection[ApiKey] = Collection(
    name="api_keys",
    type=ApiKey,
    columns={
        **_API_KEY_FILTERS,
        "orgId": _org_id(),
        "keyHash": FieldSpec("keyHash", FieldType.STRING, lambda k: k.key_hash),
    },
    filterable=frozenset(_API_KEY_FILTERS),
    search=("name",),
    unique=(("keyHash",),),
)

_PARTICIPANT_FILTERS = fields(
    FieldSpec("id", FieldType.UUID, lambda p: p.id),
    FieldSpec("name", FieldType.STRING, lambda p: p.name),
    FieldSpec("participantIdentifier", FieldType.STRING, lambda p: p.identifier_key),
    FieldSpec("environment", FieldType.ENUM, lambda p: p.environment, choices=("TEST", "PROD")),
    FieldSpec("smpRef", FieldType.UUID, lambda p: p.smp_ref),
    FieldSpec("apRef", FieldType.UUID, lambda p: p.ap_ref),
    FieldSpec(
        "transportProfile", FieldType.STRING, lambda p: p.transport_profile, normalise=neutral
    ),
    FieldSpec("status", FieldType.ENUM, lambda p: p.status, choices=("ACTIVE",)),
    FieldSpec("createdAt", FieldType.DATETIME, lambda p: p.created_at),
)

PARTICIPANTS: Collection[Participant] = Collection(
    name="participants",
    type=Participant,
    columns={
        **_PARTICIPANT_FILTERS,
        "orgId": _org_id(),
        "identifierKey": FieldSpec("identifierKey", FieldType.STRING, lambda p: p.identifier_key),
    },
    filterable=frozenset(_PARTICIPANT_FILTERS),
    search=("name", "participantIdentifier"),
    unique=(("identifierKey",),),
)

_CERTIFICATE_FILTERS = fields(
    FieldSpec("id", FieldType.UUID, lambda c: c.id),
    FieldSpec("name", FieldType.STRING, lambda c: c.name),
    FieldSpec("service", FieldType.ENUM, lambda c: c.service, choices=("AP", "SMP")),
    FieldSpec(
        "environment", FieldType.ENUM, lambda c: c.environment, choices=("test", "production")
    ),
    FieldSpec("validUntil", FieldType.DATETIME, lambda c: c.valid_until),
    FieldSpec("createdAt", FieldType.DATETIME, lambda c: c.created_at),
)

CERTIFICATES: Collection[Certificate] = Collection(
    name="certificates",
    type=Certificate,
    columns={
        **_CERTIFICATE_FILTERS,
        "orgId": _org_id(),
        # a public key is registered once (application.certificate_keys)
        "heldKey": FieldSpec("heldKey", FieldType.STRING, lambda c: c.held_key),
    },
    filterable=frozenset(_CERTIFICATE_FILTERS),
    search=("name",),
    unique=(("heldKey",),),
)

_AP_FILTERS = fields(
    FieldSpec("id", FieldType.UUID, lambda a: a.id),
    FieldSpec("name", FieldType.STRING, lambda a: a.name),
    FieldSpec("environment", FieldType.ENUM, lambda a: a.environment, choices=("TEST", "PROD")),
    FieldSpec(
        "transportProfile", FieldType.STRING, lambda a: a.transport_profile, normalise=neutral
    ),
    FieldSpec("certificateRef", FieldType.UUID, lambda a: a.certificate_ref),
    FieldSpec("createdAt", FieldType.DATETIME, lambda a: a.created_at),
)

ACCESS_POINTS: Collection[AccessPoint] = Collection(
    name="access_points",
    type=AccessPoint,
    columns={**_AP_FILTERS, "orgId": _org_id()},
    filterable=frozenset(_AP_FILTERS),
    search=("name",),
)

_SMP_FILTERS = fields(
    FieldSpec("id", FieldType.UUID, lambda s: s.id),
    FieldSpec("name", FieldType.STRING, lambda s: s.name),
    FieldSpec("environment", FieldType.ENUM, lambda s: s.environment, choices=("TEST", "PROD")),
    FieldSpec("createdAt", FieldType.DATETIME, lambda s: s.created_at),
)

SMPS: Collection[Smp] = Collection(
    name="smps",
    type=Smp,
    columns={**_SMP_FILTERS, "orgId": _org_id()},
    filterable=frozenset(_SMP_FILTERS),
    search=("name",),
)

SMP_REGISTRATIONS: Collection[SmpRegistration] = Collection(
    name="smp_registrations",
    type=SmpRegistration,
    columns={
        "id": FieldSpec("id", FieldType.UUID, lambda r: r.id),
        "createdAt": FieldSpec("createdAt", FieldType.DATETIME, lambda r: r.created_at),
        "smpId": FieldSpec("smpId", FieldType.UUID, lambda r: r.smp_id),
        "participant": FieldSpec("participant", FieldType.STRING, lambda r: r.participant),
    },
    filterable=frozenset({"smpId", "participant"}),
    unique=(("smpId", "participant"),),
)

_WEBHOOK_FILTERS = fields(
    FieldSpec("id", FieldType.UUID, lambda w: w.id),
    FieldSpec("url", FieldType.STRING, lambda w: w.url),
    FieldSpec("isEnabled", FieldType.BOOL, lambda w: w.is_enabled),
    FieldSpec("createdAt", FieldType.DATETIME, lambda w: w.created_at),
)

WEBHOOKS: Collection[Webhook] = Collection(
    name="webhooks",
    type=Webhook,
    columns={**_WEBHOOK_FILTERS, "orgId": _org_id()},
    filterable=frozenset(_WEBHOOK_FILTERS),
    search=("url",),
)

_EVENT_FILTERS = fields(
    FieldSpec("id", FieldType.UUID, lambda e: e.id),
    FieldSpec("eventType", FieldType.ENUM, lambda e: e.event_type, choices=EVENT_NAMES),
    FieldSpec(
        "status", FieldType.ENUM, lambda e: e.status, choices=tuple(s.value for s in DeliveryStatus)
    ),
    FieldSpec("createdAt", FieldType.DATETIME, lambda e: e.created_at),
)

EVENTS: Collection[Event] = Collection(
    name="events",
    type=Event,
    columns={**_EVENT_FILTERS, "orgId": _org_id()},
    filterable=frozenset(_EVENT_FILTERS),
    default_sort="-createdAt",  # newest first
)

_DELIVERY_COLUMNS = fields(
    FieldSpec("id", FieldType.UUID, lambda d: d.id),
    FieldSpec("eventId", FieldType.UUID, lambda d: d.event_id),
    FieldSpec("webhookId", FieldType.UUID, lambda d: d.webhook_id),
    FieldSpec(
        "status", FieldType.ENUM, lambda d: d.status, choices=tuple(s.value for s in DeliveryStatus)
    ),
    FieldSpec("nextAttemptAt", FieldType.DATETIME, lambda d: d.next_attempt_at),
    FieldSpec("leaseUntil", FieldType.DATETIME, lambda d: d.lease_until),
    FieldSpec("createdAt", FieldType.DATETIME, lambda d: d.created_at),
)

DELIVERIES: Collection[Delivery] = Collection(
    name="deliveries",
    type=Delivery,
    columns={**_DELIVERY_COLUMNS, "orgId": _org_id()},
    filterable=frozenset(),
)

_TRANSACTION_FILTERS = fields(
    FieldSpec("id", FieldType.UUID, lambda t: t.id),
    FieldSpec(
        "transactionStatus",
        FieldType.ENUM,
        lambda t: t.transaction_status,
        choices=tuple(s.value for s in Status),
    ),
    FieldSpec("senderId", FieldType.STRING, lambda t: t.sender_id),
    FieldSpec("receiverId", FieldType.STRING, lambda t: t.receiver_id),
    FieldSpec("docTypeId", FieldType.STRING, lambda t: t.doc_type_id),
    FieldSpec("processId", FieldType.STRING, lambda t: t.process_id),
    FieldSpec("docInstanceId", FieldType.STRING, lambda t: t.doc_instance_id),
    FieldSpec("apId", FieldType.UUID, lambda t: t.ap_id),
    # shown with nanoseconds (API.md); compared at the stored precision, microseconds
    FieldSpec("createdAt", FieldType.DATETIME, lambda t: t.created_at, shown=9),
)

_TRANSACTION_WORK_COLUMNS = fields(
    FieldSpec(
        "direction", FieldType.ENUM, lambda t: t.direction, choices=("TO_NETWORK", "FROM_NETWORK")
    ),
    FieldSpec("kind", FieldType.ENUM, lambda t: t.kind, choices=("DOCUMENT", "MLS")),
    FieldSpec("nextAttemptAt", FieldType.DATETIME, lambda t: t.next_attempt_at),
    FieldSpec("leaseUntil", FieldType.DATETIME, lambda t: t.lease_until),
    FieldSpec("as4MessageId", FieldType.STRING, lambda t: t.as4_message_id),
    FieldSpec("dedupKey", FieldType.STRING, lambda t: t.dedup_key),
)

TRANSACTIONS: Collection[Transaction] = Collection(
    name="transactions",
    type=Transaction,
    columns={**_TRANSACTION_FILTERS, **_TRANSACTION_WORK_COLUMNS, "orgId": _org_id()},
    filterable=frozenset(_TRANSACTION_FILTERS),
    search=("senderId", "receiverId", "docInstanceId"),
    unique=(("dedupKey",),),
    default_sort="-createdAt",  # newest first
)

_ARTEFACT_COLUMNS = fields(
    FieldSpec("id", FieldType.UUID, lambda a: a.id),
    FieldSpec("transactionId", FieldType.UUID, lambda a: a.transaction_id),
    FieldSpec(
        "type", FieldType.ENUM, lambda a: a.type, choices=tuple(t.value for t in ArtefactType)
    ),
    FieldSpec("createdAt", FieldType.DATETIME, lambda a: a.created_at),
)

ARTEFACTS: Collection[Artefact] = Collection(
    name="artefacts",
    type=Artefact,
    columns={**_ARTEFACT_COLUMNS, "orgId": _org_id()},
    filterable=frozenset(_ARTEFACT_COLUMNS),
)

UPLOADS: Collection[UsedUpload] = Collection(
    name="uploads",
    type=UsedUpload,
    columns={
        "id": FieldSpec("id", FieldType.UUID, lambda u: u.id),
        "createdAt": FieldSpec("createdAt", FieldType.DATETIME, lambda u: u.created_at),
    },
    filterable=frozenset(),
)

_IDEMPOTENCY_COLUMNS = fields(
    FieldSpec("id", FieldType.UUID, lambda k: k.id),
    FieldSpec("orgId", FieldType.UUID, lambda k: k.org_id),
    FieldSpec("key", FieldType.STRING, lambda k: k.key),
    FieldSpec("createdAt", FieldType.DATETIME, lambda k: k.created_at),
)

IDEMPOTENCY_KEYS: Collection[IdempotencyKey] = Collection(
    name="idempotency_keys",
    type=IdempotencyKey,
    columns=_IDEMPOTENCY_COLUMNS,
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
)
