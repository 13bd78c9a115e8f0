"""The OpenAPI 3.1 document, generated from the route table and the converter's schemas."""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

import cattrs

from fourcorner.domain import errors
from fourcorner.domain.events import MLS_RESPONSE_CODES
from fourcorner.domain.network_services import Environment
from fourcorner.domain.roles import Role
from fourcorner.domain.send_failures import TXE_CATALOGUE
from fourcorner.entrypoints.http import descriptions, examples, responses, smp_handlers
from fourcorner.entrypoints.http import errors as http_errors
from fourcorner.entrypoints.http.choices import BODY_CHOICES
from fourcorner.entrypoints.http.json_schema import declare_lengths, read_classes, schema_of
from fourcorner.entrypoints.http.rendering import Answer, ListOf, ListReply
from fourcorner.entrypoints.http.routing import Route

# what the Retry-After header of an answer with each error (``http_errors.RETRIED``) says
_RETRY_AFTER = {
    "AT-1029": "seconds until the client may try to authenticate again",
    "AT-1504": "seconds until the sender may send the message again",
    "AT-1505": "seconds until the client may ask for the check again",
    "AT-1030": "seconds until the organisation may raise a test event again",
    "AT-1507": "seconds until the client may send the request again",
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
    errors.ErrorKind.EXPECTATION_FAILED: 417,
    errors.ErrorKind.RULE: 422,
    errors.ErrorKind.TOO_MANY: 429,
    errors.ErrorKind.UNAVAILABLE: 503,
    errors.ErrorKind.VERSION_NOT_SUPPORTED: 505,
    errors.ErrorKind.INTERNAL: 500,
}


def status_of(kind: errors.ErrorKind) -> int:
    return _STATUS_OF_KIND[kind]


def _retry_after(codes: list[str]) -> dict[str, Any]:
    """The ``Retry-After`` header of an answer with one of ``codes``."""
    said = "; ".join(f"{code}: {_RETRY_AFTER[code]}" for code in codes)
    return {"description": said, "schema": {"type": "integer", "minimum": 1}}


_CHECKED = frozenset({"limit", "sort", "ap", "participantId", "docTypeId", "environment", "key"})
_STATIC = frozenset({"/healthz", "/docs", "/docs/static/{name}", "/metrics"})
# the values the service writes in fields its records type as plain text
_ANSWER_ENUMS: dict[tuple[str, str], list[str]] = {
    ("ServiceError", "category"): sorted({f.category for f in TXE_CATALOGUE}),
    ("ServiceError", "action"): sorted({f.action for f in TXE_CATALOGUE}),
    ("Transaction", "mlsResponseCode"): list(MLS_RESPONSE_CODES),
    ("Confirmation", "mlsResponseCode"): list(MLS_RESPONSE_CODES),
    ("Status", "status"): ["ok", "ready"],  # /healthz, /readyz
}
_ANSWER_PATTERNS: dict[tuple[str, str], str] = {("ServiceError", "code"): "^TXE-[0-9]{4}$"}


_DOCUMENT = {"type": "string", "description": "the XML document"}
_RAW_BODIES: dict[str, dict[str, Any]] = {
    "application/xml": _DOCUMENT,
    "text/xml": _DOCUMENT,
    "multipart/form-data": {
        "type": "object",
        # a file part: ``format: binary`` is what client generators read as a file upload
        "properties": {
            "file": {**_DOCUMENT, "format": "binary", "contentMediaType": "application/xml"}
        },
        "required": ["file"],
    },
}


_SBD_EXAMPLE = "InvoiceSbd"
# the headers of the built-in SMP's answers (``smp_handlers``)
_REVALIDATED = {
    "Cache-Control": {
        "description": "kept by caches, but asked for again (If-None-Match) before each use",
        "schema": {"type": "string", "const": smp_handlers.CACHE_CONTROL},
    },
    "ETag": {
        "description": "the answer's; If-None-Match naming it is answered 304 while unchanged",
        "schema": {"type": "string"},
    },
}


def _raw_body(media_type: str) -> dict[str, Any]:
    """A body that is not JSON: its schema and its example (the example SBD)."""
    out: dict[str, Any] = {"schema": _RAW_BODIES[media_type]}
    if media_type == "multipart/form-data":
        out["example"] = {"file": examples.SBD}
    else:
        out["examples"] = {"invoice": {"$ref": f"#/components/examples/{_SBD_EXAMPLE}"}}
    return out


_SMP_NS = 'xmlns="http://busdox.org/serviceMetadata/publishing/1.0/"'
_ID_NS = 'xmlns:id="http://busdox.org/transport/identifiers/1.0/"'
# What the answers that are not JSON look like, abridged (the XML ones are signed or long)
_RAW_ANSWERS: dict[str, str] = {
    "text/html": "<!doctype html><html><head><title>fourcorner</title>...</html>",
    "application/octet-stream": "/* the documentation page's script or style sheet */",
    "text/plain": 'fourcorner_http_requests_total{route="/orgs/{orgId}",status="200"} 12.0',
    "application/soap+xml": '<S12:Envelope xmlns:S12="http://www.w3.org/2003/05/soap-envelope">'
    "<S12:Header><eb:Messaging ...><eb:SignalMessage>...<eb:Receipt>...</eb:Receipt>"
    "</eb:SignalMessage></eb:Messaging><wsse:Security>...</wsse:Security></S12:Header>"
    "<S12:Body/></S12:Envelope>",
    "/businesscard/{participant}": '<BusinessCard xmlns="http://www.peppol.eu/schema/pd/'
    'businesscard/20180621/"><ParticipantIdentifier scheme="iso6523-actorid-upis">'
    "0007:5560360793</ParticipantIdentifier><BusinessEntity><Name>Widgets AB</Name>"
    "<CountryCode>SE</CountryCode></BusinessEntity></BusinessCard>",
    "/{participant}": f"<ServiceGroup {_SMP_NS} {_ID_NS}><id:ParticipantIdentifier "
    'scheme="iso6523-actorid-upis">0007:5560360793</id:ParticipantIdentifier>'
    '<ServiceMetadataReferenceCollection><ServiceMetadataReference href="..."/>'
    "</ServiceMetadataReferenceCollection></ServiceGroup>",
    "/{participant}/services/{documentType}": f"<SignedServiceMetadata {_SMP_NS} {_ID_NS}>"
    "<ServiceMetadata><ServiceInformation>...<ProcessList><Process>...<ServiceEndpointList>"
    '<Endpoint transportProfile="peppol-transport-as4-v2_0"><EndpointURI>https://ap.example/'
    "as4/...</EndpointURI><Certificate>MIIF...</Certificate></Endpoint></ServiceEndpointList>"
    "</Process></ProcessList></ServiceInformation></ServiceMetadata>"
    '<Signature xmlns="http://www.w3.org/2000/09/xmldsig#">...</Signature>'
    "</SignedServiceMetadata>",
}


def _raw_answer(route: Route) -> dict[str, Any]:
    """The example of an answer that is not JSON: the example SBD for the documents, else an
    abridged one of its kind."""
    if route.content_type == "application/xml":
        return {"examples": {"invoice": {"$ref": f"#/components/examples/{_SBD_EXAMPLE}"}}}
    for ending, text in _RAW_ANSWERS.items():
        if ending.startswith("/") and route.path.endswith(ending):
            return {"example": text}
    return {"example": _RAW_ANSWERS[route.content_type]}


def error_codes(route: Route) -> list[str]:
    """The error codes ``route`` can answer: those of what it takes (credentials, a body, path
    and query values) and those its use case declares (``Route.errors``)."""
    codes = set(route.errors)
    if route.path not in _STATIC:
        # the database cannot be reached; a change made at the same time conflicted
        codes |= {"AT-1500", "AT-1507"}
    if route.role is not None:
        # no valid credentials; too many failed attempts; an API key where a person must act,
        # or a user acting for another
        codes |= {"AT-1018", "AT-1029", "AT-1022"}
        if route.org_scoped:
            codes |= {"AT-1019", "AT-1020", "AT-1040"}  # role, membership, the organisation
        elif route.role is Role.SUPERADMIN:
            codes.add("AT-1019")
    if route.body is not None:
        codes |= {"AT-1000", "AT-1001", "AT-1002", "AT-1003"}
    if "{" in route.path or any(q.required or q.name in _CHECKED for q in route.query):
        codes.add("AT-1001")  # a path or query value that is not one the route takes
    if "{" in route.path:
        codes.add("AT-1040")  # no such resource
    if any(q.name == "filter" for q in route.query):
        codes |= {"AT-1004", "AT-1005"}
    return sorted(codes)


def _is_uuid(name: str) -> bool:
    return name == "id" or name.endswith("Id")


def _by_status(codes: Iterable[str]) -> dict[int, list[type[errors.DomainError]]]:
    by_code = {c.code: c for c in http_errors.catalogue()}
    out: dict[int, list[type[errors.DomainError]]] = {}
    for code in codes:
        out.setdefault(status_of(by_code[code].kind), []).append(by_code[code])
    return dict(sorted(out.items()))


def _summary(text: str) -> str:
    """The first clause of a route's text (outside parentheses): what the operation does."""
    depth = 0
    for i, char in enumerate(text):
        depth += {"(": 1, ")": -1}.get(char, 0)
        if depth == 0 and char in ".;:?" and text[i + 1 : i + 2] in (" ", ""):
            return text[: i + 1] if char == "?" else text[:i]
    return text


def _description(route: Route, codes: list[str]) -> str:
    titles = {c.code: c.title for c in http_errors.catalogue()}
    who = f"Role: {route.role.value}." if route.role else "Public: no credentials."
    if route.user_only:
        who += " A user's token only: an API key is refused (`AT-1022`)."
    lines = [route.summary, "", who, "", "Error codes:"]
    lines += [f"- `{c}`: {titles[c]}" for c in codes]
    return "\n".join(lines)


def _narrow(schema: dict[str, Any], values: list[str]) -> dict[str, Any]:
    """``schema`` with each of its strings (of an array, of a union) limited to ``values``."""
    if schema.get("type") == "string":
        return {**schema, "enum": values}
    out = dict(schema)
    if "items" in schema:
        out["items"] = _narrow(schema["items"], values)
    if "anyOf" in schema:
        out["anyOf"] = [_narrow(s, values) for s in schema["anyOf"]]
    return out


def _response_schema(route: Route, components: dict[str, Any]) -> dict[str, Any]:
    return route.response.schema(components) if route.response is not None else {}


def _answer_example(route: Route, conv: cattrs.Converter) -> Any:
    """The example of a route's JSON answer (``examples``), or ``None``."""
    shown = route.response
    if isinstance(shown, Answer):
        return examples.answer(conv, shown)
    if isinstance(shown, ListReply | ListOf):
        item = examples.answer(conv, shown.answer)
        if item is None:
            return None
        if isinstance(shown, ListOf):
            return [item]
        return {"items": [item], "nextCursor": None}
    return None


def _parameters(route: Route) -> list[dict[str, Any]]:
    params: list[dict[str, Any]] = []
    for name in re.findall(r"{(\w+)}", route.path):
        schema: dict[str, Any] = (
            {"type": "string", "format": "uuid"} if _is_uuid(name) else {"type": "string"}
        )
        if name == "environment":  # the SMP's: its path segment (else 404)
            schema["enum"] = [e.value.lower() for e in Environment]
        params.append({"name": name, "in": "path", "required": True, "schema": schema})
    for q in route.query:
        schema = dict(q.schema)
        param: dict[str, Any] = {"name": q.name, "in": q.where, "required": q.required}
        if q.repeated:
            param |= {"schema": {"type": "array", "items": schema}, "explode": True}
        else:
            param["schema"] = schema
        if q.description:
            param["description"] = q.description
        params.append(param)
    return params


def _check_names(routes: list[Route], read: list[type]) -> None:
    """A request body's schema is named after its class, an answer's by ``Answer.name``: the
    two must differ, or one schema would stand for both (the first one made)."""
    answers = set()
    for route in routes:
        shown = route.response
        if isinstance(shown, ListReply | ListOf):
            shown = shown.answer
        if isinstance(shown, Answer):
            answers.add(shown.name)
    clash = sorted(answers & {cls.__name__ for cls in read})
    if clash:
        raise TypeError(f"schemas named both by an answer and a request body: {clash}")


def document(
    routes: Iterable[Route], *, title: str, version: str, converter: cattrs.Converter
) -> dict[str, Any]:
    """``converter``: the interface's, which renders the answers' examples."""
    components: dict[str, Any] = {}
    error = responses.ERROR.schema(components)
    paths: dict[str, Any] = {}
    routes = list(routes)
    for route in routes:
        codes = error_codes(route)
        op: dict[str, Any] = {
            "operationId": route.operation_id,
            "summary": _summary(route.summary),
            "description": _description(route, codes),
            "tags": [route.tag],
            "x-required-role": route.role.value if route.role else "public",
            "x-error-codes": codes,
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
        example = _answer_example(route, converter)
        shown = op["responses"][str(route.status)]["content"][route.content_type]
        if example is not None:
            shown["example"] = example
        elif route.content_type != "application/json":
            shown.update(_raw_answer(route))
        if route.tag == "smp":
            op["responses"]["200"]["headers"] = _REVALIDATED
            op["responses"]["304"] = {"description": "Not Modified", "headers": _REVALIDATED}
        for ctype, alternative in route.also:
            other: dict[str, Any] = {"schema": alternative.schema(components)}
            if isinstance(alternative, Answer) and (
                sample := examples.answer(converter, alternative)
            ):
                other["example"] = sample
            op["responses"][str(route.status)]["content"][ctype] = other
        if route.role is not None:
            op["security"] = [{"bearer": []}, {"apiKey": []}]
        if route.body is not None:
            op["requestBody"] = {
                "required": True,
                "content": {"application/json": {"schema": schema_of(route.body, components)}},
            }
            body_example = examples.body(route.body)
            if body_example is not None:
                op["requestBody"]["content"]["application/json"]["example"] = body_example
        if route.takes:
            op["requestBody"] = {
                "required": True,
                "content": {t: _raw_body(t) for t in route.takes},
            }
        for status, classes in _by_status(codes).items():
            answer: dict[str, Any] = {
                "description": "; ".join(f"{c.code} {c.title}" for c in classes),
                "content": {"application/json": {"schema": error}},
            }
            retried = [c.code for c in classes if issubclass(c, http_errors.RETRIED)]
            if retried:
                answer["headers"] = {"Retry-After": _retry_after(retried)}
            op["responses"][str(status)] = answer
        paths.setdefault(route.path, {})[route.method.lower()] = op
    read = read_classes(r.body for r in routes if r.body is not None)
    _check_names(routes, read)
    declare_lengths(components, read)
    for (name, field), chosen in BODY_CHOICES.items():
        props = components[name]["properties"]
        props[field] = _narrow(props[field], list(chosen))
    for (name, field), values in _ANSWER_ENUMS.items():
        props = components[name]["properties"]
        props[field] = _narrow(props[field], values)
    for (name, field), pattern in _ANSWER_PATTERNS.items():
        props = components[name]["properties"]
        props[field] = {**props[field], "pattern": pattern}
    descriptions.describe(components)
    all_codes = "\n".join(
        f"- `{c.code}` ({status_of(c.kind)}): {c.title}" for c in http_errors.catalogue()
    )
    return {
        "openapi": "3.1.0",
        "info": {
            "title": title,
            "version": version,
            "description": "Error body: {code, error, details}. Codes:\n" + all_codes,
        },
        "paths": paths,
        "components": {
            "schemas": components,
            "examples": {
                _SBD_EXAMPLE: {
                    "summary": "A BIS Billing 3 invoice in its SBD",
                    "value": examples.SBD,
                }
            },
            "securitySchemes": {
                "bearer": {"type": "http", "scheme": "bearer", "bearerFormat": "JWT"},
                "apiKey": {"type": "apiKey", "in": "header", "name": "X-Api-Key"},
            },
        },
    }
