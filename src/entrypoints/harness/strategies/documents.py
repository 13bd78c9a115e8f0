"""BIS Billing 3 documents: UBL 2.1 invoices and credit notes, and mutators that break one
named rule each.

Invoices and credit notes are built line by line with every total summed, so that the BIS
Billing 3 rules pass (and every shrink is a valid document too); a mutator breaks exactly one
named rule (``MUTATORS``, ``break_rule``, ``broken_documents``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import date, timedelta
from decimal import ROUND_HALF_UP, Decimal
from xml.sax.saxutils import escape

import attrs
from hypothesis import strategies as st
from lxml import etree

from fourcorner.domain.envelope import (
    Identifier,
)
from fourcorner.entrypoints.harness.strategies.bodies import NAMES
from fourcorner.entrypoints.harness.strategies.identifiers import (
    DIGITS,
    DOCUMENT_SCHEME,
    UPPER,
    local_parts,
)

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
    name=NAMES,
)
_parties = st.tuples(NAMES, st.sampled_from(COUNTRIES), local_parts("0088"))


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
