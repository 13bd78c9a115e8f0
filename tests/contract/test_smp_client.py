"""The SMP lookup client over real HTTP on 127.0.0.1, against a small SMP served by the test.

The test SMP reads the identifiers from ``request.raw_path`` and decodes each segment once
with ``parse_path_segment``, which is how the service's own SMP routes should read them
(aiohttp's ``match_info`` is already decoded; decoding it again would turn a literal ``%20``
in a document identifier into a space).
"""

from __future__ import annotations

import asyncio
import base64
import socket
import uuid
from collections.abc import AsyncIterator, Callable, Coroutine
from datetime import UTC, datetime, timedelta
from typing import Any

import attrs
import pytest
from aiohttp import web
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.x509.oid import NameOID
from lxml import etree

from adapters.smp import (
    LookupResult,
    SmpLookupClient,
    SmpLookupError,
    parse_path_segment,
    path_segment,
    sign_enveloped,
    signed_service_metadata,
)
from adapters.smp.client import (
    MAX_DOCUMENT_BYTES,
    NOT_ACCEPTED,
    NOT_REGISTERED,
    UNREACHABLE,
    UNTRUSTED,
)
from domain.smp import Endpoint, ProcessEntry, ServiceEntry, SmpRegistration

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


def make_signer(common_name: str, *, not_after: datetime | None = None) -> Signer:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    name = x509.Name(
        [
            x509.NameAttribute(NameOID.COUNTRY_NAME, "BE"),
            x509.NameAttribute(NameOID.ORGANIZATION_NAME, "Fourcorner Test"),
            x509.NameAttribute(NameOID.COMMON_NAME, common_name),
        ]
    )
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(datetime(2020, 1, 1, tzinfo=UTC))
        .not_valid_after(not_after or datetime(2100, 1, 1, tzinfo=UTC))
        .sign(key, hashes.SHA256())
    )
    return Signer(key, cert)


@pytest.fixture(scope="module")
def smp() -> Signer:
    return make_signer("SMP ONE")


@pytest.fixture(scope="module")
def smp_two() -> Signer:
    return make_signer("SMP TWO")


@pytest.fixture(scope="module")
def rogue() -> Signer:
    return make_signer("SMP ONE")  # same subject, different key


@pytest.fixture(scope="module")
def ap_cert() -> x509.Certificate:
    return make_signer("PBE000001").cert


def registration(ap_cert: x509.Certificate, participant: str = PARTICIPANT) -> SmpRegistration:
    der = ap_cert.public_bytes(serialization.Encoding.DER)
    endpoint = Endpoint(
        transport_profile=AS4,
        url="https://ap.example/as4",
        certificate=base64.b64encode(der).decode(),
        description="Fourcorner test access point",
        technical_contact_url="https://ap.example/contact",
        activation=ACTIVATION,
        expiration=EXPIRATION,
    )
    process = ProcessEntry(BILLING[0], BILLING[1], (endpoint,))
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
        app.router.add_get("/smp/{participant}", self.service_group)
        return app

    async def service_group(self, request: web.Request) -> web.Response:
        """200 (an empty ServiceGroup) for a participant with any document, else 404."""
        scheme, value = parse_path_segment(request.raw_path.split("?", 1)[0].split("/")[-1])
        known = {participant for participant, _ in self.documents}
        if (scheme.lower(), value.lower()) not in known:
            return web.Response(status=404)
        body = (
            f'<ServiceGroup xmlns="{SMP_NS}"><ServiceMetadataReferenceCollection/></ServiceGroup>'
        )
        return web.Response(text=body, content_type="text/xml")

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
            resp = web.StreamResponse(headers={"Content-Type": "text/xml"})
            resp.enable_chunked_encoding()
            await resp.prepare(request)
            try:
                for at in range(0, len(data), 65536):
                    await resp.write(data[at : at + 65536])
                await resp.write_eof()
            except ConnectionError:
                pass  # the client stopped reading
            return resp
        return web.Response(body=data, content_type="text/xml", charset="utf-8")


@attrs.define
class Rig:
    smp: FakeSmp
    base_url: str
    clock: FakeClock
    make_client: Callable[..., SmpLookupClient]


@pytest.fixture
async def rig(
    aiohttp_server: ServerFactory, smp: Signer, smp_two: Signer, ap_cert: x509.Certificate
) -> AsyncIterator[Rig]:
    fake = FakeSmp()
    fake.publish(registration(ap_cert), smp)
    server = await aiohttp_server(fake.app())
    base_url = str(server.make_url("/smp"))
    clock = FakeClock()
    clients: list[SmpLookupClient] = []

    def make_client(
        base: Any = base_url,
        trusted: tuple[x509.Certificate, ...] = (smp.cert, smp_two.cert),
        **kwargs: Any,
    ) -> SmpLookupClient:
        client = SmpLookupClient(base, trusted, clock=clock, **kwargs)
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
    return await client.endpoint(participant, document, process, transport_profile)


async def refused(
    coroutine: Coroutine[Any, Any, Any], *, permanent: bool, match: str = "", kind: str = ""
) -> SmpLookupError:
    with pytest.raises(SmpLookupError, match=match) as caught:
        await coroutine
    assert caught.value.permanent is permanent, caught.value.reason
    assert not kind or caught.value.kind == kind, caught.value
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
    asked: list[str] = []

    async def discover(participant: str) -> str:
        asked.append(participant)
        return rig.base_url + "/"

    result = await lookup(rig.make_client(discover))
    assert result.url == "https://ap.example/as4" and asked == [PARTICIPANT]


# --- permanent refusals ------------------------------------------------------------------------


async def test_unknown_participant_is_permanent(rig: Rig) -> None:
    await refused(
        lookup(rig.make_client(), participant="0088:0000000000000"),
        permanent=True,
        match="not registered",
        kind=NOT_REGISTERED,
    )


async def test_a_registered_participant_without_the_document_type_does_not_accept_it(
    rig: Rig,
) -> None:
    other = ("busdox-docid-qns", "urn:example:not-registered::Order##x::2.1")
    error = await refused(
        lookup(rig.make_client(), document=other), permanent=True, kind=NOT_ACCEPTED
    )
    assert "not for this document type" in error.reason
    # the ServiceGroup was asked only after the document type's metadata was not found
    assert rig.smp.requested[-1][1] == other


async def test_tampered_response_is_permanent(rig: Rig) -> None:
    key = (("iso6523-actorid-upis", PARTICIPANT), INVOICE)
    rig.smp.documents[key] = rig.smp.documents[key].replace(
        b"https://ap.example/as4", b"https://ap.evil0/as4"
    )
    await refused(lookup(rig.make_client()), permanent=True, match="signature", kind=UNTRUSTED)


async def test_untrusted_signer_is_permanent(
    rig: Rig, rogue: Signer, ap_cert: x509.Certificate
) -> None:
    rig.smp.publish(registration(ap_cert), rogue)
    await refused(lookup(rig.make_client()), permanent=True, match="trusted", kind=UNTRUSTED)


async def test_unknown_process_is_permanent(rig: Rig) -> None:
    other = ("cenbii-procid-ubl", "urn:fdc:peppol.eu:2017:poacc:selfbilling:01:1.0")
    await refused(
        lookup(rig.make_client(), process=other), permanent=True, match="process", kind=NOT_ACCEPTED
    )


async def test_unknown_transport_profile_is_permanent(rig: Rig) -> None:
    await refused(
        lookup(rig.make_client(), transport_profile="peppol-transport-as2-v2_0"),
        permanent=True,
        match="transport profile",
        kind=NOT_ACCEPTED,
    )


async def test_expired_endpoint_is_permanent(rig: Rig) -> None:
    rig.clock.now = EXPIRATION + timedelta(seconds=1)
    await refused(lookup(rig.make_client()), permanent=True, match="expired", kind=NOT_ACCEPTED)


async def test_endpoint_not_yet_active_is_permanent(rig: Rig) -> None:
    rig.clock.now = ACTIVATION - timedelta(seconds=1)
    await refused(lookup(rig.make_client()), permanent=True, match="active only from")


async def test_expired_smp_certificate_is_permanent(
    aiohttp_server: ServerFactory, ap_cert: x509.Certificate
) -> None:
    short = make_signer("SMP OLD", not_after=START - timedelta(days=1))
    fake = FakeSmp()
    fake.publish(registration(ap_cert), short)
    server = await aiohttp_server(fake.app())
    client = SmpLookupClient(str(server.make_url("/smp")), [short.cert], clock=FakeClock())
    try:
        await refused(lookup(client), permanent=True, match="not valid now")
    finally:
        await client.aclose()


async def test_answer_for_another_participant_is_permanent(
    rig: Rig, smp: Signer, ap_cert: x509.Certificate
) -> None:
    elsewhere = registration(ap_cert, "0088:1111111111111")
    data = signed_service_metadata(elsewhere, elsewhere.services[0], smp.key, smp.cert)
    rig.smp.put(INVOICE, data)
    await refused(lookup(rig.make_client()), permanent=True, match="participant", kind=UNTRUSTED)


async def test_answer_for_another_document_type_is_permanent(
    rig: Rig, smp: Signer, ap_cert: x509.Certificate
) -> None:
    reg = registration(ap_cert)
    rig.smp.put(INVOICE, signed_service_metadata(reg, reg.services[1], smp.key, smp.cert))
    await refused(lookup(rig.make_client()), permanent=True, match="document type")


async def test_unreadable_answer_is_permanent(rig: Rig) -> None:
    rig.smp.put(INVOICE, b"<!DOCTYPE x [<!ENTITY a 'b'>]><x>&a;</x>")
    await refused(lookup(rig.make_client()), permanent=True, match="cannot be read", kind=UNTRUSTED)


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
    uid = "C=BE,O=Fourcorner Test,CN=SMP TWO"
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
    rig.smp.put(INVOICE, redirect_document(href, "CN=SMP TWO,O=Fourcorner Test,C=BE", smp))
    fake_two.put(
        INVOICE,
        redirect_document(target_href(rig.base_url), "CN=SMP ONE,O=Fourcorner Test,C=BE", smp_two),
    )
    await refused(lookup(rig.make_client()), permanent=True, match="redirected twice")


# --- transient failures --------------------------------------------------------------------------


async def test_server_down_is_not_permanent(rig: Rig) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    client = rig.make_client(f"http://127.0.0.1:{port}/smp")
    await refused(lookup(client), permanent=False, match="cannot be reached", kind=UNREACHABLE)


@pytest.mark.parametrize("status", [500, 503, 429])
async def test_server_errors_are_not_permanent(rig: Rig, status: int) -> None:
    rig.smp.status = status
    await refused(lookup(rig.make_client()), permanent=False, match=str(status), kind=UNREACHABLE)


async def test_timeout_is_not_permanent(rig: Rig) -> None:
    rig.smp.delay = 2.0
    await refused(
        lookup(rig.make_client(timeout=0.2)),
        permanent=False,
        match="cannot be reached",
        kind=UNREACHABLE,
    )


async def test_bad_request_is_permanent(rig: Rig) -> None:
    rig.smp.status = 400
    await refused(lookup(rig.make_client()), permanent=True, match="400")
