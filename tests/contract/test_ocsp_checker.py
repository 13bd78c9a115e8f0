"""The revocation check (``adapters.pki.revocation.RevocationChecker``) by OCSP, over real HTTP
on 127.0.0.1, against an OCSP responder served by the test that signs its answers (as the CA
or as a delegated responder) and a CRL distribution point: OCSP is asked first, the list only
when OCSP gives no answer; what counts as an answer, the bounds of a request, what is kept
and when it is asked again."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from cryptography import x509
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509 import ocsp
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from crl_point import CrlPoint, ServerFactory
from fourcorner.adapters.pki.crl_source import RETRY_FIRST
from fourcorner.adapters.pki.freshness import REFRESH_EVERY
from fourcorner.adapters.pki.issuer import issuer_of
from fourcorner.adapters.pki.revocation import CertificateRevoked, Policy, RevocationChecker
from fourcorner.adapters.pki.testpki import issue_leaf, issue_ocsp_signer, new_ca, sign_crl
from fourcorner.application.certificate_status import (
    CertificateStatusPending,
    CertificateStatusUnknown,
)
from ocsp_responder import OcspResponder, nonce_of

from .test_smp_client import FakeClock

NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
DAY, HOUR, MINUTE = timedelta(days=1), timedelta(hours=1), timedelta(minutes=1)
REVOKED_ON = datetime(2026, 2, 27, 8, 30, tzinfo=UTC)
KEY = ec.generate_private_key(ec.SECP256R1())
CA, CA_KEY = new_ca("NET TEST AP CA", key=KEY, not_before=NOW - 30 * DAY, not_after=NOW + 30 * DAY)
DELEGATE = issue_ocsp_signer(  # its own key: an answer it signs names it, not the CA
    CA,
    CA_KEY,
    "NET TEST AP CA OCSP",
    not_before=NOW - DAY,
    not_after=NOW + DAY,
    key=ec.generate_private_key(ec.SECP256R1()),
    no_check=True,
)
OTHER_CA, OTHER_CA_KEY = new_ca("NET TEST SMP CA", key=KEY)
SIGNERS = {
    "the CA": ((CA, CA_KEY), False),
    "a delegate": (DELEGATE, True),
    "a delegate without the EKU": (
        issue_ocsp_signer(
            CA, CA_KEY, "NET OCSP", not_before=NOW - DAY, not_after=NOW + DAY, ocsp_signing=False
        ),
        True,
    ),
    "a delegate of another CA": (
        issue_ocsp_signer(OTHER_CA, OTHER_CA_KEY, "NET OCSP", not_before=NOW, not_after=NOW + DAY),
        True,
    ),
}


@pytest.fixture
async def responder(aiohttp_server: ServerFactory) -> AsyncIterator[OcspResponder]:
    async with OcspResponder.served(aiohttp_server) as served:
        served.signer, served.this_update, served.next_update = (CA, CA_KEY), NOW - HOUR, NOW + DAY
        yield served


@pytest.fixture
async def point(aiohttp_server: ServerFactory) -> AsyncIterator[CrlPoint]:
    async with CrlPoint.served(aiohttp_server) as served:
        served.serve(crl())
        yield served


@pytest.fixture
async def checkers() -> AsyncIterator[Callable[..., RevocationChecker]]:
    made: list[RevocationChecker] = []

    def make(policy: Policy = Policy.SOFT, **kwargs: Any) -> RevocationChecker:
        checker = RevocationChecker(policy, **({"clock": FakeClock(NOW)} | kwargs))
        made.append(checker)
        return checker

    yield make
    for checker in made:
        await checker.aclose()


def leaf(
    ocsp_url: str | list[str] | None, crl_url: str | None = None, name: str = "POP000001"
) -> x509.Certificate:
    cert, _ = issue_leaf(
        CA,
        CA_KEY,
        name,
        not_before=NOW - DAY,
        not_after=NOW + DAY,
        key=KEY,
        crl_urls=[crl_url] if crl_url else [],
        ocsp_url=ocsp_url,
    )
    return cert


def crl(*revoked: x509.Certificate) -> x509.CertificateRevocationList:
    serials = {c.serial_number: REVOKED_ON for c in revoked}
    return sign_crl(CA, CA_KEY, serials, this_update=NOW - HOUR, next_update=NOW + DAY)


def down_url() -> str:
    """An http URL on 127.0.0.1 where nothing listens."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}/ocsp"


async def first_check(
    checker: RevocationChecker, cert: x509.Certificate, now: datetime = NOW
) -> None:
    with pytest.raises(CertificateStatusPending) as pending:
        checker.check(cert, CA, now)
    await pending.value.ready()


def unknown(checker: RevocationChecker, cert: x509.Certificate, now: datetime = NOW) -> str:
    """The reason of the refusal for now of a hard check."""
    with pytest.raises(CertificateStatusUnknown) as raised:
        checker.check(cert, CA, now)
    assert not isinstance(raised.value, CertificateStatusPending)
    return raised.value.reason


def log_events(caplog: pytest.LogCaptureFixture, event: str) -> list[logging.LogRecord]:
    return [r for r in caplog.records if getattr(r, "event", None) == event]


# --- the responder's answer -------------------------------------------------------------------


@pytest.mark.parametrize("signer", ["the CA", "a delegate"])
async def test_ocsp_is_asked_first_and_its_answer_counts(
    responder: OcspResponder, point: CrlPoint, checkers: Any, signer: str
) -> None:
    responder.signer, responder.delegated = SIGNERS[signer]
    revoked, kept = (
        leaf(responder.url, point.url, "POP000001"),
        leaf(responder.url, point.url, "POP000002"),
    )
    point.serve(crl())  # the list would let it pass: OCSP is what answers
    responder.revoked = {revoked.serial_number: REVOKED_ON}
    checker = checkers(Policy.HARD)
    await first_check(checker, revoked)
    with pytest.raises(
        CertificateRevoked,
        match=rf"revoked on 2026-02-27T08:30:00Z \(the OCSP responder at {responder.url}\)",
    ):
        checker.check(revoked, CA, NOW)
    await first_check(checker, kept)  # one answer a certificate
    checker.check(kept, CA, NOW)
    checker.check(kept, CA, NOW + 59 * MINUTE)
    assert responder.fetched == 2 and point.fetched == 0
    # signed by the key the case says: a delegate's answer counts by the delegated path only
    signed_by = ocsp.load_der_ocsp_response(responder.body).responder_key_hash
    ca_key = x509.SubjectKeyIdentifier.from_public_key(CA.public_key()).digest
    assert (signed_by != ca_key) == responder.delegated
    assert responder.content_types == ["application/ocsp-request"] * 2
    assert [r.serial_number for r in responder.read] == [revoked.serial_number, kept.serial_number]


@pytest.mark.parametrize("signer", ["a delegate without the EKU", "a delegate of another CA"])
@pytest.mark.parametrize("policy", [Policy.SOFT, Policy.HARD])
async def test_an_answer_signed_by_a_responder_the_ca_did_not_authorise_is_no_answer(
    responder: OcspResponder, point: CrlPoint, checkers: Any, signer: str, policy: Policy
) -> None:
    """The answer says good, but its signer may not answer for the CA: the list answers (it
    revokes the certificate); without a list, the policy."""
    responder.signer, responder.delegated = SIGNERS[signer]
    cert = leaf(responder.url, point.url)
    point.serve(crl(cert))
    checker = checkers(policy)
    await first_check(checker, cert)  # waits for the answer, then for the list
    with pytest.raises(CertificateRevoked, match="the revocation list at"):
        checker.check(cert, CA, NOW)
    alone = leaf(responder.url, None, "POP000003")
    await first_check(checker, alone)
    if policy is Policy.HARD:
        why = (
            "not authorised to sign OCSP"
            if "EKU" in signer
            else "not issued by the certificate's CA"
        )
        assert why in unknown(checker, alone)
    else:
        checker.check(alone, CA, NOW)


@pytest.mark.parametrize(
    ("setup", "why"),
    [
        (lambda r, c: r.unknown.add(c.serial_number), "does not know the certificate"),
        (
            lambda r, c: setattr(r, "serial", c.serial_number + 1),
            "does not answer for this certificate",
        ),
        (
            lambda r, c: (
                setattr(r, "next_update", NOW - 25 * HOUR)
                or setattr(r, "this_update", NOW - 2 * DAY)
            ),
            "out of date",
        ),
        (lambda r, c: setattr(r, "this_update", NOW + HOUR), "issued in the future"),
        (
            lambda r, c: (setattr(r, "signer", None), setattr(r, "body", b"\x30\x03\x0a\x01\x00")),
            "not a readable OCSP answer",
        ),
        (lambda r, c: setattr(r, "status", 500), "answered HTTP 500"),
    ],
    ids=["unknown", "another serial", "stale", "future", "garbage", "HTTP 500"],
)
async def test_no_answer_falls_back_to_the_list(
    responder: OcspResponder,
    point: CrlPoint,
    checkers: Any,
    caplog: pytest.LogCaptureFixture,
    setup: Callable[[OcspResponder, x509.Certificate], object],
    why: str,
) -> None:
    cert = leaf(responder.url, point.url)
    setup(responder, cert)
    point.serve(crl(cert))
    checker = checkers(Policy.HARD)
    caplog.set_level(logging.INFO, "fourcorner.revocation")
    await first_check(checker, cert)
    with pytest.raises(CertificateRevoked, match="the revocation list at"):
        checker.check(cert, CA, NOW)
    [failed] = log_events(caplog, "revocation.fetch_failed")
    assert why in failed.reason  # type: ignore[attr-defined]
    assert responder.fetched == point.fetched == 1


async def test_a_responder_that_is_down_falls_back_to_the_list(
    point: CrlPoint, checkers: Any
) -> None:
    cert = leaf(down_url(), point.url)
    point.serve(crl(cert))
    checker = checkers(Policy.HARD)
    await first_check(checker, cert)
    with pytest.raises(CertificateRevoked, match="the revocation list at"):
        checker.check(cert, CA, NOW)


@pytest.mark.parametrize("policy", [Policy.SOFT, Policy.HARD])
async def test_with_both_down_the_policy_answers(
    checkers: Any, caplog: pytest.LogCaptureFixture, policy: Policy
) -> None:
    ocsp_url, crl_url = down_url(), down_url().replace("/ocsp", "/ca.crl")
    cert = leaf(ocsp_url, crl_url)
    checker = checkers(policy)
    caplog.set_level(logging.WARNING, "fourcorner.revocation")
    await first_check(checker, cert)
    for _ in range(2):
        if policy is Policy.HARD:
            why = unknown(checker, cert)
            assert (
                f"the OCSP responder at {ocsp_url} gave no answer: the OCSP responder cannot be reached"
                in why
            )
            assert (
                f"the revocation list at {crl_url} could not be fetched: the distribution point cannot be reached"
                in why
            )
        else:
            checker.check(cert, CA, NOW)
    warned = [r.url for r in log_events(caplog, "revocation.unchecked")]  # type: ignore[attr-defined]
    assert warned == ([ocsp_url, crl_url] if policy is Policy.SOFT else [])


async def test_the_first_check_waits_no_longer_than_the_wait_for_both(
    responder: OcspResponder, point: CrlPoint, checkers: Any
) -> None:
    """The responder and the distribution point both stall: the first check waits ``wait``
    in all (for the answer, then for the list with what is left), not once for each; the
    policy answers after that, at once."""
    responder.stall = point.stall = True
    cert = leaf(responder.url, point.url)
    checker = checkers(Policy.HARD, wait=1.0)
    loop = asyncio.get_running_loop()
    started = loop.time()
    await first_check(checker, cert)
    assert 0.9 <= loop.time() - started < 1.8
    assert "has not answered yet" in unknown(checker, cert)
    async with asyncio.timeout(10):
        await point.fetched_at_least(1)  # the list is asked for all the same


# --- the bounds of a request ------------------------------------------------------------------


@pytest.mark.parametrize("declared", [False, True], ids=["read until too large", "announced"])
async def test_an_answer_larger_than_64_kib_is_cut_off(
    responder: OcspResponder, checkers: Any, declared: bool
) -> None:
    responder.signer = None
    responder.endless = not declared
    responder.declared = 1024 * 1024 if declared else None
    cert = leaf(responder.url)
    checker = checkers(Policy.HARD, wait=30, timeout=5)
    await first_check(checker, cert)
    assert "larger than 65536 bytes" in unknown(checker, cert)


async def test_a_slow_responder_is_cut_off_at_the_timeout(
    responder: OcspResponder, checkers: Any
) -> None:
    responder.stall = True
    cert = leaf(responder.url)
    checker = checkers(Policy.HARD, timeout=0.3, wait=30)
    loop = asyncio.get_running_loop()
    started = loop.time()
    await first_check(checker, cert)
    assert loop.time() - started < 10
    assert "the OCSP responder did not answer within 0.3 s" in unknown(checker, cert)


async def test_a_redirect_is_not_followed(responder: OcspResponder, checkers: Any) -> None:
    cert = leaf(responder.url.replace("/ocsp", "/moved"))
    checker = checkers(Policy.HARD)
    await first_check(checker, cert)
    assert "HTTP 302 (redirects are not followed)" in unknown(checker, cert)
    assert responder.requests == {"/moved": 1}


# --- keeping the answer -----------------------------------------------------------------------


async def test_a_kept_answer_is_refreshed_in_the_background(
    responder: OcspResponder, checkers: Any
) -> None:
    """Past ``REFRESH_EVERY`` the kept answer still answers at once while the responder is
    asked again (here it stalls): no check waits; once the new answer is in, it counts."""
    cert = leaf(responder.url)
    clock = FakeClock(NOW)
    checker = checkers(Policy.HARD, clock=clock)
    await first_check(checker, cert)
    responder.stall = True
    responder.revoked = {cert.serial_number: NOW}
    responder.this_update = NOW + REFRESH_EVERY - MINUTE
    clock.now = NOW + REFRESH_EVERY
    for _ in range(3):
        checker.check(cert, CA, clock.now)  # the kept answer; the refresh is in flight
        await asyncio.sleep(0)
    await responder.fetched_at_least(2)
    responder.stall = False
    responder.release.set()
    await checker.idle()
    assert responder.fetched == 2  # the stalled refresh, ended empty: tried again later
    clock.now += RETRY_FIRST
    checker.check(cert, CA, clock.now)
    await checker.idle()
    with pytest.raises(CertificateRevoked):
        checker.check(cert, CA, clock.now)


async def test_a_check_in_a_worker_thread_has_its_answer_fetched_on_the_loop(
    responder: OcspResponder, checkers: Any
) -> None:
    """A large AS4 message is read in a worker thread: the check there starts no request;
    waiting for it on the loop does, and a refresh due later starts on that loop."""
    cert = leaf(responder.url)
    clock = FakeClock(NOW)
    checker = checkers(Policy.HARD, clock=clock)
    with pytest.raises(CertificateStatusPending) as pending:
        await asyncio.to_thread(checker.check, cert, CA, NOW)
    await pending.value.ready()
    await asyncio.to_thread(checker.check, cert, CA, NOW)
    responder.revoked = {cert.serial_number: NOW}
    responder.this_update = NOW
    clock.now = NOW + REFRESH_EVERY
    await asyncio.to_thread(checker.check, cert, CA, clock.now)  # a refresh starts
    await asyncio.sleep(0)
    await checker.idle()
    assert responder.fetched == 2
    with pytest.raises(CertificateRevoked):
        await asyncio.to_thread(checker.check, cert, CA, clock.now)


async def test_an_answer_without_next_update_counts_five_minutes(
    responder: OcspResponder, point: CrlPoint, checkers: Any
) -> None:
    """Asked again after 5 min (from its thisUpdate: a responder that names no nextUpdate
    makes each answer as it is asked); with the responder down by then and no grace, the
    list answers after that."""
    responder.this_update, responder.next_update = NOW, None
    cert = leaf(responder.url, point.url)
    point.serve(crl(cert))
    clock = FakeClock(NOW)
    checker = checkers(Policy.HARD, clock=clock, grace=timedelta(0))
    await first_check(checker, cert)
    clock.now = NOW + 4 * MINUTE
    checker.check(cert, CA, clock.now)
    await checker.idle()
    assert responder.fetched == 1
    responder.status = 503
    clock.now = NOW + 5 * MINUTE
    with pytest.raises(CertificateStatusPending):  # the kept answer lapsed; a fetch is due
        checker.check(cert, CA, clock.now)
    await checker.idle()
    assert responder.fetched == 2
    await first_check(checker, cert, clock.now)  # waits for the list now
    with pytest.raises(CertificateRevoked, match="the revocation list at"):
        checker.check(cert, CA, clock.now)


async def test_a_failed_request_is_tried_again_with_backoff_meanwhile_the_list_answers(
    responder: OcspResponder, point: CrlPoint, checkers: Any
) -> None:
    responder.status = 503
    cert = leaf(responder.url, point.url)
    point.serve(crl(cert))
    clock = FakeClock(NOW)
    checker = checkers(Policy.HARD, clock=clock)
    await first_check(checker, cert)
    for seconds in (10, 29):
        clock.now = NOW + timedelta(seconds=seconds)
        with pytest.raises(CertificateRevoked, match="revocation list"):
            checker.check(cert, CA, clock.now)
        await checker.idle()
    assert responder.fetched == 1
    responder.status = 200
    clock.now = NOW + RETRY_FIRST
    with pytest.raises(CertificateRevoked, match="revocation list"):
        checker.check(cert, CA, clock.now)  # OCSP is asked again, not waited for
    await checker.idle()
    checker.check(cert, CA, clock.now)  # the responder says good: it answers first
    assert responder.fetched == 2


async def test_an_older_answer_does_not_replace_the_one_kept(
    responder: OcspResponder, checkers: Any
) -> None:
    cert = leaf(responder.url)
    responder.revoked = {cert.serial_number: REVOKED_ON}
    clock = FakeClock(NOW)
    checker = checkers(Policy.HARD, clock=clock)
    await first_check(checker, cert)
    responder.revoked, responder.this_update = {}, NOW - 2 * HOUR  # a replayed older answer
    clock.now = NOW + 2 * HOUR
    with pytest.raises(CertificateRevoked):
        checker.check(cert, CA, clock.now)
    await checker.idle()
    assert responder.fetched == 2
    with pytest.raises(CertificateRevoked):
        checker.check(cert, CA, clock.now)


async def test_the_issuer_is_worked_out_once_per_ca(
    responder: OcspResponder, checkers: Any
) -> None:
    checker = checkers(Policy.HARD)
    certs = [leaf(responder.url, None, f"POP00000{n}") for n in range(4)]
    issuer_of.cache_clear()
    for cert in certs:
        await first_check(checker, cert)
        for _ in range(3):
            checker.check(cert, CA, NOW)
    assert issuer_of.cache_info().misses == 1
    assert repr(checker) == "RevocationChecker(policy=hard, lists=0, answers=4)"


@settings(
    max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(body=st.binary(max_size=2048))
async def test_whatever_the_responder_says_it_is_an_answer_or_none(
    responder: OcspResponder, checkers: Any, body: bytes
) -> None:
    """Any bytes as the answer: under hard, the check refuses for now (no answer), and
    nothing else is raised."""
    responder.signer, responder.body = None, body
    cert = leaf(responder.url)
    checker = checkers(Policy.HARD)
    await first_check(checker, cert)
    assert "gave no answer" in unknown(checker, cert)


# --- several responders -----------------------------------------------------------------------


@pytest.fixture
async def second(aiohttp_server: ServerFactory) -> AsyncIterator[OcspResponder]:
    """Another responder, signing as the CA."""
    async with OcspResponder.served(aiohttp_server) as served:
        served.signer, served.this_update, served.next_update = (CA, CA_KEY), NOW - HOUR, NOW + DAY
        yield served


@pytest.mark.parametrize("first", ["down", "HTTP 503", "wrong nonce"])
async def test_the_next_responder_is_asked_when_one_gives_no_answer(
    responder: OcspResponder,
    second: OcspResponder,
    checkers: Any,
    caplog: pytest.LogCaptureFixture,
    first: str,
) -> None:
    """The responders the certificate names are asked in their order: the first that gives an
    answer that counts decides, and names itself; the one that failed is logged."""
    if first == "HTTP 503":
        responder.status = 503
    else:
        responder.nonce = b"\x01" * 32  # an answer to another request
    first_url = down_url() if first == "down" else responder.url
    cert = leaf([first_url, second.url], None)
    second.revoked = {cert.serial_number: REVOKED_ON}
    checker = checkers(Policy.HARD)
    caplog.set_level(logging.INFO, "fourcorner.revocation")
    await first_check(checker, cert)
    with pytest.raises(CertificateRevoked, match=rf"\(the OCSP responder at {second.url}\)"):
        checker.check(cert, CA, NOW)
    assert second.fetched == 1 and responder.fetched == (0 if first == "down" else 1)
    [failed] = log_events(caplog, "revocation.responder_failed")
    assert failed.url == first_url  # type: ignore[attr-defined]
    [fetched] = log_events(caplog, "revocation.fetched")
    assert fetched.responder == second.url  # type: ignore[attr-defined]
    assert not log_events(caplog, "revocation.fetch_failed")


async def test_another_responders_older_answer_is_taken_once_the_kept_one_has_lapsed(
    responder: OcspResponder, second: OcspResponder, checkers: Any
) -> None:
    """The first responder answered, then is down; the second signed its answer earlier (an
    hour before, valid for a day). While the first's answer counts, the older one does not
    replace it (it could be a copy replayed); once it has lapsed, the second's answers."""
    responder.this_update, responder.next_update = NOW, NOW + 10 * MINUTE
    second.this_update, second.next_update = NOW - HOUR, NOW + DAY
    cert = leaf([responder.url, second.url], None)
    second.revoked = {cert.serial_number: REVOKED_ON}
    clock = FakeClock(NOW)
    checker = checkers(Policy.HARD, clock=clock, grace=timedelta(0))
    await first_check(checker, cert)
    checker.check(cert, CA, NOW)  # the first's answer: good
    responder.status = 503
    clock.now = NOW + 6 * MINUTE  # past halfway to its nextUpdate: fetched again
    checker.check(cert, CA, clock.now)
    await checker.idle()
    assert second.fetched == 1
    checker.check(cert, CA, clock.now)  # the kept answer still: the older one did not count
    clock.now = NOW + 11 * MINUTE  # the kept answer has lapsed
    await first_check(checker, cert, clock.now)
    await checker.idle()
    with pytest.raises(CertificateRevoked, match=rf"\(the OCSP responder at {second.url}\)"):
        checker.check(cert, CA, clock.now)


async def test_the_responders_are_asked_within_the_timeout_in_all(
    responder: OcspResponder, second: OcspResponder, checkers: Any
) -> None:
    """The first responder stalls and takes the whole timeout: the second is not asked
    after that, and the reason names both."""
    responder.stall = True
    cert = leaf([responder.url, second.url], None)
    checker = checkers(Policy.HARD, timeout=0.5, wait=30)
    loop = asyncio.get_running_loop()
    started = loop.time()
    await first_check(checker, cert)
    assert loop.time() - started < 1.5
    why = unknown(checker, cert)
    assert f"{responder.url}: the OCSP responder did not answer within 0.5 s" in why
    assert f"{second.url}: not asked: the 0.5 s to ask in are over" in why
    assert second.fetched == 0


# --- the nonce ----------------------------------------------------------------------------------


@pytest.mark.parametrize("answered", ["echoed", "none"])
async def test_each_request_carries_a_new_nonce_and_an_answer_may_echo_it_or_carry_none(
    responder: OcspResponder, checkers: Any, answered: str
) -> None:
    """RFC 8954: 32 random bytes a request; the answer kept counts without asking again until
    its refresh, which asks with another nonce."""
    responder.echo = answered == "echoed"
    cert = leaf(responder.url)
    clock = FakeClock(NOW)
    checker = checkers(Policy.HARD, clock=clock)
    await first_check(checker, cert)
    checker.check(cert, CA, NOW)
    clock.now = NOW + REFRESH_EVERY
    responder.this_update = NOW + MINUTE
    checker.check(cert, CA, clock.now)  # the kept answer; its refresh starts
    await checker.idle()
    checker.check(cert, CA, clock.now)
    assert responder.fetched == 2
    nonces = [nonce_of(r) for r in responder.read]
    assert [len(n) for n in nonces] == [32, 32] and nonces[0] != nonces[1]
    assert [e.critical for r in responder.read for e in r.extensions] == [False, False]


async def test_an_answer_with_another_nonce_is_no_answer(
    responder: OcspResponder, point: CrlPoint, checkers: Any
) -> None:
    """A nonce other than the request's: the answer (here "good") is not used, the list
    answers (it revokes the certificate)."""
    responder.nonce = b"\x00" * 32
    cert = leaf(responder.url, point.url)
    point.serve(crl(cert))
    checker = checkers(Policy.HARD)
    await first_check(checker, cert)
    with pytest.raises(CertificateRevoked, match="the revocation list at"):
        checker.check(cert, CA, NOW)
    alone = leaf(responder.url, None, "POP000002")
    await first_check(checker, alone)
    assert "its nonce is not the one the request carried" in unknown(checker, alone)


# --- a delegated responder's own revocation -----------------------------------------------------

DELEGATE_KEY = ec.generate_private_key(ec.SECP256R1())  # not the CA's: the delegate signs


def delegate(
    *,
    no_check: bool = False,
    crl_url: str | list[str] | None = None,
    ocsp_url: str | None = None,
) -> tuple[x509.Certificate, Any]:
    return issue_ocsp_signer(
        CA,
        CA_KEY,
        "NET TEST AP CA OCSP",
        not_before=NOW - DAY,
        not_after=NOW + DAY,
        key=DELEGATE_KEY,
        no_check=no_check,
        crl_urls=[crl_url] if isinstance(crl_url, str) else crl_url or [],
        ocsp_url=ocsp_url,
    )


async def test_a_delegate_that_says_no_check_is_not_checked(
    responder: OcspResponder, point: CrlPoint, checkers: Any
) -> None:
    """id-pkix-ocsp-nocheck: its list (which would revoke it) is not fetched."""
    responder.signer, responder.delegated = delegate(no_check=True, crl_url=point.url), True
    point.serve(crl(responder.signer[0]))
    cert = leaf(responder.url)
    checker = checkers(Policy.HARD)
    await first_check(checker, cert)
    checker.check(cert, CA, NOW)
    assert (responder.fetched, point.fetched) == (1, 0)


@pytest.mark.parametrize("by", ["list", "ocsp"])
@pytest.mark.parametrize("revoked", [False, True], ids=["good", "revoked"])
async def test_a_delegates_own_revocation_decides_whether_its_answer_counts(
    responder: OcspResponder,
    second: OcspResponder,
    point: CrlPoint,
    checkers: Any,
    by: str,
    revoked: bool,
) -> None:
    """The delegate names its CA's list, or another responder (signing as the CA): not
    revoked, its answer (here: the certificate revoked) counts; revoked, it does not, and the
    certificate's own list answers (it revokes nothing)."""
    signer = delegate(
        crl_url=point.url if by == "list" else None, ocsp_url=second.url if by == "ocsp" else None
    )
    responder.signer, responder.delegated = signer, True
    cert = leaf(responder.url, point.url)
    responder.revoked = {cert.serial_number: REVOKED_ON}
    point.serve(crl(signer[0]) if revoked and by == "list" else crl())
    if revoked:
        second.revoked = {signer[0].serial_number: REVOKED_ON}
    checker = checkers(Policy.HARD)
    await first_check(checker, cert)
    if revoked:
        checker.check(cert, CA, NOW)  # the list revokes nothing
        alone = leaf(responder.url, None, "POP000002")
        await first_check(checker, alone)
        where = (
            f"the revocation list at {point.url}"
            if by == "list"
            else f"the OCSP responder at {second.url}"
        )
        assert (
            "its signer 'CN=NET TEST AP CA OCSP,O=fourcorner' is revoked since "
            f"2026-02-27T08:30:00Z ({where})"
        ) in unknown(checker, alone)
    else:
        with pytest.raises(CertificateRevoked, match="the OCSP responder at"):
            checker.check(cert, CA, NOW)
    if by == "ocsp":  # asked once about the delegate: its answer is kept for the next
        assert [r.serial_number for r in second.read] == [signer[0].serial_number]
    # the list: fetched for the delegate, or for the certificate when the delegate is revoked
    assert point.fetched == (0 if by == "ocsp" and not revoked else 1)


@pytest.mark.parametrize("policy", [Policy.SOFT, Policy.HARD])
@pytest.mark.parametrize("why", ["names nothing", "its responder only", "its list is down"])
async def test_a_delegate_whose_revocation_cannot_be_told_is_believed_only_under_soft(
    responder: OcspResponder,
    checkers: Any,
    caplog: pytest.LogCaptureFixture,
    policy: Policy,
    why: str,
) -> None:
    """Neither a list nor another responder tells the delegate's status: hard refuses its
    answer, soft takes it with a warning."""
    own = {"its responder only": responder.url}.get(why)  # not asked about itself
    down = down_url().replace("/ocsp", "/ca.crl") if why == "its list is down" else None
    responder.signer, responder.delegated = delegate(crl_url=down, ocsp_url=own), True
    cert = leaf(responder.url)
    checker = checkers(policy)
    caplog.set_level(logging.WARNING, "fourcorner.revocation")
    await first_check(checker, cert)
    reason = (
        f"the revocation list at {down} could not be fetched"
        if down
        else "it names no revocation list, nor another OCSP responder"
    )
    if policy is Policy.HARD:
        assert "own revocation cannot be told: " + reason in unknown(checker, cert)
    else:
        checker.check(cert, CA, NOW)
        [unchecked] = log_events(caplog, "revocation.unchecked")
        assert reason in unchecked.reason  # type: ignore[attr-defined]
    assert responder.fetched == 1


async def test_a_delegates_revocation_is_told_within_the_timeout_in_all(
    responder: OcspResponder,
    second: OcspResponder,
    aiohttp_server: ServerFactory,
    checkers: Any,
) -> None:
    """The delegate names four distribution points, all stalling, and another responder: the
    first point takes the whole timeout and nothing more is waited for, so the check takes
    the timeout once for the certificate's responder and once more for the delegate's
    revocation (not once per point)."""
    async with contextlib.AsyncExitStack() as stack:
        points = [await stack.enter_async_context(CrlPoint.served(aiohttp_server)) for _ in "abcd"]
        for stalled in points:
            stalled.stall = True
            stack.callback(stalled.release.set)
        signer = delegate(crl_url=[p.url for p in points], ocsp_url=second.url)
        responder.signer, responder.delegated = signer, True
        cert = leaf(responder.url)
        checker = checkers(Policy.HARD, timeout=0.5, wait=60)
        loop = asyncio.get_running_loop()
        started = loop.time()
        await first_check(checker, cert)
        assert loop.time() - started < 2 * 0.5 + 0.4
        why = unknown(checker, cert)
        assert f"{points[0].url} is not fetched yet" in why
        assert f"{points[1].url}: not asked: the 0.5 s to tell it in are over" in why
        assert sum(p.fetched for p in points) == 1 and second.fetched == 0


async def test_a_delegates_status_is_asked_one_level_deep_only(
    responder: OcspResponder, second: OcspResponder, checkers: Any
) -> None:
    """The responder asked about the delegate answers by a delegate that would need checking
    in turn: that is not followed, and the delegate's status is not known."""
    signer = delegate(ocsp_url=second.url)
    responder.signer = second.signer = signer
    responder.delegated = second.delegated = True
    cert = leaf(responder.url)
    checker = checkers(Policy.HARD)
    await first_check(checker, cert)
    assert "one level too deep" in unknown(checker, cert)
    assert (responder.fetched, second.fetched) == (1, 1)
