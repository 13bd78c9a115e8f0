"""A webhook endpoint that is busy (HTTP 429 or 503, perhaps with ``Retry-After``) delays a
delivery without failing it for a while (``Delivery.record`` with ``busy``, by
``RetryPolicy.after_busy`` as sending does): never given up by a busy refusal within the
retry delays' span of its first one, due no sooner than asked, every run of failures ended in
bounded time, and its record bounded however long the endpoint stays busy."""

from __future__ import annotations

import itertools
import uuid
from datetime import UTC, datetime, timedelta

import attrs
from hypothesis import given
from hypothesis import strategies as st

from fourcorner.application.delivery import HELD_MOST, DeliverySettings, DeliveryWorker
from fourcorner.domain.retry import LONGEST_ASKED, SHORTEST_BUSY_WAIT, RetryPolicy
from fourcorner.domain.webhook import (
    BUSY_KEPT,
    DELIVERY_RETRY,
    NO_LEASE,
    Attempt,
    Delivery,
    DeliveryStatus,
)

NOW = datetime(2026, 1, 2, 10, 0, tzinfo=UTC)

policies = st.builds(
    RetryPolicy,
    st.lists(st.integers(0, 3600).map(lambda s: timedelta(seconds=s)), min_size=1, max_size=3).map(
        tuple
    ),
    st.integers(1, 5),
)
asked_waits = st.none() | st.integers(0, 3 * 86400).map(lambda s: timedelta(seconds=s))
# an attempt's outcome: busy (429 or 503, with the wait it asks), failed (500) or delivered
outcomes = st.one_of(
    st.tuples(st.sampled_from([429, 503]), asked_waits),
    st.tuples(st.just(500), st.none()),
    st.tuples(st.just(204), st.none()),
)


def delivery() -> Delivery:
    return Delivery(uuid.uuid4(), uuid.uuid4(), uuid.uuid4(), uuid.uuid4(), NOW, NOW)


def attempt_of(d: Delivery, status: int, at: datetime) -> Attempt:
    return Attempt(d.next_number, at, 5.0, status_code=status)


@given(
    policy=policies,
    run=st.lists(outcomes, min_size=1, max_size=10),
    late=st.lists(st.integers(0, 600), min_size=1, max_size=5),
)
def test_busy_refusals_never_fail_a_delivery_within_the_window_and_every_run_ends(
    policy: RetryPolicy, run: list[tuple[int, timedelta | None]], late: list[int]
) -> None:
    """The outcomes over and over, each attempt made when due (or late by up to 10 min): a
    busy refusal within ``span`` of the delivery's first one uses no attempt and never fails
    it, and it is due no sooner than asked (up to an hour), a second, and what a failed
    attempt would wait; a delivery whose attempts all fail ends after exactly its attempts,
    within ``span`` plus two longest waits per attempt of its first attempt; every attempt
    that counted is kept, and at most ``BUSY_KEPT`` of those that did not."""
    d = delivery()
    longest = max(*policy.delays, LONGEST_ASKED, SHORTEST_BUSY_WAIT) + timedelta(seconds=600)
    at = NOW
    for (status, asked), lateness in zip(itertools.cycle(run), itertools.cycle(late)):
        busy = status in (429, 503)
        before = d
        d = d.record(attempt_of(d, status, at), policy, busy=busy, asked=asked)
        made = d.attempts[-1]
        assert made.number == before.next_number and d.lease_until == NO_LEASE
        assert (made.busy is not None) == busy
        if status == 204:
            assert d.status is DeliveryStatus.DELIVERED
            break
        since = d.busy_since
        assert since == (before.busy_since or (at if busy else None))
        if busy and since is not None and at - since < policy.span:
            assert d.status is DeliveryStatus.PENDING and d.used == before.used
            assert not made.counted and "not counted as an attempt" in (made.busy or "")
        else:
            assert made.counted and d.used == before.used + 1
        if d.status is DeliveryStatus.FAILED:
            assert d.used == policy.max_attempts and d.next_attempt_at == at
            break
        assert d.status is DeliveryStatus.PENDING and d.used < policy.max_attempts
        wait = d.next_attempt_at - at
        if busy:
            assert wait >= max(
                SHORTEST_BUSY_WAIT, policy.delays[min(before.used, len(policy.delays) - 1)]
            )
            assert wait >= min(asked or timedelta(0), LONGEST_ASKED)
            assert f"next attempt at {d.next_attempt_at:%Y-%m-%dT%H:%M:%SZ}" in (made.busy or "")
        assert sum(a.counted for a in d.attempts) == d.used
        assert sum(not a.counted for a in d.attempts) <= BUSY_KEPT
        at = d.next_attempt_at + timedelta(seconds=lateness)
    else:  # pragma: no cover - the cycle ends by a break
        raise AssertionError
    assert at <= NOW + policy.span + 2 * policy.max_attempts * longest


def test_a_busy_refusal_says_so_with_the_wait_asked_and_when_the_next_attempt_is() -> None:
    """With the default policy (30 s, 300 s, three attempts): refusals within 330 s of the
    first use none and wait what was asked when that is longer than 30 s; from then on they
    count, and the third that counts ends the delivery."""
    d = delivery()
    d = d.record(attempt_of(d, 429, NOW), DELIVERY_RETRY, busy=True, asked=timedelta(seconds=120))
    assert (d.status, d.used, d.busy_since) == (DeliveryStatus.PENDING, 0, NOW)
    assert d.next_attempt_at == NOW + timedelta(seconds=120)
    assert d.attempts[-1].busy == (
        "the endpoint is busy (HTTP 429, Retry-After 120 s): next attempt at "
        "2026-01-02T10:02:00Z, not counted as an attempt"
    )
    at = NOW + timedelta(seconds=330)  # the window has passed
    d = d.record(attempt_of(d, 503, at), DELIVERY_RETRY, busy=True)
    assert (d.used, d.next_attempt_at) == (1, at + timedelta(seconds=30))  # as a failure
    assert d.attempts[-1].busy == (
        "the endpoint is busy (HTTP 503): next attempt at 2026-01-02T10:06:00Z, "
        "1 of its 3 attempts used"
    )
    d = d.record(attempt_of(d, 500, at), DELIVERY_RETRY)
    d = d.record(attempt_of(d, 503, at), DELIVERY_RETRY, busy=True)
    assert (d.status, d.used, [a.number for a in d.attempts]) == (
        DeliveryStatus.FAILED,
        3,
        [1, 2, 3, 4],
    )
    assert (
        d.attempts[-1].busy == "the endpoint is busy (HTTP 503): given up, 3 of its 3 attempts used"
    )


def test_a_long_busy_spell_keeps_the_last_refusals_and_every_attempt_that_counted() -> None:
    """An endpoint busy for an hour on a policy of 1 s and 3600 s: about 3,600 refusals a
    second apart within the window (3,601 s), of which the record keeps the last
    ``BUSY_KEPT`` beside the attempts that counted, their numbers going on."""
    policy = RetryPolicy((timedelta(seconds=1), timedelta(seconds=3600)), 3)
    d, at = delivery(), NOW
    while d.used == 0:
        d = d.record(attempt_of(d, 429, at), policy, busy=True)
        at = d.next_attempt_at
    assert len(d.attempts) == BUSY_KEPT + 1 and d.attempts[-1].counted
    assert [a.counted for a in d.attempts[:-1]] == [False] * BUSY_KEPT
    numbers = [a.number for a in d.attempts]
    assert numbers == list(range(numbers[-1] - BUSY_KEPT, numbers[-1] + 1))
    assert numbers[-1] == 3602  # 3,601 a second apart within the window, then one counted


@given(due=st.integers(-600, 600), until=st.integers(0, 3600))
def test_a_delivery_held_back_is_due_then_with_nothing_used(due: int, until: int) -> None:
    leased = NOW + timedelta(seconds=60)
    d = attrs.evolve(delivery(), next_attempt_at=NOW + timedelta(seconds=due), lease_until=leased)
    held = d.deferred(NOW + timedelta(seconds=until))
    assert held.next_attempt_at == max(d.next_attempt_at, NOW + timedelta(seconds=until))
    assert (held.attempts, held.used, held.busy_since, held.lease_until) == ((), 0, None, NO_LEASE)


def holding_worker(clock: list[datetime]) -> DeliveryWorker:
    """A worker whose holds alone are asked of (no storage, no sender), at ``clock[0]``."""
    return DeliveryWorker(
        attrs.make_class("Ctx", {"clock": attrs.field()})(lambda: clock[0]),  # type: ignore[arg-type]
        None,  # type: ignore[arg-type]
        None,  # type: ignore[arg-type]
        DeliverySettings(),
    )


@given(st.lists(st.tuples(st.integers(0, 3 * HELD_MOST), st.integers(0, 600)), max_size=800))
def test_a_worker_holds_back_at_most_so_many_webhooks_each_until_its_time(
    holds: list[tuple[int, int]],
) -> None:
    """Whatever webhooks answer busy, and for how long: a worker holds back at most
    ``HELD_MOST`` at once (one more is not held when none has ended), each until the latest
    time asked of it, and one whose time has passed is let go."""
    clock = [NOW]
    worker = holding_worker(clock)
    hooks = [uuid.UUID(int=n + 1) for n in range(3 * HELD_MOST + 1)]
    model: dict[uuid.UUID, datetime] = {}
    for step, (hook, seconds) in enumerate(holds):
        clock[0] = NOW + timedelta(seconds=step)
        until = clock[0] + timedelta(seconds=seconds)
        live = {h: t for h, t in model.items() if t > clock[0]}
        if hooks[hook] in model or len(model) < HELD_MOST:
            model[hooks[hook]] = max(model.get(hooks[hook], until), until)
        elif len(live) < HELD_MOST:
            model = {**live, hooks[hook]: until}
        worker._hold(hooks[hook], until)
        assert len(worker._held) <= HELD_MOST
        assert sorted(worker._still_held(clock[0])) == sorted(
            str(h) for h, t in model.items() if t > clock[0]
        )
        model = {h: t for h, t in model.items() if t > clock[0]}
        for h in hooks[:8]:
            assert worker._holding(h) == model.get(h)


def test_one_webhook_more_than_held_most_is_held_only_once_a_hold_has_ended() -> None:
    clock = [NOW]
    worker = holding_worker(clock)
    hooks = [uuid.UUID(int=n + 1) for n in range(HELD_MOST + 1)]
    for n, hook in enumerate(hooks[:HELD_MOST]):
        worker._hold(hook, NOW + timedelta(seconds=60 + n))
    worker._hold(hooks[-1], NOW + timedelta(seconds=600))
    assert len(worker._held) == HELD_MOST and worker._holding(hooks[-1]) is None
    clock[0] = NOW + timedelta(seconds=61)  # the first hold has ended
    worker._hold(hooks[-1], clock[0] + timedelta(seconds=600))
    assert len(worker._held) == HELD_MOST - 1
    assert worker._holding(hooks[0]) is None
    assert worker._holding(hooks[-1]) == clock[0] + timedelta(seconds=600)
