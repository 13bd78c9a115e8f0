"""A hardened, incremental XML parser for documents that arrive from the network.

Nothing in a DTD is ever processed: the prolog is scanned before libxml2 sees a byte, and a
document that declares a DOCTYPE is refused there, so billion laughs, quadratic blowup,
external entities and external DTDs never reach entity expansion. libxml2 itself runs with
entity resolution, DTD loading and network access off and its default size limits on
(``huge_tree=False``: no text node over 10 MB, no nesting over 256). Input must be UTF-8.
Elements are reported to a handler as they start and end, with their depth, so the caller can
read what it needs and clear the rest; comments and processing instructions are dropped.
"""

from __future__ import annotations

import functools
import os
import re
from typing import Protocol

from lxml import etree

from fourcorner.domain.errors import InvalidInput
from fourcorner.domain.text import quoted

CHUNK = 64 * 1024  # bytes handed to libxml2 at a time, so refusals come early
MAX_PROLOG = 64 * 1024  # bytes allowed before the root element starts
BOM = b"\xef\xbb\xbf"

_NAME_START = re.compile(rb"[A-Za-z_:\x80-\xff]")
_ENCODING = re.compile(rb"""encoding\s*=\s*(?:"([^"]*)"|'([^']*)')""")
_PROBLEM_LIMIT = 200
WHOLE_LIMIT = 1024 * 1024  # bytes read as one tree (faster); larger documents are streamed
# markup read as one tree at most: a tree costs libxml2 some 140 bytes an element, so a
# megabyte of ``<a/>`` would hold 37 MB; past this many ``<`` (9 MB at worst) it is streamed
WHOLE_MARKUP = 65_536


class Handler(Protocol):
    """Receives the elements of a document as the parser meets them (the root has depth 1)."""

    def start(self, element: etree._Element, depth: int) -> None: ...

    def end(self, element: etree._Element, depth: int) -> None: ...


def prolog_end(data: bytes | bytearray, field: str, resume: int) -> tuple[int | None, int]:
    """``(where the root element starts or None, where to resume)``: ``None`` means more bytes
    are needed to tell, and the next scan may start at the second value. Refuses a DOCTYPE
    and any encoding but UTF-8."""
    size = len(data)
    first = len(BOM) if data.startswith(BOM) else 0
    if size < len(BOM) and BOM.startswith(bytes(data)):
        return None, 0
    pos = max(resume, first)
    while True:
        while pos < size and data[pos] in b" \t\r\n":
            pos += 1
        if pos >= size:
            return None, pos
        if data.startswith(b"<?", pos):
            end = data.find(b"?>", pos + 2)
            if end < 0:
                return None, pos
            if pos == first and re.match(rb"<\?xml[ \t\r\n]", data[pos : pos + 6]):
                _check_declaration(bytes(data[pos : end + 2]), field)
            pos = end + 2
        elif data.startswith(b"<!--", pos):
            end = data.find(b"-->", pos + 4)
            if end < 0:
                return None, pos
            pos = end + 3
        elif size - pos < 9 and b"<!DOCTYPE".startswith(bytes(data[pos:]).upper()):
            return None, pos
        elif bytes(data[pos : pos + 9]).upper() == b"<!DOCTYPE":
            raise InvalidInput.one(
                field, "documents with a DOCTYPE (a DTD or entities) are refused"
            )
        else:
            return pos, pos


def _check_declaration(declaration: bytes, field: str) -> None:
    match = _ENCODING.search(declaration)
    if match is None:
        return
    name = (match[1] if match[1] is not None else match[2]).decode("ascii", "replace")
    if name.lower() not in ("utf-8", "utf8"):
        raise InvalidInput.one(field, f"the document must be encoded in UTF-8, not {quoted(name)}")


def _syntax_problem(error: etree.XMLSyntaxError) -> str:
    message = str(error.msg or error).split(", line ")[0]
    if len(message) > _PROBLEM_LIMIT:
        message = message[:_PROBLEM_LIMIT] + "…"
    line = getattr(error, "lineno", None) or (error.position[0] if error.position else 0)
    return f"not well-formed XML: {message} (line {line})"


# libxml2's options for a document from outside: no entities, network, DTD or huge trees;
# comments and processing instructions dropped. The stream below and the validator's whole
# tree (``adapters.validation.document``) read with these.
HARDENED_OPTIONS: dict[str, object] = {
    "resolve_entities": False,
    "no_network": True,
    "load_dtd": False,
    "dtd_validation": False,
    "huge_tree": False,
    "remove_comments": True,
    "remove_pis": True,
    "encoding": "UTF-8",
}


def parse_whole(data: bytes, *, field: str, max_depth: int) -> etree._Element | None:
    """The root of ``data`` read as one tree by libxml2 with ``Parser``'s protections (the
    prolog scanned for a DOCTYPE and an encoding but UTF-8 before libxml2 sees a byte, the same
    options, no element deeper than ``max_depth``), or None for anything that is not plainly
    accepted there: a refusal, or a doubt. Several times faster than the stream of events for
    a small document (its elements are not handed to Python one by one); a caller reads what
    it is given None for with ``Parser``, which refuses it in its own words. None too for
    more than ``WHOLE_LIMIT`` bytes or ``WHOLE_MARKUP`` tags: the stream holds less of them."""
    if len(data) > WHOLE_LIMIT or data[:1] in (b"\xfe", b"\xff", b"\x00"):
        return None
    if data.count(b"<") > WHOLE_MARKUP:
        return None
    try:
        found, _ = prolog_end(data[: MAX_PROLOG + 1], field, 0)  # a DOCTYPE raises here
    except InvalidInput:
        return None
    if found is None:
        return None
    try:
        root = etree.fromstring(data, etree.XMLParser(**HARDENED_OPTIONS))
    except etree.XMLSyntaxError:
        return None
    info = root.getroottree().docinfo
    if info.doctype or info.internalDTD is not None or info.system_url:
        return None
    return None if _deeper_than(max_depth)(root) else root


def read_small(path: str | os.PathLike[str], limit: int) -> bytes | None:
    """The bytes of the file ``path`` when it holds at most ``limit``; None when it is larger
    (nothing more than ``limit`` + 1 bytes read, and none when its size says so)."""
    with open(path, "rb", buffering=0) as file:
        size = os.fstat(file.fileno()).st_size
        if size > limit:
            return None
        # as many bytes as the file holds (no buffer of ``limit`` bytes made for a small
        # one), then on to its end or ``limit`` + 1, should it have grown since
        data = file.read(size + 1)
        while len(data) <= limit and (more := file.read(limit + 1 - len(data))):
            data += more
    return None if len(data) > limit else data


@functools.cache
def _deeper_than(depth: int) -> etree.XPath:
    return etree.XPath("boolean(" + "/*" * (depth + 1) + ")")


class Parser:
    """Feed bytes in any pieces, then ``close()``; every refusal is an ``InvalidInput`` whose
    field is ``field`` (the document's name, e.g. ``StandardBusinessDocument``)."""

    def __init__(self, handler: Handler, *, field: str, max_depth: int) -> None:
        self._handler = handler
        self._field = field
        self._max_depth = max_depth
        self._depth = 0
        self._started = False
        self._prolog: bytearray | None = bytearray()
        self._resume = 0
        self._seen_bytes = False
        self._parser = etree.XMLPullParser(events=("start", "end"), **HARDENED_OPTIONS)

    def feed(self, data: bytes) -> None:
        if not data:
            return
        self._seen_bytes = True
        if self._prolog is not None:
            held = len(self._prolog)
            self._prolog += data[: MAX_PROLOG + 1 - held]  # never more than the limit
            if bytes(self._prolog[:1]) in (b"\xfe", b"\xff", b"\x00"):
                raise InvalidInput.one(self._field, "the document must be encoded in UTF-8")
            found, self._resume = prolog_end(self._prolog, self._field, self._resume)
            if found is None:
                if len(self._prolog) > MAX_PROLOG:
                    raise InvalidInput.one(self._field, "no root element in the first 64 KiB")
                return
            earlier = bytes(self._prolog[:held])
            self._prolog = None
            if earlier:
                self._push(earlier)
        view = memoryview(data)
        for offset in range(0, len(view), CHUNK):
            self._push(bytes(view[offset : offset + CHUNK]))

    def close(self) -> None:
        if not self._seen_bytes:
            raise InvalidInput.one(self._field, "the document is empty")
        if self._prolog is not None:
            held = bytes(self._prolog)
            self._prolog = None
            self._push(held)
        try:
            self._parser.close()
        except etree.XMLSyntaxError as e:
            problem = _syntax_problem(e)
            if self._started and problem.startswith("not well-formed XML: no element found"):
                # libxml2's push parser halts silently at an undefined entity reference
                problem = (
                    "not well-formed XML: the root element never ends (the document is cut "
                    "short or refers to an entity that is not defined)"
                )
            raise InvalidInput.one(self._field, problem) from None
        self._drain()

    def _push(self, piece: bytes) -> None:
        try:
            self._parser.feed(piece)
        except etree.XMLSyntaxError as e:
            self._drain()  # a limit of ours may have been passed before libxml2 gave up
            raise InvalidInput.one(self._field, _syntax_problem(e)) from None
        self._drain()

    def _drain(self) -> None:
        for event, element in self._parser.read_events():
            if event == "start":
                self._depth += 1
                if self._depth > self._max_depth:
                    raise InvalidInput.one(
                        self._field, f"elements nest deeper than {self._max_depth} levels"
                    )
                if self._depth == 1:
                    self._started = True
                    info = element.getroottree().docinfo
                    if info.doctype or info.internalDTD is not None or info.system_url:
                        raise InvalidInput.one(
                            self._field, "documents with a DOCTYPE (a DTD or entities) are refused"
                        )
                self._handler.start(element, self._depth)
            else:
                self._handler.end(element, self._depth)
                self._depth -= 1


def drop(element: etree._Element) -> None:
    """Free an element that has ended, and its earlier siblings, to keep memory bounded."""
    element.clear(keep_tail=True)
    parent = element.getparent()
    if parent is not None:
        while element.getprevious() is not None:
            del parent[0]


class _TreeHandler:
    def __init__(self) -> None:
        self.root: etree._Element | None = None

    def start(self, element: etree._Element, depth: int) -> None:
        if depth == 1:
            self.root = element

    def end(self, element: etree._Element, depth: int) -> None:
        return None


def parse_tree(data: bytes, *, field: str, max_depth: int, max_bytes: int) -> etree._Element:
    """The root of a small document (an MLS), parsed with every protection of ``Parser``."""
    if len(data) > max_bytes:
        raise InvalidInput.one(field, f"the document is larger than {max_bytes} bytes")
    handler = _TreeHandler()
    parser = Parser(handler, field=field, max_depth=max_depth)
    parser.feed(data)
    parser.close()
    assert handler.root is not None  # close() raised otherwise
    return handler.root


class _RootHandler:
    def __init__(self) -> None:
        self.root: etree.QName | None = None

    def start(self, element: etree._Element, depth: int) -> None:
        if depth == 1:
            self.root = etree.QName(element)

    def end(self, element: etree._Element, depth: int) -> None:
        if depth > 1:
            drop(element)


def check_document(data: bytes, *, field: str, max_depth: int) -> tuple[slice, etree.QName]:
    """``(body, root name)`` of a well-formed UTF-8 document without a DOCTYPE, where ``body``
    slices out the document without its BOM, XML declaration and surrounding whitespace (the
    bytes to embed in another document). Memory stays bounded whatever the size."""
    handler = _RootHandler()
    parser = Parser(handler, field=field, max_depth=max_depth)
    parser.feed(data)
    parser.close()
    assert handler.root is not None
    start = len(BOM) if data.startswith(BOM) else 0
    if re.match(rb"<\?xml[ \t\r\n]", data[start : start + 6]):
        start = data.index(b"?>", start) + 2
    end = len(data)
    while start < end and data[start] in b" \t\r\n":
        start += 1
    while end > start and data[end - 1] in b" \t\r\n":
        end -= 1
    return slice(start, end), handler.root
