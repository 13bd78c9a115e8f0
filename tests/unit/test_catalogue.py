"""The catalogue read from the shipped code lists: counts, the neutral word, ids, validation."""

from __future__ import annotations

import hashlib
import subprocess
import sys
import uuid
from importlib import resources

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fourcorner.adapters.codelists import load_catalogue, neutral
from fourcorner.adapters.codelists.loader import DATA_PACKAGE
from fourcorner.domain.catalogue import (
    DOCUMENT_TYPE_NAMESPACE,
    Catalogue,
    document_type_id,
    network_spelling,
)
from fourcorner.domain.errors import InvalidIdentifier
from fourcorner.entrypoints.http import catalogue_handlers
from fourcorner.entrypoints.http.converter import make_converter

SHA256 = {
    "Peppol Code Lists - Document types v9.7.json": (
        "d1d94f253c904b297d79cdb76a57ddd3f8b5b973fb2daa85297737b3c3500c13"
    ),
    "Peppol Code Lists - Participant identifier schemes v9.7.json": (
        "69c9b351577219f3e7f108a56ab37a4f1a309721bf8820687389f5804727ec56"
    ),
    "Peppol Code Lists - Processes v9.7.json": (
        "785cf8325abe6f5457dc863c14b51ae9bec3411de02b567ced9fc7c3cc75246f"
    ),
    "Peppol Code Lists - Transport profiles v9.7.json": (
        "26914dbeee2148c81477420ed0916cbc906b68fcaf28c1dd3e9b9ddf27fb9664"
    ),
    "Peppol Code Lists - SPIS Use Case v9.7.json": (
        "9ed8038861384dfb915eb0b7ed2287b71b26f1e9d7a987d08ad8a46e5fa0ba7d"
    ),
}
CATEGORIES = [
    "Application Response", "Bilateral", "Catalogue", "Catalogue Response", "Credit Note",
    "DICO", "Despatch Advice", "Digital Post", "German Report (old)", "HR-XML", "Invoice",
    "Invoice Response", "Logistics", "Message Level Response", "Message Level Status", "Order",
    "Order Balance", "Order Related", "Order Response", "Payment", "Peppol Network Report",
    "Pre-Award", "Receipt Advice", "Reminder", "Tax Reporting", "Utility Statement",
]  # fmt: skip
RECORD_FIELDS = {
    "id", "abstract", "bis-version", "category", "comment", "domain-community",
    "initial-release", "issued-by-opennet", "name", "process-ids", "scheme", "state", "value",
    "version", "deprecation-release", "removal-date",
}  # fmt: skip
# the specification lists every field but these two; a record has all it lists, of its type
OPTIONAL_FIELDS = {"deprecation-release", "removal-date"}
REQUIRED_FIELDS = RECORD_FIELDS - OPTIONAL_FIELDS
BOOLEAN_FIELDS = {"abstract", "issued-by-opennet"}
PINT_INVOICE = (
    "urn:oasis:names:specification:ubl:schema:xsd:Invoice-2::Invoice"
    "##urn:peppol:pint:billing-1::2.1"
)

# Published examples that fail their own scheme's rule, and why (asserted, not skipped).
EXAMPLES_THAT_FAIL = {
    # The display form "XX XXX XXX XXX": spaces are not allowed in a participant identifier.
    # The compact form 51824753556 is valid (see test_the_abn_example_is_valid_without_spaces).
    ("0151", "51 824 753 556"): "may contain only A-Z a-z 0-9 - . _ ~, not ' '",
    # The example leaves out the "NO" prefix that the scheme's own pattern NO[0-9]{9}MVA demands.
    ("9909", "990399123MVA"): "9909: the identifier must match the pattern NO[0-9]{9}MVA",
    # FI:OVT (removed): the examples repeat the ICD ("0037:0037…"), a colon in the local part.
    ("0037", "0037:00371234567800001"): "may contain only A-Z a-z 0-9 - . _ ~, not ':'",
    ("0037", "0037:1234567800001"): "may contain only A-Z a-z 0-9 - . _ ~, not ':'",
}

_CONV = make_converter()
_ANSWERS = {
    "DocumentType": catalogue_handlers.DOCUMENT_TYPE,
    "IdentifierScheme": catalogue_handlers.IDENTIFIER_SCHEME,
    "TransportProfile": catalogue_handlers.TRANSPORT_PROFILE,
}


def shown(record: object) -> dict[str, object]:
    """The record as the interface shows it (the HTTP edge's response class)."""
    return _ANSWERS[type(record).__name__].dump(_CONV, record)


@pytest.fixture(scope="module")
def catalogue() -> Catalogue:
    return load_catalogue()


def scheme_examples(registrable: bool) -> list[tuple[str, str]]:
    return [
        (s.iso6523, example)
        for s in load_catalogue().schemes
        if (s.registration_refusal is None) == registrable
        for example in s.example_values
    ]


# --- the data files and the loader ------------------------------------------------------------


@pytest.mark.parametrize(("name", "digest"), SHA256.items())
def test_data_files_are_the_published_bytes(name, digest):
    data = (resources.files(DATA_PACKAGE) / name).read_bytes()
    assert hashlib.sha256(data).hexdigest() == digest


def test_importing_reads_no_file():
    code = (
        "import sys\n"
        "opened = []\n"
        "sys.addaudithook(lambda e, a: opened.append(str(a[0])) if e == 'open' else None)\n"
        "import fourcorner.adapters.codelists, fourcorner.domain.catalogue\n"
        "assert not [p for p in opened if p.endswith('.json')], opened\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_the_catalogue_is_read_once(catalogue):
    assert load_catalogue() is catalogue


def test_neutral_word():
    assert neutral("peppol-doctype-wildcard") == "net-doctype-wildcard"
    assert neutral("peppol-transport-as4-v2_0") == "net-transport-as4-v2_0"
    assert neutral("issued-by-openpeppol") == "issued-by-opennet"
    assert neutral("busdox-docid-qns") == "busdox-docid-qns"
    assert neutral("urn:fdc:peppol.eu:2017:poacc:billing:3.0") == (
        "urn:fdc:peppol.eu:2017:poacc:billing:3.0"  # published URNs are kept
    )
    # and back: the network's spelling of the neutral names, anything else kept
    for name in ("peppol-doctype-wildcard", "peppol-transport-as4-v2_0", "busdox-docid-qns"):
        assert network_spelling(neutral(name)) == name
    assert network_spelling("cenbii-procid-ubl") == "cenbii-procid-ubl"


@given(st.text(max_size=30))
def test_neutral_is_idempotent_and_maps_each_real_spelling_to_its_net_form(text):
    once = neutral(text)
    assert neutral(once) == once
    assert neutral("peppol-" + text) == "net-" + text
    if not text.startswith("peppol-") and text != "issued-by-openpeppol":
        assert once == text


def test_every_real_spelling_of_the_code_lists_reads_as_its_net_form(catalogue):
    for doc in catalogue.document_types:
        assert neutral(doc.wire_scheme) == doc.scheme
    for profile in catalogue.transport_profiles:
        assert neutral(profile.wire_profile_id) == profile.profile_id
        assert catalogue.transport_profile(profile.wire_profile_id) is profile


# --- counts and constants ---------------------------------------------------------------------


def test_counts(catalogue):
    assert catalogue.version == "9.7"
    assert len(catalogue.document_types) == 321
    assert len(catalogue.schemes) == 105
    assert len(catalogue.processes) == 109
    assert len(catalogue.transport_profiles) == 5
    assert catalogue.categories() == tuple(CATEGORIES)
    assert len(catalogue.categories()) == 26


def test_states_and_constants(catalogue):
    assert catalogue.document_type_states() == ("active", "deprecated", "removed")
    states = [d.state for d in catalogue.document_types]
    assert (states.count("active"), states.count("deprecated"), states.count("removed")) == (
        209,
        71,
        41,
    )
    assert len(catalogue.process_ids()) == 109
    assert (
        "cenbii-procid-ubl::urn:fdc:peppol.eu:2017:poacc:billing:01:1.0" in catalogue.process_ids()
    )
    assert sum(s.registrable for s in catalogue.schemes) == 88


def test_every_process_of_a_document_type_is_in_the_process_list(catalogue):
    known = set(catalogue.process_ids())
    assert {p.process_id for d in catalogue.document_types for p in d.process_ids} <= known


# --- the neutral word ---------------------------------------------------------------------------


def test_document_type_schemes_use_the_neutral_word(catalogue):
    schemes = [d.scheme for d in catalogue.document_types]
    assert set(schemes) == {"busdox-docid-qns", "net-doctype-wildcard"}
    assert schemes.count("net-doctype-wildcard") == 31
    wire = {d.wire_scheme for d in catalogue.document_types if d.scheme == "net-doctype-wildcard"}
    assert wire == {"peppol-doctype-wildcard"}


def test_transport_profiles_use_the_neutral_word(catalogue):
    assert catalogue.transport_profile_ids() == (
        "busdox-transport-start",
        "busdox-transport-as2-ver1p0",
        "net-transport-as4-v1_0",
        "net-transport-as4-v2_0",
        "busdox-transport-as2-ver2p0",
    )
    (active,) = [t for t in catalogue.transport_profiles if t.state == "active"]
    assert (active.profile_id, active.wire_profile_id) == (
        "net-transport-as4-v2_0",
        "peppol-transport-as4-v2_0",
    )
    assert shown(active) == {
        "protocol": "AS4",
        "profileVersion": "2.0",
        "profileId": "net-transport-as4-v2_0",
        "initialRelease": "3",
        "state": "active",
    }
    assert catalogue.transport_profile("peppol-transport-as4-v2_0") is active
    assert catalogue.transport_profile("net-transport-as4-v2_0") is active
    assert catalogue.transport_profile("as4") is None


def test_published_urn_values_are_kept(catalogue):
    doc = catalogue.document_type_by_value("net-doctype-wildcard", PINT_INVOICE)
    assert doc is not None
    assert doc.value == PINT_INVOICE  # "peppol" inside a URN stays as published
    assert doc.process_ids[0].process_id == "cenbii-procid-ubl::urn:peppol:bis:billing"


def test_document_type_record_has_exactly_the_spec_fields(catalogue):
    for doc in catalogue.document_types:
        record = shown(doc)
        assert REQUIRED_FIELDS <= record.keys() <= RECORD_FIELDS, doc.id
        assert None not in record.values()
        for field in REQUIRED_FIELDS - BOOLEAN_FIELDS - {"process-ids"}:
            assert isinstance(record[field], str), (doc.id, field)
        assert all(isinstance(record[field], bool) for field in BOOLEAN_FIELDS)
        assert next(iter(record)) == "id"
        assert record["version"] == "9.7"
        assert "issued-by-openpeppol" not in record
        assert "peppol" not in record["scheme"]
        assert all(p.keys() == {"scheme", "value"} for p in record["process-ids"])


def test_document_type_record_of_the_pint_invoice(catalogue):
    doc = catalogue.document_type_by_value("peppol-doctype-wildcard", PINT_INVOICE)
    assert doc is not None
    assert shown(doc) == {
        "id": document_type_id("peppol-doctype-wildcard", PINT_INVOICE),
        "abstract": True,
        "bis-version": "3",
        "category": "Invoice",
        "comment": "TICC-270",
        "domain-community": "POAC",
        "initial-release": "8.6",
        "issued-by-opennet": True,
        "name": "Peppol PINT Invoice v1.0",
        "process-ids": [{"scheme": "cenbii-procid-ubl", "value": "urn:peppol:bis:billing"}],
        "scheme": "net-doctype-wildcard",
        "state": "active",
        "value": PINT_INVOICE,
        "version": "9.7",
    }


def test_removed_document_types_carry_their_dates(catalogue):
    removed = [shown(d) for d in catalogue.document_types if d.state == "removed"]
    assert len(removed) == 41
    assert sum("removal-date" in r for r in removed) == 41
    assert sum("removal-date" in shown(d) for d in catalogue.document_types) == 58


# --- document type ids ----------------------------------------------------------------------


def test_ids_are_uuid5_of_the_wire_scheme_and_value(catalogue):
    for doc in catalogue.document_types:
        expected = uuid.uuid5(DOCUMENT_TYPE_NAMESPACE, f"{doc.wire_scheme}::{doc.value}")
        assert doc.id == str(expected)
        assert catalogue.document_type(doc.id) is doc


def test_ids_are_pinned():
    # Changing the namespace or the name format would break stored references: never do it.
    assert document_type_id("peppol-doctype-wildcard", PINT_INVOICE) == (
        "6e5bbb93-fce7-5a2c-a171-36f31c84f69e"
    )


def test_ids_are_unique_even_where_values_repeat(catalogue):
    ids = {d.id for d in catalogue.document_types}
    assert len(ids) == 321
    values = [d.value for d in catalogue.document_types]
    repeated = {v for v in values if values.count(v) > 1}
    assert len(repeated) == 11
    for value in repeated:
        old = catalogue.document_type_by_value("busdox-docid-qns", value)
        new = catalogue.document_type_by_value("net-doctype-wildcard", value)
        assert old is not None and new is not None
        assert (old.state, new.state) == ("removed", "active")
        assert old.id != new.id


def test_document_type_by_value_takes_both_scheme_spellings(catalogue):
    wire = catalogue.document_type_by_value("peppol-doctype-wildcard", PINT_INVOICE)
    assert wire is catalogue.document_type_by_value("net-doctype-wildcard", PINT_INVOICE)
    assert catalogue.document_type_by_value("busdox-docid-qns", "urn:nothing") is None
    assert catalogue.document_type("not-an-id") is None


# --- schemes ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "code", ["SE:ORGNR", "SE_ORGNR", "se:orgnr", "se_orgnr", " SE:ORGNR ", "0007"]
)
def test_scheme_by_code_takes_both_spellings_and_the_icd(catalogue, code):
    scheme = catalogue.scheme_by_code(code)
    assert scheme is not None
    assert (scheme.schemeid, scheme.iso6523) == ("SE:ORGNR", "0007")


def test_every_scheme_is_found_by_each_spelling(catalogue):
    for scheme in catalogue.schemes:
        assert catalogue.scheme_by_icd(scheme.iso6523) is scheme
        assert catalogue.scheme_by_code(scheme.schemeid) is scheme
        assert catalogue.scheme_by_code(scheme.schemeid.replace(":", "_").lower()) is scheme
    assert catalogue.scheme_by_code("XX:NOPE") is None
    assert catalogue.scheme_by_icd("0000") is None


def test_scheme_record_uses_camel_case_names(catalogue):
    scheme = catalogue.scheme_by_icd("0088")
    assert scheme is not None
    assert shown(scheme) == {
        "schemeid": "GLN",
        "iso6523": "0088",
        "country": "international",
        "schemeName": "Global Location Number",
        "initialRelease": "1.0.0",
        "state": "active",
        "registrable": True,
        "issuingAgency": "GS1 GLN",
        "structure": "1) 13 digits including check digits, 2) None",
        "display": "None",
        "examples": "1548079098355",
        "validationRules": "RegEx: [0-9]{13}\nCheck Digit: mod10 (weights 1, 3)",
        "usage": "GLN-13 are the only supports supported atm",
    }


# --- participant identifiers ----------------------------------------------------------------


@pytest.mark.parametrize(("icd", "example"), scheme_examples(registrable=True))
def test_published_examples_of_registrable_schemes_validate(catalogue, icd, example):
    value = f"{icd}:{example}"
    if (icd, example) in EXAMPLES_THAT_FAIL:
        with pytest.raises(InvalidIdentifier) as caught:
            catalogue.validate_participant_identifier(value)
        assert EXAMPLES_THAT_FAIL[icd, example] in caught.value.rule
    else:
        assert catalogue.validate_participant_identifier(value).identifier.icd == icd


@pytest.mark.parametrize(("icd", "example"), scheme_examples(registrable=False))
def test_published_examples_of_other_schemes_validate_outside_registration(catalogue, icd, example):
    value = f"{icd}:{example}"
    with pytest.raises(InvalidIdentifier):
        catalogue.validate_participant_identifier(value)  # not for registration
    if (icd, example) in EXAMPLES_THAT_FAIL:
        with pytest.raises(InvalidIdentifier) as caught:
            catalogue.validate_participant_identifier(value, for_registration=False)
        assert EXAMPLES_THAT_FAIL[icd, example] in caught.value.rule
    else:
        catalogue.validate_participant_identifier(value, for_registration=False)


def test_the_abn_example_is_valid_without_spaces(catalogue):
    assert catalogue.validate_participant_identifier("0151:51824753556").warning is None


def test_a_valid_identifier_comes_back_with_its_scheme(catalogue):
    result = catalogue.validate_participant_identifier("iso6523-actorid-upis::9925:be0899965307")
    assert (
        result.identifier
        == catalogue.validate_participant_identifier("9925:BE0899965307").identifier
    )
    assert result.canonical == "9925:be0899965307"
    assert result.scheme.schemeid == "BE:VAT"
    assert result.warning is None


def test_check_digit_errors_name_the_rule(catalogue):
    with pytest.raises(InvalidIdentifier) as caught:
        catalogue.validate_participant_identifier("0088:1548079098356")
    error = caught.value
    assert error.rule == "0088: check digit is 6, expected 5"
    assert (error.value, error.field) == ("0088:1548079098356", "participantIdentifier")
    assert str(error) == (
        "AT-1006: Invalid identifier '0088:1548079098356': 0088: check digit is 6, expected 5."
    )
    assert [(d.field, d.problem) for d in error.details()] == [
        ("$.participantIdentifier", "0088: check digit is 6, expected 5")
    ]


def test_pattern_errors_name_the_code_list_pattern(catalogue):
    with pytest.raises(InvalidIdentifier) as caught:
        catalogue.validate_participant_identifier("0192:12345", field="participants[0].id")
    assert caught.value.rule == "0192: the identifier must match the pattern [0-9]{9}"
    assert caught.value.field == "participants[0].id"


def test_unknown_icd_is_refused(catalogue):
    with pytest.raises(InvalidIdentifier, match="0000: no participant identifier scheme"):
        catalogue.validate_participant_identifier("0000:abc")


def test_removed_schemes_are_refused_for_registration(catalogue):
    with pytest.raises(InvalidIdentifier) as caught:
        catalogue.validate_participant_identifier("9956:0899965307")
    assert caught.value.rule == "9956: the scheme BE:CBE was removed on 2023-12-31"
    result = catalogue.validate_participant_identifier("9956:0899965307", for_registration=False)
    assert result.warning == "9956: the scheme BE:CBE was removed, removal date 2023-12-31"


def test_non_registrable_schemes_are_refused_for_registration(catalogue):
    with pytest.raises(InvalidIdentifier) as caught:
        catalogue.validate_participant_identifier("0205:ABC1234")
    assert caught.value.rule == "0205: participants of the scheme IT:COD cannot be registered"
    assert catalogue.validate_participant_identifier("0205:ABC1234", for_registration=False)


def test_deprecated_schemes_validate_with_a_warning(catalogue):
    result = catalogue.validate_participant_identifier("9909:NO990399123MVA")
    assert result.warning == "9909: the scheme NO:VAT is deprecated since code list release 1.1.0"
    result = catalogue.validate_participant_identifier("0193:ABCD1234")
    assert result.warning == (
        "0193: the scheme UBLBE is deprecated since code list release 9.6, removal date 2026-07-07"
    )


def test_kvk_numbers_have_8_digits(catalogue):
    assert catalogue.validate_participant_identifier("0106:12345678")
    with pytest.raises(InvalidIdentifier, match="0106: a KvK number is 8 digits"):
        catalogue.validate_participant_identifier("0106:12345678901234567")


def test_code_list_patterns_ignore_case_like_participant_values(catalogue):
    assert catalogue.validate_participant_identifier("0195:SGUEN199704270W")
    assert catalogue.validate_participant_identifier("0198:dk26769388")
    assert catalogue.validate_participant_identifier("0204:991-33333test-33")


@settings(max_examples=300)
@given(
    text=st.text(max_size=40)
    | st.from_regex(r"(9925|0088|0204|0151|0007):[0-9A-Za-z-]{1,20}", fullmatch=True)
)
def test_validation_raises_nothing_but_invalid_identifier(catalogue, text):
    try:
        result = catalogue.validate_participant_identifier(text)
    except InvalidIdentifier as e:
        assert e.rule
    else:
        assert result.scheme.iso6523 == result.identifier.icd


# --- legal identifiers --------------------------------------------------------------------


@pytest.mark.parametrize("code", ["SE:ORGNR", "SE_ORGNR", "0007"])
def test_legal_identifier_codes_in_every_spelling(catalogue, code):
    scheme, normalised = catalogue.validate_legal_identifier(code, "2120000787")
    assert (scheme.schemeid, normalised) == ("SE:ORGNR", "2120000787")


def test_legal_identifiers_lose_white_space_and_case(catalogue):
    assert catalogue.validate_legal_identifier("AU:ABN", "51 824 753 556")[1] == "51824753556"
    assert catalogue.validate_legal_identifier("BE_VAT", " be0899965307 ")[1] == "BE0899965307"


def test_legal_identifier_errors_name_the_field(catalogue):
    with pytest.raises(InvalidIdentifier) as caught:
        catalogue.validate_legal_identifier("XX:NOPE", "123")
    assert caught.value.field == "legalIdentifierCode"
    assert caught.value.value == "XX:NOPE"
    with pytest.raises(InvalidIdentifier) as caught:
        catalogue.validate_legal_identifier("SE:ORGNR", "2120000788")
    assert (caught.value.field, caught.value.rule) == (
        "legalIdentifier",
        "0007: check digit is 8, expected 7",
    )
    with pytest.raises(InvalidIdentifier) as caught:
        catalogue.validate_legal_identifier("SE:ORGNR", "212000-0787")
    assert caught.value.field == "legalIdentifier"


def test_legal_identifiers_of_removed_schemes_are_refused(catalogue):
    with pytest.raises(InvalidIdentifier, match="was removed") as caught:
        catalogue.validate_legal_identifier("BE:CBE", "0899965307")
    assert caught.value.field == "legalIdentifierCode"


def test_legal_identifiers_need_no_registrable_scheme(catalogue):
    scheme, normalised = catalogue.validate_legal_identifier("IT:COD", "abc1234")
    assert (scheme.iso6523, normalised) == ("0205", "ABC1234")


def test_the_at_gov_example_passes_because_patterns_ignore_case(catalogue):
    # 9915's example is "b" while its pattern is [A-Z][A-Z0-9]*: participant values compare
    # case-insensitively, so code-list patterns are applied ignoring case.
    assert catalogue.validate_participant_identifier("9915:b").canonical == "9915:b"
