"""Hypothesis strategies for the values a service of this kind takes, valid unless asked
otherwise, each with an "almost valid" variant for negative testing.

The public name is this package, ``fourcorner.entrypoints.harness.strategies`` (docs/harness.md);
it re-exports the strategies of its modules, one concern each:

- ``identifiers``: participant identifiers completed with their scheme's check-digit rule
  (``domain.checkdigits``: the rules the service itself applies, documented in
  docs/identifiers.md), an almost valid one differing in one character or one adjacent
  transposition that its rule catches; document and process identifiers from the bundled code
  lists, in either spelling (the network's ``peppol-`` and the neutral ``net-`` scheme names);
- ``bodies``: request bodies (organisations, contacts, members, API keys);
- ``documents``: BIS Billing 3 invoices and credit notes, built line by line with every total
  summed so that the rules pass, and mutators that each break exactly one named rule;
- ``envelopes``: Standard Business Documents around them, and Message Level Statuses;
- ``webhooks``: webhook deliveries signed as the service signs them.
"""

from __future__ import annotations

from fourcorner.entrypoints.harness.strategies.bodies import (
    LEGAL_SCHEMES,
    almost_valid_api_key_requests,
    almost_valid_organisations,
    api_key_requests,
    contacts,
    members,
    organisations,
)
from fourcorner.entrypoints.harness.strategies.documents import (
    BILLING_CUSTOMIZATION,
    BILLING_PROCESS,
    CAC,
    CBC,
    COUNTRIES,
    CREDIT_NOTE,
    CREDIT_NOTE_NS,
    CURRENCIES,
    INVOICE,
    INVOICE_NS,
    MUTATORS,
    NS,
    RATES,
    BillingDocument,
    Line,
    billing_documents,
    break_rule,
    broken_documents,
    credit_notes,
    invoices,
)
from fourcorner.entrypoints.harness.strategies.envelopes import (
    message_level_statuses,
    mls_documents,
    sbds,
)
from fourcorner.entrypoints.harness.strategies.identifiers import (
    CHECKED_SCHEMES,
    DIGITS,
    DOCUMENT_SCHEME,
    PARTICIPANT_SCHEME,
    PROCESS_SCHEME,
    UPPER,
    almost_valid_document_type_ids,
    almost_valid_participant_identifiers,
    catalogue,
    complete,
    document_type_ids,
    local_parts,
    participant_identifiers,
    process_ids,
)
from fourcorner.entrypoints.harness.strategies.webhooks import (
    WebhookDelivery,
    webhook_deliveries,
    webhook_secrets,
)

__all__ = [
    "BILLING_CUSTOMIZATION",
    "BILLING_PROCESS",
    "CAC",
    "CBC",
    "CHECKED_SCHEMES",
    "COUNTRIES",
    "CREDIT_NOTE",
    "CREDIT_NOTE_NS",
    "CURRENCIES",
    "DIGITS",
    "DOCUMENT_SCHEME",
    "INVOICE",
    "INVOICE_NS",
    "LEGAL_SCHEMES",
    "MUTATORS",
    "NS",
    "PARTICIPANT_SCHEME",
    "PROCESS_SCHEME",
    "RATES",
    "UPPER",
    "BillingDocument",
    "Line",
    "WebhookDelivery",
    "almost_valid_api_key_requests",
    "almost_valid_document_type_ids",
    "almost_valid_organisations",
    "almost_valid_participant_identifiers",
    "api_key_requests",
    "billing_documents",
    "break_rule",
    "broken_documents",
    "catalogue",
    "complete",
    "contacts",
    "credit_notes",
    "document_type_ids",
    "invoices",
    "local_parts",
    "members",
    "message_level_statuses",
    "mls_documents",
    "organisations",
    "participant_identifiers",
    "process_ids",
    "sbds",
    "webhook_deliveries",
    "webhook_secrets",
]
