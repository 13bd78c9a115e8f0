"""XML plumbing shared by the AS4 modules: the hardened parser, element lookups that refuse
with an ebMS code, text reading as C14N sees it, the id index and exclusive C14N.

Untrusted XML is parsed with no DTD, no entity expansion, no network and no huge trees, and a
document with a DOCTYPE is refused outright (SOAP 1.2 forbids one). Comments are dropped while
parsing (exclusive C14N without comments ignores them too), and element text is read with
``itertext`` so a processing instruction cannot cut a signed value short.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Sequence
from datetime import datetime
from typing import TypeAlias, cast

from lxml import etree

from fourcorner.adapters.as4.constants import WSU, WSU_ID
from fourcorner.adapters.as4.errors import FAILED_AUTHENTICATION, INVALID_HEADER, As4Error
from fourcorner.domain.clock import iso, utc
from fourcorner.domain.text import quoted

Element: TypeAlias = etree._Element

_TIMESTAMP = re.compile(
    r"(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})(?:\.(\d+))?(Z|[+-]\d{2}:\d{2})?", re.ASCII
)


_local = threading.local()


def _parser() -> etree.XMLParser:
    """This thread's hardened parser (lxml parsers must not be shared between threads)."""
    parser: etree.XMLParser | None = getattr(_local, "parser", None)
    if parser is None:
        parser = etree.XMLParser(
            resolve_entities=False,
            no_network=True,
            load_dtd=False,
            dtd_validation=False,
            huge_tree=False,
            remove_comments=True,
            collect_ids=False,
        )
        _local.parser = parser
    return parser


def parse_untrusted(data: bytes, what: str) -> Element:
    """The root element of ``data``; ``EBMS:0009`` if it is not well-formed or has a DOCTYPE."""
    if b"<!DOCTYPE" in data or b"<!ENTITY" in data:
        raise As4Error.of(INVALID_HEADER, f"the {what} has a DOCTYPE, which is not allowed")
    try:
        root = etree.fromstring(data, _parser())
    except (etree.LxmlError, ValueError) as e:
        raise As4Error.of(INVALID_HEADER, f"the {what} is not well-formed XML") from e
    docinfo = root.getroottree().docinfo
    if docinfo.doctype or docinfo.internalDTD is not None:
        raise As4Error.of(INVALID_HEADER, f"the {what} has a DOCTYPE, which is not allowed")
    return root


def serialise(root: Element) -> bytes:
    return cast(bytes, etree.tostring(root, xml_declaration=True, encoding="UTF-8"))


def c14n(element: Element, inclusive_prefixes: Sequence[str] = ()) -> bytes:
    """Exclusive C14N without comments (``InclusiveNamespaces PrefixList`` honoured, its
    ``#default`` token too); ``EBMS:0101`` if the element cannot be canonicalised (a relative
    namespace URI)."""
    prefixes = [prefix for prefix in inclusive_prefixes if prefix != _DEFAULT_NAMESPACE]
    try:
        canonical = cast(
            bytes,
            etree.tostring(
                element,
                method="c14n",
                exclusive=True,
                with_comments=False,
                inclusive_ns_prefixes=prefixes or None,
            ),
        )
    except etree.LxmlError as e:
        raise As4Error.of(
            FAILED_AUTHENTICATION, f"{local(str(element.tag))} cannot be canonicalised"
        ) from e
    if len(prefixes) == len(inclusive_prefixes):
        return canonical
    return _with_default_included(element, canonical)


_DEFAULT_NAMESPACE = "#default"
# In a canonical form a ``<`` is markup: an element's start or end tag or a processing
# instruction (whose data may hold a ``<``, so it is matched whole); text and attribute values
# write it as ``&lt;`` and comments are left out. A default namespace declaration, when there
# is one, comes first after the name (namespace nodes sort before attributes, the default one
# before the prefixed ones).
_START_TAG = re.compile(rb'<\?.*?\?>|<([^/?][^\s>]*)(?: xmlns="[^"]*")?', re.DOTALL)
_ATTRIBUTE_ESCAPES = str.maketrans(
    {"&": "&amp;", "<": "&lt;", '"': "&quot;", "\t": "&#x9;", "\n": "&#xA;", "\r": "&#xD;"}
)


def _with_default_included(element: Element, canonical: bytes) -> bytes:
    """``canonical`` (lxml's exclusive C14N of ``element``, which drops a ``#default`` token)
    with the default namespace handled as Exclusive C14N 1.0 asks when ``#default`` is in the
    PrefixList: as in inclusive C14N, each element declares the default namespace in its scope
    where it differs from its parent's (the apex: where it is not empty), ``xmlns=""`` included.
    Only the default namespace declarations change; lxml writes the rest."""
    declarations: list[bytes] = []
    # the default namespace in scope at the parent of the element visited ("" above the apex),
    # and the one the next element declares itself (lxml reports its declarations first)
    scopes = [""]
    declared: str | None = element.nsmap.get(None) or ""
    changed = False
    for event, node in etree.iterwalk(element, events=("start-ns", "start", "end")):
        if event == "start-ns":
            prefix, uri = cast(tuple[str, str], node)
            if not prefix:
                declared = uri
            continue
        if event == "end":
            scopes.pop()
            continue
        default = scopes[-1] if declared is None else declared
        declared = None
        if default == scopes[-1]:
            declarations.append(b"")
        else:
            changed = True
            value = default.translate(_ATTRIBUTE_ESCAPES)
            declarations.append(f' xmlns="{value}"'.encode())
        scopes.append(default)
    if not changed:
        return canonical  # no default namespace in scope anywhere: nothing to include
    tags = 0

    def declare(match: re.Match[bytes]) -> bytes:
        nonlocal tags
        name = match.group(1)
        if name is None:
            return match.group(0)  # a processing instruction
        tags += 1
        return b"<" + name + (declarations[tags - 1] if tags <= len(declarations) else b"")

    result = _START_TAG.sub(declare, canonical)
    if tags != len(declarations):  # cannot happen: one start tag for each element
        raise As4Error.of(
            FAILED_AUTHENTICATION, f"{local(str(element.tag))} cannot be canonicalised"
        )
    return result


def local(tag: str) -> str:
    return tag.rpartition("}")[2]


def children(parent: Element, tag: str) -> list[Element]:
    return list(parent.iterchildren(tag))


def one(parent: Element, tag: str, code: str = INVALID_HEADER) -> Element:
    """The only child ``tag`` of ``parent``; ``code`` if there is none or more than one."""
    found = children(parent, tag)
    if len(found) != 1:
        problem = "has no" if not found else "has more than one"
        raise As4Error.of(code, f"{local(str(parent.tag))} {problem} {local(tag)}")
    return found[0]


def optional(parent: Element, tag: str, code: str = INVALID_HEADER) -> Element | None:
    found = children(parent, tag)
    if len(found) > 1:
        raise As4Error.of(code, f"{local(str(parent.tag))} has more than one {local(tag)}")
    return found[0] if found else None


def text(element: Element, code: str = INVALID_HEADER) -> str:
    """The text of a leaf element, stripped; ``code`` if it has child elements."""
    if not len(element):
        return (element.text or "").strip()
    if any(isinstance(child.tag, str) for child in element):
        raise As4Error.of(code, f"{local(str(element.tag))} must hold text, not elements")
    return "".join(element.itertext()).strip()


def required_text(parent: Element, tag: str, code: str = INVALID_HEADER) -> str:
    value = text(one(parent, tag, code), code)
    if not value:
        raise As4Error.of(code, f"{local(tag)} is empty")
    return value


def attribute(element: Element, name: str, code: str = INVALID_HEADER) -> str:
    value: str | None = element.get(name)
    if value is None or not value.strip():
        raise As4Error.of(code, f"{local(str(element.tag))} has no {local(name)} attribute")
    return value.strip()


def sub(
    parent: Element, tag: str, value: str | None = None, attrib: dict[str, str] | None = None
) -> Element:
    element = etree.SubElement(parent, tag, attrib)
    if value is not None:
        element.text = value
    return element


_WITH_ID = etree.XPath("//*[@wsu:Id or @Id]", namespaces={"wsu": WSU})


def index_ids(root: Element) -> dict[str, Element]:
    """Every element by its ``wsu:Id`` or ``Id``; two elements with one id are refused
    (``EBMS:0101``), since that is how signature wrapping hides the copy that was signed."""
    index: dict[str, Element] = {}
    found = _WITH_ID(root)
    assert isinstance(found, list)
    for element in found:
        assert isinstance(element, etree._Element)
        for value in {element.get(WSU_ID), element.get("Id")}:
            if value is None:
                continue
            if value in index:
                raise As4Error.of(FAILED_AUTHENTICATION, f"the id {quoted(value)} is used twice")
            index[value] = element
    return index


def parse_timestamp(value: str) -> datetime:
    """An ``xsd:dateTime`` in UTC (no zone means UTC; fractions beyond microseconds are cut,
    as .NET senders write seven digits); ``EBMS:0009`` if it is not one."""
    match = _TIMESTAMP.fullmatch(value)
    if match is None:
        raise As4Error.of(INVALID_HEADER, f"{quoted(value)} is not a timestamp")
    whole, fraction, zone = match.groups()
    text_value = whole + (f".{fraction[:6]:0<6}" if fraction else "")
    text_value += "+00:00" if zone in (None, "Z") else zone
    try:
        return utc(datetime.fromisoformat(text_value))
    except ValueError as e:
        raise As4Error.of(INVALID_HEADER, f"{quoted(value)} is not a timestamp") from e


def format_timestamp(moment: datetime) -> str:
    return iso(moment)
