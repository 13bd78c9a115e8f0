"""The SMP lookup client over real HTTP on 127.0.0.1, against a small SMP served by the test.

The test SMP reads the identifiers from ``request.raw_path`` and decodes each segment once
with ``parse_path_segment``, which is how the service's own SMP routes should read them
(aiohttp's ``match_info`` is already decoded; decoding it again would turn a literal ``%20``
in a document identifier into a space).
"""

from __future__ import annotations

import asyncio
import base64
import re
import socket
import uuid
from collections.abc import AsyncIterator, Callable, Coroutine, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import attrs
import pytest
from aiohttp import web
from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from lxml import etree

from crl_point import CrlPoint
from fourcorner.adapters.pki.revocation import Policy, RevocationChecker
from fourcorner.adapters.pki.testpki import (
    PrivateKey,
    issue_leaf,
    issue_ocsp_signer,
    new_ca,
    sign_crl,
)
from fourcorner.adapters.smp import (
    LookupResult,
    Problem,
    SmpLookupClient,
    SmpLookupError,
    Trust,
    parse_path_segment,
    path_segment,
    sign_enveloped,
    signed_service_metadata,
)
from fourcorner.adapters.smp import client as client_module
from fourcorner.adapters.smp.client import MAX_DOCUMENT_BYTES
from fourcorner.adapters.smp.lookup import SmpParticipantLookup
from fourcorner.application.ports import LookupFailed, LookupProblem
from fourcorner.application.sending import LOOKUP_FAILURES
from fourcorner.domain.envelope import Identifier
from fourcorner.domain.network_services import Environment
from fourcorner.domain.smp import Endpoint, ProcessEntry, ServiceEntry, SmpRegistration
from fourcorner.entrypoints.operator import issued_under
from ocsp_responder import OcspResponder

SMP_NS = "http://busdox.org/serviceMetadata/publishing/1.0/"
PARTICIPANT = "0088:5790000435975"
PARTICIPANT_ID = ("iso6523-actorid-upis", PARTICIPANT)
INVOICE = (
    "busdox-docid-qns",
    "urn:oasis:names:specification:ubl:schema:xsd:Invoice-2::Invoice##"
    "urn:cen.eu:en16931:2017#compliant#urn:fdc:peppol.eu:2017:poacc:billing:3.0::2.1",
)
# Slash, literal percent escape, star and space: each must survive exactly one decoding.
ODD = ("busdox-docid-qns", "http://example.test/ns/a%20b::Order*##x y::1.0")
BILLING = ("cenbii-procid-ubl", "urn:fdc:peppol.eu:2017:poacc:billing:01:1.0")
AS4 = "peppol-transport-as4-v2_0"
START = datetime(2026, 1, 2, 10, 0, tzinfo=UTC)
ACTIVATION = datetime(2025, 1, 1, tzinfo=UTC)
EXPIRATION = datetime(2027, 1, 1, tzinfo=UTC)
EARLY, LATE = datetime(2020, 1, 1, tzinfo=UTC), datetime(2100, 1, 1, tzinfo=UTC)
TEST = Environment.TEST

ServerFactory = Callable[[web.Application], Coroutine[Any, Any, Any]]


class FakeClock:
    def __init__(self, now: datetime = START) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now


@attrs.frozen
class Signer:
    key: rsa.RSAPrivateKey
    cert: x509.Certificate


@attrs.frozen
class Ca:
    cert: x509.Certificate
    key: PrivateKey

    def issue(
        self,
        common_name: str,
        *,
        not_after: datetime = LATE,
        crl_url: str | None = None,
        ocsp_url: str | None = None,
    ) -> Signer:
        cert, key = issue_leaf(
            self.cert,
            self.key,
            common_name,
            not_before=EARLY,
            not_after=not_after,
            crl_urls=[crl_url] if crl_url else [],
            ocsp_url=ocsp_url,
        )
        assert isinstance(key, rsa.RSAPrivateKey)
        return Signer(key, cert)

    def crl(self, *revoked: x509.Certificate) -> x509.CertificateRevocationList:
        """This CA's revocation list, revoking ``revoked``; current at ``START``."""
        return sign_crl(
            self.cert,
            self.key,
            {c.serial_number: START - timedelta(days=2) for c in revoked},
            this_update=START - timedelta(hours=1),
            next_update=START + timedelta(days=1),
        )


@attrs.frozen
class Pki:
    """A network's root with its SMP CA and AP CA, and an unrelated root's CA."""

    root: x509.Certificate
    smp_ca: Ca
    ap_ca: Ca
    stranger: Ca  # a CA under a root nobody trusts

    def trust(self, revocation: RevocationChecker | None = None) -> dict[Environment, Trust]:
        one = Trust(
            smp=issued_under([self.smp_ca.cert], [self.root], "SMP", revocation),
            access_point=issued_under([self.ap_ca.cert], [self.root], "AP", revocation),
        )
        return {TEST: one, Environment.PROD: one}


def _ca(name: str, issuer: Ca | None = None) -> Ca:
    cert, key = new_ca(
        name,
        not_before=EARLY,
        not_after=LATE,
        issuer_cert=issuer.cert if issuer else None,
        issuer_key=issuer.key if issuer else None,
        path_length=None if issuer is None else 0,
    )
    return Ca(cert, key)


@pytest.fixture(scope="module")
def pki() -> Pki:
    root = _ca("TEST ROOT CA")
    other_root = _ca("OTHER ROOT CA")
    return Pki(
        root.cert,
        _ca("TEST SMP CA", root),
        _ca("TEST AP CA", root),
        _ca("OTHER SMP CA", other_root),
    )


@pytest.fixture(scope="module")
def smp(pki: Pki) -> Signer:
    return pki.smp_ca.issue("SMP ONE")


@pytest.fixture(scope="module")
def smp_two(pki: Pki) -> Signer:
    return pki.smp_ca.issue("SMP TWO")


@pytest.fixture(scope="module")
def rogue(pki: Pki) -> Signer:
    return pki.stranger.issue("SMP ONE")  # same subject, issued under an untrusted root


@pytest.fixture(scope="module")
def ap_cert(pki: Pki) -> x509.Certificate:
    return pki.ap_ca.issue("PBE000001").cert


def registration(
    ap_cert: x509.Certificate,
    participant: str = PARTICIPANT,
    url: str = "https://ap.example/as4",
    more: Sequence[tuple[x509.Certificate, str]] = (),
) -> SmpRegistration:
    """``participant``'s registration with one endpoint, ``ap_cert``'s at ``url``, and the
    ``more`` after it (a certificate and URL each)."""

    def endpoint(cert: x509.Certificate, url: str) -> Endpoint:
        der = cert.public_bytes(serialization.Encoding.DER)
        return Endpoint(
            transport_profile=AS4,
            url=url,
            certificate=base64.b64encode(der).decode(),
            description="Fourcorner test access point",
            technical_contact_url="https://ap.example/contact",
            activation=ACTIVATION,
            expiration=EXPIRATION,
        )

    endpoints = tuple(endpoint(c, u) for c, u in ((ap_cert, url), *more))
    process = ProcessEntry(BILLING[0], BILLING[1], endpoints)
    smp_id = uuid.UUID(int=1)
    return SmpRegistration(
        id=SmpRegistration.id_for(smp_id, participant),
        smp_id=smp_id,
        participant=participant,
        services=(ServiceEntry(*INVOICE, (process,)), ServiceEntry(*ODD, (process,))),
        created_at=START,
        last_modified_at=START,
    )


def redirect_document(href: str, certificate_uid: str, signer: Signer) -> bytes:
    root = etree.Element(f"{{{SMP_NS}}}SignedServiceMetadata", nsmap={None: SMP_NS})
    metadata = etree.SubElement(root, f"{{{SMP_NS}}}ServiceMetadata")
    redirect = etree.SubElement(metadata, f"{{{SMP_NS}}}Redirect", href=href)
    etree.SubElement(redirect, f"{{{SMP_NS}}}CertificateUID").text = certificate_uid
    sign_enveloped(root, signer.key, signer.cert)
    data: bytes = etree.tostring(root, xml_declaration=True, encoding="UTF-8")
    return data


Key = tuple[tuple[str, str], tuple[str, str]]


@attrs.define
class FakeSmp:
    """Serves ``GET /smp/{participant}/services/{document}`` from ``documents``."""

    documents: dict[Key, bytes] = attrs.Factory(dict)
    headers: dict[str, str] = attrs.Factory(dict)
    status: int | None = None
    delay: float = 0.0
    chunked: bool = False
    requested: list[Key] = attrs.Factory(list)
    raw_paths: list[str] = attrs.Factory(list)

    def publish(self, registration: SmpRegistration, signer: Signer) -> None:
        for service in registration.services:
            data = signed_service_metadata(registration, service, signer.key, signer.cert)
            self.put(
                (service.document_scheme, service.document_value), data, registration.participant
            )

    def put(self, document: tuple[str, str], data: bytes, participant: str = PARTICIPANT) -> None:
        self.documents[(("iso6523-actorid-upis", participant.lower()), document)] = data

    def app(self) -> web.Application:
        app = web.Application()
        app.router.add_get("/smp/{participant}/services/{document}", self.service_metadata)
        return app

    async def service_metadata(self, request: web.Request) -> web.Response:
        if self.delay:
            await asyncio.sleep(self.delay)
        if self.status is not None:
            return web.Response(status=self.status)
        self.raw_paths.append(request.raw_path)
        segments = request.raw_path.split("?", 1)[0].split("/")
        try:
            scheme, value = parse_path_segment(segments[-3])
            document = parse_path_segment(segments[-1])
        except ValueError:
            return web.Response(status=400, text="unparsable identifier")
        key = ((scheme.lower(), value.lower()), document)
        self.requested.append(key)
        data = self.documents.get(key)
        if data is None:
            return web.Response(status=404)
        if self.chunked:  # no Content-Length: the client finds the size by reading
            resp = web.StreamResponse(headers={"Content-Type": "text/xml", **self.headers})
            resp.enable_chunked_encoding()
            await resp.prepare(request)
            try:
                for at in range(0, len(data), 65536):
                    await resp.write(data[at : at + 65536])
                await resp.write_eof()
            except ConnectionError:
                pass  # the client stopped reading
            return resp
        return web.Response(
            body=data, content_type="text/xml", charset="utf-8", headers=self.headers
        )


@attrs.define
class Rig:
    smp: FakeSmp
    base_url: str
    clock: FakeClock
    make_client: Callable[..., SmpLookupClient]


@pytest.fixture
async def rig(
    aiohttp_server: ServerFactory, pki: Pki, smp: Signer, ap_cert: x509.Certificate
) -> AsyncIterator[Rig]:
    fake = FakeSmp()
    fake.publish(registration(ap_cert), smp)
    server = await aiohttp_server(fake.app())
    base_url = str(server.make_url("/smp"))
    clock = FakeClock()
    clients: list[SmpLookupClient] = []

    def make_client(base: Any = base_url, **kwargs: Any) -> SmpLookupClient:
        client = SmpLookupClient(base, pki.trust(), clock=clock, **kwargs)
        clients.append(client)
        return client

    yield Rig(fake, base_url, clock, make_client)
    for client in clients:
        await client.aclose()


async def lookup(
    client: SmpLookupClient,
    document: tuple[str, str] = INVOICE,
    process: tuple[str, str] = BILLING,
    transport_profile: str = AS4,
    participant: str = PARTICIPANT,
) -> LookupResult:
    return await client.endpoint(
        participant, document, process, transport_profile, environment=TEST
    )


async def refused(
    coroutine: Coroutine[Any, Any, Any],
    *,
    permanent: bool,
    match: str | None = None,
    problem: Problem | None = None,
) -> SmpLookupError:
    with pytest.raises(SmpLookupError, match=match) as caught:
        await coroutine
    assert caught.value.permanent is permanent, caught.value.reason
    if problem is not None:
        assert caught.value.problem is problem, caught.value
    return caught.value


# --- found -------------------------------------------------------------------------------------


async def test_lookup_round_trips_over_http(
    rig: Rig, smp: Signer, ap_cert: x509.Certificate
) -> None:
    result = await lookup(rig.make_client())
    assert result.url == "https://ap.example/as4"
    assert result.certificate == ap_cert
    assert result.transport_profile == AS4
    assert result.activation == ACTIVATION and result.expiration == EXPIRATION
    assert result.technical_contact_url == "https://ap.example/contact"
    assert result.description == "Fourcorner test access point"
    assert result.smp_certificate == smp.cert
    [raw] = rig.smp.raw_paths
    assert raw.startswith("/smp/iso6523-actorid-upis%3A%3A0088%3A5790000435975/services/")
    assert "%3A%3AInvoice%23%23urn%3Acen.eu" in raw


async def test_a_published_certificate_is_read_once_for_the_same_bytes(
    rig: Rig, ap_cert: x509.Certificate
) -> None:
    """Every send to an endpoint reads the certificate its SMP publishes: the same bytes give
    the same (immutable) object, whose chain is checked faster (``pki.certificates``)."""
    first = await lookup(rig.make_client())
    again = await lookup(rig.make_client())
    assert first.certificate == ap_cert and again.certificate is first.certificate


async def test_identifiers_are_decoded_exactly_once(rig: Rig) -> None:
    """A document value with ``/``, a literal ``%20``, ``*``, ``#`` and a space."""
    result = await lookup(rig.make_client(), document=ODD)
    assert result.url == "https://ap.example/as4"
    assert rig.smp.requested[-1][1] == ODD
    assert "%2F" in rig.smp.raw_paths[-1] and "%2520" in rig.smp.raw_paths[-1]


async def test_participant_matches_case_insensitively(
    rig: Rig, smp: Signer, ap_cert: x509.Certificate
) -> None:
    rig.smp.publish(registration(ap_cert, "0088:abcdef"), smp)
    result = await lookup(rig.make_client(), participant="iso6523-actorid-upis::0088:ABCdef")
    assert result.url == "https://ap.example/as4"


async def test_net_spellings_are_accepted(rig: Rig) -> None:
    result = await lookup(rig.make_client(), transport_profile="net-transport-as4-v2_0")
    assert result.transport_profile == AS4


async def test_base_url_may_come_from_async_discovery(rig: Rig) -> None:
    asked: list[tuple[tuple[str, str], Environment]] = []

    class Discover:
        async def smp_url(self, participant: tuple[str, str], environment: Environment) -> str:
            asked.append((participant, environment))
            return rig.base_url + "/"

    result = await lookup(rig.make_client(Discover()))
    assert result.url == "https://ap.example/as4" and asked == [(PARTICIPANT_ID, TEST)]


# --- permanent refusals ------------------------------------------------------------------------


async def test_unknown_participant_is_permanent(rig: Rig) -> None:
    await refused(
        lookup(rig.make_client(), participant="0088:0000000000000"),
        permanent=True,
        match="not registered",
    )


async def test_tampered_response_is_permanent(rig: Rig) -> None:
    key = (("iso6523-actorid-upis", PARTICIPANT), INVOICE)
    rig.smp.documents[key] = rig.smp.documents[key].replace(
        b"https://ap.example/as4", b"https://ap.evil0/as4"
    )
    await refused(lookup(rig.make_client()), permanent=True, match="signature")


async def test_untrusted_signer_is_permanent(
    rig: Rig, rogue: Signer, ap_cert: x509.Certificate
) -> None:
    rig.smp.publish(registration(ap_cert), rogue)
    await refused(
        lookup(rig.make_client()), permanent=True, match="trusted", problem=Problem.SMP_UNTRUSTED
    )


async def test_unknown_process_is_permanent(rig: Rig) -> None:
    other = ("cenbii-procid-ubl", "urn:fdc:peppol.eu:2017:poacc:selfbilling:01:1.0")
    await refused(lookup(rig.make_client(), process=other), permanent=True, match="process")


async def test_unknown_transport_profile_is_permanent(rig: Rig) -> None:
    await refused(
        lookup(rig.make_client(), transport_profile="peppol-transport-as2-v2_0"),
        permanent=True,
        match="transport profile",
    )


async def test_expired_endpoint_is_permanent(rig: Rig) -> None:
    rig.clock.now = EXPIRATION + timedelta(seconds=1)
    await refused(lookup(rig.make_client()), permanent=True, match="expired")


async def test_endpoint_not_yet_active_is_permanent(rig: Rig) -> None:
    rig.clock.now = ACTIVATION - timedelta(seconds=1)
    await refused(lookup(rig.make_client()), permanent=True, match="active only from")


async def test_expired_smp_certificate_is_permanent(
    rig: Rig, pki: Pki, ap_cert: x509.Certificate
) -> None:
    short = pki.smp_ca.issue("SMP OLD", not_after=START - timedelta(days=1))
    rig.smp.publish(registration(ap_cert), short)
    await refused(
        lookup(rig.make_client()), permanent=True, match="expired", problem=Problem.SMP_UNTRUSTED
    )


async def test_answer_for_another_participant_is_permanent(
    rig: Rig, smp: Signer, ap_cert: x509.Certificate
) -> None:
    elsewhere = registration(ap_cert, "0088:1111111111111")
    data = signed_service_metadata(elsewhere, elsewhere.services[0], smp.key, smp.cert)
    rig.smp.put(INVOICE, data)
    await refused(lookup(rig.make_client()), permanent=True, match="participant")


async def test_answer_for_another_document_type_is_permanent(
    rig: Rig, smp: Signer, ap_cert: x509.Certificate
) -> None:
    reg = registration(ap_cert)
    rig.smp.put(INVOICE, signed_service_metadata(reg, reg.services[1], smp.key, smp.cert))
    await refused(lookup(rig.make_client()), permanent=True, match="document type")


async def test_unreadable_answer_is_permanent(rig: Rig) -> None:
    rig.smp.put(INVOICE, b"<!DOCTYPE x [<!ENTITY a 'b'>]><x>&a;</x>")
    await refused(lookup(rig.make_client()), permanent=True, match="cannot be read")


@pytest.mark.parametrize("chunked", [False, True])
async def test_an_answer_larger_than_the_cap_is_permanent(rig: Rig, chunked: bool) -> None:
    rig.smp.chunked = chunked
    rig.smp.put(INVOICE, b"<x>" + b" " * MAX_DOCUMENT_BYTES + b"</x>")
    await refused(lookup(rig.make_client()), permanent=True, match="too large")


# --- redirects -----------------------------------------------------------------------------------


@pytest.fixture
async def second_smp(
    aiohttp_server: ServerFactory, smp_two: Signer, ap_cert: x509.Certificate
) -> tuple[FakeSmp, str]:
    fake = FakeSmp()
    fake.publish(registration(ap_cert), smp_two)
    server = await aiohttp_server(fake.app())
    return fake, str(server.make_url("/smp"))


def target_href(base: str) -> str:
    return f"{base}/{path_segment(*PARTICIPANT_ID)}/services/{path_segment(*INVOICE)}"


async def test_a_redirect_is_followed_once(
    rig: Rig, smp: Signer, smp_two: Signer, second_smp: tuple[FakeSmp, str]
) -> None:
    fake_two, base_two = second_smp
    uid = "O=fourcorner,CN=SMP TWO"
    rig.smp.put(INVOICE, redirect_document(target_href(base_two), uid, smp))
    result = await lookup(rig.make_client())
    assert result.smp_certificate == smp_two.cert
    assert result.url == "https://ap.example/as4"
    assert len(fake_two.requested) == 1


async def test_a_redirect_to_another_signer_than_announced_is_permanent(
    rig: Rig, smp: Signer, second_smp: tuple[FakeSmp, str]
) -> None:
    _, base_two = second_smp
    rig.smp.put(INVOICE, redirect_document(target_href(base_two), "CN=SMP THREE,O=Other,C=BE", smp))
    await refused(lookup(rig.make_client()), permanent=True, match="CertificateUID")


async def test_a_second_redirect_is_not_followed(
    rig: Rig, smp: Signer, smp_two: Signer, second_smp: tuple[FakeSmp, str]
) -> None:
    fake_two, base_two = second_smp
    href = target_href(base_two)
    rig.smp.put(INVOICE, redirect_document(href, "CN=SMP TWO,O=fourcorner", smp))
    fake_two.put(
        INVOICE,
        redirect_document(target_href(rig.base_url), "CN=SMP ONE,O=fourcorner", smp_two),
    )
    await refused(lookup(rig.make_client()), permanent=True, match="redirected twice")


# --- transient failures --------------------------------------------------------------------------


async def test_server_down_is_not_permanent(rig: Rig) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    client = rig.make_client(f"http://127.0.0.1:{port}/smp")
    await refused(lookup(client), permanent=False, match="cannot be reached")


@pytest.mark.parametrize("status", [500, 503, 429])
async def test_server_errors_are_not_permanent(rig: Rig, status: int) -> None:
    rig.smp.status = status
    await refused(lookup(rig.make_client()), permanent=False, match=str(status))


async def test_timeout_is_not_permanent(rig: Rig) -> None:
    rig.smp.delay = 2.0
    await refused(lookup(rig.make_client(timeout=0.2)), permanent=False, match="cannot be reached")


async def test_bad_request_is_permanent(rig: Rig) -> None:
    rig.smp.status = 400
    await refused(lookup(rig.make_client()), permanent=True, match="400")


# --- trust by certificate chain --------------------------------------------------------------


async def test_a_signer_under_the_ap_ca_is_not_an_smp(
    rig: Rig, pki: Pki, ap_cert: x509.Certificate
) -> None:
    """It chains to the trusted root, but not through the SMP CA."""
    rig.smp.publish(registration(ap_cert), pki.ap_ca.issue("SMP ONE"))
    await refused(
        lookup(rig.make_client()), permanent=True, match="SMP CA", problem=Problem.SMP_UNTRUSTED
    )


async def test_any_signer_under_the_smp_ca_is_believed(
    rig: Rig, pki: Pki, ap_cert: x509.Certificate
) -> None:
    """No pinning: a certificate the client has never seen, issued by the SMP CA."""
    fresh = pki.smp_ca.issue("SMP NEVER SEEN")
    rig.smp.publish(registration(ap_cert), fresh)
    assert (await lookup(rig.make_client())).smp_certificate == fresh.cert


@pytest.mark.parametrize(
    ("issuer", "match"),
    [
        ("stranger", "not trusted|neither in the chain"),  # an unrelated root
        ("smp_ca", "AP CA"),  # the network's root, but the wrong CA
        ("expired", "expired"),
    ],
)
async def test_an_endpoint_certificate_outside_the_ap_ca_is_refused(
    rig: Rig, pki: Pki, smp: Signer, issuer: str, match: str
) -> None:
    if issuer == "expired":
        cert = pki.ap_ca.issue("PBE000009", not_after=START - timedelta(days=1)).cert
    else:
        cert = getattr(pki, issuer).issue("PBE000009").cert
    rig.smp.publish(registration(cert), smp)
    error = await refused(
        lookup(rig.make_client()), permanent=True, problem=Problem.ENDPOINT_UNTRUSTED
    )
    assert re.search(match, error.reason), error.reason


@pytest.mark.parametrize(
    ("url", "allow_http", "usable"),
    [
        ("http://ap.example/as4", False, False),
        ("http://ap.example/as4", True, True),
        ("http://127.0.0.1:9/as4", False, True),
        ("http://[::1]:9/as4", False, True),
        ("http://localhost:9/as4", False, True),
        ("http://0.0.0.0:9/as4", False, True),  # this very host
        ("http://10.0.0.1/as4", False, False),
        ("http://127.0.0.1.example/as4", False, False),
        ("https://ap.example/as4", False, True),
    ],
)
async def test_access_points_are_reached_over_https(
    rig: Rig, smp: Signer, ap_cert: x509.Certificate, url: str, allow_http: bool, usable: bool
) -> None:
    rig.smp.publish(registration(ap_cert, url=url), smp)
    client = rig.make_client(allow_http=allow_http)
    if usable:
        assert (await lookup(client)).url == url
    else:
        await refused(lookup(client), permanent=True, match="https", problem=Problem.INSECURE)


async def test_an_smp_on_plain_http_is_not_asked(rig: Rig) -> None:
    client = rig.make_client("http://smp.example/smp")
    await refused(lookup(client), permanent=True, match="https", problem=Problem.INSECURE)


async def test_an_http_redirect_is_not_followed(aiohttp_server: ServerFactory, rig: Rig) -> None:
    """An SMP on https could send the client to plain http with a 302; it is not followed."""
    app = web.Application()

    async def moved(request: web.Request) -> web.Response:
        raise web.HTTPFound(rig.base_url + request.raw_path.removeprefix("/smp"))

    app.router.add_get("/smp/{tail:.*}", moved)
    server = await aiohttp_server(app)
    await refused(
        lookup(rig.make_client(str(server.make_url("/smp")))),
        permanent=True,
        match="302",
        problem=Problem.NOT_REGISTERED,
    )
    assert rig.smp.requested == []


# --- caching by the HTTP headers ---------------------------------------------------------------


async def test_answers_are_reused_while_fresh(rig: Rig) -> None:
    rig.smp.headers = {"Cache-Control": "public, max-age=60"}
    client = rig.make_client()
    await lookup(client)
    await lookup(client)
    assert len(rig.smp.requested) == 1
    rig.clock.now = START + timedelta(seconds=61)
    await lookup(client)
    assert len(rig.smp.requested) == 2


@pytest.mark.parametrize(
    "headers",
    [
        {},
        {"Cache-Control": "no-store, max-age=60"},
        {"Cache-Control": "no-cache"},
        {"Cache-Control": "max-age=60", "Age": "60"},
        {"Expires": "Thu, 01 Jan 1970 00:00:00 GMT"},
    ],
)
async def test_answers_not_to_be_kept_are_asked_again(rig: Rig, headers: dict[str, str]) -> None:
    rig.smp.headers = headers
    client = rig.make_client()
    await lookup(client)
    await lookup(client)
    assert len(rig.smp.requested) == 2


async def test_a_cached_answer_is_verified_again(
    rig: Rig, pki: Pki, ap_cert: x509.Certificate
) -> None:
    """Its signer expires while it is cached: the next use refuses it."""
    short = pki.smp_ca.issue("SMP SHORT", not_after=START + timedelta(seconds=30))
    rig.smp.publish(registration(ap_cert), short)
    rig.smp.headers = {"Cache-Control": "max-age=3600"}
    client = rig.make_client()
    await lookup(client)
    rig.clock.now = START + timedelta(seconds=31)
    await refused(lookup(client), permanent=True, match="expired")
    assert len(rig.smp.requested) == 1


async def test_a_refused_answer_is_not_kept_however_long_it_may_be(rig: Rig) -> None:
    """An answer whose signature fails is refused and not kept, whatever its max-age: once
    the SMP has mended it, the next lookup asks again and finds the endpoint."""
    key = (("iso6523-actorid-upis", PARTICIPANT), INVOICE)
    good = rig.smp.documents[key]
    rig.smp.documents[key] = good.replace(b"https://ap.example/as4", b"https://ap.evil0/as4")
    rig.smp.headers = {"Cache-Control": "max-age=86400"}
    client = rig.make_client()
    await refused(lookup(client), permanent=True, match="signature")
    rig.smp.documents[key] = good
    assert (await lookup(client)).url == "https://ap.example/as4"
    assert len(rig.smp.requested) == 2
    await lookup(client)  # a good one is kept
    assert len(rig.smp.requested) == 2


def signatures_checked(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    """The enveloped signatures the client verifies from now on (their arguments)."""
    checked: list[object] = []
    real = client_module.verify_enveloped

    def counting(*args: Any) -> Any:
        checked.append(args)
        return real(*args)

    monkeypatch.setattr(client_module, "verify_enveloped", counting)
    return checked


async def test_the_same_answer_is_signature_checked_once_and_its_signer_trusted_each_time(
    rig: Rig, pki: Pki, ap_cert: x509.Certificate, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Fetched again (not kept by the HTTP cache), the same bytes are not verified again; the
    trust in their signer is: once it has expired the answer is refused. A tampered answer is
    refused every time."""
    checked = signatures_checked(monkeypatch)
    short = pki.smp_ca.issue("SMP SHORT", not_after=START + timedelta(seconds=30))
    rig.smp.publish(registration(ap_cert), short)
    client = rig.make_client()
    first = await lookup(client)
    assert await lookup(client) == first
    assert (len(rig.smp.requested), len(checked)) == (2, 1)
    rig.clock.now = START + timedelta(seconds=31)
    await refused(lookup(client), permanent=True, match="expired")
    key = (("iso6523-actorid-upis", PARTICIPANT), INVOICE)
    rig.smp.documents[key] = rig.smp.documents[key].replace(
        b"https://ap.example/as4", b"https://ap.evil0/as4"
    )
    rig.clock.now = START
    for _ in range(2):
        await refused(lookup(client), permanent=True, match="signature")
    assert len(checked) == 3


async def test_only_the_last_signed_answers_are_kept(
    rig: Rig, pki: Pki, ap_cert: x509.Certificate, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The answers whose signature checked out are kept up to ``SIGNED``: past it the oldest
    is verified again when it comes back."""
    checked = signatures_checked(monkeypatch)
    monkeypatch.setattr(client_module, "SIGNED", 1)
    key = (("iso6523-actorid-upis", PARTICIPANT), INVOICE)
    rig.smp.publish(registration(ap_cert), pki.smp_ca.issue("SMP A"))
    first = rig.smp.documents[key]
    client = rig.make_client()
    await lookup(client)
    await lookup(client)
    assert len(checked) == 1  # kept
    rig.smp.publish(registration(ap_cert), pki.smp_ca.issue("SMP B"))
    assert rig.smp.documents[key] != first
    await lookup(client)
    assert len(checked) == 2  # another answer: verified, and the first one let go
    rig.smp.documents[key] = first
    await lookup(client)
    assert len(checked) == 3


# --- revocation ----------------------------------------------------------------------------------


@pytest.fixture
async def crl_point(aiohttp_server: ServerFactory) -> AsyncIterator[CrlPoint]:
    async with CrlPoint.served(aiohttp_server) as point:
        yield point


@pytest.fixture
async def revocation(rig: Rig) -> AsyncIterator[Callable[[Policy], RevocationChecker]]:
    made: list[RevocationChecker] = []

    def make(policy: Policy) -> RevocationChecker:
        made.append(RevocationChecker(policy, wait=5.0, clock=rig.clock))
        return made[-1]

    yield make
    for checker in made:
        await checker.aclose()


@pytest.fixture
async def responder(aiohttp_server: ServerFactory) -> AsyncIterator[OcspResponder]:
    async with OcspResponder.served(aiohttp_server) as served:
        served.this_update, served.next_update = (
            START - timedelta(hours=1),
            START + timedelta(days=1),
        )
        yield served


@pytest.mark.parametrize("by", ["list", "ocsp"])
@pytest.mark.parametrize("revoked", [True, False])
async def test_a_revoked_endpoint_certificate_is_not_used(
    rig: Rig,
    pki: Pki,
    smp: Signer,
    crl_point: CrlPoint,
    responder: OcspResponder,
    revocation: Any,
    revoked: bool,
    by: str,
) -> None:
    """The first lookup of an endpoint whose revocation is not known yet waits for it (no
    list or answer was fetched before): a revoked certificate is refused for good, nothing
    is encrypted for it; one not revoked is used. A certificate naming an OCSP responder
    (here a delegate of the AP CA) is answered by it, and the list is not fetched."""
    ocsp_url = responder.url if by == "ocsp" else None
    ap = pki.ap_ca.issue("PBE000002", crl_url=crl_point.url, ocsp_url=ocsp_url)
    other = pki.ap_ca.issue("PBE000003", crl_url=crl_point.url, ocsp_url=ocsp_url)
    gone = ap.cert if revoked else other.cert
    if by == "ocsp":
        responder.signer = issue_ocsp_signer(
            pki.ap_ca.cert, pki.ap_ca.key, "NET AP CA OCSP", not_before=EARLY, not_after=LATE
        )
        responder.delegated = True
        responder.revoked = {gone.serial_number: START - timedelta(days=2)}
        crl_point.serve(pki.ap_ca.crl())  # revoking nothing: it is not what answers
    else:
        crl_point.serve(pki.ap_ca.crl(gone))
    rig.smp.publish(registration(ap.cert), smp)
    client = SmpLookupClient(rig.base_url, pki.trust(revocation(Policy.SOFT)), clock=rig.clock)
    try:
        if revoked:
            await refused(
                lookup(client),
                permanent=True,
                match=r"endpoint certificate is refused: revoked on 2025-12-31T10:00:00Z \(the "
                + ("OCSP responder" if by == "ocsp" else "revocation list"),
                problem=Problem.ENDPOINT_UNTRUSTED,
            )
        else:
            assert (await lookup(client)).certificate == ap.cert
    finally:
        await client.aclose()
    assert (crl_point.fetched, responder.fetched) == ((0, 1) if by == "ocsp" else (1, 0))


async def test_a_revoked_smp_certificate_is_not_believed(
    rig: Rig, pki: Pki, ap_cert: x509.Certificate, crl_point: CrlPoint, revocation: Any
) -> None:
    signer = pki.smp_ca.issue("SMP REVOKED", crl_url=crl_point.url)
    crl_point.serve(pki.smp_ca.crl(signer.cert))
    rig.smp.publish(registration(ap_cert), signer)
    client = SmpLookupClient(rig.base_url, pki.trust(revocation(Policy.HARD)), clock=rig.clock)
    try:
        await refused(
            lookup(client),
            permanent=True,
            match="SMP signing certificate is not trusted: revoked on",
            problem=Problem.SMP_UNTRUSTED,
        )
    finally:
        await client.aclose()


@pytest.mark.parametrize("policy", [Policy.SOFT, Policy.HARD])
async def test_an_endpoint_whose_list_cannot_be_fetched_is_tried_again_under_hard(
    rig: Rig, pki: Pki, smp: Signer, crl_point: CrlPoint, revocation: Any, policy: Policy
) -> None:
    """The AP CA's distribution point answers 503: soft sends to the endpoint all the same;
    hard does not send, and the send is a failure to try again later (TXE-1007)."""
    crl_point.status = 503
    ap = pki.ap_ca.issue("PBE000004", crl_url=crl_point.url)
    rig.smp.publish(registration(ap.cert), smp)
    client = SmpLookupClient(rig.base_url, pki.trust(revocation(policy)), clock=rig.clock)
    found = SmpParticipantLookup(client)
    try:
        receiver = Identifier("iso6523-actorid-upis", PARTICIPANT)
        asked = (receiver, Identifier(*INVOICE), Identifier(*BILLING), AS4, TEST)
        if policy is Policy.SOFT:
            assert (await found.endpoint(*asked)).url == "https://ap.example/as4"
            return
        with pytest.raises(LookupFailed, match="answered HTTP 503") as failed:
            await found.endpoint(*asked)
        assert failed.value.problem is LookupProblem.REVOCATION_UNKNOWN
        assert not failed.value.permanent
        failure = LOOKUP_FAILURES[failed.value.problem]
        assert (failure.code, failure.retryable) == ("TXE-1007", True)
    finally:
        await found.aclose()


@pytest.mark.parametrize("listed", [False, True], ids=["naming no list", "its list fetched"])
async def test_an_endpoint_whose_list_cannot_be_fetched_gives_way_to_another_that_passes(
    aiohttp_server: ServerFactory,
    rig: Rig,
    pki: Pki,
    smp: Signer,
    crl_point: CrlPoint,
    revocation: Any,
    listed: bool,
) -> None:
    """Under hard, the receiver's first endpoint's certificate cannot be checked (its CA's
    distribution point answers 503), the second's can (it names no distribution point, or one
    whose list is fetched meanwhile, in the same wait): the second is used, and the send is
    not held back."""
    crl_point.status = 503
    async with CrlPoint.served(aiohttp_server) as other_point:
        other_point.serve(pki.ap_ca.crl())
        unknown = pki.ap_ca.issue("PBE000005", crl_url=crl_point.url)
        passing = pki.ap_ca.issue("PBE000006", crl_url=other_point.url if listed else None)
        second = (passing.cert, "https://ap2.example/as4")
        rig.smp.publish(registration(unknown.cert, more=[second]), smp)
        checker = revocation(Policy.HARD)
        client = SmpLookupClient(rig.base_url, pki.trust(checker), clock=rig.clock)
        try:
            found = await lookup(client)
        finally:
            await client.aclose()
        assert (found.url, found.certificate) == ("https://ap2.example/as4", passing.cert)
        await checker.idle()
        assert (crl_point.fetched, other_point.fetched) == (1, int(listed))
