"""The rules' walk through a document, over its elements alone.

The XSLT that SchXslt 1.x writes for a rule set visits every node of the document: its
fallback template, for any element no rule takes (and for every element a rule took, through
``xsl:next-match``), applies templates to the element's attributes and then to all its child
nodes, and an empty template takes each attribute and text node. Where every rule's context
is an element, as in EN 16931 and BIS Billing 3.0, those visits find nothing: only the empty
template ever matches an attribute or a text node, and no rule uses the position of the node
it is given (``position()``, ``last()``). The rewrite below has the fallback visit the child
elements alone, in the same order: the same rules fire on the same elements, the same asserts
are evaluated and the report is the same, for fewer nodes handed to the template matcher (an
invoice holds about as many whitespace text nodes and attributes as elements).

It is applied only when it is sure to change nothing: the fallback template is exactly the
one SchXslt 1.x writes, every other template's pattern ends in an element step, no expression
(in any attribute, or in braces in one) asks for a position outside a predicate, and no text
holds expressions (``expand-text``). Otherwise the XSLT is run as written.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from lxml import etree

XSL = "http://www.w3.org/1999/XSL/Transform"
FALLBACK = """   <xsl:template match="*" mode="#all" priority="-10">
      <xsl:apply-templates mode="#current" select="@*"/>
      <xsl:apply-templates mode="#current" select="node()"/>
   </xsl:template>"""
ELEMENTS = """   <xsl:template match="*" mode="#all" priority="-10">
      <xsl:apply-templates mode="#current" select="*"/>
   </xsl:template>"""
# the templates SchXslt 1.x writes besides the rules: (match, mode)
_OWN = {
    ("root()", None),
    ("text() | @*", "#all"),
    ("/", "#all"),
    ("*", "#all"),
}
_NAME = r"[\w.\-]+"
# a step that selects elements: a name, a wildcard, or element(...), on the child axis
_ELEMENT_STEP = re.compile(
    rf"(?:child::)?(?:\*|{_NAME}:\*|\*:{_NAME}|{_NAME}(?::{_NAME})?|element\([^()]*\))"
)
_POSITION = re.compile(r"\b(?:position|last)\s*\(")
_BRACES = re.compile(r"\{([^{}]*)\}")
_EXPAND_TEXT = {"expand-text", f"{{{XSL}}}expand-text"}


def elements_only(xslt: str) -> str:
    """``xslt`` (written by SchXslt 1.x) walking the document's elements alone, when that is
    sure to report the same; else ``xslt`` unchanged."""
    if xslt.count(FALLBACK) != 1:
        return xslt
    root = etree.fromstring(xslt.encode())
    for template in root.iter(f"{{{XSL}}}template"):
        match = template.get("match")
        if match is None or (match, template.get("mode")) in _OWN:
            continue
        if not all(_ELEMENT_STEP.fullmatch(step) for step in _last_steps(match)):
            return xslt
    for element in root.iter(tag=etree.Element):
        for name, value in element.attrib.items():
            if name in _EXPAND_TEXT:  # text may hold expressions too
                return xslt
            # any attribute may hold an expression, or one inside braces (a value template,
            # where quotes outside the braces are text)
            if any(_outside(e, _POSITION) for e in (value, *_BRACES.findall(value))):
                return xslt
    return xslt.replace(FALLBACK, ELEMENTS)


def _scan(text: str) -> Iterator[tuple[int, str, int]]:
    """``(index, character, depth)`` of each character of ``text`` outside quotes, ``depth``
    counting the brackets and parentheses around it (a bracket itself counts outside)."""
    depth, quote = 0, ""
    for i, char in enumerate(text):
        if quote:
            quote = "" if char == quote else quote
            continue
        if char in "'\"":
            quote = char
            continue
        if char in ")]":
            depth -= 1
        yield i, char, depth
        if char in "([":
            depth += 1


def split(text: str, separator: str) -> list[str]:
    """``text`` cut at each ``separator`` outside brackets, parentheses and quotes."""
    cuts = [i for i, char, depth in _scan(text) if char == separator and depth == 0]
    return [text[a + 1 : b] for a, b in zip([-1, *cuts], [*cuts, len(text)], strict=True)]


def _last_steps(pattern: str) -> list[str]:
    """The last step of each path of a union pattern; a parenthesized union (whose nodes a
    predicate after it may only filter) is opened: ``(a | b/c)[d]`` gives ``a`` and ``c``."""
    steps = []
    for path in split(pattern, "|"):
        path = path.strip()
        end = _closing(path) if path.startswith("(") else -1
        if end > 0 and _only_predicates(path[end + 1 :]):
            steps.extend(_last_steps(path[1:end]))
        else:
            steps.append(last_step(path))
    return steps


def _closing(text: str) -> int:
    """The index of the bracket closing the one ``text`` opens with (-1: none, or another)."""
    for i, char, depth in _scan(text):
        if char in ")]" and depth == 0:
            return i if "([".index(text[0]) == ")]".index(char) else -1
    return -1


def _only_predicates(rest: str) -> bool:
    """Whether ``rest`` is nothing but predicates: ``[a][b = (1, 2)]``."""
    rest = rest.strip()
    while rest:
        end = _closing(rest) if rest.startswith("[") else -1
        if end < 0:
            return False
        rest = rest[end + 1 :].strip()
    return True


def last_step(path: str) -> str:
    """The last step of a path pattern without its predicates: ``b`` of ``//a/b[@c]``."""
    step = split(path.strip(), "/")[-1].strip()
    for i, char, depth in _scan(step):
        if char == "[" and depth == 0:
            return step[:i].strip()
    return step


def _outside(expression: str, pattern: re.Pattern[str]) -> bool:
    """Whether ``pattern`` occurs in ``expression`` outside every predicate (and string)."""
    kept, predicates = [], 0
    for _, char, _ in _scan(expression):
        predicates += (char == "[") - (char == "]")
        kept.append(char if predicates == 0 and char != "]" else " ")
    return bool(pattern.search("".join(kept)))
