"""The envelope of a bare UBL invoice or credit note: which parts of the document make which
field of the Standard Business Document Header (NETWORK.md §2), for documents sent without
one.

- Sender: ``AccountingSupplierParty/Party/EndpointID``; its ``schemeID`` is the ICD, so the
  participant is ``<schemeID>:<EndpointID>`` in the scheme ``iso6523-actorid-upis``.
- Receiver: ``AccountingCustomerParty/Party/EndpointID``, the same way.
- Document type (``busdox-docid-qns``): ``<root namespace>::<root local name>##
  <CustomizationID>::<UBL version>`` (``UBLVersionID``, ``2.1`` when the document has none).
- Process (``cenbii-procid-ubl``): ``ProfileID``.
- ``COUNTRY_C1``: the supplier's country (``.../PostalAddress/Country/IdentificationCode``).
- A new instance identifier and creation time, and the MLS scopes the caller asks for.

Every missing or unusable part is reported at once, each ``Detail.field`` naming the element
(``Invoice/AccountingSupplierParty/Party/EndpointID``).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import datetime

import attrs

from fourcorner.domain.envelope import PARTICIPANT_SCHEME, Identifier, MlsType, Sbdh
from fourcorner.domain.errors import Detail, InvalidIdentifier, InvalidInput
from fourcorner.domain.identifier import ParticipantIdentifier
from fourcorner.domain.text import quoted

UBL_NAMESPACES = {
    "Invoice": "urn:oasis:names:specification:ubl:schema:xsd:Invoice-2",
    "CreditNote": "urn:oasis:names:specification:ubl:schema:xsd:CreditNote-2",
}
DOCUMENT_SCHEME = "busdox-docid-qns"
PROCESS_SCHEME = "cenbii-procid-ubl"
DEFAULT_UBL_VERSION = "2.1"

SUPPLIER_ENDPOINT = "AccountingSupplierParty/Party/EndpointID"
CUSTOMER_ENDPOINT = "AccountingCustomerParty/Party/EndpointID"
SUPPLIER_COUNTRY = "AccountingSupplierParty/Party/PostalAddress/Country/IdentificationCode"
CUSTOMIZATION = "CustomizationID"
PROFILE = "ProfileID"
UBL_VERSION = "UBLVersionID"

_COUNTRY = re.compile(r"[A-Z0-9]{2}")
_ICD = re.compile(r"[0-9]{4}")


def is_ubl_billing(namespace: str | None, local_name: str) -> bool:
    """Whether a root element is a UBL Invoice or CreditNote (the documents sent bare)."""
    return local_name in UBL_NAMESPACES and UBL_NAMESPACES[local_name] == namespace


@attrs.frozen
class Endpoint:
    """An ``EndpointID``: its ``schemeID`` attribute (None when absent) and its text."""

    scheme_id: str | None
    value: str


@attrs.frozen
class UblFacts:
    """What a UBL invoice or credit note says that its envelope needs; None where the
    document has no such element."""

    namespace: str
    root: str
    customization_id: str | None = None
    profile_id: str | None = None
    ubl_version: str | None = None
    supplier: Endpoint | None = None
    customer: Endpoint | None = None
    supplier_country: str | None = None


@attrs.frozen
class MlsRequest:
    """The message level status a sender asks for when it sends a bare document."""

    mls_type: MlsType | None = None
    mls_to: Identifier | None = None

    @classmethod
    def parse(cls, mls_type: str | None, mls_to: str | None) -> MlsRequest:
        """From the query parameters ``mlsType`` and ``mlsTo``; raises ``InvalidInput``."""
        problems = []
        kind = None
        if mls_type is not None:
            try:
                kind = MlsType(mls_type)
            except ValueError:
                choices = " or ".join(t.value for t in MlsType)
                problems.append(Detail("mlsType", f"{quoted(mls_type)} is not {choices}"))
        to = None
        if mls_to is not None:
            try:
                participant = ParticipantIdentifier.parse(mls_to, field="mlsTo")
                to = Identifier(PARTICIPANT_SCHEME, str(participant))
            except InvalidIdentifier as e:
                problems.append(Detail("mlsTo", e.rule))
        if problems:
            raise InvalidInput(problems)
        return cls(kind, to)

    @property
    def empty(self) -> bool:
        return self.mls_type is None and self.mls_to is None


def _text(value: str | None) -> str | None:
    text = None if value is None else value.strip()
    return text or None


def _participant(
    endpoint: Endpoint | None,
    field: str,
    known_icd: Callable[[str], bool],
    problems: list[Detail],
) -> Identifier | None:
    value = None if endpoint is None else _text(endpoint.value)
    if endpoint is None or value is None:
        problems.append(Detail(field, "is missing: it names the participant"))
        return None
    scheme = _text(endpoint.scheme_id)
    if scheme is None:
        problems.append(Detail(f"{field}/@schemeID", "is missing: it is the identifier's ICD"))
        return None
    if _ICD.fullmatch(scheme) is None or not known_icd(scheme):
        problems.append(
            Detail(
                f"{field}/@schemeID",
                f"{quoted(scheme)} is not a known participant identifier scheme",
            )
        )
        return None
    try:
        participant = ParticipantIdentifier.parse(f"{scheme}:{value}", field=field)
    except InvalidIdentifier as e:
        problems.append(Detail(field, e.rule))
        return None
    return Identifier(PARTICIPANT_SCHEME, str(participant))


def ubl_envelope(
    facts: UblFacts,
    *,
    known_icd: Callable[[str], bool],
    instance_identifier: str,
    created_at: datetime,
    mls: MlsRequest = MlsRequest(),
) -> Sbdh:
    """The SBDH of the bare document ``facts`` describes; ``known_icd`` tells whether an ICD
    is one of the network's participant identifier schemes. Raises ``InvalidInput`` naming
    every element that is missing or unusable."""
    problems: list[Detail] = []
    root = facts.root

    def at(path: str) -> str:
        return f"{root}/{path}"

    if not is_ubl_billing(facts.namespace, root):
        raise InvalidInput.one(root, "is not a UBL Invoice or CreditNote")
    sender = _participant(facts.supplier, at(SUPPLIER_ENDPOINT), known_icd, problems)
    receiver = _participant(facts.customer, at(CUSTOMER_ENDPOINT), known_icd, problems)
    customization = _text(facts.customization_id)
    if customization is None:
        problems.append(Detail(at(CUSTOMIZATION), "is missing: it names the document type"))
    profile = _text(facts.profile_id)
    if profile is None:
        problems.append(Detail(at(PROFILE), "is missing: it names the process"))
    version = _text(facts.ubl_version) or DEFAULT_UBL_VERSION
    country = _text(facts.supplier_country)
    if country is None:
        problems.append(Detail(at(SUPPLIER_COUNTRY), "is missing: it is COUNTRY_C1"))
    elif _COUNTRY.fullmatch(country) is None:
        problems.append(Detail(at(SUPPLIER_COUNTRY), f"{quoted(country)} is not a country code"))
    if problems:
        raise InvalidInput(problems)
    assert sender and receiver and customization and profile and country
    return Sbdh(
        sender=sender,
        receiver=receiver,
        instance_identifier=instance_identifier,
        standard=facts.namespace,
        type_version=version,
        type=root,
        created_at=created_at,
        document_type=Identifier(
            DOCUMENT_SCHEME, f"{facts.namespace}::{root}##{customization}::{version}"
        ),
        process=Identifier(PROCESS_SCHEME, profile),
        country_c1=country,
        mls_to=mls.mls_to,
        mls_type=mls.mls_type,
    )
