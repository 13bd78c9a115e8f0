"""``POST /validation`` on the memory backend, with the real validator (one for the run, its
workers compiled once): the rules' own unit tests, the answer's shape, SBDs, documents the
rules do not apply to, and refused bodies."""

from __future__ import annotations

import shutil
from collections import Counter
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from fourcorner.entrypoints.container import build_container, resolve, web_app
from sbd_factory import make_sbd
from validation_cases import EXAMPLES, unit_cases

from .conftest import Api, settings_for
from .test_api_keys import future

CASES = unit_cases()
BASE = (EXAMPLES / "base-example.xml").read_bytes()
XML = {"Content-Type": "application/xml"}
FIELDS = {"valid", "checked", "customizationId", "profileId", "rules", "errors", "warnings"}


@pytest.fixture
async def api(
    tmp_path: Any, aiohttp_client: Any, shared_pki: Path, validator: Any, request: Any
) -> Api:
    shutil.copytree(shared_pki, tmp_path / "pki")
    extra = getattr(request, "param", {})
    container = build_container(settings_for("memory", tmp_path, **extra), validator=validator)
    client = await aiohttp_client(await web_app(container))
    return Api(client, container)


async def check(api: Api, body: bytes, **kwargs: Any) -> tuple[int, Any]:
    return await api.call("POST", "/validation", as_="val@example.com", data=body, **kwargs)


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
async def test_the_rules_own_unit_tests_pass(api, case):
    status, body = await check(api, case.document, headers=XML)
    assert status == 200, body
    assert body["checked"] is True
    errors = Counter(e["id"] for e in body["errors"])
    warnings = Counter(w["id"] for w in body["warnings"])
    for e in case.expect:
        if e.kind == "success":
            assert (errors[e.rule], warnings[e.rule]) == (0, 0), e
        else:
            counts = errors if e.kind == "error" else warnings
            assert counts[e.rule] == (e.number or 1), e
    assert body["valid"] is (not body["errors"])


async def test_a_valid_invoice(api):
    status, body = await check(api, BASE, headers=XML)
    assert status == 200
    assert set(body) == FIELDS
    assert body == {
        "valid": True,
        "checked": True,
        "customizationId": "urn:cen.eu:en16931:2017#compliant#urn:fdc:peppol.eu:2017:poacc:"
        "billing:3.0",
        "profileId": "urn:fdc:peppol.eu:2017:poacc:billing:01:1.0",
        "rules": "EN 16931 UBL 1.3.14.1, BIS Billing 3.0 UBL 3.0.19",
        "errors": [],
        "warnings": [],
    }


async def test_each_failed_assert_is_listed_with_its_place(api):
    nameless = BASE.replace(b"<cbc:Name>item name</cbc:Name>", b"").replace(
        b"<cbc:Name>item name 2</cbc:Name>", b""
    )
    status, body = await check(api, nameless, headers={"Content-Type": "text/xml"})
    assert status == 200 and body["valid"] is False
    assert [e["id"] for e in body["errors"]] == ["BR-25", "BR-25"]
    first, second = body["errors"]
    assert set(first) == {"id", "flag", "location", "text"} and first["flag"] == "fatal"
    assert first["location"] != second["location"]
    assert first["text"].startswith("[BR-25]")


async def test_an_sbd_and_a_multipart_upload(api):
    broken = BASE.replace(b"<cbc:IssueDate>2017-11-13</cbc:IssueDate>", b"")
    status, body = await check(api, make_sbd(payload=broken), headers=XML)
    assert status == 200 and [e["id"] for e in body["errors"]] == ["BR-03"]
    form = aiohttp.FormData()
    form.add_field("file", BASE, filename="invoice.xml", content_type="application/xml")
    status, body = await check(api, form)
    assert status == 200 and body["valid"] is True


async def test_an_api_key_may_validate(api):
    org = await api.org("owner@example.com")
    status, key = await api.call(
        "POST",
        f"/orgs/{org['id']}/api_keys",
        as_="owner@example.com",
        json={"name": "validation", "expires": future(), "role": "orgmember"},
    )
    assert status == 201, key
    status, body = await api.call("POST", "/validation", key=key["key"], data=BASE, headers=XML)
    assert status == 200 and body["valid"] is True


async def test_other_documents_are_not_checked(api):
    order = (
        b'<Order xmlns="urn:oasis:names:specification:ubl:schema:xsd:Order-2"><ID>1</ID></Order>'
    )
    status, body = await check(api, order, headers=XML)
    assert status == 200
    assert body == {
        "valid": None,
        "checked": False,
        "customizationId": None,
        "profileId": None,
        "rules": "",
        "errors": [],
        "warnings": [],
    }


@pytest.mark.parametrize(
    ("body", "status", "code", "problem"),
    [
        (b"<Invoice", 400, "AT-1001", "not well-formed"),
        (b'<!DOCTYPE a [<!ENTITY x "y">]><a>&x;</a>', 400, "AT-1001", "DOCTYPE"),
        (b"", 400, "AT-1000", "a UBL or CII document, or an SBD holding one, is expected"),
    ],
    ids=["cut", "entities", "empty"],
)
async def test_bad_bodies_are_refused(api, body, status, code, problem):
    got, answer = await check(api, body, headers=XML)
    assert (got, answer["code"]) == (status, code)
    assert problem in str(answer)


async def test_rules_that_cannot_run_answer_422(api):
    bad = BASE.replace(
        b'<cbc:PayableAmount currencyID="EUR">1656.25<', b'<cbc:PayableAmount currencyID="EUR">x<'
    )
    status, body = await check(api, bad, headers=XML)
    assert (status, body["code"]) == (422, "AT-1130")
    assert "xs:decimal" in body["error"]


@pytest.mark.parametrize("api", [{"max_document_bytes": 4096}], indirect=True)
async def test_the_body_is_bounded_as_intake_bounds_sbds(api):
    status, body = await check(api, BASE, headers=XML)
    assert (status, body["code"]) == (413, "AT-1002")
    blobs = await resolve(api.container.blobs)  # a resource: opened with the others
    probe = blobs.incoming()  # the store makes the (empty) file it names
    probe.unlink()
    assert not list(probe.parent.glob("*.part"))  # the spooled file is removed


async def test_json_is_refused_and_callers_must_sign_in(api):
    status, body = await check(api, b"{}", headers={"Content-Type": "application/json"})
    assert (status, body["code"]) == (415, "AT-1003")
    status, body = await api.call("POST", "/validation", data=BASE, headers=XML)
    assert (status, body["code"]) == (401, "AT-1018")


async def test_the_route_is_described(api):
    status, spec = await api.call("GET", "/openapi.json")
    assert status == 200
    op = spec["paths"]["/validation"]["post"]
    schema = op["responses"]["200"]["content"]["application/json"]["schema"]
    assert set(schema["required"]) == FIELDS
    assert schema["properties"]["valid"]["type"] == ["boolean", "null"]
    assert {"400", "413", "415", "422", "503"} <= set(op["responses"])
