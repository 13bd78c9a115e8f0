"""``POST /validation``: check a billing document against the published rules.

The body (raw XML, or the ``file`` part of a multipart form) is streamed to a file under the
same bound as intake's SBDs, then checked by the ``DocumentValidator``; the file is removed
whatever the outcome.
"""

from __future__ import annotations

from typing import Any

from dependency_injector.wiring import Provide

from fourcorner.application.ports import DocumentValidator
from fourcorner.application.transactions import Documents
from fourcorner.domain.validation import FailedAssert, ValidationResult
from fourcorner.entrypoints.http.routing import Reply, Req
from fourcorner.entrypoints.http.transaction_handlers import _spool

EXPECTED = "a UBL or CII document, or an SBD holding one,"

_FAILED = {
    "type": "object",
    "properties": {
        "id": {"type": "string", "description": "the rule, e.g. BR-CO-15"},
        "flag": {"type": "string", "enum": ["fatal", "warning"]},
        "location": {"type": "string", "description": "XPath of the node the rule failed on"},
        "text": {"type": "string"},
    },
    "required": ["id", "flag", "location", "text"],
}
RESPONSE = {
    "type": "object",
    "properties": {
        "valid": {
            "type": ["boolean", "null"],
            "description": "no fatal rule failed; null when the document was not checked",
        },
        "checked": {
            "type": "boolean",
            "description": "the rules apply to the document (a UBL Invoice or CreditNote, a CII "
            "CrossIndustryInvoice) and were run",
        },
        "customizationId": {"type": ["string", "null"]},
        "profileId": {"type": ["string", "null"]},
        "rules": {"type": "string", "description": "the rule sets run, with their versions"},
        "errors": {"type": "array", "items": _FAILED, "description": "failed fatal asserts"},
        "warnings": {"type": "array", "items": _FAILED, "description": "failed warnings"},
    },
    "required": [
        "valid",
        "checked",
        "customizationId",
        "profileId",
        "rules",
        "errors",
        "warnings",
    ],
}


def _failed(f: FailedAssert) -> dict[str, str]:
    return {"id": f.id, "flag": f.flag.value, "location": f.location, "text": f.text}


def view(result: ValidationResult) -> dict[str, Any]:
    return {
        "valid": result.valid,
        "checked": result.checked,
        "customizationId": result.customization_id,
        "profileId": result.profile_id,
        "rules": result.rules,
        "errors": [_failed(f) for f in result.errors],
        "warnings": [_failed(f) for f in result.warnings],
    }


async def validate(
    req: Req,
    docs: Documents = Provide["documents"],
    validator: DocumentValidator = Provide["validator"],
) -> Reply:
    incoming = docs.blobs.incoming()
    try:
        await _spool(req.raw, incoming, docs.max_bytes, expected=EXPECTED)
        result = await validator.validate(incoming)
    finally:
        incoming.unlink(missing_ok=True)
    return Reply(200, view(result))
