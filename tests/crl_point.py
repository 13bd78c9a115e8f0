"""A CRL distribution point served by a test on 127.0.0.1 (``aiohttp_server``), for the tests
of the revocation check: it serves a list, an error, a redirect, an answer that stalls or one
that never ends, and counts what it is asked."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable, Coroutine
from typing import Any, ClassVar

import attrs
from aiohttp import web
from cryptography import x509
from cryptography.hazmat.primitives import serialization

ServerFactory = Callable[[web.Application], Coroutine[Any, Any, Any]]


@attrs.define
class CrlPoint:
    """A CRL distribution point: ``/ca.crl`` answers ``body`` (or ``status``; ``stall``:
    headers and then nothing; ``endless``: a body that never ends), ``/moved`` redirects to
    it. ``requests`` counts the requests of each path."""

    body: bytes = b""
    content_type: str = "application/pkix-crl"
    status: int = 200
    stall: bool = False
    endless: bool = False
    declared: int | None = None
    requests: dict[str, int] = attrs.Factory(dict)
    url: str = ""
    path: ClassVar[str] = "/ca.crl"  # where the answer is asked for
    release: asyncio.Event = attrs.Factory(asyncio.Event)  # ends the stalled answers
    asked: asyncio.Condition = attrs.Factory(asyncio.Condition)  # told of each request

    def serve(self, crl: x509.CertificateRevocationList, *, pem: bool = False) -> None:
        encoding = serialization.Encoding.PEM if pem else serialization.Encoding.DER
        self.body, self.status = crl.public_bytes(encoding), 200

    def app(self) -> web.Application:
        app = web.Application()
        app.router.add_get("/ca.crl", self.answer)
        app.router.add_get("/moved", self.moved)
        return app

    async def moved(self, request: web.Request) -> web.Response:
        self.requests["/moved"] = self.requests.get("/moved", 0) + 1
        raise web.HTTPFound(self.path)

    async def answer(self, request: web.Request) -> web.StreamResponse:
        self.requests[self.path] = self.requests.get(self.path, 0) + 1
        async with self.asked:
            self.asked.notify_all()
        if self.status != 200:
            return web.Response(status=self.status)
        if not (self.stall or self.endless or self.declared):
            return web.Response(body=self.body, content_type=self.content_type)
        response = web.StreamResponse(headers={"Content-Type": self.content_type})
        if self.declared is not None:
            response.content_length = self.declared
        else:
            response.enable_chunked_encoding()
        await response.prepare(request)
        if self.stall:
            await self.release.wait()
            return response
        left = self.declared
        try:
            while left is None or left > 0:  # endless, or as long as announced
                chunk = 65536 if left is None else min(65536, left)
                await response.write(b"\x00" * chunk)
                left = None if left is None else left - chunk
        except ConnectionError:
            pass  # the client stopped reading
        return response

    @property
    def fetched(self) -> int:
        return self.requests.get(self.path, 0)

    async def fetched_at_least(self, times: int) -> None:
        """Wait until the list was asked for ``times`` times."""
        async with self.asked:
            await self.asked.wait_for(lambda: self.fetched >= times)

    @classmethod
    @contextlib.asynccontextmanager
    async def served(cls, aiohttp_server: ServerFactory) -> AsyncIterator[CrlPoint]:
        """A point served until the end of the ``async with``; ``url`` is its list's."""
        point = cls()
        server = await aiohttp_server(point.app())
        point.url = str(server.make_url(cls.path))
        try:
            yield point
        finally:
            point.release.set()
