"""Webhooks, the events they receive, and the delivery rules: signed, at most 3 attempts."""

from __future__ import annotations

import base64
import enum
import hashlib
import hmac
import ipaddress
import uuid
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import urlsplit

import attrs

from domain.errors import Detail, InvalidInput
from domain.events import EVENT_NAMES
from domain.filtering import FieldSpec, FieldType, fields
from domain.organisation import UserRef

MAX_ATTEMPTS = 3
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


@attrs.frozen
class Event:
    id: uuid.UUID
    org_id: uuid.UUID
    event_type: str
    payload: Mapping[str, Any]
    created_at: datetime
    status: DeliveryStatus
    deliveries: tuple[DeliverySummary, ...] = ()

    def with_delivery(self, summary: DeliverySummary) -> Event:
        deliveries = tuple(
            summary if d.delivery_id == summary.delivery_id else d for d in self.deliveries
        )
        return attrs.evolve(self, deliveries=deliveries, status=overall(deliveries))


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

    def record(self, attempt: Attempt, retry_delays: Sequence[timedelta]) -> Delivery:
        """The delivery after ``attempt``: delivered, retried after a delay, or failed."""
        attempts = (*self.attempts, attempt)
        if attempt.succeeded:
            status, next_at = DeliveryStatus.DELIVERED, attempt.at
        elif len(attempts) >= MAX_ATTEMPTS:
            status, next_at = DeliveryStatus.FAILED, attempt.at
        else:
            delay = retry_delays[min(len(attempts) - 1, len(retry_delays) - 1)]
            status, next_at = DeliveryStatus.PENDING, attempt.at + delay
        return attrs.evolve(
            self, attempts=attempts, status=status, next_attempt_at=next_at, lease_until=NO_LEASE
        )

    def summary(self) -> DeliverySummary:
        return DeliverySummary(self.id, self.webhook_id, self.status, self.attempts)


def subscribed(webhooks: Sequence[Webhook], event_type: str) -> list[Webhook]:
    return [w for w in webhooks if w.is_enabled and event_type in w.events]


# --- validation -----------------------------------------------------------------------------

_METADATA_HOSTS = {"metadata.google.internal", "metadata", "instance-data"}


def check_events(events: Sequence[str]) -> None:
    unknown = [e for e in events if e not in EVENT_NAMES]
    if unknown or not events:
        problem = (
            f"unknown events {', '.join(unknown)}; known: {', '.join(EVENT_NAMES)}"
            if unknown
            else "at least one event"
        )
        raise InvalidInput([Detail("$.events", problem)])


def address_problem(host: str) -> str | None:
    """Why a delivery must not go to ``host`` (an IP literal or a name), or None."""
    name = host.strip("[]").lower()
    if name in ("localhost", "localhost.localdomain") or name.endswith(".localhost"):
        return "loopback addresses are not allowed as webhook targets"
    if name in _METADATA_HOSTS:
        return "cloud metadata addresses are not allowed as webhook targets"
    try:
        ip = ipaddress.ip_address(name)
    except ValueError:
        return None
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    if ip.is_loopback:
        return "loopback addresses are not allowed as webhook targets"
    if ip == ipaddress.ip_address("169.254.169.254") or ip.is_link_local:
        return "link-local and metadata addresses are not allowed as webhook targets"
    if ip.is_private or ip.is_reserved or ip.is_multicast or ip.is_unspecified:
        return "private addresses are not allowed as webhook targets"
    return None


def check_url(url: str, *, allow_private: bool) -> None:
    parts = urlsplit(url)
    problem = None
    if parts.scheme not in ("http", "https"):
        problem = "the url is http or https"
    elif not parts.hostname:
        problem = "the url names no host"
    elif len(url) > 2000:
        problem = "the url is longer than 2000 characters"
    elif not allow_private:
        problem = address_problem(parts.hostname)
    if problem:
        raise InvalidInput([Detail("$.url", problem)])


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


WEBHOOK_FILTERS = fields(
    FieldSpec("id", FieldType.UUID, lambda w: w.id),
    FieldSpec("url", FieldType.STRING, lambda w: w.url),
    FieldSpec("isEnabled", FieldType.BOOL, lambda w: w.is_enabled),
    FieldSpec("createdAt", FieldType.DATETIME, lambda w: w.created_at),
)
EVENT_FILTERS = fields(
    FieldSpec("id", FieldType.UUID, lambda e: e.id),
    FieldSpec("eventType", FieldType.ENUM, lambda e: e.event_type, choices=EVENT_NAMES),
    FieldSpec(
        "status", FieldType.ENUM, lambda e: e.status, choices=tuple(s.value for s in DeliveryStatus)
    ),
    FieldSpec("createdAt", FieldType.DATETIME, lambda e: e.created_at),
)
DELIVERY_COLUMNS = fields(
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
