"""A peer's HTTP redirect is not followed by the clients that POST to peers: the AS4 sender (the
endpoint URL came signed from the SMP and was checked: https, or http to loopback), the SML
client (its requests carry the SMP's TLS client certificate and migration keys) and the
directory indexer. A redirect to an internal address is never called, whatever the status
(307 and 308 would re-POST the message, 301 to 303 would GET), and it is the client's failure:
the AS4 sender's a refusal that is not retried (``TXE-2003``), whose reason says why."""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import Any

import pytest
from aiohttp import web

from fourcorner.adapters.directory import IndexerDirectoryPublisher
from fourcorner.adapters.pki.testpki import TestPki
from fourcorner.adapters.sml import SmlEndpoint, SoapLocator
from fourcorner.application.locator import LocatorError, LocatorFault
from fourcorner.application.ports import Refused
from fourcorner.application.sending import failure_of
from fourcorner.domain import send_failures as txe
from fourcorner.domain.errors import ServiceUnavailable
from fourcorner.domain.network_services import Environment
from sml_service import TestSml

from .test_answer import as4_send, pki

__all__ = ["pki"]

ServerFactory = Callable[[web.Application], Coroutine[Any, Any, Any]]
REDIRECTS = [301, 302, 303, 307, 308]


class Redirecting:
    """A peer on 127.0.0.1 whose every answer is ``status`` to ``/admin`` of an internal
    server on 127.0.0.1, which records each request it gets in ``hits``."""

    def __init__(self, status: int) -> None:
        self.status = status
        self.hits: list[str] = []
        self.base = ""

    async def start(self, aiohttp_server: ServerFactory) -> None:
        async def internal(request: web.Request) -> web.Response:
            self.hits.append(f"{request.method} {request.path}")
            return web.Response(status=500, text="INTERNAL-SECRET")

        internal_app = web.Application()
        internal_app.router.add_route("*", "/{tail:.*}", internal)
        target = str((await aiohttp_server(internal_app)).make_url("/admin"))

        async def redirect(request: web.Request) -> web.Response:
            await request.read()
            return web.Response(status=self.status, headers={"Location": target})

        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", redirect)
        self.base = str((await aiohttp_server(app)).make_url("")).rstrip("/")


@pytest.fixture(params=REDIRECTS)
async def peer(request: pytest.FixtureRequest, aiohttp_server: ServerFactory) -> Redirecting:
    p = Redirecting(request.param)
    await p.start(aiohttp_server)
    return p


async def test_an_access_point_redirecting_refused_the_message_for_good(
    peer: Redirecting, pki: TestPki
) -> None:
    outcome = await as4_send(pki, peer.base + "/as4")
    assert peer.hits == []
    assert isinstance(outcome, Refused)
    assert (outcome.code, outcome.retryable) == (f"HTTP {peer.status}", False)
    assert outcome.detail == (
        f"the access point answered with a redirect (HTTP {peer.status}), which is not followed"
    )
    assert "INTERNAL-SECRET" not in outcome.detail
    assert failure_of(outcome) is txe.AP_REFUSED and not txe.AP_REFUSED.retryable


async def test_an_sml_redirecting_is_not_followed(peer: Redirecting, sml_service: TestSml) -> None:
    cert = sml_service.smp_certificate("smp")
    endpoint = SmlEndpoint(peer.base + "/edelivery-sml", "SMP-ALPHA", *cert)
    locator = SoapLocator({Environment.TEST: endpoint}, timeout=5)
    try:
        for call in (
            locator.create(Environment.TEST, "0088:5798000000001"),
            locator.migrate(Environment.TEST, "0088:5798000000001", "Secret-Key-1"),
        ):
            with pytest.raises(LocatorError) as caught:
                await call
            assert caught.value.fault is LocatorFault.UNREACHABLE
            assert f"with a redirect (HTTP {peer.status}), which is not followed" in (
                caught.value.reason
            )
    finally:
        await locator.aclose()
    assert peer.hits == []


async def test_a_directory_redirecting_is_unavailable_and_not_followed(peer: Redirecting) -> None:
    publisher = IndexerDirectoryPublisher(peer.base + "/indexer", timeout=5)
    try:
        for call in (publisher.publish, publisher.withdraw):
            with pytest.raises(ServiceUnavailable) as caught:
                await call("0088:5798000000001")
            assert caught.value.reason == (
                f"the directory answered with a redirect (HTTP {peer.status}), which is not "
                "followed"
            )
    finally:
        await publisher.aclose()
    assert peer.hits == []
