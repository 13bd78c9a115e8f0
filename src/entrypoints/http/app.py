"""The aiohttp application: middlewares (request id, errors, access log) and the routes."""

from __future__ import annotations

import json
import logging
import os
import re
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping, MutableMapping
from typing import Any

import cattrs
from aiohttp import web
from aiohttp.typedefs import Middleware

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

log = logging.getLogger("fourcorner.http")
_REQUEST_ID = re.compile(r"[A-Za-z0-9._:-]{1,128}")

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


SERVER = "fourcorner"
"""The ``Server`` header of every answer: no software versions."""
HSTS = "max-age=31536000"


def secure(headers: MutableMapping[str, str], *, private: bool, hsts: bool) -> None:
    """The headers every answer carries: no MIME sniffing, no versions in ``Server``; answers
    to requests with (or needing) credentials are never stored by caches; with an https public
    URL, browsers are told to use https only."""
    headers["Server"] = SERVER
    headers["X-Content-Type-Options"] = "nosniff"
    if private:
        headers["Cache-Control"] = "no-store"
    if hsts:
        headers["Strict-Transport-Security"] = HSTS


def _prepare(hsts: bool) -> Callable[[web.Request, web.StreamResponse], Awaitable[None]]:
    async def prepare(request: web.Request, response: web.StreamResponse) -> None:
        h = request.headers
        private = request.get(PRIVATE, False) or "Authorization" in h or "X-Api-Key" in h
        secure(response.headers, private=private, hsts=hsts)

    return prepare


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
    if isinstance(error, errors.TooManyFailedAttempts):
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


def middleware(max_size: int, metrics: Metrics | None = None) -> Middleware:
    @web.middleware
    async def handle(
        request: web.Request,
        handler: Callable[[web.Request], Awaitable[web.StreamResponse]],
    ) -> web.StreamResponse:
        started = time.perf_counter()
        given = request.headers.get("X-Request-Id")
        request_id = given if given and _REQUEST_ID.fullmatch(given) else os.urandom(16).hex()
        request[REQUEST_ID] = request_id
        error: DomainError | None = None
        try:
            response = await handler(request)
            response.headers["X-Request-Id"] = request_id
        except DomainError as e:
            response = error_response(error := e, request_id)
        except web.HTTPException as e:
            if e.status < 400:
                raise
            response = error_response(error := _from_http(e, request, max_size), request_id)
        except web.RequestPayloadError:  # e.g. Content-Encoding: gzip over bytes that are not
            reason = "the body does not decode from its Content-Encoding"
            response = error_response(error := errors.MalformedBody(reason=reason), request_id)
        except Exception:
            log.exception(
                "unhandled error", extra={"event": "http.unhandled", "request_id": request_id}
            )
            response = error_response(error := errors.DomainError(), request_id)
        # an answer before the body has arrived whole ends the connection, lingering
        unread = body_unread(request)
        if unread:
            await answer_and_close(request, response)
        if metrics is not None:
            resource = request.match_info.route.resource
            route = resource.canonical if resource is not None else "(unmatched)"
            metrics.observe(request.method, route, response.status, time.perf_counter() - started)
        _access_log(request, response, started, error.code if error is not None else None)
        if unread:
            await linger(request, request.config_dict[LINGER])
        return response

    return handle


def _access_log(
    request: web.Request, response: web.StreamResponse, started: float, code: str | None
) -> None:
    if not log.isEnabledFor(logging.INFO):
        return
    info = request.match_info.route.resource
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
            "route": info.canonical if info is not None else request.path,
            "status": response.status,
            "duration_ms": round((time.perf_counter() - started) * 1000, 3),
            "org_id": str(org_id) if org_id is not None else request.match_info.get("orgId"),
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
) -> web.Application:
    """``provided``: the container's objects that the handlers name (``routing.dependencies``);
    ``hsts``: the public URL is https (``Strict-Transport-Security`` on every answer);
    ``lingering``: the bounds of the lingering close of a connection whose request body is
    left unread (``lingering``; the app's ``LINGER``)."""
    table = list(routes)
    app = web.Application(middlewares=[middleware(max_body, metrics)], client_max_size=max_body)
    app[LINGER] = lingering
    app.on_response_prepare.append(_prepare(hsts))
    spec = dumps(openapi.document(table, title=title, version=version, converter=converter))

    async def openapi_json(request: web.Request) -> web.Response:
        return web.Response(body=spec, content_type="application/json")

    by_path: dict[str, dict[str, Handler]] = {"/openapi.json": {"GET": openapi_json}}
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
            resource.add_route(method, handler)
        resource.add_route("*", _refuse_method(tuple(sorted(methods))))
    return app


def _specificity(path: str) -> tuple[int, ...]:
    """Paths whose literal segments come earlier sort first (``/members/approve`` before
    ``/members/{memberId}``), so a request is matched by its most literal path."""
    return tuple(int(part.startswith("{")) for part in path.strip("/").split("/"))


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
