"""Message Level Status: AP/AB/RE round trips, the MLS rules of NETWORK.md §5 refused on the way
out and on the way in, and an MLS in its own SBD read back through ``read_envelope``."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fourcorner.adapters.sbdh import (
    MLS_DOCUMENT_TYPE,
    MLS_PROCESS,
    mls_envelope,
    read_envelope,
    read_mls,
    write_mls,
    write_sbd,
)
from fourcorner.adapters.sbdh.mls import MAX_MLS_BYTES, read_mls_file
from fourcorner.domain.envelope import Identifier, MessageLevelStatus
from fourcorner.domain.errors import InvalidInput

ROOT = "ApplicationResponse"
RESPONSE = f"{ROOT}/DocumentResponse/Response"
C2 = Identifier("iso6523-actorid-upis", "0242:987654")

texts = st.text(
    st.characters(codec="utf-8", exclude_categories=("Cc", "Cs", "Cn")), min_size=1, max_size=40
).filter(lambda s: s.strip() == s and s != "")
spids = st.from_regex(r"[0-9]{6}(-[0-9A-Z_]{3,12}(\.[0-9A-Z._~-]{3,24})?)?", fullmatch=True)
zones = st.integers(-14 * 60, 14 * 60).map(lambda minutes: timezone(timedelta(minutes=minutes)))
moments = st.datetimes(datetime(2000, 1, 1), datetime(2100, 1, 1), timezones=zones)
line_ids = st.sampled_from(
    ["NA", "/Invoice/cbc:ID[1]", "/Invoice/cac:InvoiceLine[3]/cbc:LineExtensionAmount"]
)


def reasons(
    codes: st.SearchStrategy[str], *, least: int
) -> st.SearchStrategy[tuple[tuple[str, str, str], ...]]:
    return st.lists(st.tuples(line_ids, codes, texts), min_size=least, max_size=4).map(tuple)


@st.composite
def statuses(draw: st.DrawFn) -> MessageLevelStatus:
    code = draw(st.sampled_from(["AP", "AB", "RE"]))
    if code == "RE":
        fatal = draw(reasons(st.sampled_from(["SV", "BV", "FD"]), least=1))
        found = fatal + draw(reasons(st.just("BW"), least=0))
        description = draw(texts)
    else:
        found = draw(reasons(st.just("BW"), least=0))
        description = draw(st.just("") | texts)
    return MessageLevelStatus(
        response_code=code,
        original_instance_id=draw(texts),
        id=draw(texts),
        issued_at=draw(moments),
        sender_spid=draw(spids),
        receiver_spid=draw(spids),
        description=description,
        reasons=found,
    )


@settings(max_examples=150, deadline=None)
@given(statuses())
def test_what_is_written_reads_back(status: MessageLevelStatus) -> None:
    assert read_mls(write_mls(status)) == status


REJECTION = MessageLevelStatus(
    response_code="RE",
    original_instance_id="0b8a3f4e-8c1e-4d0a-9a43-53a2d3f1e0aa",
    id="mls-1",
    issued_at=datetime(2026, 1, 2, 10, 5, tzinfo=UTC),
    sender_spid="123456",
    receiver_spid="987654",
    description="Rejected due to validation errors",
    reasons=(("/Invoice/cbc:ID[1]", "BV", "[BR-02] An Invoice shall have an Invoice number"),),
)
ACCEPTANCE = MessageLevelStatus(
    response_code="AP",
    original_instance_id="0b8a3f4e-8c1e-4d0a-9a43-53a2d3f1e0aa",
    id="mls-2",
    issued_at=datetime(2026, 1, 2, 10, 5, tzinfo=UTC),
    sender_spid="123456",
    receiver_spid="987654",
)


def test_the_document_has_the_shape_of_network_md() -> None:
    data = write_mls(REJECTION)
    assert data.startswith(b'<?xml version="1.0" encoding="UTF-8"?>')
    for piece in (
        b"<cbc:CustomizationID>urn:peppol:edec:mls:1.0</cbc:CustomizationID>",
        b"<cbc:ProfileID>urn:peppol:edec:mls</cbc:ProfileID>",
        b"<cbc:IssueDate>2026-01-02</cbc:IssueDate><cbc:IssueTime>10:05:00Z</cbc:IssueTime>",
        b'<cac:SenderParty><cbc:EndpointID schemeID="0242">123456</cbc:EndpointID></cac:SenderParty>',
        b'<cac:ReceiverParty><cbc:EndpointID schemeID="0242">987654</cbc:EndpointID>',
        b"<cac:Response><cbc:ResponseCode>RE</cbc:ResponseCode><cbc:Description>Rejected",
        b"<cac:DocumentReference><cbc:ID>0b8a3f4e-8c1e-4d0a-9a43-53a2d3f1e0aa</cbc:ID>",
        b"<cac:LineReference><cbc:LineID>/Invoice/cbc:ID[1]</cbc:LineID></cac:LineReference>",
        b"<cac:Status><cbc:StatusReasonCode>BV</cbc:StatusReasonCode></cac:Status>",
    ):
        assert piece in data, piece


def test_a_published_style_example_reads() -> None:
    data = b"""<?xml version="1.0" encoding="UTF-8"?>
<ApplicationResponse xmlns="urn:oasis:names:specification:ubl:schema:xsd:ApplicationResponse-2"
                     xmlns:cac="urn:oasis:names:specification:ubl:schema:xsd:CommonAggregateComponents-2"
                     xmlns:cbc="urn:oasis:names:specification:ubl:schema:xsd:CommonBasicComponents-2">
  <cbc:CustomizationID>urn:peppol:edec:mls:1.0</cbc:CustomizationID>
  <cbc:ProfileID>urn:peppol:edec:mls</cbc:ProfileID>
  <cbc:ID>MLS-ID123</cbc:ID>
  <cbc:IssueDate>2025-03-11</cbc:IssueDate>
  <cbc:IssueTime>12:00:00.250+01:00</cbc:IssueTime>
  <cac:SenderParty><cbc:EndpointID schemeID="0242">123456</cbc:EndpointID></cac:SenderParty>
  <cac:ReceiverParty><cbc:EndpointID schemeID="0242">234567-ABC</cbc:EndpointID></cac:ReceiverParty>
  <cac:DocumentResponse>
    <cac:Response>
      <cbc:ResponseCode>AB</cbc:ResponseCode>
    </cac:Response>
    <cac:DocumentReference>
      <cbc:ID>EnvelopeID-12456789</cbc:ID>
    </cac:DocumentReference>
    <cac:LineResponse>
      <cac:LineReference><cbc:LineID>NA</cbc:LineID></cac:LineReference>
      <cac:Response>
        <cbc:Description>Buyer reference is recommended</cbc:Description>
        <cac:Status><cbc:StatusReasonCode>BW</cbc:StatusReasonCode></cac:Status>
      </cac:Response>
    </cac:LineResponse>
  </cac:DocumentResponse>
</ApplicationResponse>
"""
    status = read_mls(data)
    assert status.response_code == "AB"
    assert status.original_instance_id == "EnvelopeID-12456789"
    assert status.issued_at == datetime(2025, 3, 11, 11, 0, 0, 250_000, tzinfo=UTC)
    assert status.receiver_spid == "234567-ABC"
    assert status.reasons == (("NA", "BW", "Buyer reference is recommended"),)
    assert status.description == ""


# --- the rules, on the way out -----------------------------------------------------------------


def _fields(error: InvalidInput) -> set[str]:
    return {detail.field for detail in error.problems}


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"response_code": "OK"}, f"{RESPONSE}/ResponseCode"),
        ({"description": ""}, f"{RESPONSE}/Description"),
        ({"description": "  "}, f"{RESPONSE}/Description"),
        ({"reasons": ()}, f"{ROOT}/DocumentResponse/LineResponse"),
        ({"reasons": (("NA", "BW", "only a warning"),)}, f"{ROOT}/DocumentResponse/LineResponse"),
        (
            {"reasons": (("NA", "XX", "unknown"),)},
            f"{ROOT}/DocumentResponse/LineResponse[1]/Response/Status/StatusReasonCode",
        ),
        (
            {"reasons": (("", "BV", "no line"),)},
            f"{ROOT}/DocumentResponse/LineResponse[1]/LineReference/LineID",
        ),
        (
            {"reasons": (("NA", "BV", ""),)},
            f"{ROOT}/DocumentResponse/LineResponse[1]/Response/Description",
        ),
        ({"original_instance_id": ""}, f"{ROOT}/DocumentResponse/DocumentReference/ID"),
        ({"id": " "}, f"{ROOT}/ID"),
        ({"sender_spid": "PBE000001"}, f"{ROOT}/SenderParty/EndpointID"),
        ({"receiver_spid": "12345"}, f"{ROOT}/ReceiverParty/EndpointID"),
    ],
)
def test_a_rejection_breaking_a_rule_is_not_written(changes: dict[str, Any], field: str) -> None:
    status = attrs.evolve(REJECTION, **changes)
    with pytest.raises(InvalidInput) as caught:
        write_mls(status)
    assert field in _fields(caught.value)


@pytest.mark.parametrize("code", ["AP", "AB"])
@pytest.mark.parametrize("fatal", ["SV", "BV", "FD"])
def test_a_positive_status_carries_no_fatal_reason(code: str, fatal: str) -> None:
    status = attrs.evolve(ACCEPTANCE, response_code=code, reasons=(("NA", fatal, "x"),))
    with pytest.raises(InvalidInput) as caught:
        write_mls(status)
    assert f"{ROOT}/DocumentResponse/LineResponse" in _fields(caught.value)


# --- the rules, on the way in ------------------------------------------------------------------

VALID = write_mls(REJECTION).decode()
_RESPONSE = "<cac:Response><cbc:ResponseCode>RE</cbc:ResponseCode><cbc:Description>Rejected due to validation errors</cbc:Description></cac:Response>"
_REFERENCE = "<cac:DocumentReference><cbc:ID>0b8a3f4e-8c1e-4d0a-9a43-53a2d3f1e0aa</cbc:ID></cac:DocumentReference>"
_LINE = VALID[VALID.index("<cac:LineResponse>") : VALID.index("</cac:DocumentResponse>")]
_DOCUMENT = VALID[VALID.index("<cac:DocumentResponse>") : VALID.index("</ApplicationResponse>")]

# (id, text in VALID, replacement, the field named)
MUTATIONS = [
    (
        "customization",
        ">urn:peppol:edec:mls:1.0<",
        ">urn:peppol:edec:mls:2.0<",
        f"{ROOT}/CustomizationID",
    ),
    (
        "customization-missing",
        "<cbc:CustomizationID>urn:peppol:edec:mls:1.0</cbc:CustomizationID>",
        "",
        f"{ROOT}/CustomizationID",
    ),
    ("profile", ">urn:peppol:edec:mls<", ">urn:peppol:edec:other<", f"{ROOT}/ProfileID"),
    ("id-empty", "<cbc:ID>mls-1</cbc:ID>", "<cbc:ID></cbc:ID>", f"{ROOT}/ID"),
    ("issue-date-with-zone", ">2026-01-02<", ">2026-01-02Z<", f"{ROOT}/IssueDate"),
    ("issue-date-missing", "<cbc:IssueDate>2026-01-02</cbc:IssueDate>", "", f"{ROOT}/IssueDate"),
    ("issue-time-without-zone", ">10:05:00Z<", ">10:05:00<", f"{ROOT}/IssueTime"),
    ("issue-date-non-ascii-digits", ">2026-01-02<", ">\u0662026-01-02<", f"{ROOT}/IssueDate"),
    ("issue-time-non-ascii-digits", ">10:05:00Z<", ">\u0661\u0660:05:00Z<", f"{ROOT}/IssueTime"),
    ("issue-time-missing", "<cbc:IssueTime>10:05:00Z</cbc:IssueTime>", "", f"{ROOT}/IssueTime"),
    (
        "sender-scheme",
        '<cac:SenderParty><cbc:EndpointID schemeID="0242">',
        '<cac:SenderParty><cbc:EndpointID schemeID="0088">',
        f"{ROOT}/SenderParty/EndpointID/@schemeID",
    ),
    ("sender-not-an-spid", ">123456<", ">POP123456<", f"{ROOT}/SenderParty/EndpointID"),
    (
        "receiver-missing",
        '<cac:ReceiverParty><cbc:EndpointID schemeID="0242">987654</cbc:EndpointID></cac:ReceiverParty>',
        "",
        f"{ROOT}/ReceiverParty",
    ),
    ("two-document-responses", _DOCUMENT, _DOCUMENT * 2, f"{ROOT}/DocumentResponse"),
    ("response-code-unknown", ">RE<", ">NA<", f"{RESPONSE}/ResponseCode"),
    (
        "rejection-without-description",
        "<cbc:Description>Rejected due to validation errors</cbc:Description>",
        "",
        f"{RESPONSE}/Description",
    ),
    ("rejection-without-issues", _LINE, "", f"{ROOT}/DocumentResponse/LineResponse"),
    ("rejection-with-only-a-warning", ">BV<", ">BW<", f"{ROOT}/DocumentResponse/LineResponse"),
    ("acceptance-with-a-fatal-issue", ">RE<", ">AP<", f"{ROOT}/DocumentResponse/LineResponse"),
    ("reference-missing", _REFERENCE, "", f"{ROOT}/DocumentResponse/DocumentReference"),
    ("two-references", _REFERENCE, _REFERENCE * 2, f"{ROOT}/DocumentResponse/DocumentReference"),
    (
        "reference-empty",
        "<cbc:ID>0b8a3f4e-8c1e-4d0a-9a43-53a2d3f1e0aa</cbc:ID>",
        "<cbc:ID/>",
        f"{ROOT}/DocumentResponse/DocumentReference/ID",
    ),
    (
        "reason-unknown",
        ">BV<",
        ">XX<",
        f"{ROOT}/DocumentResponse/LineResponse[1]/Response[1]/Status/StatusReasonCode",
    ),
    (
        "issue-without-description",
        "<cbc:Description>[BR-02] An Invoice shall have an Invoice number</cbc:Description>",
        "",
        f"{ROOT}/DocumentResponse/LineResponse[1]/Response[1]/Description",
    ),
    (
        "issue-without-status",
        "<cac:Status><cbc:StatusReasonCode>BV</cbc:StatusReasonCode></cac:Status>",
        "",
        f"{ROOT}/DocumentResponse/LineResponse[1]/Response[1]/Status",
    ),
    (
        "issue-without-line",
        "<cbc:LineID>/Invoice/cbc:ID[1]</cbc:LineID>",
        "<cbc:LineID> </cbc:LineID>",
        f"{ROOT}/DocumentResponse/LineResponse[1]/LineReference/LineID",
    ),
    ("response-missing", _RESPONSE, "", RESPONSE),
]


@pytest.mark.parametrize(
    ("old", "new", "field"), [m[1:] for m in MUTATIONS], ids=[m[0] for m in MUTATIONS]
)
def test_a_document_breaking_a_rule_is_refused_by_name(old: str, new: str, field: str) -> None:
    assert VALID.count(old) == 1, old
    with pytest.raises(InvalidInput) as caught:
        read_mls(VALID.replace(old, new).encode())
    assert field in _fields(caught.value), caught.value.problems


@pytest.mark.parametrize(
    "data",
    [
        b'<!DOCTYPE x [<!ENTITY a "b">]>' + VALID.split("?>", 1)[1].encode(),
        VALID.encode()[:200],
        b"",
        b'<Invoice xmlns="urn:oasis:names:specification:ubl:schema:xsd:Invoice-2"/>',
        b"<a>" * 100 + b"</a>" * 100,
    ],
    ids=["doctype", "truncated", "empty", "not-an-application-response", "deep"],
)
def test_hostile_or_foreign_documents_are_refused(data: bytes) -> None:
    with pytest.raises(InvalidInput) as caught:
        read_mls(data)
    assert _fields(caught.value) == {ROOT}


# --- the MLS in its own envelope ---------------------------------------------------------------


def test_an_mls_in_its_sbd_reads_back_with_the_mls_document_type_and_process() -> None:
    created = datetime(2026, 1, 2, 10, 6, tzinfo=UTC)
    envelope = mls_envelope(
        REJECTION,
        receiver=C2,
        instance_id="5f0c6f7e-3d0b-4bfa-9f55-3c9d3f1f0b11",
        created_at=created,
        country_c1="BE",
    )
    data = write_sbd(envelope, write_mls(REJECTION))
    read = read_envelope(data)
    assert read == envelope
    assert read.document_type == MLS_DOCUMENT_TYPE
    assert read.process == MLS_PROCESS
    assert read.sender == Identifier("iso6523-actorid-upis", "0242:123456")
    assert read.receiver == C2
    assert (read.standard, read.type, read.type_version) == (
        "urn:oasis:names:specification:ubl:schema:xsd:ApplicationResponse-2",
        "ApplicationResponse",
        "2.1",
    )
    assert read.mls_to is None and read.mls_type is None
    assert read_mls(data) == REJECTION


@given(
    statuses(),
    spids,
    moments,
    st.sampled_from(["BE", "SE", "NO", "DE"]),
    st.uuids().map(str),
)
def test_an_mls_envelope_reads_back_as_made(
    status: MessageLevelStatus, receiver: str, created: datetime, country: str, instance: str
) -> None:
    """The sending worker addresses a status it makes from the envelope it made (it does not
    read back the SBD it wrote): what a receiver reads of that SBD is the same envelope."""
    envelope = mls_envelope(
        status,
        receiver=Identifier("iso6523-actorid-upis", f"0242:{receiver}"),
        instance_id=instance,
        created_at=created,
        country_c1=country,
    )
    assert read_envelope(write_sbd(envelope, write_mls(status))) == envelope


def test_the_mls_constants_are_the_network_values() -> None:
    assert str(MLS_DOCUMENT_TYPE) == (
        "busdox-docid-qns::urn:oasis:names:specification:ubl:schema:xsd:ApplicationResponse-2"
        "::ApplicationResponse##urn:peppol:edec:mls:1.0::2.1"
    )
    assert str(MLS_PROCESS) == "cenbii-procid-ubl::urn:peppol:edec:mls"


def test_an_mls_file_reads_as_its_bytes_and_a_larger_one_is_refused_unread(
    tmp_path: Path,
) -> None:
    data = write_sbd(
        mls_envelope(
            REJECTION,
            receiver=C2,
            instance_id="5f0c6f7e-3d0b-4bfa-9f55-3c9d3f1f0b12",
            created_at=datetime(2026, 1, 2, 10, 6, tzinfo=UTC),
            country_c1="BE",
        ),
        write_mls(REJECTION),
    )
    path = tmp_path / "mls.xml"
    path.write_bytes(data)
    assert read_mls_file(path) == REJECTION
    path.write_bytes(data + b" " * MAX_MLS_BYTES)  # blanks after the root: still well-formed
    with pytest.raises(InvalidInput, match="larger than"):
        read_mls_file(path)
