"""The OpenAPI document explains itself: every property has a description, every request body
and JSON answer an example that the server would read (a body) or could answer (an answer)."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

import pytest
from jsonschema import Draft202012Validator, FormatChecker
from openapi_spec_validator import OpenAPIV31SpecValidator

from fourcorner.adapters.sbdh.reader import read_envelope
from fourcorner.domain.events import MLS_RESPONSE_CODES
from fourcorner.domain.member import MemberStatus
from fourcorner.domain.send_failures import TXE_CATALOGUE
from fourcorner.domain.transaction import Status
from fourcorner.entrypoints.http import descriptions, examples, openapi
from fourcorner.entrypoints.http import errors as http_errors
from fourcorner.entrypoints.http.converter import make_converter, structure
from fourcorner.entrypoints.http.routes import routes


@pytest.fixture(scope="module")
def doc() -> dict[str, Any]:
    return openapi.document(routes(), title="fourcorner", version="0", converter=make_converter())


def _properties(node: Any, where: str) -> Iterator[tuple[str, str, Any]]:
    """Every property of every object schema in ``node``: (where, name, its schema)."""
    if isinstance(node, dict):
        for name, prop in (node.get("properties") or {}).items():
            if isinstance(prop, dict):
                yield where, name, prop
        for key, value in node.items():
            if key in ("example", "examples"):
                continue
            yield from _properties(value, f"{where}/{key}")
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from _properties(value, f"{where}/{i}")


def test_every_property_has_a_description(doc):
    missing = [
        f"{where}.{name}"
        for where, name, prop in _properties(doc, "#")
        if not str(prop.get("description", "")).strip()
    ]
    assert missing == []
    assert len(list(_properties(doc, "#"))) > 300  # the walk sees the whole document


def test_the_answers_with_retry_after_document_it(doc):
    """Every error answer of an operation that may carry ``Retry-After`` (its status has an
    error answered with it: 429 AT-1029, the AS4 endpoint's 503 AT-1504, /validation's 503
    AT-1505, the test event's 429 AT-1030, the 503 AT-1507 of every operation on the
    database) documents the header, and no other does."""
    retried = {c.code for c in http_errors.catalogue() if issubclass(c, http_errors.RETRIED)}
    assert retried == {"AT-1029", "AT-1030", "AT-1504", "AT-1505", "AT-1507"}
    for path, ops in doc["paths"].items():
        for method, op in ops.items():
            for status, answer in op["responses"].items():
                with_it = any(code in answer["description"] for code in retried)
                has_it = "Retry-After" in answer.get("headers", {})
                assert has_it == with_it, (method, path, status)
    as4 = doc["paths"]["/as4/{orgId}/{apId}"]["post"]["responses"]["503"]
    assert "AT-1504" in as4["headers"]["Retry-After"]["description"]
    checks = doc["paths"]["/validation"]["post"]["responses"]["503"]
    assert "AT-1505" in checks["headers"]["Retry-After"]["description"]
    trigger = doc["paths"]["/orgs/{orgId}/webhooks/trigger-test-event"]["post"]["responses"]
    assert "AT-1030" in trigger["429"]["headers"]["Retry-After"]["description"]
    participants = doc["paths"]["/orgs/{orgId}/participants"]["post"]["responses"]["503"]
    assert "AT-1507" in participants["headers"]["Retry-After"]["description"]


def test_every_described_property_exists(doc):
    """The table names only schemas and properties that are in the document."""
    schemas = doc["components"]["schemas"]
    stale = [
        (schema, prop)
        for schema, props in descriptions.PROPERTIES.items()
        for prop in props
        if prop not in schemas.get(schema, {}).get("properties", {})
    ]
    assert stale == []


def _strict(node: Any) -> Any:
    """``node`` with every object schema closed: an example holding a field that its schema
    does not declare fails, so examples and schemas cannot drift apart either way."""
    if isinstance(node, dict):
        out = {k: _strict(v) for k, v in node.items()}
        if "properties" in out and out.get("type") == "object":
            out.setdefault("additionalProperties", False)
        return out
    if isinstance(node, list):
        return [_strict(v) for v in node]
    return node


def _examples(doc: dict[str, Any]) -> Iterator[tuple[str, str, dict[str, Any]]]:
    """Each JSON request body and 2xx JSON answer: (operation, which, media type object)."""
    for path, ops in doc["paths"].items():
        for method, op in ops.items():
            name = f"{method.upper()} {path}"
            body = op.get("requestBody", {}).get("content", {})
            if "application/json" in body:
                yield name, "request", body["application/json"]
            for status, answer in op["responses"].items():
                content = answer.get("content", {})
                if status.startswith("2") and "application/json" in content:
                    yield name, f"answer {status}", content["application/json"]


def test_every_json_body_and_answer_has_an_example_valid_against_its_schema(doc):
    components = _strict(doc["components"])
    checked = 0
    for operation, which, media in _examples(doc):
        assert "example" in media, (operation, which)
        schema = {**_strict(media["schema"]), "components": components}
        validator = Draft202012Validator(schema, format_checker=FormatChecker())
        problems = [
            f"{'/'.join(map(str, e.absolute_path))}: {e.message}"
            for e in validator.iter_errors(media["example"])
        ]
        assert problems == [], (operation, which)
        checked += 1
    assert checked > 80


def test_every_field_of_an_answer_shows_in_its_example(doc):
    """An example shows each field of its record (optional ones included), so a reader sees
    them all."""
    schemas = doc["components"]["schemas"]
    for operation, which, media in _examples(doc):
        example = media["example"]
        ref = media["schema"].get("$ref") or media["schema"].get("properties", {}).get(
            "items", {}
        ).get("items", {}).get("$ref")
        if which == "request" or ref is None:
            continue
        record = example["items"][0] if "items" in example else example
        fields = set(schemas[ref.rsplit("/", 1)[1]]["properties"])
        assert fields <= set(record) | _OPTIONAL_UNSHOWN, (operation, fields - set(record))


# fields left out of an answer when they have no value, and absent from the examples' records
_OPTIONAL_UNSHOWN = {
    "serviceError",  # a COMPLETED transaction has none
    "transactionId",  # of an error only
    "comment",
    "deprecation-release",
    "removal-date",
    "deprecationRelease",
    "removalDate",
    "structure",
    "usage",
    "key",
    "values",
    "keys",
}


def test_request_examples_are_read_by_the_server():
    """Each request body's example is read by the converter as the server reads it."""
    conv = make_converter()
    for route in routes():
        if route.body is None:
            continue
        example = examples.body(route.body)
        assert example is not None, route.body.__name__
        structure(conv, copy.deepcopy(example), route.body)


def test_every_xml_upload_has_an_example_sbd_that_intake_reads(doc):
    named = doc["components"]["examples"]
    uploads = 0
    for ops in doc["paths"].values():
        for op in ops.values():
            content = op.get("requestBody", {}).get("content", {})
            for media_type in ("application/xml", "text/xml"):
                if media_type not in content:
                    continue
                (ref,) = (e["$ref"] for e in content[media_type]["examples"].values())
                sbd = named[ref.rsplit("/", 1)[1]]["value"]
                envelope = read_envelope(sbd.encode())
                assert envelope.sender.value == examples.PARTICIPANT_IDENTIFIER
                uploads += 1
    assert uploads == 6, "POST …/transactions, PUT /uploads/{token}, POST /validation"


def test_the_document_with_its_examples_is_valid_openapi_3_1(doc):
    assert [e.message for e in OpenAPIV31SpecValidator(doc).iter_errors()] == []


def test_answer_enums_are_the_domain_values(doc):
    schemas = doc["components"]["schemas"]
    props = schemas["ServiceError"]["properties"]
    assert set(props["category"]["enum"]) == {f.category for f in TXE_CATALOGUE}
    assert set(props["action"]["enum"]) == {f.action for f in TXE_CATALOGUE}
    assert all(Draft202012Validator(props["code"]).is_valid(f.code) for f in TXE_CATALOGUE)
    assert schemas["Transaction"]["properties"]["transactionStatus"]["enum"] == [
        s.value for s in Status
    ]
    assert schemas["Accepted"]["properties"]["transactionStatus"]["enum"] == [
        s.value for s in Status
    ]
    for name in ("Transaction", "Confirmation"):
        codes = schemas[name]["properties"]["mlsResponseCode"]["enum"]
        assert codes == list(MLS_RESPONSE_CODES), name
    for name in ("eventType", "event"):  # only the test event is raised by hand
        assert schemas["TriggerEvent"]["properties"][name]["anyOf"][0]["enum"] == ["webhook.test"]
    assert schemas["Member"]["properties"]["status"]["enum"] == [s.value for s in MemberStatus]


def test_request_ids_are_uuids_and_answer_ids_any_text(doc):
    """The request's ``{"ids"}`` (UUIDs of records) and the answer's (ids the operation
    changed: users' ids are any text) are two schemas, not one standing for both."""
    schemas = doc["components"]["schemas"]
    assert schemas["Ids"]["properties"]["ids"]["items"]["format"] == "uuid"
    assert "format" not in schemas["ChangedIds"]["properties"]["ids"]["items"]
    body = doc["paths"]["/orgs/{orgId}/members/approve"]["put"]["requestBody"]
    assert body["content"]["application/json"]["schema"] == {"$ref": "#/components/schemas/Ids"}


def test_every_body_and_success_answer_has_an_example(doc):
    missing = []
    for path, ops in doc["paths"].items():
        for method, op in ops.items():
            bodies = op.get("requestBody", {}).get("content", {})
            answers = {
                f"{status} {media}": shown
                for status, answer in op["responses"].items()
                if status.startswith("2")
                for media, shown in answer.get("content", {}).items()
            }
            for name, shown in {**bodies, **answers}.items():
                if "example" not in shown and "examples" not in shown:
                    missing.append(f"{method.upper()} {path} {name}")
    assert missing == []
