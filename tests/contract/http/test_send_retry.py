"""A send whose first attempt was received but whose answer was lost is retried with exactly
the same message: the receiver answers the MessageId it knows with the receipt it stored,
that receipt checks out, and the transaction completes. The document arrives once, and the
sender is never told to send it again (no ``transaction.send_failed``)."""

from __future__ import annotations

import uuid
from typing import Any

import aiohttp
import pytest
from aiohttp import web

from fourcorner.application.transactions import message_key
from fourcorner.entrypoints.container import resolve
from sbd_factory import make_sbd

from .conftest import BACKENDS, free_port
from .test_participants import ALICE, BOB, gln
from .test_transactions import _coro, inbox, receiving_participant, until

__all__ = ["inbox"]


class LosingProxy:
    """Stands between the network and the server's AS4 endpoint: every message is passed on,
    and the server's answer to the first one is lost (the connection is cut once the server
    has taken the message)."""

    def __init__(self) -> None:
        self.target = ""
        self.bodies: list[bytes] = []

    async def handle(self, request: web.Request) -> web.StreamResponse:
        body = await request.read()
        self.bodies.append(body)
        answer = await passed_on(request, body, self.target)
        if len(self.bodies) == 1:
            assert request.transport is not None
            request.transport.abort()
            return web.Response(status=204)
        return answer


async def passed_on(request: web.Request, body: bytes, target: str) -> web.Response:
    """The answer of the server at ``target`` to the AS4 message ``body`` of ``request``."""
    headers = {"Content-Type": request.headers["Content-Type"], "MIME-Version": "1.0"}
    async with (
        aiohttp.ClientSession() as session,
        session.post(target + request.path, data=body, headers=headers) as answer,
    ):
        content, status = await answer.read(), answer.status
        content_type = answer.headers["Content-Type"]
    return web.Response(status=status, body=content, headers={"Content-Type": content_type})


@pytest.mark.parametrize("backend", BACKENDS)
async def test_a_lost_answer_is_retried_with_the_same_message_and_completes(
    start_api, aiohttp_server, inbox, backend
):
    proxy = LosingProxy()
    app = web.Application()
    app.router.add_post("/as4/{org}/{ap}", proxy.handle)
    port = free_port()
    await aiohttp_server(app, port=port)
    api = await start_api(
        backend,
        workers=True,
        public=True,
        webhook_allow_private_targets=True,
        send_retry_delays="0.2",
        ap_host=f"http://127.0.0.1:{port}/as4",
    )
    proxy.target = str(api.client.make_url("")).rstrip("/")
    a = await api.org(ALICE)
    b = await api.org(BOB, legal_id="5560360793")
    sender, receiver = f"0088:{gln(62)}", f"0088:{gln(63)}"
    await receiving_participant(api, a, sender, ALICE)
    await receiving_participant(api, b, receiver, BOB)
    status, _ = await api.call(
        "POST",
        f"/orgs/{a['id']}/webhooks",
        as_=ALICE,
        json={"url": inbox.url, "events": ["transaction.sent", "transaction.send_failed"]},
    )
    assert status == 201
    _, aps = await api.call("GET", f"/orgs/{a['id']}/aps/alltouse", as_=ALICE)
    status, body = await api.call(
        "POST",
        f"/orgs/{a['id']}/transactions?ap={aps['items'][0]['id']}",
        as_=ALICE,
        data=make_sbd(sender=sender, receiver=receiver),
        headers={"Content-Type": "application/xml"},
    )
    assert status == 202, body
    tx_id = body["transactionId"]

    async def finished() -> Any:
        _, tx = await api.call("GET", f"/orgs/{a['id']}/transactions/{tx_id}", as_=ALICE)
        return tx if tx["transactionStatus"] in ("COMPLETED", "FAILED") else None

    tx = await until(finished)
    assert tx["transactionStatus"] == "COMPLETED", tx
    assert len(proxy.bodies) == 2 and proxy.bodies[0] == proxy.bodies[1]
    await until(lambda: _coro(inbox.events))
    assert [e["eventType"] for e in inbox.events] == ["transaction.sent"]
    _, got = await api.call("GET", f"/orgs/{b['id']}/transactions/from_network", as_=BOB)
    assert [t["docInstanceId"] for t in got["items"]] == [tx["docInstanceId"]]
    _, artefacts = await api.call(
        "GET", f"/orgs/{a['id']}/transactions/{tx_id}/artefacts", as_=ALICE
    )
    assert {x["type"] for x in artefacts["items"]} == {
        "BUSINESS_DOCUMENT",
        "VALIDATION_RESULT",  # the invoice was checked at intake
        "TRANSACTION_RECEIPT",
    }
    # the message kept between the attempts is gone once the send is finished
    docs = await resolve(api.container.documents)
    with pytest.raises((FileNotFoundError, KeyError)):
        await docs.blobs.get(message_key(uuid.UUID(tx_id)))
