"""Every string a request body holds has a documented length (``maxLength`` in the OpenAPI
document), and the server refuses one character more, naming the field (AT-1001)."""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator
from typing import Any

ALICE, ROOT = "alice@example.com", "root@example.com"


def resolve(doc: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
    if "$ref" in schema:
        return doc["components"]["schemas"][schema["$ref"].rsplit("/", 1)[1]]
    if "anyOf" in schema:  # ``X | None``: the one that is not null
        [inner] = [s for s in schema["anyOf"] if s.get("type") != "null"]
        return resolve(doc, inner)
    return schema


def strings(
    doc: dict[str, Any], schema: dict[str, Any], path: tuple[str | int, ...] = ()
) -> Iterator[tuple[tuple[str | int, ...], bool, dict[str, Any]]]:
    """``(path, in_array, schema)`` of every string a body of ``schema`` can hold."""
    schema = resolve(doc, schema)
    if schema.get("type") == "string":
        yield path, False, schema
    elif schema.get("type") == "array":
        items = resolve(doc, schema["items"])
        if items.get("type") == "string":
            yield path, True, items
        else:
            yield from strings(doc, items, (*path, 0))
    for name, prop in schema.get("properties", {}).items():
        yield from strings(doc, prop, (*path, name))


def body_with(path: tuple[str | int, ...], value: Any) -> Any:
    for step in reversed(path):
        value = [value] if isinstance(step, int) else {step: value}
    return value


def json_path(path: tuple[str | int, ...]) -> str:
    return "$" + "".join(f"[{s}]" if isinstance(s, int) else f".{s}" for s in path)


def request_bodies(doc: dict[str, Any]) -> Iterator[tuple[str, str, dict[str, Any]]]:
    for path, ops in doc["paths"].items():
        for method, op in ops.items():
            # JSON bodies; the XML documents (uploads, validation) are bounded as a whole
            if "application/json" in op.get("requestBody", {}).get("content", {}):
                yield method.upper(), path, op["requestBody"]["content"]["application/json"]


async def test_every_string_of_every_request_body_has_a_length_the_server_enforces(start_api):
    api = await start_api("memory")
    org = await api.org(ALICE)
    _, me = await api.call("GET", "/users/me", as_=ROOT, superadmin=True)
    own = {"orgId": org["id"], "uid": me["id"]}  # a user's routes take only their own id
    _, doc = await api.call("GET", "/openapi.json")
    checked = 0
    for method, template, content in request_bodies(doc):
        path = re.sub(r"{(\w+)}", lambda m: own.get(m.group(1)) or str(uuid.uuid4()), template)
        found = list(strings(doc, content["schema"]))
        assert found, (method, template)
        for where, in_array, schema in found:
            limit = schema.get("maxLength")
            assert isinstance(limit, int) and limit > 0, (method, template, where, schema)
            field = json_path(where)
            for length, refused in ((limit + 1, True), (limit, False)):
                text = "x" * length
                body = body_with(where, [text] if in_array else text)
                status, got = await api.call(
                    method, path, as_=ROOT, superadmin=True, json=body or {}
                )
                details = got.get("details", []) if isinstance(got, dict) else []
                length_problems = [
                    d
                    for d in details
                    if d["field"] == field and f"at most {limit} characters" in d["problem"]
                ]
                if refused:
                    assert (status, got["code"]) == (400, "AT-1001"), (method, path, field, got)
                    assert length_problems, (method, template, field, got)
                else:
                    assert not length_problems, (method, template, field, got)
                checked += 1
    assert checked > 100


async def test_a_long_short_name_is_refused_and_changes_nothing(start_api):
    api = await start_api("memory")
    org = await api.org(ALICE, shortName="ACME")
    status, got = await api.call(
        "PUT", f"/orgs/{org['id']}", as_=ALICE, json={"shortName": "x" * 900_000}
    )
    assert (status, got["code"]) == (400, "AT-1001")
    assert got["details"] == [
        {"field": "$.shortName", "problem": "at most 256 characters, got 900000"}
    ]
    _, now = await api.call("GET", f"/orgs/{org['id']}", as_=ALICE)
    assert now["shortName"] == "ACME"
