"""SMP 1.x documents on the wire: signed ServiceMetadata checked by an independent verifier
(signxml) as well as ours, ServiceGroup hrefs, URL path segments, hardened parsing and the
Directory business card (NETWORK.md sections 1, 3, 6)."""

from __future__ import annotations

import base64
import uuid
from datetime import UTC, datetime

import attrs
import pytest
import signxml
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.x509.oid import NameOID
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from lxml import etree
from signxml.algorithms import CanonicalizationMethod
from signxml.signer import XMLSigner
from signxml.verifier import XMLVerifier

from fourcorner.adapters.smp import (
    MalformedDocument,
    SignatureError,
    business_card,
    parse_path_segment,
    parse_service_group,
    parse_signed_service_metadata,
    parse_untrusted,
    path_segment,
    service_group,
    sign_enveloped,
    signed_service_metadata,
    verify_enveloped,
)
from fourcorner.domain.smp import (
    ContactCard,
    Endpoint,
    EntityCard,
    ProcessEntry,
    ServiceEntry,
    SmpRegistration,
)

SMP = "http://busdox.org/serviceMetadata/publishing/1.0/"
ID = "http://busdox.org/transport/identifiers/1.0/"
WSA = "http://www.w3.org/2005/08/addressing"
DS = "http://www.w3.org/2000/09/xmldsig#"
BC = "http://www.peppol.eu/schema/pd/businesscard/20180621/"
INC_C14N = "http://www.w3.org/TR/2001/REC-xml-c14n-20010315"

PARTICIPANT = "0088:5790000435975"
INVOICE = (
    "urn:oasis:names:specification:ubl:schema:xsd:Invoice-2::Invoice##"
    "urn:cen.eu:en16931:2017#compliant#urn:fdc:peppol.eu:2017:poacc:billing:3.0::2.1"
)
BILLING = "urn:fdc:peppol.eu:2017:poacc:billing:01:1.0"
ACTIVATION = datetime(2025, 1, 1, tzinfo=UTC)
EXPIRATION = datetime(2027, 1, 1, 12, 30, tzinfo=UTC)


def q(namespace: str, name: str) -> str:
    return f"{{{namespace}}}{name}"


def make_certificate(key: rsa.RSAPrivateKey, common_name: str) -> x509.Certificate:
    name = x509.Name(
        [
            x509.NameAttribute(NameOID.COUNTRY_NAME, "BE"),
            x509.NameAttribute(NameOID.ORGANIZATION_NAME, "Fourcorner Test"),
            x509.NameAttribute(NameOID.COMMON_NAME, common_name),
        ]
    )
    return (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(datetime(2020, 1, 1, tzinfo=UTC))
        .not_valid_after(datetime(2100, 1, 1, tzinfo=UTC))
        .sign(key, hashes.SHA256())
    )


@pytest.fixture(scope="module")
def smp_key() -> rsa.RSAPrivateKey:
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


@pytest.fixture(scope="module")
def smp_cert(smp_key: rsa.RSAPrivateKey) -> x509.Certificate:
    return make_certificate(smp_key, "SMP TEST")


@pytest.fixture(scope="module")
def smp_pem(smp_cert: x509.Certificate) -> str:
    return smp_cert.public_bytes(serialization.Encoding.PEM).decode()


@pytest.fixture(scope="module")
def ap_cert_b64(smp_key: rsa.RSAPrivateKey) -> str:
    der = make_certificate(smp_key, "PBE000001").public_bytes(serialization.Encoding.DER)
    return base64.b64encode(der).decode()


def make_registration(ap_cert_b64: str, *, dates: bool = True) -> SmpRegistration:
    endpoint = Endpoint(
        transport_profile="peppol-transport-as4-v2_0",
        url="https://ap.example/as4",
        certificate=ap_cert_b64,
        description="Fourcorner test access point",
        technical_contact_url="https://ap.example/contact",
        activation=ACTIVATION if dates else None,
        expiration=EXPIRATION if dates else None,
    )
    services = (
        ServiceEntry(
            "busdox-docid-qns", INVOICE, (ProcessEntry("cenbii-procid-ubl", BILLING, (endpoint,)),)
        ),
        ServiceEntry("peppol-doctype-wildcard", "urn:peppol:pint:billing-1@jp-1*::2.1", ()),
    )
    smp_id = uuid.UUID(int=7)
    now = datetime(2026, 1, 2, 10, tzinfo=UTC)
    return SmpRegistration(
        id=SmpRegistration.id_for(smp_id, PARTICIPANT),
        smp_id=smp_id,
        participant=PARTICIPANT,
        services=services,
        created_at=now,
        last_modified_at=now,
    )


@pytest.fixture(scope="module")
def registration(ap_cert_b64: str) -> SmpRegistration:
    return make_registration(ap_cert_b64)


@pytest.fixture(scope="module")
def signed(
    registration: SmpRegistration, smp_key: rsa.RSAPrivateKey, smp_cert: x509.Certificate
) -> bytes:
    return signed_service_metadata(registration, registration.services[0], smp_key, smp_cert)


def refused_by_both(data: bytes, smp_pem: str, smp_cert: x509.Certificate) -> None:
    with pytest.raises(signxml.exceptions.InvalidSignature):
        XMLVerifier().verify(data, x509_cert=smp_pem)
    with pytest.raises(SignatureError):
        verify_enveloped(parse_untrusted(data), [smp_cert])


# --- the signature ---------------------------------------------------------------------------


def test_signed_metadata_verifies_with_signxml_and_with_ours(
    signed: bytes, smp_pem: str, smp_cert: x509.Certificate
) -> None:
    result = XMLVerifier().verify(signed, x509_cert=smp_pem)
    assert not isinstance(result, list)
    assert result.signed_xml is not None
    assert result.signed_xml.tag == q(SMP, "SignedServiceMetadata")
    assert verify_enveloped(parse_untrusted(signed), [smp_cert]) == smp_cert
    assert verify_enveloped(parse_untrusted(signed), None) == smp_cert


def test_signature_is_the_last_child_with_the_declared_algorithms(
    signed: bytes, smp_cert: x509.Certificate
) -> None:
    assert signed.startswith(b"<?xml version='1.0' encoding='UTF-8'?>")
    root = etree.fromstring(signed)
    assert [child.tag for child in root] == [q(SMP, "ServiceMetadata"), q(DS, "Signature")]
    signature = root[-1]
    signed_info = signature.find(q(DS, "SignedInfo"))
    assert signed_info is not None
    assert [etree.QName(c).localname for c in signed_info] == [
        "CanonicalizationMethod",
        "SignatureMethod",
        "Reference",
    ]
    # inclusive C14N and a single enveloped-signature transform, as phoss-SMP signs since 1.2.0
    assert signed_info[0].get("Algorithm") == INC_C14N
    assert signed_info[1].get("Algorithm") == "http://www.w3.org/2001/04/xmldsig-more#rsa-sha256"
    references = signed_info.findall(q(DS, "Reference"))
    assert len(references) == 1 and references[0].get("URI") == ""
    transforms = [t.get("Algorithm") for t in references[0].iter(q(DS, "Transform"))]
    assert transforms == ["http://www.w3.org/2000/09/xmldsig#enveloped-signature"]
    digest_method = references[0].find(q(DS, "DigestMethod"))
    assert digest_method is not None
    assert digest_method.get("Algorithm") == "http://www.w3.org/2001/04/xmlenc#sha256"
    x509_data = signature.find(f"{q(DS, 'KeyInfo')}/{q(DS, 'X509Data')}")
    assert x509_data is not None
    assert x509_data.findtext(q(DS, "X509SubjectName")) == smp_cert.subject.rfc4514_string()
    der = smp_cert.public_bytes(serialization.Encoding.DER)
    assert base64.b64decode(x509_data.findtext(q(DS, "X509Certificate")) or "") == der


@pytest.mark.parametrize(
    ("marker", "offset"),
    [
        (b"0088:5790000435975", 7),  # participant value
        (b"Invoice##urn:cen", 2),  # document value
        (b'scheme="busdox-docid-qns"', 10),  # document scheme attribute
        (b'scheme="cenbii-procid-ubl"', 9),  # process scheme attribute
        (b"poacc:billing:01:1.0</id:ProcessIdentifier>", 6),  # process value
        (b'transportProfile="peppol-transport-as4-v2_0"', 20),  # transport profile attribute
        (b"https://ap.example/as4", 9),  # endpoint address
        (b"<Certificate>", 40),  # the AP certificate
        (b"2027-01-01T12:30:00Z", 3),  # expiration date
        (b"Fourcorner test access point", 12),  # description
        (b"https://ap.example/contact", 20),  # technical contact URL
    ],
)
def test_changing_one_byte_of_the_signed_content_is_refused(
    signed: bytes, smp_pem: str, smp_cert: x509.Certificate, marker: bytes, offset: int
) -> None:
    position = signed.index(marker) + offset
    flipped = b"b" if signed[position : position + 1] != b"b" else b"c"
    tampered = signed[:position] + flipped + signed[position + 1 :]
    assert tampered != signed
    parse_untrusted(tampered)  # still well-formed: the change is to content, not syntax
    refused_by_both(tampered, smp_pem, smp_cert)


@given(data=st.data())
@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
def test_any_alphanumeric_flip_inside_service_metadata_is_refused(
    signed: bytes, smp_pem: str, smp_cert: x509.Certificate, data: st.DataObject
) -> None:
    start = signed.index(b"<ServiceMetadata>")
    end = signed.index(b"</ServiceMetadata>") + len(b"</ServiceMetadata>")
    alphanumeric = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
    positions = [i for i in range(start, end) if signed[i] in alphanumeric]
    position = data.draw(st.sampled_from(positions), label="position")
    replacement = data.draw(
        st.sampled_from([c for c in alphanumeric if c != signed[position]]), label="byte"
    )
    tampered = signed[:position] + bytes([replacement]) + signed[position + 1 :]
    try:
        parse_untrusted(tampered)
    except MalformedDocument:
        assume(False)
    refused_by_both(tampered, smp_pem, smp_cert)


@pytest.mark.parametrize("element", ["DigestValue", "SignatureValue"])
def test_a_changed_digest_or_signature_value_is_refused(
    signed: bytes, smp_pem: str, smp_cert: x509.Certificate, element: str
) -> None:
    root = parse_untrusted(signed)
    node = next(root.iter(q(DS, element)))
    raw = bytearray(base64.b64decode(node.text or ""))
    raw[5] ^= 0x01
    node.text = base64.b64encode(bytes(raw)).decode()
    tampered = etree.tostring(root, xml_declaration=True, encoding="UTF-8")
    refused_by_both(tampered, smp_pem, smp_cert)


def test_an_untrusted_signer_is_refused(signed: bytes, smp_cert: x509.Certificate) -> None:
    other = make_certificate(rsa.generate_private_key(public_exponent=65537, key_size=2048), "X")
    with pytest.raises(SignatureError, match="trusted"):
        verify_enveloped(parse_untrusted(signed), [other])


def test_a_comment_cannot_cut_a_signed_value_short(
    signed: bytes, smp_pem: str, smp_cert: x509.Certificate
) -> None:
    """C14N drops comments, so a comment keeps the signature valid; the parser must then read
    the whole value, as the signature saw it, not the text before the comment."""
    commented = signed.replace(b"https://ap.example/as4", b"https://ap.ex<!---->ample/as4")
    XMLVerifier().verify(commented, x509_cert=smp_pem)
    root = parse_untrusted(commented)
    verify_enveloped(root, [smp_cert])
    parsed = parse_signed_service_metadata(commented)
    assert parsed.processes[0].endpoints[0].address == "https://ap.example/as4"


def test_a_second_signature_is_refused(signed: bytes, smp_cert: x509.Certificate) -> None:
    root = parse_untrusted(signed)
    root[0].append(etree.fromstring(etree.tostring(root[-1])))
    with pytest.raises(SignatureError, match="more than one"):
        verify_enveloped(root, [smp_cert])


@pytest.mark.parametrize(
    "c14n",
    [
        CanonicalizationMethod.CANONICAL_XML_1_0,
        CanonicalizationMethod.EXCLUSIVE_XML_CANONICALIZATION_1_0,
    ],
)
def test_documents_signed_by_signxml_verify_with_ours(
    registration: SmpRegistration,
    smp_key: rsa.RSAPrivateKey,
    smp_cert: x509.Certificate,
    smp_pem: str,
    c14n: CanonicalizationMethod,
) -> None:
    """Inclusive C14N (what phoss-SMP emits) and exclusive, as method and as transform."""
    ours = parse_untrusted(
        signed_service_metadata(registration, registration.services[0], smp_key, smp_cert)
    )
    ours.remove(ours[-1])
    theirs = XMLSigner(c14n_algorithm=c14n).sign(ours, key=smp_key, cert=smp_pem)
    data = etree.tostring(theirs, xml_declaration=True, encoding="UTF-8")
    root = parse_untrusted(data)
    method = root.find(
        f"{q(DS, 'Signature')}/{q(DS, 'SignedInfo')}/{q(DS, 'CanonicalizationMethod')}"
    )
    assert method is not None and method.get("Algorithm") == c14n.value
    assert verify_enveloped(root, [smp_cert]) == smp_cert
    tampered = data.replace(b"ap.example/as4", b"ap.exbmple/as4")
    with pytest.raises(SignatureError):
        verify_enveloped(parse_untrusted(tampered), [smp_cert])


def test_signing_twice_is_refused(
    signed: bytes, smp_key: rsa.RSAPrivateKey, smp_cert: x509.Certificate
) -> None:
    with pytest.raises(ValueError, match="already signed"):
        sign_enveloped(parse_untrusted(signed), smp_key, smp_cert)


# --- the ServiceMetadata document --------------------------------------------------------------


def test_service_metadata_follows_the_xsd_order_and_namespaces(
    signed: bytes, ap_cert_b64: str
) -> None:
    root = etree.fromstring(signed)
    assert root.tag == q(SMP, "SignedServiceMetadata")
    information = root.find(f"{q(SMP, 'ServiceMetadata')}/{q(SMP, 'ServiceInformation')}")
    assert information is not None
    assert [c.tag for c in information] == [
        q(ID, "ParticipantIdentifier"),
        q(ID, "DocumentIdentifier"),
        q(SMP, "ProcessList"),
    ]
    assert information[0].get("scheme") == "iso6523-actorid-upis"
    assert information[0].text == PARTICIPANT
    assert information[1].get("scheme") == "busdox-docid-qns"
    assert information[1].text == INVOICE
    process = information[2][0]
    assert [c.tag for c in process] == [q(ID, "ProcessIdentifier"), q(SMP, "ServiceEndpointList")]
    assert process[0].get("scheme") == "cenbii-procid-ubl" and process[0].text == BILLING
    endpoint = process[1][0]
    assert endpoint.tag == q(SMP, "Endpoint")
    assert endpoint.get("transportProfile") == "peppol-transport-as4-v2_0"
    assert [etree.QName(c).localname for c in endpoint] == [
        "EndpointReference",
        "RequireBusinessLevelSignature",
        "ServiceActivationDate",
        "ServiceExpirationDate",
        "Certificate",
        "ServiceDescription",
        "TechnicalContactUrl",
    ]
    assert endpoint[0].tag == q(WSA, "EndpointReference")
    assert (
        endpoint[0][0].tag == q(WSA, "Address") and endpoint[0][0].text == "https://ap.example/as4"
    )
    assert endpoint[1].text == "false"
    assert endpoint[2].text == "2025-01-01T00:00:00Z"
    assert endpoint[3].text == "2027-01-01T12:30:00Z"
    assert endpoint[4].text == ap_cert_b64
    assert endpoint[5].text == "Fourcorner test access point"
    assert endpoint[6].text == "https://ap.example/contact"


def test_dates_are_left_out_when_unset(
    ap_cert_b64: str, smp_key: rsa.RSAPrivateKey, smp_cert: x509.Certificate
) -> None:
    registration = make_registration(ap_cert_b64, dates=False)
    data = signed_service_metadata(registration, registration.services[0], smp_key, smp_cert)
    endpoint = next(etree.fromstring(data).iter(q(SMP, "Endpoint")))
    names = [etree.QName(c).localname for c in endpoint]
    assert "ServiceActivationDate" not in names and "ServiceExpirationDate" not in names
    parsed = parse_signed_service_metadata(data).processes[0].endpoints[0]
    assert parsed.activation is None and parsed.expiration is None


def test_parsing_reads_back_what_was_rendered(signed: bytes, ap_cert_b64: str) -> None:
    parsed = parse_signed_service_metadata(signed)
    assert parsed.redirect is None
    assert parsed.participant == ("iso6523-actorid-upis", PARTICIPANT)
    assert parsed.document == ("busdox-docid-qns", INVOICE)
    [process] = parsed.processes
    assert (process.scheme, process.value) == ("cenbii-procid-ubl", BILLING)
    [endpoint] = process.endpoints
    assert endpoint.transport_profile == "peppol-transport-as4-v2_0"
    assert endpoint.address == "https://ap.example/as4"
    assert endpoint.certificate == ap_cert_b64
    assert endpoint.require_business_level_signature is False
    assert endpoint.activation == ACTIVATION and endpoint.expiration == EXPIRATION
    assert endpoint.description == "Fourcorner test access point"
    assert endpoint.technical_contact_url == "https://ap.example/contact"


def test_a_redirect_is_detected() -> None:
    data = (
        f'<SignedServiceMetadata xmlns="{SMP}"><ServiceMetadata>'
        '<Redirect href="https://smp2.example/iso6523-actorid-upis%3A%3A0088%3A1/services/x">'
        "<CertificateUID>CN=SMP TWO,O=Example,C=BE</CertificateUID></Redirect>"
        "</ServiceMetadata></SignedServiceMetadata>"
    ).encode()
    parsed = parse_signed_service_metadata(data)
    assert parsed.redirect is not None
    assert parsed.redirect.href.startswith("https://smp2.example/")
    assert parsed.redirect.certificate_uid == "CN=SMP TWO,O=Example,C=BE"
    assert parsed.participant is None and parsed.processes == ()


# --- the ServiceGroup and URL path segments ----------------------------------------------------


def test_service_group_has_absolute_percent_encoded_hrefs(registration: SmpRegistration) -> None:
    data = service_group(registration, "https://smp.example/")
    root = etree.fromstring(data)
    assert root.tag == q(SMP, "ServiceGroup")
    assert [c.tag for c in root] == [
        q(ID, "ParticipantIdentifier"),
        q(SMP, "ServiceMetadataReferenceCollection"),
    ]
    assert root[0].get("scheme") == "iso6523-actorid-upis" and root[0].text == PARTICIPANT
    hrefs = parse_service_group(data)
    assert len(hrefs) == len(registration.services)
    pid = "iso6523-actorid-upis%3A%3A0088%3A5790000435975"
    assert hrefs[0] == (
        f"https://smp.example/{pid}/services/busdox-docid-qns%3A%3A"
        "urn%3Aoasis%3Anames%3Aspecification%3Aubl%3Aschema%3Axsd%3AInvoice-2%3A%3AInvoice%23%23"
        "urn%3Acen.eu%3Aen16931%3A2017%23compliant%23urn%3Afdc%3Apeppol.eu%3A2017%3Apoacc%3A"
        "billing%3A3.0%3A%3A2.1"
    )
    assert hrefs[1].endswith(
        "/services/peppol-doctype-wildcard%3A%3Aurn%3Apeppol%3Apint%3Abilling-1%40jp-1%2A%3A%3A2.1"
    )
    for href, service in zip(hrefs, registration.services, strict=True):
        assert parse_path_segment(href.rsplit("/", 1)[1]) == (
            service.document_scheme,
            service.document_value,
        )


schemes = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789-", min_size=1, max_size=30)
values = st.text(
    alphabet=st.characters(blacklist_categories=("Cc", "Cs")), min_size=1, max_size=80
) | st.from_regex(r"[0-9]{4}:[A-Za-z0-9 :#*%/._~-]{1,40}", fullmatch=True)


@given(scheme=schemes, value=values)
def test_path_segment_round_trips(scheme: str, value: str) -> None:
    segment = path_segment(scheme, value)
    assert "/" not in segment and "#" not in segment and " " not in segment
    assert parse_path_segment(segment) == (scheme, value)


@pytest.mark.parametrize(
    ("segment", "expected"),
    [
        (
            "iso6523-actorid-upis::0088:5790000435975",
            ("iso6523-actorid-upis", "0088:5790000435975"),
        ),
        (
            "iso6523-actorid-upis%3a%3a0088%3a5790000435975",
            ("iso6523-actorid-upis", "0088:5790000435975"),
        ),
        (
            "busdox-docid-qns::urn:x::Invoice%23%23urn:y::2.1",
            ("busdox-docid-qns", "urn:x::Invoice##urn:y::2.1"),
        ),
        (
            "peppol-doctype-wildcard::urn:peppol:pint:billing-1@jp-1*::2.1",
            ("peppol-doctype-wildcard", "urn:peppol:pint:billing-1@jp-1*::2.1"),
        ),
        ("peppol-doctype-wildcard%3A%3Abilling-1%2A", ("peppol-doctype-wildcard", "billing-1*")),
    ],
)
def test_path_segment_accepts_raw_and_encoded_forms(
    segment: str, expected: tuple[str, str]
) -> None:
    assert parse_path_segment(segment) == expected


@pytest.mark.parametrize(
    "segment",
    [
        "",
        "iso6523-actorid-upis",
        "::0088:1",
        "iso6523-actorid-upis::",
        "a%3Ab",
        "x::%zz",
        "x::%",
        "x::%ff%fe",
        "a b::c",
        "x::a%0Ab",
    ],
)
def test_path_segment_refuses_garbage(segment: str) -> None:
    with pytest.raises(ValueError):
        parse_path_segment(segment)


# --- hardened parsing --------------------------------------------------------------------------

HOSTILE = [
    b'<?xml version="1.0"?><!DOCTYPE r [<!ENTITY x SYSTEM "file:///etc/passwd">]>'
    b'<ServiceGroup xmlns="' + SMP.encode() + b'">&x;</ServiceGroup>',
    b'<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;&lol;&lol;">'
    b'<!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;">]><SignedServiceMetadata xmlns="'
    + SMP.encode()
    + b'">&lol3;'
    b"</SignedServiceMetadata>",
    b'<!DOCTYPE ServiceGroup SYSTEM "http://127.0.0.1:9/evil.dtd"><ServiceGroup xmlns="'
    + SMP.encode()
    + b'"/>',
    b'<!DOCTYPE SignedServiceMetadata><SignedServiceMetadata xmlns="' + SMP.encode() + b'"/>',
    b"<SignedServiceMetadata>&undeclared;</SignedServiceMetadata>",
    b"not xml at all",
]


@pytest.mark.parametrize("data", HOSTILE)
def test_doctype_and_entity_documents_are_refused(data: bytes) -> None:
    with pytest.raises(MalformedDocument):
        parse_signed_service_metadata(data)
    with pytest.raises(MalformedDocument):
        parse_service_group(data)
    with pytest.raises(ValueError):
        parse_untrusted(data)


def test_a_signed_document_with_a_doctype_is_refused(signed: bytes) -> None:
    body = signed.split(b"?>", 1)[1]
    with pytest.raises(MalformedDocument, match="DOCTYPE"):
        parse_untrusted(b"<!DOCTYPE SignedServiceMetadata>" + body)


# --- the Directory business card ----------------------------------------------------------------


def test_business_card_renders_the_v3_cardinalities(registration: SmpRegistration) -> None:
    card = EntityCard(
        name="ACME",
        country_code="BE",
        geographical_information="Brussels",
        identifiers=(("VAT", "BE0123456789"), ("LEI", "5493001KJTIIGC8Y1R12")),
        websites=("https://acme.example", "https://acme.example/en"),
        contacts=(
            ContactCard(
                type="sales", name="Ann", phone="+32 2 000 00 00", email="ann@acme.example"
            ),
            ContactCard(email="info@acme.example"),
        ),
        additional_information="Open weekdays",
        registration_date="2020-01-01",
    )
    root = etree.fromstring(business_card(attrs.evolve(registration, business_card=card)))
    assert root.tag == q(BC, "BusinessCard")
    assert [etree.QName(c).localname for c in root] == ["ParticipantIdentifier", "BusinessEntity"]
    assert root[0].get("scheme") == "iso6523-actorid-upis" and root[0].text == PARTICIPANT
    entity = root[1]
    assert entity.get("registrationDate") == "2020-01-01"
    assert [etree.QName(c).localname for c in entity] == [
        "Name",
        "CountryCode",
        "GeographicalInformation",
        "Identifier",
        "Identifier",
        "WebsiteURI",
        "WebsiteURI",
        "Contact",
        "Contact",
        "AdditionalInformation",
    ]
    assert entity[0].text == "ACME" and entity[1].text == "BE"
    assert [(i.get("scheme"), i.text) for i in entity.findall(q(BC, "Identifier"))] == [
        ("VAT", "BE0123456789"),
        ("LEI", "5493001KJTIIGC8Y1R12"),
    ]
    full, partial = entity.findall(q(BC, "Contact"))
    assert [(etree.QName(c).localname, c.text) for c in full] == [
        ("Type", "sales"),
        ("Name", "Ann"),
        ("PhoneNumber", "+32 2 000 00 00"),
        ("Email", "ann@acme.example"),
    ]
    assert [(etree.QName(c).localname, c.text) for c in partial] == [("Email", "info@acme.example")]


def test_business_card_leaves_out_empty_optional_elements(registration: SmpRegistration) -> None:
    root = etree.fromstring(
        business_card(attrs.evolve(registration, business_card=EntityCard("ACME", "BE")))
    )
    entity = root[1]
    assert entity.get("registrationDate") is None
    assert [etree.QName(c).localname for c in entity] == ["Name", "CountryCode"]


def test_business_card_without_an_entity(registration: SmpRegistration) -> None:
    root = etree.fromstring(business_card(registration))
    assert [etree.QName(c).localname for c in root] == ["ParticipantIdentifier"]
