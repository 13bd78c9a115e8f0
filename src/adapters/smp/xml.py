"""SMP 1.x documents: render a registration (ServiceGroup, SignedServiceMetadata, Directory
business card v3) and read what an SMP answers.

Everything fetched from the network is parsed with ``parse_untrusted``: no entity expansion,
no DTD, no network, no huge trees, and any document with a DOCTYPE is refused. Text is read
without comments or processing instructions (``itertext``), as the signature's C14N sees it, so
a comment cannot cut a signed value short.
"""

from __future__ import annotations

import re
from datetime import datetime
from urllib.parse import quote, unquote

import attrs
from cryptography import x509
from cryptography.hazmat.primitives.asymmetric import rsa
from lxml import etree

from fourcorner.adapters.smp.signature import sign_enveloped
from fourcorner.domain.clock import parse as parse_timestamp
from fourcorner.domain.clock import utc
from fourcorner.domain.fields import published_contact_link, published_url
from fourcorner.domain.smp import PARTICIPANT_SCHEME, Endpoint, ServiceEntry, SmpRegistration

SMP = "http://busdox.org/serviceMetadata/publishing/1.0/"
ID = "http://busdox.org/transport/identifiers/1.0/"
WSA = "http://www.w3.org/2005/08/addressing"
BC = "http://www.peppol.eu/schema/pd/businesscard/20180621/"


class MalformedDocument(ValueError):
    """An SMP document cannot be read: not XML, a DOCTYPE, or not the expected structure."""


# --- identifiers in URL paths ---------------------------------------------------------------

_BAD_PERCENT = re.compile(r"%(?![0-9A-Fa-f]{2})")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def path_segment(scheme: str, value: str) -> str:
    """``scheme::value`` as one percent-encoded URL path segment (``%3A%3A``, ``%23%23``)."""
    return quote(f"{scheme}::{value}", safe="")


def split_identifier(text: str) -> tuple[str, str]:
    """``(scheme, value)`` of an already decoded ``scheme::value``; ValueError if malformed."""
    scheme, separator, value = text.partition("::")
    if not separator or not scheme or not value:
        raise ValueError(f"{text!r} is not an identifier of the form scheme::value")
    if _CONTROL.search(text) or any(c.isspace() for c in scheme):
        raise ValueError(f"{text!r} holds characters an identifier cannot have")
    return scheme, value


def parse_path_segment(segment: str) -> tuple[str, str]:
    """``(scheme, value)`` of a raw (still percent-encoded) URL path segment.

    Decodes exactly once, so pass the segment as it appears in the request line
    (``request.raw_path``), not aiohttp's already decoded ``match_info``. Accepts ``%3A%3A``
    as well as a raw ``::``, and ``%2A`` as well as a raw ``*``.
    """
    if _BAD_PERCENT.search(segment):
        raise ValueError(f"{segment!r} holds a malformed percent escape")
    try:
        decoded = unquote(segment, encoding="utf-8", errors="strict")
    except UnicodeDecodeError as e:
        raise ValueError(f"{segment!r} does not decode as UTF-8") from e
    return split_identifier(decoded)


# --- rendering ------------------------------------------------------------------------------


def _q(namespace: str, name: str) -> str:
    return f"{{{namespace}}}{name}"


def _sub(
    parent: etree._Element, namespace: str, name: str, text: str | None = None
) -> etree._Element:
    element = etree.SubElement(parent, _q(namespace, name))
    if text is not None:
        element.text = text
    return element


def _serialise(root: etree._Element) -> bytes:
    data: bytes = etree.tostring(root, xml_declaration=True, encoding="UTF-8")
    return data


def xs_datetime(dt: datetime) -> str:
    """An xs:dateTime in UTC ending in ``Z`` (fraction only when there is one)."""
    return utc(dt).replace(tzinfo=None).isoformat() + "Z"


def service_group(registration: SmpRegistration, base_url: str) -> bytes:
    """The (unsigned) ServiceGroup with one absolute reference per document type."""
    root = etree.Element(_q(SMP, "ServiceGroup"), nsmap={None: SMP, "id": ID})
    _sub(root, ID, "ParticipantIdentifier", registration.participant).set(
        "scheme", PARTICIPANT_SCHEME
    )
    collection = _sub(root, SMP, "ServiceMetadataReferenceCollection")
    base = base_url.rstrip("/")
    participant = path_segment(PARTICIPANT_SCHEME, registration.participant)
    for service in registration.services:
        document = path_segment(service.document_scheme, service.document_value)
        reference = _sub(collection, SMP, "ServiceMetadataReference")
        reference.set("href", f"{base}/{participant}/services/{document}")
    return _serialise(root)


def _endpoint(parent: etree._Element, endpoint: Endpoint, technical_contact: str) -> None:
    element = _sub(parent, SMP, "Endpoint")
    element.set("transportProfile", endpoint.transport_profile)
    reference = _sub(element, WSA, "EndpointReference")
    _sub(reference, WSA, "Address", endpoint.url)
    _sub(element, SMP, "RequireBusinessLevelSignature", "false")
    if endpoint.activation is not None:
        _sub(element, SMP, "ServiceActivationDate", xs_datetime(endpoint.activation))
    if endpoint.expiration is not None:
        _sub(element, SMP, "ServiceExpirationDate", xs_datetime(endpoint.expiration))
    _sub(element, SMP, "Certificate", endpoint.certificate)
    _sub(element, SMP, "ServiceDescription", endpoint.description)
    contact = published_contact_link(endpoint.technical_contact_url) or technical_contact
    _sub(element, SMP, "TechnicalContactUrl", contact)


def signed_service_metadata(
    registration: SmpRegistration,
    service: ServiceEntry,
    key: rsa.RSAPrivateKey,
    certificate: x509.Certificate,
    *,
    technical_contact: str = "",
) -> bytes:
    """The SignedServiceMetadata of one document type, signed enveloped with ``key``.
    ``technical_contact``: the TechnicalContactUrl of an endpoint that has none of its own
    (the operator's, ``FOURCORNER_SMP_TECHNICAL_CONTACT``), published as given."""
    root = etree.Element(_q(SMP, "SignedServiceMetadata"), nsmap={None: SMP, "id": ID, "wsa": WSA})
    information = _sub(_sub(root, SMP, "ServiceMetadata"), SMP, "ServiceInformation")
    _sub(information, ID, "ParticipantIdentifier", registration.participant).set(
        "scheme", PARTICIPANT_SCHEME
    )
    _sub(information, ID, "DocumentIdentifier", service.document_value).set(
        "scheme", service.document_scheme
    )
    process_list = _sub(information, SMP, "ProcessList")
    for process in service.processes:
        element = _sub(process_list, SMP, "Process")
        _sub(element, ID, "ProcessIdentifier", process.value).set("scheme", process.scheme)
        endpoints = _sub(element, SMP, "ServiceEndpointList")
        for endpoint in process.endpoints:
            _endpoint(endpoints, endpoint, technical_contact)
    sign_enveloped(root, key, certificate)
    return _serialise(root)


def business_card(registration: SmpRegistration) -> bytes:
    """The Directory business card (v3): the participant and at most one BusinessEntity."""
    root = etree.Element(_q(BC, "BusinessCard"), nsmap={None: BC})
    _sub(root, BC, "ParticipantIdentifier", registration.participant).set(
        "scheme", PARTICIPANT_SCHEME
    )
    card = registration.business_card
    if card is not None:
        entity = _sub(root, BC, "BusinessEntity")
        if card.registration_date:
            entity.set("registrationDate", card.registration_date)
        _sub(entity, BC, "Name", card.name)
        _sub(entity, BC, "CountryCode", card.country_code)
        if card.geographical_information:
            _sub(entity, BC, "GeographicalInformation", card.geographical_information)
        for scheme, value in card.identifiers:
            _sub(entity, BC, "Identifier", value).set("scheme", scheme)
        for website in filter(None, map(published_url, card.websites)):
            _sub(entity, BC, "WebsiteURI", website)
        for contact in card.contacts:
            element = _sub(entity, BC, "Contact")
            for name, text in (
                ("Type", contact.type),
                ("Name", contact.name),
                ("PhoneNumber", contact.phone),
                ("Email", contact.email),
            ):
                if text:
                    _sub(element, BC, name, text)
        if card.additional_information:
            _sub(entity, BC, "AdditionalInformation", card.additional_information)
    return _serialise(root)


# --- parsing --------------------------------------------------------------------------------


def _parser() -> etree.XMLParser:
    return etree.XMLParser(
        resolve_entities=False,
        no_network=True,
        load_dtd=False,
        huge_tree=False,
        remove_comments=False,
    )


def parse_untrusted(data: bytes) -> etree._Element:
    """The root of a document fetched from the network; MalformedDocument if it is not
    well-formed XML or declares a DOCTYPE (and with it, entities)."""
    try:
        root = etree.fromstring(data, _parser())
    except etree.XMLSyntaxError as e:
        raise MalformedDocument(f"not well-formed XML: {e}") from e
    docinfo = root.getroottree().docinfo
    if docinfo.doctype or docinfo.internalDTD is not None or docinfo.system_url:
        raise MalformedDocument("documents with a DOCTYPE are refused")
    if any(isinstance(node, etree._Entity) for node in root.iter()):
        raise MalformedDocument("documents with entity references are refused")
    return root


@attrs.frozen
class ParsedEndpoint:
    transport_profile: str
    address: str
    certificate: str  # base64 DER, whitespace removed
    require_business_level_signature: bool
    activation: datetime | None
    expiration: datetime | None
    description: str
    technical_contact_url: str


@attrs.frozen
class ParsedProcess:
    scheme: str
    value: str
    endpoints: tuple[ParsedEndpoint, ...]


@attrs.frozen
class ParsedRedirect:
    href: str
    certificate_uid: str


@attrs.frozen
class ParsedMetadata:
    """A ServiceMetadata: either ServiceInformation (participant, document, processes) or a
    Redirect (then ``participant`` and ``document`` are None and ``processes`` is empty)."""

    participant: tuple[str, str] | None
    document: tuple[str, str] | None
    processes: tuple[ParsedProcess, ...]
    redirect: ParsedRedirect | None = None


def _text(element: etree._Element) -> str:
    return "".join(element.itertext()).strip()


def _child(parent: etree._Element, namespace: str, name: str) -> etree._Element:
    found = parent.findall(_q(namespace, name))
    if len(found) != 1:
        where = etree.QName(parent).localname
        raise MalformedDocument(f"{where} must have exactly one {name}, found {len(found)}")
    return found[0]


def _optional_text(parent: etree._Element, namespace: str, name: str) -> str | None:
    found = parent.findall(_q(namespace, name))
    if len(found) > 1:
        raise MalformedDocument(f"{etree.QName(parent).localname} has more than one {name}")
    return _text(found[0]) if found else None


def _identifier(parent: etree._Element, name: str) -> tuple[str, str]:
    element = _child(parent, ID, name)
    scheme, value = (element.get("scheme") or "").strip(), _text(element)
    if not scheme or not value:
        raise MalformedDocument(f"{name} needs a scheme and a value")
    return scheme, value


def _moment(parent: etree._Element, name: str) -> datetime | None:
    text = _optional_text(parent, SMP, name)
    if text is None:
        return None
    try:
        return parse_timestamp(text)
    except ValueError as e:
        raise MalformedDocument(f"{name} {text!r} is not an xs:dateTime") from e


def _read_endpoint(element: etree._Element) -> ParsedEndpoint:
    signature_flag = _text(_child(element, SMP, "RequireBusinessLevelSignature"))
    if signature_flag not in ("true", "false", "1", "0"):
        raise MalformedDocument("RequireBusinessLevelSignature is not an xs:boolean")
    reference = _child(element, WSA, "EndpointReference")
    return ParsedEndpoint(
        transport_profile=(element.get("transportProfile") or "").strip(),
        address=_text(_child(reference, WSA, "Address")),
        certificate="".join(_text(_child(element, SMP, "Certificate")).split()),
        require_business_level_signature=signature_flag in ("true", "1"),
        activation=_moment(element, "ServiceActivationDate"),
        expiration=_moment(element, "ServiceExpirationDate"),
        description=_optional_text(element, SMP, "ServiceDescription") or "",
        technical_contact_url=_optional_text(element, SMP, "TechnicalContactUrl") or "",
    )


def read_signed_service_metadata(root: etree._Element) -> ParsedMetadata:
    """Read a parsed SignedServiceMetadata (check its signature first: ``verify_enveloped``)."""
    if root.tag != _q(SMP, "SignedServiceMetadata"):
        raise MalformedDocument(
            f"expected SignedServiceMetadata, got {etree.QName(root).localname}"
        )
    metadata = _child(root, SMP, "ServiceMetadata")
    redirects = metadata.findall(_q(SMP, "Redirect"))
    informations = metadata.findall(_q(SMP, "ServiceInformation"))
    if len(redirects) + len(informations) != 1:
        raise MalformedDocument("ServiceMetadata must hold one ServiceInformation or one Redirect")
    if redirects:
        href = (redirects[0].get("href") or "").strip()
        uid = _text(_child(redirects[0], SMP, "CertificateUID"))
        if not href:
            raise MalformedDocument("the Redirect has no href")
        return ParsedMetadata(None, None, (), ParsedRedirect(href, uid))
    information = informations[0]
    processes = []
    for process in _child(information, SMP, "ProcessList").findall(_q(SMP, "Process")):
        scheme, value = _identifier(process, "ProcessIdentifier")
        endpoint_list = _child(process, SMP, "ServiceEndpointList")
        endpoints = tuple(_read_endpoint(e) for e in endpoint_list.findall(_q(SMP, "Endpoint")))
        processes.append(ParsedProcess(scheme, value, endpoints))
    return ParsedMetadata(
        participant=_identifier(information, "ParticipantIdentifier"),
        document=_identifier(information, "DocumentIdentifier"),
        processes=tuple(processes),
    )


def parse_signed_service_metadata(data: bytes) -> ParsedMetadata:
    """Parse SignedServiceMetadata bytes (hardened; the signature is not checked here)."""
    return read_signed_service_metadata(parse_untrusted(data))


def parse_service_group(data: bytes) -> list[str]:
    """The ServiceMetadataReference hrefs of a ServiceGroup document."""
    root = parse_untrusted(data)
    if root.tag != _q(SMP, "ServiceGroup"):
        raise MalformedDocument(f"expected ServiceGroup, got {etree.QName(root).localname}")
    collection = _child(root, SMP, "ServiceMetadataReferenceCollection")
    hrefs = []
    for reference in collection.findall(_q(SMP, "ServiceMetadataReference")):
        href = (reference.get("href") or "").strip()
        if href:
            hrefs.append(href)
    return hrefs
