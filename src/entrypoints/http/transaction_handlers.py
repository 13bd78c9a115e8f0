"""Handlers of transactions: intake (direct, and by pre-signed URL), reading, artefacts, and
the AS4 endpoint of every access point."""

from __future__ import annotations

import asyncio
import hashlib
import json
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import attrs
from aiohttp import BodyPartReader, StreamReader, web
from dependency_injector.wiring import Provide

from fourcorner.application import exchange as exchange_cases
from fourcorner.application import transactions
from fourcorner.application.context import Context
from fourcorner.application.exchange import Exchange, receive, record
from fourcorner.application.idempotency import Keyed
from fourcorner.application.ports import KeySealer
from fourcorner.application.transactions import Documents, UploadGrant
from fourcorner.domain import clock
from fourcorner.domain import idempotency as idempotency_rules
from fourcorner.domain.errors import (
    BodyTooLarge,
    Forbidden,
    InvalidInput,
    MalformedBody,
    NotFound,
    UnsupportedMediaType,
)
from fourcorner.domain.transaction import Artefact, ArtefactType, Direction
from fourcorner.entrypoints.http.routing import CLOSE_UNREAD, Reply, Req

XML_TYPES = ("application/xml", "text/xml")
CHUNK = 256 * 1024


async def _spool(
    request: web.Request,
    target: Path,
    limit: int,
    digest: Any = None,
    expected: str = "an SBD file",
) -> None:
    """Stream the SBD of ``request`` (raw XML, or the ``file`` part of a multipart form) to
    ``target``, refusing more than ``limit`` bytes without holding the body in memory;
    ``digest`` (a ``hashlib`` hash) is fed the SBD's bytes on the way. ``expected`` names what
    the body should be, for the refusal of an empty one."""
    if request.content_length is not None and request.content_length > limit:
        raise BodyTooLarge(limit=limit)
    ctype = request.content_type
    if ctype in XML_TYPES:
        stream: StreamReader | BodyPartReader = request.content
    elif ctype == "multipart/form-data":
        stream = await _file_part(request)
    else:
        raise UnsupportedMediaType(got=ctype, expected="application/xml or multipart/form-data")
    if await _copy(stream, target, limit, digest) == 0:
        raise MalformedBody(reason=f"the body is empty; {expected} is expected")


async def _copy(
    stream: StreamReader | BodyPartReader, target: Path, limit: int, digest: Any = None
) -> int:
    """Stream ``stream`` to the file ``target`` a chunk at a time, refusing more than ``limit``
    bytes; returns the size. A sender that hangs up midway is bad input, not an error of ours.
    ``digest``: a ``hashlib`` hash that each chunk updates."""
    size = 0
    with target.open("wb") as out:
        while True:
            try:
                chunk = await (
                    stream.read_chunk(CHUNK)
                    if isinstance(stream, BodyPartReader)
                    else stream.read(CHUNK)
                )
            except ConnectionError:
                raise MalformedBody(
                    reason="the connection was lost before the body ended"
                ) from None
            if not chunk:
                return size
            size += len(chunk)
            if size > limit:
                raise BodyTooLarge(limit=limit)
            if digest is not None:
                digest.update(chunk)
            await asyncio.to_thread(out.write, chunk)


async def _file_part(request: web.Request) -> BodyPartReader:
    try:
        reader = await request.multipart()
        while True:
            part = await reader.next()
            if part is None:
                break
            if isinstance(part, BodyPartReader) and part.name == "file":
                return part
    except (ValueError, AssertionError) as e:
        raise MalformedBody(reason=f"the multipart body is malformed ({e})") from None
    raise InvalidInput.one("file", "a multipart body needs a part named file")


def _ap(req: Req) -> uuid.UUID:
    text = req.raw.query.get("ap")
    if not text:
        raise InvalidInput.one("ap", "the query parameter ap (an access point id) is required")
    try:
        return uuid.UUID(text)
    except ValueError:
        raise InvalidInput.one("ap", f"{text!r} is not a UUID") from None


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
    key: str | None = None,
) -> Reply:
    """Spool the document to a file, hashing it on the way, and submit it; with an
    idempotency ``key``, the request is the access point and the document's bytes (a
    multipart form's ``file`` part: the same document in another form is the same request)."""
    incoming = docs.blobs.incoming()
    digest = hashlib.sha256()
    try:
        await _spool(req.raw, incoming, docs.max_bytes, digest)
    except BaseException:
        incoming.unlink(missing_ok=True)
        raise
    keyed = None if key is None else Keyed.of(key, ap_id.bytes, digest.digest())
    answer = await transactions.submit(ctx, docs, principal, org_id, ap_id, incoming, keyed)
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
    return await _intake(req, ctx, docs, req.caller, org_id, ap_id, wake, key)


async def upload_url(
    req: Req,
    ctx: Context = Provide["context"],
    sealer: KeySealer = Provide["sealer"],
    base_url: str = Provide["config.base_url"],
) -> Reply:
    grant = await transactions.grant_upload(ctx, req.caller, req.path_uuid("orgId"), _ap(req))
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
    await transactions.use_upload(ctx, grant)
    principal = await transactions.principal_of(ctx, grant)
    return await _intake(req, ctx, docs, principal, grant.org_id, grant.ap_id, wake)


async def _list(req: Req, ctx: Context, direction: Direction) -> Reply:
    result = await transactions.list_transactions(
        ctx, req.caller, req.path_uuid("orgId"), direction, req.listing()
    )
    return Reply(
        200, {"items": [record(t) for t in result.items], "nextCursor": result.next_cursor}
    )


async def from_network(req: Req, ctx: Context = Provide["context"]) -> Reply:
    return await _list(req, ctx, Direction.FROM_NETWORK)


async def to_network(req: Req, ctx: Context = Provide["context"]) -> Reply:
    return await _list(req, ctx, Direction.TO_NETWORK)


async def get_transaction(req: Req, ctx: Context = Provide["context"]) -> Reply:
    tx = await transactions.get(
        ctx, req.caller, req.path_uuid("orgId"), req.path_uuid("transactionId")
    )
    return Reply(200, record(tx))


def artefact_view(a: Artefact) -> dict[str, Any]:
    return {
        "id": str(a.id),
        "type": a.type.value,
        "contentType": a.content_type,
        "size": a.size,
        "createdAt": clock.iso(a.created_at),
    }


async def list_artefacts(req: Req, ctx: Context = Provide["context"]) -> Reply:
    found = await transactions.artefacts(
        ctx, req.caller, req.path_uuid("orgId"), req.path_uuid("transactionId")
    )
    return Reply(200, {"items": [artefact_view(a) for a in found], "nextCursor": None})


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
    job = await exchange_cases.confirm(
        ctx, req.caller, req.path_uuid("orgId"), req.path_uuid("transactionId")
    )
    if callable(wake):
        wake()
    return Reply(
        200, {"transactionId": req.path("transactionId"), "mlsResponseCode": job.mls_response_code}
    )


async def as4_inbound(
    req: Req,
    ctx: Context = Provide["context"],
    docs: Documents = Provide["documents"],
    exchange: Exchange = Provide["exchange"],
    gate: asyncio.Semaphore = Provide["as4_gate"],
    wake: object = Provide["sending_wake"],
) -> Reply:
    """The AS4 endpoint of an access point. The access point is looked up first: a message to
    none is refused unread, its connection closed. A known one's message is streamed to a file
    (at most ``gate``'s number at once, each under the size limit), and read from there."""
    raw = req.raw
    raw[CLOSE_UNREAD] = True
    try:
        org_id, ap_id = req.path_uuid("orgId"), req.path_uuid("apId")
    except InvalidInput:
        raise NotFound(resource="access point", ident=raw.path) from None
    to = await exchange_cases.receiver(ctx, org_id, ap_id)
    if to is None:
        raise NotFound(resource="access point", ident=str(ap_id))
    limit = docs.max_bytes * 2 + 1024 * 1024  # encrypted and MIME-framed, before gunzip
    if raw.content_length is not None and raw.content_length > limit:
        raise BodyTooLarge(limit=limit)
    async with gate:
        body = docs.blobs.incoming()
        try:
            await _copy(raw.content, body, limit)
            answer = await receive(
                ctx, docs, exchange, to, raw.headers.get("Content-Type", ""), body
            )
        finally:
            body.unlink(missing_ok=True)
    if callable(wake):
        wake()
    return Reply(
        answer.status,
        web.Response(
            status=answer.status, body=answer.body, headers={"Content-Type": answer.content_type}
        ),
    )
