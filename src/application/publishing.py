"""From participants to what their SMP publishes: endpoints, services and business cards."""

from __future__ import annotations

from datetime import datetime

from fourcorner.domain import wildcard
from fourcorner.domain.catalogue import Catalogue
from fourcorner.domain.certificates import Certificate
from fourcorner.domain.errors import Detail, InvalidInput
from fourcorner.domain.fields import country_problem, published_contact_link, published_url
from fourcorner.domain.network_services import AccessPoint
from fourcorner.domain.organisation import ContactType, Organisation
from fourcorner.domain.participant import Participant, SupportedDocumentType
from fourcorner.domain.smp import (
    ContactCard,
    Endpoint,
    EntityCard,
    ProcessEntry,
    ServiceEntry,
    SmpRegistration,
)
from fourcorner.domain.text import quoted

WILDCARD_SCHEME = "net-doctype-wildcard"


def certificate_base64(cert_pem: str) -> str:
    """The base64 DER of a PEM certificate: its body lines, joined."""
    lines = cert_pem.strip().splitlines()
    return "".join(line.strip() for line in lines if line and not line.startswith("-----"))


def wire_profile(catalogue: Catalogue, profile_id: str) -> str:
    found = catalogue.transport_profile(profile_id)
    return found.wire_profile_id if found is not None else profile_id


def technical_contact(org: Organisation | None) -> str:
    for c in org.contacts if org else ():
        if c.contact_type is ContactType.TECHNICAL:
            if c.web_contact_url and published_url(c.web_contact_url):
                return c.web_contact_url
            if c.email and published_contact_link(f"mailto:{c.email}"):
                return f"mailto:{c.email}"
    return published_url(org.website) if org else ""


def check_supported(
    catalogue: Catalogue, entries: tuple[SupportedDocumentType, ...]
) -> tuple[SupportedDocumentType, ...]:
    """Every entry names a document type that is not removed and one of its processes."""
    problems: list[Detail] = []
    seen: set[tuple[str, str]] = set()
    for i, e in enumerate(entries):
        where = f"$.supportedDocumentTypes[{i}]"
        doc = catalogue.document_type(e.document_id)
        if doc is None:
            problems.append(
                Detail(f"{where}.documentId", f"no document type {quoted(e.document_id)}")
            )
            continue
        if doc.state == "removed":
            problems.append(Detail(f"{where}.documentId", f"{doc.name} is removed"))
        if e.process_id not in {p.process_id for p in doc.process_ids}:
            allowed = ", ".join(p.process_id for p in doc.process_ids)
            problems.append(
                Detail(f"{where}.processId", f"{quoted(e.process_id)} is not one of: {allowed}")
            )
        key = (e.document_id, e.process_id)
        if key in seen:
            problems.append(Detail(where, "the same document type and process twice"))
        seen.add(key)
    if problems:
        raise InvalidInput(problems)
    return entries


def registration(
    *,
    catalogue: Catalogue,
    participant: Participant,
    ap: AccessPoint,
    certificate: Certificate,
    org: Organisation | None,
    created_at: datetime,
    now: datetime,
) -> SmpRegistration:
    endpoint = Endpoint(
        transport_profile=wire_profile(catalogue, participant.transport_profile),
        url=ap.ap_url,
        certificate=certificate_base64(certificate.cert_pem),
        description=ap.name,
        technical_contact_url=technical_contact(org),
        activation=certificate.valid_from,
        expiration=certificate.valid_until,
    )
    services: dict[tuple[str, str], list[ProcessEntry]] = {}
    for entry in participant.supported_document_types:
        doc = catalogue.document_type(entry.document_id)
        if doc is None:
            continue
        value = doc.value
        if doc.scheme == WILDCARD_SCHEME and not entry.exact_match_only:
            value = wildcard.registered(value)  # the customization id ends in *
        scheme, _, process = entry.process_id.partition("::")
        services.setdefault((doc.wire_scheme, value), []).append(
            ProcessEntry(scheme, process, (endpoint,))
        )
    return SmpRegistration(
        id=SmpRegistration.id_for(participant.smp_ref, participant.identifier_key),
        smp_id=participant.smp_ref,
        participant=participant.identifier_key,
        services=tuple(ServiceEntry(s, v, tuple(p)) for (s, v), p in services.items()),
        business_card=business_card(participant, org, catalogue),
        created_at=created_at,
        last_modified_at=now,
    )


def business_card(
    participant: Participant, org: Organisation | None, catalogue: Catalogue
) -> EntityCard:
    card = participant.business_card
    name = (card.legal_name if card else "") or (org.legal_name if org else "") or participant.name
    # the card's country, else the organisation's, else that of the participant identifier's
    # scheme (0007: SE; 0088's "international" is none): one that is a country code (stored
    # before the rule was checked on input, a card may hold one that is not, and an
    # organisation none); a card's CountryCode is mandatory
    scheme = catalogue.scheme_by_icd(participant.identifier_key.partition(":")[0])
    countries = (
        card.country_code if card else "",
        org.country_code if org else "",
        scheme.country if scheme else "",
    )
    country = next((c for c in countries if c and not country_problem(c)), "")
    identifiers: list[tuple[str, str]] = []
    if card and card.tax_identifier:
        identifiers.append(("VAT", card.tax_identifier))
    if card and card.global_location_number:
        identifiers.append(("GLN", card.global_location_number))
    if card and card.duns:
        identifiers.append(("DUNS", card.duns))
    if card and card.legal_identifier:
        identifiers.append((card.legal_identifier_code or "LEGAL", card.legal_identifier))
    contacts = tuple(
        ContactCard(type=c.contact_type.value, name=c.name, phone=c.phone, email=c.email)
        for c in (card.contacts if card else ())
    )
    address = card.business_address if card else None
    geo = (
        ", ".join(p for p in (address.street_address, address.postal_code, address.city) if p)
        if address
        else ""
    )
    sites = (card.website if card else "", org.website if org else "")
    website = next((published_url(w) for w in sites if w and published_url(w)), "")
    return EntityCard(
        name=name,
        country_code=country,
        geographical_information=geo,
        identifiers=tuple(identifiers),
        websites=(website,) if website else (),
        contacts=contacts,
        registration_date=participant.created_at.date().isoformat(),
    )
