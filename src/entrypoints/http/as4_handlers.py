"""The AS4 endpoint of every access point of the service (corner 3 of the four corners)."""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path

from aiohttp import web
from dependency_injector.wiring import Provide

from fourcorner.application import receiving
from fourcorner.application.context import Context
from fourcorner.application.ports import KeySealer
from fourcorner.application.receiving import receive
from fourcorner.application.sending import Exchange
from fourcorner.application.transactions import Documents
from fourcorner.domain.errors import InvalidInput, NotFound
from fourcorner.entrypoints.http.address_limit import AddressLimit
from fourcorner.entrypoints.http.errors import BodyTooLarge
from fourcorner.entrypoints.http.proxy import client_address
from fourcorner.entrypoints.http.rendering import XML
from fourcorner.entrypoints.http.routing import Reply, Req, Route
from fourcorner.entrypoints.http.spooling import CHUNK, PACE, body


async def as4_inbound(
    req: Req,
    ctx: Context = Provide["context"],
    sealer: KeySealer = Provide["sealer"],
    docs: Documents = Provide["documents"],
    exchange: Exchange = Provide["exchange"],
    gate: asyncio.Semaphore = Provide["as4_gate"],
    spools: asyncio.Semaphore = Provide["as4_spools"],
    readers: asyncio.Semaphore = Provide["as4_readers"],
    per_address: AddressLimit = Provide["as4_per_address"],
    spools_per_address: AddressLimit = Provide["as4_spools_per_address"],
    wake: object = Provide["sending_wake"],
) -> Reply:
    """The AS4 endpoint of an access point. The access point is looked up first (after the
    count per address, below): a message to none is refused unread, its connection closed
    (``lingering``). A known one's message is
    taken in under the size limit (a small one in memory, a large one streamed to a file) and
    the app's bounds of time (``spooling.Pace``: a sender that stalls or trickles is refused
    and cut off), then read from there, at most ``gate``'s number at once. The body is taken
    in before the gate, so senders that are slow to send it hold none of its turns; one that
    may be larger than ``CHUNK`` (announced so, not announced, or compressed: aiohttp
    inflates it as it is read) first waits for one of ``spools``, held until its file is
    removed, so as many are on disk at most; a smaller one for one of ``readers``, held until
    it is answered, so as many are in memory at most.

    One client address (behind a trusted proxy, the one it forwards: ``proxy``) has at most
    ``per_address``'s limit of messages in flight: one more is refused at once, before
    anything else and unread (503 ``AT-1504`` with ``Retry-After``, which an AS4 sender tries
    again; the connection closed, lingering). The count covers the
    whole request, the wait for a place and for the gate included, not only the time it holds
    a place: a request waiting for a place must count, since asyncio's semaphores wake their
    waiters first come first served, so an address's queue of waiters would take each place
    as it came free; and a place, once had, is held through the gate until the answer (a
    reader) or the file's removal (a spool), so counting to the answer is what bounds the
    places one address holds, however slowly or quickly it sends. Of the places on disk, one
    address holds at most ``spools_per_address``'s (a quarter: ``address_limit.spool_share``);
    one more large message of it is refused the same way, before it waits for one."""
    raw = req.raw
    client = client_address(raw)
    with per_address.held(client):
        try:
            org_id, ap_id = req.path_uuid("orgId"), req.path_uuid("apId")
        except InvalidInput:
            raise NotFound(resource="access point", ident=raw.match_info["apId"]) from None
        to = await receiving.receiver(ctx, sealer, org_id, ap_id)
        if to is None:
            raise NotFound(resource="access point", ident=str(ap_id))
        limit = docs.max_bytes * 2 + 1024 * 1024  # encrypted and MIME-framed, before gunzip
        if raw.content_length is not None and raw.content_length > limit:
            raise BodyTooLarge(limit=limit)
        encoded = raw.headers.get("Content-Encoding", "").strip().lower() not in ("", "identity")
        large = encoded or raw.content_length is None or raw.content_length >= CHUNK
        with spools_per_address.held(client) if large else contextlib.nullcontext():
            async with spools if large else readers:
                pace = raw.config_dict[PACE]
                message = await body(raw.content, docs.blobs.incoming, limit, pace=pace)
                try:
                    async with gate:
                        ctype = raw.headers.get("Content-Type", "")
                        answer = await receive(ctx, docs, exchange, to, ctype, message)
                finally:
                    if isinstance(message, Path):
                        message.unlink(missing_ok=True)
    if callable(wake):
        wake()
    return Reply(
        answer.status,
        web.Response(
            status=answer.status, body=answer.body, headers={"Content-Type": answer.content_type}
        ),
    )


def routes(as4_prefix: str = "/as4") -> tuple[Route, ...]:
    return (
        Route(
            "POST",
            as4_prefix + "/{orgId}/{apId}",
            as4_inbound,
            "The access point's AS4 endpoint (multipart/related ebMS 3 user messages); answers "
            "a signed receipt or a signed ebMS error.",
            None,
            "as4",
            response=XML,
            content_type="application/soap+xml",
            # AT-1500 also while the revocation of the sender's certificate cannot be checked
            # (FOURCORNER_REVOCATION=hard)
            errors=("AT-1000", "AT-1002", "AT-1500", "AT-1501", "AT-1504"),
        ),
    )
