"""Hypothesis strategies for the values a service of this kind takes, valid unless asked
otherwise, each with an "almost valid" variant for negative testing.

Identifiers are completed with the check-digit rule of their scheme (``domain.checkdigits``:
the rules the service itself applies, documented in docs/identifiers.md); an almost valid one
differs from a valid one in one character or one adjacent transposition that its rule catches.
Document and process identifiers come from the bundled code lists, in either spelling (the
network's ``peppol-`` and the neutral ``net-`` scheme names). Invoices and credit notes are
built line by line with every total summed, so that the BIS Billing 3 rules pass; a mutator
breaks exactly one named rule.
"""

from __future__ import annotations

import base64
import functools
import json
import time
import uuid
from collections.abc import Callable, Mapping
from datetime import UTC, date, datetime, timedelta
from decimal import ROUND_HALF_UP, Decimal
from typing import Any
from xml.sax.saxutils import escape

import attrs
from hypothesis import strategies as st
from lxml import etree

from fourcorner.adapters.codelists import load_catalogue
from fourcorner.adapters.sbdh.mls import write_mls
from fourcorner.adapters.sbdh.writer import write_sbd
from fourcorner.domain.catalogue import Catalogue, neutral
from fourcorner.domain.checkdigits import LA_POSTE_PREFIX, LEITWEG_REGIONS, RULES
from fourcorner.domain.envelope import (
    MLS_DOCUMENT_TYPE,
    MLS_PROCESS,
    Identifier,
    MessageLevelStatus,
    MlsType,
    Sbdh,
    spid_participant,
)
from fourcorner.domain.webhook import hex_signature, standard_signature

DIGITS = "0123456789"
UPPER = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
PARTICIPANT_SCHEME = "iso6523-actorid-upis"
DOCUMENT_SCHEME = "busdox-docid-qns"
PROCESS_SCHEME = "cenbii-procid-ubl"
BILLING_CUSTOMIZATION = "urn:cen.eu:en16931:2017#compliant#urn:fdc:peppol.eu:2017:poacc:billing:3.0"
BILLING_PROCESS = "urn:fdc:peppol.eu:2017:poacc:billing:01:1.0"
INVOICE_NS = "urn:oasis:names:specification:ubl:schema:xsd:Invoice-2"
CREDIT_NOTE_NS = "urn:oasis:names:specification:ubl:schema:xsd:CreditNote-2"
CAC = "urn:oasis:names:specification:ubl:schema:xsd:CommonAggregateComponents-2"
CBC = "urn:oasis:names:specification:ubl:schema:xsd:CommonBasicComponents-2"
NS = {"cac": CAC, "cbc": CBC}
INVOICE = Identifier(DOCUMENT_SCHEME, f"{INVOICE_NS}::Invoice##{BILLING_CUSTOMIZATION}::2.1")
CREDIT_NOTE = Identifier(
    DOCUMENT_SCHEME, f"{CREDIT_NOTE_NS}::CreditNote##{BILLING_CUSTOMIZATION}::2.1"
)


@functools.cache
def catalogue() -> Catalogue:
    """The bundled code lists (the service's own catalogue)."""
    return load_catalogue()


# --- participant identifiers ---------------------------------------------------------------


def _digits(n: int) -> st.SearchStrategy[str]:
    return st.text(DIGITS, min_size=n, max_size=n)


def _starting(first: str, rest: int) -> st.SearchStrategy[str]:
    return st.tuples(st.sampled_from(first), _digits(rest)).map("".join)


@attrs.frozen
class _Shape:
    """``prefix + payload + check`` (or ``check + payload`` with ``check_first``)."""

    payload: Callable[[], st.SearchStrategy[str]]
    width: int = 1
    prefix: str = ""
    check_first: bool = False


# The schemes whose rule has check digits, and the shape of their numbers.
_SHAPES: Mapping[str, _Shape] = {
    "0002": _Shape(lambda: _digits(8)),
    "0007": _Shape(lambda: _digits(9)),
    "0009": _Shape(lambda: _digits(13).filter(lambda p: not p.startswith(LA_POSTE_PREFIX))),
    "0088": _Shape(lambda: _digits(12)),
    "0151": _Shape(lambda: _digits(9), width=2, check_first=True),
    "0184": _Shape(lambda: _starting("123456789", 6)),
    "0192": _Shape(lambda: _digits(8)),
    "0198": _Shape(lambda: _digits(7), prefix="DK"),
    "0208": _Shape(lambda: _starting("01", 7), width=2),
    "0211": _Shape(lambda: _digits(10), prefix="IT"),
    "9925": _Shape(lambda: _starting("01", 7), width=2, prefix="BE"),
}
CHECKED_SCHEMES: tuple[str, ...] = (*sorted(_SHAPES), "0204")


def complete(icd: str, payload: str) -> str | None:
    """The valid local part of scheme ``icd`` with ``payload`` (the digits before, or for
    0151 after, the check digits), or ``None`` when no check digit completes it (mod 11)."""
    shape = _SHAPES[icd]
    for c in range(10**shape.width):
        check = f"{c:0{shape.width}d}"
        body = f"{check}{payload}" if shape.check_first else f"{payload}{check}"
        local = shape.prefix + body
        if RULES[icd](local) is None:
            return local
    return None


@st.composite
def _leitweg(draw: st.DrawFn) -> str:
    head = draw(st.sampled_from(sorted(LEITWEG_REGIONS))) + draw(st.text(DIGITS, max_size=6))
    middle = draw(st.none() | st.text(DIGITS + UPPER, min_size=1, max_size=8))
    body = head if middle is None else f"{head}-{middle}"
    for c in range(100):
        if RULES["0204"](f"{body}-{c:02d}") is None:
            return f"{body}-{c:02d}"
    raise AssertionError("ISO 7064 MOD 97-10 always has a check")  # pragma: no cover


@st.composite
def _local(draw: st.DrawFn, icd: str) -> str:
    if icd == "0204":
        return draw(_leitweg())
    shape = _SHAPES[icd]
    found = draw(shape.payload().map(functools.partial(complete, icd)).filter(bool))
    assert found is not None
    return found


def local_parts(icd: str) -> st.SearchStrategy[str]:
    """Valid values of scheme ``icd`` (one of ``CHECKED_SCHEMES``), without the scheme."""
    if icd not in CHECKED_SCHEMES:
        raise ValueError(f"{icd} has no check-digit rule; schemes: {', '.join(CHECKED_SCHEMES)}")
    return _local(icd)


def participant_identifiers(schemes: tuple[str, ...] = CHECKED_SCHEMES) -> st.SearchStrategy[str]:
    """``<icd>:<value>`` identifiers of schemes with a check-digit rule, each valid."""
    return st.sampled_from(schemes).flatmap(lambda icd: local_parts(icd).map(f"{icd}:".__add__))


def _variants(local: str) -> list[str]:
    """Each one-character change (a digit for a digit, a letter for a letter) and each swap
    of two adjacent, different characters of the same kind."""
    found = []
    for i, old in enumerate(local):
        alphabet = DIGITS if old in DIGITS else UPPER if old in UPPER else ""
        found += [local[:i] + new + local[i + 1 :] for new in alphabet.replace(old, "")]
    for i in range(len(local) - 1):
        a, b = local[i], local[i + 1]
        if a != b and ((a in DIGITS) == (b in DIGITS)) and a != "-" and b != "-":
            found.append(local[:i] + b + a + local[i + 2 :])
    return found


@st.composite
def almost_valid_participant_identifiers(
    draw: st.DrawFn, schemes: tuple[str, ...] = CHECKED_SCHEMES
) -> str:
    """Identifiers one wrong digit or one transposition away from a valid one, that their
    scheme's rule refuses (the service answers ``AT-1006``)."""
    icd = draw(st.sampled_from(schemes))
    local = draw(local_parts(icd))
    caught = [v for v in _variants(local) if RULES[icd](v) is not None]
    return f"{icd}:{draw(st.sampled_from(caught))}"


# --- document types and processes ----------------------------------------------------------


def document_type_ids(*, spelling: str = "either") -> st.SearchStrategy[str]:
    """``<scheme>::<value>`` of the code list's document types that are not removed;
    ``spelling`` ``wire`` (the network's scheme names), ``neutral`` (``net-...``) or either."""
    types = [d for d in catalogue().document_types if d.state != "removed"]
    pairs = sorted({(d.wire_scheme, d.scheme, d.value) for d in types})
    return st.sampled_from(pairs).flatmap(lambda p: _spelled(p[0], p[1], p[2], spelling))


def process_ids(*, spelling: str = "either") -> st.SearchStrategy[str]:
    """``<scheme>::<value>`` of the code list's processes."""
    pairs = sorted({(p.scheme, neutral(p.scheme), p.value) for p in catalogue().processes})
    return st.sampled_from(pairs).flatmap(lambda p: _spelled(p[0], p[1], p[2], spelling))


def _spelled(wire: str, ours: str, value: str, spelling: str) -> st.SearchStrategy[str]:
    schemes = {"wire": [wire], "neutral": [ours], "either": sorted({wire, ours})}[spelling]
    return st.sampled_from(schemes).map(lambda s: f"{s}::{value}")


def almost_valid_document_type_ids() -> st.SearchStrategy[str]:
    """A known document type's identifier with one character of its value changed."""
    return document_type_ids(spelling="wire").flatmap(
        lambda text: st.integers(len(text) - 20, len(text) - 1).map(
            lambda i: text[:i] + ("X" if text[i] != "X" else "Y") + text[i + 1 :]
        )
    )


# --- organisations, contacts, members, API keys ----------------------------------------------

_NAME = st.text(UPPER + "abcdefghijklmnopqrstuvwxyz ", min_size=1, max_size=20).map(
    lambda s: s.strip() or "A"
)
LEGAL_SCHEMES: Mapping[str, str] = {"SE:ORGNR": "0007", "NO:ORG": "0192", "DK:DIGST": "0184"}


def contacts(*, contact_type: str | None = None) -> st.SearchStrategy[dict[str, Any]]:
    """A contact as ``POST /orgs`` and ``PUT /orgs/{id}`` take it."""
    return st.builds(
        lambda name, n, kind: {"name": name, "email": f"c{n}@example.com", "contactType": kind},
        _NAME,
        st.integers(0, 999),
        st.just(contact_type) if contact_type else st.sampled_from(["BUSINESS", "TECHNICAL"]),
    )


@st.composite
def organisations(
    draw: st.DrawFn, legal_identifiers: st.SearchStrategy[str] | None = None
) -> dict[str, Any]:
    """A ``POST /orgs`` body: a legal identifier of a scheme with check digits."""
    code = draw(st.sampled_from(sorted(LEGAL_SCHEMES)))
    identifier = draw(legal_identifiers or local_parts(LEGAL_SCHEMES[code]))
    body: dict[str, Any] = {
        "legalName": draw(_NAME),
        "countryCode": code[:2],
        "legalIdentifier": identifier,
        "legalIdentifierCode": code,
    }
    if draw(st.booleans()):
        body["contacts"] = draw(st.lists(contacts(), max_size=2))
    return body


@st.composite
def almost_valid_organisations(draw: st.DrawFn) -> dict[str, Any]:
    """A ``POST /orgs`` body whose legal identifier fails its check digit (``AT-1006``)."""
    body = draw(organisations())
    icd = LEGAL_SCHEMES[body["legalIdentifierCode"]]
    wrong = draw(almost_valid_participant_identifiers((icd,)))
    return {**body, "legalIdentifier": wrong.partition(":")[2]}


def members(user_ids: st.SearchStrategy[str]) -> st.SearchStrategy[dict[str, Any]]:
    """A ``POST /orgs/{id}/members`` body for one of ``user_ids``."""
    return st.fixed_dictionaries(
        {"userId": user_ids, "role": st.sampled_from(["orgmember", "orgadmin"])}
    )


def _expiry(days: int) -> str:
    return (datetime.now(UTC) + timedelta(days=days)).strftime("%Y-%m-%dT%H:%M:%SZ")


def api_key_requests(
    *, roles: tuple[str, ...] = ("orgmember", "orgadmin")
) -> st.SearchStrategy[dict[str, Any]]:
    """A ``POST /orgs/{id}/api_keys`` body, expiring between a day and ten years from now."""
    return st.fixed_dictionaries(
        {
            "name": _NAME,
            "role": st.sampled_from(roles),
            "expires": st.integers(1, 3650).map(_expiry),
        }
    )


def almost_valid_api_key_requests() -> st.SearchStrategy[dict[str, Any]]:
    """An API key request that expired already (``AT-1123``)."""
    return api_key_requests().flatmap(
        lambda body: st.integers(1, 3650).map(lambda d: {**body, "expires": _expiry(-d)})
    )


# --- BIS Billing 3 invoices and credit notes -------------------------------------------------

_CENT = Decimal("0.01")
# seller and buyer countries without national rules of their own in BIS Billing 3
COUNTRIES = ("BE", "FI", "FR", "AT", "ES", "PL", "PT", "IE")
CURRENCIES = ("EUR", "USD", "GBP", "CHF")
RATES = (Decimal("25"), Decimal("12"), Decimal("6"), Decimal("21"))


def _money(value: Decimal) -> str:
    return str(value.quantize(_CENT, rounding=ROUND_HALF_UP))


@attrs.frozen
class Line:
    quantity: int
    price: Decimal
    rate: Decimal
    name: str

    @property
    def amount(self) -> Decimal:
        return (self.price * self.quantity).quantize(_CENT, rounding=ROUND_HALF_UP)


@attrs.frozen
class BillingDocument:
    """What a generated document says; ``xml()`` writes it as UBL 2.1."""

    credit_note: bool
    number: str
    issued: date
    currency: str
    seller: tuple[str, str, str]  # name, country, GLN
    buyer: tuple[str, str, str]
    lines: tuple[Line, ...]

    @property
    def document_type(self) -> Identifier:
        return CREDIT_NOTE if self.credit_note else INVOICE

    def xml(self) -> bytes:
        return _write(self).encode()


def _party(name: str, country: str, gln: str, seller: bool) -> str:
    n = escape(name)
    vat = f"{country}{gln[:10]}"
    tax = (
        f"<cac:PartyTaxScheme><cbc:CompanyID>{vat}</cbc:CompanyID>"
        "<cac:TaxScheme><cbc:ID>VAT</cbc:ID></cac:TaxScheme></cac:PartyTaxScheme>"
        if seller
        else ""
    )
    return (
        f'<cac:Party><cbc:EndpointID schemeID="0088">{gln}</cbc:EndpointID>'
        f"<cac:PartyName><cbc:Name>{n}</cbc:Name></cac:PartyName>"
        f"<cac:PostalAddress><cbc:CityName>City</cbc:CityName>"
        f"<cac:Country><cbc:IdentificationCode>{country}</cbc:IdentificationCode></cac:Country>"
        f"</cac:PostalAddress>{tax}"
        f"<cac:PartyLegalEntity><cbc:RegistrationName>{n}</cbc:RegistrationName>"
        "</cac:PartyLegalEntity></cac:Party>"
    )


def _category(rate: Decimal) -> str:
    return (
        f"<cbc:ID>S</cbc:ID><cbc:Percent>{rate}</cbc:Percent>"
        "<cac:TaxScheme><cbc:ID>VAT</cbc:ID></cac:TaxScheme>"
    )


def _write(doc: BillingDocument) -> str:
    root, ns = ("CreditNote", CREDIT_NOTE_NS) if doc.credit_note else ("Invoice", INVOICE_NS)
    cur = doc.currency
    net = sum((line.amount for line in doc.lines), Decimal(0))
    by_rate: dict[Decimal, Decimal] = {}
    for line in doc.lines:
        by_rate[line.rate] = by_rate.get(line.rate, Decimal(0)) + line.amount
    subtotals = [
        (rate, base, (base * rate / 100).quantize(_CENT, rounding=ROUND_HALF_UP))
        for rate, base in sorted(by_rate.items())
    ]
    tax = sum((t for _, _, t in subtotals), Decimal(0))
    type_code = (
        "<cbc:CreditNoteTypeCode>381</cbc:CreditNoteTypeCode>"
        if doc.credit_note
        else ("<cbc:InvoiceTypeCode>380</cbc:InvoiceTypeCode>")
    )
    due = "" if doc.credit_note else f"<cbc:DueDate>{doc.issued + timedelta(days=30)}</cbc:DueDate>"
    line_tag, qty_tag = (
        ("CreditNoteLine", "CreditedQuantity")
        if doc.credit_note
        else (
            "InvoiceLine",
            "InvoicedQuantity",
        )
    )
    lines = "".join(
        f"<cac:{line_tag}><cbc:ID>{i}</cbc:ID>"
        f'<cbc:{qty_tag} unitCode="C62">{line.quantity}</cbc:{qty_tag}>'
        f'<cbc:LineExtensionAmount currencyID="{cur}">{_money(line.amount)}</cbc:LineExtensionAmount>'
        f"<cac:Item><cbc:Name>{escape(line.name)}</cbc:Name>"
        f"<cac:ClassifiedTaxCategory>{_category(line.rate)}</cac:ClassifiedTaxCategory></cac:Item>"
        f'<cac:Price><cbc:PriceAmount currencyID="{cur}">{line.price}</cbc:PriceAmount></cac:Price>'
        f"</cac:{line_tag}>"
        for i, line in enumerate(doc.lines, start=1)
    )
    subtotal_xml = "".join(
        f'<cac:TaxSubtotal><cbc:TaxableAmount currencyID="{cur}">{_money(base)}</cbc:TaxableAmount>'
        f'<cbc:TaxAmount currencyID="{cur}">{_money(t)}</cbc:TaxAmount>'
        f"<cac:TaxCategory>{_category(rate)}</cac:TaxCategory></cac:TaxSubtotal>"
        for rate, base, t in subtotals
    )
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        f'<{root} xmlns="{ns}" xmlns:cac="{CAC}" xmlns:cbc="{CBC}">'
        f"<cbc:CustomizationID>{BILLING_CUSTOMIZATION}</cbc:CustomizationID>"
        f"<cbc:ProfileID>{BILLING_PROCESS}</cbc:ProfileID>"
        f"<cbc:ID>{escape(doc.number)}</cbc:ID><cbc:IssueDate>{doc.issued}</cbc:IssueDate>{due}"
        f"{type_code}<cbc:DocumentCurrencyCode>{cur}</cbc:DocumentCurrencyCode>"
        "<cbc:BuyerReference>ref</cbc:BuyerReference>"
        f"<cac:AccountingSupplierParty>{_party(*doc.seller, seller=True)}</cac:AccountingSupplierParty>"
        f"<cac:AccountingCustomerParty>{_party(*doc.buyer, seller=False)}</cac:AccountingCustomerParty>"
        "<cac:PaymentTerms><cbc:Note>30 days</cbc:Note></cac:PaymentTerms>"
        f'<cac:TaxTotal><cbc:TaxAmount currencyID="{cur}">{_money(tax)}</cbc:TaxAmount>'
        f"{subtotal_xml}</cac:TaxTotal>"
        "<cac:LegalMonetaryTotal>"
        f'<cbc:LineExtensionAmount currencyID="{cur}">{_money(net)}</cbc:LineExtensionAmount>'
        f'<cbc:TaxExclusiveAmount currencyID="{cur}">{_money(net)}</cbc:TaxExclusiveAmount>'
        f'<cbc:TaxInclusiveAmount currencyID="{cur}">{_money(net + tax)}</cbc:TaxInclusiveAmount>'
        f'<cbc:PayableAmount currencyID="{cur}">{_money(net + tax)}</cbc:PayableAmount>'
        f"</cac:LegalMonetaryTotal>{lines}</{root}>"
    )


_lines = st.builds(
    Line,
    quantity=st.integers(1, 500),
    price=st.decimals(Decimal("0.01"), Decimal("9999.99"), places=2),
    rate=st.sampled_from(RATES),
    name=_NAME,
)
_parties = st.tuples(_NAME, st.sampled_from(COUNTRIES), local_parts("0088"))


def billing_documents(*, credit_note: bool | None = None) -> st.SearchStrategy[BillingDocument]:
    """Invoices and credit notes (``credit_note`` picks one kind) that pass BIS Billing 3:
    every amount is summed from the lines, so each shrink is a valid document too."""
    return st.builds(
        BillingDocument,
        credit_note=st.booleans() if credit_note is None else st.just(credit_note),
        number=st.text(UPPER + DIGITS, min_size=1, max_size=12),
        issued=st.dates(date(2020, 1, 1), date(2030, 12, 31)),
        currency=st.sampled_from(CURRENCIES),
        seller=_parties,
        buyer=_parties,
        lines=st.lists(_lines, min_size=1, max_size=4).map(tuple),
    )


def invoices() -> st.SearchStrategy[bytes]:
    """UBL 2.1 invoices (bytes) that pass BIS Billing 3."""
    return billing_documents(credit_note=False).map(BillingDocument.xml)


def credit_notes() -> st.SearchStrategy[bytes]:
    """UBL 2.1 credit notes (bytes) that pass BIS Billing 3."""
    return billing_documents(credit_note=True).map(BillingDocument.xml)


# --- mutators: each breaks exactly one named rule ------------------------------------------


def _drop(path: str) -> Callable[[etree._Element], None]:
    def mutate(root: etree._Element) -> None:
        for element in root.xpath(path, namespaces=NS):
            element.getparent().remove(element)

    return mutate


def _shift(path: str) -> Callable[[etree._Element], None]:
    def mutate(root: etree._Element) -> None:
        (element,) = root.xpath(path, namespaces=NS)
        element.text = _money(Decimal(element.text) + 1)

    return mutate


def _set(path: str, value: str) -> Callable[[etree._Element], None]:
    def mutate(root: etree._Element) -> None:
        for element in root.xpath(path, namespaces=NS):
            element.text = value

    return mutate


def _shift_all(*paths: str) -> Callable[[etree._Element], None]:
    def mutate(root: etree._Element) -> None:
        for path in paths:
            _shift(path)(root)

    return mutate


_TOTALS = "/*/cac:LegalMonetaryTotal"
_SELLER = "/*/cac:AccountingSupplierParty/cac:Party"
_BUYER = "/*/cac:AccountingCustomerParty/cac:Party"
# rule -> the change that makes it, and it alone, fail
MUTATORS: Mapping[str, Callable[[etree._Element], None]] = {
    "BR-02": _drop("/*/cbc:ID"),
    "BR-03": _drop("/*/cbc:IssueDate"),
    "BR-06": _drop(f"{_SELLER}/cac:PartyLegalEntity"),
    "BR-07": _drop(f"{_BUYER}/cac:PartyLegalEntity"),
    "BR-CO-15": _shift_all(f"{_TOTALS}/cbc:TaxInclusiveAmount", f"{_TOTALS}/cbc:PayableAmount"),
    "BR-CO-16": _shift(f"{_TOTALS}/cbc:PayableAmount"),
    "BR-CL-14": _set(f"{_SELLER}/cac:PostalAddress/cac:Country/cbc:IdentificationCode", "QQ"),
}


def break_rule(document: bytes, rule: str) -> bytes:
    """``document`` changed so that exactly the business rule ``rule`` (a key of
    ``MUTATORS``) fails."""
    root = etree.fromstring(document)
    MUTATORS[rule](root)
    return bytes(etree.tostring(root, encoding="UTF-8", xml_declaration=True))


@st.composite
def broken_documents(draw: st.DrawFn) -> tuple[str, bytes]:
    """``(rule, document)``: a valid invoice or credit note with ``rule`` broken."""
    rule = draw(st.sampled_from(sorted(MUTATORS)))
    return rule, break_rule(draw(billing_documents()).xml(), rule)


# --- SBDs, MLS and webhook deliveries -------------------------------------------------------


@st.composite
def sbds(
    draw: st.DrawFn,
    *,
    senders: st.SearchStrategy[str] | None = None,
    receivers: st.SearchStrategy[str] | None = None,
    documents: st.SearchStrategy[BillingDocument] | None = None,
    mls_to: str | None = None,
) -> bytes:
    """A Standard Business Document around a valid invoice or credit note; its header names
    the document's type, the billing process and a fresh instance identifier."""
    doc = draw(documents or billing_documents())
    created = draw(st.datetimes(datetime(2024, 1, 1), datetime(2030, 1, 1), timezones=st.just(UTC)))
    standard, _, rest = doc.document_type.value.partition("::")
    envelope = Sbdh(
        sender=Identifier(
            PARTICIPANT_SCHEME, draw(senders or participant_identifiers(("0088", "0007")))
        ),
        receiver=Identifier(
            PARTICIPANT_SCHEME, draw(receivers or participant_identifiers(("0088", "0007")))
        ),
        instance_identifier=str(uuid.UUID(int=draw(st.integers(0, 2**128 - 1)), version=4)),
        standard=standard,
        type_version="2.1",
        type=rest.partition("##")[0],
        created_at=created.replace(microsecond=0),
        document_type=doc.document_type,
        process=Identifier(PROCESS_SCHEME, BILLING_PROCESS),
        country_c1=doc.seller[1],
        mls_to=None if mls_to is None else Identifier(PARTICIPANT_SCHEME, mls_to),
        mls_type=None if mls_to is None else MlsType.ALWAYS_SEND,
    )
    return write_sbd(envelope, doc.xml().split(b"?>", 1)[1].strip())


_SPID = st.text(DIGITS, min_size=6, max_size=6)


@st.composite
def message_level_statuses(
    draw: st.DrawFn, *, about: str | None = None, response_code: str | None = None
) -> MessageLevelStatus:
    """An MLS about the document whose SBDH instance identifier is ``about``."""
    code = response_code or draw(st.sampled_from(["AP", "AB", "RE"]))
    reasons: tuple[tuple[str, str, str], ...] = ()
    description = ""
    if code == "RE":
        reasons = (("NA", draw(st.sampled_from(["SV", "BV", "FD"])), "refused"),)
        description = "Rejected"
    elif draw(st.booleans()):
        reasons = (("NA", "BW", "a warning"),)
    return MessageLevelStatus(
        response_code=code,
        original_instance_id=about or str(draw(st.uuids())),
        id=str(draw(st.uuids())),
        issued_at=draw(
            st.datetimes(datetime(2024, 1, 1), datetime(2030, 1, 1), timezones=st.just(UTC))
        ).replace(microsecond=0),
        sender_spid=draw(_SPID),
        receiver_spid=draw(_SPID),
        description=description,
        reasons=reasons,
    )


@st.composite
def mls_documents(draw: st.DrawFn, *, about: str | None = None) -> bytes:
    """An MLS as an SBD, from the receiver's service provider to the sender's ``0242:``."""
    status = draw(message_level_statuses(about=about))
    envelope = Sbdh(
        sender=spid_participant(status.sender_spid),
        receiver=spid_participant(status.receiver_spid),
        instance_identifier=str(draw(st.uuids())),
        standard=MLS_DOCUMENT_TYPE.value.partition("::")[0],
        type_version="2.1",
        type="ApplicationResponse",
        created_at=status.issued_at,
        document_type=MLS_DOCUMENT_TYPE,
        process=MLS_PROCESS,
        country_c1="BE",
    )
    return write_sbd(envelope, write_mls(status).split(b"?>", 1)[-1].strip())


@attrs.frozen
class WebhookDelivery:
    """A delivery as the service sends it: the body and the Standard Webhooks headers
    (``webhook-id``, ``webhook-timestamp``, ``webhook-signature``) and the hex signature."""

    body: bytes
    headers: dict[str, str]


def webhook_secrets() -> st.SearchStrategy[str]:
    return st.binary(min_size=24, max_size=24).map(
        lambda b: "whsec_" + base64.b64encode(b).decode()
    )


@st.composite
def webhook_deliveries(
    draw: st.DrawFn,
    *,
    secret: str | None = None,
    sent_at: int | None = None,
    hex_header: str = "x-webhook-sign",
) -> WebhookDelivery:
    """A signed delivery of an event (``webhook.test`` or a transaction's), signed with
    ``secret`` as the service signs at ``sent_at`` (seconds since the epoch; default now):
    verify it with any Standard Webhooks library. ``hex_header`` is
    ``FOURCORNER_WEBHOOK_HEX_SIGNATURE_HEADER``."""
    key = secret or draw(webhook_secrets())
    event_id = draw(st.uuids())
    event_type = draw(st.sampled_from(["webhook.test", "transaction.sent", "transaction.received"]))
    created = draw(st.datetimes(datetime(2024, 1, 1), datetime(2030, 1, 1), timezones=st.just(UTC)))
    body = json.dumps(
        {
            "id": str(event_id),
            "eventType": event_type,
            "createdAt": created.strftime("%Y-%m-%dT%H:%M:%S.000Z"),
            "orgId": str(draw(st.uuids())),
            "payload": {"transactionId": str(draw(st.uuids()))}
            if event_type != "webhook.test"
            else {},
        },
        separators=(",", ":"),
    ).encode()
    message_id = f"msg_{event_id.hex}"
    timestamp = int(time.time()) if sent_at is None else sent_at
    headers = {
        "content-type": "application/json",
        "webhook-id": message_id,
        "webhook-timestamp": str(timestamp),
        "webhook-signature": standard_signature(key, message_id, timestamp, body),
        hex_header: hex_signature(key, body),
    }
    return WebhookDelivery(body, headers)
