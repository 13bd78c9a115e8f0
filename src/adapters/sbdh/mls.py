"""Message Level Status (MLS, NETWORK.md §5): the UBL ApplicationResponse a receiving access
point (C3) returns to the sending one (C2) about one document, and the SBDH it travels in.

``write_mls`` refuses a status that breaks a rule of the MLS schematron (peppol-mls 1.0.1) and
``read_mls`` refuses a document that does; both raise ``InvalidInput`` naming every problem by
its path in the ApplicationResponse (``ApplicationResponse/DocumentResponse/Response/...``).
"""

from __future__ import annotations

import os
import re
from datetime import datetime

from lxml import etree

from fourcorner.adapters.sbdh.header import SH, parse_date_time
from fourcorner.adapters.sbdh.parser import parse_tree
from fourcorner.adapters.sbdh.writer import DECLARATION, format_date_time
from fourcorner.domain.envelope import (
    MLS_DOCUMENT_TYPE,
    MLS_PROCESS,
    SPID,
    SPID_SCHEME,
    MessageLevelStatus,
    mls_envelope,
)
from fourcorner.domain.errors import Detail, InvalidInput
from fourcorner.domain.text import quoted

UBL = "urn:oasis:names:specification:ubl:schema:xsd:ApplicationResponse-2"
CAC = "urn:oasis:names:specification:ubl:schema:xsd:CommonAggregateComponents-2"
CBC = "urn:oasis:names:specification:ubl:schema:xsd:CommonBasicComponents-2"
CUSTOMIZATION_ID = "urn:peppol:edec:mls:1.0"
PROFILE_ID = "urn:peppol:edec:mls"
# The constants and the MLS envelope are the domain's (domain.envelope); re-exported here.
__all__ = ["MLS_DOCUMENT_TYPE", "MLS_PROCESS", "mls_envelope", "read_mls", "write_mls"]
RESPONSE_CODES = ("AP", "AB", "RE")
FATAL_REASONS = ("SV", "BV", "FD")
REASON_CODES = (*FATAL_REASONS, "BW")
MAX_MLS_BYTES = 8 * 1024 * 1024
MAX_MLS_DEPTH = 32

_ROOT = "ApplicationResponse"
_RESPONSE = f"{_ROOT}/DocumentResponse/Response"
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}", re.ASCII)
_TIME = re.compile(r"\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:\d{2})", re.ASCII)


def _rule_problems(status: MessageLevelStatus) -> list[Detail]:
    """The schematron's rules over the values of a status."""
    problems: list[Detail] = []
    if not status.id.strip():
        problems.append(Detail(f"{_ROOT}/ID", "is empty"))
    for role, spid in (
        ("SenderParty", status.sender_spid),
        ("ReceiverParty", status.receiver_spid),
    ):
        if SPID.fullmatch(spid) is None:
            problems.append(
                Detail(f"{_ROOT}/{role}/EndpointID", f"{quoted(spid)} is not a service provider id")
            )
    code = status.response_code
    if code not in RESPONSE_CODES:
        problems.append(Detail(f"{_RESPONSE}/ResponseCode", f"{quoted(code)} is not AP, AB or RE"))
    if not status.original_instance_id.strip():
        problems.append(Detail(f"{_ROOT}/DocumentResponse/DocumentReference/ID", "is empty"))
    fatal = False
    for index, (line, reason, description) in enumerate(status.reasons, start=1):
        path = f"{_ROOT}/DocumentResponse/LineResponse[{index}]"
        if not line.strip():
            problems.append(Detail(f"{path}/LineReference/LineID", "is empty (use NA)"))
        if not description.strip():
            problems.append(Detail(f"{path}/Response/Description", "is empty"))
        if reason not in REASON_CODES:
            problems.append(
                Detail(
                    f"{path}/Response/Status/StatusReasonCode",
                    f"{quoted(reason)} is not SV, BV, FD or BW",
                )
            )
        fatal = fatal or reason in FATAL_REASONS
    if code == "RE":
        if not status.description.strip():
            problems.append(Detail(f"{_RESPONSE}/Description", "is required when rejecting (RE)"))
        if not fatal:
            problems.append(
                Detail(
                    f"{_ROOT}/DocumentResponse/LineResponse",
                    "a rejection (RE) needs at least one issue with a fatal reason (SV, BV or FD)",
                )
            )
    elif code in RESPONSE_CODES and fatal:
        problems.append(
            Detail(
                f"{_ROOT}/DocumentResponse/LineResponse",
                f"a positive status ({code}) must not carry a fatal reason (SV, BV or FD)",
            )
        )
    return problems


# --- writing --------------------------------------------------------------------------------


def _sub(
    parent: etree._Element, namespace: str, name: str, text: str | None = None
) -> etree._Element:
    element = etree.SubElement(parent, f"{{{namespace}}}{name}")
    if text is not None:
        element.text = text
    return element


def _issue(moment: datetime) -> tuple[str, str]:
    """``(IssueDate, IssueTime)``: the date without a zone, the time with one."""
    written = format_date_time(moment)
    date, _, time = written.partition("T")
    return date, time


def write_mls(status: MessageLevelStatus) -> bytes:
    """The ApplicationResponse of ``status``; ``InvalidInput`` if it breaks an MLS rule."""
    problems = _rule_problems(status)
    if problems:
        raise InvalidInput(problems)
    root = etree.Element(f"{{{UBL}}}{_ROOT}", nsmap={None: UBL, "cac": CAC, "cbc": CBC})
    try:
        _sub(root, CBC, "CustomizationID", CUSTOMIZATION_ID)
        _sub(root, CBC, "ProfileID", PROFILE_ID)
        _sub(root, CBC, "ID", status.id)
        date, time = _issue(status.issued_at)
        _sub(root, CBC, "IssueDate", date)
        _sub(root, CBC, "IssueTime", time)
        for role, spid in (
            ("SenderParty", status.sender_spid),
            ("ReceiverParty", status.receiver_spid),
        ):
            _sub(_sub(root, CAC, role), CBC, "EndpointID", spid).set("schemeID", SPID_SCHEME)
        document = _sub(root, CAC, "DocumentResponse")
        response = _sub(document, CAC, "Response")
        _sub(response, CBC, "ResponseCode", status.response_code)
        if status.description:
            _sub(response, CBC, "Description", status.description)
        _sub(_sub(document, CAC, "DocumentReference"), CBC, "ID", status.original_instance_id)
        for line, reason, description in status.reasons:
            line_response = _sub(document, CAC, "LineResponse")
            _sub(_sub(line_response, CAC, "LineReference"), CBC, "LineID", line)
            issue = _sub(line_response, CAC, "Response")
            _sub(issue, CBC, "Description", description)
            _sub(_sub(issue, CAC, "Status"), CBC, "StatusReasonCode", reason)
    except ValueError as e:  # a character XML cannot carry
        raise InvalidInput.one(_ROOT, f"cannot be written as XML: {e}") from None
    body: bytes = etree.tostring(root, encoding="UTF-8", xml_declaration=False)
    return DECLARATION + body


# --- reading --------------------------------------------------------------------------------


class _Reading:
    def __init__(self) -> None:
        self.problems: list[Detail] = []

    def children(
        self,
        parent: etree._Element,
        namespace: str,
        name: str,
        path: str,
        *,
        least: int,
        most: int | None,
    ) -> list[etree._Element]:
        found: list[etree._Element] = parent.findall(f"{{{namespace}}}{name}")
        if len(found) < least:
            self.problems.append(Detail(path, "is missing"))
        elif most is not None and len(found) > most:
            allowed = "exactly one is" if least == most == 1 else f"at most {most} are"
            self.problems.append(Detail(path, f"appears {len(found)} times; {allowed} allowed"))
        return found

    def one(
        self, parent: etree._Element | None, namespace: str, name: str, path: str
    ) -> etree._Element | None:
        if parent is None:
            return None
        found = self.children(parent, namespace, name, path, least=1, most=1)
        return found[0] if len(found) == 1 else None

    def text(self, parent: etree._Element | None, name: str, path: str) -> str:
        """The text of the cbc element ``name`` of ``parent``, trimmed; ``""`` if absent."""
        if parent is None:
            return ""
        found = self.children(parent, CBC, name, path, least=1, most=1)
        if len(found) != 1:
            return ""
        value = "".join(found[0].itertext()).strip()
        if not value:
            self.problems.append(Detail(path, "is empty"))
        return value


def _issued_at(reading: _Reading, date: str, time: str) -> datetime | None:
    if not date or not time:
        return None  # reported as missing or empty already
    if _DATE.fullmatch(date) is None:
        reading.problems.append(
            Detail(f"{_ROOT}/IssueDate", f"{quoted(date)} is not a date without a zone")
        )
        return None
    if _TIME.fullmatch(time) is None:
        reading.problems.append(
            Detail(f"{_ROOT}/IssueTime", f"{quoted(time)} is not a time with a zone")
        )
        return None
    moment = parse_date_time(f"{date}T{time}")
    if moment is None:
        reading.problems.append(Detail(f"{_ROOT}/IssueDate", f"{date}T{time} is not a moment"))
    return moment


def _party(reading: _Reading, root: etree._Element, role: str) -> str:
    path = f"{_ROOT}/{role}/EndpointID"
    party = reading.one(root, CAC, role, f"{_ROOT}/{role}")
    spid = reading.text(party, "EndpointID", path)
    endpoint = None if party is None else party.find(f"{{{CBC}}}EndpointID")
    if endpoint is not None and endpoint.get("schemeID") != SPID_SCHEME:
        reading.problems.append(Detail(f"{path}/@schemeID", f"must be {SPID_SCHEME}"))
    return spid


def _reasons(reading: _Reading, document: etree._Element) -> tuple[tuple[str, str, str], ...]:
    reasons: list[tuple[str, str, str]] = []
    for index, line_response in enumerate(document.findall(f"{{{CAC}}}LineResponse"), start=1):
        path = f"{_ROOT}/DocumentResponse/LineResponse[{index}]"
        reference = reading.one(line_response, CAC, "LineReference", f"{path}/LineReference")
        line = reading.text(reference, "LineID", f"{path}/LineReference/LineID")
        responses = reading.children(
            line_response, CAC, "Response", f"{path}/Response", least=1, most=None
        )
        for number, response in enumerate(responses, start=1):
            at = f"{path}/Response[{number}]"
            description = reading.text(response, "Description", f"{at}/Description")
            for status in reading.children(
                response, CAC, "Status", f"{at}/Status", least=1, most=None
            ):
                reason = reading.text(status, "StatusReasonCode", f"{at}/Status/StatusReasonCode")
                if reason and reason not in REASON_CODES:
                    reading.problems.append(
                        Detail(
                            f"{at}/Status/StatusReasonCode",
                            f"{quoted(reason)} is not SV, BV, FD or BW",
                        )
                    )
                reasons.append((line, reason, description))
    return tuple(reasons)


def read_mls_file(path: str | os.PathLike[str]) -> MessageLevelStatus:
    """``read_mls`` over a file; one larger than ``MAX_MLS_BYTES`` is refused unread."""
    with open(path, "rb") as file:
        return read_mls(file.read(MAX_MLS_BYTES + 1))


def read_mls(data: bytes) -> MessageLevelStatus:
    """The status an MLS carries: ``data`` is the ApplicationResponse, or an SBD holding one.
    Parsed with the hardened parser; ``InvalidInput`` names every rule the document breaks."""
    root = parse_tree(data, field=_ROOT, max_depth=MAX_MLS_DEPTH, max_bytes=MAX_MLS_BYTES)
    if root.tag == f"{{{SH}}}StandardBusinessDocument":
        if len(root) != 2:
            raise InvalidInput.one(_ROOT, "the SBD must hold a header and one ApplicationResponse")
        root = root[1]
    if root.tag != f"{{{UBL}}}{_ROOT}":
        raise InvalidInput.one(
            _ROOT, f"the root element is {quoted(etree.QName(root).text)}, not {_ROOT}"
        )
    reading = _Reading()
    for name, expected in (("CustomizationID", CUSTOMIZATION_ID), ("ProfileID", PROFILE_ID)):
        value = " ".join(reading.text(root, name, f"{_ROOT}/{name}").split())
        if value and value != expected:
            reading.problems.append(
                Detail(f"{_ROOT}/{name}", f"is {quoted(value)}; it must be {expected}")
            )
    identifier = reading.text(root, "ID", f"{_ROOT}/ID")
    date = reading.text(root, "IssueDate", f"{_ROOT}/IssueDate")
    time = reading.text(root, "IssueTime", f"{_ROOT}/IssueTime")
    issued_at = _issued_at(reading, date, time)
    sender = _party(reading, root, "SenderParty")
    receiver = _party(reading, root, "ReceiverParty")
    document = reading.one(root, CAC, "DocumentResponse", f"{_ROOT}/DocumentResponse")
    response = reading.one(document, CAC, "Response", _RESPONSE)
    code = reading.text(response, "ResponseCode", f"{_RESPONSE}/ResponseCode")
    descriptions = [] if response is None else response.findall(f"{{{CBC}}}Description")
    description = "\n".join("".join(d.itertext()).strip() for d in descriptions).strip()
    reference = reading.one(
        document, CAC, "DocumentReference", f"{_ROOT}/DocumentResponse/DocumentReference"
    )
    original = reading.text(reference, "ID", f"{_ROOT}/DocumentResponse/DocumentReference/ID")
    reasons = () if document is None else _reasons(reading, document)
    if reading.problems or issued_at is None:
        raise InvalidInput(reading.problems)
    status = MessageLevelStatus(
        response_code=code,
        original_instance_id=original,
        id=identifier,
        issued_at=issued_at,
        sender_spid=sender,
        receiver_spid=receiver,
        description=description,
        reasons=reasons,
    )
    problems = _rule_problems(status)
    if problems:
        raise InvalidInput(problems)
    return status
