"""A rule that reports nothing adds nothing to the report being built
(``adapters.validation.report``): every published rule set is rewritten, the rewritten XSLT
reports byte for byte what it reported before on every document of the rules' unit tests and
the examples, and a stylesheet where that could differ is left as written."""

from __future__ import annotations

import pytest
from lxml import etree

from fourcorner.adapters.validation.dispatch import by_name
from fourcorner.adapters.validation.report import CONTENT, GATHER, SCHXSLT, only_reporting
from fourcorner.adapters.validation.rules import RULES, Syntax
from fourcorner.adapters.validation.traversal import XSL, elements_only
from validation_cases import assert_same_reports

RULE = '<schxslt:rule pattern="p"><xsl:if test="a"><out/></xsl:if></schxslt:rule>'


def _xslt(*body: str, gather: str = GATHER) -> str:
    return (
        f'<xsl:transform xmlns:xsl="{XSL}" xmlns:schxslt="{SCHXSLT}" version="2.0">\n'
        '<xsl:template match="/"><xsl:for-each select="$report/schxslt:document/schxslt:pattern">'
        f'<xsl:sequence select="{gather}"/></xsl:for-each></xsl:template>\n'
        + "\n".join(body)
        + "\n</xsl:transform>"
    )


def _rewritten(saxon, rule_set) -> tuple[str, str]:
    written = by_name(elements_only(saxon.written(rule_set)))
    return written, only_reporting(written)


@pytest.mark.parametrize(
    "rule_set", [r for rules in RULES.values() for r in rules], ids=lambda r: r.title
)
def test_every_rule_set_writes_its_rules_only_when_they_report(saxon, rule_set):
    written, rewritten = _rewritten(saxon, rule_set)
    assert rewritten != written
    rules = etree.fromstring(rewritten.encode()).iter(f"{{{SCHXSLT}}}rule")
    for rule in rules:  # each one holding something sits in an xsl:if on what it reports
        if len(rule):
            assert rule.getparent().get("test") == f"exists(${CONTENT})"


@pytest.mark.parametrize("syntax", list(Syntax), ids=lambda s: s.value)
def test_the_reports_are_those_of_every_rule_written(saxon, syntax):
    for rule_set in RULES[syntax]:
        assert_same_reports(saxon, syntax, *_rewritten(saxon, rule_set))


def test_a_rule_is_written_when_what_it_reports_is_not_empty():
    xslt = _xslt(f'<xsl:template match="a" mode="m">{RULE}</xsl:template>')
    template = etree.fromstring(only_reporting(xslt).encode())[1]
    content, written = template
    assert (content.tag, content.get("name"), content.get("as")) == (
        f"{{{XSL}}}variable",
        CONTENT,
        "node()*",
    )
    assert [e.tag for e in content] == [f"{{{XSL}}}if"]
    (rule,) = written
    assert rule.get("pattern") == "p"
    assert [(e.tag, e.get("select")) for e in rule] == [(f"{{{XSL}}}sequence", f"${CONTENT}")]


@pytest.mark.parametrize(
    "xslt",
    [
        _xslt(f'<xsl:template match="a" mode="m">{RULE}</xsl:template>', gather="rule"),
        _xslt(
            f'<xsl:template match="a" mode="m">{RULE}</xsl:template>',
            '<xsl:template match="b"><xsl:copy-of select="$r/schxslt:rule"/></xsl:template>',
        ),
        _xslt(
            f'<xsl:template match="a" mode="m">{RULE}</xsl:template>',
            '<xsl:template match="b"><xsl:copy-of select="$r/*:rule"/></xsl:template>',
        ),
        _xslt(f'<xsl:template match="a" mode="m" xml:space="preserve">{RULE}</xsl:template>'),
        _xslt(
            f'<xsl:template match="a" mode="m"><xsl:variable name="{CONTENT}"/>{RULE}'
            "</xsl:template>"
        ),
        _xslt('<xsl:template match="a" mode="m"><schxslt:rule pattern="p"/></xsl:template>'),
    ],
)
def test_a_stylesheet_that_could_report_otherwise_is_left_as_written(xslt):
    assert only_reporting(xslt) == xslt
