"""The aiohttp application: the wrapper around every route (request id, errors, headers, access
log) and the routes."""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
import time
import warnings
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping, MutableMapping
from typing import Any

import cattrs
from aiohttp import HttpVersion, web
from aiohttp.web_urldispatcher import (
    AbstractResource,
    AbstractRoute,
    MatchInfoError,
    UrlMappingMatchInfo,
    _default_expect_handler,
)
from multidict import CIMultiDict

from fourcorner.domain import errors
from fourcorner.domain.errors import DomainError
from fourcorner.entrypoints.http import errors as http_errors
from fourcorner.entrypoints.http import openapi
from fourcorner.entrypoints.http.lingering import (
    BOUNDS,
    LINGER,
    Linger,
    answer_and_close,
    body_unread,
    linger,
)
from fourcorner.entrypoints.http.metrics import Metrics
from fourcorner.entrypoints.http.proxy import PROXIES, TrustedProxies, client_address
from fourcorner.entrypoints.http.routing import (
    CALLER,
    ORG_ID,
    PRIVATE,
    REQUEST_ID,
    Authenticate,
    Route,
    dumps,
    endpoint,
    json_response,
)
from fourcorner.entrypoints.http.spooling import PACE, PACE_BOUNDS, Pace

log = logging.getLogger("fourcorner.http")
_REQUEST_ID = re.compile(r"[A-Za-z0-9._:-]{1,128}")
# the request's Expect header, when it is not 100-continue (``expect``)
_REFUSED_EXPECT = web.RequestKey("refused_expect", str)

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


SERVER = "fourcorner"
"""The ``Server`` header of every answer: no software versions."""
HSTS = "max-age=31536000"


def _secure_headers(*, private: bool, hsts: bool) -> CIMultiDict[str]:
    headers = CIMultiDict({"Server": SERVER, "X-Content-Type-Options": "nosniff"})
    if private:
        headers["Cache-Control"] = "no-store"
    if hsts:
        headers["Strict-Transport-Security"] = HSTS
    return headers


# each combination made once: one ``update`` puts them on an answer (a third fewer
# instructions than setting the headers one by one)
_SECURE = {(p, h): _secure_headers(private=p, hsts=h) for p in (False, True) for h in (False, True)}


def secure(headers: MutableMapping[str, str], *, private: bool, hsts: bool) -> None:
    """The headers every answer carries: no MIME sniffing, no versions in ``Server``; answers
    to requests with (or needing) credentials are never stored by caches; with an https public
    URL, browsers are told to use https only."""
    headers.update(_SECURE[private, hsts])


def request_ids(batch: int = 256) -> Iterator[str]:
    """Random request ids, 32 hex digits (128 bits) each, from the operating system's random
    source ``batch`` at a time: one system call per ``batch`` requests instead of one each
    (0.6–1.5 µs of a cached read's CPU under load)."""
    while True:
        block = os.urandom(16 * batch).hex()
        for start in range(0, len(block), 32):
            yield block[start : start + 32]


def _private(request: web.Request) -> bool:
    h = request.headers  # the headers first: asking a request for a key it lacks costs more
    return "Authorization" in h or "X-Api-Key" in h or request.get(PRIVATE, False)


# The most characters of an error sentence, a detail's field or its problem: what an answer
# quotes of the input is bounded where it is quoted (``domain.text.quoted``); this bounds
# whatever text a message was made of, so that no error answer repeats a large input back.
MAX_ERROR_TEXT = 500


def _bounded(text: str) -> str:
    return text if len(text) <= MAX_ERROR_TEXT else text[: MAX_ERROR_TEXT - 1] + "…"


def _detail(d: errors.Detail) -> dict[str, str]:
    if d.rule is not None:  # a failed validation rule, named as the rules name it
        return {"field": d.field, "problem": d.problem} | {
            "id": d.rule,
            "location": d.field,
            "text": d.problem,
        }
    return {"field": _bounded(d.field), "problem": _bounded(d.problem)}


def error_response(error: DomainError, request_id: str) -> web.Response:
    body: dict[str, Any] = {
        "code": error.code,
        "error": _bounded(error.message()),
        **error.members(),
    }
    details = error.details()
    if details:
        body["details"] = [_detail(d) for d in details]
    headers = {"X-Request-Id": request_id}
    if isinstance(error, http_errors.RETRIED):
        headers["Retry-After"] = str(error.retry_after)
    if isinstance(error, http_errors.MethodNotAllowed) and error.allowed:
        headers["Allow"] = ", ".join(error.allowed)
    return json_response(openapi.status_of(error.kind), body, headers=headers)


def _from_http(exc: web.HTTPException, request: web.Request, max_size: int) -> DomainError:
    if isinstance(exc, web.HTTPNotFound):
        return http_errors.RouteNotFound(path=request.path)
    if isinstance(exc, web.HTTPMethodNotAllowed):
        allowed = tuple(sorted(exc.allowed_methods))
        return http_errors.MethodNotAllowed(method=request.method, allowed=allowed)
    if isinstance(exc, web.HTTPRequestEntityTooLarge):
        return http_errors.BodyTooLarge(limit=max_size)
    if exc.status == 400:
        return errors.MalformedBody(reason=exc.reason or "the request is malformed")
    return errors.Forbidden(reason=exc.reason) if exc.status == 403 else errors.DomainError()


_SPOKEN = frozenset({HttpVersion(1, 1), HttpVersion(1, 0)})
"""The HTTP versions a request line may name (``VersionNotSupported`` otherwise)."""


def _refused_version(request: web.Request) -> http_errors.VersionNotSupported:
    """The refusal of a request naming another HTTP version, which is answered in this
    server's own (RFC 9112, 2.3: HTTP/1.1): aiohttp writes an answer's status line with the
    request's version, which it keeps in ``_version`` and caches in ``_cache`` (there is no
    public way to set it; ``test_hardening`` checks the status line)."""
    version = request.version
    with contextlib.suppress(AttributeError, TypeError):
        request._version = HttpVersion(1, 1)
        request._cache.pop("version", None)
    return http_errors.VersionNotSupported(version=f"{version[0]}.{version[1]}")


def wrapper(
    max_size: int, metrics: Metrics | None = None, *, hsts: bool = False
) -> Callable[[Handler, str | None], Handler]:
    """What runs around every route's handler: the request id, errors turned into answers,
    the service's headers (``secure``), the metrics and the access log. ``route``: the path
    the metrics and the log name the request by; ``None`` for a request no route matched.

    Each route's handler is wrapped once, when the app is built, instead of going through an
    aiohttp middleware and ``on_response_prepare``: those cost about 5 µs of a cached read's
    55–60 (the middleware chain with aiohttp's own ``current_app`` middleware, the signal).
    What aiohttp answers before a handler runs is covered too: an unknown path reaches a
    catch-all route, and an ``Expect`` other than ``100-continue`` is answered here (417), as
    ``expect`` notes it."""

    new_id = request_ids().__next__
    observe = metrics.http.observe if metrics is not None else None

    def wrap(handler: Handler, route: str | None) -> Handler:
        label = route if route is not None else "(unmatched)"

        async def handle(request: web.Request) -> web.StreamResponse:
            started = time.perf_counter()
            request[REQUEST_ID] = request_id = _request_id(request, new_id)
            error: DomainError | None = None
            try:
                if request.version not in _SPOKEN:
                    raise _refused_version(request)
                if _REFUSED_EXPECT in request:
                    raise http_errors.ExpectationFailed(expect=request[_REFUSED_EXPECT])
                response = await handler(request)
                response.headers["X-Request-Id"] = request_id
            except DomainError as e:
                response = error_response(error := e, request_id)
            except web.HTTPException as e:
                if e.status < 400:
                    secure(e.headers, private=_private(request), hsts=hsts)
                    raise
                response = error_response(error := _from_http(e, request, max_size), request_id)
            except web.RequestPayloadError:  # e.g. Content-Encoding: gzip over other bytes
                reason = "the body does not decode from its Content-Encoding"
                response = error_response(error := errors.MalformedBody(reason=reason), request_id)
            except Exception:
                log.exception(
                    "unhandled error", extra={"event": "http.unhandled", "request_id": request_id}
                )
                response = error_response(error := errors.DomainError(), request_id)
            secure(response.headers, private=_private(request), hsts=hsts)
            if isinstance(error, http_errors.VersionNotSupported):
                response.force_close()  # nothing more of it is read
            # an answer before the body has arrived whole ends the connection, lingering
            unread = body_unread(request)
            if unread:
                await answer_and_close(request, response)
            if observe is not None:
                observe(request.method, label, response.status, time.perf_counter() - started)
            _access_log(
                request, route, response, started, error.code if error is not None else None
            )
            if unread:
                await linger(request, request.config_dict[LINGER])
            return response

        handle.__name__ = getattr(handler, "__name__", "handle")
        return handle

    return wrap


async def expect(request: web.Request) -> None:
    """aiohttp's handling of an ``Expect`` header, which runs before the route's handler:
    ``100-continue`` is answered ``100 Continue``; another expectation is noted on the request
    (``_REFUSED_EXPECT``), and the route's wrapped handler answers it 417 in the service's
    error shape before anything else, with every other answer's headers, bounds on a body
    still arriving, metrics and log (``wrapper``)."""
    try:
        await _default_expect_handler(request)
    except web.HTTPExpectationFailed:
        request[_REFUSED_EXPECT] = request.headers.get("Expect", "")


def _request_id(request: web.Request, new_id: Callable[[], str]) -> str:
    """The caller's ``X-Request-Id`` when it is one we can echo, else a new one."""
    given = request.headers.get("X-Request-Id")
    return given if given and _REQUEST_ID.fullmatch(given) else new_id()


def _access_log(
    request: web.Request,
    route: str | None,
    response: web.StreamResponse,
    started: float,
    code: str | None,
) -> None:
    if not log.isEnabledFor(logging.INFO):
        return
    caller_kind, caller = request.get(CALLER) or (None, None)
    org_id = request.get(ORG_ID)
    log.info(
        "request",
        extra={
            "event": "http.request",
            "request_id": request[REQUEST_ID],
            "error_code": code,
            "caller_kind": caller_kind,
            "caller_id": str(caller) if caller is not None else None,
            "method": request.method,
            "route": route if route is not None else request.path,
            "status": response.status,
            "duration_ms": round((time.perf_counter() - started) * 1000, 3),
            "org_id": str(org_id) if org_id is not None else request.match_info.get("orgId"),
            # the client's address (behind a listed proxy, the client it forwards: ``proxy``)
            "client": client_address(request),
        },
    )


def build_app(
    routes: Iterable[Route],
    *,
    converter: cattrs.Converter,
    authenticate: Authenticate,
    max_body: int,
    metrics: Metrics | None = None,
    provided: Mapping[str, Any] | None = None,
    title: str = "fourcorner",
    version: str = "0.1.0",
    hsts: bool = False,
    lingering: Linger = BOUNDS,
    pace: Pace = PACE_BOUNDS,
    proxies: TrustedProxies | None = None,
    document: bool = True,
) -> web.Application:
    """``provided``: the container's objects that the handlers name (``routing.dependencies``);
    ``hsts``: the public URL is https (``Strict-Transport-Security`` on every answer);
    ``lingering``: the bounds of the lingering close of a connection whose request body is
    left unread (``lingering``; the app's ``LINGER``); ``pace``: how slowly a body read with
    bounds of time may arrive (``spooling.Pace``; the app's ``PACE``); ``proxies``: the reverse
    proxies whose forwarding headers name the client (``proxy``; the app's ``PROXIES``), none
    by default; ``document``: serve the routes' OpenAPI document at ``/openapi.json``."""
    table = list(routes)
    router = _Router()
    with warnings.catch_warnings():  # aiohttp calls passing a router deprecated
        warnings.simplefilter("ignore", DeprecationWarning)
        app = web.Application(client_max_size=max_body, router=router)
    app[LINGER] = lingering
    app[PACE] = pace
    app[PROXIES] = proxies if proxies is not None else TrustedProxies()
    wrap = wrapper(max_body, metrics, hsts=hsts)
    by_path: dict[str, dict[str, Handler]] = {}
    if document:
        spec = dumps(openapi.document(table, title=title, version=version, converter=converter))

        async def openapi_json(request: web.Request) -> web.Response:
            return web.Response(body=spec, content_type="application/json")

        by_path["/openapi.json"] = {"GET": openapi_json}
    gets = {route.path: route for route in table if route.method == "GET"}
    for route in table:
        current = gets.get(route.reads or route.path) if route.method == "PUT" else None
        handler = endpoint(route, converter, authenticate, provided, current)
        by_path.setdefault(route.path, {})[route.method] = handler
    for path in sorted(by_path, key=_specificity):
        resource = app.router.add_resource(path)
        methods = dict(by_path[path])
        if "GET" in methods:  # HEAD: the GET's status and headers, without its body
            methods.setdefault("HEAD", methods["GET"])
        for method, handler in methods.items():
            resource.add_route(method, wrap(handler, path), expect_handler=expect)
        refuse = wrap(_refuse_method(tuple(sorted(methods))), path)
        resource.add_route("*", refuse, expect_handler=expect)
    # every other path, last: 404 in the API's shape (added to no other resource's prefix)
    unmatched = app.router.add_resource(r"/{path:[\s\S]*}")
    router.unmatched = unmatched.add_route("*", wrap(_unknown_route, None), expect_handler=expect)
    return app


class _Router(web.UrlDispatcher):
    """aiohttp's router, which sends a request whose target no resource can match (``*``,
    ``CONNECT``'s ``host:port``) to ``unmatched`` too, rather than answering it itself.

    What a method and path resolved to is kept (at most ``KEPT`` of them, all dropped when
    full or when a resource is added): aiohttp walks the path's prefixes and tries each
    resource filed under one in turn, a coroutine and a regular expression each (about 3 µs
    of a kept read's CPU for ``/orgs/{orgId}``, the second of 41 resources under ``/orgs``),
    where a request for a path asked for before costs one dictionary lookup. The app's
    resources match on the method and the path alone (no domains, no sub-apps), so the same
    two always resolve alike. Only paths of at most ``KEPT_PATH`` characters that a route of
    the API matched are kept: anyone may ask for any path before being authenticated, and
    what they choose must neither fill memory (a request line may be 8 KiB) nor push the
    API's paths out."""

    KEPT = 4096
    KEPT_PATH = 256
    unmatched: web.ResourceRoute | None = None

    def __init__(self) -> None:
        super().__init__()
        self._resolved: dict[tuple[str, str], tuple[dict[str, str], AbstractRoute]] = {}

    def register_resource(self, resource: AbstractResource) -> None:
        self._resolved.clear()
        super().register_resource(resource)

    async def resolve(self, request: web.Request) -> UrlMappingMatchInfo:
        key = (request.method, request.rel_url.path_safe)
        known = self._resolved.get(key)
        if known is not None:
            return UrlMappingMatchInfo(*known)
        found = await super().resolve(request)
        if isinstance(found, MatchInfoError):
            if found.http_exception.status != 404 or self.unmatched is None:
                return found
            return UrlMappingMatchInfo({}, self.unmatched)
        if found.route is self.unmatched or len(key[1]) > self.KEPT_PATH:
            return found
        if len(self._resolved) >= self.KEPT:
            self._resolved.clear()
        self._resolved[key] = (dict(found), found.route)
        return found


def _specificity(path: str) -> tuple[int, ...]:
    """Paths whose literal segments come earlier sort first (``/members/approve`` before
    ``/members/{memberId}``), so a request is matched by its most literal path."""
    return tuple(int(part.startswith("{")) for part in path.strip("/").split("/"))


async def _unknown_route(request: web.Request) -> web.StreamResponse:
    raise http_errors.RouteNotFound(path=request.path)


def _refuse_method(allowed: tuple[str, ...]) -> Handler:
    """Every other method on a known path: 405 with the ``Allow`` header. A literal path
    answers this before a path with a parameter in its place is tried, so ``GET
    .../members/approve`` is 405 rather than a member id that is not a UUID."""

    async def refuse(request: web.Request) -> web.StreamResponse:
        raise http_errors.MethodNotAllowed(method=request.method, allowed=allowed)

    return refuse


def json_log_formatter() -> logging.Formatter:
    """One JSON object per line: time, level, ``event``, message and the record's fields.
    ``event`` is the record's own stable name, or else the name of the logger that wrote it
    (a library's line, a plain message)."""

    standard = set(logging.makeLogRecord({}).__dict__) | {"message", "asctime"}

    class JsonFormatter(logging.Formatter):
        def format(self, record: logging.LogRecord) -> str:
            out: dict[str, Any] = {
                "time": self.formatTime(record, "%Y-%m-%dT%H:%M:%S") + f".{int(record.msecs):03d}Z",
                "level": record.levelname.lower(),
                "event": record.name,
                "logger": record.name,
                "message": record.getMessage(),
            }
            out.update({k: v for k, v in record.__dict__.items() if k not in standard})
            if record.exc_info:
                out["exception"] = self.formatException(record.exc_info)
            return json.dumps(out, default=str)

    formatter = JsonFormatter()
    formatter.converter = time.gmtime
    return formatter
