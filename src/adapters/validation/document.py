"""Find the business document to check, reading untrusted bytes with intake's hardened parser.

The whole input is parsed as a stream by ``adapters.sbdh.parser`` (no DOCTYPE, UTF-8 only,
depth and size limits; every element is freed once it has ended), so memory stays bounded and
a document that is not well-formed or hostile is refused before Saxon sees a byte. What is
kept: the root element of the business document (the payload, in an SBD), and its
customization and profile identifiers, which are reported with the result.

A document of at most ``WHOLE_LIMIT`` bytes is first read as one tree by libxml2 with the same
protections (the prolog scanned for a DOCTYPE before libxml2 sees a byte, the same parser
options, the same depth limit), which is several times faster than the stream of events for
the usual invoice (its elements are not handed to Python one by one). Anything that is not a
plain accepted document there (a refusal, a doubt) is read again by the stream, which gives
the refusal its exact words: both paths accept and refuse the same documents.
"""

from __future__ import annotations

import os

import attrs
from lxml import etree

from fourcorner.adapters.sbdh.header import HEADER, SH
from fourcorner.adapters.sbdh.parser import WHOLE_LIMIT, Parser, drop, parse_whole, read_small
from fourcorner.adapters.validation.rules import BILLING, CBC, RAM, RSM, Syntax
from fourcorner.domain.errors import InvalidInput

SBD = "StandardBusinessDocument"
FIELD = "document"
MAX_DEPTH = 64
MAX_ID = 1024  # characters of a customization or profile identifier kept for the report
# bytes of a file read at a time: a larger piece (1 MiB) is freed to glibc's heap, not to the
# system, and stays resident (a quarter of a 10 MiB document's size) while Saxon then runs
FILE_CHUNK = 64 * 1024

# the identifiers' paths below the document's root element, by syntax
_IDS: dict[Syntax, dict[tuple[tuple[str, str], ...], str]] = {
    Syntax.UBL: {
        ((CBC, "CustomizationID"),): "customization",
        ((CBC, "ProfileID"),): "profile",
    },
    Syntax.CII: {
        (
            (RSM, "ExchangedDocumentContext"),
            (RAM, "GuidelineSpecifiedDocumentContextParameter"),
            (RAM, "ID"),
        ): "customization",
        (
            (RSM, "ExchangedDocumentContext"),
            (RAM, "BusinessProcessSpecifiedDocumentContextParameter"),
            (RAM, "ID"),
        ): "profile",
    },
}


_LONGEST = max(len(path) for paths in _IDS.values() for path in paths)
# the same paths as element tags (``{namespace}local``), which the stream compares as they are
_TAG_IDS: dict[Syntax, dict[tuple[str, ...], str]] = {
    syntax: {
        tuple(f"{{{ns}}}{local}" for ns, local in path): field for path, field in paths.items()
    }
    for syntax, paths in _IDS.items()
}
# every path from the business document's child down that may still lead to an identifier
_TAG_PREFIXES: dict[Syntax, frozenset[tuple[str, ...]]] = {
    syntax: frozenset(path[:n] for path in paths for n in range(1, len(path) + 1))
    for syntax, paths in _TAG_IDS.items()
}


@attrs.frozen
class Located:
    """The business document: its root's namespace and local name, the syntax whose rules
    apply (None: not a billing document), whether it is the payload of an SBD, and its
    customization and profile identifiers (the first of each, stripped)."""

    namespace: str
    local: str
    syntax: Syntax | None
    in_sbd: bool
    customization_id: str | None
    profile_id: str | None


class _Handler:
    def __init__(self) -> None:
        self.in_sbd = False
        self.root: tuple[str, str] | None = None  # of the business document
        self.syntax: Syntax | None = None
        self.found: dict[str, str] = {}
        self._base = 1  # the depth of the business document's root element
        self._deepest = 1 + _LONGEST  # below this depth no element matters
        self._ids: dict[tuple[str, ...], str] = {}
        self._prefixes: frozenset[tuple[str, ...]] = frozenset()
        # the tags from the business document's child down to the element being read, while
        # they may still lead to an identifier (most elements are passed by with one test)
        self._path: list[str] = []
        self._in_header = False  # reading the SBD's header: nothing in it is the document's

    def start(self, element: etree._Element, depth: int) -> None:
        if depth > self._deepest:
            return
        if depth > self._base:
            if not self._in_header and len(self._path) == depth - self._base - 1:
                tag = element.tag
                if (*self._path, tag) in self._prefixes:
                    self._path.append(tag)
            return
        name = etree.QName(element)
        pair = (name.namespace or "", name.localname)
        if depth == 1 and pair == (SH, SBD):
            self.in_sbd = True
            self._base = 2
            self._deepest = 2 + _LONGEST
        elif depth == self._base:
            if self.in_sbd and pair == (SH, HEADER):
                self._in_header = True
                return
            if self.root is not None:
                raise InvalidInput.one(SBD, "holds more than one business document")
            self.root = pair
            self.syntax = BILLING.get(pair)
            self._deepest = self._base
            if self.syntax is not None:
                self._ids = _TAG_IDS[self.syntax]
                self._prefixes = _TAG_PREFIXES[self.syntax]
                self._deepest += max(map(len, self._ids))

    def end(self, element: etree._Element, depth: int) -> None:
        if self._path and len(self._path) == depth - self._base:
            field = self._ids.get(tuple(self._path))
            if field is not None and field not in self.found:
                self.found[field] = (element.text or "").strip()[:MAX_ID]
            self._path.pop()
        if depth == self._base:
            self._in_header = False
        if depth > 1:
            drop(element)


def _located(handler: _Handler) -> Located:
    if handler.root is None:
        raise InvalidInput.one(SBD, "holds no business document after the header")
    namespace, local = handler.root
    return Located(
        namespace=namespace,
        local=local,
        syntax=handler.syntax,
        in_sbd=handler.in_sbd,
        customization_id=handler.found.get("customization"),
        profile_id=handler.found.get("profile"),
    )


_ID_PATHS = {
    syntax: {
        field: "/".join(f"{{{namespace}}}{local}" for namespace, local in path)
        for path, field in paths.items()
    }
    for syntax, paths in _IDS.items()
}


def _whole(data: bytes) -> tuple[Located, str | None] | None:
    """The business document of ``data`` read as one tree, and its text (the payload's own,
    in an SBD), or None when the stream must read it (to refuse it in its own words, or
    because something is unusual)."""
    root = parse_whole(data, field=FIELD, max_depth=MAX_DEPTH)
    if root is None:
        return None
    in_sbd = root.tag == f"{{{SH}}}{SBD}"
    if in_sbd:
        header = f"{{{SH}}}{HEADER}"
        payloads = [child for child in root.iterchildren(tag=etree.Element) if child.tag != header]
        if len(payloads) != 1:
            return None
        (document,) = payloads
    else:
        document = root
    name = etree.QName(document)
    namespace, local = name.namespace or "", name.localname
    syntax = BILLING.get((namespace, local))
    found_ids: dict[str, str] = {}
    for field, path in _ID_PATHS[syntax].items() if syntax is not None else ():
        element = document.find(path)
        if element is not None:
            found_ids[field] = (element.text or "").strip()[:MAX_ID]
    located = Located(
        namespace=namespace,
        local=local,
        syntax=syntax,
        in_sbd=in_sbd,
        customization_id=found_ids.get("customization"),
        profile_id=found_ids.get("profile"),
    )
    if syntax is None:  # not checked: Saxon never sees it
        return located, None
    if not in_sbd:
        return located, data.decode("utf-8-sig")
    # the payload with every namespace declaration in scope, as XSLT's xsl:copy-of has it
    return located, etree.tostring(document, encoding="unicode", with_tail=False)


def locate(document: bytes | str | os.PathLike[str]) -> Located:
    """The business document of ``document`` (bytes, or the path of a file), once the whole
    input has been read; raises ``InvalidInput`` for anything intake's parser refuses."""
    return read(document)[0]


def read(document: bytes | str | os.PathLike[str]) -> tuple[Located, str | None]:
    """``locate``, and the business document's text when the input was small enough to be
    read as one tree (the payload alone, in an SBD): Saxon then parses that text, and neither
    reads the file again nor extracts the payload itself. None: Saxon reads the input."""
    data = document if isinstance(document, bytes) else read_small(document, WHOLE_LIMIT)
    if data is not None:
        whole = _whole(data)
        if whole is not None:
            return whole
    handler = _Handler()
    parser = Parser(handler, field=FIELD, max_depth=MAX_DEPTH)
    if data is not None:
        parser.feed(data)
    else:
        with open(document, "rb") as file:
            while chunk := file.read(FILE_CHUNK):
                parser.feed(chunk)
    parser.close()
    return _located(handler), None
