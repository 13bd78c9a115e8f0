"""Realistic records in bulk, for the scale benchmark (``bench/seed_scale.py``) and the query
plan test: organisations, their participants, webhooks, transactions in both directions, and
the webhook events and deliveries the transactions raised.

Everything is drawn from one seeded ``random.Random``, so a seed gives the same records. The
first organisation (``BIG``'s share of every transaction) is the large one the benchmark and
the plan test query; the others share the rest evenly.
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import attrs

from fourcorner.domain.events import TRANSACTION_RECEIVED, TRANSACTION_SEND_FAILED, TRANSACTION_SENT
from fourcorner.domain.network_services import Environment
from fourcorner.domain.organisation import Organisation, UserRef
from fourcorner.domain.participant import Participant
from fourcorner.domain.transaction import Direction, Status, Transaction
from fourcorner.domain.webhook import Attempt, Delivery, DeliveryStatus, Event, Webhook

START = datetime(2026, 1, 1, tzinfo=UTC)
SPAN = timedelta(days=60)  # the history's length: events older than 14 days are purged
DOC_TYPES = (
    "busdox-docid-qns::urn:oasis:names:specification:ubl:schema:xsd:Invoice-2::Invoice"
    "##urn:cen.eu:en16931:2017#compliant#urn:fdc:peppol.eu:2017:poacc:billing:3.0::2.1",
    "busdox-docid-qns::urn:oasis:names:specification:ubl:schema:xsd:CreditNote-2::CreditNote"
    "##urn:cen.eu:en16931:2017#compliant#urn:fdc:peppol.eu:2017:poacc:billing:3.0::2.1",
    "busdox-docid-qns::urn:oasis:names:specification:ubl:schema:xsd:Order-2::Order"
    "##urn:fdc:peppol.eu:poacc:trns:order:3::2.1",
    "busdox-docid-qns::urn:oasis:names:specification:ubl:schema:xsd:DespatchAdvice-2::"
    "DespatchAdvice##urn:fdc:peppol.eu:poacc:trns:despatch_advice:3::2.1",
)
DOC_WEIGHTS = (80, 12, 5, 3)
PROCESS = "cenbii-procid-ubl::urn:fdc:peppol.eu:2017:poacc:billing:01:1.0"
STATUSES = (Status.COMPLETED, Status.FAILED, Status.REJECTED, Status.PROCESSING)
STATUS_WEIGHTS = (94, 3, 2, 1)
TRANSPORT = "peppol-transport-as4-v2_0"
ROOT = UserRef("scale-seed")


@attrs.frozen
class Shape:
    """How many records of each kind, and the large organisation's share of transactions."""

    transactions: int = 1_000_000
    organisations: int = 1_000
    participants: int = 3_000
    events_per_transaction: int = 5
    big_share: float = 0.05
    seed: int = 17

    @property
    def events(self) -> int:
        return self.transactions * self.events_per_transaction


def _id(rng: random.Random) -> uuid.UUID:
    return uuid.UUID(int=rng.getrandbits(128), version=4)


@attrs.frozen
class Org:
    organisation: Organisation
    participants: tuple[Participant, ...]
    webhook: Webhook
    ap_id: uuid.UUID


def organisations(shape: Shape) -> list[Org]:
    rng = random.Random(shape.seed)
    per_org = max(1, shape.participants // shape.organisations)
    orgs = []
    for n in range(shape.organisations):
        org_id = _id(rng)
        legal = f"{5560000000 + n:010d}"
        at = START - timedelta(days=30, minutes=n)
        organisation = Organisation(
            id=org_id,
            legal_name=f"Scale Org {n} AB",
            country_code="SE",
            legal_identifier=legal,
            legal_identifier_code="SE:ORGNR",
            legal_key=f"0007:{legal}",
            created_at=at,
            created_by=ROOT,
            last_modified_at=at,
            last_modified_by=ROOT,
        )
        ap_id, smp_id = _id(rng), _id(rng)
        participants = tuple(
            Participant(
                id=_id(rng),
                org_id=org_id,
                name=f"Scale Org {n} AB ({k})",
                participant_identifier=f"0007:{legal}{k}",
                identifier_key=f"0007:{legal}{k}",
                smp_ref=smp_id,
                ap_ref=ap_id,
                environment=Environment.TEST,
                transport_profile=TRANSPORT,
                created_at=at,
                created_by=ROOT,
                last_modified_at=at,
                last_modified_by=ROOT,
            )
            for k in range(per_org)
        )
        webhook = Webhook(
            id=_id(rng),
            org_id=org_id,
            url=f"https://hooks.example.com/org/{n}",
            events=(TRANSACTION_SENT, TRANSACTION_RECEIVED, TRANSACTION_SEND_FAILED),
            is_enabled=True,
            sealed_secret=f"v1:{rng.getrandbits(256):064x}",
            created_at=at,
            created_by=ROOT,
            last_modified_at=at,
            last_modified_by=ROOT,
        )
        orgs.append(Org(organisation, participants, webhook, ap_id))
    return orgs


def owner_of(shape: Shape, n: int, orgs: list[Org]) -> Org:
    """The organisation of the ``n``th transaction (in time): the large one for every
    ``1 / big_share``th, the others in turn."""
    every = max(1, round(1 / shape.big_share)) if shape.big_share > 0 else 0
    if len(orgs) == 1 or (every and n % every == 0):
        return orgs[0]
    return orgs[1 + n % (len(orgs) - 1)]


def transactions(shape: Shape, orgs: list[Org]) -> Iterator[tuple[Transaction, Org]]:
    """``shape.transactions`` transactions and their organisations, oldest first, spread
    evenly over ``SPAN``."""
    rng = random.Random(shape.seed + 1)
    step = SPAN / max(1, shape.transactions)
    for n in range(shape.transactions):
        org = owner_of(shape, n, orgs)
        other = orgs[rng.randrange(len(orgs))]
        mine = org.participants[rng.randrange(len(org.participants))].participant_identifier
        theirs = other.participants[rng.randrange(len(other.participants))]
        outbound = rng.random() < 0.5
        sender, receiver = (
            (mine, theirs.participant_identifier)
            if outbound
            else (theirs.participant_identifier, mine)
        )
        at = START + step * n
        ns = int(at.timestamp()) * 1_000_000_000 + at.microsecond * 1000 + rng.randrange(1000)
        tx = Transaction(
            id=_id(rng),
            org_id=org.organisation.id,
            direction=Direction.TO_NETWORK if outbound else Direction.FROM_NETWORK,
            ap_id=org.ap_id,
            transport_profile=TRANSPORT,
            sender_id=sender,
            receiver_id=receiver,
            doc_type_id=rng.choices(DOC_TYPES, DOC_WEIGHTS)[0],
            process_id=PROCESS,
            sender_country="SE",
            doc_instance_id=f"INV-{n:09d}",
            transaction_status=rng.choices(STATUSES, STATUS_WEIGHTS)[0],
            created_at=at,
            created_ns=ns,
            last_modified_at=at + timedelta(seconds=2),
            receiver_country="SE",
            sender_sp="PSE000001",
            receiver_sp="PSE000002",
            as4_message_id=f"{_id(rng)}@scale.example.com",
            attempts=1,
        )
        yield tx, org


def events(
    shape: Shape, tx: Transaction, org: Org, rng: random.Random
) -> tuple[list[Event], list[Delivery]]:
    """The webhook events ``tx`` raised (``events_per_transaction`` of them, a few seconds
    apart), each with one delivery to its organisation's webhook, delivered."""
    found: list[Event] = []
    sent: list[Delivery] = []
    kinds = (TRANSACTION_SENT if tx.direction is Direction.TO_NETWORK else TRANSACTION_RECEIVED,)
    for k in range(shape.events_per_transaction):
        at = tx.created_at + timedelta(seconds=k)
        event_id, delivery_id = _id(rng), _id(rng)
        attempt = Attempt(number=1, at=at, duration_ms=12.5, status_code=200, response_body="ok")
        delivery = Delivery(
            id=delivery_id,
            event_id=event_id,
            webhook_id=org.webhook.id,
            org_id=org.organisation.id,
            created_at=at,
            next_attempt_at=at,
            status=DeliveryStatus.DELIVERED,
            attempts=(attempt,),
        )
        event = Event(
            id=event_id,
            org_id=org.organisation.id,
            event_type=kinds[0] if k == 0 else rng.choice((TRANSACTION_SENT, TRANSACTION_RECEIVED)),
            payload={"transactionId": str(tx.id), "transactionStatus": tx.transaction_status.value},
            created_at=at,
            status=DeliveryStatus.PENDING,
        ).with_deliveries((delivery.summary(),))
        found.append(event)
        sent.append(delivery)
    return found, sent
