"""The route table's shape, the request object handlers receive, and the JSON replies."""

from __future__ import annotations

import functools
import inspect
import re
import urllib.parse
import uuid
from collections.abc import Awaitable, Callable, Hashable, Iterable, Mapping
from typing import Any

import attrs
import cattrs
import orjson
from aiohttp import web
from dependency_injector.wiring import Provide

from fourcorner.application.access import Principal
from fourcorner.application.listing import ListRequest
from fourcorner.application.storage import Collection
from fourcorner.domain.errors import DomainError, ErrorKind, InvalidInput, MalformedBody
from fourcorner.domain.roles import Role
from fourcorner.domain.text import quoted, text_problem
from fourcorner.entrypoints.http.converter import json_fields, load_json, structure
from fourcorner.entrypoints.http.errors import UnsupportedMediaType
from fourcorner.entrypoints.http.memo import StampedMemo
from fourcorner.entrypoints.http.read_only import check_unchanged, sent_read_only
from fourcorner.entrypoints.http.rendering import Answer, Response

JSON_TYPES = ("application/json",)
_LIMIT = re.compile("[0-9]{1,4}")  # ASCII digits: str.isdigit() also takes "²" and "٣"
REQUEST_ID = web.RequestKey("request_id", str)
ORG_ID = web.RequestKey("org_id", uuid.UUID)
# who called, for the request log: ("user", user id) or ("api_key", key id); turned into text
# only when a line is written
CALLER = web.RequestKey("caller", tuple[str, str | uuid.UUID])
# set on requests to routes that need credentials: their answers are never stored by caches
PRIVATE = web.RequestKey("private", bool)
# set by the authenticator (``Authenticator``): the digest of the credential the request came
# with, what the kept principals and answers are filed under (never the token or key itself),
# and the storage's read stamp taken before it read anything (``memo``; ``None``: keep nothing)
KEPT_UNDER = web.RequestKey("kept_under", tuple[str, Hashable | None])


@attrs.frozen
class QueryParam:
    name: str
    schema: Mapping[str, Any]
    required: bool = False
    description: str = ""
    repeated: bool = False
    where: str = "query"  # or "header"


LIST_PARAMS = (
    QueryParam(
        "filter",
        {"type": "string", "pattern": "^[^:]+:[a-z]+:.*$"},
        description="<field>:<op>:<value>; ops eq ne lt lte gt gte in contains; repeatable",
        repeated=True,
    ),
    QueryParam("search", {"type": "string"}, description="free text, case-insensitive"),
    QueryParam("cursor", {"type": "string"}, description="nextCursor of the previous page"),
    QueryParam("limit", {"type": "integer", "minimum": 1, "maximum": 500}),
)


def sorted_list(collection: Collection[Any]) -> tuple[QueryParam, ...]:
    """``LIST_PARAMS``, the fields ``search`` looks in, and the ``sort`` of a list of
    ``collection``: its sortable fields, each ascending or (``-``) descending; a cursor
    belongs to the sort it was made for."""
    fields = ", ".join(f.name for f in collection.searched)
    search = QueryParam(
        "search", {"type": "string"}, description=f"free text, case-insensitive, in {fields}"
    )
    params = tuple(search if p.name == "search" and fields else p for p in LIST_PARAMS)
    choices = [v for f in collection.sortable for v in (f, f"-{f}")]
    sort = QueryParam(
        "sort",
        {"type": "string", "enum": choices, "default": collection.default_sort},
        description="the field to sort by, descending with a leading '-'; then by id the "
        "same way. A nextCursor is valid only with the sort it was made for (else 400 AT-1005)",
    )
    return (*params, sort)


@attrs.frozen
class Req:
    """What a handler gets: the request, the caller, the parsed body and path values."""

    raw: web.Request
    principal: Principal | None
    body: Any

    @property
    def caller(self) -> Principal:
        assert self.principal is not None, "route declared public"
        return self.principal

    def path_uuid(self, name: str) -> uuid.UUID:
        text = self.raw.match_info[name]
        try:
            return uuid.UUID(text)
        except ValueError:
            raise InvalidInput.one(name, f"{quoted(text)} is not a UUID") from None

    def path(self, name: str) -> str:
        return self.raw.match_info[name]

    def listing(self) -> ListRequest:
        q = self.raw.query
        limit = q.get("limit")
        if limit is not None and not _LIMIT.fullmatch(limit):
            raise InvalidInput.one("limit", "limit is an integer between 1 and 500")
        return ListRequest(
            filters=tuple(q.getall("filter", ())),
            search=q.get("search"),
            cursor=q.get("cursor"),
            limit=int(limit) if limit is not None else None,
            sort=q.get("sort"),
        )


@attrs.frozen
class Reply:
    status: int
    body: Any


Handler = Callable[[Req], Awaitable[Reply]]


@attrs.frozen
class Route:
    method: str
    path: str
    handler: Handler
    summary: str
    role: Role | None  # None: public
    tag: str
    body: type | None = None
    response: Response | None = None
    status: int = 200
    query: tuple[QueryParam, ...] = ()
    errors: tuple[str, ...] = ()
    content_type: str = "application/json"
    # other media types its success answer may have, each with what it holds (an artefact's
    # content is the XML of most kinds, or a validation result's JSON summary)
    also: tuple[tuple[str, Response], ...] = ()
    # the media types of a body that is not JSON (an SBD or billing document, an AS4 message),
    # read by the handler itself
    takes: tuple[str, ...] = ()
    # A GET whose answer depends on nothing but the caller, the path (not the query), and records
    # read through ``Context.reads()`` of the record cache's collections (users, members,
    # organisations, certificates, API keys), never on the time: its 200 answer is kept per
    # credential and path (``memo.StampedMemo``) and sent again while the storage's read stamp
    # is unchanged (tests/contract/http/test_answer_memo.py checks each such route's reads).
    memo: bool = False
    # of a PUT: the path of the GET answering the record it changes, when not its own path
    reads: str | None = None
    # only a user's token may call it (``Principal.require_user``): an API key is refused
    # (403 AT-1022) whatever its input, as on a user's own account (``{uid}``)
    user_only: bool = False

    @property
    def org_scoped(self) -> bool:
        return "{orgId}" in self.path

    @property
    def operation_id(self) -> str:
        words = re.sub(r"[{}]", "", self.path).replace("-", "_").strip("/").split("/")
        return self.method.lower() + "_" + "_".join(w for w in words if w)


def _markers(handler: Handler) -> dict[str, str]:
    """The handler's parameters that default to a container marker (``Provide["name"]``)."""
    return {
        name: str(param.default.provider)
        for name, param in inspect.signature(handler).parameters.items()
        # Provide is a class; dependency_injector types it as an instance, for Provide["name"]
        if isinstance(param.default, Provide)  # type: ignore[arg-type]
    }


def markers(routes: Iterable[Route]) -> list[tuple[Handler, str, str]]:
    """Each ``(handler, parameter, provider name)`` of the ``Provide`` markers of the handlers
    of ``routes``."""
    return [
        (route.handler, parameter, name)
        for route in routes
        for parameter, name in _markers(route.handler).items()
    ]


def dependencies(routes: Iterable[Route]) -> set[str]:
    """The container providers that the handlers of ``routes`` name."""
    return {name for _, _, name in markers(routes)}


def bind(handler: Handler, provided: Mapping[str, Any]) -> Handler:
    """``handler`` with each ``Provide["name"]`` default replaced by ``provided[name]``.

    Handlers declare what they need from the container as ``Provide`` defaults; the app is
    built once those objects exist (singletons, all of them), so they are bound here once
    instead of being looked up by ``@inject`` on every call."""
    bound = {param: provided[name] for param, name in _markers(handler).items()}
    return functools.partial(handler, **bound) if bound else handler


def dumps(body: Any) -> bytes:
    """Compact UTF-8 JSON (orjson: several times faster than ``json`` on every answer).

    Text with lone surrogates cannot be written as UTF-8. The edge refuses it (``check_text``,
    ``converter.load_json``), but records stored before it did, or an error quoting a request
    line decoded leniently, are still answered: with U+FFFD in place of each surrogate."""
    try:
        return orjson.dumps(body, option=orjson.OPT_NON_STR_KEYS)
    except orjson.JSONEncodeError:
        return orjson.dumps(_replace_surrogates(body), option=orjson.OPT_NON_STR_KEYS)


_SURROGATE = re.compile("[\ud800-\udfff]")


def _replace_surrogates(value: Any) -> Any:
    if isinstance(value, str):
        return _SURROGATE.sub("\ufffd", value)
    if isinstance(value, dict):
        return {_replace_surrogates(k): _replace_surrogates(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_replace_surrogates(v) for v in value]
    return value


def json_response(status: int, body: Any, headers: Mapping[str, str] | None = None) -> web.Response:
    return web.Response(
        status=status, body=dumps(body), content_type="application/json", headers=headers
    )


def check_text(request: web.Request) -> None:
    """Refuse path and query values that are not text the service can store and write back
    (a request line decoded leniently carries undecodable bytes as lone surrogates), and query
    names and values whose percent escapes are not UTF-8 (decoded, they read as U+FFFD: a
    search or filter for other text than the client sent)."""
    for name, value in request.match_info.items():
        problem = text_problem(value)
        if problem:
            raise InvalidInput.one(name, problem)
    replaced = False
    for name, value in request.query.items():
        problem = text_problem(name)
        if problem:
            raise InvalidInput.one("query", f"a parameter name: {problem}")
        problem = text_problem(value)
        if problem:
            raise InvalidInput.one(name, problem)
        replaced = replaced or "\ufffd" in name or "\ufffd" in value
    if replaced:  # U+FFFD sent as such is text; only then are the escapes read again
        _check_escapes(request.rel_url.raw_query_string)


def check_once(request: web.Request, params: Iterable[QueryParam]) -> None:
    """Refuse a parameter that takes one value given more than once (``limit=1&limit=500``,
    two ``Idempotency-Key`` headers): which of them counts would be a guess."""
    for param in params:
        given = request.query if param.where == "query" else request.headers
        if not param.repeated and len(given.getall(param.name, ())) > 1:
            raise InvalidInput.one(
                param.name, f"{param.name} takes one value, given more than once"
            )


def _check_escapes(raw_query: str) -> None:
    for pair in raw_query.split("&"):
        raw_name, _, raw_value = pair.partition("=")
        for raw, of_name in ((raw_name, True), (raw_value, False)):
            try:
                urllib.parse.unquote_to_bytes(raw.replace("+", " ")).decode()
            except UnicodeError:
                problem = f"{quoted(raw)} has percent escapes that do not decode as UTF-8"
                if of_name:
                    raise InvalidInput.one("query", f"a parameter name: {problem}") from None
                raise InvalidInput.one(urllib.parse.unquote_plus(raw_name), problem) from None


async def read_body(
    request: web.Request, conv: cattrs.Converter, cls: type, ignore: frozenset[str] = frozenset()
) -> tuple[Any, dict[str, Any]]:
    """The body as ``cls``, and the read-only fields of ``ignore`` it holds (``read_only``)."""
    ctype = request.content_type
    if ctype not in JSON_TYPES and not ctype.endswith("+json"):
        raise UnsupportedMediaType.of(request)
    declared, limit = request.content_length, request.client_max_size
    if declared is not None and declared > limit:  # refused before a byte of it is read
        raise web.HTTPRequestEntityTooLarge(max_size=limit, actual_size=declared)
    raw = await request.read()
    if not raw.strip():
        raise MalformedBody(reason="the body is empty; a JSON object is expected")
    data = load_json(raw)
    body = structure(conv, data, cls, ignore=ignore)
    return body, sent_read_only(data, ignore - json_fields(cls))


def sent_back(route: Route) -> frozenset[str]:
    """The fields a PUT accepts and ignores: those of the record it answers (clients send a
    record back whole, with its read-only fields)."""
    if route.method == "PUT" and isinstance(route.response, Answer) and route.response.record:
        return route.response.fields()
    return frozenset()


Authenticate = Callable[[web.Request], Awaitable[Principal]]


def _json(reply: Reply) -> Any:
    return orjson.loads(reply.body) if isinstance(reply.body, bytes) else reply.body


_INPUT_ERRORS = frozenset({ErrorKind.INVALID, ErrorKind.UNSUPPORTED_MEDIA, ErrorKind.TOO_LARGE})


async def _guard(
    authenticate: Authenticate, request: web.Request, principal: Principal, role: Role
) -> None:
    check = getattr(authenticate, "check", None)
    text = request.match_info.get("orgId", "")
    try:
        org_id = uuid.UUID(text)
    except ValueError:
        return
    if check is not None:
        await check(principal, org_id, role)


def endpoint(
    route: Route,
    conv: cattrs.Converter,
    authenticate: Authenticate,
    provided: Mapping[str, Any] | None = None,
    current: Route | None = None,
) -> Any:
    """The aiohttp handler of a route: authenticate, read the body, run, answer JSON.
    ``provided``: the container's objects the handler names (``bind``). ``current``: of a PUT,
    the GET that answers the record it changes, which read-only fields sent back must match
    (``read_only``)."""
    run = bind(route.handler, provided or {})
    read_current = bind(current.handler, provided or {}) if current is not None else None
    ignore = sent_back(route)
    assert not route.memo or (route.method == "GET" and route.role is not None), route.path
    answers: StampedMemo[tuple[str, str], bytes] | None = StampedMemo() if route.memo else None

    async def handle(request: web.Request) -> web.StreamResponse:
        if route.role is not None:
            request[PRIVATE] = True
        principal = await authenticate(request) if route.role is not None else None
        if principal is not None and principal.key is not None:
            request[ORG_ID] = principal.key.org_id
            request[CALLER] = ("api_key", principal.key.id)
        elif principal is not None and principal.user is not None:
            request[CALLER] = ("user", principal.user.id)
        if route.user_only and principal is not None:  # before the body: whatever it holds
            principal.require_user()
        memo_key = stamp = None
        if answers is not None:
            credential, stamp = request.get(KEPT_UNDER, ("", None))
            if stamp is not None:
                memo_key = (credential, request.path)
                known = answers.get(memo_key, stamp)
                if known is not None:
                    return web.Response(status=200, body=known, content_type="application/json")
        try:
            check_text(request)
            check_once(request, route.query)
            body, sent = (
                await read_body(request, conv, route.body, ignore)
                if route.body is not None
                else (None, {})
            )
            if sent and read_current is not None:
                if principal is not None and route.org_scoped:  # who may not PUT learns nothing
                    await _guard(authenticate, request, principal, route.role or Role.ORGMEMBER)
                check_unchanged(sent, _json(await read_current(Req(request, principal, None))))
            reply = await run(Req(request, principal, body))
        except DomainError as e:
            # a caller with no business in the organisation learns nothing from how the input
            # is wrong: refuse them first
            if e.kind in _INPUT_ERRORS and principal is not None and route.role is not None:
                if route.org_scoped:
                    await _guard(authenticate, request, principal, route.role)
                else:  # a role outside any organisation: user or superadmin
                    principal.require(route.role)
                if "uid" in request.match_info:  # a user's own account
                    principal.require_own(request.match_info["uid"])
            raise
        if isinstance(reply.body, web.StreamResponse):  # a non-JSON answer, made by the handler
            return reply.body
        body = reply.body if isinstance(reply.body, bytes) else dumps(reply.body)
        if memo_key is not None and answers is not None and reply.status == 200:
            answers.put(memo_key, bytes(body), stamp)  # orjson's bytes carry spare capacity
        return web.Response(status=reply.status, body=body, content_type="application/json")

    handle.__name__ = route.operation_id
    return handle
