"""Webhooks, the events they receive, and the delivery rules: signed, at most 3 attempts."""

from __future__ import annotations

import base64
import enum
import hashlib
import hmac
import uuid
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import attrs

from fourcorner.domain.errors import Detail, InvalidInput
from fourcorner.domain.events import EVENT_NAMES
from fourcorner.domain.organisation import UserRef
from fourcorner.domain.retry import RetryPolicy

MAX_ATTEMPTS = 3
# Webhook deliveries: three attempts, 30 seconds and 5 minutes apart (the delays are settings).
DELIVERY_RETRY = RetryPolicy((timedelta(seconds=30), timedelta(minutes=5)), MAX_ATTEMPTS)
RETENTION = timedelta(days=14)
SECRET_PREFIX = "whsec_"  # noqa: S105 - the format prefix, not a secret
# Far in the past: a delivery nobody holds. Leases are compared, so they are never null.
NO_LEASE = datetime(2000, 1, 1, tzinfo=UTC)


class DeliveryStatus(enum.Enum):
    PENDING = "PENDING"
    DELIVERED = "DELIVERED"
    FAILED = "FAILED"


@attrs.frozen
class Webhook:
    id: uuid.UUID
    org_id: uuid.UUID
    url: str
    events: tuple[str, ...]
    is_enabled: bool
    sealed_secret: str  # the signing secret, encrypted at rest
    created_at: datetime
    created_by: UserRef
    last_modified_at: datetime
    last_modified_by: UserRef
    description: str = ""


@attrs.frozen
class Attempt:
    number: int
    at: datetime
    duration_ms: float
    status_code: int | None = None
    error: str | None = None
    response_body: str | None = None  # the start of the receiver's answer, when it answered

    @property
    def succeeded(self) -> bool:
        return self.status_code is not None and 200 <= self.status_code < 300


@attrs.frozen
class DeliverySummary:
    delivery_id: uuid.UUID
    webhook_id: uuid.UUID
    status: DeliveryStatus
    attempts: tuple[Attempt, ...] = ()
    next_attempt_at: datetime | None = None  # while PENDING: when it is due


@attrs.frozen
class Event:
    """A stored event and the summaries of its deliveries: its status is theirs together
    (``overall``), and ``next_attempt_at`` the earliest time a pending one is due."""

    id: uuid.UUID
    org_id: uuid.UUID
    event_type: str
    payload: Mapping[str, Any]
    created_at: datetime
    status: DeliveryStatus
    deliveries: tuple[DeliverySummary, ...] = ()
    next_attempt_at: datetime | None = None

    def with_delivery(self, summary: DeliverySummary) -> Event:
        deliveries = tuple(
            summary if d.delivery_id == summary.delivery_id else d for d in self.deliveries
        )
        return self.with_deliveries(deliveries)

    def with_deliveries(self, deliveries: tuple[DeliverySummary, ...]) -> Event:
        due = [d.next_attempt_at for d in deliveries if d.status is DeliveryStatus.PENDING]
        return attrs.evolve(
            self,
            deliveries=deliveries,
            status=overall(deliveries),
            next_attempt_at=min((t for t in due if t is not None), default=None),
        )

    def redelivered(self, fresh: Sequence[DeliverySummary]) -> Event:
        """The event with new deliveries (a redelivery) after the ones it had."""
        return self.with_deliveries((*self.deliveries, *fresh))


def overall(deliveries: Sequence[DeliverySummary]) -> DeliveryStatus:
    """PENDING while any delivery is; FAILED if any failed; else DELIVERED (also for none)."""
    statuses = {d.status for d in deliveries}
    if DeliveryStatus.PENDING in statuses:
        return DeliveryStatus.PENDING
    if DeliveryStatus.FAILED in statuses:
        return DeliveryStatus.FAILED
    return DeliveryStatus.DELIVERED


@attrs.frozen
class Delivery:
    """One event to one webhook: the outbox row a worker claims."""

    id: uuid.UUID
    event_id: uuid.UUID
    webhook_id: uuid.UUID
    org_id: uuid.UUID
    created_at: datetime
    next_attempt_at: datetime
    status: DeliveryStatus = DeliveryStatus.PENDING
    attempts: tuple[Attempt, ...] = ()
    lease_until: datetime = NO_LEASE

    def record(self, attempt: Attempt, policy: RetryPolicy, *, retryable: bool = True) -> Delivery:
        """The delivery after ``attempt``: delivered, retried when ``policy`` says so, or failed
        (``retryable`` False: failed whatever the policy, as when the webhook is gone)."""
        attempts = (*self.attempts, attempt)
        retry_at = policy.next_attempt(len(attempts), attempt.at, retryable=retryable)
        if attempt.succeeded:
            status, next_at = DeliveryStatus.DELIVERED, attempt.at
        elif retry_at is None:
            status, next_at = DeliveryStatus.FAILED, attempt.at
        else:
            status, next_at = DeliveryStatus.PENDING, retry_at
        return attrs.evolve(
            self, attempts=attempts, status=status, next_attempt_at=next_at, lease_until=NO_LEASE
        )

    def summary(self) -> DeliverySummary:
        due = self.next_attempt_at if self.status is DeliveryStatus.PENDING else None
        return DeliverySummary(self.id, self.webhook_id, self.status, self.attempts, due)


def subscribed(webhooks: Sequence[Webhook], event_type: str) -> list[Webhook]:
    return [w for w in webhooks if w.is_enabled and event_type in w.events]


# --- validation -----------------------------------------------------------------------------


def check_events(events: Sequence[str]) -> None:
    unknown = [e for e in events if e not in EVENT_NAMES]
    if unknown or not events:
        problem = (
            f"unknown events {', '.join(unknown)}; known: {', '.join(EVENT_NAMES)}"
            if unknown
            else "at least one event"
        )
        raise InvalidInput([Detail("$.events", problem)])


# --- signing --------------------------------------------------------------------------------


def new_secret(random_bytes: bytes) -> str:
    return SECRET_PREFIX + base64.b64encode(random_bytes).decode()


def standard_signature(secret: str, message_id: str, timestamp: int, body: bytes) -> str:
    """``v1,<base64 HMAC-SHA256>`` of Standard Webhooks, keyed by the secret's decoded bytes."""
    key = base64.b64decode(secret.removeprefix(SECRET_PREFIX))
    signed = f"{message_id}.{timestamp}.".encode() + body
    return "v1," + base64.b64encode(hmac.new(key, signed, hashlib.sha256).digest()).decode()


def hex_signature(secret: str, body: bytes) -> str:
    """Lower-case hex HMAC-SHA256 of the raw body, keyed by the secret string as given."""
    return hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
