"""The aggregates the service stores, as collections of the storage port."""

from __future__ import annotations

from typing import Any

from fourcorner.application.storage import Collection
from fourcorner.domain import (
    api_key,
    certificates,
    idempotency,
    member,
    network_services,
    organisation,
    participant,
    sml,
    transaction,
    user,
    webhook,
)
from fourcorner.domain.api_key import ApiKey
from fourcorner.domain.certificates import Certificate
from fourcorner.domain.filtering import FieldSpec, FieldType
from fourcorner.domain.idempotency import IdempotencyKey
from fourcorner.domain.member import Member
from fourcorner.domain.network_services import AccessPoint, Smp
from fourcorner.domain.organisation import Organisation
from fourcorner.domain.participant import Participant
from fourcorner.domain.sml import LocatorTask
from fourcorner.domain.smp import SmpRegistration
from fourcorner.domain.transaction import Artefact, Transaction, UsedUpload
from fourcorner.domain.user import DeletedIdentity, User
from fourcorner.domain.webhook import Delivery, Event, Webhook


def _org_id(spec_get: str = "org_id") -> FieldSpec:
    return FieldSpec("orgId", FieldType.UUID, lambda r: getattr(r, spec_get))


ORGANISATIONS: Collection[Organisation] = Collection(
    name="organisations",
    type=Organisation,
    columns={
        **organisation.FILTERS,
        "legalKey": FieldSpec("legalKey", FieldType.STRING, lambda o: o.legal_key),
        "createdBy": FieldSpec("createdBy", FieldType.STRING, lambda o: o.created_by.user_id),
    },
    filterable=frozenset(organisation.FILTERS),
    search=organisation.SEARCH,
    unique=(("legalKey",),),
)

USERS: Collection[User] = Collection(
    name="users",
    type=User,
    columns={
        **user.FILTERS,
        # the identity (issuer, subject) that signs the user in; None on records not yet bound
        "identityKey": FieldSpec("identityKey", FieldType.STRING, lambda u: u.identity_key),
    },
    filterable=frozenset(user.FILTERS),
    search=user.SEARCH,
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

MEMBERS: Collection[Member] = Collection(
    name="members",
    type=Member,
    columns={
        **member.FILTERS,
        # None for an invitation (no user yet), so invitations never clash on it
        "userRef": FieldSpec("userRef", FieldType.STRING, lambda m: m.user_ref or None),
        "orgId": _org_id(),
        # an open invitation's address: one per organisation, found at sign-in
        "invitedEmail": FieldSpec("invitedEmail", FieldType.STRING, lambda m: m.invited_email),
    },
    # status is the list itself (members, or pending members), not a client filter
    filterable=frozenset(member.FILTERS) - {"status"},
    search=member.SEARCH,
    unique=(("orgId", "userRef"), ("invitedEmail", "orgId")),
)

API_KEYS: Collection[ApiKey] = Collection(
    name="api_keys",
    type=ApiKey,
    columns={
        **api_key.FILTERS,
        "orgId": _org_id(),
        "keyHash": FieldSpec("keyHash", FieldType.STRING, lambda k: k.key_hash),
    },
    filterable=frozenset(api_key.FILTERS),
    search=api_key.SEARCH,
    unique=(("keyHash",),),
)

PARTICIPANTS: Collection[Participant] = Collection(
    name="participants",
    type=Participant,
    columns={
        **participant.FILTERS,
        "orgId": _org_id(),
        "identifierKey": FieldSpec("identifierKey", FieldType.STRING, lambda p: p.identifier_key),
    },
    filterable=frozenset(participant.FILTERS),
    search=participant.SEARCH,
    unique=(("identifierKey",),),
)

CERTIFICATES: Collection[Certificate] = Collection(
    name="certificates",
    type=Certificate,
    columns={
        **certificates.CERTIFICATE_FILTERS,
        "orgId": _org_id(),
        # a public key is registered once (application.certificate_keys)
        "heldKey": FieldSpec("heldKey", FieldType.STRING, lambda c: c.held_key),
    },
    filterable=frozenset(certificates.CERTIFICATE_FILTERS),
    search=("name",),
    unique=(("heldKey",),),
)

ACCESS_POINTS: Collection[AccessPoint] = Collection(
    name="access_points",
    type=AccessPoint,
    columns={**network_services.AP_FILTERS, "orgId": _org_id()},
    filterable=frozenset(network_services.AP_FILTERS),
    search=("name",),
)

SMPS: Collection[Smp] = Collection(
    name="smps",
    type=Smp,
    columns={**network_services.SMP_FILTERS, "orgId": _org_id()},
    filterable=frozenset(network_services.SMP_FILTERS),
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

# The outbox of registrations in the network's SML (application.sml)
LOCATOR_TASKS: Collection[LocatorTask] = Collection(
    name="locator_tasks",
    type=LocatorTask,
    columns=sml.COLUMNS,
    filterable=frozenset(),
)

WEBHOOKS: Collection[Webhook] = Collection(
    name="webhooks",
    type=Webhook,
    columns={**webhook.WEBHOOK_FILTERS, "orgId": _org_id()},
    filterable=frozenset(webhook.WEBHOOK_FILTERS),
    search=("url",),
)

EVENTS: Collection[Event] = Collection(
    name="events",
    type=Event,
    columns={**webhook.EVENT_FILTERS, "orgId": _org_id()},
    filterable=frozenset(webhook.EVENT_FILTERS),
    default_sort="-createdAt",  # newest first
)

DELIVERIES: Collection[Delivery] = Collection(
    name="deliveries",
    type=Delivery,
    columns={**webhook.DELIVERY_COLUMNS, "orgId": _org_id()},
    filterable=frozenset(),
)

TRANSACTIONS: Collection[Transaction] = Collection(
    name="transactions",
    type=Transaction,
    columns={**transaction.FILTERS, **transaction.WORK_COLUMNS, "orgId": _org_id()},
    filterable=frozenset(transaction.FILTERS),
    search=("senderId", "receiverId", "docInstanceId"),
    unique=(("dedupKey",),),
    default_sort="-createdAt",  # newest first
)

ARTEFACTS: Collection[Artefact] = Collection(
    name="artefacts",
    type=Artefact,
    columns={**transaction.ARTEFACT_COLUMNS, "orgId": _org_id()},
    filterable=frozenset(transaction.ARTEFACT_COLUMNS),
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

IDEMPOTENCY_KEYS: Collection[IdempotencyKey] = Collection(
    name="idempotency_keys",
    type=IdempotencyKey,
    columns=idempotency.COLUMNS,
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
