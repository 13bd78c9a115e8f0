"""The rules' union patterns split by element name, so Saxon finds each rule by the name of the
element it is given.

A template rule whose pattern is a union (``cbc:InvoiceTypeCode | cbc:CreditNoteTypeCode``)
and whose priority is given, as SchXslt 1.x gives every rule's, is kept whole by Saxon-HE and
tested on every element the rules visit, whatever its name; a pattern naming one element is
tested only on elements of that name. The rewrite below replaces such a template by one copy
per element name its alternatives end in, each matching the alternatives that end in that
name, with the same priority, mode and body, in the same place: an element passes the name
test of one copy at most, and there meets the alternatives it met in the union, in the same
order (the others' predicates were never evaluated on it, their name test failing first). The
same rule fires on the same elements, in the same order, and the report is the same.

A template is split only when every alternative ends in a prefixed element name (no wildcard,
no other axis, no parentheses) whose prefix is declared, the template has a priority and no
name, and the stylesheet imports or includes nothing (one precedence for all templates).
"""

from __future__ import annotations

import copy
import re
from typing import cast

from lxml import etree

from fourcorner.adapters.validation.traversal import XSL, last_step, split

_QNAME = re.compile(r"([\w.\-]+):([\w.\-]+)")


def by_name(xslt: str) -> str:
    """``xslt`` with its union patterns split by element name where that reports the same
    (see above); else ``xslt`` unchanged."""
    root = etree.fromstring(xslt.encode())
    if root.find(f"{{{XSL}}}import") is not None or root.find(f"{{{XSL}}}include") is not None:
        return xslt
    changed = False
    for template in list(root.iterchildren(f"{{{XSL}}}template")):
        groups = _groups(template)
        if groups is None:
            continue
        at = root.index(template)
        for i, alternatives in enumerate(groups):
            piece = copy.deepcopy(template)
            piece.set("match", " | ".join(alternatives))
            root.insert(at + i + 1, piece)
        root.remove(template)
        changed = True
    if not changed:
        return xslt
    return cast(str, etree.tostring(root, encoding="unicode"))


def _groups(template: etree._Element) -> list[list[str]] | None:
    """The alternatives of ``template``'s pattern grouped by the element name they end in,
    in order of first appearance; None when the template is not to be split."""
    match = template.get("match")
    if match is None or template.get("priority") is None or template.get("name") is not None:
        return None
    alternatives = [a.strip() for a in split(match, "|")]
    if len(alternatives) < 2:
        return None
    groups: dict[tuple[str, str], list[str]] = {}
    for alternative in alternatives:
        name = _QNAME.fullmatch(last_step(alternative))
        if name is None or alternative.startswith("("):
            return None
        namespace = template.nsmap.get(name.group(1))
        if namespace is None:
            return None
        groups.setdefault((namespace, name.group(2)), []).append(alternative)
    return list(groups.values()) if len(groups) > 1 else None
