"""Webhooks, the events they receive, and the delivery rules: signed, at most 3 attempts (a
busy endpoint's refusals use up none for a while)."""

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

from fourcorner.domain.errors import Detail, InvalidInput, TooManyDeliveries, TooManyWebhooks
from fourcorner.domain.events import EVENT_NAMES
from fourcorner.domain.organisation import UserRef
from fourcorner.domain.retry import RetryPolicy

MAX_ATTEMPTS = 3
# Webhook deliveries: three attempts, 30 seconds and 5 minutes apart (the delays are settings).
DELIVERY_RETRY = RetryPolicy((timedelta(seconds=30), timedelta(minutes=5)), MAX_ATTEMPTS)
# The busy refusals that used up no attempt kept on a delivery, the last ones (the attempts'
# numbers go on counting): with the default delays a delivery has at most 11 of them
BUSY_KEPT = 10
RETENTION = timedelta(days=14)
# Webhooks an organisation may have: every event it raises goes to each one subscribed, so
# this bounds the deliveries (each of up to 3 attempts) one event, a test one too, makes.
MAX_WEBHOOKS = 100
# Deliveries an event keeps, from its raising and its redeliveries: the event's record holds
# each one's summary and attempts and is written whole with every attempt. Twice the
# webhooks: an event raised to all of them may still be redelivered to all once.
MAX_DELIVERIES = 2 * MAX_WEBHOOKS
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
    # False: a busy endpoint's refusal that used up none of the delivery's attempts
    counted: bool = True
    # a busy endpoint's refusal (HTTP 429 or 503): so it says, with the wait the endpoint
    # asked for, when the next attempt is and whether this one counted; None otherwise
    busy: str | None = None

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
        """The event with new deliveries (a redelivery) after the ones it had;
        ``TooManyDeliveries`` when that would make more than ``MAX_DELIVERIES``."""
        if len(self.deliveries) + len(fresh) > MAX_DELIVERIES:
            raise TooManyDeliveries(
                event_id=str(self.id),
                limit=MAX_DELIVERIES,
                kept=len(self.deliveries),
                asked=len(fresh),
            )
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
    # when its endpoint first refused it as busy, where the window of busy refusals that use
    # up no attempt begins; None: never (so far, or in a record stored before it was kept)
    busy_since: datetime | None = None
    # the host and port its webhook's URL names (``webhook_target.host_text``), as raised
    # or as a claim last read the webhook: claims leave out the hosts that are full by it;
    # "" in a record stored before it was kept and not due then (0023 set the due ones')
    host: str = ""

    @property
    def used(self) -> int:
        """The attempts it has used up (all but busy refusals that counted for none)."""
        return sum(a.counted for a in self.attempts)

    @property
    def next_number(self) -> int:
        """The number of its next attempt: one more than the last one's."""
        return self.attempts[-1].number + 1 if self.attempts else 1

    def record(
        self,
        attempt: Attempt,
        policy: RetryPolicy,
        *,
        retryable: bool = True,
        busy: bool = False,
        asked: timedelta | None = None,
    ) -> Delivery:
        """The delivery after ``attempt``: delivered, retried when ``policy`` says so, or failed
        (``retryable`` False: failed whatever the policy, as when the webhook is gone).

        A busy endpoint's refusal (``busy``: it answered HTTP 429 or 503; ``asked``: the wait
        its ``Retry-After`` asks for) is retried as ``RetryPolicy.after_busy`` says, from the
        delivery's first busy refusal (``busy_since``): not counted for ``policy.span`` from
        then, and due no sooner than asked. The attempt says so (``Attempt.busy``, and
        ``counted`` False when it used up none); of those that used up none only the last
        ``BUSY_KEPT`` are kept, so a record stays small however long the endpoint is busy."""
        busy_since, retry_at = self.busy_since, None
        if attempt.succeeded:
            status, next_at = DeliveryStatus.DELIVERED, attempt.at
        else:
            used = self.used + 1
            if busy and retryable:
                busy_since = busy_since or attempt.at
                used, retry_at = policy.after_busy(
                    self.used, attempt.at, since=busy_since, asked=asked
                )
                note = _busy_note(attempt, asked, retry_at, used, self.used, policy.max_attempts)
                attempt = attrs.evolve(attempt, counted=used > self.used, busy=note)
            else:
                retry_at = policy.next_attempt(used, attempt.at, retryable=retryable)
            status = DeliveryStatus.FAILED if retry_at is None else DeliveryStatus.PENDING
            next_at = retry_at or attempt.at
        attempts = (*self.attempts, attempt)
        return attrs.evolve(
            self,
            attempts=attempts if attempt.counted else _kept(attempts),
            status=status,
            next_attempt_at=next_at,
            lease_until=NO_LEASE,
            busy_since=busy_since,
        )

    def deferred(self, until: datetime) -> Delivery:
        """Left unsent and due at ``until`` (its endpoint asked to be left alone until then
        while another delivery to it was sent): no attempt made, none used, the claim given
        back."""
        return attrs.evolve(
            self, next_attempt_at=max(self.next_attempt_at, until), lease_until=NO_LEASE
        )

    def summary(self) -> DeliverySummary:
        due = self.next_attempt_at if self.status is DeliveryStatus.PENDING else None
        return DeliverySummary(self.id, self.webhook_id, self.status, self.attempts, due)


def _busy_note(
    attempt: Attempt,
    asked: timedelta | None,
    retry_at: datetime | None,
    used: int,
    before: int,
    most: int,
) -> str:
    """What a busy refusal says: ``the endpoint is busy (HTTP 429, Retry-After 120 s): next
    attempt at 2026-01-02T10:02:00Z, not counted as an attempt``."""
    waits = f", Retry-After {asked.total_seconds():g} s" if asked is not None else ""
    said = f"the endpoint is busy (HTTP {attempt.status_code}{waits})"
    if retry_at is None:
        return f"{said}: given up, {used} of its {most} attempts used"
    counted = (
        "not counted as an attempt" if used == before else f"{used} of its {most} attempts used"
    )
    return f"{said}: next attempt at {retry_at.astimezone(UTC):%Y-%m-%dT%H:%M:%SZ}, {counted}"


def _kept(attempts: tuple[Attempt, ...]) -> tuple[Attempt, ...]:
    """``attempts`` without the oldest busy refusals that used up none, past ``BUSY_KEPT``."""
    uncounted = [i for i, a in enumerate(attempts) if not a.counted]
    if len(uncounted) <= BUSY_KEPT:
        return attempts
    gone = set(uncounted[: len(uncounted) - BUSY_KEPT])
    return tuple(a for i, a in enumerate(attempts) if i not in gone)


def check_room(webhooks: int) -> None:
    """An organisation that has ``webhooks`` may make one more: ``TooManyWebhooks`` when it
    has ``MAX_WEBHOOKS`` already."""
    if webhooks >= MAX_WEBHOOKS:
        raise TooManyWebhooks(limit=MAX_WEBHOOKS)


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
