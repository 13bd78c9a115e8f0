"""A sending access point's certificate on its CA's revocation list, at our AS4 endpoint, as the
container wires the check (``FOURCORNER_REVOCATION``): a revoked sender gets the signed ebMS
error of an untrusted certificate and nothing is stored; one whose list cannot be fetched is,
under ``hard``, told to try again (HTTP 503) rather than refused for good."""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from cryptography import x509

from crl_point import CrlPoint, ServerFactory
from fourcorner.adapters.pki.testpki import sign_crl
from ocsp_responder import OcspResponder
from sbd_factory import make_sbd

from .test_as4_endpoint import error_code, message, pki, post, received, setup
from .test_mls_matching import another_access_point
from .test_participants import gln

REVOKED_ON = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)


@pytest.fixture
async def crl_point(aiohttp_server: ServerFactory) -> AsyncIterator[CrlPoint]:
    async with CrlPoint.served(aiohttp_server) as point:
        yield point


@pytest.fixture
async def responder(aiohttp_server: ServerFactory) -> AsyncIterator[OcspResponder]:
    async with OcspResponder.served(aiohttp_server) as served:
        yield served


def ap_ca_list(api: Any, *revoked: x509.Certificate) -> x509.CertificateRevocationList:
    now = datetime.now(UTC)
    ca = pki(api)
    return sign_crl(
        ca.ap_ca,
        ca.ap_ca_key,
        {c.serial_number: REVOKED_ON for c in revoked},
        this_update=now - timedelta(hours=1),
        next_update=now + timedelta(days=1),
    )


async def test_a_revoked_sender_is_refused_and_an_unrevoked_one_received(
    start_api: Any, crl_point: CrlPoint
) -> None:
    api = await start_api("memory")  # FOURCORNER_REVOCATION=soft, the default
    b, receiver, path = await setup(api)
    revoked = another_access_point(api, "POP000201", [crl_point.url])
    kept = another_access_point(api, "POP000202", [crl_point.url])
    crl_point.serve(ap_ca_list(api, revoked[0]))
    original = f"0088:{gln(94)}"

    def signed_by(signer: tuple[x509.Certificate, Any]) -> Any:
        sbd = make_sbd(sender=original, receiver=receiver)
        return message(api, sbd, sender=original, receiver=receiver, signer=signer)

    status, answer = await post(api, path, signed_by(revoked))
    assert status == 200
    assert error_code(answer) == (
        "EBMS:0101 the signing certificate is refused: revoked on 2026-01-05T09:00:00Z "
        f"(the revocation list at {crl_point.url})"
    )
    assert await received(api, b["id"]) == []
    status, answer = await post(api, path, signed_by(kept))
    assert status == 200 and error_code(answer) is None and b"Receipt" in answer
    assert [t["senderSP"] for t in await received(api, b["id"])] == ["POP000202"]
    assert crl_point.fetched == 1


async def test_under_hard_a_sender_whose_list_cannot_be_fetched_may_try_again(
    start_api: Any, crl_point: CrlPoint, caplog: pytest.LogCaptureFixture
) -> None:
    """The sender is told to try again, and why only in general: where our list comes from
    and what its fetch met are logged for the operator, not told the peer."""
    crl_point.status = 503
    api = await start_api("memory", revocation="hard", revocation_wait_seconds=0.5)
    b, receiver, path = await setup(api)
    signer = another_access_point(api, "POP000203", [crl_point.url])
    original = f"0088:{gln(95)}"
    sbd = make_sbd(sender=original, receiver=receiver)
    caplog.set_level(logging.WARNING, logger="fourcorner.events")
    for _ in range(2):  # the first waits for the fetch; the next does not
        status, answer = await post(
            api, path, message(api, sbd, sender=original, receiver=receiver, signer=signer)
        )
        assert status == 503
        body = json.loads(answer)
        assert body["code"] == "AT-1500"
        assert body["error"] == (
            "The service is unavailable: the revocation of the sender's certificate cannot "
            "be checked yet. Try again shortly."
        )
        assert crl_point.url not in answer.decode() and "HTTP 503" not in answer.decode()
    assert await received(api, b["id"]) == []
    assert crl_point.fetched == 1  # asked again 30 s after it failed, not at every message
    deferred = [r for r in caplog.records if getattr(r, "event", None) == "as4.deferred"]
    assert len(deferred) == 2
    assert path.split("/")[-2] == deferred[0].org_id  # type: ignore[attr-defined]
    assert f"{crl_point.url} could not be fetched: the distribution point answered HTTP 503" in (
        deferred[0].reason  # type: ignore[attr-defined]
    )


async def test_a_sender_revoked_as_its_ocsp_responder_says_is_refused(
    start_api: Any, crl_point: CrlPoint, responder: OcspResponder
) -> None:
    """The sender's certificate names an OCSP responder and a distribution point: the
    responder (signing as the AP CA) is asked, not the list, and its answer decides."""
    api = await start_api("memory")
    b, receiver, path = await setup(api)
    revoked = another_access_point(api, "POP000204", [crl_point.url], responder.url)
    kept = another_access_point(api, "POP000205", [crl_point.url], responder.url)
    now = datetime.now(UTC)
    responder.signer = (pki(api).ap_ca, pki(api).ap_ca_key)
    responder.this_update, responder.next_update = now - timedelta(hours=1), now + timedelta(days=1)
    responder.revoked = {revoked[0].serial_number: REVOKED_ON}
    crl_point.serve(ap_ca_list(api))  # it revokes nothing: it is not what answers
    original = f"0088:{gln(96)}"
    for signer, refusal in ((revoked, True), (kept, False)):
        sbd = make_sbd(sender=original, receiver=receiver)
        status, answer = await post(
            api, path, message(api, sbd, sender=original, receiver=receiver, signer=signer)
        )
        assert status == 200
        if refusal:
            assert error_code(answer) == (
                "EBMS:0101 the signing certificate is refused: revoked on 2026-01-05T09:00:00Z "
                f"(the OCSP responder at {responder.url})"
            )
        else:
            assert error_code(answer) is None and b"Receipt" in answer
    assert [t["senderSP"] for t in await received(api, b["id"])] == ["POP000205"]
    assert responder.fetched == 2 and crl_point.fetched == 0
