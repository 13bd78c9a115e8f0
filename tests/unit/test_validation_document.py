"""``locate``: a small document read as one tree answers exactly as intake's stream parser does,
for the documents it accepts and those it refuses (with the same words), and a large one is
streamed."""

from __future__ import annotations

import pytest
from lxml import etree

from fourcorner.adapters.sbdh import parser as parser_module
from fourcorner.adapters.validation import document as located_module
from fourcorner.adapters.validation.document import Located, locate
from fourcorner.domain.errors import InvalidInput
from sbd_factory import make_sbd
from validation_cases import EXAMPLES, big_invoice, examples, unit_cases

BASE = (EXAMPLES / "base-example.xml").read_bytes()
UBL = b'<Invoice xmlns="urn:oasis:names:specification:ubl:schema:xsd:Invoice-2"'
CBC_NS = "urn:oasis:names:specification:ubl:schema:xsd:CommonBasicComponents-2"
CBC = f'xmlns:cbc="{CBC_NS}"'.encode()
# a CII invoice whose identifiers lie among elements on part of their paths
CII_DECOYS = (
    b'<rsm:CrossIndustryInvoice xmlns:rsm="urn:un:unece:uncefact:data:standard:'
    b'CrossIndustryInvoice:100" xmlns:ram="urn:un:unece:uncefact:data:standard:'
    b'ReusableAggregateBusinessInformationEntity:100"><rsm:ExchangedDocumentContext>'
    b"<ram:ID>context</ram:ID><ram:BusinessProcessSpecifiedDocumentContextParameter>"
    b"<ram:Name>n</ram:Name><ram:ID> p </ram:ID><ram:ID>p2</ram:ID>"
    b"</ram:BusinessProcessSpecifiedDocumentContextParameter>"
    b"<ram:GuidelineSpecifiedDocumentContextParameter><x><ram:ID>deep</ram:ID></x>"
    b"<ram:ID>c</ram:ID></ram:GuidelineSpecifiedDocumentContextParameter>"
    b"</rsm:ExchangedDocumentContext><rsm:ExchangedDocument><ram:ID>i</ram:ID>"
    b"</rsm:ExchangedDocument></rsm:CrossIndustryInvoice>"
)


def _two_payloads() -> bytes:
    sbd = etree.fromstring(make_sbd(payload=BASE))
    sbd.append(etree.fromstring(BASE))
    return etree.tostring(sbd)


def _header_with_ids() -> bytes:
    """An SBD whose header holds elements named as the payload's identifiers."""
    sbd = etree.fromstring(make_sbd(payload=BASE))
    for name, text in (("CustomizationID", "header-c"), ("ProfileID", "header-p")):
        etree.SubElement(sbd[0], f"{{{CBC_NS}}}{name}").text = text
    return etree.tostring(sbd)


def _header_after_payload() -> bytes:
    """``_header_with_ids`` with the header after a payload that has no identifiers of its
    own: the header's elements are still not the payload's, in the stream as in the tree."""
    sbd = etree.fromstring(_header_with_ids())
    for element in sbd[1].findall(f"{{{CBC_NS}}}*"):
        if etree.QName(element).localname in ("CustomizationID", "ProfileID"):
            sbd[1].remove(element)
    sbd.append(sbd[0])
    return etree.tostring(sbd)


def _header_only() -> bytes:
    sbd = etree.fromstring(make_sbd(payload=BASE))
    sbd.remove(sbd[1])
    return etree.tostring(sbd)


DOCUMENTS = {
    "base": BASE,
    "sbd": make_sbd(payload=BASE),
    "sbd-two-payloads": _two_payloads(),
    "sbd-header-only": _header_only(),
    "sbd-header-with-ids": _header_with_ids(),
    "sbd-header-after-payload": _header_after_payload(),
    "cii-ids-among-decoys": CII_DECOYS,
    "bom-comment-pi": b"\xef\xbb\xbf<?xml version='1.0' encoding='utf-8'?><!-- c --><?pi x?>"
    + BASE.split(b"?>", 1)[1],
    "ids-empty-and-repeated": UBL
    + b" "
    + CBC
    + b"><cbc:CustomizationID/><cbc:ProfileID> a </cbc:ProfileID>"
    + b"<cbc:ProfileID>b</cbc:ProfileID></Invoice>",
    "ids-too-deep": UBL
    + b" "
    + CBC
    + b"><x><cbc:CustomizationID>c</cbc:CustomizationID></x></Invoice>",
    "long-id": UBL
    + b" "
    + CBC
    + b"><cbc:CustomizationID>"
    + b"c" * 5000
    + b"</cbc:CustomizationID></Invoice>",
    "other": b"<Order xmlns='urn:x'><a/></Order>",
    "no-namespace": b"<Invoice><a/></Invoice>",
    "depth-64": b"<a>" * 64 + b"</a>" * 64,
    "depth-65": b"<a>" * 65 + b"</a>" * 65,
    "cut": b"<Invoice",
    "empty": b"",
    "blank": b"   ",
    "entities": b'<!DOCTYPE a [<!ENTITY x "y">]><a>&x;</a>',
    "doctype-late": b"<!-- x --><!DOCTYPE a SYSTEM 'http://127.0.0.1:9/x.dtd'><a/>",
    "latin1": b'<?xml version="1.0" encoding="ISO-8859-1"?><a/>',
    "utf16": "<a/>".encode("utf-16"),
    "undefined-entity": UBL + b"><a>&ext;</a></Invoice>",
    "trailing": b"<a/><b/>",
    "bad-utf8": b"<a>\xff\xfe</a>",
    "huge-text": b"<a>" + b"x" * 11_000_000 + b"</a>",
}


def _outcome(data: bytes) -> Located | list[tuple[str, str]]:
    try:
        return locate(data)
    except InvalidInput as e:
        return [(d.field, d.problem) for d in e.problems]


@pytest.mark.parametrize("name", sorted(DOCUMENTS))
def test_a_whole_tree_answers_as_the_stream(name, monkeypatch):
    data = DOCUMENTS[name]
    whole = _outcome(data)
    if not isinstance(whole, list) and len(data) <= located_module.WHOLE_LIMIT:
        # a small document taken in was read as one tree (else both sides were streamed)
        assert located_module._whole(data) is not None, name
    monkeypatch.setattr(parser_module, "WHOLE_LIMIT", -1)
    assert _outcome(data) == whole


@pytest.mark.parametrize("whole_limit", [located_module.WHOLE_LIMIT, -1])
def test_the_identifiers_are_taken_from_their_paths_only(whole_limit, monkeypatch):
    monkeypatch.setattr(parser_module, "WHOLE_LIMIT", whole_limit)
    cii = locate(CII_DECOYS)
    assert (cii.local, cii.customization_id, cii.profile_id) == ("CrossIndustryInvoice", "c", "p")
    sbd = locate(DOCUMENTS["sbd-header-with-ids"])
    assert sbd.in_sbd and sbd.customization_id == locate(BASE).customization_id
    assert "header" not in f"{sbd.customization_id}{sbd.profile_id}"
    after = locate(DOCUMENTS["sbd-header-after-payload"])
    assert after.in_sbd and (after.customization_id, after.profile_id) == (None, None)


def test_the_published_examples_and_unit_tests_locate_as_the_stream(monkeypatch):
    documents = [p.read_bytes() for p in examples()] + [c.document for c in unit_cases()]
    whole = [_outcome(d) for d in documents]
    monkeypatch.setattr(parser_module, "WHOLE_LIMIT", -1)
    assert [_outcome(d) for d in documents] == whole


def test_a_small_document_is_not_streamed(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("streamed")

    monkeypatch.setattr(located_module, "Parser", refuse)
    located = locate(make_sbd(payload=BASE))
    assert (located.local, located.in_sbd) == ("Invoice", True)
    assert located.customization_id and located.profile_id


def test_a_large_file_is_streamed(tmp_path, monkeypatch):
    big = tmp_path / "big.xml"
    big.write_bytes(big_invoice(located_module.WHOLE_LIMIT + 1))
    streamed = []
    real = located_module.Parser

    def counting(*args, **kwargs):
        streamed.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(located_module, "Parser", counting)
    assert locate(big).local == "Invoice"
    assert streamed == [1]
