"""One retry policy (``domain.retry``) for the two outboxes: sending documents and delivering
webhook events."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fourcorner.domain.retry import RetryPolicy
from fourcorner.domain.webhook import DELIVERY_RETRY, Attempt, Delivery, DeliveryStatus

NOW = datetime(2026, 1, 2, tzinfo=UTC)
delays = st.lists(st.integers(0, 3600).map(lambda s: timedelta(seconds=s)), min_size=1, max_size=4)


@given(delays=delays, max_attempts=st.integers(1, 6), failed=st.integers(1, 8))
def test_the_next_attempt_waits_the_delay_of_the_attempts_so_far(
    delays: list[timedelta], max_attempts: int, failed: int
) -> None:
    policy = RetryPolicy(tuple(delays), max_attempts)
    due = policy.next_attempt(failed, NOW)
    if failed >= max_attempts:
        assert due is None
    else:
        assert due == NOW + delays[min(failed, len(delays)) - 1]
    assert policy.next_attempt(failed, NOW, retryable=False) is None


def test_a_policy_waits_between_attempts() -> None:
    with pytest.raises(ValueError, match="delay"):
        RetryPolicy(())


def delivery() -> Delivery:
    return Delivery(uuid.uuid4(), uuid.uuid4(), uuid.uuid4(), uuid.uuid4(), NOW, NOW)


def failed_attempt(number: int, at: datetime) -> Attempt:
    return Attempt(number, at, 12.0, status_code=500)


def test_a_delivery_follows_the_policy() -> None:
    d = delivery()
    for number, delay in ((1, timedelta(seconds=30)), (2, timedelta(minutes=5))):
        d = d.record(failed_attempt(number, NOW), DELIVERY_RETRY)
        assert (d.status, d.next_attempt_at) == (DeliveryStatus.PENDING, NOW + delay)
    d = d.record(failed_attempt(3, NOW), DELIVERY_RETRY)
    assert d.status is DeliveryStatus.FAILED and len(d.attempts) == 3
    delivered = delivery().record(Attempt(1, NOW, 3.0, status_code=204), DELIVERY_RETRY)
    assert delivered.status is DeliveryStatus.DELIVERED


def test_a_delivery_to_a_webhook_that_is_gone_fails_at_its_first_attempt() -> None:
    gone = Attempt(1, NOW, 0.0, error="the webhook was deleted")
    d = delivery().record(gone, DELIVERY_RETRY, retryable=False)
    assert (d.status, d.next_attempt_at, len(d.attempts)) == (DeliveryStatus.FAILED, NOW, 1)
