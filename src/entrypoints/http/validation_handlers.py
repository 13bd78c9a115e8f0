"""``POST /validation``: check a billing document against the published rules.

The body (raw XML, or the ``file`` part of a multipart form) is streamed to a file under the
same bound as intake's SBDs, then checked by the ``DocumentValidator``; the file is removed
whatever the outcome.
"""

from __future__ import annotations

import attrs
import cattrs
from dependency_injector.wiring import Provide

from fourcorner.application.ports import DocumentValidator
from fourcorner.application.transactions import Documents
from fourcorner.domain.roles import Role
from fourcorner.domain.validation import Flag
from fourcorner.entrypoints.http.rendering import Answer, shown
from fourcorner.entrypoints.http.routing import Reply, Req, Route
from fourcorner.entrypoints.http.spooling import DOCUMENT_TYPES, spool

EXPECTED = "a UBL or CII document, or an SBD holding one,"


@attrs.frozen
class FailedAssertResponse:
    id: str = shown(description="the rule, e.g. BR-CO-15")
    flag: Flag
    location: str = shown(description="XPath of the node the rule failed on")
    text: str


@attrs.frozen
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


VALIDATION = Answer(ValidationResponse, "ValidationResult")


async def validate(
    req: Req,
    docs: Documents = Provide["documents"],
    validator: DocumentValidator = Provide["validator"],
    conv: cattrs.Converter = Provide["converter"],
) -> Reply:
    incoming = docs.blobs.incoming()
    try:
        await spool(req.raw, incoming, docs.max_bytes, expected=EXPECTED)
        result = await validator.validate(incoming)
    finally:
        incoming.unlink(missing_ok=True)
    return Reply(200, VALIDATION.dump(conv, result))


ROUTES = (
    Route(
        "POST",
        "/validation",
        validate,
        "Check a billing document (raw XML, or multipart part 'file'): a UBL Invoice or "
        "CreditNote, a CII CrossIndustryInvoice, or an SBD holding one, against the EN 16931 "
        "and BIS Billing 3.0 rules of its syntax; any other document is answered as not "
        "checked.",
        Role.USER,
        "validation",
        response=VALIDATION,
        errors=("AT-1000", "AT-1001", "AT-1002", "AT-1003", "AT-1130", "AT-1500"),
        takes=DOCUMENT_TYPES,
    ),
)
