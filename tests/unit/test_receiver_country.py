"""The receiver's country read from the business document, and an access point's seat id read
from its certificate's subject (the transaction fields receiverCountry and senderSP/receiverSP)."""

from __future__ import annotations

from cryptography import x509
from cryptography.x509.oid import NameOID
from hypothesis import given
from hypothesis import strategies as st

from fourcorner.adapters.sbdh.reader import read_envelope
from fourcorner.domain.certificates import subject_common_name
from sbd_factory import BASE_EXAMPLE, make_sbd

BODY = BASE_EXAMPLE.read_bytes()
CODE = b"<cbc:IdentificationCode>"


def with_country(party: bytes, country: bytes) -> bytes:
    """The example invoice with the country code of ``party`` replaced."""
    start = BODY.index(b"<cac:" + party + b">")
    at = BODY.index(CODE, start) + len(CODE)
    end = BODY.index(b"</cbc:IdentificationCode>", at)
    return BODY[:at] + country + BODY[end:]


@given(st.from_regex(r"[A-Z]{2}", fullmatch=True))
def test_the_buyers_country_is_the_receivers(country):
    payload = with_country(b"AccountingCustomerParty", country.encode())
    envelope = read_envelope(make_sbd(payload=payload, country_c1="SE"))
    assert envelope.receiver_country == country
    assert envelope.country_c1 == "SE"


@given(st.from_regex(r"[A-Z]{2}", fullmatch=True))
def test_the_sellers_country_is_not_taken_for_the_buyers(country):
    payload = with_country(b"AccountingSupplierParty", country.encode())
    assert read_envelope(make_sbd(payload=payload)).receiver_country == "SE"  # the buyer's


@given(st.text(st.characters(codec="ascii", categories=("L", "N")), max_size=4))
def test_a_code_that_is_not_two_capital_letters_gives_no_country(text):
    payload = with_country(b"AccountingCustomerParty", text.encode())
    found = read_envelope(make_sbd(payload=payload)).receiver_country
    assert found == (text if len(text) == 2 and text.isupper() and text.isalpha() else "")


def test_no_buyer_address_gives_no_country():
    start = BODY.index(b"<cac:AccountingCustomerParty>")
    end = BODY.index(b"</cac:AccountingCustomerParty>") + len(b"</cac:AccountingCustomerParty>")
    payload = BODY[:start] + BODY[end:]
    assert read_envelope(make_sbd(payload=payload)).receiver_country == ""


# a name attribute holds at most 64 bytes of UTF-8: 16 characters of at most 4 bytes each
names = st.text(
    st.characters(codec="utf-8", exclude_categories=("Cs", "Cc")), min_size=1, max_size=16
)


@given(names, names, st.lists(names, max_size=2))
def test_the_seat_id_is_the_subjects_common_name(cn, org, units):
    attributes = [
        x509.NameAttribute(NameOID.COUNTRY_NAME, "SE"),
        x509.NameAttribute(NameOID.ORGANIZATION_NAME, org),
        *(x509.NameAttribute(NameOID.ORGANIZATIONAL_UNIT_NAME, u) for u in units),
        x509.NameAttribute(NameOID.COMMON_NAME, cn),
    ]
    subject = x509.Name(attributes).rfc4514_string()
    assert subject_common_name(subject) == cn
    assert subject_common_name(x509.Name(attributes[:-1]).rfc4514_string()) == ""
