"""Text that could not be written back is refused at the edge, on every backend: lone
surrogates and control characters in JSON bodies, queries and paths; deep nesting; numbers in
queries that are not ASCII digits. Nothing is stored, and every later read still answers."""

from __future__ import annotations

import asyncio
import base64
import json
import urllib.parse
import uuid
from typing import Any

import attrs
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from multidict import CIMultiDict

from fourcorner.application.collections import ORGANISATIONS
from fourcorner.domain.organisation import Contact
from fourcorner.entrypoints.container import resolve
from fourcorner.entrypoints.http.limits import MAX_JSON_DEPTH
from sbd_factory import make_sbd

from .test_flow_validation import sending_org
from .test_participants import gln, participant

ALICE, ROOT = "alice@example.com", "root@example.com"
ORG = {
    "legalIdentifier": "2120000787",
    "legalName": "ACME AB",
    "countryCode": "SE",
    "legalIdentifierCode": "SE:ORGNR",
}


async def post(api: Any, path: str, text: str, method: str = "POST") -> tuple[int, Any]:
    """Send ``text`` as the body, as it is: ``json.dumps`` writes lone surrogates as escapes."""
    return await api.call(
        method,
        path,
        as_=ALICE,
        data=text.encode(),
        headers={"Content-Type": "application/json"},
    )


async def everything_reads(api: Any) -> list[dict[str, Any]]:
    """Alice's organisations; the superadmin's list of every organisation answers too."""
    status, orgs = await api.call("GET", "/orgs?limit=500", as_=ROOT, superadmin=True)
    assert status == 200, orgs
    out = []
    for membership in (await api.me(ALICE))["memberships"]:
        status, org = await api.call("GET", f"/orgs/{membership['orgId']}", as_=ALICE)
        assert status == 200, org
        out.append(org)
    return out


async def test_unwritable_text_in_a_body_is_400_naming_the_field_and_stores_nothing(api):
    cases = [
        ({**ORG, "legalName": "\ud800"}, "$.legalName"),
        ({**ORG, "shortName": "a\udc00b"}, "$.shortName"),
        ({**ORG, "legalName": "x\u0000y"}, "$.legalName"),
        ({**ORG, "contacts": [{"name": "bell\u0007"}]}, "$.contacts[0].name"),
        ({**ORG, "website": "https://x.example/\ufffe"}, "$.website"),
        ({**ORG, "\udfff": 1}, "$"),
    ]
    for body, field in cases:
        status, got = await post(api, "/orgs", json.dumps(body))
        assert (status, got["code"]) == (400, "AT-1001"), (body, got)
        assert got["details"][0]["field"] == field, got
    assert await everything_reads(api) == []
    # text with tabs, line breaks and characters beyond the BMP is text
    fine = {**ORG, "shortName": "Acme\tAB\r\n😀 ÅÄÖ"}
    status, org = await post(api, "/orgs", json.dumps(fine))
    assert status == 201 and org["shortName"] == fine["shortName"], org
    status, got = await post(api, f"/orgs/{org['id']}", '{"shortName": "\\ud83d"}', "PUT")
    assert (status, got["code"]) == (400, "AT-1001")
    uid = (await api.me(ALICE))["id"]
    status, got = await post(api, f"/users/{uid}", '{"name": "\\udbff\\udbff"}', "PUT")
    assert (status, got["code"]) == (400, "AT-1001") and got["details"][0]["field"] == "$.name"
    [listed] = await everything_reads(api)
    assert listed["shortName"] == fine["shortName"]


async def test_nesting_deeper_than_the_limit_is_400(api):
    for depth in (MAX_JSON_DEPTH + 1, 1000, 50_000):
        inner = "[" * (depth - 1) + "]" * (depth - 1)
        status, got = await post(api, "/orgs", '{"legalName": ' + inner + "}")
        assert (status, got["code"]) == (400, "AT-1000"), (depth, got)
        assert str(MAX_JSON_DEPTH) in got["error"]
    # at the limit the body is read, and refused for what it holds
    inner = "[" * (MAX_JSON_DEPTH - 1) + "]" * (MAX_JSON_DEPTH - 1)
    status, got = await post(api, "/orgs", '{"legalName": ' + inner + "}")
    assert (status, got["code"]) == (400, "AT-1001")
    status, got = await post(api, "/orgs", '{"legalName": NaN}')
    assert (status, got["code"]) == (400, "AT-1000")
    assert await everything_reads(api) == []


async def test_numbers_in_queries_are_ascii_digits(api):
    for path in ("/orgs", "/document_types", "/participant_identifiers"):
        for limit in ("²", "٣", "１", "1_0", " 5", "+5"):
            status, got = await api.call("GET", f"{path}?limit={limit}", as_=ROOT, superadmin=True)
            assert (status, got["code"]) == (400, "AT-1001"), (path, limit, got)
            assert got["details"][0]["field"] == "limit"
        status, got = await api.call("GET", f"{path}?limit=2", as_=ROOT, superadmin=True)
        assert status == 200 and len(got["items"]) <= 2


async def test_query_and_path_values_that_are_not_text_are_400(api):
    org = await api.org(ALICE)
    for query in ("search=a%00b", "filter=legalName:eq:%01", "cursor=%00", "search=%EF%BF%BE"):
        status, got = await api.call("GET", f"/orgs?{query}", as_=ROOT, superadmin=True)
        assert (status, got["code"]) == (400, "AT-1001"), (query, got)
    status, got = await api.call("GET", f"/orgs/{org['id']}/participants?a%00=1", as_=ALICE)
    assert (status, got["code"]) == (400, "AT-1001") and got["details"][0]["field"] == "query"
    status, got = await api.call("GET", "/document_types/a%00b", as_=ALICE)
    assert (status, got["code"]) == (400, "AT-1001") and got["details"][0]["field"] == "id"
    resp = await api.client.get("/smp/test/iso6523-actorid-upis%3A%3A0088%3A%00")
    assert resp.status == 400 and (await resp.json())["code"] == "AT-1001"
    status, got = await api.call("GET", "/orgs?search=%C3%A5%09", as_=ROOT, superadmin=True)
    assert status == 200
    # a cursor is ASCII, but what it decodes to is read as text too
    for inside in ("2026-01-01T00:00:00.000000Z|\u0000", "2026-01-01T00:00:00.000000\u0000|x"):
        cursor = base64.urlsafe_b64encode(inside.encode()).decode().rstrip("=")
        status, got = await api.call("GET", f"/orgs?cursor={cursor}", as_=ROOT, superadmin=True)
        assert (status, got["code"]) == (400, "AT-1005"), got


async def test_query_escapes_that_are_not_utf8_are_400_not_a_search_for_u_fffd(api):
    """Decoded leniently, ``%FF`` reads as U+FFFD: the search would be for other text than
    the client sent, and answer 200 with what matches that."""
    org = await api.org(ALICE)
    listing = f"/orgs/{org['id']}/participants"
    for query, field in (
        ("search=%FF", "search"),
        ("filter=name:eq:a%C0%AE", "filter"),
        ("filter=name:eq:a&filter=name:eq:%ED%A0%80", "filter"),
        ("search=a&x=%FE%FF", "x"),
        ("%FF=1", "query"),
        ("sea%72ch=%E2%82", "search"),
    ):
        status, got = await api.call("GET", f"{listing}?{query}", as_=ALICE)
        assert (status, got["code"]) == (400, "AT-1001"), (query, got)
        assert got["details"][0]["field"] == field, (query, got)
    # U+FFFD sent as its UTF-8 escapes is text, and so is any other UTF-8
    for query in ("search=%EF%BF%BD", "search=%C3%A5+%F0%9F%98%80", "search=%EF%BF%BD&x=%C3%A5"):
        status, got = await api.call("GET", f"{listing}?{query}", as_=ALICE)
        assert status == 200, (query, got)


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(data=st.lists(st.integers(0x20, 0xFF), min_size=1, max_size=12).map(bytes))
async def test_a_query_value_is_refused_exactly_when_its_bytes_are_not_utf8(api, data):
    """(No control bytes: a control character is refused for being one.)"""
    try:
        data.decode()
        utf8 = True
    except UnicodeDecodeError:
        utf8 = False
    escaped = urllib.parse.quote_from_bytes(data, safe="")
    status, got = await api.call("GET", f"/document_types?category={escaped}", as_=ALICE)
    assert status in (200, 400), got
    refused = status == 400 and "do not decode as UTF-8" in got["error"]
    assert refused is not utf8, (data, got)


async def test_a_parameter_that_takes_one_value_given_twice_is_400_and_sends_nothing(api):
    """``limit=1&limit=500`` answered with the first, ``category=Invoice&category=CreditNote``
    with invoices only, and of two Idempotency-Key headers the second was ignored."""
    org, sender, ap = await sending_org(api, 83)
    listing = f"/orgs/{org['id']}/participants"
    for path, name in (
        (f"{listing}?limit=1&limit=500", "limit"),
        (f"{listing}?search=a&search=b", "search"),
        (f"{listing}?sort=name&filter=name:ne:x&sort=-name", "sort"),
        ("/document_types?category=Invoice&category=CreditNote", "category"),
        ("/constants?key=a&key=b", "key"),
        (f"/orgs/{org['id']}/transactions/upload_url?ap={ap}&ap={ap}", "ap"),
    ):
        status, got = await api.call("GET", path, as_=ALICE)
        assert (status, got["code"]) == (400, "AT-1001"), (path, got)
        assert got["details"][0]["field"] == name, (path, got)
    sends = f"/orgs/{org['id']}/transactions"
    once = {"Content-Type": "application/xml", "Authorization": f"Bearer {api.token(ALICE)}"}
    twice = CIMultiDict(once)
    twice.extend([("Idempotency-Key", "k1"), ("Idempotency-Key", "k2")])
    for path, headers, name in (
        (f"{sends}?ap={ap}", twice, "Idempotency-Key"),
        (f"{sends}?ap={ap}&mlsType=ALWAYS_SEND&mlsType=FAILURE_ONLY", once, "mlsType"),
    ):
        resp = await api.client.post(path, data=make_sbd(sender=sender), headers=headers)
        got = await resp.json()
        assert (resp.status, got["code"]) == (400, "AT-1001"), got
        assert got["details"][0]["field"] == name, got
    _, listed = await api.call("GET", f"{sends}/to_network", as_=ALICE)
    assert listed["items"] == []
    # a filter is repeated, and any parameter given once answers
    status, got = await api.call(
        "GET", f"{listing}?filter=name:ne:x&filter=name:ne:y&limit=1", as_=ALICE
    )
    assert status == 200 and len(got["items"]) == 1, got


async def test_credentials_with_bytes_that_are_not_utf8_are_401(api):
    """Header values are decoded leniently: undecodable bytes become lone surrogates."""
    for header in (b"Authorization: Bearer \xff\xfe", b"X-Api-Key: fck_\xed\xa0\x80"):
        reader, writer = await asyncio.open_connection("127.0.0.1", api.client.port)
        writer.write(b"GET /users/me HTTP/1.1\r\nHost: x\r\nConnection: close\r\n")
        writer.write(header + b"\r\n\r\n")
        answer = await reader.read()
        writer.close()
        assert answer.startswith(b"HTTP/1.1 401 "), answer
        assert b'"AT-1018"' in answer


async def test_the_public_business_card_answers_after_a_refused_update(api):
    org = await api.org(ALICE)
    ident = f"0088:{gln(1)}"
    card = {"legalName": "ACME AB", "countryCode": "SE"}
    status, made = await participant(api, org["id"], ident, businessCard=card)
    assert status == 201, made
    path = f"/orgs/{org['id']}/participants/{made['id']}"
    for name in ("ACME\u0007", "ACME\ud800", "\uffff"):
        body = json.dumps({"businessCard": {**card, "legalName": name}})
        status, got = await post(api, path, body, "PUT")
        assert (status, got["code"]) == (400, "AT-1001"), got
        assert got["details"][0]["field"] == "$.businessCard.legalName"
    status, got = await participant(
        api, org["id"], f"0088:{gln(2)}", businessCard={**card, "legalName": "\x01"}
    )
    assert status == 400, got
    pid = urllib.parse.quote(f"iso6523-actorid-upis::{ident}", safe="")
    resp = await api.client.get(f"/smp/test/businesscard/{pid}")
    assert resp.status == 200 and b"ACME AB" in await resp.read()


async def test_records_stored_before_the_edge_refused_such_text_are_still_answered(api):
    """Contacts are stored as JSON, which escapes a lone surrogate: a record written so by an
    earlier version is answered, with U+FFFD in its place."""
    org = await api.org(ALICE)
    ctx = await resolve(api.container.context)
    async with ctx.uow() as uow:
        repo = uow.repository(ORGANISATIONS)
        record = await repo.get(uuid.UUID(org["id"]))
        await repo.update(attrs.evolve(record, contacts=(Contact(name="a\ud800b"),)))
        await uow.commit()
    [listed] = await everything_reads(api)
    assert listed["contacts"][0]["name"] == "a\ufffdb"


# --- any JSON text -----------------------------------------------------------------------------

_TEXT = st.text(
    st.characters(exclude_characters="\ufffd", max_codepoint=0x1FFFF)
    | st.characters(categories=["Cs", "Cc"])
    | st.sampled_from("\ud800\udbff\udc00\udfff\x00\ufffe\uffff\t\n"),
    max_size=12,
)
_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | _TEXT,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_TEXT, inner, max_size=4),
    max_leaves=16,
)
_FIELDS = ("legalName", "shortName", "website", "contacts", "businessAddress", "countryCode")


@st.composite
def bodies(draw: st.DrawFn) -> str:
    """JSON text: an organisation with one field replaced or added, any JSON value, or a deep
    nest of arrays; strings hold any code point (lone surrogates as escapes) but U+FFFD."""
    kind = draw(st.sampled_from(["field", "any", "deep"]))
    if kind == "deep":
        depth = draw(st.integers(1, 3 * MAX_JSON_DEPTH) | st.integers(1, 20_000))
        return '{"shortName": ' + "[" * depth + "]" * depth + "}"
    if kind == "any":
        return json.dumps(draw(_JSON))
    field = draw(st.sampled_from(_FIELDS) | _TEXT)
    legal = draw(st.sampled_from(["2120000787", "5560360793", "5566778899"]))
    return json.dumps({**ORG, "legalIdentifier": legal, field: draw(_JSON)})


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(text=bodies(), update=st.booleans())
async def test_any_json_text_answers_below_500_and_stores_only_text_that_reads_back(
    api, text, update
):
    path, method = "/orgs", "POST"
    if update:
        items = await everything_reads(api)
        if items:
            path, method = f"/orgs/{items[0]['id']}", "PUT"
    status, got = await post(api, path, text, method)
    assert status < 500, got
    for org in await everything_reads(api):
        # U+FFFD is never sent: one read back is a lone surrogate that was stored
        assert "\ufffd" not in json.dumps(org, ensure_ascii=False), org
