"""The rules walk the document's elements alone (``adapters.validation.traversal``): every
published rule set is rewritten, the rewritten XSLT reports byte for byte what SchXslt's wrote
on every document of the rules' unit tests and the examples, and a rule set where that could
differ is left as written."""

from __future__ import annotations

import pytest

from fourcorner.adapters.validation.rules import RULES, Syntax
from fourcorner.adapters.validation.traversal import ELEMENTS, FALLBACK, elements_only
from validation_cases import assert_same_reports


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
        assert_same_reports(saxon, syntax, written, elements_only(written))


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
