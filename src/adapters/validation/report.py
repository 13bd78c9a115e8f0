"""A rule that reports nothing on an element adds nothing to the report being built.

The XSLT that SchXslt 1.x writes builds the report in two steps: each rule that fires writes
a ``schxslt:rule`` element naming its pattern, holding what the rule reports (its failed
asserts and successful reports), and the report is then these elements' contents gathered
pattern by pattern. An element a rule fires on but reports nothing about (most, in a valid
invoice) still costs a ``schxslt:rule`` element, which Saxon builds with every namespace in
scope (a dozen), and which the gathering then passes over, empty. The rewrite below has each
rule evaluate what it reports first, in the same order, and write its ``schxslt:rule`` only
when that is not empty, holding the same nodes: the gathered report is the same.

It is applied only when the gathering is exactly the one SchXslt 1.x writes, nothing else in
the stylesheet reads a ``rule`` element, no whitespace in it is kept (``xml:space``), and the
name of the variable it adds is not taken.
"""

from __future__ import annotations

import re
from typing import cast

from lxml import etree

from fourcorner.adapters.validation.traversal import XSL

SCHXSLT = "https://doi.org/10.5281/zenodo.1495494"
GATHER = "../schxslt:rule[@pattern = current()/@id]/node()"
CONTENT = "schxslt:reported"  # the variable each rule's report is evaluated into
_SPACE = "{http://www.w3.org/XML/1998/namespace}space"
_RULE = re.compile(r"(?::|\})\s*rule\b")


def only_reporting(xslt: str) -> str:
    """``xslt`` (written by SchXslt 1.x) writing a rule's ``schxslt:rule`` only when the rule
    reports something, when that is sure to report the same; else ``xslt`` unchanged."""
    root = etree.fromstring(xslt.encode())
    gathers = 0
    for element in root.iter(tag=etree.Element):
        if _SPACE in element.attrib:
            return xslt
        for value in element.attrib.values():
            if value == GATHER and element.nsmap.get("schxslt") == SCHXSLT:
                gathers += 1
            elif _RULE.search(value):
                return xslt  # something else reads the rule elements
        if element.tag in (f"{{{XSL}}}variable", f"{{{XSL}}}param") and (
            element.get("name") == CONTENT
        ):
            return xslt
    if gathers != 1:
        return xslt
    changed = False
    for rule in list(root.iter(f"{{{SCHXSLT}}}rule")):
        if len(rule) == 0 or (rule.text and rule.text.strip()):
            continue
        parent = rule.getparent()
        at = parent.index(rule)
        content = etree.Element(f"{{{XSL}}}variable", name=CONTENT, nsmap={"schxslt": SCHXSLT})
        content.set("as", "node()*")
        content.extend(list(rule))
        written = etree.Element(f"{{{XSL}}}if", test=f"exists(${CONTENT})")
        written.tail = rule.tail
        parent.remove(rule)
        parent.insert(at, content)
        parent.insert(at + 1, written)
        rule.tail = None
        written.append(rule)
        etree.SubElement(rule, f"{{{XSL}}}sequence", select=f"${CONTENT}")
        changed = True
    if not changed:
        return xslt
    return cast(str, etree.tostring(root, encoding="unicode"))
