"""The SBD envelope: write -> read round trips, the network's example invoices, every missing or
malformed header part refused by name, hostile XML refused quickly, and bounded memory."""

from __future__ import annotations

import base64
import hashlib
import re
import subprocess
import sys
import time
import tracemalloc
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from lxml import etree

from fourcorner.adapters.sbdh import parser as parser_module
from fourcorner.adapters.sbdh import read_envelope, read_envelope_file, write_sbd
from fourcorner.adapters.sbdh import reader as reader_module
from fourcorner.adapters.sbdh.header import HEADER, MAX_INSTANCE_IDENTIFIER, SH, scope_field
from fourcorner.adapters.sbdh.parser import Parser
from fourcorner.adapters.sbdh.reader import CAC, CBC, MAX_HEADER_VALUE
from fourcorner.adapters.sbdh.writer import format_date_time
from fourcorner.domain.envelope import Identifier, MlsType, Sbdh
from fourcorner.domain.errors import InvalidInput
from fourcorner.domain.text import QUOTED_LENGTH
from sbd_factory import (
    BASE_EXAMPLE,
    CREDIT_NOTE,
    EXAMPLES,
    INVOICE,
    RECEIVER,
    SENDER,
    make_envelope,
    make_sbd,
)

ROOT = "StandardBusinessDocument"
IDENTIFICATION = f"{HEADER}/DocumentIdentification"
TICC = "http://peppol.eu/xsd/ticc/envelope/1.0"


def fields(error: InvalidInput) -> set[str]:
    return {detail.field for detail in error.problems}


def refused(data: bytes) -> InvalidInput:
    with pytest.raises(InvalidInput) as caught:
        read_envelope(data)
    return caught.value


# --- round trips ------------------------------------------------------------------------------

_ALNUM = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
participants = st.builds(
    lambda icd, local: f"{icd}:{local}",
    st.text("0123456789", min_size=4, max_size=4),
    st.text(_ALNUM + "-._~", min_size=1, max_size=40),
)
spids = st.text("0123456789", min_size=6, max_size=6)
namespaces = st.text(_ALNUM + ":-./", min_size=1, max_size=60).map(lambda s: f"urn:{s}")
local_names = st.builds(
    lambda first, rest: first + rest,
    st.sampled_from("ABCDEFGHIJKLMNOPQRSTUVWXYZ"),
    st.text(_ALNUM + "-_.", max_size=20),
)
versions = st.text("0123456789.", min_size=1, max_size=6)
customizations = st.text(_ALNUM + ":#._-", min_size=1, max_size=80)
instance_ids = st.text(
    st.characters(codec="utf-8", exclude_categories=("Cc", "Cs", "Cn")), min_size=1, max_size=60
).filter(lambda s: s.strip() == s and s != "")
zones = st.integers(-14 * 60, 14 * 60).map(lambda minutes: timezone(timedelta(minutes=minutes)))
moments = st.datetimes(datetime(1900, 1, 1), datetime(2200, 1, 1), timezones=zones)


@st.composite
def envelopes(draw: st.DrawFn) -> Sbdh:
    standard, root, version = draw(namespaces), draw(local_names), draw(versions)
    customization = draw(customizations)
    scheme = draw(st.sampled_from(["busdox-docid-qns", "peppol-doctype-wildcard"]))
    return Sbdh(
        sender=Identifier("iso6523-actorid-upis", draw(participants)),
        receiver=Identifier("iso6523-actorid-upis", draw(participants)),
        instance_identifier=draw(instance_ids),
        standard=standard,
        type_version=version,
        type=root,
        created_at=draw(moments),
        document_type=Identifier(scheme, f"{standard}::{root}##{customization}::{version}"),
        process=Identifier(
            draw(st.sampled_from(["cenbii-procid-ubl", "peppol-procid"])),
            draw(st.text(_ALNUM + ":._-", min_size=1, max_size=100)),
        ),
        country_c1=draw(st.from_regex(r"[A-Z0-9]{2}", fullmatch=True)),
        mls_to=draw(
            st.none() | spids.map(lambda spid: Identifier("iso6523-actorid-upis", f"0242:{spid}"))
        ),
        mls_type=draw(st.none() | st.sampled_from(MlsType)),
    )


def payload_for(envelope: Sbdh) -> bytes:
    return f'<{envelope.type} xmlns="{envelope.standard}"><Line>1</Line></{envelope.type}>'.encode()


@settings(max_examples=150, deadline=None)
@given(envelopes())
def test_what_is_written_reads_back(envelope: Sbdh) -> None:
    assert read_envelope(write_sbd(envelope, payload_for(envelope))) == envelope


@settings(max_examples=60, deadline=None)
@given(
    st.integers(MAX_INSTANCE_IDENTIFIER - 3, MAX_INSTANCE_IDENTIFIER + 3)
    | st.integers(1, MAX_HEADER_VALUE),
    st.sampled_from(["a", "\u00e9", "\u20ac", "\U0001f600"]),
)
def test_an_instance_identifier_is_at_most_255_characters(length: int, char: str) -> None:
    """DocumentIdentification/InstanceIdentifier is stored and indexed (a PostgreSQL index
    entry holds at most 2704 bytes): up to 255 characters, of any width, it is read; a longer
    one is refused, the field named."""
    instance = char * length
    data = make_sbd(instance_id=instance)
    if length <= MAX_INSTANCE_IDENTIFIER:
        assert read_envelope(data).instance_identifier == instance
    else:
        error = refused(data)
        assert fields(error) == {f"{IDENTIFICATION}/InstanceIdentifier"}
        assert "longer than 255 characters" in error.problems[0].problem


def test_a_file_reads_as_the_bytes_do(tmp_path: Path) -> None:
    data = make_sbd(mls_to="0242:123456", mls_type="ALWAYS_SEND", pad_to=3_000_000)
    path = tmp_path / "document.sbd"
    path.write_bytes(data)
    assert read_envelope_file(path) == read_envelope(data)


def test_the_header_follows_the_schema_order_and_the_payload_is_kept_byte_for_byte() -> None:
    envelope = make_envelope(mls_to="0242:123456", mls_type="FAILURE_ONLY")
    payload = BASE_EXAMPLE.read_bytes()
    data = write_sbd(envelope, payload)
    body = payload.split(b"?>", 1)[1].strip()
    assert body in data
    assert data.startswith(b'<?xml version="1.0" encoding="UTF-8"?>')
    names = [
        b"HeaderVersion",
        b"Sender",
        b"Receiver",
        b"DocumentIdentification",
        b"Standard",
        b"TypeVersion",
        b"InstanceIdentifier",
        b"Type",
        b"CreationDateAndTime",
        b"BusinessScope",
    ]
    positions = [data.index(b"<sh:" + name + b">") for name in names]
    assert positions == sorted(positions)
    scopes = [
        data.index(b">" + kind + b"<")
        for kind in (b"DOCUMENTID", b"PROCESSID", b"COUNTRY_C1", b"MLS_TO", b"MLS_TYPE")
    ]
    assert scopes == sorted(scopes)


def test_the_example_documents_are_the_published_bytes() -> None:
    """The copies in ``examples/bis-billing-3/`` are the files its README lists, unchanged."""
    listed = dict(
        re.findall(
            r"^\| `([^`]+\.xml)` \| `([0-9a-f]{64})` \|$",
            (EXAMPLES / "README.md").read_text(),
            re.M,
        )
    )
    found = {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in EXAMPLES.glob("*.xml")}
    assert len(found) == 8 and found == listed


@pytest.mark.parametrize("example", sorted(EXAMPLES.glob("*.xml")), ids=lambda p: p.stem)
def test_every_example_invoice_wraps_and_reads_back(example: Path) -> None:
    payload = example.read_bytes()
    document = CREDIT_NOTE if b"<CreditNote" in payload else INVOICE
    envelope = make_envelope(document=document, mls_to="0242:000001", mls_type="ALWAYS_SEND")
    data = write_sbd(envelope, payload)
    # the header as written, and the buyer's country from the document itself
    codes = etree.fromstring(payload).xpath(
        "/*/cac:AccountingCustomerParty/cac:Party/cac:PostalAddress/cac:Country"
        "/cbc:IdentificationCode/text()",
        namespaces={"cac": CAC, "cbc": CBC},
    )
    assert read_envelope(data) == attrs.evolve(envelope, receiver_country=codes[0] if codes else "")
    assert payload.split(b"?>", 1)[1].strip() in data


def test_missing_scope_schemes_take_their_defaults() -> None:
    data = make_sbd(process=Identifier("cenbii-procid-ubl", "urn:p"))
    data = data.replace(b"<sh:Identifier>busdox-docid-qns</sh:Identifier>", b"")
    data = data.replace(b"<sh:Identifier>cenbii-procid-ubl</sh:Identifier>", b"")
    envelope = read_envelope(data)
    assert envelope.document_type == INVOICE
    assert envelope.process == Identifier("cenbii-procid-ubl", "urn:p")
    assert envelope.mls_to is None and envelope.mls_type is None


def test_an_sbd_in_the_default_namespace_with_reserved_scopes_reads() -> None:
    payload = BASE_EXAMPLE.read_bytes().split(b"?>", 1)[1]
    data = (
        f"""<?xml version="1.0" encoding="UTF-8"?>
<StandardBusinessDocument xmlns="{SH}">
  <StandardBusinessDocumentHeader>
    <HeaderVersion>1.0</HeaderVersion>
    <Sender><Identifier Authority="iso6523-actorid-upis">{SENDER}</Identifier></Sender>
    <Receiver><Identifier Authority="iso6523-actorid-upis">{RECEIVER}</Identifier></Receiver>
    <DocumentIdentification>
      <Standard>urn:oasis:names:specification:ubl:schema:xsd:Invoice-2</Standard>
      <TypeVersion>2.1</TypeVersion>
      <InstanceIdentifier>4b5a1e2c-0000-4000-8000-000000000001</InstanceIdentifier>
      <Type>Invoice</Type>
      <CreationDateAndTime>2026-01-02T10:00:00.5+01:00</CreationDateAndTime>
    </DocumentIdentification>
    <BusinessScope>
      <Scope><Type>DOCUMENTID</Type><InstanceIdentifier>{INVOICE.value}</InstanceIdentifier></Scope>
      <Scope><Type>PROCESSID</Type><InstanceIdentifier>urn:fdc:peppol.eu:2017:poacc:billing:01:1.0</InstanceIdentifier></Scope>
      <Scope><Type>COUNTRY_C1</Type><InstanceIdentifier>BE</InstanceIdentifier></Scope>
      <Scope><Type>COUNTRY_C4</Type><InstanceIdentifier>NO</InstanceIdentifier></Scope>
      <Scope><Type>MLS_TO</Type><InstanceIdentifier>0242:123456</InstanceIdentifier><Identifier>iso6523-actorid-upis</Identifier></Scope>
    </BusinessScope>
  </StandardBusinessDocumentHeader>
  """.encode()
        + payload
        + b"\n</StandardBusinessDocument>\n"
    )
    envelope = read_envelope(data)
    assert envelope.created_at == datetime(2026, 1, 2, 9, 0, 0, 500_000, tzinfo=UTC)
    assert envelope.country_c1 == "BE"
    assert envelope.mls_to == Identifier("iso6523-actorid-upis", "0242:123456")
    assert envelope.sender == Identifier("iso6523-actorid-upis", SENDER)


@pytest.mark.parametrize(
    ("root", "body"),
    [
        ("BinaryContent", base64.b64encode(b"%PDF-1.7 ...").decode()),
        ("TextContent", "plain text, an EDIFACT interchange or CSV"),
    ],
)
def test_non_xml_payloads_are_carried(root: str, body: str) -> None:
    payload = f'<{root} xmlns="{TICC}" mimeType="application/pdf">{body}</{root}>'.encode()
    document = Identifier("busdox-docid-qns", f"{TICC}::{root}##urn:example:binary::1.0")
    envelope = make_envelope(document=document)
    assert read_envelope(write_sbd(envelope, payload)) == envelope


@pytest.mark.parametrize(
    "payload",
    [
        b"",
        b"not xml",
        b"<Invoice><unclosed></Invoice>",
        b'<!DOCTYPE Invoice [<!ENTITY e "x">]><Invoice>&e;</Invoice>',
        b'<?xml version="1.0" encoding="ISO-8859-1"?><Invoice/>',
        b"<a/><b/>",
    ],
    ids=["empty", "text", "malformed", "doctype", "latin-1", "two-roots"],
)
def test_only_a_well_formed_utf8_document_is_wrapped(payload: bytes) -> None:
    with pytest.raises(InvalidInput) as caught:
        write_sbd(make_envelope(), payload)
    assert fields(caught.value) == {"payload"}


def test_an_envelope_is_not_wrapped_in_another() -> None:
    with pytest.raises(InvalidInput) as caught:
        write_sbd(make_envelope(), make_sbd())
    assert fields(caught.value) == {"payload"}


def test_a_payload_without_a_namespace_keeps_none_inside_the_envelope() -> None:
    envelope = make_envelope(document=Identifier("busdox-docid-qns", "::Plain##urn:x::1.0"))
    data = write_sbd(envelope, b"<Plain><Child/></Plain>")
    assert b"<Plain><Child/></Plain></sh:StandardBusinessDocument>" in data


def test_format_date_time_keeps_whole_minute_offsets_and_makes_others_utc() -> None:
    plus_one = timezone(timedelta(hours=1))
    assert (
        format_date_time(datetime(2026, 1, 2, 10, tzinfo=plus_one)) == "2026-01-02T10:00:00+01:00"
    )
    odd = timezone(timedelta(minutes=9, seconds=21))
    assert format_date_time(datetime(2026, 1, 2, 10, tzinfo=odd)) == "2026-01-02T09:50:39Z"
    assert format_date_time(datetime(2026, 1, 2, 10)) == "2026-01-02T10:00:00Z"


# --- every part, missing or malformed -----------------------------------------------------------

VALID = make_sbd(
    instance_id="0b8a3f4e-8c1e-4d0a-9a43-53a2d3f1e0aa",
    created_at=datetime(2026, 1, 2, 10, tzinfo=UTC),
    country_c1="Q7",
    mls_to="0242:123456",
    mls_type="ALWAYS_SEND",
)
_SENDER = f'<sh:Sender><sh:Identifier Authority="iso6523-actorid-upis">{SENDER}</sh:Identifier></sh:Sender>'
_RECEIVER = f'<sh:Receiver><sh:Identifier Authority="iso6523-actorid-upis">{RECEIVER}</sh:Identifier></sh:Receiver>'
_DOCUMENT_SCOPE = (
    f"<sh:Scope><sh:Type>DOCUMENTID</sh:Type><sh:InstanceIdentifier>{INVOICE.value}"
    "</sh:InstanceIdentifier><sh:Identifier>busdox-docid-qns</sh:Identifier></sh:Scope>"
)
_BILLING = "urn:fdc:peppol.eu:2017:poacc:billing:01:1.0"
_PROCESS_SCOPE = (
    f"<sh:Scope><sh:Type>PROCESSID</sh:Type><sh:InstanceIdentifier>{_BILLING}"
    "</sh:InstanceIdentifier><sh:Identifier>cenbii-procid-ubl</sh:Identifier></sh:Scope>"
)
_COUNTRY_SCOPE = "<sh:Scope><sh:Type>COUNTRY_C1</sh:Type><sh:InstanceIdentifier>Q7</sh:InstanceIdentifier></sh:Scope>"
_MLS_TO_SCOPE = (
    "<sh:Scope><sh:Type>MLS_TO</sh:Type><sh:InstanceIdentifier>0242:123456</sh:InstanceIdentifier>"
    "<sh:Identifier>iso6523-actorid-upis</sh:Identifier></sh:Scope>"
)
_MLS_TYPE = "<sh:InstanceIdentifier>ALWAYS_SEND</sh:InstanceIdentifier>"
_STANDARD = "<sh:Standard>urn:oasis:names:specification:ubl:schema:xsd:Invoice-2</sh:Standard>"
_INSTANCE = "<sh:InstanceIdentifier>0b8a3f4e-8c1e-4d0a-9a43-53a2d3f1e0aa</sh:InstanceIdentifier>"
_CREATED = "<sh:CreationDateAndTime>2026-01-02T10:00:00Z</sh:CreationDateAndTime>"
_DOCUMENT_ID = f"<sh:InstanceIdentifier>{INVOICE.value}</sh:InstanceIdentifier>"

# (id, text in VALID, replacement, the field named)
MUTATIONS = [
    (
        "version-wrong",
        "<sh:HeaderVersion>1.0<",
        "<sh:HeaderVersion>2.0<",
        f"{HEADER}/HeaderVersion",
    ),
    ("version-missing", "<sh:HeaderVersion>1.0</sh:HeaderVersion>", "", f"{HEADER}/HeaderVersion"),
    ("sender-missing", _SENDER, "", f"{HEADER}/Sender"),
    ("sender-twice", _SENDER, _SENDER * 2, f"{HEADER}/Sender"),
    (
        "sender-identifier-missing",
        _SENDER,
        "<sh:Sender></sh:Sender>",
        f"{HEADER}/Sender/Identifier",
    ),
    ("sender-empty", f">{SENDER}<", "><", f"{HEADER}/Sender/Identifier"),
    (
        "sender-with-scheme",
        f">{SENDER}<",
        f">iso6523-actorid-upis::{SENDER}<",
        f"{HEADER}/Sender/Identifier",
    ),
    ("sender-malformed", f">{SENDER}<", ">0088 7300010000001<", f"{HEADER}/Sender/Identifier"),
    (
        "sender-authority-missing",
        _SENDER,
        f"<sh:Sender><sh:Identifier>{SENDER}</sh:Identifier></sh:Sender>",
        f"{HEADER}/Sender/Identifier/@Authority",
    ),
    (
        "sender-authority-wrong",
        _SENDER,
        _SENDER.replace("iso6523-actorid-upis", "GLN"),
        f"{HEADER}/Sender/Identifier/@Authority",
    ),
    ("sender-after-receiver", _SENDER + _RECEIVER, _RECEIVER + _SENDER, f"{HEADER}/Sender"),
    ("receiver-missing", _RECEIVER, "", f"{HEADER}/Receiver"),
    ("receiver-twice", _RECEIVER, _RECEIVER * 2, f"{HEADER}/Receiver"),
    ("receiver-malformed", f">{RECEIVER}<", ">5790000435975<", f"{HEADER}/Receiver/Identifier"),
    (
        "receiver-authority-wrong",
        _RECEIVER,
        _RECEIVER.replace("iso6523-actorid-upis", "iso6523"),
        f"{HEADER}/Receiver/Identifier/@Authority",
    ),
    (
        "unknown-header-element",
        "<sh:DocumentIdentification>",
        "<sh:Extra/><sh:DocumentIdentification>",
        f"{HEADER}/Extra",
    ),
    ("identification-missing", "<sh:DocumentIdentification>", "<sh:Ignored>", IDENTIFICATION),
    ("standard-missing", _STANDARD, "", f"{IDENTIFICATION}/Standard"),
    (
        "standard-not-the-namespace",
        "xsd:Invoice-2</sh:Standard>",
        "xsd:Invoice-3</sh:Standard>",
        f"{IDENTIFICATION}/Standard",
    ),
    (
        "type-version-missing",
        "<sh:TypeVersion>2.1</sh:TypeVersion>",
        "",
        f"{IDENTIFICATION}/TypeVersion",
    ),
    (
        "type-version-not-the-end",
        "<sh:TypeVersion>2.1<",
        "<sh:TypeVersion>2.2<",
        f"{IDENTIFICATION}/TypeVersion",
    ),
    (
        "type-version-with-colon",
        "<sh:TypeVersion>2.1<",
        "<sh:TypeVersion>:2.1<",
        f"{IDENTIFICATION}/TypeVersion",
    ),
    ("instance-missing", _INSTANCE, "", f"{IDENTIFICATION}/InstanceIdentifier"),
    (
        "instance-empty",
        _INSTANCE,
        "<sh:InstanceIdentifier> </sh:InstanceIdentifier>",
        f"{IDENTIFICATION}/InstanceIdentifier",
    ),
    ("type-missing", "<sh:Type>Invoice</sh:Type>", "", f"{IDENTIFICATION}/Type"),
    ("type-not-the-root", "<sh:Type>Invoice<", "<sh:Type>CreditNote<", f"{IDENTIFICATION}/Type"),
    ("created-missing", _CREATED, "", f"{IDENTIFICATION}/CreationDateAndTime"),
    ("created-without-zone", "10:00:00Z<", "10:00:00<", f"{IDENTIFICATION}/CreationDateAndTime"),
    (
        "created-malformed",
        "2026-01-02T10:00:00Z<",
        "2026-02-30T10:00:00Z<",
        f"{IDENTIFICATION}/CreationDateAndTime",
    ),
    (
        "created-non-ascii-digits",  # xs:dateTime digits are 0-9 only, not full-width ones
        "2026-01-02T10:00:00Z<",
        "\uff12\uff10\uff12\uff16-01-02T10:00:00Z<",
        f"{IDENTIFICATION}/CreationDateAndTime",
    ),
    ("created-twice", _INSTANCE, _CREATED + _INSTANCE, f"{IDENTIFICATION}/CreationDateAndTime"),
    ("business-scope-missing", "<sh:BusinessScope>", "<sh:Other>", f"{HEADER}/BusinessScope"),
    ("documentid-missing", _DOCUMENT_SCOPE, "", scope_field("DOCUMENTID")),
    ("documentid-twice", _DOCUMENT_SCOPE, _DOCUMENT_SCOPE * 2, scope_field("DOCUMENTID")),
    (
        "documentid-empty",
        _DOCUMENT_ID,
        "<sh:InstanceIdentifier/>",
        f"{scope_field('DOCUMENTID')}/InstanceIdentifier",
    ),
    (
        "documentid-scheme-in-the-interfaces-spelling",
        "<sh:Identifier>busdox-docid-qns</sh:Identifier>",
        "<sh:Identifier>net-doctype-wildcard</sh:Identifier>",
        f"{scope_field('DOCUMENTID')}/Identifier",
    ),
    (
        "documentid-wildcard",
        _DOCUMENT_ID,
        _DOCUMENT_ID.replace("::2.1", "*::2.1"),
        f"{scope_field('DOCUMENTID')}/InstanceIdentifier",
    ),
    (
        "documentid-other-standard",
        _DOCUMENT_ID,
        _DOCUMENT_ID.replace("Invoice-2::", "Invoice-3::"),
        f"{IDENTIFICATION}/Standard",
    ),
    (
        "documentid-scheme-empty",
        "<sh:Identifier>busdox-docid-qns<",
        "<sh:Identifier><",
        f"{scope_field('DOCUMENTID')}/Identifier",
    ),
    ("processid-missing", _PROCESS_SCOPE, "", scope_field("PROCESSID")),
    (
        "processid-with-space",
        f"<sh:InstanceIdentifier>{_BILLING}<",
        "<sh:InstanceIdentifier>urn:fdc billing<",
        f"{scope_field('PROCESSID')}/InstanceIdentifier",
    ),
    (
        "processid-value-missing",
        f"<sh:InstanceIdentifier>{_BILLING}</sh:InstanceIdentifier>",
        "",
        f"{scope_field('PROCESSID')}/InstanceIdentifier",
    ),
    ("country-missing", _COUNTRY_SCOPE, "", scope_field("COUNTRY_C1")),
    ("country-lower-case", ">Q7<", ">q7<", f"{scope_field('COUNTRY_C1')}/InstanceIdentifier"),
    ("country-three-letters", ">Q7<", ">SWE<", f"{scope_field('COUNTRY_C1')}/InstanceIdentifier"),
    (
        "mls-to-without-scheme",
        "0242:123456</sh:InstanceIdentifier><sh:Identifier>iso6523-actorid-upis</sh:Identifier>",
        "0242:123456</sh:InstanceIdentifier>",
        f"{scope_field('MLS_TO')}/Identifier",
    ),
    (
        "mls-to-other-scheme",
        _MLS_TO_SCOPE,
        _MLS_TO_SCOPE.replace(">iso6523-actorid-upis<", ">GLN<"),
        f"{scope_field('MLS_TO')}/Identifier",
    ),
    (
        "mls-to-malformed",
        ">0242:123456<",
        ">123456<",
        f"{scope_field('MLS_TO')}/InstanceIdentifier",
    ),
    (
        "mls-type-unknown",
        _MLS_TYPE,
        "<sh:InstanceIdentifier>SOMETIMES</sh:InstanceIdentifier>",
        f"{scope_field('MLS_TYPE')}/InstanceIdentifier",
    ),
    (
        "scope-without-type",
        "<sh:Type>COUNTRY_C1</sh:Type>",
        "",
        f"{HEADER}/BusinessScope/Scope[3]/Type",
    ),
    ("header-missing", "<sh:StandardBusinessDocumentHeader>", "<sh:Wrong>", HEADER),
]


@pytest.mark.parametrize(
    ("old", "new", "field"), [m[1:] for m in MUTATIONS], ids=[m[0] for m in MUTATIONS]
)
def test_each_missing_or_malformed_part_is_refused_by_name(old: str, new: str, field: str) -> None:
    assert VALID.count(old.encode()) == 1, old
    assert field in fields(refused(_mutated(old, new)))


def test_every_problem_of_a_header_is_reported_at_once() -> None:
    data = VALID.replace(b"<sh:HeaderVersion>1.0<", b"<sh:HeaderVersion>1.1<")
    data = data.replace(b">Q7<", b">Sweden<").replace(b"10:00:00Z<", b"10:00:00<")
    error = refused(data)
    assert {
        f"{HEADER}/HeaderVersion",
        f"{scope_field('COUNTRY_C1')}/InstanceIdentifier",
        f"{IDENTIFICATION}/CreationDateAndTime",
    } <= fields(error)
    assert error.code == "AT-1001"


# where a header's value goes (``{}``), each part of the header a problem names it in
LONG_VALUES = [
    ('Authority="iso6523-actorid-upis">0088:7300010000001<', 'Authority="{}">0088:7300010000001<'),
    (">0088:7300010000001</sh:Identifier></sh:Sender>", ">{}</sh:Identifier></sh:Sender>"),
    ("<sh:HeaderVersion>1.0<", "<sh:HeaderVersion>{}<"),
    ("<sh:Standard>urn:oasis:names:specification:ubl:schema:xsd:Invoice-2<", "<sh:Standard>{}<"),
    (">2026-01-02T10:00:00Z<", ">{}<"),
    (">Q7<", ">{}<"),
    (">busdox-docid-qns<", ">{}<"),
    (">ALWAYS_SEND<", ">{}<"),
    ("<sh:Type>Invoice</sh:Type>", "<sh:Type>Invoice</sh:Type><sh:X{0}>1</sh:X{0}>"),
]
ANSWER_BOUND = 300  # characters of a field or a problem, whatever the value was


@settings(max_examples=60, deadline=None)
@given(
    st.sampled_from(LONG_VALUES),
    st.integers(QUOTED_LENGTH - 2, MAX_HEADER_VALUE),
    st.sampled_from(["x", "\u00e9", "\U0001f600"]),
)
def test_a_problem_quotes_a_long_value_bounded(
    where: tuple[str, str], length: int, char: str
) -> None:
    """A problem with a value of the header quotes it, up to ``QUOTED_LENGTH`` characters of
    it and its length: the answer (a 400's details, the error signal of a received message)
    never repeats a long value back, however long it is."""
    old, new = where
    named = "<sh:X{0}>" in new  # the value is an element's name
    value = "y" * length if named else (char * length)[: length - 2] + " :"
    assert VALID.count(old.encode()) == 1, old
    error = refused(VALID.replace(old.encode(), new.format(value).encode()))
    for detail in error.problems:
        assert len(detail.field) <= ANSWER_BOUND and len(detail.problem) <= ANSWER_BOUND
        assert value not in detail.field + detail.problem or length <= QUOTED_LENGTH
    assert len(error.message()) <= 2 * ANSWER_BOUND


_INVOICE = b"<Invoice xmlns='urn:oasis:names:specification:ubl:schema:xsd:Invoice-2'>"


def _body(payload: bytes) -> bytes:
    start = VALID.index(b"</sh:StandardBusinessDocumentHeader>") + len(
        b"</sh:StandardBusinessDocumentHeader>"
    )
    return VALID[:start] + payload + b"</sh:StandardBusinessDocument>"


@pytest.mark.parametrize(
    ("data", "field"),
    [
        (BASE_EXAMPLE.read_bytes(), ROOT),  # a bare invoice, no envelope
        (_body(b""), ROOT),  # no business document
        (
            _body(_INVOICE + b"</Invoice>" + _INVOICE + b"</Invoice>"),
            ROOT,
        ),  # two business documents
        (_body(VALID.split(b"?>", 1)[1]), ROOT),  # an envelope in an envelope
        (
            _body(b"<Invoice xmlns='urn:oasis:names:specification:ubl:schema:xsd:Invoice-2'/>text"),
            ROOT,
        ),
        (
            _body(f"<BinaryContent xmlns='{TICC}'>AAAA</BinaryContent>".encode()),
            f"{ROOT}/BinaryContent/@mimeType",
        ),
    ],
    ids=[
        "bare-invoice",
        "no-payload",
        "two-payloads",
        "nested-envelope",
        "text-after",
        "binary-without-mime-type",
    ],
)
def test_the_body_of_the_envelope_is_checked(data: bytes, field: str) -> None:
    assert field in fields(refused(data))


def test_binary_content_must_be_base64() -> None:
    payload = (
        f'<BinaryContent xmlns="{TICC}" mimeType="application/pdf">not base64!</BinaryContent>'
    )
    document = Identifier("busdox-docid-qns", f"{TICC}::BinaryContent##urn:example:binary::1.0")
    data = write_sbd(make_envelope(document=document), payload.encode())
    assert fields(refused(data)) == {f"{ROOT}/BinaryContent"}


# --- hostile documents ----------------------------------------------------------------------------

_HEAD = VALID[: VALID.index(b"</sh:StandardBusinessDocumentHeader>")]
_LAUGHS = b"".join(
    b'<!ENTITY lol%d "%s">'
    % (i, b"".join(b"&lol%d;" % (i - 1) for _ in range(10)) if i else b"lol")
    for i in range(10)
)


def _attacks() -> Iterator[tuple[str, bytes, str]]:
    """``(id, document, the field named)``: each must be refused at once."""
    yield (
        "billion-laughs",
        b"<?xml version='1.0'?><!DOCTYPE lolz [" + _LAUGHS + b"]><lolz>&lol9;</lolz>",
        ROOT,
    )
    blob = b"A" * 100_000
    yield (
        "quadratic-blowup",
        b'<!DOCTYPE q [<!ENTITY a "' + blob + b'">]><q>' + b"&a;" * 100_000 + b"</q>",
        ROOT,
    )
    yield (
        "external-entity",
        b'<!DOCTYPE x [<!ENTITY xxe SYSTEM "file:///etc/passwd">]><x>&xxe;</x>',
        ROOT,
    )
    yield (
        "external-dtd",
        b'<?xml version="1.0"?><!DOCTYPE x SYSTEM "http://127.0.0.1:1/evil.dtd"><x/>',
        ROOT,
    )
    yield (
        "parameter-entity",
        b'<!DOCTYPE x [<!ENTITY % p SYSTEM "http://127.0.0.1:1/p.dtd"> %p;]><x/>',
        ROOT,
    )
    yield "doctype-after-bom-and-comment", b"\xef\xbb\xbf<!-- hi --><!DOCTYPE x><x/>", ROOT
    yield "deep-nesting", _body(_INVOICE + b"<a>" * 10_000 + b"</a>" * 10_000 + b"</Invoice>"), ROOT
    yield "deep-nesting-in-the-header", _HEAD + b"<sh:Manifest>" + b"<a>" * 10_000, ROOT
    yield (
        "huge-attribute",
        _HEAD.replace(b"<sh:HeaderVersion>", b'<sh:HeaderVersion x="' + b"A" * 5_000_000 + b'">')
        + b"</sh:StandardBusinessDocumentHeader>",
        f"{HEADER}/HeaderVersion/@x",
    )
    yield (
        "huge-header-text",
        _HEAD.replace(b">Q7<", b">" + b"S" * 5_000_000 + b"<"),
        f"{HEADER}/BusinessScope/Scope/InstanceIdentifier",
    )
    yield "undeclared-entity", _body(_INVOICE + b"&xxe;</Invoice>"), ROOT
    yield "invalid-utf8-in-header", VALID.replace(b">Q7<", b">S\xff<"), ROOT
    yield "invalid-utf8-in-payload", VALID.replace(b"Snippet1", b"Snip\xc3\x28et1"), ROOT
    yield "latin-1", b'<?xml version="1.0" encoding="ISO-8859-1"?>' + VALID.split(b"?>", 1)[1], ROOT
    yield "utf-16", VALID.decode().replace("UTF-8", "UTF-16").encode("utf-16"), ROOT
    yield "truncated", VALID[: len(VALID) // 2], ROOT
    yield "empty", b"", ROOT
    yield "only-whitespace", b"  \n ", ROOT
    yield "endless-prolog", b"<!--" + b"-" * 10 + b" " * 100_000 + b"-->", ROOT


ATTACKS = list(_attacks())


@pytest.mark.parametrize(("data", "field"), [a[1:] for a in ATTACKS], ids=[a[0] for a in ATTACKS])
def test_hostile_documents_are_refused_quickly_with_little_memory(data: bytes, field: str) -> None:
    tracemalloc.start()
    try:
        started = time.perf_counter()
        error = refused(data)
        elapsed = time.perf_counter() - started
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert field in fields(error), error.problems
    assert elapsed < 1.0
    assert peak < 2_000_000 + len(data)


def test_a_doctype_is_refused_however_the_bytes_arrive() -> None:
    class Nothing:
        def start(self, element: object, depth: int) -> None:
            raise AssertionError("no element may be reported")

        def end(self, element: object, depth: int) -> None:
            raise AssertionError("no element may be reported")

    parser = Parser(Nothing(), field=ROOT, max_depth=64)
    document = b'<?xml version="1.0"?>\n<!-- x --><!DOCTYPE x [<!ENTITY a "b">]><x>&a;</x>'
    with pytest.raises(InvalidInput, match="DOCTYPE"):
        for byte in document:
            parser.feed(bytes([byte]))


def test_a_document_fed_a_byte_at_a_time_reads_as_a_whole() -> None:
    seen: list[tuple[str, int]] = []

    class Record:
        def start(self, element: object, depth: int) -> None:
            seen.append(("start", depth))

        def end(self, element: object, depth: int) -> None:
            seen.append(("end", depth))

    parser = Parser(Record(), field=ROOT, max_depth=64)
    for byte in b'\xef\xbb\xbf<?xml version="1.0" encoding="utf-8"?><!-- c --><a><b/></a>':
        parser.feed(bytes([byte]))
    parser.close()
    assert seen == [("start", 1), ("start", 2), ("end", 2), ("end", 1)]


def test_the_depth_limit_can_be_set() -> None:
    nested = _body(_INVOICE + b"<b>" * 20 + b"</b>" * 20 + b"</Invoice>")
    with pytest.raises(InvalidInput, match="deeper than 16"):
        read_envelope(nested, max_depth=16)


# --- size -----------------------------------------------------------------------------------------

BIG = 50_000_000


@pytest.fixture(scope="module")
def big_sbd() -> bytes:
    return make_sbd(pad_to=BIG)


def test_pad_to_makes_documents_of_about_that_size() -> None:
    for size in (10_000, 1_000_000):
        assert abs(len(make_sbd(pad_to=size)) - size) <= max(1_000, size // 100)


def test_a_50_mb_document_parses_in_memory_well_under_its_size(big_sbd: bytes) -> None:
    assert abs(len(big_sbd) - BIG) < 100_000
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        envelope = read_envelope(big_sbd)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert envelope.type == "Invoice"
    assert peak <= len(big_sbd)  # in practice well under 1 MB: nothing but the header is kept


_MEASURE = """
import resource, sys
from fourcorner.adapters.sbdh import read_envelope_file
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
read_envelope_file(sys.argv[1])
print((resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) * 1024)
"""


def test_a_document_of_many_elements_is_freed_as_it_streams(tmp_path: Path) -> None:
    """tracemalloc does not see libxml2's own memory; the peak resident size of a process of
    its own does. 15 MB of elements, kept whole, would take about 90 MB."""
    base = BASE_EXAMPLE.read_bytes()
    end = base.rfind(b"</")
    line = (
        b'<cac:AdditionalDocumentReference><cbc:ID schemeID="x">%d</cbc:ID>'
        b"<cbc:DocumentDescription>padding padding</cbc:DocumentDescription>"
        b"</cac:AdditionalDocumentReference>\n"
    )
    payload = base[:end] + b"".join(line % i for i in range(100_000)) + base[end:]
    path = tmp_path / "many.sbd"
    path.write_bytes(make_sbd(payload=payload))
    size = path.stat().st_size
    result = subprocess.run(
        [sys.executable, "-c", _MEASURE, str(path)], capture_output=True, text=True, check=True
    )
    assert size > 12_000_000
    assert int(result.stdout) < size // 2


# --- a small document read as one tree ------------------------------------------------------------


def _outcome(data: bytes) -> Sbdh | list[tuple[str, str]]:
    try:
        return read_envelope(data)
    except InvalidInput as e:
        return [(d.field, d.problem) for d in e.problems]


def _mutated(old: str, new: str) -> bytes:
    """``VALID`` with one part changed (``MUTATIONS``)."""
    data = VALID.replace(old.encode(), new.encode())
    if new.startswith("<sh:Wrong>"):
        data = data.replace(b"</sh:StandardBusinessDocumentHeader>", b"</sh:Wrong>")
    for tag in ("Ignored", "Other"):
        if f"<sh:{tag}>" in new:
            closing = {"Ignored": b"DocumentIdentification", "Other": b"BusinessScope"}[tag]
            data = data.replace(b"</sh:" + closing + b">", f"</sh:{tag}>".encode())
    return data


def _buyer(*codes: bytes) -> bytes:
    """An SBD whose invoice names a buyer's address for each of ``codes`` (a country code, or
    None for an address without one), in order."""
    parties = b"".join(
        b"<cac:Party><cac:PostalAddress><cac:Country>"
        + (b"<cbc:IdentificationCode> %s </cbc:IdentificationCode>" % code if code else b"")
        + b"</cac:Country></cac:PostalAddress></cac:Party>"
        for code in codes
    )
    payload = (
        b"<Invoice xmlns='urn:oasis:names:specification:ubl:schema:xsd:Invoice-2'"
        b" xmlns:cac='%s' xmlns:cbc='%s'><cac:AccountingCustomerParty>%s"
        b"</cac:AccountingCustomerParty></Invoice>" % (CAC.encode(), CBC.encode(), parties)
    )
    return make_sbd(payload=payload)


WHOLE_CASES = {
    "valid": VALID,
    "base-example": make_sbd(payload=BASE_EXAMPLE.read_bytes()),
    "mls": make_sbd(mls_to="0242:123456", mls_type="ALWAYS_SEND"),
    "padded": make_sbd(pad_to=200_000),
    "bom-comment-pi": b"\xef\xbb\xbf<!-- c --><?pi x?>" + VALID.split(b"?>", 1)[1],
    "buyer-second-code": _buyer(b"x1", b"NO"),
    "buyer-none": _buyer(None, b"se"),
    "buyer-first": _buyer(b"DK", b"NO"),
    "too-deep-for-16": _body(_INVOICE + b"<b>" * 20 + b"</b>" * 20 + b"</Invoice>"),
    **{f"mutation-{m[0]}": _mutated(*m[1:3]) for m in MUTATIONS},
    **{f"attack-{a[0]}": a[1] for a in ATTACKS},
    "bare-invoice": BASE_EXAMPLE.read_bytes(),
    "no-payload": _body(b""),
    "two-payloads": _body(_INVOICE + b"</Invoice>" + _INVOICE + b"</Invoice>"),
    "nested-envelope": _body(VALID.split(b"?>", 1)[1]),
    "text-after": _body(_INVOICE.replace(b">", b"/>") + b"text"),
    "text-before-payload": _body(b"x" + _INVOICE + b"</Invoice>"),
    "binary-not-base64": write_sbd(
        make_envelope(
            document=Identifier("busdox-docid-qns", f"{TICC}::BinaryContent##urn:example:b::1.0")
        ),
        f'<BinaryContent xmlns="{TICC}" mimeType="a/b">not base64!</BinaryContent>'.encode(),
    ),
}


@pytest.mark.parametrize("name", sorted(WHOLE_CASES))
def test_a_small_document_read_whole_answers_as_the_stream(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = WHOLE_CASES[name]
    for depth in (64, 16):
        whole = _outcome(data) if depth == 64 else _depth_outcome(data, depth)
        with monkeypatch.context() as patched:
            patched.setattr(parser_module, "WHOLE_LIMIT", -1)
            streamed = _outcome(data) if depth == 64 else _depth_outcome(data, depth)
        assert whole == streamed, (name, depth)
    if not isinstance(_outcome(data), list) and len(data) <= reader_module.WHOLE_LIMIT:
        assert reader_module._whole(data, 64) is not None, name  # read as one tree


def _depth_outcome(data: bytes, depth: int) -> Sbdh | list[tuple[str, str]]:
    try:
        return read_envelope(data, max_depth=depth)
    except InvalidInput as e:
        return [(d.field, d.problem) for d in e.problems]


def test_the_buyers_country_read_whole_is_the_first_two_capital_letters() -> None:
    countries = [
        read_envelope(_buyer(*codes)).receiver_country
        for codes in ((b"x1", b"NO"), (None, b"se"), (b"DK", b"NO"), (None,))
    ]
    assert countries == ["NO", "", "DK", ""]


@settings(max_examples=100, deadline=None)
@given(envelopes())
def test_a_written_envelope_reads_the_same_whole_and_streamed(envelope: Sbdh) -> None:
    data = write_sbd(envelope, payload_for(envelope))
    whole = reader_module._whole(data, 64)
    handler = reader_module._SbdHandler()
    parser = Parser(handler, field=ROOT, max_depth=64)
    parser.feed(data)
    parser.close()
    assert whole == reader_module._finish(handler) == envelope


def test_a_small_file_is_not_streamed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("streamed")

    path = tmp_path / "document.sbd"
    path.write_bytes(make_sbd(payload=BASE_EXAMPLE.read_bytes()))
    monkeypatch.setattr(reader_module, "Parser", refuse)
    assert read_envelope_file(path).receiver_country == "SE"


def test_a_small_document_of_too_many_tags_is_streamed_and_answers_the_same(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A tree costs libxml2 far more an element than the stream holds: under a megabyte of
    bare tags (hostile or not) past ``WHOLE_MARKUP`` is streamed, with the same answer."""
    tags = parser_module.WHOLE_MARKUP
    payload = BASE_EXAMPLE.read_bytes().replace(
        b"</Invoice>", b"<x:a xmlns:x='urn:x'>" + b"<b/>" * tags + b"</x:a></Invoice>"
    )
    data = make_sbd(payload=payload)
    assert len(data) <= parser_module.WHOLE_LIMIT
    assert parser_module.parse_whole(data, field=ROOT, max_depth=64) is None
    under = make_sbd(payload=BASE_EXAMPLE.read_bytes())
    assert parser_module.parse_whole(under, field=ROOT, max_depth=64) is not None
    streamed = _outcome(data)
    assert not isinstance(streamed, list)
    monkeypatch.setattr(parser_module, "WHOLE_MARKUP", 2 * tags)
    assert parser_module.parse_whole(data, field=ROOT, max_depth=64) is not None
    assert _outcome(data) == streamed


@settings(max_examples=60, deadline=None)
@given(size=st.integers(0, 96), limit=st.integers(0, 64), grown=st.integers(0, 64))
def test_read_small_gives_a_file_of_at_most_limit_bytes_whole(
    tmp_path_factory: pytest.TempPathFactory, size: int, limit: int, grown: int
) -> None:
    path = tmp_path_factory.mktemp("small") / "doc.xml"
    data = bytes(range(size))
    path.write_bytes(data)
    assert parser_module.read_small(path, limit) == (data if size <= limit else None)
    # a file that grows after its size was taken is read to its end, or refused past limit
    real_fstat = parser_module.os.fstat

    def stale(fd: int) -> object:
        taken = real_fstat(fd)
        path.write_bytes(data + b"x" * grown)
        return taken

    parser_module.os.fstat = stale  # type: ignore[assignment]
    try:
        got = parser_module.read_small(path, limit)
    finally:
        parser_module.os.fstat = real_fstat
    now = data + b"x" * grown
    if size <= limit:
        assert got == (now if len(now) <= limit else None)
    else:
        assert got is None
