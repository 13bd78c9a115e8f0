"""Read the envelope of a Standard Business Document (SBD) from untrusted bytes.

The whole document is parsed, because it is stored and forwarded and must be well-formed,
but as a stream: the header is kept until it has been read and every element of the business
document is freed as soon as it ends, so memory stays bounded whatever the size. See
``adapters.sbdh.parser`` for the protections (no DOCTYPE, UTF-8 only, depth and size limits).

Every problem with the header and its consistency with the business document (NETWORK.md §2)
is reported in one ``InvalidInput``; each ``Detail.field`` names the part of the SBD, e.g.
``StandardBusinessDocumentHeader/Sender/Identifier`` or
``StandardBusinessDocumentHeader/BusinessScope/Scope[Type=PROCESSID]``.

One thing is read from the business document itself as it streams past: the receiver's country,
from the postal address of a UBL document's ``AccountingCustomerParty`` (``Sbdh.
receiver_country``; empty when the document has none, or not a two-letter code).

A document of at most ``WHOLE_LIMIT`` bytes is first read as one tree with the same protections
(``parser.parse_whole``), and the header's elements, the business document's root element and
the envelope's root are given to the same handler as the stream would give them; of the
business document's other elements, which the stream hands to Python one by one, only the
buyer's country is looked up. Anything that is not plainly accepted that way is read again by
the stream, which refuses it in its own words: both paths accept and refuse the same documents.
"""

from __future__ import annotations

import os
import re

import attrs
from lxml import etree

from fourcorner.adapters.sbdh.header import HEADER, SH, Header, read_header
from fourcorner.adapters.sbdh.parser import WHOLE_LIMIT, Parser, drop, parse_whole, read_small
from fourcorner.domain.envelope import Sbdh
from fourcorner.domain.errors import Detail, InvalidInput
from fourcorner.domain.text import cut, quoted

ROOT = "StandardBusinessDocument"
TICC = "http://peppol.eu/xsd/ticc/envelope/1.0"
WRAPPERS = ("BinaryContent", "TextContent")
MAX_HEADER_VALUE = 4096  # characters in any attribute or text of the header
MAX_HEADER_ELEMENTS = 256
FILE_CHUNK = 1024 * 1024

_BASE64 = re.compile(r"[A-Za-z0-9+/=\s]*")
_COUNTRY = re.compile(r"[A-Z]{2}")
CAC = "urn:oasis:names:specification:ubl:schema:xsd:CommonAggregateComponents-2"
CBC = "urn:oasis:names:specification:ubl:schema:xsd:CommonBasicComponents-2"
# from the business document's root element down to the buyer's country code
_BUYER_COUNTRY = (
    f"{{{CAC}}}AccountingCustomerParty",
    f"{{{CAC}}}Party",
    f"{{{CAC}}}PostalAddress",
    f"{{{CAC}}}Country",
    f"{{{CBC}}}IdentificationCode",
)


def _check_attributes(element: etree._Element, path: str) -> None:
    for name, value in element.attrib.items():
        if len(value) > MAX_HEADER_VALUE:
            local = cut(etree.QName(name).localname)
            raise InvalidInput.one(
                f"{path}/@{local}", f"is longer than {MAX_HEADER_VALUE} characters"
            )


def _consistency(header: Header, root: etree.QName, element: etree._Element) -> None:
    """NETWORK.md "Consistency between SBDH, payload and AS4 header", for the payload part."""
    identification = f"{HEADER}/DocumentIdentification"
    if root.namespace == SH:
        header.problem(
            ROOT,
            f"holds {cut(root.localname)} from the SBDH namespace where the "
            "business document belongs; envelopes are never nested",
        )
        return
    if root.namespace == TICC and root.localname in WRAPPERS:
        mime_type = (element.get("mimeType") or "").strip()
        if not mime_type:
            header.problem(f"{ROOT}/{root.localname}/@mimeType", "is missing")
    else:
        if header.standard is not None and header.standard != (root.namespace or ""):
            header.problem(
                f"{identification}/Standard",
                f"is {quoted(header.standard)}, but the business document's root element is in the "
                f"namespace {quoted(root.namespace or '')}",
            )
        if header.type is not None and header.type != root.localname:
            header.problem(
                f"{identification}/Type",
                f"is {quoted(header.type)}, but the business document's root element is "
                f"{quoted(root.localname)}",
            )
    document = header.document_type
    if document is None:
        return
    if header.standard is not None and not document.value.startswith(header.standard):
        header.problem(
            f"{identification}/Standard",
            f"the document type {quoted(document.value)} does not start with it ({quoted(header.standard)})",
        )
    if header.type_version is not None and not document.value.endswith(":" + header.type_version):
        header.problem(
            f"{identification}/TypeVersion",
            f"the document type {quoted(document.value)} does not end with ':{header.type_version}'",
        )


def _envelope(header: Header) -> Sbdh:
    if header.problems:
        raise InvalidInput(header.problems)
    if (
        header.sender is None
        or header.receiver is None
        or header.standard is None
        or header.type_version is None
        or header.instance_identifier is None
        or header.type is None
        or header.created_at is None
        or header.document_type is None
        or header.process is None
        or header.country_c1 is None
    ):
        raise InvalidInput.one(HEADER, "is incomplete")
    return Sbdh(
        sender=header.sender,
        receiver=header.receiver,
        instance_identifier=header.instance_identifier,
        standard=header.standard,
        type_version=header.type_version,
        type=header.type,
        created_at=header.created_at,
        document_type=header.document_type,
        process=header.process,
        country_c1=header.country_c1,
        mls_to=header.mls_to,
        mls_type=header.mls_type,
    )


def _blank(text: str | None) -> bool:
    return text is None or not text.strip()


class _SbdHandler:
    """Reads the header as it streams past, checks it against the payload's root element, and
    frees every element of the payload once it has ended."""

    def __init__(self) -> None:
        self.envelope: Sbdh | None = None
        self._children = 0
        self._header_path: list[str] = []
        self._header_elements = 0
        self._header: Header | None = None
        self._payload: etree.QName | None = None
        self._buyer_depth = 0  # how many steps of _BUYER_COUNTRY the open elements match
        self.receiver_country = ""

    def start(self, element: etree._Element, depth: int) -> None:
        if depth == 1:
            if element.tag != f"{{{SH}}}{ROOT}":
                raise InvalidInput.one(
                    ROOT,
                    f"the root element is {quoted(etree.QName(element).text)}, not {ROOT} in the "
                    f"namespace {SH}",
                )
            _check_attributes(element, ROOT)
        elif depth == 2:
            self._children += 1
            if self._children == 1:
                self._start_header(element)
            elif self._children == 2:
                self._start_payload(element)
            else:
                raise InvalidInput.one(ROOT, "holds more than one business document")
        elif self._header_path:
            self._header_elements += 1
            if self._header_elements > MAX_HEADER_ELEMENTS:
                raise InvalidInput.one(HEADER, f"has more than {MAX_HEADER_ELEMENTS} elements")
            self._header_path.append(cut(etree.QName(element).localname))
            _check_attributes(element, "/".join(self._header_path))
        else:
            step = depth - 3  # below the business document's root element
            if step == self._buyer_depth < len(_BUYER_COUNTRY) and (
                element.tag == _BUYER_COUNTRY[step]
            ):
                self._buyer_depth += 1

    def _start_header(self, element: etree._Element) -> None:
        if element.tag != f"{{{SH}}}{HEADER}" or not _blank(element.getparent().text):
            raise InvalidInput.one(HEADER, f"is missing: it must be the first child of {ROOT}")
        _check_attributes(element, HEADER)
        self._header_path = [HEADER]

    def _start_payload(self, element: etree._Element) -> None:
        previous = element.getprevious()
        if previous is not None and not _blank(previous.tail):
            raise InvalidInput.one(ROOT, "holds text between the header and the business document")
        assert self._header is not None  # the header ended before its next sibling started
        self._payload = etree.QName(element)
        _consistency(self._header, self._payload, element)
        self.envelope = _envelope(self._header)

    def end(self, element: etree._Element, depth: int) -> None:
        if self._header_path:
            if len(element.text or "") > MAX_HEADER_VALUE:
                raise InvalidInput.one(
                    "/".join(self._header_path), f"is longer than {MAX_HEADER_VALUE} characters"
                )
            self._header_path.pop()
            if depth == 2:
                self._header = read_header(element)
                element.clear(keep_tail=True)
            return
        if depth == 1:
            self._end_root(element)
        elif depth == 2:
            self._end_payload(element)
            element.clear(keep_tail=True)
        else:
            if self._buyer_depth > depth - 3:  # a matched step ends
                if self._buyer_depth == len(_BUYER_COUNTRY) and not self.receiver_country:
                    code = (element.text or "").strip()
                    self.receiver_country = code if _COUNTRY.fullmatch(code) else ""
                self._buyer_depth = depth - 3
            drop(element)

    def _end_payload(self, element: etree._Element) -> None:
        if self._payload is None or self._payload.namespace != TICC:
            return
        if self._payload.localname == "BinaryContent" and (
            len(element) or _BASE64.fullmatch(element.text or "") is None
        ):
            raise InvalidInput.one(f"{ROOT}/BinaryContent", "is not base64 text")
        if self._payload.localname == "TextContent" and len(element):
            raise InvalidInput.one(f"{ROOT}/TextContent", "must hold text, not elements")

    def _end_root(self, element: etree._Element) -> None:
        if self._children == 0:
            raise InvalidInput.one(HEADER, f"is missing: it must be the first child of {ROOT}")
        if self._children == 1:
            problems = [] if self._header is None else list(self._header.problems)
            problems.append(Detail(ROOT, "holds no business document after the header"))
            raise InvalidInput(problems)
        if not _blank(element[-1].tail):
            raise InvalidInput.one(ROOT, "holds text after the business document")


_BUYER_PATH = "/".join(_BUYER_COUNTRY)


def _buyer_country(document: etree._Element) -> str:
    """What ``_SbdHandler`` finds streaming past the business document's elements: the first
    buyer's country code that is two capital letters."""
    for element in document.iterfind(_BUYER_PATH):
        code = (element.text or "").strip()
        if _COUNTRY.fullmatch(code):
            return code
    return ""


def _replay(root: etree._Element, handler: _SbdHandler) -> None:
    """Give ``handler`` the events the stream gives it for the tree ``root``, but for the
    business document's descendants, of which only the buyer's country is read."""
    handler.start(root, 1)
    for index, child in enumerate(root.iterchildren(tag=etree.Element)):
        if index > 0:  # the business document (a third child is refused at its start)
            handler.start(child, 2)
            handler.receiver_country = _buyer_country(child)
            handler.end(child, 2)
            continue
        depth = 1  # the header, whole (or whatever is there, which the handler refuses)
        for event, element in etree.iterwalk(child, events=("start", "end")):
            if event == "start":
                depth += 1
                handler.start(element, depth)
            else:
                handler.end(element, depth)
                depth -= 1
    handler.end(root, 1)


def _whole(data: bytes, max_depth: int) -> Sbdh | None:
    """The envelope of ``data`` read as one tree; None when the stream must read it (to refuse
    it in its own words, or because something is unusual)."""
    root = parse_whole(data, field=ROOT, max_depth=max_depth)
    if root is None:
        return None
    handler = _SbdHandler()
    try:
        _replay(root, handler)
        return _finish(handler)
    except InvalidInput:
        return None


def _finish(handler: _SbdHandler) -> Sbdh:
    if handler.envelope is None:  # the parser raised for every way of getting here
        raise InvalidInput.one(ROOT, "holds no business document after the header")
    return attrs.evolve(handler.envelope, receiver_country=handler.receiver_country)


def read_envelope(data: bytes, *, max_depth: int = 64) -> Sbdh:
    """The envelope of the SBD ``data``, once the whole document has been checked; raises
    ``InvalidInput`` naming every missing, malformed or inconsistent part."""
    envelope = _whole(data, max_depth)
    if envelope is not None:
        return envelope
    handler = _SbdHandler()
    parser = Parser(handler, field=ROOT, max_depth=max_depth)
    parser.feed(data)
    parser.close()
    return _finish(handler)


def read_envelope_file(path: str | os.PathLike[str], *, max_depth: int = 64) -> Sbdh:
    """``read_envelope`` over a file: read whole when it is small, else a megabyte at a time."""
    data = read_small(path, WHOLE_LIMIT)
    if data is not None:
        return read_envelope(data, max_depth=max_depth)
    handler = _SbdHandler()
    parser = Parser(handler, field=ROOT, max_depth=max_depth)
    with open(path, "rb") as file:
        while chunk := file.read(FILE_CHUNK):
            parser.feed(chunk)
    parser.close()
    return _finish(handler)
