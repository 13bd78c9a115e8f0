"""The harness's public strategies: what they generate is what they promise, judged by the
service's own rules (identifiers, the catalogue), the BIS Billing 3 validator (documents), the
SBD and MLS readers, and an independent Standard Webhooks library (deliveries)."""

from __future__ import annotations

import asyncio

import standardwebhooks
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fourcorner.adapters.sbdh.mls import read_mls
from fourcorner.adapters.sbdh.reader import read_envelope
from fourcorner.domain.checkdigits import RULES
from fourcorner.domain.envelope import MLS_DOCUMENT_TYPE
from fourcorner.entrypoints.harness import strategies as hs

SLOW = settings(max_examples=5, deadline=None, suppress_health_check=list(HealthCheck))


@given(hs.participant_identifiers())
def test_identifiers_pass_their_schemes_rule(identifier):
    icd, _, local = identifier.partition(":")
    assert icd in hs.CHECKED_SCHEMES
    assert RULES[icd](local) is None


@given(hs.almost_valid_participant_identifiers())
def test_almost_valid_identifiers_are_refused_by_their_rule(identifier):
    icd, _, local = identifier.partition(":")
    assert RULES[icd](local) is not None


@given(hs.almost_valid_organisations())
def test_almost_valid_organisations_break_only_the_legal_identifier(body):
    icd = hs.LEGAL_SCHEMES[body["legalIdentifierCode"]]
    assert RULES[icd](body["legalIdentifier"]) is not None
    assert body["legalName"].strip()


@given(
    st.sampled_from(["wire", "neutral"]).flatmap(
        lambda s: st.tuples(st.just(s), hs.document_type_ids(spelling=s))
    )
)
def test_document_type_ids_are_in_the_catalogue_in_either_spelling(spelled):
    spelling, text = spelled
    scheme, _, value = text.partition("::")
    known = {
        (d.wire_scheme if spelling == "wire" else d.scheme, d.value)
        for d in hs.catalogue().document_types
    }
    assert (scheme, value) in known


@given(hs.process_ids())
def test_process_ids_are_in_the_catalogue(text):
    _, _, value = text.partition("::")
    assert value in {p.value for p in hs.catalogue().processes}


@given(hs.api_key_requests(), hs.almost_valid_api_key_requests())
def test_api_key_requests_expire_in_the_future_and_the_almost_valid_in_the_past(good, bad):
    assert good["expires"] > bad["expires"]
    assert good["role"] in ("orgmember", "orgadmin")


@SLOW
@given(hs.billing_documents())
def test_generated_invoices_and_credit_notes_pass_bis_billing_3(validator, document):
    result = asyncio.run(validator.validate(document.xml()))
    assert result.checked and result.valid, [(e.id, e.text) for e in result.errors]


@SLOW
@given(hs.broken_documents())
def test_each_mutator_breaks_exactly_its_rule(validator, broken):
    rule, document = broken
    result = asyncio.run(validator.validate(document))
    assert {e.id for e in result.errors} == {rule}


@given(hs.sbds())
def test_sbds_carry_their_documents_type(sbd):
    envelope = read_envelope(sbd)
    assert envelope.document_type in (hs.INVOICE, hs.CREDIT_NOTE)
    assert RULES[envelope.sender.value[:4]](envelope.sender.value[5:]) is None


@given(hs.message_level_statuses())
def test_mls_documents_are_read_back(status):
    from fourcorner.adapters.sbdh.mls import write_mls

    assert read_mls(write_mls(status)) == status


@given(hs.mls_documents())
def test_mls_sbds_are_of_the_mls_document_type(sbd):
    assert read_envelope(sbd).document_type == MLS_DOCUMENT_TYPE


@given(hs.webhook_secrets(), st.data())
def test_webhook_deliveries_verify_with_standard_webhooks(secret, data):
    delivery = data.draw(hs.webhook_deliveries(secret=secret))
    verified = standardwebhooks.Webhook(secret).verify(delivery.body, delivery.headers)
    assert verified["eventType"] in ("webhook.test", "transaction.sent", "transaction.received")
