"""The OpenAPI 3.1 document, generated from the route table and the converter's schemas."""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from fourcorner.domain import errors
from fourcorner.entrypoints.http.converter import declare_lengths, read_classes, schema_of
from fourcorner.entrypoints.http.routing import ListReply, Route
from fourcorner.entrypoints.http.views import View

_ERROR = {
    "type": "object",
    "properties": {
        "code": {"type": "string", "pattern": "^AT-[0-9]{4}$"},
        "error": {"type": "string"},
        "details": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {"field": {"type": "string"}, "problem": {"type": "string"}},
                "required": ["field", "problem"],
            },
        },
        "transactionId": {
            "type": "string",
            "format": "uuid",
            "description": "AT-1100 (document sent already): the transaction that sent it",
        },
    },
    "required": ["code", "error"],
}

_RETRY_AFTER = {
    "description": "Seconds until the client may try to authenticate again",
    "schema": {"type": "integer", "minimum": 1},
}

_STATUS_OF_KIND = {
    errors.ErrorKind.INVALID: 400,
    errors.ErrorKind.UNAUTHORISED: 401,
    errors.ErrorKind.FORBIDDEN: 403,
    errors.ErrorKind.NOT_FOUND: 404,
    errors.ErrorKind.METHOD_NOT_ALLOWED: 405,
    errors.ErrorKind.CONFLICT: 409,
    errors.ErrorKind.TOO_LARGE: 413,
    errors.ErrorKind.UNSUPPORTED_MEDIA: 415,
    errors.ErrorKind.RULE: 422,
    errors.ErrorKind.TOO_MANY: 429,
    errors.ErrorKind.UNAVAILABLE: 503,
    errors.ErrorKind.INTERNAL: 500,
}


def status_of(kind: errors.ErrorKind) -> int:
    return _STATUS_OF_KIND[kind]


def _error_statuses(route: Route) -> list[int]:
    out = {503}
    if route.role is not None:
        out |= {401, 403, 429}
    if route.body is not None:
        out |= {400, 413, 415}
    if route.query or "{" in route.path:
        out |= {400, 404}
    if route.method in ("POST", "PUT", "DELETE") and route.role is not None:
        out |= {404, 409, 422}
    by_code = {c.code: c for c in errors.catalogue()}
    out |= {status_of(by_code[c].kind) for c in route.errors}
    return sorted(out)


def _response_schema(route: Route, components: dict[str, Any]) -> dict[str, Any]:
    resp = route.response
    if isinstance(resp, View):
        return resp.schema(components)
    if isinstance(resp, ListReply):
        return {
            "type": "object",
            "properties": {
                "items": {"type": "array", "items": resp.view.schema(components)},
                "nextCursor": {"anyOf": [{"type": "string"}, {"type": "null"}]},
            },
            "required": ["items", "nextCursor"],
        }
    return dict(resp or {})


def _parameters(route: Route) -> list[dict[str, Any]]:
    params: list[dict[str, Any]] = []
    for name in re.findall(r"{(\w+)}", route.path):
        is_uuid = name == "id" or name.endswith("Id")
        schema = {"type": "string", "format": "uuid"} if is_uuid else {"type": "string"}
        params.append({"name": name, "in": "path", "required": True, "schema": schema})
    for q in route.query:
        schema: dict[str, Any] = dict(q.schema)
        param: dict[str, Any] = {"name": q.name, "in": q.where, "required": q.required}
        if q.repeated:
            param |= {"schema": {"type": "array", "items": schema}, "explode": True}
        else:
            param["schema"] = schema
        if q.description:
            param["description"] = q.description
        params.append(param)
    return params


def document(routes: Iterable[Route], *, title: str, version: str) -> dict[str, Any]:
    components: dict[str, Any] = {"Error": _ERROR}
    paths: dict[str, Any] = {}
    routes = list(routes)
    for route in routes:
        op: dict[str, Any] = {
            "operationId": route.operation_id,
            "summary": route.summary,
            "tags": [route.tag],
            "x-required-role": route.role.value if route.role else "public",
            "parameters": _parameters(route),
            "responses": {
                str(route.status): {
                    "description": "Success",
                    "content": {
                        route.content_type: {"schema": _response_schema(route, components)}
                    },
                }
            },
        }
        if route.role is not None:
            op["security"] = [{"bearer": []}, {"apiKey": []}]
            op["description"] = f"Role: {route.role.value}."
        if route.errors:
            op["description"] = (
                op.get("description", "") + " Error codes: " + ", ".join(route.errors)
            )
        if route.body is not None:
            op["requestBody"] = {
                "required": True,
                "content": {"application/json": {"schema": schema_of(route.body, components)}},
            }
        for status in _error_statuses(route):
            op["responses"][str(status)] = {
                "description": "Error",
                "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}},
            }
            if status == 429:
                op["responses"]["429"]["headers"] = {"Retry-After": _RETRY_AFTER}
        paths.setdefault(route.path, {})[route.method.lower()] = op
    declare_lengths(components, read_classes(r.body for r in routes if r.body is not None))
    codes = "\n".join(f"- `{c.code}` ({status_of(c.kind)}): {c.title}" for c in errors.catalogue())
    return {
        "openapi": "3.1.0",
        "info": {
            "title": title,
            "version": version,
            "description": "Error body: {code, error, details}. Codes:\n" + codes,
        },
        "paths": paths,
        "components": {
            "schemas": components,
            "securitySchemes": {
                "bearer": {"type": "http", "scheme": "bearer", "bearerFormat": "JWT"},
                "apiKey": {"type": "apiKey", "in": "header", "name": "X-Api-Key"},
            },
        },
    }
