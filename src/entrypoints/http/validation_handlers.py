"""``POST /validation``: check a billing document against the published rules.

The body (raw XML, or the ``file`` part of a multipart form) is taken in under the same bound
as intake's SBDs (a large one streamed to a file, removed whatever the outcome), then checked
by the ``DocumentValidator``.
"""

from __future__ import annotations

from pathlib import Path

import cattrs
from dependency_injector.wiring import Provide

from fourcorner.application.ports import DocumentValidator
from fourcorner.application.transactions import Documents
from fourcorner.domain.roles import Role
from fourcorner.entrypoints.http import responses
from fourcorner.entrypoints.http.routing import Reply, Req, Route
from fourcorner.entrypoints.http.spooling import DOCUMENT_TYPES, spool

EXPECTED = "a UBL or CII document, or an SBD holding one,"


async def validate(
    req: Req,
    docs: Documents = Provide["documents"],
    validator: DocumentValidator = Provide["validator"],
    conv: cattrs.Converter = Provide["converter"],
) -> Reply:
    document = await spool(req.raw, docs.blobs.incoming, docs.max_bytes, expected=EXPECTED)
    try:
        result = await validator.validate(document)
    finally:
        if isinstance(document, Path):
            document.unlink(missing_ok=True)
    return Reply(200, responses.VALIDATION.dump(conv, result))


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
        response=responses.VALIDATION,
        errors=("AT-1000", "AT-1001", "AT-1002", "AT-1003", "AT-1130", "AT-1500"),
        takes=DOCUMENT_TYPES,
    ),
)
