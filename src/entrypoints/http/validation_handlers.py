"""``POST /validation``: check a billing document against the published rules.

The body (raw XML, or the ``file`` part of a multipart form) is taken in under the same bound
as intake's SBDs (a large one streamed to a file, removed whatever the outcome), then checked
by the ``DocumentValidator``.

The validator's workers also check every document sent (intake) and received (AS4 inbound),
and a large document takes them seconds (13.6 MB: 4.3 s). So that checks asked for by hand
cannot keep those waiting, each process runs at most ``Checks.most`` of them at once (one more
is refused at once, 503 ``AT-1505`` with ``Retry-After``: checked before the body is read, and
again once it is), and the validator serves them only when no other document waits for it
(``low_priority``): a document sent or received waits at most for the one being checked.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

import cattrs
from dependency_injector.wiring import Provide

from fourcorner.application.ports import DocumentValidator
from fourcorner.application.transactions import Documents
from fourcorner.domain.roles import Role
from fourcorner.entrypoints.http import responses
from fourcorner.entrypoints.http.errors import ValidationBusy
from fourcorner.entrypoints.http.routing import Reply, Req, Route
from fourcorner.entrypoints.http.spooling import DOCUMENT_TYPES, spool

EXPECTED = "a UBL or CII document, or an SBD holding one,"

MOST = 1
"""Checks for ``POST /validation`` one process runs at once: one, so that those and the
documents sent and received share the validator's workers (one, by default on 2 cores) at
most one document to one."""

RETRY_AFTER = 5
"""Seconds a refused caller is told to wait: about the time a large document takes (13.6 MB:
4.3 s); a usual invoice takes tens of milliseconds."""


class Checks:
    """The checks for ``POST /validation`` running in this process: at most ``most``."""

    def __init__(self, most: int = MOST, retry_after: int = RETRY_AFTER) -> None:
        if most < 1 or retry_after < 1:
            raise ValueError("most >= 1 and retry_after >= 1")
        self.most = most
        self.retry_after = retry_after
        self.running = 0

    def room(self) -> None:
        """``ValidationBusy`` when ``most`` checks are running."""
        if self.running >= self.most:
            raise ValidationBusy(limit=self.most, retry_after=self.retry_after)

    @contextlib.contextmanager
    def held(self) -> Iterator[None]:
        """The block as one check, given up however it ends; ``ValidationBusy`` (the block
        not run) when there is no room. Counted and checked with no ``await`` between."""
        self.room()
        self.running += 1
        try:
            yield
        finally:
            self.running -= 1


async def validate(
    req: Req,
    docs: Documents = Provide["documents"],
    validator: DocumentValidator = Provide["validator"],
    conv: cattrs.Converter = Provide["converter"],
    checks: Checks = Provide["validation_checks"],
) -> Reply:
    checks.room()  # refused unread while busy
    document = await spool(req.raw, docs.blobs.incoming, docs.max_bytes, expected=EXPECTED)
    try:
        with checks.held():  # another may have begun while this body was read
            result = await validator.validate(document, low_priority=True)
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
        "checked. Each server process checks one such document at a time, after the "
        "documents being sent and received: one more is refused at once (503 AT-1505, "
        "Retry-After).",
        Role.USER,
        "validation",
        response=responses.VALIDATION,
        errors=("AT-1000", "AT-1001", "AT-1002", "AT-1003", "AT-1130", "AT-1500", "AT-1505"),
        takes=DOCUMENT_TYPES,
    ),
)
