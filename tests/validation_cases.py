"""The validation rules' own unit tests (vefa ``testSet`` files in ``tests/data/validation``)
and the published example documents, for the suites that check ``DocumentValidator``.

A ``testSet`` holds ``<test>`` elements, each an ``<assert>`` with ``<success>ID</success>``
(the rule must not fail), ``<error>ID</error>`` or ``<warning>ID</warning>`` (it must fail with
that flag, ``@number`` times when given, once otherwise), followed by one document, often a
fragment: a bare ``Invoice`` holding only what the rule looks at.
"""

from __future__ import annotations

from collections import Counter
from decimal import Decimal
from pathlib import Path
from typing import Any

import attrs
from lxml import etree

from fourcorner.adapters.validation.rules import PIPELINE, RuleSet, Syntax, data_dir
from fourcorner.domain.validation import ValidationResult

DATA = Path(__file__).resolve().parent / "data" / "validation"
EXAMPLES = DATA / "examples"
UNIT_SETS = ("unit-UBL-PEPPOL", "unit-UBL-SE")
VEFA = "http://difi.no/xsd/vefa/validator/1.0"
KINDS = ("success", "error", "warning")


@attrs.frozen
class Expect:
    kind: str  # success, error or warning
    rule: str
    number: int | None


@attrs.frozen
class Case:
    name: str  # <set>/<file>#<n>, n counting the file's tests from 1
    document: bytes
    expect: tuple[Expect, ...]


def _case(name: str, test: etree._Element) -> Case:
    check = test.find(f"{{{VEFA}}}assert")
    assert check is not None, name
    expect = tuple(
        Expect(etree.QName(e).localname, (e.text or "").strip(), _number(e.get("number")))
        for e in check
        if isinstance(e.tag, str) and etree.QName(e).localname in KINDS
    )
    documents = [e for e in test if isinstance(e.tag, str) and etree.QName(e).namespace != VEFA]
    assert len(documents) == 1 and expect, name
    return Case(name, etree.tostring(documents[0], encoding="UTF-8"), expect)


def _number(text: str | None) -> int | None:
    return int(text) if text else None


def unit_cases() -> list[Case]:
    """Every test of every test set, in file order."""
    found = []
    for test_set in UNIT_SETS:
        for file in sorted((DATA / test_set).iterdir()):
            root = etree.parse(str(file)).getroot()
            tests = root.findall(f"{{{VEFA}}}test")
            found += [_case(f"{test_set}/{file.name}#{n}", t) for n, t in enumerate(tests, start=1)]
    return found


def mismatches(case: Case, result: ValidationResult) -> list[str]:
    """How ``result`` differs from what ``case`` expects (empty: it passes)."""
    if not result.checked:
        return [f"not checked (root {result.root})"]
    errors = Counter(e.id for e in result.errors)
    warnings = Counter(w.id for w in result.warnings)
    found = []
    for e in case.expect:
        if e.kind == "success" and (errors[e.rule] or warnings[e.rule]):
            found.append(f"{e.rule} failed: {errors[e.rule]} errors, {warnings[e.rule]} warnings")
        for kind, counts in (("error", errors), ("warning", warnings)):
            if e.kind == kind and counts[e.rule] != (e.number or 1):
                found.append(f"{e.rule}: {counts[e.rule]} {kind}s, expected {e.number or 1}")
    return found


def examples() -> list[Path]:
    return sorted(EXAMPLES.glob("*.xml"))


def big_invoice(size: int) -> bytes:
    """The base example with its two lines repeated to about ``size`` bytes, each pair
    numbered anew and the document totals summed again: a valid invoice."""
    text = (EXAMPLES / "base-example.xml").read_text()
    start = text.index("<cac:InvoiceLine>")
    end = text.rindex("</cac:InvoiceLine>") + len("</cac:InvoiceLine>")
    head, pair, tail = text[:start], text[start:end], text[end:]
    count = max(1, (size - len(head) - len(tail)) // len(pair))
    lines = [
        pair.replace("<cbc:ID>1</cbc:ID>", f"<cbc:ID>{2 * n + 1}</cbc:ID>", 1).replace(
            "<cbc:ID>2</cbc:ID>", f"<cbc:ID>{2 * n + 2}</cbc:ID>", 1
        )
        for n in range(count)
    ]
    net = Decimal(1300) * count  # each pair: 2800 - 1500
    excluding = net + 25  # the document level charge
    tax = excluding * Decimal("0.25")
    for old, new in (
        (">331.25<", f">{tax:.2f}<"),
        (">1325<", f">{excluding}<"),
        (">1300<", f">{net}<"),
        (">1656.25<", f">{excluding + tax:.2f}<"),
    ):
        head = head.replace(old, new)
    return (head + "".join(lines) + tail).encode()


CII_DOCUMENT = """<?xml version="1.0" encoding="UTF-8"?>
<rsm:CrossIndustryInvoice xmlns:rsm="urn:un:unece:uncefact:data:standard:CrossIndustryInvoice:100"
  xmlns:ram="urn:un:unece:uncefact:data:standard:ReusableAggregateBusinessInformationEntity:100"
  xmlns:udt="urn:un:unece:uncefact:data:standard:UnqualifiedDataType:100">
  <rsm:ExchangedDocumentContext>
    <ram:GuidelineSpecifiedDocumentContextParameter>
      <ram:ID>urn:cen.eu:en16931:2017</ram:ID>
    </ram:GuidelineSpecifiedDocumentContextParameter>
  </rsm:ExchangedDocumentContext>
  <rsm:ExchangedDocument>
    <ram:ID> </ram:ID>
    <ram:TypeCode>999</ram:TypeCode>
    <ram:IssueDateTime><udt:DateTimeString format="102">2024</udt:DateTimeString></ram:IssueDateTime>
    <ram:IncludedNote><ram:Content/></ram:IncludedNote>
  </rsm:ExchangedDocument>
  <rsm:SupplyChainTradeTransaction>
    <ram:ApplicableHeaderTradeSettlement>
      <ram:InvoiceCurrencyCode>XXX</ram:InvoiceCurrencyCode>
    </ram:ApplicableHeaderTradeSettlement>
  </rsm:SupplyChainTradeTransaction>
</rsm:CrossIndustryInvoice>"""


class Saxon:
    """Saxon and SchXslt's pipeline, to compile the published rules as the worker does."""

    def __init__(self) -> None:
        from saxonche import PySaxonProcessor

        self.processor = PySaxonProcessor(license=False)
        self.compiler = self.processor.new_xslt30_processor()
        self.pipeline = self.compiler.compile_stylesheet(stylesheet_file=str(data_dir() / PIPELINE))
        self.pipeline.set_parameter("schxslt.svrl.compact", self.processor.make_boolean_value(True))

    def written(self, rule_set: RuleSet) -> str:
        """The XSLT SchXslt writes for ``rule_set``."""
        return str(self.pipeline.transform_to_string(source_file=str(data_dir() / rule_set.file)))

    def compile(self, xslt: str) -> Any:
        return self.compiler.compile_stylesheet(stylesheet_text=xslt)


def rule_documents(syntax: Syntax) -> list[str]:
    """Documents that make the rules of ``syntax`` report: the rules' unit tests and the
    examples (UBL), a document breaking several rules (CII)."""
    if syntax is Syntax.CII:
        return [CII_DOCUMENT]
    cases = [c.document.decode() for c in unit_cases()]
    return cases + [p.read_text(encoding="utf-8") for p in sorted(EXAMPLES.glob("*.xml"))]


def assert_same_reports(saxon: Saxon, syntax: Syntax, before: str, after: str) -> None:
    """The XSLT ``after`` reports byte for byte what ``before`` does on every document of
    ``rule_documents(syntax)``, where rules fail (their locations are compared too)."""
    old, new = saxon.compile(before), saxon.compile(after)
    failed = 0
    for text in rule_documents(syntax):
        document = saxon.processor.parse_xml(xml_text=text)
        report = old.transform_to_string(xdm_node=document)
        assert new.transform_to_string(xdm_node=document) == report
        failed += report.count("failed-assert")
    assert failed > 0
