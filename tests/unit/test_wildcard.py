"""Document types of the wildcard scheme (``domain.wildcard``): where a registration's ``*``
goes, the order in which a sender looks registrations up, and which documents one covers
(NETWORK.md §1, the Policy for use of identifiers 4.3)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from fourcorner.domain import wildcard

HEAD = "urn:oasis:names:specification:ubl:schema:xsd:Invoice-2::Invoice"
JP = f"{HEAD}##urn:peppol:pint:billing-1@jp-1::2.1"


def doc(customization: str, version: str = "2.1") -> str:
    return f"{HEAD}##{customization}::{version}"


def test_a_registration_puts_the_star_at_the_end_of_the_customization_id() -> None:
    assert wildcard.registered(JP) == doc("urn:peppol:pint:billing-1@jp-1*")
    assert wildcard.registered(doc("urn:peppol:pint:billing-1@jp-1*")) == doc(
        "urn:peppol:pint:billing-1@jp-1*"
    )
    assert wildcard.registered("not a document type") == "not a document type"


def test_a_sender_looks_registrations_up_in_the_policys_order() -> None:
    assert wildcard.candidates(doc("urn:peppol:pint:billing-1@jp-1@x-2")) == [
        doc("urn:peppol:pint:billing-1@jp-1@x-2"),
        doc("urn:peppol:pint:billing-1@jp-1@x-2*"),
        doc("urn:peppol:pint:billing-1@jp-1*"),
        doc("urn:peppol:pint:billing-1*"),
    ]
    # a trailing star of the value asked for is ignored; one elsewhere matches nothing
    assert wildcard.candidates(doc("urn:peppol:pint:billing-1@jp-1*")) == wildcard.candidates(JP)
    assert wildcard.candidates(doc("urn:peppol:pint:billing-*@jp-1")) == []


def test_the_best_registration_is_picked() -> None:
    listed = [doc("urn:peppol:pint:billing-1*"), doc("urn:peppol:pint:billing-1@jp-1*")]
    assert wildcard.best_match(JP, listed) == doc("urn:peppol:pint:billing-1@jp-1*")
    assert wildcard.best_match(JP, [*listed, JP]) == JP  # the exact value first
    assert wildcard.best_match(doc("urn:peppol:pint:billing-1@aunz-1"), listed) == listed[0]
    assert wildcard.best_match(doc("urn:peppol:pint:selfbilling-1@jp-1"), listed) is None
    # the root element and the version must be the same
    assert wildcard.best_match(doc("urn:peppol:pint:billing-1@jp-1", "2.2"), listed) is None


def test_a_registration_covers_only_customizations_cut_at_a_part() -> None:
    registration = wildcard.registered(JP)
    assert wildcard.covers(registration, JP)
    assert wildcard.covers(registration, doc("urn:peppol:pint:billing-1@jp-1@extra"))
    assert not wildcard.covers(registration, doc("urn:peppol:pint:billing-1@jp-10"))
    assert not wildcard.covers(registration, doc("urn:peppol:pint:billing-1"))


_PART = st.text("abcdefghij0123456789-:.", min_size=1, max_size=8)
_CUSTOMIZATION = st.lists(_PART, min_size=1, max_size=5).map("@".join)


@given(_CUSTOMIZATION, st.integers(min_value=1, max_value=5))
def test_a_registration_of_a_prefix_covers_exactly_the_longer_ids(
    customization: str, cut: int
) -> None:
    """Cutting a customization id at one of its ``@`` gives a registration that covers it; a
    string prefix that is not cut at an ``@`` (nor the whole id) covers nothing."""
    parts = customization.split("@")
    prefix = "@".join(parts[: min(cut, len(parts))])
    value = doc(customization)
    assert wildcard.covers(wildcard.registered(doc(prefix)), value)
    assert wildcard.best_match(value, [wildcard.registered(doc(prefix))]) is not None
    ragged = customization[:-1]  # a string prefix not cut at an @ (parts are never empty)
    if ragged:
        assert not wildcard.covers(wildcard.registered(doc(ragged)), value)


@given(_CUSTOMIZATION)
def test_every_candidate_but_the_first_is_a_registration(customization: str) -> None:
    found = wildcard.candidates(doc(customization))
    assert found[0] == doc(customization)
    assert all(wildcard.registered(c) == c for c in found[1:])
    assert len(found) == customization.count("@") + 2
