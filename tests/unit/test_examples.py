"""``examples/invoice.sbd.xml`` is what the docs say it is: a valid SBD around the published
BIS Billing 3 base example invoice, whose participants pass their schemes' check digits and
whose document type and process are in the catalogue."""

from __future__ import annotations

from pathlib import Path

from fourcorner.adapters.codelists import load_catalogue
from fourcorner.adapters.sbdh import read_envelope
from fourcorner.domain.envelope import MlsType

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def test_the_example_sbd_reads_and_names_valid_participants():
    data = (EXAMPLES / "invoice.sbd.xml").read_bytes()
    envelope = read_envelope(data)
    catalogue = load_catalogue()
    assert (envelope.sender.value, envelope.receiver.value) == (
        "0007:2120000787",
        "0007:5560360793",
    )
    for participant in (envelope.sender, envelope.receiver):
        assert participant.scheme == "iso6523-actorid-upis"
        catalogue.validate_participant_identifier(participant.value)  # raises when invalid
    document = catalogue.document_type_by_value(
        envelope.document_type.scheme, envelope.document_type.value
    )
    assert document is not None and document.state == "active"
    assert str(envelope.process) in catalogue.process_ids()
    assert envelope.country_c1 == "SE" and envelope.mls_type is MlsType.ALWAYS_SEND


def test_its_invoice_is_the_published_base_example_with_the_headers_endpoints():
    data = (EXAMPLES / "invoice.sbd.xml").read_text()
    invoice = data.split("</sh:StandardBusinessDocumentHeader>\n", 1)[1]
    invoice = invoice.removesuffix("</sh:StandardBusinessDocument>\n")
    published = (EXAMPLES / "bis-billing-3" / "base-example.xml").read_text()
    published = published.split("?>", 1)[1].strip() + "\n"
    endpoints = {
        '<cbc:EndpointID schemeID="0088">9482348239847239874</cbc:EndpointID>': (
            '<cbc:EndpointID schemeID="0007">2120000787</cbc:EndpointID>'
        ),
        '<cbc:EndpointID schemeID="0002">FR23342</cbc:EndpointID>': (
            '<cbc:EndpointID schemeID="0007">5560360793</cbc:EndpointID>'
        ),
    }
    for old, new in endpoints.items():
        assert published.count(old) == 1
        published = published.replace(old, new)
    assert invoice == published


def test_the_bare_example_invoice_is_the_one_inside_the_example_sbd():
    """``examples/invoice.xml`` (sent bare in docs/api.md) is the invoice of the SBD."""
    sbd = (EXAMPLES / "invoice.sbd.xml").read_bytes()
    bare = (EXAMPLES / "invoice.xml").read_bytes()
    declaration = b'<?xml version="1.0" encoding="UTF-8"?>\n'
    assert bare.startswith(declaration)
    assert sbd[sbd.index(b"<Invoice ") : sbd.rindex(b"</sh:")] == bare[len(declaration) :]
