"""Read a parsed StandardBusinessDocumentHeader element: every part the network needs, and
every problem with it, each named by its path (``StandardBusinessDocumentHeader/Sender/...``).
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta, timezone

import attrs
from lxml import etree

from fourcorner.domain import clock
from fourcorner.domain.catalogue import network_spelling
from fourcorner.domain.envelope import Identifier, MlsType
from fourcorner.domain.errors import Detail, InvalidIdentifier
from fourcorner.domain.identifier import PARTICIPANT_SCHEME, ParticipantIdentifier
from fourcorner.domain.text import cut, quoted

SH = "http://www.unece.org/cefact/namespaces/StandardBusinessDocumentHeader"
HEADER = "StandardBusinessDocumentHeader"
HEADER_VERSION = "1.0"
DOCUMENT_SCHEME = "busdox-docid-qns"
PROCESS_SCHEME = "cenbii-procid-ubl"
MAX_DOCUMENT_TYPE = 500
MAX_PROCESS = 200
MAX_INSTANCE_IDENTIFIER = 255
"""Characters of DocumentIdentification/InstanceIdentifier, at most: it is stored and indexed
with the transaction (and in its unique deduplication key), and a PostgreSQL index entry
holds at most 2704 bytes."""

_COUNTRY = re.compile(r"[A-Z0-9][A-Z0-9]")
_SCHEME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
_SPACE = re.compile(r"\s")  # what str.isspace calls whitespace (both use Py_UNICODE_ISSPACE)
_DATE_TIME = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(?:\.(\d+))?(Z|[+-]\d{2}:\d{2})?",
    re.ASCII,  # xs:dateTime digits are 0-9, not any Unicode digit
)
_SCOPES = ("DOCUMENTID", "PROCESSID", "COUNTRY_C1", "MLS_TO", "MLS_TYPE")

# (local name, minimum, maximum or None for unbounded), in XSD order
_HEADER_SEQUENCE = (
    ("HeaderVersion", 1, 1),
    ("Sender", 1, 1),
    ("Receiver", 1, 1),
    ("DocumentIdentification", 1, 1),
    ("Manifest", 0, 1),
    ("BusinessScope", 1, 1),
)
_PARTNER_SEQUENCE = (("Identifier", 1, 1), ("ContactInformation", 0, None))
_IDENTIFICATION_SEQUENCE = (
    ("Standard", 1, 1),
    ("TypeVersion", 1, 1),
    ("InstanceIdentifier", 1, 1),
    ("Type", 1, 1),
    ("MultipleType", 0, 1),
    ("CreationDateAndTime", 1, 1),
)
_SCOPE_SEQUENCE = (("Type", 1, 1), ("InstanceIdentifier", 1, 1), ("Identifier", 0, 1))


@attrs.define
class Header:
    """What a header says; a part is ``None`` when it is missing or malformed (see problems)."""

    problems: list[Detail] = attrs.field(factory=list)
    sender: Identifier | None = None
    receiver: Identifier | None = None
    standard: str | None = None
    type_version: str | None = None
    instance_identifier: str | None = None
    type: str | None = None
    created_at: datetime | None = None
    document_type: Identifier | None = None
    process: Identifier | None = None
    country_c1: str | None = None
    mls_to: Identifier | None = None
    mls_type: MlsType | None = None

    def problem(self, field: str, problem: str) -> None:
        self.problems.append(Detail(field, problem))


def scope_field(scope_type: str) -> str:
    return f"{HEADER}/BusinessScope/Scope[Type={scope_type}]"


def _sequence(
    header: Header,
    path: str,
    parent: etree._Element,
    spec: tuple[tuple[str, int, int | None], ...],
    *,
    open_content: bool = False,
) -> dict[str, list[etree._Element]]:
    """The children of ``parent`` by name; problems for unknown, misplaced, missing or repeated
    ones. With ``open_content``, elements of other names are allowed after the listed ones."""
    names = [name for name, _, _ in spec]
    found: dict[str, list[etree._Element]] = {name: [] for name in names}
    last = -1
    for child in parent:
        qname = etree.QName(child)
        if qname.namespace == SH and qname.localname in found:
            index = names.index(qname.localname)
            if index < last or (open_content and last == len(names)):
                header.problem(
                    f"{path}/{qname.localname}",
                    f"is out of order; the schema's order is {', '.join(names)}",
                )
            last = max(last, index)
            found[qname.localname].append(child)
        elif open_content:
            last = len(names)
        else:
            name = cut(qname.localname if qname.namespace == SH else qname.text)
            header.problem(f"{path}/{name}", f"is not an element of {path.rsplit('/', 1)[-1]}")
    for name, least, most in spec:
        count = len(found[name])
        if count < least:
            header.problem(f"{path}/{name}", "is missing")
        elif most is not None and count > most:
            allowed = "exactly one is" if least == most == 1 else f"at most {most} are"
            header.problem(f"{path}/{name}", f"appears {count} times; {allowed} allowed")
    return found


def _only(found: dict[str, list[etree._Element]], name: str) -> etree._Element | None:
    elements = found[name]
    return elements[0] if len(elements) == 1 else None


def _text(header: Header, path: str, element: etree._Element | None) -> str | None:
    """The trimmed text of a simple element; ``None`` (with a problem) if empty or complex."""
    if element is None:
        return None
    if len(element):
        header.problem(path, "must hold text, not elements")
        return None
    text = (element.text or "").strip()
    if not text:
        header.problem(path, "is empty")
        return None
    return text


def _token(header: Header, path: str, text: str | None, what: str, limit: int) -> str | None:
    if text is None:
        return None
    if len(text) > limit:
        header.problem(path, f"{what} is longer than {limit} characters")
        return None
    if _SPACE.search(text):
        header.problem(path, f"{what} {quoted(text)} contains whitespace")
        return None
    return text


def _participant(header: Header, path: str, value: str | None) -> str | None:
    if value is None:
        return None
    if "::" in value:
        header.problem(path, f"{quoted(value)} must be the bare value (0088:…), without a scheme")
        return None
    try:
        ParticipantIdentifier.parse(value)
    except InvalidIdentifier as e:
        header.problem(path, f"{quoted(value)} is not a participant identifier: {e.rule}")
        return None
    return value


def _partner(header: Header, role: str, element: etree._Element | None) -> Identifier | None:
    if element is None:
        return None
    path = f"{HEADER}/{role}"
    found = _sequence(header, path, element, _PARTNER_SEQUENCE)
    identifier = _only(found, "Identifier")
    if identifier is None:
        return None
    value = _participant(
        header, f"{path}/Identifier", _text(header, f"{path}/Identifier", identifier)
    )
    authority = identifier.get("Authority")
    if authority is None:
        header.problem(
            f"{path}/Identifier/@Authority", f"is missing; it must be {PARTICIPANT_SCHEME}"
        )
        return None
    if authority.strip() != PARTICIPANT_SCHEME:
        header.problem(
            f"{path}/Identifier/@Authority",
            f"is {quoted(authority)}; it must be {PARTICIPANT_SCHEME}",
        )
        return None
    return None if value is None else Identifier(PARTICIPANT_SCHEME, value)


def parse_date_time(text: str) -> datetime | None:
    """An ``xs:dateTime`` that carries a zone, or ``None`` if ``text`` is not one (or names an
    instant outside the years UTC holds, ``clock.OutOfRange``)."""
    match = _DATE_TIME.fullmatch(text)
    if match is None or match[8] is None:
        return None
    year, month, day, hour, minute, second = (int(match[i]) for i in range(1, 7))
    micro = int((match[7] or "0")[:6].ljust(6, "0"))
    zone = match[8]
    if zone == "Z":
        tz: timezone = UTC
    else:
        hours, minutes = int(zone[1:3]), int(zone[4:6])
        if hours > 14 or minutes > 59 or (hours == 14 and minutes):
            return None
        offset = timedelta(hours=hours, minutes=minutes)
        tz = timezone(-offset if zone[0] == "-" else offset)
    try:
        moment = datetime(year, month, day, hour, minute, second, micro, tzinfo=tz)
        clock.utc(moment)
    except ValueError:  # clock.OutOfRange too
        return None
    return moment


def _identification(header: Header, element: etree._Element | None) -> None:
    if element is None:
        return
    path = f"{HEADER}/DocumentIdentification"
    found = _sequence(header, path, element, _IDENTIFICATION_SEQUENCE)

    def text(name: str) -> str | None:
        return _text(header, f"{path}/{name}", _only(found, name))

    header.standard = _token(header, f"{path}/Standard", text("Standard"), "Standard", 500)
    version = _token(header, f"{path}/TypeVersion", text("TypeVersion"), "TypeVersion", 50)
    if version is not None and ":" in version:
        header.problem(f"{path}/TypeVersion", f"{quoted(version)} must not contain ':'")
        version = None
    header.type_version = version
    instance = text("InstanceIdentifier")
    if instance is not None and len(instance) > MAX_INSTANCE_IDENTIFIER:
        header.problem(
            f"{path}/InstanceIdentifier", f"is longer than {MAX_INSTANCE_IDENTIFIER} characters"
        )
        instance = None
    header.instance_identifier = instance
    header.type = _token(header, f"{path}/Type", text("Type"), "Type", 200)
    created = text("CreationDateAndTime")
    if created is not None:
        header.created_at = parse_date_time(created)
        if header.created_at is None:
            header.problem(
                f"{path}/CreationDateAndTime",
                f"{quoted(created)} is not a date and time with a timezone (2026-01-02T10:00:00Z)"
                f" {clock.RANGE}",
            )


def _scope(header: Header, index: int, scope: etree._Element, seen: set[str]) -> None:
    types = [child for child in scope if child.tag == f"{{{SH}}}Type"]
    named = (types[0].text or "").strip() if len(types) == 1 and not len(types[0]) else ""
    path = scope_field(named) if named in _SCOPES else f"{HEADER}/BusinessScope/Scope[{index}]"
    found = _sequence(header, path, scope, _SCOPE_SEQUENCE, open_content=True)
    kind = _text(header, f"{path}/Type", _only(found, "Type"))
    if kind is None or kind not in _SCOPES:
        return  # COUNTRY_C4, TECHNICAL_VALIDATION_* and others: reserved or not ours to read
    if kind in seen:
        header.problem(path, "appears more than once")
        return
    seen.add(kind)
    value = _text(header, f"{path}/InstanceIdentifier", _only(found, "InstanceIdentifier"))
    scheme_element = _only(found, "Identifier")
    scheme = None if scheme_element is None else _text(header, f"{path}/Identifier", scheme_element)
    if scheme_element is not None and scheme is None:
        return
    if scheme is not None and _SCHEME.fullmatch(scheme) is None:
        header.problem(f"{path}/Identifier", f"{quoted(scheme)} is not an identifier scheme")
        return
    if value is None:
        return
    value_path = f"{path}/InstanceIdentifier"
    if kind == "DOCUMENTID":
        scheme = scheme or DOCUMENT_SCHEME
        if (spelt := network_spelling(scheme)) != scheme:
            # the SBD goes on the wire as it is, where only the network's own spelling is read
            header.problem(
                f"{path}/Identifier",
                f"{quoted(scheme)} is the interface's spelling; an SBD carries the network's: {spelt}",
            )
            return
        token = _token(header, value_path, value, "the document type", MAX_DOCUMENT_TYPE)
        if token is not None and scheme == DOCUMENT_SCHEME and "*" in token:
            header.problem(value_path, f"a {DOCUMENT_SCHEME} document type must not contain '*'")
        elif token is not None:
            header.document_type = Identifier(scheme, token)
    elif kind == "PROCESSID":
        token = _token(header, value_path, value, "the process", MAX_PROCESS)
        if token is not None:
            header.process = Identifier(scheme or PROCESS_SCHEME, token)
    elif kind == "COUNTRY_C1":
        if _COUNTRY.fullmatch(value) is None:
            header.problem(value_path, f"{quoted(value)} is not a country code ([A-Z0-9][A-Z0-9])")
        else:
            header.country_c1 = value
    elif kind == "MLS_TO":
        if scheme is None:
            header.problem(f"{path}/Identifier", f"is missing; it must be {PARTICIPANT_SCHEME}")
        elif scheme != PARTICIPANT_SCHEME:
            header.problem(
                f"{path}/Identifier", f"is {quoted(scheme)}; it must be {PARTICIPANT_SCHEME}"
            )
        elif _participant(header, value_path, value) is not None:
            header.mls_to = Identifier(scheme, value)
    else:
        try:
            header.mls_type = MlsType(value)
        except ValueError:
            header.problem(value_path, f"{quoted(value)} is neither FAILURE_ONLY nor ALWAYS_SEND")


def read_header(element: etree._Element) -> Header:
    """Everything a StandardBusinessDocumentHeader says, with every problem found in it."""
    header = Header()
    found = _sequence(header, HEADER, element, _HEADER_SEQUENCE)
    version = _text(header, f"{HEADER}/HeaderVersion", _only(found, "HeaderVersion"))
    if version is not None and version != HEADER_VERSION:
        header.problem(
            f"{HEADER}/HeaderVersion", f"is {quoted(version)}; it must be {HEADER_VERSION}"
        )
    header.sender = _partner(header, "Sender", _only(found, "Sender"))
    header.receiver = _partner(header, "Receiver", _only(found, "Receiver"))
    _identification(header, _only(found, "DocumentIdentification"))
    scope = _only(found, "BusinessScope")
    if scope is not None:
        seen: set[str] = set()
        scopes = _sequence(header, f"{HEADER}/BusinessScope", scope, (("Scope", 0, None),))
        for index, child in enumerate(scopes["Scope"], start=1):
            _scope(header, index, child, seen)
        for required in ("DOCUMENTID", "PROCESSID", "COUNTRY_C1"):
            if required not in seen:
                header.problem(scope_field(required), "is missing")
    return header
