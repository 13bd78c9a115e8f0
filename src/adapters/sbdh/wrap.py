"""Bare UBL documents: read what their envelope needs, and wrap them in one.

``read_bare_file`` parses a document sent without an SBD with the same hardened parser as
every inbound document (no DOCTYPE, UTF-8 only, depth and size limits), as a stream: it keeps
only the few elements the envelope is built from (``domain.ubl``) and frees every other one
once it has ended. ``wrap_file`` then writes the SBD around the document's exact bytes (only
its BOM, XML declaration and surrounding whitespace are left out, as ``write_sbd`` does), a
megabyte at a time, so a large document is never held in memory. ``read_bare`` and ``wrap``
do the same for a document held in memory (an upload small enough to be kept in memory).
"""

from __future__ import annotations

import io
import os
import re
from typing import BinaryIO

from lxml import etree

from fourcorner.adapters.sbdh.header import SH
from fourcorner.adapters.sbdh.parser import BOM, MAX_PROLOG, Parser, drop
from fourcorner.adapters.sbdh.reader import CAC, CBC, FILE_CHUNK
from fourcorner.adapters.sbdh.reader import ROOT as SBD_ROOT
from fourcorner.adapters.sbdh.writer import PAYLOAD_MAX_DEPTH, envelope_parts
from fourcorner.domain.envelope import Sbdh
from fourcorner.domain.errors import Detail, InvalidInput
from fourcorner.domain.text import quoted
from fourcorner.domain.ubl import Endpoint, UblFacts, is_ubl_billing

_FIELD = "document"  # the parser's name for the document until its root is known
_WHITESPACE = b" \t\r\n"

_PARTY = (f"{{{CAC}}}Party",)
_SUPPLIER = (f"{{{CAC}}}AccountingSupplierParty", *_PARTY)
_CUSTOMER = (f"{{{CAC}}}AccountingCustomerParty", *_PARTY)
_COUNTRY = (f"{{{CAC}}}PostalAddress", f"{{{CAC}}}Country", f"{{{CBC}}}IdentificationCode")
# paths below the root element → the UblFacts field each one fills
_WANTED = {
    (f"{{{CBC}}}CustomizationID",): "customization_id",
    (f"{{{CBC}}}ProfileID",): "profile_id",
    (f"{{{CBC}}}UBLVersionID",): "ubl_version",
    (*_SUPPLIER, f"{{{CBC}}}EndpointID"): "supplier",
    (*_SUPPLIER, *_COUNTRY): "supplier_country",
    (*_CUSTOMER, f"{{{CBC}}}EndpointID"): "customer",
}
_DEEPEST = max(len(path) for path in _WANTED)
_SBD_ROOT = f"{{{SH}}}{SBD_ROOT}"


class _NotBare(Exception):
    """The root element is an SBD's: the document is left to the SBD reader."""


class _Neither(Exception):
    """The root element is neither an SBD's nor a UBL Invoice or CreditNote."""

    def __init__(self, root: etree.QName) -> None:
        super().__init__(root.text)
        self.root = root


class _FactsHandler:
    def __init__(self) -> None:
        self.root: etree.QName | None = None
        self.found: dict[str, str | Endpoint] = {}
        self._path: list[str] = []

    def start(self, element: etree._Element, depth: int) -> None:
        if depth == 1:
            name = etree.QName(element)
            if element.tag == _SBD_ROOT:
                raise _NotBare
            if not is_ubl_billing(name.namespace, name.localname):
                raise _Neither(name)
            self.root = name
        else:
            self._path.append(element.tag)

    def end(self, element: etree._Element, depth: int) -> None:
        if depth == 1:
            return
        if depth - 1 <= _DEEPEST:
            wanted = _WANTED.get(tuple(self._path))
            if wanted is not None and wanted not in self.found:
                text = element.text or ""
                if wanted in ("supplier", "customer"):
                    self.found[wanted] = Endpoint(element.get("schemeID"), text)
                else:
                    self.found[wanted] = text
        self._path.pop()
        drop(element)


def _named(error: InvalidInput, root: str) -> InvalidInput:
    """``error`` naming the document by its root element instead of the parser's provisional
    field name (``_FIELD``)."""
    return InvalidInput(
        [Detail(root if d.field == _FIELD else d.field, d.problem) for d in error.problems]
    )


FIRST_PIECE = 2048  # bytes read first by read_bare_file: an SBD's root start tag fits


def read_bare_file(
    path: str | os.PathLike[str], *, max_depth: int = PAYLOAD_MAX_DEPTH
) -> UblFacts | None:
    """What the envelope of the bare UBL invoice or credit note in ``path`` is built from;
    None when the document is an SBD, or one the SBD reader refuses before its root (with its
    own reasons). Raises ``InvalidInput`` when a UBL document is not well-formed or passes a
    limit, and when the root is neither an SBD's nor a UBL Invoice or CreditNote."""
    with open(path, "rb") as file:
        return _read_bare(file, max_depth)


def read_bare(data: bytes, *, max_depth: int = PAYLOAD_MAX_DEPTH) -> UblFacts | None:
    """``read_bare_file`` of the document ``data``."""
    return _read_bare(io.BytesIO(data), max_depth)


def _read_bare(file: BinaryIO, max_depth: int) -> UblFacts | None:
    handler = _FactsHandler()
    parser = Parser(handler, field=_FIELD, max_depth=max_depth)
    try:
        # an SBD is known at its root's start tag: a first small piece spares libxml2 the
        # rest of the document (the usual one is an SBD)
        size = FIRST_PIECE
        while chunk := file.read(size):
            parser.feed(chunk)
            size = FILE_CHUNK
        parser.close()
    except _NotBare:
        return None
    except _Neither as e:
        raise InvalidInput.one(
            e.root.localname,
            f"the root element {quoted(e.root.text)} is neither an SBD ({SBD_ROOT} in the "
            f"namespace {SH}) nor a UBL Invoice or CreditNote",
        ) from None
    except InvalidInput as e:
        if handler.root is None:
            return None  # refused before the root: the SBD reader says why, as it always has
        raise _named(e, handler.root.localname) from None
    assert handler.root is not None
    found = handler.found

    def text(name: str) -> str | None:
        value = found.get(name)
        return value if isinstance(value, str) else None

    def endpoint(name: str) -> Endpoint | None:
        value = found.get(name)
        return value if isinstance(value, Endpoint) else None

    return UblFacts(
        namespace=handler.root.namespace or "",
        root=handler.root.localname,
        customization_id=text("customization_id"),
        profile_id=text("profile_id"),
        ubl_version=text("ubl_version"),
        supplier=endpoint("supplier"),
        customer=endpoint("customer"),
        supplier_country=text("supplier_country"),
    )


def _body(file: BinaryIO, size: int) -> tuple[int, int]:
    """``(start, end)`` of a well-formed document in an open binary ``file`` of ``size``
    bytes, without its BOM, XML declaration and surrounding whitespace."""
    file.seek(0)
    head = file.read(MAX_PROLOG + len(BOM))
    start = len(BOM) if head.startswith(BOM) else 0
    if re.match(rb"<\?xml[ \t\r\n]", head[start : start + 6]):
        start = head.index(b"?>", start) + 2
    while start < len(head) and head[start] in _WHITESPACE:
        start += 1
    end = size
    while end > start:
        step = min(FILE_CHUNK, end - start)
        file.seek(end - step)
        piece = file.read(step)
        kept = len(piece.rstrip(_WHITESPACE))
        end -= step - kept
        if kept:
            break
    return start, end


def wrap_file(
    envelope: Sbdh, source: str | os.PathLike[str], target: str | os.PathLike[str]
) -> None:
    """Write to ``target`` the SBD of the document in ``source`` (well-formed, as
    ``read_bare_file`` found it) under ``envelope``, copying the document byte for byte."""
    with open(source, "rb") as document, open(target, "wb") as out:
        _wrap(envelope, document, os.fstat(document.fileno()).st_size, out)


def wrap(envelope: Sbdh, data: bytes) -> bytes:
    """``wrap_file`` of the document ``data``: its SBD."""
    out = io.BytesIO()
    _wrap(envelope, io.BytesIO(data), len(data), out)
    return out.getvalue()


def _wrap(envelope: Sbdh, document: BinaryIO, size: int, out: BinaryIO) -> None:
    head, tail = envelope_parts(envelope)
    start, end = _body(document, size)
    out.write(head)
    document.seek(start)
    left = end - start
    while left > 0:
        piece = document.read(min(FILE_CHUNK, left))
        if not piece:
            raise InvalidInput.one(_FIELD, "changed while it was being read")
        out.write(piece)
        left -= len(piece)
    out.write(tail)
