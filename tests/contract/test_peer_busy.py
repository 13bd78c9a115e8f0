"""A busy access point's answer (HTTP 503 or 429) is told apart by the AS4 sender, with the wait
its ``Retry-After`` asks for (delta-seconds or an HTTP-date, at most an hour; a value that
does not read is ignored); another error's ``Retry-After`` is not read."""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from typing import Any

import pytest
from aiohttp import web

from fourcorner.adapters.pki.testpki import TestPki
from fourcorner.application.ports import Refused
from fourcorner.application.sending import failure_of
from fourcorner.domain import send_failures as txe
from fourcorner.domain.retry import LONGEST_ASKED

from .test_answer import as4_send, pki

__all__ = ["pki"]

ServerFactory = Callable[[web.Application], Coroutine[Any, Any, Any]]
NOW = datetime(2026, 1, 2, 10, tzinfo=UTC)


@pytest.mark.parametrize(
    ("status", "retry_after", "wait"),
    [
        (503, "120", timedelta(seconds=120)),
        (429, "7", timedelta(seconds=7)),
        (503, format_datetime(NOW + timedelta(seconds=300), usegmt=True), timedelta(seconds=300)),
        (429, format_datetime(NOW - timedelta(seconds=300), usegmt=True), timedelta(0)),
        (503, "86400", LONGEST_ASKED),  # at most an hour
        (503, "soon", None),  # does not read: ignored
        (429, None, None),
    ],
)
async def test_a_busy_access_point_is_told_apart_with_the_wait_it_asks_for(
    aiohttp_server: ServerFactory,
    pki: TestPki,
    status: int,
    retry_after: str | None,
    wait: timedelta | None,
) -> None:
    peer = await busy_peer(aiohttp_server, status, retry_after)
    outcome = await as4_send(pki, peer, now=NOW)
    assert outcome == Refused(f"HTTP {status}", "busy", True, busy=True, retry_after=wait)
    assert failure_of(outcome) is txe.AP_BUSY


@pytest.mark.parametrize("status", [500, 502, 504])
async def test_another_error_is_not_busy_and_its_retry_after_is_not_read(
    aiohttp_server: ServerFactory, pki: TestPki, status: int
) -> None:
    peer = await busy_peer(aiohttp_server, status, "120")
    outcome = await as4_send(pki, peer, now=NOW)
    assert outcome == Refused(f"HTTP {status}", "busy", True)
    assert failure_of(outcome) is txe.AP_HTTP_ERROR


async def busy_peer(aiohttp_server: ServerFactory, status: int, retry_after: str | None) -> str:
    """The URL of a peer on 127.0.0.1 that answers every post ``status`` with ``Retry-After:
    retry_after`` (none when None) and the body ``busy``, the message unread."""

    async def answer(request: web.Request) -> web.Response:
        headers = {"Retry-After": retry_after} if retry_after is not None else {}
        return web.Response(status=status, text="busy", headers=headers)

    app = web.Application()
    app.router.add_post("/as4", answer)
    return str((await aiohttp_server(app)).make_url("/as4"))
