"""Peers' answers are read with a cap (``adapters.answer``): the helper itself, and the adapters
that read what a peer answers. An endless body costs the webhook sender and the AS4 sender a
bounded amount of memory (measured with tracemalloc, server included); an oversized answer is
the adapter's own failure. The SMP lookup and the OIDC key set have theirs in their suites."""

from __future__ import annotations

import tracemalloc
from collections.abc import Callable, Coroutine
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from aiohttp import web
from cryptography.hazmat.primitives import serialization
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fourcorner.adapters.answer import AnswerTooLarge, read_capped, read_head
from fourcorner.adapters.as4.service import MAX_ANSWER_BYTES, As4Transport
from fourcorner.adapters.directory import IndexerDirectoryPublisher
from fourcorner.adapters.pki import ensure_test_pki
from fourcorner.adapters.pki.testpki import TestPki
from fourcorner.adapters.sql.codec import make_converter
from fourcorner.adapters.webhooks import Http1WebhookSender
from fourcorner.adapters.webhooks.sender import KEPT_ANSWER_BYTES
from fourcorner.application.ports import Credentials, Endpoint, Refused
from fourcorner.domain.envelope import Addressing
from fourcorner.domain.webhook import Attempt
from sbd_factory import make_envelope, make_sbd

MiB = 1024 * 1024
PIECE = b"x" * 65536
ENDLESS_SAFETY = 256 * MiB  # "endless" stops here, so a regression fails instead of eating RAM

ServerFactory = Callable[[web.Application], Coroutine[Any, Any, Any]]


class Peer:
    """A peer on 127.0.0.1 whose answers are ``/endless`` (a body that does not end, with the
    status of ``?status=``), ``/declared/{n}`` (n bytes with a Content-Length) and
    ``/chunked/{n}`` (n bytes, chunked, without one)."""

    def __init__(self) -> None:
        self.base = ""
        self.streamed = 0

    def app(self) -> web.Application:
        app = web.Application()
        for method in ("GET", "POST", "PUT"):
            app.router.add_route(method, "/endless", self.endless)
            app.router.add_route(method, "/endless/", self.endless)  # the indexer's URL form
            app.router.add_route(method, "/declared/{n}", self.declared)
            app.router.add_route(method, "/chunked/{n}", self.chunked)
        return app

    def url(self, path: str) -> str:
        return self.base + path

    async def endless(self, request: web.Request) -> web.StreamResponse:
        await request.read()
        resp = web.StreamResponse(status=int(request.query.get("status", "200")))
        resp.content_type = "application/soap+xml"
        await resp.prepare(request)
        try:
            while self.streamed < ENDLESS_SAFETY:
                await resp.write(PIECE)
                self.streamed += len(PIECE)
        except ConnectionError:
            pass  # the client stopped reading and went away
        return resp

    async def declared(self, request: web.Request) -> web.Response:
        await request.read()
        return web.Response(body=b"y" * int(request.match_info["n"]))

    async def chunked(self, request: web.Request) -> web.StreamResponse:
        await request.read()
        resp = web.StreamResponse()
        resp.enable_chunked_encoding()
        await resp.prepare(request)
        left = int(request.match_info["n"])
        while left:
            piece = min(left, 10_000)
            await resp.write(b"y" * piece)
            left -= piece
        await resp.write_eof()
        return resp


@pytest.fixture
async def peer(aiohttp_server: ServerFactory) -> Peer:
    p = Peer()
    server = await aiohttp_server(p.app())
    p.base = str(server.make_url("")).rstrip("/")
    return p


class Traced:
    """The peak of Python memory allocated over a block, above what was in use at its start."""

    def __enter__(self) -> Traced:
        tracemalloc.start()
        tracemalloc.reset_peak()
        self.start = tracemalloc.get_traced_memory()[0]
        return self

    def __exit__(self, *_: object) -> None:
        self.peak = tracemalloc.get_traced_memory()[1] - self.start
        tracemalloc.stop()


# --- the helper ----------------------------------------------------------------------------


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    size=st.integers(0, 200_000),
    limit=st.integers(0, 200_000),
    kind=st.sampled_from(["declared", "chunked"]),
)
async def test_read_capped_is_the_body_up_to_the_limit_and_refuses_more(
    peer: Peer, size: int, limit: int, kind: str
) -> None:
    async with aiohttp.ClientSession() as s, s.get(peer.url(f"/{kind}/{size}")) as resp:
        if size > limit:
            with pytest.raises(AnswerTooLarge) as caught:
                await read_capped(resp, limit)
            assert caught.value.limit == limit
        else:
            assert await read_capped(resp, limit) == b"y" * size


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(size=st.integers(0, 200_000), limit=st.integers(0, 200_000))
async def test_read_head_is_the_start_of_the_body(peer: Peer, size: int, limit: int) -> None:
    async with aiohttp.ClientSession() as s, s.get(peer.url(f"/chunked/{size}")) as resp:
        assert await read_head(resp, limit) == b"y" * min(size, limit)


async def test_an_endless_body_is_read_only_to_the_cap(peer: Peer) -> None:
    with Traced() as traced:
        async with aiohttp.ClientSession() as s, s.get(peer.url("/endless")) as resp:
            with pytest.raises(AnswerTooLarge):
                await read_capped(resp, 4 * MiB)
    assert traced.peak <= 16 * MiB, f"{traced.peak / MiB:.1f} MiB"


# --- webhooks ------------------------------------------------------------------------------


async def test_a_webhook_receiver_streaming_forever_costs_little_and_its_start_is_kept(
    peer: Peer,
) -> None:
    sender = Http1WebhookSender(allow_private_targets=True, timeout=30)
    try:
        with Traced() as traced:
            result = await sender.send(peer.url("/endless?status=200"), b"{}", {})
    finally:
        await sender.aclose()
    assert traced.peak <= 16 * MiB, f"{traced.peak / MiB:.1f} MiB"
    assert (result.status_code, result.error) == (200, None)
    assert result.response_body == "x" * KEPT_ANSWER_BYTES
    assert peer.streamed < ENDLESS_SAFETY


@pytest.mark.parametrize(("size", "kept"), [(0, ""), (10, "y" * 10), (5000, "y" * 1024)])
async def test_a_webhook_attempt_keeps_the_first_kib_of_the_answer(
    peer: Peer, size: int, kept: str
) -> None:
    sender = Http1WebhookSender(allow_private_targets=True)
    try:
        result = await sender.send(peer.url(f"/declared/{size}"), b"{}", {})
    finally:
        await sender.aclose()
    assert (result.status_code, result.response_body) == (200, kept)


def test_an_attempt_stored_before_answers_were_kept_still_reads() -> None:
    stored = {"number": 1, "at": "2026-01-02T10:00:00.000000+00:00", "duration_ms": 3.5}
    attempt = make_converter().structure({**stored, "status_code": 500}, Attempt)
    assert (attempt.status_code, attempt.response_body) == (500, None)


# --- AS4 -----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> TestPki:
    return ensure_test_pki(Path(tmp_path_factory.getbasetemp()) / "as4-pki")


async def as4_send(pki: TestPki, url: str, *, now: datetime | None = None) -> Any:
    """What the AS4 transport makes of posting a message to ``url`` (on a clock stopped at
    ``now``, when given)."""
    der = pki.ap_certificate.public_bytes(serialization.Encoding.DER)
    credentials = Credentials(
        pki.ap_certificate.public_bytes(serialization.Encoding.PEM).decode(),
        pki.ap_key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        ).decode(),
    )
    transport = As4Transport(timeout=30, clock=lambda: now or datetime.now(UTC))
    try:
        endpoint = Endpoint(url, der, "peppol-transport-as4-v2_0")
        prepared = await transport.prepare(
            sbd=make_sbd(),
            addressing=Addressing.of(make_envelope()),
            endpoint=endpoint,
            credentials=credentials,
            message_id="m-1@fourcorner",
        )
        return await transport.send(prepared, endpoint)
    finally:
        await transport.aclose()


async def test_an_access_point_answering_forever_is_a_bad_receipt_not_memory(
    peer: Peer, pki: TestPki
) -> None:
    with Traced() as traced:
        outcome = await as4_send(pki, peer.url("/endless?status=200"))
    assert traced.peak <= 16 * MiB, f"{traced.peak / MiB:.1f} MiB"
    assert isinstance(outcome, Refused)
    assert (outcome.code, outcome.retryable, outcome.bad_receipt) == (
        "answer too large",
        False,
        True,
    )
    assert str(MAX_ANSWER_BYTES) in outcome.detail


async def test_an_oversized_declared_answer_is_refused_unread(peer: Peer, pki: TestPki) -> None:
    outcome = await as4_send(pki, peer.url(f"/declared/{MAX_ANSWER_BYTES + 1}"))
    assert isinstance(outcome, Refused) and outcome.code == "answer too large"


async def test_an_endless_error_page_keeps_only_its_start(peer: Peer, pki: TestPki) -> None:
    with Traced() as traced:
        outcome = await as4_send(pki, peer.url("/endless?status=503"))
    assert traced.peak <= 16 * MiB, f"{traced.peak / MiB:.1f} MiB"
    assert isinstance(outcome, Refused)
    assert (outcome.code, outcome.retryable) == ("HTTP 503", True)
    assert outcome.detail == "x" * 300


# --- the directory -------------------------------------------------------------------------


async def test_the_directory_answer_is_not_read(peer: Peer) -> None:
    """The indexer's answer only counts by its status: an endless one is left unread."""
    publisher = IndexerDirectoryPublisher(peer.url("/endless"))
    try:
        with Traced() as traced:
            await publisher.publish("0088:5790000435975")
    finally:
        await publisher.aclose()
    assert traced.peak <= 16 * MiB, f"{traced.peak / MiB:.1f} MiB"
