"""Bodies hold known fields only, and a record read with GET can be PUT back unchanged.

A field a request does not take is refused (400 AT-1001, the detail naming it), at any depth,
except the fields of the record itself sent back with a PUT (``id``, ``createdAt``, ...):
existing clients send whole records back, and those are accepted with the record's values
(its bookkeeping, ``id``, ``createdAt``, ..., with any); another value of a read-only field is
a change the PUT cannot make (400 naming the field).
"""

from __future__ import annotations

from typing import Any

import pytest

from .test_network_spellings import own_access_point
from .test_participants import ALICE, BOB, gln, participant, whitelabel

SOME_URL = "https://hooks.example.com/in"


async def round_trip(api: Any, path: str, read: str | None = None) -> dict[str, Any]:
    """GET ``path`` (or ``read``), PUT the answer back unchanged to ``path``: 200, and the
    record is as it was."""
    status, before = await api.call("GET", read or path, as_=ALICE)
    assert status == 200, before
    status, answer = await api.call("PUT", path, as_=ALICE, json=before)
    assert status == 200, (path, answer)
    status, after = await api.call("GET", read or path, as_=ALICE)
    changing = {"lastModifiedAt", "lastModifiedBy"}
    assert {k: v for k, v in after.items() if k not in changing} == {
        k: v for k, v in before.items() if k not in changing
    }
    return after


async def test_every_resource_with_a_put_takes_its_own_get_back(api):
    org = await whitelabel(api)
    o = f"/orgs/{org['id']}"
    await round_trip(api, o)
    me = await api.me(ALICE)
    await round_trip(api, f"/users/{me['id']}", read="/users/me")
    bob = await api.me(BOB)
    _, member = await api.call(
        "POST", f"{o}/members", as_=ALICE, json={"userId": bob["id"], "role": "orgmember"}
    )
    await round_trip(api, f"{o}/members/{member['id']}")
    certificate, ap = await own_access_point(api, org)
    await round_trip(api, f"{o}/certificates/{certificate['id']}")
    await round_trip(api, f"{o}/aps/{ap['id']}")
    status, p = await participant(api, org["id"], f"0088:{gln(901)}")
    assert status == 201, p
    await round_trip(api, f"{o}/participants/{p['id']}")
    _, hook = await api.call(
        "POST", f"{o}/webhooks", as_=ALICE, json={"url": SOME_URL, "events": ["webhook.test"]}
    )
    await round_trip(api, f"{o}/webhooks/{hook['id']}")
    # the supported document types: the GET is a bare list, the PUT wraps it
    path = f"{o}/participants/{p['id']}/supported_document_types"
    _, docs = await api.call("GET", "/document_types?category=Invoice&limit=1", as_=ALICE)
    doc = docs["items"][0]
    process = doc["process-ids"][0]
    entry = {"documentId": doc["id"], "processId": f"{process['scheme']}::{process['value']}"}
    status, _ = await api.call("PUT", path, as_=ALICE, json={"supportedDocumentTypes": [entry]})
    assert status == 200
    _, listed = await api.call("GET", path, as_=ALICE)
    status, again = await api.call("PUT", path, as_=ALICE, json={"supportedDocumentTypes": listed})
    assert status == 200 and again == listed


async def test_read_only_fields_sent_back_keep_their_stored_values(api):
    org = await api.org(ALICE)
    status, p = await participant(api, org["id"], f"0088:{gln(902)}")
    path = f"/orgs/{org['id']}/participants/{p['id']}"
    edited = {
        **p,
        "id": "00000000-0000-0000-0000-000000000000",
        "createdAt": "2000-01-01T00:00:00Z",
        "name": "Renamed",
    }
    status, body = await api.call("PUT", path, as_=ALICE, json=edited)
    assert status == 200, body
    assert (body["id"], body["orgId"], body["status"]) == (p["id"], p["orgId"], p["status"])
    assert body["createdAt"] == p["createdAt"] and body["name"] == "Renamed"


async def _other_smp(api, org, p):
    _, smps = await api.call("GET", f"/orgs/{org['id']}/smps/alltouse", as_=ALICE)
    return next(s["id"] for s in smps["items"] if s["id"] != p["smpRef"])


async def test_read_only_fields_with_other_values_are_refused_naming_them(api):
    """A PUT that would change a field it does not take answers 400 naming the field, never
    200 with the field unchanged; sent with the current value, the field is fine."""
    org = await whitelabel(api)
    o = f"/orgs/{org['id']}"
    certificate, ap = await own_access_point(api, org)
    status, p = await participant(api, org["id"], f"0088:{gln(903)}")
    assert status == 201, p
    me = await api.me(ALICE)
    zero = "00000000-0000-0000-0000-000000000000"
    cases = [
        (f"{o}/participants/{p['id']}", "smpRef", await _other_smp(api, org, p)),
        (f"{o}/participants/{p['id']}", "participantIdentifier", f"0088:{gln(904)}"),
        (f"{o}/participants/{p['id']}", "environment", "PROD"),
        (f"{o}/participants/{p['id']}", "orgId", zero),
        (f"{o}/participants/{p['id']}", "status", "FAILED"),
        (f"{o}/aps/{ap['id']}", "environment", "PROD" if ap["environment"] == "TEST" else "TEST"),
        (f"{o}/certificates/{certificate['id']}", "certPem", "x"),
        (o, "sharedModeEnabled", None),  # the other boolean
        (f"/users/{me['id']}", "role", "superadmin"),
        (f"/users/{me['id']}", "email", "root@example.com"),
    ]
    for path, field, value in cases:
        read = "/users/me" if path.startswith("/users/") else path
        rename = {"legalName" if path == o else "name": "N"}  # a change the PUT takes
        _, before = await api.call("GET", read, as_=ALICE)
        value = (not before[field]) if value is None else value
        status, err = await api.call("PUT", path, as_=ALICE, json={field: value, **rename})
        assert status == 400 and err["code"] == "AT-1001", (field, err)
        assert [d["field"] for d in err["details"]] == [f"$.{field}"], (field, err)
        _, after = await api.call("GET", read, as_=ALICE)
        assert after == before, field  # nothing changed, the name neither
        status, same = await api.call("PUT", path, as_=ALICE, json={field: before[field], **rename})
        assert status == 200 and same[field] == before[field], (field, same)


@pytest.mark.parametrize(
    ("method", "path", "body", "fields"),
    [
        ("PUT", "/orgs/{org}", {"legalname": "Typo AB"}, ["$.legalname"]),
        ("PUT", "/orgs/{org}", {"legalName": "X", "x": 1, "y": 2}, ["$.x", "$.y"]),
        (
            "PUT",
            "/orgs/{org}",
            {"contacts": [{"name": "B", "emial": "b@example.com"}]},
            ["$.contacts[0].emial"],
        ),
        ("PUT", "/orgs/{org}", {"businessAddress": {"town": "Lund"}}, ["$.businessAddress.town"]),
        ("PUT", "/orgs/{org}", {"legal name": "X"}, ['$["legal name"]']),
        (
            "POST",
            "/orgs",
            {
                "legalIdentifier": "5560360793",
                "legalName": "X",
                "countryCode": "SE",
                "legalIdentifierCode": "SE:ORGNR",
                "id": "00000000-0000-0000-0000-000000000000",
            },
            ["$.id"],  # a creation takes no record fields: nothing to send back yet
        ),
        (
            "POST",
            "/orgs/{org}/webhooks",
            {"url": SOME_URL, "event": ["webhook.test"]},
            ["$.event", "$.events"],  # the misspelt field, and the missing one
        ),
        ("PUT", "/orgs/{org}/members/approve", {"ids": [], "id": "x"}, ["$.id"]),
        ("POST", "/users/{uid}/join_org", {"orgId": "{org}", "org": "{org}"}, ["$.org"]),
        ("PUT", "/users/{uid}", {"nmae": "Alice"}, ["$.nmae"]),
    ],
)
async def test_unknown_fields_are_refused_naming_them(api, method, path, body, fields):
    org = await api.org(ALICE)
    me = await api.me(ALICE)
    fill = {"org": org["id"], "uid": me["id"]}
    sent = {k: v.format(**fill) if isinstance(v, str) else v for k, v in body.items()}
    status, err = await api.call(method, path.format(**fill), as_=ALICE, json=sent)
    assert status == 400 and err["code"] == "AT-1001", err
    assert sorted(d["field"] for d in err["details"]) == sorted(fields)
    _, after = await api.call("GET", f"/orgs/{org['id']}", as_=ALICE)
    assert after == org  # nothing changed
    assert [m["orgId"] for m in (await api.me(ALICE))["memberships"]] == [org["id"]]


async def test_unknown_and_invalid_fields_are_named_together(api):
    org = await api.org(ALICE)
    status, err = await api.call(
        "PUT", f"/orgs/{org['id']}", as_=ALICE, json={"legalName": 5, "legalname": "x"}
    )
    assert status == 400
    assert sorted(d["field"] for d in err["details"]) == ["$.legalName", "$.legalname"]
