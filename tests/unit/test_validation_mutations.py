"""Mutations of the published (valid) examples make the rule they break fire, and nothing
crashes: a mandatory element dropped, a total broken, a code that is not in its list."""

from __future__ import annotations

import asyncio
from decimal import Decimal

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from lxml import etree

from fourcorner.domain.errors import RulesFailed
from fourcorner.domain.validation import ValidationResult
from validation_cases import examples

CBC = "urn:oasis:names:specification:ubl:schema:xsd:CommonBasicComponents-2"
CAC = "urn:oasis:names:specification:ubl:schema:xsd:CommonAggregateComponents-2"
NS = {"cbc": CBC, "cac": CAC}
EXAMPLES = {p.name: p.read_bytes() for p in examples()}
SELLER = "/*/cac:AccountingSupplierParty/cac:Party"
BUYER = "/*/cac:AccountingCustomerParty/cac:Party"
TOTALS = "/*/cac:LegalMonetaryTotal"

# (what is dropped, the rule that must then fail)
DROPS = [
    ("/*/cbc:ID", "BR-02"),
    ("/*/cbc:IssueDate", "BR-03"),
    ("/*/cbc:DocumentCurrencyCode", "BR-05"),
    (f"{SELLER}/cac:PartyLegalEntity/cbc:RegistrationName", "BR-06"),
    (f"{BUYER}/cac:PartyLegalEntity/cbc:RegistrationName", "BR-07"),
    (f"{SELLER}/cac:PostalAddress", "BR-08"),
]
# (an amount of the document totals, the rule that ties it to the others)
TOTAL_RULES = [
    (f"{TOTALS}/cbc:LineExtensionAmount", "BR-CO-10"),
    (f"{TOTALS}/cbc:TaxExclusiveAmount", "BR-CO-13"),
    (f"{TOTALS}/cbc:TaxInclusiveAmount", "BR-CO-15"),
    (f"{TOTALS}/cbc:PayableAmount", "BR-CO-16"),
]
# (a coded element, codes that are not in its list, the rule of the list); no currency, type
# code or country code is made of these letters or has four digits
CODES = [
    ("/*/cbc:DocumentCurrencyCode", st.text("JQZ", min_size=3, max_size=3), "BR-CL-04"),
    (
        "/*/cbc:InvoiceTypeCode | /*/cbc:CreditNoteTypeCode",
        st.integers(1000, 9999).map(str),
        "BR-CL-01",
    ),
    (
        f"{SELLER}/cac:PostalAddress/cac:Country/cbc:IdentificationCode",
        st.text("JQ", min_size=2, max_size=2),
        "BR-CL-14",
    ),
]


def _one(root: etree._Element, path: str) -> etree._Element:
    (found,) = root.xpath(path, namespaces=NS)
    return found


@st.composite
def broken(draw: st.DrawFn) -> tuple[str, bytes, str]:
    """``(what was done, the document, the rule that must fail)``."""
    name = draw(st.sampled_from(sorted(EXAMPLES)))
    root = etree.fromstring(EXAMPLES[name])
    kind = draw(st.sampled_from(["drop", "total", "code"]))
    if kind == "drop":
        path, rule = draw(st.sampled_from(DROPS))
        element = _one(root, path)
        element.getparent().remove(element)
        done = f"dropped {path}"
    elif kind == "total":
        path, rule = draw(st.sampled_from(TOTAL_RULES))
        delta = draw(
            st.decimals(Decimal("-1000"), Decimal("1000"), places=2).filter(lambda d: d != 0)
        )
        element = _one(root, path)
        element.text = str(Decimal(element.text.strip()) + delta)
        done = f"{path} moved by {delta}"
    else:
        path, codes, rule = draw(st.sampled_from(CODES))
        element = _one(root, path)
        element.text = draw(codes)
        done = f"{path} set to {element.text}"
    return f"{name}: {done}", etree.tostring(root, encoding="UTF-8"), rule


def _validate(validator, document: bytes) -> ValidationResult:
    return asyncio.run(validator.validate(document))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(broken())
def test_the_broken_rule_fires(validator, mutation):
    done, document, rule = mutation
    result = _validate(validator, document)
    assert result.checked and result.valid is False, done
    assert rule in {e.id for e in result.errors}, (done, [e.id for e in result.errors])


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(name=st.sampled_from(sorted(EXAMPLES)), pick=st.integers(min_value=1))
def test_dropping_any_element_never_crashes(validator, name, pick):
    root = etree.fromstring(EXAMPLES[name])
    elements = [e for e in root.iter() if isinstance(e.tag, str) and e is not root]
    element = elements[pick % len(elements)]
    element.getparent().remove(element)
    try:
        result = _validate(validator, etree.tostring(root, encoding="UTF-8"))
    except RulesFailed:  # the rules raised an error: reported as such, never a crash
        return
    assert result.checked and result.rules


def test_every_mutation_applies_to_every_example():
    for name, data in EXAMPLES.items():
        root = etree.fromstring(data)
        for path, _ in DROPS + TOTAL_RULES:
            assert len(root.xpath(path, namespaces=NS)) == 1, (name, path)
        for path, _, _ in CODES:
            assert len(root.xpath(path, namespaces=NS)) == 1, (name, path)


def test_the_examples_are_valid_before_any_mutation(validator):
    for name, data in EXAMPLES.items():
        assert _validate(validator, data).valid is True, name
