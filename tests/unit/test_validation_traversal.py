"""The rules walk the document's elements alone (``adapters.validation.traversal``): every
published rule set is rewritten, the rewritten XSLT reports byte for byte what SchXslt's wrote
on every document of the rules' unit tests and the examples, and a rule set where that could
differ is left as written."""

from __future__ import annotations

from typing import Any

import pytest

from fourcorner.adapters.validation.rules import PIPELINE, RULES, RuleSet, Syntax, data_dir
from fourcorner.adapters.validation.traversal import ELEMENTS, FALLBACK, elements_only
from validation_cases import EXAMPLES, unit_cases

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


@pytest.fixture(scope="module")
def saxon() -> Saxon:
    return Saxon()


def _documents(syntax: Syntax) -> list[str]:
    if syntax is Syntax.CII:
        return [CII_DOCUMENT]
    cases = [c.document.decode() for c in unit_cases()]
    return cases + [p.read_text(encoding="utf-8") for p in sorted(EXAMPLES.glob("*.xml"))]


@pytest.mark.parametrize(
    "rule_set", [r for rules in RULES.values() for r in rules], ids=lambda r: r.title
)
def test_every_rule_set_walks_elements_alone(saxon, rule_set):
    written = saxon.written(rule_set)
    rewritten = elements_only(written)
    assert rewritten == written.replace(FALLBACK, ELEMENTS) != written


@pytest.mark.parametrize("syntax", list(Syntax), ids=lambda s: s.value)
def test_the_reports_are_those_of_the_xslt_as_written(saxon, syntax):
    for rule_set in RULES[syntax]:
        written = saxon.written(rule_set)
        before, after = saxon.compile(written), saxon.compile(elements_only(written))
        failed = 0
        for text in _documents(syntax):
            document = saxon.processor.parse_xml(xml_text=text)
            report = before.transform_to_string(xdm_node=document)
            assert after.transform_to_string(xdm_node=document) == report
            failed += report.count("failed-assert")
        assert failed > 0  # the documents make rules fail: locations are compared too


def _xslt(*templates: str) -> str:
    return (
        '<xsl:transform xmlns:xsl="http://www.w3.org/1999/XSL/Transform" version="2.0">\n'
        + FALLBACK
        + "\n"
        + "\n".join(templates)
        + "\n</xsl:transform>"
    )


@pytest.mark.parametrize(
    "template",
    [
        '<xsl:template match="a/@b" mode="m"/>',
        '<xsl:template match="a | text()" mode="m"/>',
        '<xsl:template match="(a | b/@c)[d]" mode="m"/>',
        '<xsl:template match="(a | b)[d]/node()" mode="m"/>',
        '<xsl:template match="comment()" mode="m"/>',
        '<xsl:template match="$nodes" mode="m"/>',
        '<xsl:template match="a" mode="m"><xsl:if test="position() = 1"/></xsl:template>',
        '<xsl:template match="a" mode="m"><xsl:value-of select="b[2], last()"/></xsl:template>',
        '<xsl:template match="a" mode="m"><xsl:if test="not(position() = 1)"/></xsl:template>',
        '<xsl:template match="a" mode="m"><xsl:number value="position()"/></xsl:template>',
        '<xsl:template match="a" mode="m">'
        '<xsl:for-each-group select="b" group-by="last()"/></xsl:template>',
        '<xsl:template match="a" mode="m"><xsl:element name="e{position()}"/></xsl:template>',
        '<xsl:template match="a" mode="m"><out n="{last()}"/></xsl:template>',
        '<xsl:template match="a" mode="m"><out n="it\'s {position()}"/></xsl:template>',
        '<xsl:template match="a" mode="m" expand-text="yes"><out>{position()}</out></xsl:template>',
    ],
)
def test_a_rule_set_that_could_report_otherwise_is_left_as_written(template):
    xslt = _xslt(template)
    assert elements_only(xslt) == xslt


@pytest.mark.parametrize(
    "template",
    [
        '<xsl:template match="a/b[@c = \'x/@y\']" mode="m"/>',
        '<xsl:template match="//*[ends-with(name(), \'Amount\')]" mode="m"/>',
        '<xsl:template match="(/p:a | /p:b/p:c[d = (1, 2)])[$x and $y]" mode="m"/>',
        '<xsl:template match="a" mode="m"><xsl:if test="b[position() = last()]"/></xsl:template>',
        '<xsl:template match="a" mode="m"><xsl:if test="b[\'[\'] = \'position()\'"/></xsl:template>',
        '<xsl:template match="a" mode="m"><out n="{b[last()]}" m="last"/></xsl:template>',
    ],
)
def test_rules_on_elements_alone_are_rewritten(template):
    xslt = _xslt(template)
    assert elements_only(xslt) == xslt.replace(FALLBACK, ELEMENTS)


def test_an_xslt_without_schxslts_fallback_is_left_as_written():
    xslt = _xslt().replace(FALLBACK, "")
    assert elements_only(xslt) == xslt
