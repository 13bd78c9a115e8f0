"""Serving the app: aiohttp's own answers to requests it cannot parse are replaced by ours.

aiohttp answers a request whose head it cannot parse (a header over 8190 bytes, a broken
request line) itself, before any application code runs: a text page that repeats up to 100
bytes of the offending line (of a bearer token, say), with ``Server: Python/3.x aiohttp/3.x``,
and an error log line with a traceback holding the same bytes. aiohttp offers no hook for this
(aio-libs/aiohttp#3287), so the runner here builds its server with ``GuardedRequestHandler``,
which answers those requests in the API's error shape with the service's headers and logs
what went wrong without the request's bytes. ``listening`` serves an app with it while a block
runs; ``serve`` until SIGINT or SIGTERM.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import socket
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, cast

import attrs
from aiohttp import web
from aiohttp.web_request import BaseRequest
from multidict import CIMultiDict

from fourcorner.domain import errors
from fourcorner.entrypoints.config import Settings
from fourcorner.entrypoints.http.app import error_response, secure
from fourcorner.entrypoints.http.connections import ConnectionLimit
from fourcorner.entrypoints.http.proxy import PROXIES, TrustedProxies

log = logging.getLogger("fourcorner.http")

IDLE_SECONDS = 75.0
"""How long a connection may wait for a request's head by default (``serve``'s ``idle``)."""


class GuardedRequestHandler(web.RequestHandler):
    __slots__ = ("_connections", "_counted", "_hsts", "_proxies")

    def __init__(
        self,
        manager: web.Server,
        *,
        hsts: bool,
        proxies: TrustedProxies,
        connections: ConnectionLimit,
        **kwargs: Any,
    ) -> None:
        super().__init__(manager, **kwargs)
        self._hsts = hsts
        self._proxies = proxies
        self._connections = connections
        self._counted = ""

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        """A connection from an address with as many open as it may have
        (``ConnectionLimit``) is answered 503 at once, before anything is read, and closed."""
        super().connection_made(transport)
        peer = transport.get_extra_info("peername")
        host = peer[0] if isinstance(peer, tuple) and peer else None
        key = self._connections.open(host)
        if key is None:
            headers: CIMultiDict[str] = CIMultiDict()
            secure(headers, private=True, hsts=self._hsts)
            cast(asyncio.Transport, transport).write(self._connections.refusal(headers))
            self.force_close()  # closes the transport once the answer is written
            return
        self._counted = key

    def connection_lost(self, exc: BaseException | None) -> None:
        self._connections.close(self._counted)
        self._counted = ""
        super().connection_lost(exc)

    def handle_error(
        self,
        request: BaseRequest,
        status: int = 500,
        exc: BaseException | None = None,
        message: str | None = None,
    ) -> web.StreamResponse:
        """The answer to a request aiohttp could not parse (400) or that failed outside the
        app's error handling (500); ``message``, which may repeat the request's bytes, is not
        used. The client is named as ``proxy`` names it; aiohttp gives a request it could not
        parse no headers, so behind a proxy that is the proxy."""
        request_id = os.urandom(16).hex()
        if status < 500:
            log.warning(
                "malformed request",
                extra={
                    "request_id": request_id,
                    "remote": self._proxies.client(request.remote, request.headers),
                    "problem": type(exc).__name__ if exc is not None else "",
                },
            )
            error: errors.DomainError = errors.InvalidInput.one(
                "headers", "the request line or a header is malformed or too long"
            )
        else:
            log.error("unhandled error", exc_info=exc, extra={"request_id": request_id})
            error = errors.DomainError()
        if request.writer.output_size > 0:
            raise ConnectionError("the answer was begun already; the connection is dropped")
        response = error_response(error, request_id)
        secure(response.headers, private=True, hsts=self._hsts)
        response.force_close()
        return response


class GuardedServer(web.Server):
    """aiohttp's server whose connections are handled by ``GuardedRequestHandler``."""

    hsts = False
    proxies = TrustedProxies()
    connection_limit = ConnectionLimit()

    @classmethod
    def adopt(
        cls,
        server: web.Server,
        *,
        hsts: bool,
        proxies: TrustedProxies | None = None,
        per_address: int = 0,
    ) -> GuardedServer:
        """This class's server with the state of ``server``, which has served nothing yet;
        ``per_address``: the most connections one client address may have open (0: no
        limit)."""
        guarded = cls.__new__(cls)
        vars(guarded).update(vars(server))
        guarded.hsts = hsts
        if proxies is not None:
            guarded.proxies = proxies
        guarded.connection_limit = ConnectionLimit(per_address, guarded.proxies)
        return guarded

    def __call__(self) -> web.RequestHandler:
        return GuardedRequestHandler(
            self,
            loop=self._loop,
            hsts=self.hsts,
            proxies=self.proxies,
            connections=self.connection_limit,
            **self._kwargs,
        )


class GuardedAppRunner(web.AppRunner):
    """``web.AppRunner`` whose server is a ``GuardedServer``; ``per_address``: the most
    connections one client address may have open (0: no limit)."""

    __slots__ = ("_hsts", "_per_address")

    def __init__(
        self, app: web.Application, *, hsts: bool = False, per_address: int = 0, **kwargs: Any
    ) -> None:
        super().__init__(app, **kwargs)
        self._hsts = hsts
        self._per_address = per_address

    async def _make_server(self) -> web.Server:
        # the app's trusted proxies (``build_app``), for the requests it never sees
        proxies = self.app.get(PROXIES)
        return GuardedServer.adopt(
            await super()._make_server(),
            hsts=self._hsts,
            proxies=proxies,
            per_address=self._per_address,
        )


@attrs.frozen
class Edge:
    """How a listener holds its connections. ``hsts``: the public URL is https (every answer
    says so); ``idle``: the seconds a connection may wait for a request's head, the first or
    the next one (a head begun and not ended included), before it is closed (aiohttp's
    keep-alive timeout, which its server alone sets at an hour); ``per_address``: the most
    connections one client address may have open at once (``ConnectionLimit``; 0: no limit)."""

    hsts: bool = False
    idle: float = IDLE_SECONDS
    per_address: int = 0

    @classmethod
    def of(cls, settings: Settings) -> Edge:
        """``FOURCORNER_HTTP_IDLE_SECONDS`` and ``…_CONNECTIONS_PER_ADDRESS``: ``serve``'s,
        and the worker's port's (``FOURCORNER_WORKER_PORT``)."""
        return cls(
            settings.https, settings.http_idle_seconds, settings.http_connections_per_address
        )


@contextlib.asynccontextmanager
async def listening(
    app: web.Application,
    *,
    sock: socket.socket,
    edge: Edge = Edge(),
    before_serving: Callable[[], object] | None = None,
) -> AsyncIterator[None]:
    """``app`` served on the listening socket ``sock`` while the block runs, its connections
    held as ``edge`` says, then shut down gracefully (its ``on_cleanup`` run).
    ``before_serving`` runs once the app is started up, just before the first request is
    taken."""
    runner = GuardedAppRunner(
        app,
        hsts=edge.hsts,
        per_address=edge.per_address,
        access_log=None,
        keepalive_timeout=edge.idle,
    )
    await runner.setup()
    try:
        if before_serving is not None:
            before_serving()
        await web.SockSite(runner, sock).start()
        yield
    finally:
        await runner.cleanup()


async def serve(
    app: web.Application | Awaitable[web.Application],
    *,
    sock: socket.socket,
    edge: Edge = Edge(),
    before_serving: Callable[[], object] | None = None,
) -> None:
    """Serve ``app`` on the listening socket ``sock`` until SIGINT or SIGTERM, then shut it
    down gracefully (``listening``, whose arguments these are). ``fourcorner serve`` settles
    its heap in ``before_serving``, once the app is built and started up."""
    application = app if isinstance(app, web.Application) else await app
    async with listening(application, sock=sock, edge=edge, before_serving=before_serving):
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        await stop.wait()
