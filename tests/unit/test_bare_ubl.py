"""Bare UBL documents: the SBDH built from a UBL Invoice or CreditNote (``domain.ubl``), the
streaming read of what it is built from and the SBD written around the document's exact bytes
(``adapters.sbdh.wrap``), read back by the hardened SBD reader."""

from __future__ import annotations

import subprocess
import sys
import tempfile
from datetime import UTC, datetime
from pathlib import Path
from xml.sax.saxutils import escape

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fourcorner.adapters.codelists import load_catalogue
from fourcorner.adapters.sbdh.reader import read_envelope_file
from fourcorner.adapters.sbdh.wrap import read_bare, read_bare_file, wrap, wrap_file
from fourcorner.domain.envelope import MlsType
from fourcorner.domain.errors import InvalidInput
from fourcorner.domain.ubl import Endpoint, MlsRequest, UblFacts, is_ubl_billing, ubl_envelope
from fourcorner.entrypoints.harness.strategies import BILLING_PROCESS, billing_documents

CATALOGUE = load_catalogue()
ICDS = sorted(s.iso6523 for s in CATALOGUE.schemes)
CAC = "urn:oasis:names:specification:ubl:schema:xsd:CommonAggregateComponents-2"
CBC = "urn:oasis:names:specification:ubl:schema:xsd:CommonBasicComponents-2"
NAMESPACES = {
    "Invoice": "urn:oasis:names:specification:ubl:schema:xsd:Invoice-2",
    "CreditNote": "urn:oasis:names:specification:ubl:schema:xsd:CreditNote-2",
}
EXAMPLE_SBD = Path(__file__).resolve().parents[2] / "examples" / "invoice.sbd.xml"
NOW = datetime(2026, 11, 25, 12, 0, tzinfo=UTC)


def known(icd: str) -> bool:
    return CATALOGUE.scheme_by_icd(icd) is not None


_urn = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789:.#-_", min_size=1, max_size=60)
_local = st.text(
    alphabet="ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789",
    min_size=1,
    max_size=30,
)
_country = st.text(alphabet="ABCDEFGHIJKLMNOPQRSTUVWXYZ", min_size=2, max_size=2)
_note = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs", "Cc")), max_size=40)


def _party(role: str, icd: str, local: str, country: str, *, decoys: bool) -> str:
    decoy = (
        # a party's other identifiers and addresses are not its endpoint or its country
        f'<cac:PartyIdentification><cbc:ID schemeID="0088">{local}9</cbc:ID></cac:PartyIdentification>'
        if decoys
        else ""
    )
    return (
        f"<cac:{role}><cac:Party>"
        f'<cbc:EndpointID schemeID="{icd}">{local}</cbc:EndpointID>{decoy}'
        f"<cac:PostalAddress><cbc:StreetName>Main</cbc:StreetName>"
        f"<cac:Country><cbc:IdentificationCode>{country}</cbc:IdentificationCode></cac:Country>"
        f"</cac:PostalAddress></cac:Party></cac:{role}>"
    )


@st.composite
def invoices(draw: st.DrawFn) -> tuple[bytes, dict[str, str]]:
    """A UBL Invoice or CreditNote (prefixed or not, with or without a BOM, declaration,
    UBLVersionID, decoy elements of the same names elsewhere) and what its SBDH must say."""
    root = draw(st.sampled_from(sorted(NAMESPACES)))
    ns = NAMESPACES[root]
    prefix = draw(st.sampled_from(["", "doc:"]))
    binding = f'xmlns:doc="{ns}"' if prefix else f'xmlns="{ns}"'
    facts = {
        "root": root,
        "customization": draw(_urn),
        "profile": draw(_urn),
        "supplier_icd": draw(st.sampled_from(ICDS)),
        "supplier": draw(_local),
        "customer_icd": draw(st.sampled_from(ICDS)),
        "customer": draw(_local),
        "country": draw(_country),
        "buyer_country": draw(_country),
    }
    version = draw(st.none() | st.sampled_from(["2.1", "2.2", "2.3"]))
    facts["version"] = version or "2.1"
    decoys = draw(st.booleans())
    notes = "".join(f"<cbc:Note>{escape(n)}</cbc:Note>" for n in draw(st.lists(_note, max_size=3)))
    delivery = (
        # another Country/IdentificationCode and EndpointID, not under the supplier's party
        "<cac:Delivery><cac:DeliveryLocation><cac:Address><cac:Country>"
        "<cbc:IdentificationCode>ZZ</cbc:IdentificationCode></cac:Country></cac:Address>"
        '</cac:DeliveryLocation><cac:DeliveryParty><cbc:EndpointID schemeID="0088">1</cbc:EndpointID>'
        "</cac:DeliveryParty></cac:Delivery>"
        if decoys
        else ""
    )
    body = (
        f'<{prefix}{root} xmlns:cac="{CAC}" xmlns:cbc="{CBC}" {binding}>'
        + (f"<cbc:UBLVersionID>{version}</cbc:UBLVersionID>" if version else "")
        + f"<cbc:CustomizationID>{escape(facts['customization'])}</cbc:CustomizationID>"
        + f"<cbc:ProfileID>{escape(facts['profile'])}</cbc:ProfileID>"
        + f"<cbc:ID>1</cbc:ID>{notes}"
        + _party(
            "AccountingSupplierParty",
            facts["supplier_icd"],
            facts["supplier"],
            facts["country"],
            decoys=decoys,
        )
        + _party(
            "AccountingCustomerParty",
            facts["customer_icd"],
            facts["customer"],
            facts["buyer_country"],
            decoys=decoys,
        )
        + delivery
        + f"</{prefix}{root}>"
    ).encode()
    lead = draw(
        st.sampled_from([b"", b"\xef\xbb\xbf", b'<?xml version="1.0" encoding="UTF-8"?>\n'])
    )
    trail = draw(st.sampled_from([b"", b"\n", b"\n\n  \t\n"]))
    return lead + body + trail, {**facts, "body": body.decode()}


@settings(max_examples=60, deadline=None)
@given(invoices(), st.sampled_from([None, *MlsType]), st.booleans())
def test_the_built_sbdh_round_trips_through_the_sbd_reader(document, mls_type, mls_to):
    data, want = document
    mls = MlsRequest.parse(mls_type and mls_type.value, "0242:000001" if mls_to else None)
    with tempfile.TemporaryDirectory() as folder:
        bare, sbd = Path(folder) / "bare.xml", Path(folder) / "sbd.xml"
        bare.write_bytes(data)
        facts = read_bare_file(bare)
        assert facts is not None
        built = ubl_envelope(
            facts, known_icd=known, instance_identifier="id-1", created_at=NOW, mls=mls
        )
        wrap_file(built, bare, sbd)
        read = read_envelope_file(sbd)
        written = sbd.read_bytes()
    # a document held in memory reads and wraps as its file does
    assert read_bare(data) == facts
    assert wrap(built, data) == written
    ns, root, version = NAMESPACES[want["root"]], want["root"], want["version"]
    assert read.sender.value == f"{want['supplier_icd']}:{want['supplier']}"
    assert read.receiver.value == f"{want['customer_icd']}:{want['customer']}"
    assert read.sender.scheme == read.receiver.scheme == "iso6523-actorid-upis"
    assert (read.standard, read.type, read.type_version) == (ns, root, version)
    assert read.document_type.scheme == "busdox-docid-qns"
    assert read.document_type.value == f"{ns}::{root}##{want['customization']}::{version}"
    assert (read.process.scheme, read.process.value) == ("cenbii-procid-ubl", want["profile"])
    assert read.country_c1 == want["country"]
    assert read.receiver_country == want["buyer_country"]
    assert (read.instance_identifier, read.created_at) == ("id-1", NOW)
    assert read.mls_type is mls_type
    assert (read.mls_to.value if read.mls_to else None) == ("0242:000001" if mls_to else None)
    # the document travels byte for byte, once
    assert written.count(want["body"].encode()) == 1


def test_the_example_invoice_gets_the_header_of_the_example_sbd(tmp_path):
    sbd = EXAMPLE_SBD.read_bytes()
    bare = tmp_path / "invoice.xml"
    bare.write_bytes(sbd[sbd.index(b"<Invoice ") : sbd.rindex(b"</sh:")])
    facts = read_bare_file(bare)
    assert facts is not None
    mls = MlsRequest.parse("ALWAYS_SEND", "0242:000001")
    expected = read_envelope_file(EXAMPLE_SBD)
    built = ubl_envelope(
        facts,
        known_icd=known,
        instance_identifier=expected.instance_identifier,
        created_at=expected.created_at,
        mls=mls,
    )
    # the example's COUNTRY_C1 is SE, but the supplier of its invoice is in GB
    assert built.country_c1 == "GB"
    assert built == attrs.evolve(expected, country_c1="GB", receiver_country="")


def test_an_sbd_is_not_bare_and_another_root_is_neither(tmp_path):
    doctype = tmp_path / "doctype.xml"
    doctype.write_bytes(b'<!DOCTYPE Invoice [<!ENTITY a "b">]><Invoice/>')
    assert read_bare_file(EXAMPLE_SBD) is None
    assert read_bare_file(doctype) is None  # refused by the SBD reader, as before
    for root in (
        b'<Order xmlns="urn:oasis:names:specification:ubl:schema:xsd:Order-2"/>',
        b"<Invoice/>",  # no namespace
        b"<a/>",
        b"<StandardBusinessDocument/>",
    ):
        other = tmp_path / "other.xml"
        other.write_bytes(root)
        with pytest.raises(InvalidInput) as refused:
            read_bare_file(other)
        assert "neither an SBD" in refused.value.message(), root
        with pytest.raises(InvalidInput) as in_memory:
            read_bare(root)
        assert in_memory.value.problems == refused.value.problems
    assert read_bare(EXAMPLE_SBD.read_bytes()) is None


@settings(max_examples=40)
@given(comment=st.integers(0, 6000), padding=st.integers(0, 3000))
def test_where_the_root_start_tag_ends_changes_no_answer(comment, padding):
    """``read_bare_file`` reads a small piece first, where an SBD's root start tag usually
    ends: a comment before the root, or a root start tag, of any length answers the same."""
    sbd, bare = EXAMPLE_SBD.read_bytes(), EXAMPLE_SBD.with_name("invoice.xml").read_bytes()
    expected = read_bare_file(EXAMPLE_SBD.with_name("invoice.xml"))
    assert expected is not None
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "doc.xml"
        for data, answer in ((sbd, None), (bare, expected)):
            declaration, rest = data.split(b"?>", 1)
            root_name = rest.index(b" xmlns")  # the root's first namespace declaration
            moved = (
                declaration
                + b"?>"
                + f"<!--{'c' * comment}-->".encode()
                + rest[:root_name]
                + f' xmlns:pad{"p" * padding}="urn:pad"'.encode()
                + rest[root_name:]
            )
            path.write_bytes(moved)
            assert read_bare_file(path) == answer


@given(st.sampled_from([None, "", "urn:x", *NAMESPACES.values()]), st.text(max_size=20))
def test_only_invoice_and_credit_note_in_their_namespaces_are_ubl_billing(namespace, name):
    expected = name in NAMESPACES and NAMESPACES[name] == namespace
    assert is_ubl_billing(namespace, name) is expected


def test_a_broken_bare_document_is_refused_under_its_root_name(tmp_path):
    ns = NAMESPACES["CreditNote"]
    cut = tmp_path / "cut.xml"
    cut.write_bytes(f'<CreditNote xmlns="{ns}"><a>'.encode())
    deep = tmp_path / "deep.xml"
    deep.write_bytes(
        f'<CreditNote xmlns="{ns}">'.encode() + b"<a>" * 70 + b"</a>" * 70 + b"</CreditNote>"
    )
    for path in (cut, deep):
        with pytest.raises(InvalidInput) as refused:
            read_bare_file(path)
        assert [d.field for d in refused.value.problems] == ["CreditNote"]


FULL = UblFacts(
    namespace=NAMESPACES["Invoice"],
    root="Invoice",
    customization_id="urn:x",
    profile_id="urn:p",
    supplier=Endpoint("0007", "2120000787"),
    customer=Endpoint("0007", "5560360793"),
    supplier_country="SE",
)


def _refusal(facts: UblFacts) -> dict[str, str]:
    with pytest.raises(InvalidInput) as refused:
        ubl_envelope(facts, known_icd=known, instance_identifier="i", created_at=NOW)
    return {d.field: d.problem for d in refused.value.problems}


def test_every_missing_or_unusable_part_is_named_at_once():
    empty = UblFacts(namespace=NAMESPACES["CreditNote"], root="CreditNote")
    assert set(_refusal(empty)) == {
        "CreditNote/AccountingSupplierParty/Party/EndpointID",
        "CreditNote/AccountingCustomerParty/Party/EndpointID",
        "CreditNote/CustomizationID",
        "CreditNote/ProfileID",
        "CreditNote/AccountingSupplierParty/Party/PostalAddress/Country/IdentificationCode",
    }
    odd = attrs.evolve(
        FULL,
        supplier=Endpoint(None, "2120000787"),
        customer=Endpoint("9999", "5560360793"),
        supplier_country="Sweden",
    )
    problems = _refusal(odd)
    assert set(problems) == {
        "Invoice/AccountingSupplierParty/Party/EndpointID/@schemeID",
        "Invoice/AccountingCustomerParty/Party/EndpointID/@schemeID",
        "Invoice/AccountingSupplierParty/Party/PostalAddress/Country/IdentificationCode",
    }
    assert "'9999' is not a known participant identifier scheme" in problems.values()
    blank = attrs.evolve(FULL, supplier=Endpoint("0007", "  "))
    assert set(_refusal(blank)) == {"Invoice/AccountingSupplierParty/Party/EndpointID"}
    assert (
        ubl_envelope(FULL, known_icd=known, instance_identifier="i", created_at=NOW).sender.value
        == "0007:2120000787"
    )


def test_the_mls_query_parameters_are_checked():
    assert MlsRequest.parse(None, None).empty
    request = MlsRequest.parse("FAILURE_ONLY", "0242:000001")
    assert request.mls_type is MlsType.FAILURE_ONLY and request.mls_to is not None
    with pytest.raises(InvalidInput) as refused:
        MlsRequest.parse("always", "0242")
    assert [d.field for d in refused.value.problems] == ["mlsType", "mlsTo"]


_MEASURE = """
import re, sys
from datetime import UTC, datetime
from pathlib import Path
from fourcorner.adapters.sbdh.reader import read_envelope_file
from fourcorner.adapters.sbdh.wrap import read_bare, read_bare_file, wrap, wrap_file
from fourcorner.domain.ubl import ubl_envelope
folder = Path(sys.argv[1])
def peak():  # KiB; per address space (ru_maxrss would carry the forking process's over)
    return int(re.search(r"VmHWM:\\s*(\\d+)", Path("/proc/self/status").read_text())[1])
before = peak()
facts = read_bare_file(folder / "bare.xml")
built = ubl_envelope(facts, known_icd=lambda icd: True, instance_identifier="i",
                     created_at=datetime.now(UTC))
wrap_file(built, folder / "bare.xml", folder / "sbd.xml")
read_envelope_file(folder / "sbd.xml")
print(peak() - before)
"""


def test_a_50_mib_invoice_is_wrapped_in_bounded_memory(tmp_path):
    """Reading, wrapping and reading back a 50 MiB invoice (a million elements) grows the
    process by a few MiB, not by the document's size (measured in a process of its own)."""
    invoice = (EXAMPLE_SBD.parent / "invoice.xml").read_bytes()
    end = invoice.rindex(b"</Invoice>")
    note = b"<cbc:Note>" + b"n" * 30 + b"</cbc:Note>\n"
    count = 50 * 1024 * 1024 // len(note)
    with (tmp_path / "bare.xml").open("wb") as out:
        out.write(invoice[:end])
        for _ in range(count // 1024 + 1):
            out.write(note * 1024)
        out.write(invoice[end:])
    done = subprocess.run(
        [sys.executable, "-c", _MEASURE, str(tmp_path)], capture_output=True, text=True, check=True
    )
    grown_kib = int(done.stdout.strip())
    assert grown_kib < 16 * 1024, grown_kib
    assert (tmp_path / "sbd.xml").stat().st_size > 50 * 1024 * 1024


@settings(max_examples=40, deadline=None)
@given(billing_documents())
def test_a_generated_bis_billing_document_gets_the_header_the_network_expects(doc):
    """For the harness's BIS Billing 3 invoices and credit notes, the built header is the one
    written by hand from what the document says: its type, the billing process, the seller's
    and buyer's endpoints, the seller's country."""
    with tempfile.TemporaryDirectory() as folder:
        bare, sbd = Path(folder) / "bare.xml", Path(folder) / "sbd.xml"
        bare.write_bytes(doc.xml())
        facts = read_bare_file(bare)
        assert facts is not None
        built = ubl_envelope(facts, known_icd=known, instance_identifier="i", created_at=NOW)
        wrap_file(built, bare, sbd)
        read = read_envelope_file(sbd)
    assert read.document_type == doc.document_type
    assert str(read.process) == f"cenbii-procid-ubl::{BILLING_PROCESS}"
    assert read.sender.value == f"0088:{doc.seller[2]}"
    assert read.receiver.value == f"0088:{doc.buyer[2]}"
    assert (read.country_c1, read.receiver_country) == (doc.seller[1], doc.buyer[1])
    assert attrs.evolve(read, receiver_country="") == built
