"""The answers that are not records: the ids an operation changed, an accepted document, an
upload URL, a migration key, a refusal (``ErrorResponse``), a validation result. Their
``Answer``s are in ``responses`` with the others."""

from __future__ import annotations

import uuid
from datetime import datetime

import attrs

from fourcorner.domain.network_services import Environment
from fourcorner.domain.transaction import Status
from fourcorner.domain.validation import Flag
from fourcorner.entrypoints.http.rendering import response_class, shown


@attrs.frozen
class IdsResponse:
    """The ids of the resources an operation changed."""

    ids: tuple[str, ...]


@attrs.frozen
class StatusResponse:
    status: str


@attrs.frozen
class AcceptedResponse:
    """A document taken for sending (or the answer of an earlier, identical request)."""

    transaction_id: uuid.UUID
    transaction_status: Status


@response_class
class UploadUrlResponse:
    upload_url: str
    expires_at: datetime
    method: str = shown(schema={"type": "string", "const": "PUT"})


@attrs.frozen
class MigrationKeyResponse:
    """A participant's move away prepared in the SML: the key, shown this once."""

    participant_id: uuid.UUID
    participant_identifier: str
    environment: Environment
    migration_key: str


@attrs.frozen
class ConfirmationResponse:
    transaction_id: uuid.UUID
    mls_response_code: str


@response_class
class ErrorDetail:
    """One problem with one part of the input; a failed validation rule (AT-1131) also
    names the rule (``id``), where it failed (``location``, an XPath) and what it says."""

    field: str
    problem: str
    id: str | None = shown(omit_none=True, source="rule", description="the failed rule")
    location: str | None = shown(omit_none=True, source="field")
    text: str | None = shown(omit_none=True, source="problem")


@response_class
class ErrorResponse:
    """The body of every refusal (``app.error_response``)."""

    code: str = shown(schema={"type": "string", "pattern": "^AT-[0-9]{4}$"})
    error: str
    details: tuple[ErrorDetail, ...] | None = shown(omit_none=True)
    transaction_id: uuid.UUID | None = shown(
        omit_none=True,
        description="AT-1100 (document sent already): the transaction that sent it",
    )
    category: str | None = shown(
        omit_none=True,
        schema={"type": "string", "enum": ["VALIDATION_ERROR"]},
        description="AT-1131 (the document fails the validation rules): VALIDATION_ERROR",
    )
    action: str | None = shown(
        omit_none=True,
        schema={"type": "string", "enum": ["FIX_AND_RETRY"]},
        description="AT-1131: FIX_AND_RETRY",
    )


@response_class
class FailedAssertResponse:
    id: str = shown(description="the rule, e.g. BR-CO-15")
    flag: Flag
    location: str = shown(description="XPath of the node the rule failed on")
    text: str


@response_class
class ValidationResponse:
    valid: bool | None = shown(
        description="no fatal rule failed; null when the document was not checked"
    )
    checked: bool = shown(
        description="the rules apply to the document (a UBL Invoice or CreditNote, a CII "
        "CrossIndustryInvoice) and were run"
    )
    customization_id: str | None
    profile_id: str | None
    rules: str = shown(description="the rule sets run, with their versions")
    errors: tuple[FailedAssertResponse, ...] = shown(description="failed fatal asserts")
    warnings: tuple[FailedAssertResponse, ...] = shown(description="failed warnings")
