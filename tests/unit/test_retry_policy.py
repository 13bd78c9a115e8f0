"""One retry policy (``domain.retry``) for the two outboxes: sending documents and delivering
webhook events; and its rule for a busy receiver (``RetryPolicy.after_busy``)."""

from __future__ import annotations

import itertools
import uuid
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fourcorner.domain.retry import LONGEST_ASKED, SHORTEST_BUSY_WAIT, RetryPolicy
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


policies = st.builds(RetryPolicy, delays.map(tuple), st.integers(1, 6))
asked_waits = st.none() | st.integers(0, 3 * 86400).map(lambda s: timedelta(seconds=s))


@given(
    policy=policies,
    failed=st.integers(0, 6),
    busy_for=st.integers(0, 30_000).map(lambda s: timedelta(seconds=s)),
    asked=asked_waits,
)
def test_a_busy_refusal_waits_as_asked_and_counts_only_once_the_job_is_busy_for_long(
    policy: RetryPolicy, failed: int, busy_for: timedelta, asked: timedelta | None
) -> None:
    """Not counted for ``span`` after the job's first busy refusal, counted after; the next
    attempt waits at least the delay a failure would, a second, and what was asked (up to an
    hour), and no more than the longest of those."""
    counted, due = policy.after_busy(failed, NOW, since=NOW - busy_for, asked=asked)
    assert counted == (failed if busy_for < policy.span else failed + 1)
    if counted >= policy.max_attempts:
        assert due is None
        return
    assert due is not None
    delay = policy.delays[min(failed, len(policy.delays) - 1)]
    floor = max(delay, SHORTEST_BUSY_WAIT)
    assert due - NOW >= floor
    if asked is not None:
        assert due - NOW >= min(asked, LONGEST_ASKED)
    assert due - NOW == max(floor, min(asked or timedelta(0), LONGEST_ASKED))


def test_the_span_is_the_waits_between_the_attempts() -> None:
    assert RetryPolicy().span == timedelta(seconds=330)
    assert RetryPolicy((timedelta(seconds=10),), 4).span == timedelta(seconds=30)
    assert RetryPolicy(max_attempts=1).span == timedelta(0)


@given(
    policy=policies,
    # each outcome: a failure (True) or a busy refusal with the wait it asks; the worker
    # comes that many seconds late to each due attempt
    outcomes=st.lists(st.tuples(st.booleans(), asked_waits), min_size=1, max_size=8),
    late=st.lists(st.integers(0, 120), min_size=1, max_size=8),
)
def test_any_run_of_busy_and_failed_attempts_ends_in_bounded_time_with_its_attempts_used(
    policy: RetryPolicy,
    outcomes: list[tuple[bool, timedelta | None]],
    late: list[int],
) -> None:
    """A job whose every attempt fails (busy or not, the given outcomes over and over) is
    given up exactly when its attempts are used, never before; a busy refusal within ``span``
    of its first one uses none; and it ends within ``span`` plus one longest wait per attempt
    of its first attempt."""
    first = at = NOW
    since: datetime | None = None  # its first busy refusal
    failed = 0
    longest = max(*policy.delays, LONGEST_ASKED, SHORTEST_BUSY_WAIT) + timedelta(seconds=120)
    for (failure, asked), lateness in zip(itertools.cycle(outcomes), itertools.cycle(late)):
        if failure:
            failed, due = failed + 1, policy.next_attempt(failed + 1, at)
        else:
            before, since = failed, since or at
            failed, due = policy.after_busy(failed, at, since=since, asked=asked)
            assert failed == (before if at - since < policy.span else before + 1)
        if due is None:
            break
        assert failed < policy.max_attempts
        assert due >= at + (timedelta(0) if failure else SHORTEST_BUSY_WAIT)
        at = due + timedelta(seconds=lateness)
    assert failed == policy.max_attempts
    assert at <= first + policy.span + policy.max_attempts * longest


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
