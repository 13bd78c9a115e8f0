"""The rules' union patterns are split by element name (``adapters.validation.dispatch``):
every published rule set is rewritten, the rewritten XSLT reports byte for byte what it
reported before on every document of the rules' unit tests and the examples, and a template
that an element could then reach otherwise is left as written."""

from __future__ import annotations

import pytest
from lxml import etree

from fourcorner.adapters.validation.dispatch import by_name
from fourcorner.adapters.validation.rules import RULES, Syntax
from fourcorner.adapters.validation.traversal import XSL, elements_only
from validation_cases import assert_same_reports

NAMESPACES = 'xmlns:p="urn:p" xmlns:q="urn:q" xmlns:same="urn:p"'


def _xslt(*templates: str, head: str = "") -> str:
    return (
        f'<xsl:transform xmlns:xsl="{XSL}" {NAMESPACES} version="2.0">\n'
        + head
        + "\n".join(templates)
        + "\n</xsl:transform>"
    )


def _matches(xslt: str) -> list[tuple[str | None, str | None, str | None]]:
    root = etree.fromstring(xslt.encode())
    return [
        (t.get("match"), t.get("priority"), t.get("mode"))
        for t in root.iterchildren(f"{{{XSL}}}template")
    ]


@pytest.mark.parametrize(
    "rule_set", [r for rules in RULES.values() for r in rules], ids=lambda r: r.title
)
def test_every_rule_set_is_split(saxon, rule_set):
    written = elements_only(saxon.written(rule_set))
    assert len(_matches(by_name(written))) > len(_matches(written))


@pytest.mark.parametrize("syntax", list(Syntax), ids=lambda s: s.value)
def test_the_reports_are_those_of_the_union_patterns(saxon, syntax):
    for rule_set in RULES[syntax]:
        written = elements_only(saxon.written(rule_set))
        assert_same_reports(saxon, syntax, written, by_name(written))


def test_alternatives_are_grouped_by_the_name_they_end_in():
    xslt = _xslt(
        '<xsl:template match="x" mode="m" priority="3"/>',
        '<xsl:template match="p:a | /p:b/q:c[d = \'|\'] | p:e[f | g]/same:a | q:c" mode="m"'
        ' priority="2"><out/></xsl:template>',
        '<xsl:template match="y" mode="m" priority="1"/>',
    )
    assert _matches(by_name(xslt)) == [
        ("x", "3", "m"),
        ("p:a | p:e[f | g]/same:a", "2", "m"),  # same:a is p:a
        ("/p:b/q:c[d = '|'] | q:c", "2", "m"),
        ("y", "1", "m"),
    ]
    root = etree.fromstring(by_name(xslt).encode())
    assert [len(t) for t in root.iterchildren(f"{{{XSL}}}template")] == [0, 1, 1, 0]


@pytest.mark.parametrize(
    "template",
    [
        '<xsl:template match="p:a | p:b[c]/same:a" mode="m" priority="1"/>',  # one name
        '<xsl:template match="p:a | *" mode="m" priority="1"/>',
        '<xsl:template match="p:a | q:*" mode="m" priority="1"/>',
        '<xsl:template match="p:a | *:b" mode="m" priority="1"/>',
        '<xsl:template match="p:a | b" mode="m" priority="1"/>',
        '<xsl:template match="p:a | @p:b" mode="m" priority="1"/>',
        '<xsl:template match="p:a | element(p:b)" mode="m" priority="1"/>',
        '<xsl:template match="p:a | (p:b | q:c)[d]" mode="m" priority="1"/>',
        '<xsl:template match="p:a | p:b union q:c" mode="m" priority="1"/>',
        '<xsl:template match="p:a | r:b" mode="m" priority="1"/>',  # r undeclared
        '<xsl:template match="p:a | q:b" mode="m"/>',  # no priority: Saxon splits it
        '<xsl:template match="p:a | q:b" name="t" mode="m" priority="1"/>',
    ],
)
def test_a_template_that_could_match_otherwise_is_left_as_written(template):
    xslt = _xslt(template)
    assert by_name(xslt) == xslt


@pytest.mark.parametrize("head", ['<xsl:import href="a.xsl"/>', '<xsl:include href="a.xsl"/>'])
def test_a_stylesheet_of_several_modules_is_left_as_written(head):
    xslt = _xslt('<xsl:template match="p:a | q:b" mode="m" priority="1"/>', head=head)
    assert by_name(xslt) == xslt
