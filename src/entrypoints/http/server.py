"""Serving the app: aiohttp's own answers to requests it cannot parse are replaced by ours.

aiohttp answers a request whose head it cannot parse (a header over 8190 bytes, a broken
request line) itself, before any application code runs: a text page that repeats up to 100
bytes of the offending line (of a bearer token, say), with ``Server: Python/3.x aiohttp/3.x``,
and an error log line with a traceback holding the same bytes. aiohttp offers no hook for this
(aio-libs/aiohttp#3287), so the runner here builds its server with ``GuardedRequestHandler``,
which answers those requests in the API's error shape with the service's headers and logs
what went wrong without the request's bytes. ``serve`` runs an app with it until SIGINT or
SIGTERM.
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import socket
from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import web
from aiohttp.web_request import BaseRequest

from fourcorner.domain import errors
from fourcorner.entrypoints.http.app import error_response, secure
from fourcorner.entrypoints.http.proxy import PROXIES, TrustedProxies

log = logging.getLogger("fourcorner.http")

IDLE_SECONDS = 75.0
"""How long a connection may wait for a request's head by default (``serve``'s ``idle``)."""


class GuardedRequestHandler(web.RequestHandler):
    __slots__ = ("_hsts", "_proxies")

    def __init__(
        self, manager: web.Server, *, hsts: bool, proxies: TrustedProxies, **kwargs: Any
    ) -> None:
        super().__init__(manager, **kwargs)
        self._hsts = hsts
        self._proxies = proxies

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

    @classmethod
    def adopt(
        cls, server: web.Server, *, hsts: bool, proxies: TrustedProxies | None = None
    ) -> GuardedServer:
        """This class's server with the state of ``server``, which has served nothing yet."""
        guarded = cls.__new__(cls)
        vars(guarded).update(vars(server))
        guarded.hsts = hsts
        if proxies is not None:
            guarded.proxies = proxies
        return guarded

    def __call__(self) -> web.RequestHandler:
        return GuardedRequestHandler(
            self, loop=self._loop, hsts=self.hsts, proxies=self.proxies, **self._kwargs
        )


class GuardedAppRunner(web.AppRunner):
    """``web.AppRunner`` whose server is a ``GuardedServer``."""

    __slots__ = ("_hsts",)

    def __init__(self, app: web.Application, *, hsts: bool = False, **kwargs: Any) -> None:
        super().__init__(app, **kwargs)
        self._hsts = hsts

    async def _make_server(self) -> web.Server:
        # the app's trusted proxies (``build_app``), for the requests it never sees
        proxies = self.app.get(PROXIES)
        return GuardedServer.adopt(await super()._make_server(), hsts=self._hsts, proxies=proxies)


async def serve(
    app: web.Application | Awaitable[web.Application],
    *,
    sock: socket.socket,
    hsts: bool = False,
    idle: float = IDLE_SECONDS,
    before_serving: Callable[[], object] | None = None,
) -> None:
    """Serve ``app`` on the listening socket ``sock`` until SIGINT or SIGTERM, then shut it
    down gracefully. ``idle``: the seconds a connection may wait for a request's head, the
    first or the next one (a head begun and not ended included), before it is closed (aiohttp's
    keep-alive timeout, which its server alone sets at an hour). ``before_serving`` runs once
    the app is built and started up, just before the first request is taken (``fourcorner
    serve`` settles its heap there)."""
    application = app if isinstance(app, web.Application) else await app
    runner = GuardedAppRunner(application, hsts=hsts, access_log=None, keepalive_timeout=idle)
    await runner.setup()
    try:
        if before_serving is not None:
            before_serving()
        await web.SockSite(runner, sock).start()
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        await stop.wait()
    finally:
        await runner.cleanup()
