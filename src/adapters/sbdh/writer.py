"""Wrap a business document in a StandardBusinessDocumentHeader (NETWORK.md §2).

The header is built element by element in the schema's order; the business document is
inserted byte for byte (only its BOM, XML declaration and surrounding whitespace are left
out), so a signature inside it still verifies. It is checked first with the same hardened
parser as inbound documents: well-formed, UTF-8, one root element, no DOCTYPE.

The SBDH namespace is bound to the prefix ``sh`` rather than made the default namespace, so a
business document whose elements have no namespace keeps them that way inside the envelope.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from lxml import etree

from fourcorner.adapters.sbdh.header import HEADER, HEADER_VERSION, SH, scope_field
from fourcorner.adapters.sbdh.parser import check_document
from fourcorner.domain.envelope import Identifier, Sbdh
from fourcorner.domain.errors import InvalidInput

DECLARATION = b'<?xml version="1.0" encoding="UTF-8"?>\n'
PAYLOAD_MAX_DEPTH = 63  # the reader allows 64 levels, one of which is the envelope
_MAX_OFFSET = timedelta(hours=14)


def format_date_time(moment: datetime) -> str:
    """``2026-01-02T10:00:00Z`` or ``...+01:00``: an ``xs:dateTime`` with a zone (a naive
    datetime is taken to be UTC; an offset in seconds is written as UTC)."""
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    offset = moment.utcoffset() or timedelta(0)
    if offset.total_seconds() % 60 or abs(offset) > _MAX_OFFSET:
        moment = moment.astimezone(UTC)
        offset = timedelta(0)
    text = moment.replace(tzinfo=None).isoformat()
    if not offset:
        return text + "Z"
    minutes = int(abs(offset).total_seconds()) // 60
    sign = "-" if offset < timedelta(0) else "+"
    return f"{text}{sign}{minutes // 60:02d}:{minutes % 60:02d}"


def _element(
    parent: etree._Element, name: str, text: str | None = None, *, field: str = ""
) -> etree._Element:
    element = etree.SubElement(parent, f"{{{SH}}}{name}")
    if text is not None:
        try:
            element.text = text
        except ValueError as e:  # a character XML cannot carry
            raise InvalidInput.one(field, f"cannot be written as XML: {e}") from None
    return element


def _partner(header: etree._Element, role: str, identifier: Identifier) -> None:
    partner = _element(header, role)
    element = _element(partner, "Identifier", identifier.value, field=f"{HEADER}/{role}/Identifier")
    try:
        element.set("Authority", identifier.scheme)
    except ValueError as e:
        raise InvalidInput.one(f"{HEADER}/{role}/Identifier/@Authority", str(e)) from None


def _scope(scope: etree._Element, kind: str, value: str, scheme: str | None = None) -> None:
    element = _element(scope, "Scope")
    _element(element, "Type", kind)
    _element(element, "InstanceIdentifier", value, field=f"{scope_field(kind)}/InstanceIdentifier")
    if scheme is not None:
        _element(element, "Identifier", scheme, field=f"{scope_field(kind)}/Identifier")


def _header(envelope: Sbdh) -> etree._Element:
    root = etree.Element(f"{{{SH}}}StandardBusinessDocument", nsmap={"sh": SH})
    header = _element(root, HEADER)
    _element(header, "HeaderVersion", HEADER_VERSION)
    _partner(header, "Sender", envelope.sender)
    _partner(header, "Receiver", envelope.receiver)
    identification = _element(header, "DocumentIdentification")
    path = f"{HEADER}/DocumentIdentification"
    _element(identification, "Standard", envelope.standard, field=f"{path}/Standard")
    _element(identification, "TypeVersion", envelope.type_version, field=f"{path}/TypeVersion")
    _element(
        identification,
        "InstanceIdentifier",
        envelope.instance_identifier,
        field=f"{path}/InstanceIdentifier",
    )
    _element(identification, "Type", envelope.type, field=f"{path}/Type")
    _element(identification, "CreationDateAndTime", format_date_time(envelope.created_at))
    scope = _element(header, "BusinessScope")
    _scope(scope, "DOCUMENTID", envelope.document_type.value, envelope.document_type.scheme)
    _scope(scope, "PROCESSID", envelope.process.value, envelope.process.scheme)
    _scope(scope, "COUNTRY_C1", envelope.country_c1)
    if envelope.mls_to is not None:
        _scope(scope, "MLS_TO", envelope.mls_to.value, envelope.mls_to.scheme)
    if envelope.mls_type is not None:
        _scope(scope, "MLS_TYPE", envelope.mls_type.value)
    return root


def write_sbd(envelope: Sbdh, payload: bytes) -> bytes:
    """The SBD of ``payload`` (an XML document) under the header ``envelope`` describes.
    Raises ``InvalidInput`` (field ``payload``) if the payload is not a document the network
    can carry, or naming the header part whose value XML cannot hold."""
    body, root = check_document(payload, field="payload", max_depth=PAYLOAD_MAX_DEPTH)
    if root.namespace == SH:
        raise InvalidInput.one("payload", "is itself in the SBDH namespace; envelopes never nest")
    head, tail = envelope_parts(envelope)
    document = memoryview(payload)[body]
    return b"".join((head, document, tail))


def envelope_parts(envelope: Sbdh) -> tuple[bytes, bytes]:
    """``(head, tail)``: the bytes of the SBD before and after its business document (from the
    XML declaration to the header's end, and the closing tag with a newline)."""
    head = etree.tostring(_header(envelope), encoding="UTF-8", xml_declaration=False)
    closing = b"</sh:StandardBusinessDocument>"
    assert head.endswith(closing)
    return DECLARATION + head[: -len(closing)], closing + b"\n"
