"""Typed repositories: each collection's records found by named methods over the generic store.

The storage port's ``Repository`` finds records by column values, the columns named as the
interface names them (``first(identifierKey=...)``). The classes here are the one place the
use cases' finders write those names: a use case asks ``Participants(uow).by_identifier(key)``
and mypy checks the call, its arguments and what it returns. Each class also passes on the
generic operations (``get``, ``lock``, ``add``, ``update``, ``list``, ...), so a use case
holds one object per collection.
"""

from __future__ import annotations

import builtins
import uuid
from collections.abc import Sequence
from datetime import datetime
from typing import Any, ClassVar, Generic, TypeVar

import attrs

from fourcorner.application.collections import (
    ACCESS_POINTS,
    API_KEYS,
    ARTEFACTS,
    CERTIFICATES,
    DELETED_IDENTITIES,
    DELIVERIES,
    EVENTS,
    IDEMPOTENCY_KEYS,
    MEMBERS,
    ORGANISATIONS,
    PARTICIPANTS,
    SMP_REGISTRATIONS,
    SMPS,
    TRANSACTIONS,
    USERS,
    WEBHOOKS,
)
from fourcorner.application.listing import condition, equals, none_of, one_of
from fourcorner.application.storage import (
    MAX_LIMIT,
    Collection,
    Cursor,
    Page,
    Query,
    Repository,
    UnitOfWork,
)
from fourcorner.domain.api_key import ApiKey
from fourcorner.domain.certificates import Certificate
from fourcorner.domain.errors import NotAMember
from fourcorner.domain.filtering import Condition, Op
from fourcorner.domain.idempotency import IdempotencyKey
from fourcorner.domain.member import Member, MemberStatus
from fourcorner.domain.network_services import AccessPoint, Environment, Smp
from fourcorner.domain.organisation import Organisation
from fourcorner.domain.participant import Participant
from fourcorner.domain.smp import SmpRegistration
from fourcorner.domain.transaction import (
    Artefact,
    ArtefactType,
    Direction,
    Kind,
    Transaction,
    message_key_of,
)
from fourcorner.domain.transaction import Status as TransactionStatus
from fourcorner.domain.user import DeletedIdentity, User
from fourcorner.domain.webhook import Delivery, DeliveryStatus, Event, Webhook

T = TypeVar("T")


class Records(Generic[T]):
    """One collection's repository in a unit of work: the generic operations, to which each
    subclass adds its collection's named finders."""

    collection: ClassVar[Collection[Any]]

    def __init__(self, uow: UnitOfWork) -> None:
        self._store: Repository[T] = uow.repository(self.collection)

    async def get(self, ident: object) -> T | None:
        return await self._store.get(ident)

    async def lock(self, ident: object) -> T | None:
        return await self._store.lock(ident)

    async def lock_many(self, idents: Sequence[object]) -> builtins.list[T]:
        return await self._store.lock_many(idents)

    async def add(self, item: T) -> None:
        await self._store.add(item)

    async def add_many(self, items: Sequence[T]) -> None:
        """The storage port's bulk path (``Repository.add_many``)."""
        await self._store.add_many(items)

    async def update(self, item: T) -> None:
        await self._store.update(item)

    async def update_many(self, items: Sequence[T], *, before: Sequence[T] = ()) -> None:
        await self._store.update_many(items, before=before)

    async def replace(self, before: T, after: T) -> bool:
        """``after`` stored if the record is still ``before`` (``Repository.replace``)."""
        return await self._store.replace(before, after)

    async def update_leased(
        self, leased: Sequence[tuple[T, datetime]]
    ) -> builtins.list[tuple[T, datetime]]:
        """Each item stored if its record still holds the lease given with it
        (``Repository.update_leased``)."""
        return await self._store.update_leased(leased)

    async def remove(self, ident: object) -> bool:
        return await self._store.remove(ident)

    async def remove_many(self, idents: Sequence[object]) -> int:
        return await self._store.remove_many(idents)

    async def list(self, query: Query) -> Page[T]:
        return await self._store.list(query)

    async def claim(self, query: Query) -> builtins.list[T]:
        return await self._store.claim(query)

    async def lease(self, idents: Sequence[object], until: datetime) -> int:
        """Set the lease of these records (``Repository.lease``)."""
        return await self._store.lease(idents, until)

    async def with_ids(self, ids: Sequence[uuid.UUID]) -> builtins.list[T]:
        """The records of these ids that exist (as few queries as their number needs)."""
        return await self._every(one_of(self.collection, "id", ids)) if ids else []

    async def _every(self, *where: Condition) -> builtins.list[T]:
        """Every record ``where`` holds for, however many pages that takes."""
        found: builtins.list[T] = []
        query = Query(where=where, limit=MAX_LIMIT)
        while True:
            page = await self._store.list(query)
            found.extend(page.items)
            if page.next_cursor is None:
                return found
            query = attrs.evolve(query, after=Cursor.decode(page.next_cursor))


class OrgRecords(Records[T]):
    """Records that belong to one organisation each (an ``orgId`` column)."""

    async def of_org(self, org_id: uuid.UUID) -> builtins.list[T]:
        return await self._store.all(orgId=org_id)


class Organisations(Records[Organisation]):
    collection = ORGANISATIONS

    async def by_legal_key(self, legal_key: str) -> Organisation | None:
        """The organisation registered under this legal identity (``Organisation.legal_key``)."""
        return await self._store.first(legalKey=legal_key)

    async def count_created_by(self, user_id: str) -> int:
        return await self._store.count(createdBy=user_id)


class Users(Records[User]):
    collection = USERS

    async def by_identity(self, identity_key: str) -> User | None:
        """The user the identity (issuer, subject) signs in as."""
        return await self._store.first(identityKey=identity_key)

    async def lock_for_membership(self, user_id: str) -> User | None:
        """The user, locked until the unit of work ends (``lock``), to be made a member; ``None``
        when there is none, never made or deleted meanwhile (the lock waits for a deletion
        under way to end).

        Every unit of work that makes a member record for a user takes this before any
        organisation's lock, as a deletion of users locks them and then the organisations of
        their memberships (``application.users.delete_many``): the two never deadlock, and
        whichever holds the user first is done before the other reads. So no membership is
        left referring to a user who is gone, and a deletion sees every membership of its
        users."""
        return await self._store.lock(user_id)


class DeletedIdentities(Records[DeletedIdentity]):
    collection = DELETED_IDENTITIES

    async def by_identity(self, identity_key: str) -> DeletedIdentity | None:
        return await self._store.first(identityKey=identity_key)


class Members(OrgRecords[Member]):
    collection = MEMBERS

    async def of_user(self, user_id: str) -> list[Member]:
        """Every membership and invitation of the user, in every organisation."""
        return await self._store.all(userRef=user_id)

    async def active_of_user(self, user_id: str) -> list[Member]:
        return await self._store.all(userRef=user_id, status=MemberStatus.ACTIVE)

    async def of_user_in(self, org_id: uuid.UUID, user_id: str) -> Member | None:
        """The user's membership of ``org_id``, whatever its status."""
        return await self._store.first(orgId=org_id, userRef=user_id)

    async def active_of_user_in(self, org_id: uuid.UUID, user_id: str) -> Member | None:
        return await self._store.first(orgId=org_id, userRef=user_id, status=MemberStatus.ACTIVE)

    async def require_active(self, org_id: uuid.UUID, user_id: str) -> None:
        """``NotAMember`` unless ``active_of_user_in`` finds the membership: required
        (``Repository.require``), so the store may check it with the unit of work's commit."""
        await self._store.require(
            NotAMember(org_id=str(org_id)),
            orgId=org_id,
            userRef=user_id,
            status=MemberStatus.ACTIVE,
        )

    async def invitation(self, org_id: uuid.UUID, address: str) -> Member | None:
        """The open invitation of ``org_id`` to the e-mail ``address`` (normalised)."""
        return await self._store.first(orgId=org_id, invitedEmail=address)

    @staticmethod
    def with_status(statuses: Sequence[MemberStatus]) -> tuple[Condition, ...]:
        """The scope of a list of the members (or requests, invitations) in ``statuses``."""
        return (one_of(MEMBERS, "status", statuses),)

    async def invitations_to(self, address: str) -> list[Member]:
        """The open invitations to the e-mail ``address`` (normalised), of every organisation."""
        return await self._store.all(invitedEmail=address)


class ApiKeys(OrgRecords[ApiKey]):
    collection = API_KEYS

    async def by_hash(self, key_hash: str) -> ApiKey | None:
        return await self._store.first(keyHash=key_hash)


class Participants(OrgRecords[Participant]):
    collection = PARTICIPANTS

    async def by_identifier(self, identifier: str, environment: Environment) -> Participant | None:
        """The participant of ``environment`` with this identifier (``scheme::value``), in any
        spelling case. An identifier is unique per environment, as in the network, where each
        environment has its own SML: the same one may be registered in TEST and in PROD."""
        return await self._store.first(identifierKey=identifier.lower(), environment=environment)

    async def of_identifier(self, identifier: str) -> list[Participant]:
        """The participants with this identifier in every environment (one each at most)."""
        return await self._store.all(identifierKey=identifier.lower())

    async def in_environment(
        self, identifier: str, environment: Environment, *, org_id: uuid.UUID | None = None
    ) -> tuple[Participant | None, Participant | None]:
        """The participant with this identifier in ``environment`` (of ``org_id``, when given),
        and, when there is none, the one of the other environment, which only says why a
        document for it is refused here."""
        found = [p for p in await self.of_identifier(identifier) if org_id in (None, p.org_id)]
        here = next((p for p in found if p.environment is environment), None)
        return here, None if here is not None else next(iter(found), None)

    async def served_by(self, ap_id: uuid.UUID) -> list[Participant]:
        """The participants whose documents the access point ``ap_id`` receives."""
        return await self._store.all(apRef=ap_id)

    async def first_served_by(self, ap_id: uuid.UUID) -> Participant | None:
        return await self._store.first(apRef=ap_id)


class Certificates(OrgRecords[Certificate]):
    collection = CERTIFICATES

    async def holding(self, held_key: str) -> Certificate | None:
        """The certificate registered for this public key (``Certificate.held_key``)."""
        return await self._store.first(heldKey=held_key)


class AccessPoints(OrgRecords[AccessPoint]):
    collection = ACCESS_POINTS

    async def first_using(self, certificate_id: uuid.UUID) -> AccessPoint | None:
        """An access point that presents the certificate ``certificate_id``."""
        return await self._store.first(certificateRef=certificate_id)


class Smps(OrgRecords[Smp]):
    collection = SMPS

    async def of_environment(self, environment: Environment) -> list[Smp]:
        """The SMPs that serve ``environment``."""
        return await self._store.all(environment=environment)


class SmpRegistrations(Records[SmpRegistration]):
    collection = SMP_REGISTRATIONS

    async def of_participant_in(
        self, identifier: str, smp_ids: Sequence[uuid.UUID]
    ) -> SmpRegistration | None:
        """The participant's (identifier, in any spelling case) registration in one of the
        SMPs ``smp_ids`` (those of one environment: ``Smps.of_environment``)."""
        if not smp_ids:
            return None
        # the participant's few registrations (one per SMP at most), a read the record cache
        # answers, then the first of those SMPs, in the order of a list
        wanted = set(smp_ids)
        found = await self._store.all(participant=identifier.lower())
        return next((reg for reg in found if reg.smp_id in wanted), None)


class IdempotencyKeys(OrgRecords[IdempotencyKey]):
    collection = IDEMPOTENCY_KEYS

    async def find(self, org_id: uuid.UUID, key: str) -> IdempotencyKey | None:
        return await self._store.first(orgId=org_id, key=key)

    async def claim_created_by(self, cutoff: datetime, limit: int) -> list[IdempotencyKey]:
        """Up to ``limit`` keys created at ``cutoff`` or before, claimed (``Repository.claim``)."""
        old = condition(IDEMPOTENCY_KEYS, "createdAt", Op.LTE, cutoff)
        return await self._store.claim(Query(where=(old,), limit=limit))


class Webhooks(OrgRecords[Webhook]):
    collection = WEBHOOKS

    async def count_of_org(self, org_id: uuid.UUID) -> int:
        return await self._store.count(orgId=org_id)


class Events(OrgRecords[Event]):
    collection = EVENTS

    async def claim_older_than(self, cutoff: datetime, limit: int) -> list[Event]:
        """Up to ``limit`` events created before ``cutoff``, claimed (``Repository.claim``)."""
        old = condition(EVENTS, "createdAt", Op.LT, cutoff)
        return await self._store.claim(Query(where=(old,), limit=limit))


class Deliveries(OrgRecords[Delivery]):
    collection = DELIVERIES

    async def of_event(self, event_id: uuid.UUID) -> list[Delivery]:
        return await self._store.all(eventId=event_id)

    async def of_events(self, event_ids: Sequence[uuid.UUID]) -> list[Delivery]:
        if not event_ids:
            return []
        return await self._every(one_of(DELIVERIES, "eventId", event_ids))

    async def count_pending(self) -> int:
        return await self._store.count(status=DeliveryStatus.PENDING)

    async def claim_due(
        self,
        now: datetime,
        limit: int,
        skip_webhooks: Sequence[object] = (),
        skip_hosts: Sequence[str] = (),
    ) -> list[Delivery]:
        """Up to ``limit`` pending deliveries due by ``now`` whose lease has run out, none to
        the webhooks ``skip_webhooks`` nor at the hosts ``skip_hosts`` (``Delivery.host``),
        claimed (``Repository.claim``)."""
        return await self._store.claim(self.due(now, limit, skip_webhooks, skip_hosts))

    @staticmethod
    def due(
        now: datetime,
        limit: int,
        skip_webhooks: Sequence[object] = (),
        skip_hosts: Sequence[str] = (),
    ) -> Query:
        """The query of ``claim_due``: the webhooks left out are one condition (``none_of``),
        one parameter in SQL however many they are, and so are the hosts."""
        return Query(
            where=(
                equals(DELIVERIES, "status", DeliveryStatus.PENDING),
                condition(DELIVERIES, "nextAttemptAt", Op.LTE, now),
                condition(DELIVERIES, "leaseUntil", Op.LT, now),
                *([none_of(DELIVERIES, "webhookId", skip_webhooks)] if skip_webhooks else []),
                *([none_of(DELIVERIES, "host", skip_hosts)] if skip_hosts else []),
            ),
            limit=limit,
        )

    async def move_pending(self, webhook_id: uuid.UUID, host: str) -> int:
        """Set the host of ``webhook_id``'s pending deliveries at another one to ``host`` (its
        URL changed); returns how many. Found by status, through the claims' index, and the
        webhook among them: a webhook's URL changes seldom."""
        found = await self._every(
            equals(DELIVERIES, "status", DeliveryStatus.PENDING),
            equals(DELIVERIES, "webhookId", webhook_id),
            condition(DELIVERIES, "host", Op.NE, host),
        )
        # locked, in id order as the worker writes them (a page of ids a statement), and read
        # again so: a worker may have written an outcome since, which the write must keep
        ids = sorted((d.id for d in found), key=str)
        held: builtins.list[Delivery] = []
        for start in range(0, len(ids), MAX_LIMIT):
            held += await self._store.lock_many(ids[start : start + MAX_LIMIT])
        held = [d for d in held if d.status is DeliveryStatus.PENDING and d.host != host]
        await self._store.update_many([attrs.evolve(d, host=host) for d in held], before=held)
        return len(held)


class Transactions(OrgRecords[Transaction]):
    collection = TRANSACTIONS

    async def by_dedup_key(self, dedup_key: str) -> Transaction | None:
        return await self._store.first(dedupKey=dedup_key)

    async def received_as(
        self, message_id: str, ap_id: uuid.UUID, sender_sp: str, receiver_id: str
    ) -> Transaction | None:
        """The document an AS4 message (its ``MessageId``) brought in at access point
        ``ap_id`` from the sending access point ``sender_sp`` for ``receiver_id``: a replay of
        that message, whatever organisation took it in (its receiver may have moved since).
        The MessageId is the sender's to choose, so it alone never names a record: the same
        one from another sender, or to another receiver, is another message. Found by the
        message's key (``domain.transaction.message_key_of``), which no two records share."""
        key = message_key_of(ap_id, sender_sp, receiver_id, message_id)
        return None if key is None else await self._store.first(messageKey=key)

    async def mls_about(self, received: Transaction) -> Transaction | None:
        """The positive message level status the organisation that received ``received``
        owes its sender (an MLS transaction, sent or waiting). Found by the document's
        instance identifier, which is unique only per sender: among the statuses about
        documents of other senders with the same one, it is the one about ``received``."""
        for tx in await self._store.all(
            kind=Kind.MLS, docInstanceId=received.doc_instance_id, orgId=received.org_id
        ):
            if tx.about == received.id:
                return tx
        return None

    async def sent_documents(self, doc_instance_id: str) -> list[Transaction]:
        """The documents sent to the network as ``doc_instance_id`` (of any organisation)."""
        return await self._store.all(
            docInstanceId=doc_instance_id, direction=Direction.TO_NETWORK, kind=Kind.DOCUMENT
        )

    @staticmethod
    def documents(direction: Direction) -> tuple[Condition, ...]:
        """The scope of a list of the documents sent (or received)."""
        return (
            equals(TRANSACTIONS, "direction", direction),
            equals(TRANSACTIONS, "kind", Kind.DOCUMENT),
        )

    async def count_outbound(self, status: TransactionStatus) -> int:
        return await self._store.count(direction=Direction.TO_NETWORK, transactionStatus=status)

    async def claim_due(self, now: datetime, limit: int) -> list[Transaction]:
        """Up to ``limit`` transactions to send (unprocessed, or processing with their lease
        run out) due by ``now``, claimed (``Repository.claim``)."""
        due = Query(
            where=(
                equals(TRANSACTIONS, "direction", Direction.TO_NETWORK),
                one_of(
                    TRANSACTIONS,
                    "transactionStatus",
                    (TransactionStatus.UNPROCESSED, TransactionStatus.PROCESSING),
                ),
                condition(TRANSACTIONS, "nextAttemptAt", Op.LTE, now),
                condition(TRANSACTIONS, "leaseUntil", Op.LT, now),
            ),
            limit=limit,
        )
        return await self._store.claim(due)


class Artefacts(OrgRecords[Artefact]):
    collection = ARTEFACTS

    async def of_transaction(self, transaction_id: uuid.UUID) -> list[Artefact]:
        return await self._store.all(transactionId=transaction_id)

    async def of_transactions(self, ids: Sequence[uuid.UUID]) -> list[Artefact]:
        return await self._every(one_of(ARTEFACTS, "transactionId", ids))

    async def first_of_type(self, transaction_id: uuid.UUID, kind: ArtefactType) -> Artefact | None:
        return await self._store.first(transactionId=transaction_id, type=kind)
