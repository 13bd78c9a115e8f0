"""The revocation check (``adapters.pki.revocation.RevocationChecker``) over real HTTP on 127.0.0.1,
against a CRL distribution point served by the test: what it refuses, what it fetches and
when, the bounds of a fetch, and what each policy answers while no list is known."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import aiohttp
import pytest
from cryptography import x509
from cryptography.hazmat.primitives.asymmetric import ec

from crl_point import CrlPoint, ServerFactory
from fourcorner.adapters.pki.crl import REFRESH_LEAST
from fourcorner.adapters.pki.crl_source import MAX_SOURCES, RETRY_FIRST
from fourcorner.adapters.pki.revocation import CertificateRevoked, Policy, RevocationChecker
from fourcorner.adapters.pki.testpki import issue_leaf, new_ca, sign_crl
from fourcorner.application.certificate_status import (
    CertificateStatusPending,
    CertificateStatusUnknown,
)

from .test_smp_client import FakeClock

NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
DAY, HOUR = timedelta(days=1), timedelta(hours=1)
REVOKED_ON = datetime(2026, 2, 27, 8, 30, tzinfo=UTC)
KEY = ec.generate_private_key(ec.SECP256R1())
CA, CA_KEY = new_ca("NET TEST AP CA", key=KEY, not_before=NOW - 30 * DAY, not_after=NOW + 30 * DAY)


@pytest.fixture
async def point(aiohttp_server: ServerFactory) -> AsyncIterator[CrlPoint]:
    async with CrlPoint.served(aiohttp_server) as served:
        yield served


@pytest.fixture
async def checkers() -> AsyncIterator[Callable[..., RevocationChecker]]:
    made: list[RevocationChecker] = []

    def make(policy: Policy = Policy.SOFT, **kwargs: Any) -> RevocationChecker:
        checker = RevocationChecker(policy, **kwargs)
        made.append(checker)
        return checker

    yield make
    for checker in made:
        await checker.aclose()


def leaf(url: str | None, name: str = "POP000001") -> x509.Certificate:
    urls = [url] if url else []
    cert, _ = issue_leaf(
        CA, CA_KEY, name, not_before=NOW - DAY, not_after=NOW + DAY, key=KEY, crl_urls=urls
    )
    return cert


def crl(
    *revoked: x509.Certificate, at: datetime = NOW - HOUR, lasting: timedelta = DAY
) -> x509.CertificateRevocationList:
    """The CA's list revoking ``revoked``, issued ``at``, due again ``lasting`` later."""
    serials = {c.serial_number: REVOKED_ON for c in revoked}
    return sign_crl(CA, CA_KEY, serials, this_update=at, next_update=at + lasting)


async def first_check(
    checker: RevocationChecker, cert: x509.Certificate, now: datetime = NOW
) -> None:
    """The first check of a certificate whose list is not known: it is pending, and ready
    once its wait is over."""
    with pytest.raises(CertificateStatusPending) as pending:
        checker.check(cert, CA, now)
    await pending.value.ready()


def log_events(caplog: pytest.LogCaptureFixture, event: str) -> list[logging.LogRecord]:
    return [r for r in caplog.records if getattr(r, "event", None) == event]


# --- the list's answer ----------------------------------------------------------------------


async def test_a_certificate_on_its_issuers_list_is_refused(point: CrlPoint, checkers: Any) -> None:
    revoked, kept = leaf(point.url, "POP000001"), leaf(point.url, "POP000002")
    point.serve(crl(revoked))
    checker = checkers(clock=FakeClock(NOW))
    await first_check(checker, revoked)
    with pytest.raises(CertificateRevoked, match=r"revoked on 2026-02-27T08:30:00Z"):
        checker.check(revoked, CA, NOW)
    checker.check(kept, CA, NOW)
    assert point.fetched == 1  # one list for every certificate that names its URL


async def test_a_pem_list_is_taken_as_well(point: CrlPoint, checkers: Any) -> None:
    revoked = leaf(point.url)
    point.serve(crl(revoked), pem=True)
    point.content_type = "application/x-pem-file"
    checker = checkers(clock=FakeClock(NOW))
    await first_check(checker, revoked)
    with pytest.raises(CertificateRevoked):
        checker.check(revoked, CA, NOW)


@pytest.mark.parametrize(
    ("make", "why"),
    [
        (
            lambda c: sign_crl(
                CA,
                ec.generate_private_key(ec.SECP256R1()),
                {c.serial_number: REVOKED_ON},
                this_update=NOW - HOUR,
                next_update=NOW + DAY,
            ),
            "signature is not made by the issuer's key",
        ),
        (
            lambda c: sign_crl(
                CA,
                CA_KEY,
                {c.serial_number: REVOKED_ON},
                this_update=NOW - HOUR,
                next_update=NOW + DAY,
                issuer_name=x509.Name.from_rfc4514_string("CN=NET TEST SMP CA"),
            ),
            "not by the certificate's issuer",
        ),
    ],
    ids=["another key", "another issuer"],
)
@pytest.mark.parametrize("policy", [Policy.SOFT, Policy.HARD])
async def test_a_list_not_made_by_the_issuer_is_not_used(
    point: CrlPoint,
    checkers: Any,
    caplog: pytest.LogCaptureFixture,
    make: Callable[[x509.Certificate], x509.CertificateRevocationList],
    why: str,
    policy: Policy,
) -> None:
    """The list names the certificate, but it is not its issuer's: it revokes nothing, and
    the certificate's status is not known (soft: accepted; hard: refused for now)."""
    cert = leaf(point.url)
    point.serve(make(cert))
    checker = checkers(policy, clock=FakeClock(NOW))
    caplog.set_level(logging.WARNING, "fourcorner.revocation")
    await first_check(checker, cert)
    if policy is Policy.SOFT:
        checker.check(cert, CA, NOW)
    else:
        with pytest.raises(CertificateStatusUnknown, match=why) as unknown:
            checker.check(cert, CA, NOW)
        assert not isinstance(unknown.value, CertificateStatusPending)
    [failed] = log_events(caplog, "revocation.fetch_failed")
    assert why in failed.reason  # type: ignore[attr-defined]


async def test_a_certificate_naming_no_distribution_point_is_checked_against_nothing(
    point: CrlPoint, checkers: Any
) -> None:
    checker = checkers(Policy.HARD, clock=FakeClock(NOW))
    checker.check(leaf(None), CA, NOW)
    checker.check(leaf("ldap://ldap.example/cn=CA"), CA, NOW)
    assert point.fetched == 0


async def test_off_fetches_nothing_and_refuses_nothing(point: CrlPoint, checkers: Any) -> None:
    revoked = leaf(point.url)
    point.serve(crl(revoked))
    checker = checkers(Policy.OFF, clock=FakeClock(NOW))
    checker.check(revoked, CA, NOW)
    checker.check(revoked, CA, NOW)
    await checker.idle()
    assert point.fetched == 0


# --- while no list is known -----------------------------------------------------------------


@pytest.mark.parametrize("policy", [Policy.SOFT, Policy.HARD])
async def test_a_first_check_waits_a_bounded_time_then_the_policy_answers(
    point: CrlPoint, checkers: Any, caplog: pytest.LogCaptureFixture, policy: Policy
) -> None:
    """The distribution point never answers: the first check waits ``wait`` seconds (not the
    fetch's 30), later checks do not wait, and the policy answers for them all."""
    point.stall = True
    cert = leaf(point.url)
    checker = checkers(policy, wait=0.2, clock=FakeClock(NOW))
    caplog.set_level(logging.WARNING, "fourcorner.revocation")
    loop = asyncio.get_running_loop()
    started = loop.time()
    await first_check(checker, cert)
    assert loop.time() - started < 5
    for _ in range(3):
        if policy is Policy.SOFT:
            checker.check(cert, CA, NOW)
        else:
            with pytest.raises(CertificateStatusUnknown, match="is not fetched yet"):
                checker.check(cert, CA, NOW)
    warned = log_events(caplog, "revocation.unchecked")
    assert len(warned) == (1 if policy is Policy.SOFT else 0)  # once per URL
    assert point.fetched == 1


def policy_answers(checker: RevocationChecker, cert: x509.Certificate, now: datetime) -> None:
    """The check answers by the policy, without waiting: soft accepts, hard refuses for
    now."""
    if checker.policy is Policy.SOFT:
        checker.check(cert, CA, now)
        return
    with pytest.raises(CertificateStatusUnknown) as unknown:
        checker.check(cert, CA, now)
    assert not isinstance(unknown.value, CertificateStatusPending)


@pytest.mark.parametrize("policy", [Policy.SOFT, Policy.HARD])
async def test_a_failed_fetch_is_tried_again_with_backoff(
    point: CrlPoint, checkers: Any, policy: Policy
) -> None:
    revoked = leaf(point.url)
    point.status = 503
    clock = FakeClock(NOW)
    checker = checkers(policy, clock=clock)
    await first_check(checker, revoked)
    if policy is Policy.HARD:
        with pytest.raises(CertificateStatusUnknown, match="answered HTTP 503"):
            checker.check(revoked, CA, clock.now)
    point.serve(crl(revoked))
    for seconds in (10, 29):  # not asked again before 30 s
        clock.now = NOW + timedelta(seconds=seconds)
        policy_answers(checker, revoked, clock.now)
        await checker.idle()
    assert point.fetched == 1
    clock.now = NOW + timedelta(seconds=30)
    policy_answers(checker, revoked, clock.now)  # a fetch starts, the check does not wait
    await checker.idle()
    assert point.fetched == 2
    with pytest.raises(CertificateRevoked):
        checker.check(revoked, CA, clock.now)


async def test_the_backoff_doubles(point: CrlPoint, checkers: Any) -> None:
    point.status = 500
    clock = FakeClock(NOW)
    cert = leaf(point.url)
    checker = checkers(clock=clock)
    await first_check(checker, cert)
    asked = [clock.now]
    for _ in range(4):
        while point.fetched == len(asked):  # a check a second until the next fetch goes out
            clock.now += timedelta(seconds=1)
            checker.check(cert, CA, clock.now)
            await checker.idle()
        asked.append(clock.now)
    gaps = [round((b - a).total_seconds()) for a, b in itertools.pairwise(asked)]
    assert gaps == [30, 60, 120, 240]


# --- keeping the list -----------------------------------------------------------------------


async def test_a_list_is_fetched_again_and_a_stale_one_used_for_its_grace(
    point: CrlPoint, checkers: Any
) -> None:
    cert = leaf(point.url)
    point.serve(crl(at=NOW - HOUR, lasting=2 * HOUR))  # nextUpdate NOW + 1 h
    clock = FakeClock(NOW)
    checker = checkers(Policy.HARD, clock=clock, grace=timedelta(hours=6))
    await first_check(checker, cert)
    checker.check(cert, CA, NOW)
    point.serve(crl(cert, at=NOW + HOUR, lasting=2 * HOUR))  # the next one revokes it
    point.status = 503  # not yet published
    clock.now = NOW + 2 * HOUR  # past the kept list's nextUpdate, within its grace
    checker.check(cert, CA, clock.now)  # the stale list answers; a fetch starts
    await checker.idle()
    assert point.fetched == 2
    checker.check(cert, CA, clock.now)  # the fetch failed: the stale list still answers
    clock.now = NOW + 7 * HOUR + timedelta(minutes=1)  # past the grace
    point.status = 200
    await first_check(checker, cert, clock.now)  # no list counts: wait for the fetch again
    with pytest.raises(CertificateRevoked):
        checker.check(cert, CA, clock.now)
    assert point.fetched == 3


async def test_a_stale_list_is_fetched_again_no_sooner_than_the_floor(
    point: CrlPoint, checkers: Any
) -> None:
    """The CA is late with its next list: the kept one, past its nextUpdate, answers for its
    grace, and is asked for again every ``REFRESH_LEAST``, not at every check (each may be a
    download of 20 MiB)."""
    cert = leaf(point.url)
    point.serve(crl(at=NOW - 3 * HOUR, lasting=HOUR))  # nextUpdate 2 h ago
    clock = FakeClock(NOW)
    checker = checkers(Policy.HARD, clock=clock)
    await first_check(checker, cert)
    asked = [NOW]
    while clock.now < NOW + 3 * REFRESH_LEAST:  # a check every 10 s for 15 min
        clock.now += timedelta(seconds=10)
        checker.check(cert, CA, clock.now)  # the stale list answers
        await checker.idle()
        if point.fetched > len(asked):
            asked.append(clock.now)
    assert [t - NOW for t in asked] == [i * REFRESH_LEAST for i in range(4)]


@pytest.mark.parametrize("policy", [Policy.SOFT, Policy.HARD])
async def test_a_list_fetched_past_its_grace_is_a_failed_fetch(
    point: CrlPoint, checkers: Any, caplog: pytest.LogCaptureFixture, policy: Policy
) -> None:
    """The distribution point serves a list past its nextUpdate by more than the grace: it
    does not count, and fetching it is a failure, tried again with the backoff. Only the
    first check waits; the others are answered by the policy at once, and the warnings are
    logged once, not at each fetch or check."""
    cert = leaf(point.url)
    point.serve(crl(at=NOW - 30 * HOUR, lasting=HOUR))  # nextUpdate 29 h ago, grace 24 h
    clock = FakeClock(NOW)
    checker = checkers(policy, clock=clock)
    caplog.set_level(logging.WARNING, "fourcorner.revocation")
    await first_check(checker, cert)
    for step in range(8):  # a check every 15 s: a fetch at 30 s, 90 s (the backoff)
        clock.now = NOW + step * RETRY_FIRST / 2
        if policy is Policy.HARD:
            with pytest.raises(CertificateStatusUnknown, match="out of date") as unknown:
                checker.check(cert, CA, clock.now)
            assert not isinstance(unknown.value, CertificateStatusPending)
        else:
            checker.check(cert, CA, clock.now)
        await checker.idle()
    assert point.fetched == 3
    assert len(log_events(caplog, "revocation.fetch_failed")) == 1
    assert len(log_events(caplog, "revocation.unchecked")) == (policy is Policy.SOFT)


async def test_a_failure_is_warned_of_again_once_a_list_came_in_between(
    point: CrlPoint, checkers: Any, caplog: pytest.LogCaptureFixture
) -> None:
    cert = leaf(point.url)
    point.status = 503
    clock = FakeClock(NOW)
    checker = checkers(clock=clock)
    caplog.set_level(logging.WARNING, "fourcorner.revocation")
    await first_check(checker, cert)
    point.serve(crl())
    clock.now += RETRY_FIRST
    checker.check(cert, CA, clock.now)  # unchecked; a fetch starts
    await checker.idle()
    point.status = 503
    clock.now += 2 * HOUR
    checker.check(cert, CA, clock.now)  # the kept list answers; a fetch starts, and fails
    await checker.idle()
    assert len(log_events(caplog, "revocation.fetch_failed")) == 2
    assert len(log_events(caplog, "revocation.unchecked")) == 1


async def test_a_fresh_list_is_fetched_again_after_an_hour(point: CrlPoint, checkers: Any) -> None:
    revoked = leaf(point.url)
    point.serve(crl(lasting=7 * DAY))
    clock = FakeClock(NOW)
    checker = checkers(clock=clock)
    await first_check(checker, revoked)
    point.serve(crl(revoked, at=NOW))
    clock.now = NOW + 59 * timedelta(minutes=1)
    checker.check(revoked, CA, clock.now)
    await checker.idle()
    assert point.fetched == 1
    clock.now = NOW + HOUR
    checker.check(revoked, CA, clock.now)  # the kept list answers; a fetch starts
    await checker.idle()
    with pytest.raises(CertificateRevoked):
        checker.check(revoked, CA, clock.now)


async def test_a_list_due_for_refresh_answers_while_the_refresh_is_in_flight(
    point: CrlPoint, checkers: Any
) -> None:
    """Halfway to its nextUpdate the kept list is fetched again in the background: while that
    fetch stalls, every check is answered at once by the kept list, none waits; the new list
    counts once it is in."""
    revoked = leaf(point.url)
    point.serve(crl(at=NOW - HOUR, lasting=2 * HOUR))  # nextUpdate NOW + 1 h: due at + 30 min
    clock = FakeClock(NOW)
    checker = checkers(Policy.HARD, clock=clock)
    await first_check(checker, revoked)
    point.serve(crl(revoked, at=NOW + 30 * timedelta(minutes=1)))
    point.stall = True
    clock.now = NOW + 30 * timedelta(minutes=1)
    loop = asyncio.get_running_loop()
    started = loop.time()
    for _ in range(3):
        checker.check(revoked, CA, clock.now)  # the kept list; raises nothing, waits for nothing
        await asyncio.sleep(0)
    async with asyncio.timeout(10):
        await point.fetched_at_least(2)
    assert loop.time() - started < 5 and point.fetched == 2
    point.stall = False
    point.release.set()
    await checker.idle()  # the stalled answer ended empty: the fetch failed, tried again later
    clock.now += RETRY_FIRST
    checker.check(revoked, CA, clock.now)
    await checker.idle()
    with pytest.raises(CertificateRevoked):
        checker.check(revoked, CA, clock.now)


async def test_a_list_naming_no_next_update_counts_an_hour(point: CrlPoint, checkers: Any) -> None:
    """Fetched again after 30 min; with the distribution point down from then on and no
    grace, it no longer counts an hour after it was fetched."""
    cert = leaf(point.url)
    point.serve(sign_crl(CA, CA_KEY, {}, this_update=NOW - HOUR, next_update=None))
    clock = FakeClock(NOW)
    checker = checkers(Policy.HARD, clock=clock, grace=timedelta(0))
    await first_check(checker, cert)
    clock.now = NOW + 29 * timedelta(minutes=1)
    checker.check(cert, CA, clock.now)
    await checker.idle()
    assert point.fetched == 1
    point.status = 503
    clock.now = NOW + 30 * timedelta(minutes=1)
    checker.check(cert, CA, clock.now)  # the kept list answers; a fetch starts, and fails
    await checker.idle()
    assert point.fetched == 2
    clock.now = NOW + HOUR - timedelta(seconds=1)
    checker.check(cert, CA, clock.now)
    clock.now = NOW + HOUR  # no list counts: the check waits for a fetch, which fails
    await first_check(checker, cert, clock.now)
    with pytest.raises(CertificateStatusUnknown, match="answered HTTP 503"):
        checker.check(cert, CA, clock.now)


async def test_an_older_list_does_not_replace_the_one_kept(point: CrlPoint, checkers: Any) -> None:
    revoked = leaf(point.url)
    point.serve(crl(revoked, at=NOW - HOUR))
    clock = FakeClock(NOW)
    checker = checkers(clock=clock)
    await first_check(checker, revoked)
    point.serve(crl(at=NOW - 2 * HOUR))  # a stale copy that does not revoke it yet
    clock.now = NOW + 2 * HOUR
    with pytest.raises(CertificateRevoked):
        checker.check(revoked, CA, clock.now)
    await checker.idle()
    assert point.fetched == 2
    with pytest.raises(CertificateRevoked):
        checker.check(revoked, CA, clock.now)


# --- the bounds of a fetch ------------------------------------------------------------------


@pytest.mark.parametrize("declared", [False, True], ids=["read until too large", "announced"])
async def test_a_list_larger_than_the_bound_is_cut_off(
    point: CrlPoint, checkers: Any, declared: bool
) -> None:
    point.endless = not declared
    point.declared = 10 * 1024 * 1024 if declared else None
    # the fetch's time bound (2 s) is not what ends it here: its size bound is, at once
    checker = checkers(Policy.HARD, max_bytes=256 * 1024, wait=30, timeout=2, clock=FakeClock(NOW))
    cert = leaf(point.url)
    await first_check(checker, cert)
    with pytest.raises(CertificateStatusUnknown, match=r"larger than 262144 bytes"):
        checker.check(cert, CA, NOW)


async def test_a_slow_distribution_point_is_cut_off_at_the_timeout(
    point: CrlPoint, checkers: Any
) -> None:
    point.stall = True
    checker = checkers(Policy.HARD, timeout=0.3, wait=30, clock=FakeClock(NOW))
    cert = leaf(point.url)
    loop = asyncio.get_running_loop()
    started = loop.time()
    await first_check(checker, cert)  # over once the fetch timed out, not after 30 s
    assert loop.time() - started < 10
    with pytest.raises(CertificateStatusUnknown, match=r"did not answer within 0.3 s"):
        checker.check(cert, CA, NOW)


async def test_a_redirect_is_not_followed(point: CrlPoint, checkers: Any) -> None:
    cert = leaf(point.url.replace("/ca.crl", "/moved"))
    point.serve(crl(cert))
    checker = checkers(Policy.HARD, clock=FakeClock(NOW))
    await first_check(checker, cert)
    with pytest.raises(CertificateStatusUnknown, match=r"HTTP 302 \(redirects are not followed"):
        checker.check(cert, CA, NOW)
    assert point.requests == {"/moved": 1}


async def test_a_check_in_a_worker_thread_has_its_list_fetched_on_the_loop(
    point: CrlPoint, checkers: Any
) -> None:
    """An AS4 message is read in a worker thread when it is large: the check there starts
    no fetch itself; waiting for it on the loop does, and a refresh due later is started
    on the loop the fetches ran on."""
    revoked = leaf(point.url)
    point.serve(crl())
    clock = FakeClock(NOW)
    checker = checkers(clock=clock)
    with pytest.raises(CertificateStatusPending) as pending:
        await asyncio.to_thread(checker.check, revoked, CA, NOW)
    await pending.value.ready()
    await asyncio.to_thread(checker.check, revoked, CA, NOW)
    point.serve(crl(revoked, at=NOW))
    clock.now = NOW + 2 * HOUR
    await asyncio.to_thread(checker.check, revoked, CA, clock.now)  # a refresh starts
    await checker.idle()
    assert point.fetched == 2
    with pytest.raises(CertificateRevoked):
        await asyncio.to_thread(checker.check, revoked, CA, clock.now)


# --- what is kept, and shutting down ----------------------------------------------------------


async def test_while_every_list_kept_is_being_fetched_no_other_is_taken(
    point: CrlPoint, checkers: Any, caplog: pytest.LogCaptureFixture
) -> None:
    """``MAX_SOURCES`` distribution points whose fetches never end: a certificate naming
    another is not waited for, nor fetched; the policy answers for it (soft: accepted, with
    one warning)."""
    point.stall = True
    hard = checkers(Policy.HARD, wait=0, clock=FakeClock(NOW))
    soft = checkers(Policy.SOFT, wait=0, clock=FakeClock(NOW))
    caplog.set_level(logging.WARNING, "fourcorner.revocation")
    for n in range(MAX_SOURCES):
        for checker in (hard, soft):
            await first_check(checker, leaf(f"{point.url}?n={n}"))
    async with asyncio.timeout(10):
        await point.fetched_at_least(2 * MAX_SOURCES)  # every fetch has reached the point
    url = point.url.replace("/ca.crl", "/moved")  # a request to it would be counted apart
    another = leaf(url)
    with pytest.raises(CertificateStatusUnknown, match="other distribution points") as unknown:
        hard.check(another, CA, NOW)
    assert not isinstance(unknown.value, CertificateStatusPending)
    for _ in range(3):
        soft.check(another, CA, NOW)
    assert [r.url for r in log_events(caplog, "revocation.unchecked")] == [url]  # type: ignore[attr-defined]
    for checker in (hard, soft):
        assert (
            repr(checker)
            == f"RevocationChecker(policy={checker.policy.value}, lists={MAX_SOURCES}, answers=0)"
        )
    await asyncio.sleep(0)
    assert point.requests == {"/ca.crl": 2 * MAX_SOURCES}


async def test_no_fetch_starts_once_the_checker_is_closed(point: CrlPoint) -> None:
    """After ``aclose`` a check (on the loop, or in a worker thread) starts no fetch, and no
    session is opened again to be left open."""
    sessions: list[aiohttp.ClientSession] = []

    def session() -> aiohttp.ClientSession:
        sessions.append(aiohttp.ClientSession())
        return sessions[-1]

    cert = leaf(point.url)
    point.serve(crl())
    clock = FakeClock(NOW)
    checker = RevocationChecker(Policy.SOFT, clock=clock, session_factory=session)
    try:
        await first_check(checker, cert)
        await checker.aclose()
        clock.now = NOW + 2 * HOUR  # the kept list is due to be fetched again
        checker.check(cert, CA, clock.now)
        await asyncio.to_thread(checker.check, cert, CA, clock.now)
        with contextlib.suppress(CertificateStatusPending):
            checker.check(leaf(f"{point.url}?n=new"), CA, clock.now)
        await asyncio.sleep(0)  # what a worker thread's check handed to the loop runs
        await checker.idle()
        assert point.fetched == 1
        assert len(sessions) == 1 and sessions[0].closed
    finally:
        for opened in sessions:
            await opened.close()
