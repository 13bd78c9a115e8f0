"""The SOAP adapter of the SML against the local SML (TLS with client certificates, every request
checked against the WSDLs and XSDs), whose registrations a discovery by DNS then finds."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from fourcorner.adapters.pki.testpki import cert_pem, issue_leaf, key_pem, new_ca
from fourcorner.adapters.sml import SmlEndpoint, SoapLocator
from fourcorner.adapters.smp.discovery import SmlDiscovery
from fourcorner.adapters.smp.errors import Problem, SmpLookupError
from fourcorner.application.locator import LocatorError, LocatorFault
from fourcorner.domain.network_services import Environment
from sml_service import TestSml

TEST = Environment.TEST
SCHEME = "iso6523-actorid-upis"
ALPHA_URL, BETA_URL = "https://smp-alpha.example.org", "https://smp-beta.example.org"


def locator(sml: TestSml, smp_id: str, cert: tuple[str, str], **kwargs) -> SoapLocator:
    endpoint = SmlEndpoint(sml.url, smp_id, cert_pem=cert[0], key_pem=cert[1])
    return SoapLocator({TEST: endpoint}, cafile=str(sml.ca_file), timeout=5, **kwargs)


def discovery(sml: TestSml) -> SmlDiscovery:
    return SmlDiscovery({TEST: sml.dns.zone}, [("127.0.0.1", sml.dns.port)], timeout=2)


async def refused(call, fault: LocatorFault) -> LocatorError:
    with pytest.raises(LocatorError) as caught:
        await call
    assert caught.value.fault is fault, caught.value.reason
    return caught.value


@pytest.fixture
async def two_smps(sml_service: TestSml):
    alpha = locator(sml_service, "SMP-ALPHA", sml_service.smp_certificate("smp alpha"))
    beta = locator(sml_service, "SMP-BETA", sml_service.smp_certificate("smp beta"))
    await alpha.register_smp(TEST, ALPHA_URL)
    await beta.register_smp(TEST, BETA_URL)
    yield alpha, beta
    await alpha.aclose()
    await beta.aclose()
    assert sml_service.invalid == []  # every request the adapter made was valid


async def test_a_created_participant_is_found_by_dns_and_a_deleted_one_is_not(
    sml_service: TestSml, two_smps
) -> None:
    alpha, _ = two_smps
    await alpha.create(TEST, "0088:5798000000001")
    assert sml_service.participants == {(SCHEME, "0088:5798000000001"): "SMP-ALPHA"}
    found = await discovery(sml_service).smp_url((SCHEME, "0088:5798000000001"), TEST)
    assert found == ALPHA_URL
    assert await alpha.registered(TEST, "0088:5798000000001")

    await alpha.delete(TEST, "0088:5798000000001")
    with pytest.raises(SmpLookupError) as caught:
        await discovery(sml_service).smp_url((SCHEME, "0088:5798000000001"), TEST)
    assert caught.value.problem is Problem.NOT_REGISTERED
    await refused(alpha.delete(TEST, "0088:5798000000001"), LocatorFault.NOT_FOUND)


async def test_the_smp_registers_once_and_updates_after(sml_service: TestSml, two_smps) -> None:
    alpha, _ = two_smps
    await alpha.register_smp(TEST, "https://moved.example.org/smp")
    assert sml_service.smps["SMP-ALPHA"].logical == "https://moved.example.org/smp"
    # the first registration was an Update refused as unknown, then a Create; now an Update
    assert sml_service.requests.count("Create") == 2  # alpha's and beta's
    assert sml_service.requests.count("Update") == 3
    await alpha.create(TEST, "0088:5798000000001")
    found = await discovery(sml_service).smp_url((SCHEME, "0088:5798000000001"), TEST)
    assert found == "https://moved.example.org/smp"


async def test_another_smps_participant_cannot_be_created_only_migrated(
    sml_service: TestSml, two_smps
) -> None:
    alpha, beta = two_smps
    await alpha.create(TEST, "0088:5798000000001")
    error = await refused(beta.create(TEST, "0088:5798000000001"), LocatorFault.ALREADY_REGISTERED)
    assert "already exists" in error.reason
    # beta may not act on alpha's participant
    await refused(beta.delete(TEST, "0088:5798000000001"), LocatorFault.UNAUTHORIZED)
    await refused(
        beta.migrate(TEST, "0088:5798000000001", "Ab12@#cdEF34"), LocatorFault.BAD_REQUEST
    )

    await alpha.prepare_migration(TEST, "0088:5798000000001", "Ab12@#cdEF34")
    await beta.migrate(TEST, "0088:5798000000001", "Ab12@#cdEF34")
    assert sml_service.participants[(SCHEME, "0088:5798000000001")] == "SMP-BETA"
    found = await discovery(sml_service).smp_url((SCHEME, "0088:5798000000001"), TEST)
    assert found == BETA_URL
    assert await beta.registered(TEST, "0088:5798000000001")
    assert not await alpha.registered(TEST, "0088:5798000000001")


async def test_list_is_read_page_by_page(sml_service: TestSml, two_smps) -> None:
    alpha, beta = two_smps
    for n in range(1, 6):
        await alpha.create(TEST, f"0088:{n:013d}")
    await beta.create(TEST, "0088:9999999999999")
    assert await alpha.registered(TEST, "0088:0000000000005")  # on the third page
    assert not await alpha.registered(TEST, "0088:9999999999999")
    assert sml_service.requests.count("List") >= 3 + 3


async def test_an_smp_certificate_acts_only_for_its_own_smp(sml_service: TestSml, two_smps) -> None:
    impostor = locator(sml_service, "SMP-ALPHA", sml_service.smp_certificate("impostor"))
    try:
        await refused(impostor.create(TEST, "0088:5798000000001"), LocatorFault.UNAUTHORIZED)
        await refused(
            impostor.register_smp(TEST, "https://evil.example"), LocatorFault.UNAUTHORIZED
        )
    finally:
        await impostor.aclose()
    assert sml_service.participants == {}


async def test_a_client_certificate_of_another_ca_is_refused_by_tls(
    sml_service: TestSml, tmp_path: Path
) -> None:
    other_ca, other_key = new_ca("somebody else's CA")
    now = datetime.now(UTC)
    cert, key = issue_leaf(
        other_ca,
        other_key,
        "stranger",
        not_before=now - timedelta(minutes=1),
        not_after=now + timedelta(days=1),
    )
    stranger = locator(sml_service, "SMP-X", (cert_pem(cert), key_pem(key)))
    try:
        error = await refused(stranger.register_smp(TEST, ALPHA_URL), LocatorFault.UNREACHABLE)
    finally:
        await stranger.aclose()
    assert "cannot be reached" in error.reason
    assert sml_service.requests == []


async def test_an_sml_that_is_down_or_untrusted_is_unreachable(
    sml_service: TestSml, two_smps
) -> None:
    alpha, _ = two_smps
    sml_service.down = True
    error = await refused(alpha.create(TEST, "0088:5798000000001"), LocatorFault.UNREACHABLE)
    assert "HTTP 503" in error.reason
    sml_service.down = False
    # a server certificate the client does not trust: the system CAs do not know the test CA
    endpoint = SmlEndpoint(sml_service.url, "SMP-ALPHA", *sml_service.smp_certificate("a"))
    untrusting = SoapLocator({TEST: endpoint}, timeout=5)
    try:
        await refused(untrusting.create(TEST, "0088:5798000000001"), LocatorFault.UNREACHABLE)
    finally:
        await untrusting.aclose()


async def test_a_huge_answer_is_cut_off(sml_service: TestSml, two_smps) -> None:
    cert = sml_service.smp_certificate("smp beta, a small reader")
    small = locator(sml_service, "SMP-BETA", cert, max_answer=50)
    try:
        error = await refused(small.create(TEST, "0088:5798000000001"), LocatorFault.UNREACHABLE)
    finally:
        await small.aclose()
    assert "larger than 50 bytes" in error.reason


async def test_the_local_sml_refuses_a_request_its_schema_does_not_allow(
    sml_service: TestSml, two_smps
) -> None:
    from fourcorner.adapters.sml import soap

    alpha, _ = two_smps
    wrong_order = soap._element(
        "CreateParticipantIdentifier",
        soap._participant("0088:5798000000001"),
        soap._smp_id("SMP-ALPHA"),
    )
    action = soap._PARTICIPANT_ACTION + "createIn"
    call = alpha._call(TEST, soap.PARTICIPANT_PATH, action, "Create", wrong_order)
    error = await refused(call, LocatorFault.BAD_REQUEST)
    assert "not valid against the XSD" in error.reason
    wrong_action = soap.participant_message(
        "CreateParticipantIdentifier", "SMP-ALPHA", "0088:5798000000001"
    )
    call = alpha._call(
        TEST, soap.PARTICIPANT_PATH, soap._SMP_ACTION + "createIn", "Create", wrong_action
    )
    await refused(call, LocatorFault.BAD_REQUEST)
    assert len(sml_service.invalid) == 2 and sml_service.participants == {}
    sml_service.invalid.clear()  # seen: the fixture's own check would fail the test


async def test_an_empty_answer_is_a_success_and_an_html_one_is_not(
    aiohttp_server, sml_service: TestSml
) -> None:
    from aiohttp import web

    answers = iter([web.Response(status=200), web.Response(status=200, text="<html>hi</html>")])

    async def handler(request: web.Request) -> web.Response:
        return next(answers)

    app = web.Application()
    app.router.add_post("/edelivery-sml/manageparticipantidentifier", handler)
    server = await aiohttp_server(app)
    cert = sml_service.smp_certificate("smp")
    endpoint = SmlEndpoint(f"http://127.0.0.1:{server.port}/edelivery-sml", "S", *cert)
    plain = SoapLocator({TEST: endpoint}, timeout=5)
    try:
        await plain.create(TEST, "0088:5798000000001")
        error = await refused(plain.create(TEST, "0088:5798000000001"), LocatorFault.UNREACHABLE)
    finally:
        await plain.aclose()
    assert "no SOAP envelope" in error.reason
