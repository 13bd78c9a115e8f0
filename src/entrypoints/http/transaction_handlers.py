"""Handlers of transactions: intake (direct, and by pre-signed URL), reading, artefacts and
confirmation; the AS4 endpoint is ``as4_handlers``."""

from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import AsyncIterator
from typing import Any

import attrs
import cattrs
from aiohttp import web
from dependency_injector.wiring import Provide

from fourcorner.application import intake, mls, transactions
from fourcorner.application.collections import ARTEFACTS, TRANSACTIONS
from fourcorner.application.context import Context
from fourcorner.application.idempotency import Keyed
from fourcorner.application.intake import UploadGrant
from fourcorner.application.ports import KeySealer
from fourcorner.application.transactions import Documents
from fourcorner.domain import clock
from fourcorner.domain import idempotency as idempotency_rules
from fourcorner.domain.errors import Forbidden, InvalidInput, NotFound
from fourcorner.domain.roles import Role
from fourcorner.domain.text import quoted
from fourcorner.domain.transaction import Artefact, ArtefactType, Direction
from fourcorner.domain.ubl import MlsRequest
from fourcorner.entrypoints.http import responses
from fourcorner.entrypoints.http.rendering import XML, ListReply
from fourcorner.entrypoints.http.routing import QueryParam, Reply, Req, Route, sorted_list
from fourcorner.entrypoints.http.spooling import DOCUMENT_TYPES, spool


def _ap(req: Req) -> uuid.UUID:
    text = req.raw.query.get("ap")
    if not text:
        raise InvalidInput.one("ap", "the query parameter ap (an access point id) is required")
    try:
        return uuid.UUID(text)
    except ValueError:
        raise InvalidInput.one("ap", f"{quoted(text)} is not a UUID") from None


def _mls(req: Req) -> MlsRequest:
    """The query parameters ``mlsType`` and ``mlsTo``: the MLS scopes of a bare UBL document."""
    return MlsRequest.parse(req.raw.query.get("mlsType"), req.raw.query.get("mlsTo"))


def _idempotency_key(req: Req) -> str | None:
    """The request's ``Idempotency-Key`` header, checked; None without one."""
    text = req.raw.headers.get(idempotency_rules.HEADER)
    return None if text is None else idempotency_rules.check_key(text)


async def _intake(
    req: Req,
    ctx: Context,
    docs: Documents,
    principal: Any,
    org_id: uuid.UUID,
    ap_id: uuid.UUID,
    wake: Any,
    mls: MlsRequest,
    key: str | None = None,
    upload: UploadGrant | None = None,
) -> Reply:
    """Take the document in (its bytes, or a file for a large one) and submit it; with an
    idempotency ``key``, the request is the access point and the document's bytes (a multipart
    form's ``file`` part: the same document in another form is the same request), hashed on
    the way (and only then: the hash is of no other use). ``mls``: the MLS scopes asked for a
    bare UBL document (``_mls``); ``upload``: the pre-signed URL the document was put to."""
    digest = None if key is None else hashlib.sha256()
    incoming = await spool(req.raw, docs.blobs.incoming, docs.max_bytes, digest)
    keyed = None if key is None or digest is None else Keyed.of(key, ap_id.bytes, digest.digest())
    answer = await intake.submit(ctx, docs, principal, org_id, ap_id, incoming, keyed, mls, upload)
    if callable(wake):
        wake()
    return Reply(answer.status, answer.body)


async def post_transaction(
    req: Req,
    ctx: Context = Provide["context"],
    docs: Documents = Provide["documents"],
    wake: object = Provide["sending_wake"],
) -> Reply:
    org_id, ap_id, key = req.path_uuid("orgId"), _ap(req), _idempotency_key(req)
    return await _intake(req, ctx, docs, req.caller, org_id, ap_id, wake, _mls(req), key)


async def upload_url(
    req: Req,
    ctx: Context = Provide["context"],
    sealer: KeySealer = Provide["sealer"],
    base_url: str = Provide["config.base_url"],
) -> Reply:
    grant = await intake.grant_upload(ctx, req.caller, req.path_uuid("orgId"), _ap(req))
    token = sealer.seal(json.dumps(_grant_json(grant)).encode(), context=b"upload")
    expires = clock.iso(clock.from_ns(int(grant.expires_at * 1_000_000_000)))
    return Reply(
        200, {"uploadUrl": f"{base_url}/uploads/{token}", "expiresAt": expires, "method": "PUT"}
    )


def _grant_json(grant: UploadGrant) -> dict[str, Any]:
    return {k: (str(v) if isinstance(v, uuid.UUID) else v) for k, v in attrs.asdict(grant).items()}


async def put_upload(
    req: Req,
    ctx: Context = Provide["context"],
    docs: Documents = Provide["documents"],
    sealer: KeySealer = Provide["sealer"],
    wake: object = Provide["sending_wake"],
) -> Reply:
    try:
        # an upload URL issued before sealing was versioned was sealed with the same context
        raw = json.loads(
            sealer.open(req.path("token"), context=b"upload", legacy_context=b"upload")
        )
        grant = UploadGrant(
            nonce=uuid.UUID(raw["nonce"]),
            org_id=uuid.UUID(raw["org_id"]),
            ap_id=uuid.UUID(raw["ap_id"]),
            user_id=raw["user_id"],
            key_id=uuid.UUID(raw["key_id"]) if raw["key_id"] else None,
            expires_at=float(raw["expires_at"]),
        )
    except (ValueError, KeyError, TypeError):
        raise Forbidden(reason="the upload URL is not valid") from None
    mls = _mls(req)
    await intake.check_upload(ctx, grant)  # before the body is read; spent with its transaction
    principal = await intake.principal_of(ctx, grant)
    return await _intake(
        req, ctx, docs, principal, grant.org_id, grant.ap_id, wake, mls, upload=grant
    )


async def _list(req: Req, ctx: Context, conv: cattrs.Converter, direction: Direction) -> Reply:
    result = await transactions.list_transactions(
        ctx, req.caller, req.path_uuid("orgId"), direction, req.listing()
    )
    items = [responses.TRANSACTION.dump(conv, t) for t in result.items]
    return Reply(200, {"items": items, "nextCursor": result.next_cursor})


async def from_network(
    req: Req, ctx: Context = Provide["context"], conv: cattrs.Converter = Provide["converter"]
) -> Reply:
    return await _list(req, ctx, conv, Direction.FROM_NETWORK)


async def to_network(
    req: Req, ctx: Context = Provide["context"], conv: cattrs.Converter = Provide["converter"]
) -> Reply:
    return await _list(req, ctx, conv, Direction.TO_NETWORK)


async def get_transaction(
    req: Req, ctx: Context = Provide["context"], conv: cattrs.Converter = Provide["converter"]
) -> Reply:
    tx = await transactions.get(
        ctx, req.caller, req.path_uuid("orgId"), req.path_uuid("transactionId")
    )
    return Reply(200, responses.TRANSACTION.dump(conv, tx))


async def list_artefacts(
    req: Req, ctx: Context = Provide["context"], conv: cattrs.Converter = Provide["converter"]
) -> Reply:
    result = await transactions.list_artefacts(
        ctx, req.caller, req.path_uuid("orgId"), req.path_uuid("transactionId"), req.listing()
    )
    items = [responses.ARTEFACT.dump(conv, a) for a in result.items]
    return Reply(200, {"items": items, "nextCursor": result.next_cursor})


async def _content(docs: Documents, a: Artefact) -> web.StreamResponse:
    """The artefact's blob: sent as a file when it is one, else streamed a piece at a time
    (from the database), never whole in memory."""
    path = docs.blobs.path(a.blob)
    if path is not None:
        if not path.exists():
            raise NotFound(resource="artefact content", ident=str(a.id))
        return web.FileResponse(path, headers={"Content-Type": a.content_type})
    pieces = docs.blobs.chunks(a.blob)
    try:
        first = await anext(pieces, b"")
    except (FileNotFoundError, KeyError):
        raise NotFound(resource="artefact content", ident=str(a.id)) from None

    async def body() -> AsyncIterator[bytes]:
        yield first
        async for piece in pieces:
            yield piece

    return web.Response(
        body=body(),
        headers={"Content-Type": a.content_type, "Content-Length": str(a.size)},
    )


async def artefact_content(
    req: Req, ctx: Context = Provide["context"], docs: Documents = Provide["documents"]
) -> Reply:
    a = await transactions.artefact(
        ctx,
        req.caller,
        req.path_uuid("orgId"),
        req.path_uuid("transactionId"),
        artefact_id=req.path_uuid("artefactId"),
    )
    return Reply(200, await _content(docs, a))


async def business_document(
    req: Req, ctx: Context = Provide["context"], docs: Documents = Provide["documents"]
) -> Reply:
    a = await transactions.artefact(
        ctx,
        req.caller,
        req.path_uuid("orgId"),
        req.path_uuid("transactionId"),
        kind=ArtefactType.BUSINESS_DOCUMENT,
    )
    return Reply(200, await _content(docs, a))


async def confirm(
    req: Req, ctx: Context = Provide["context"], wake: object = Provide["sending_wake"]
) -> Reply:
    job = await mls.confirm(ctx, req.caller, req.path_uuid("orgId"), req.path_uuid("transactionId"))
    if callable(wake):
        wake()
    return Reply(
        200, {"transactionId": req.path("transactionId"), "mlsResponseCode": job.mls_response_code}
    )


# --- routes ---------------------------------------------------------------------------------

_AP = QueryParam(
    "ap", {"type": "string", "format": "uuid"}, required=True, description="access point id"
)
_IDEMPOTENCY_KEY = QueryParam(
    "Idempotency-Key",
    {"type": "string", "minLength": 1, "maxLength": 255, "pattern": "^[ -~]+$"},
    description="names the request: the same key with the same access point and document "
    "within 24 hours answers as the first time (status and body) and sends nothing again; "
    "with another request, 409 AT-1101. Keys belong to the organisation.",
    where="header",
)
# the MLS scopes of a document sent bare (an SBD's header names its own)
_MLS = (
    QueryParam(
        "mlsType",
        {"type": "string", "enum": ["FAILURE_ONLY", "ALWAYS_SEND"]},
        description="for a bare UBL Invoice or CreditNote: the MLS_TYPE scope of the SBDH "
        "built for it",
    ),
    QueryParam(
        "mlsTo",
        {"type": "string", "pattern": "^[0-9]{4}:[^\\s]+$"},
        description="for a bare UBL Invoice or CreditNote: the participant (NNNN:local) its "
        "MLS_TO scope names",
    ),
)
# what taking in an SBD can answer: an empty, malformed, too large or mistyped body, a
# document that is not an SBD or not sendable, one sent already, a billing document that fails
# the validation rules (or breaks them), a validation that could not run
_UPLOAD_ERRORS = (
    "AT-1000",
    "AT-1001",
    "AT-1002",
    "AT-1003",
    "AT-1090",
    "AT-1100",
    "AT-1130",
    "AT-1131",
    "AT-1500",
)
M = Role.ORGMEMBER

ROUTES = (
    Route(
        "POST",
        "/orgs/{orgId}/transactions",
        post_transaction,
        "Upload an SBD file (raw XML, or multipart part 'file') and send it; 202 before any "
        "network I/O. A bare UBL Invoice or CreditNote is wrapped in an SBDH built from it "
        "(its sender must be one of the organisation's participants, else 403 AT-1022). A "
        "billing document is checked against the validation rules first: fatal errors are "
        "422 AT-1131 naming each failed rule (unless the organisation's validation is "
        "report). A document sent already is 409 AT-1100 with its transactionId. With "
        "an Idempotency-Key, the same request (access point and document bytes) within 24 "
        "hours gets the same answer; another request with the key is 409 AT-1101.",
        M,
        "transactions",
        response=responses.ACCEPTED,
        status=202,
        query=(_AP, _IDEMPOTENCY_KEY, *_MLS),
        errors=(*_UPLOAD_ERRORS, "AT-1022", "AT-1101"),
        content_type="application/json",
        takes=DOCUMENT_TYPES,
    ),
    Route(
        "GET",
        "/orgs/{orgId}/transactions/upload_url",
        upload_url,
        "A pre-signed, single-use URL (30 minutes) to PUT an SBD file to; it is sent as a "
        "POST would send it.",
        M,
        "transactions",
        response=responses.UPLOAD_URL,
        query=(_AP,),
    ),
    Route(
        "GET",
        "/orgs/{orgId}/transactions/from_network",
        from_network,
        "Received transactions.",
        M,
        "transactions",
        response=ListReply(responses.TRANSACTION),
        query=sorted_list(TRANSACTIONS),
    ),
    Route(
        "GET",
        "/orgs/{orgId}/transactions/to_network",
        to_network,
        "Sent transactions.",
        M,
        "transactions",
        response=ListReply(responses.TRANSACTION),
        query=sorted_list(TRANSACTIONS),
    ),
    Route(
        "GET",
        "/orgs/{orgId}/transactions/{transactionId}",
        get_transaction,
        "Get a transaction.",
        M,
        "transactions",
        response=responses.TRANSACTION,
    ),
    Route(
        "GET",
        "/orgs/{orgId}/transactions/{transactionId}/artefacts",
        list_artefacts,
        "The transaction's artefacts.",
        M,
        "transactions",
        response=ListReply(responses.ARTEFACT),
        query=sorted_list(ARTEFACTS),
    ),
    Route(
        "GET",
        "/orgs/{orgId}/transactions/{transactionId}/artefacts/{artefactId}",
        artefact_content,
        "An artefact's content.",
        M,
        "transactions",
        response=XML,
        content_type="application/xml",
        also=(("application/json", responses.VALIDATION),),
    ),
    Route(
        "GET",
        "/orgs/{orgId}/transactions/{transactionId}/business_document",
        business_document,
        "The stored SBD file.",
        M,
        "transactions",
        response=XML,
        content_type="application/xml",
    ),
    Route(
        "POST",
        "/orgs/{orgId}/transactions/{transactionId}/confirm",
        confirm,
        "Confirm a received document: its pending positive MLS is sent as AP (accepted "
        "with confirmation) instead of AB.",
        M,
        "transactions",
        response=responses.CONFIRMATION,
        errors=("AT-1090",),
    ),
    Route(
        "PUT",
        "/uploads/{token}",
        put_upload,
        "The pre-signed upload: PUT the raw SBD (the URL is the credential).",
        None,
        "transactions",
        response=responses.ACCEPTED,
        status=202,
        query=_MLS,
        errors=(*_UPLOAD_ERRORS, "AT-1022"),
        takes=DOCUMENT_TYPES,
    ),
)
