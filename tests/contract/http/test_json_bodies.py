"""JSON request bodies are RFC 8259 JSON, on every backend: UTF-8 text only (a UTF-16 or UTF-32
body is malformed, 400 AT-1000), and no member name twice in one object (400 AT-1001 naming the
member, where the last value would otherwise win silently). Nothing refused is stored."""

from __future__ import annotations

import json
from typing import Any

ALICE, BOB, ROOT = "alice@example.com", "bob@example.com", "root@example.com"
JSON = {"Content-Type": "application/json"}
ORG = {
    "legalIdentifier": "2120000787",
    "legalName": "ACME AB",
    "countryCode": "SE",
    "legalIdentifierCode": "SE:ORGNR",
}


async def every_org(api: Any) -> set[str]:
    """The names of the organisations (the operator's own among them)."""
    status, orgs = await api.call("GET", "/orgs?limit=500", as_=ROOT, superadmin=True)
    assert status == 200, orgs
    return {o["legalName"] for o in orgs["items"]}


async def test_a_body_in_utf16_or_utf32_is_malformed_and_creates_nothing(api):
    text = json.dumps(ORG)
    before = await every_org(api)
    for encoding in ("utf-16", "utf-16-le", "utf-16-be", "utf-32", "utf-32-le", "utf-32-be"):
        status, got = await api.call(
            "POST", "/orgs", as_=ALICE, data=text.encode(encoding), headers=JSON
        )
        assert (status, got["code"]) == (400, "AT-1000"), (encoding, got)
        assert got["error"] == "The request body is not well-formed: the body is not UTF-8.", got
    assert await every_org(api) == before
    # the same body in UTF-8, with a byte order mark or without, creates the organisation
    status, got = await api.call(
        "POST", "/orgs", as_=ALICE, data=b"\xef\xbb\xbf" + text.encode(), headers=JSON
    )
    assert status == 201, got
    other = {**ORG, "legalIdentifier": "5560360793", "legalName": "Åre AB"}
    status, got = await api.call(
        "POST", "/orgs", as_=BOB, data=json.dumps(other).encode(), headers=JSON
    )
    assert status == 201, got
    assert await every_org(api) == before | {"ACME AB", "Åre AB"}


async def test_a_repeated_member_name_is_invalid_input_naming_it_and_changes_nothing(api):
    org = await api.org(ALICE)
    before = await every_org(api)
    members = f"/orgs/{org['id']}/members"
    bob = (await api.me(BOB))["id"]
    raw = f'{{"userId": "{bob}", "role": "orgmember", "role": "orgadmin"}}'.encode()
    status, got = await api.call("POST", members, as_=ALICE, data=raw, headers=JSON)
    assert (status, got["code"]) == (400, "AT-1001"), got
    assert [d["field"] for d in got["details"]] == ["$.role"], got
    status, listed = await api.call("GET", members, as_=ALICE)
    assert status == 200 and bob not in {m["userRef"] for m in listed["items"]}, listed
    # deeper, the path names the member inside its object
    contacts = '[{"name": "Ann"}, {"name": "Bo", "email": "bo@example.com", "name": "Eve"}]'
    raw = (
        json.dumps({**ORG, "legalIdentifier": "5560360793"})[:-1] + f', "contacts": {contacts}}}'
    ).encode()
    status, got = await api.call("POST", "/orgs", as_=BOB, data=raw, headers=JSON)
    assert (status, got["code"]) == (400, "AT-1001"), got
    assert [d["field"] for d in got["details"]] == ["$.contacts[1].name"], got
    assert await every_org(api) == before
    # given once, the member is added with the role sent
    raw = f'{{"userId": "{bob}", "role": "orgmember"}}'.encode()
    status, got = await api.call("POST", members, as_=ALICE, data=raw, headers=JSON)
    assert status == 201 and got["role"] == "orgmember", got
