"""The tenant-isolation matrix, generated from the route table so that no new route escapes
it: every organisation-scoped route, called on organisation A by someone who does not belong
there, answers 401/403/404 and shows nothing of A."""

from __future__ import annotations

import asyncio
import re
import uuid
from datetime import UTC, datetime, timedelta

import pytest

from fourcorner.domain.roles import Role
from fourcorner.entrypoints.http.routes import routes

from .conftest import BACKENDS
from .test_participants import gln, participant

ALICE, BOB, MEMBER = "alice@example.com", "bob@example.com", "member@example.com"
ORG_ROUTES = [r for r in routes() if r.org_scoped and r.role is not None]


def future(seconds: float) -> str:
    return (datetime.now(UTC) + timedelta(seconds=seconds)).isoformat().replace("+00:00", "Z")


@pytest.fixture(params=BACKENDS)
async def api(request, start_api):
    """With no limit on failed authentication: the matrix sends hundreds of refused
    credentials from one address on purpose (the limit has its own tests)."""
    return await start_api(request.param, auth_failure_limit=0)


@pytest.fixture
async def world(api):
    a = await api.org(ALICE, legalName="Victim Holding AB")
    b = await api.org(BOB, legal_id="5560360793")
    member = await api.me(MEMBER)
    await api.call(
        "POST",
        f"/orgs/{a['id']}/members",
        as_=ALICE,
        json={"userId": member["id"], "role": "orgmember"},
    )
    _, p = await participant(api, a["id"], f"0088:{gln(60)}")

    async def key(org, who, **body):
        status, made = await api.call(
            "POST",
            f"/orgs/{org['id']}/api_keys",
            as_=who,
            json={"name": "k", "expires": future(3600), "role": "orgadmin", **body},
        )
        assert status == 201, made
        return made["key"]

    keys = {
        "key of another org": await key(b, BOB),
        "inactive key": await key(a, ALICE, isActive=False),
        "expired key": await key(a, ALICE, expires=future(1)),
    }
    await asyncio.sleep(1.2)  # the short-lived key expires
    return a, p, keys


def fill(path: str, org_id: str, participant_id: str) -> str:
    values = {"orgId": org_id, "participantId": participant_id}
    return re.sub(r"{(\w+)}", lambda m: values.get(m.group(1), str(uuid.uuid4())), path)


async def test_no_route_lets_an_outsider_in(api, world):
    a, p, keys = world
    callers = {
        "no credentials": ({}, None, {401}),
        "token of a user in another org": ({}, BOB, {403}),
        "orgmember where orgadmin is required": ({}, MEMBER, {403}),
        "key of another org": ({"X-Api-Key": keys["key of another org"]}, None, {403}),
        "inactive key": ({"X-Api-Key": keys["inactive key"]}, None, {401}),
        "expired key": ({"X-Api-Key": keys["expired key"]}, None, {401}),
    }
    checked = 0
    for route in ORG_ROUTES:
        path = fill(route.path, a["id"], p["id"])
        for label, (headers, who, expected) in callers.items():
            if label.startswith("orgmember") and route.role is not Role.ORGADMIN:
                continue  # an orgmember may call orgmember routes
            status, body = await api.call(
                route.method,
                path,
                as_=who,
                headers={**headers, "Content-Type": "application/json"},
                data=b"{}" if route.method in ("POST", "PUT") else None,
            )
            assert status in expected, (route.method, route.path, label, status, body)
            text = str(body)
            assert a["legalName"] not in text and p["participantIdentifier"] not in text, (
                route.path,
                label,
            )
            checked += 1
    assert checked >= 5 * len(ORG_ROUTES)


async def test_a_resource_of_another_org_is_not_found(api, world):
    _, p, _ = world
    b_org = (await api.me(BOB))["memberships"][0]["orgId"]
    for route in ORG_ROUTES:
        if "{participantId}" not in route.path or route.method != "GET":
            continue
        status, body = await api.call(route.method, fill(route.path, b_org, p["id"]), as_=BOB)
        assert status == 404, (route.path, body)


async def test_each_route_declares_the_least_role_its_use_case_takes(api, world):
    """The route table's role is the one the use case checks: an orgmember is refused where
    the route says orgadmin (above), and let through where it says orgmember."""
    a, p, _ = world
    for route in ORG_ROUTES:
        if route.role is not Role.ORGMEMBER:
            continue
        status, body = await api.call(
            route.method,
            fill(route.path, a["id"], p["id"]),
            as_=MEMBER,
            headers={"Content-Type": "application/json"},
            data=b"{}" if route.method in ("POST", "PUT") else None,
        )
        refused = status == 403 and body.get("code") in ("AT-1019", "AT-1020")
        assert not refused, (route.method, route.path, status, body)


SUPERADMIN_ROUTES = [r for r in routes() if r.role is Role.SUPERADMIN]


async def test_a_superadmin_route_refuses_others_before_reading_their_input(api, world):
    """Below the role, a malformed body or query earns 403, not a 400 describing the input."""
    _, _, keys = world
    assert SUPERADMIN_ROUTES
    admin_key = keys["key of another org"]  # an orgadmin's key with the orgadmin role
    for route in SUPERADMIN_ROUTES:
        for who, key in ((ALICE, None), (MEMBER, None), (None, admin_key)):
            status, body = await api.call(
                route.method,
                route.path + "?filter=nope:eq:1&limit=0",
                as_=who,
                key=key,
                headers={"Content-Type": "application/json"},
                data=b'{"ids": "not a list"}' if route.method in ("POST", "PUT") else None,
            )
            assert (status, body["code"]) == (403, "AT-1019"), (route.path, who, body)


async def test_a_route_on_another_users_account_refuses_before_reading_the_input(api, world):
    """``/users/{uid}/…`` is the caller's own account only: another user, or an API key,
    earns 403 AT-1022 whatever the body, never a 400 about its fields."""
    _, _, keys = world
    member = await api.me(MEMBER)
    own = [r for r in routes() if "{uid}" in r.path]
    assert own
    for route in own:
        path = route.path.replace("{uid}", member["id"])
        for who, key in ((BOB, None), (None, keys["key of another org"])):
            status, body = await api.call(
                route.method,
                path,
                as_=who,
                key=key,
                headers={"Content-Type": "application/json"},
                data=b'{"orgId": 5, "name": 7, "email": "x@example.com"}',
            )
            assert (status, body["code"]) == (403, "AT-1022"), (route.path, who, body)


async def test_a_route_only_a_user_may_call_refuses_a_key_before_reading_the_input(api, world):
    """``POST /orgs``, ``POST /orgs/{orgId}/api_keys`` and the routes that grant a person
    access to an organisation (an API key never creates an organisation nor a key, nor makes,
    approves or promotes a member) answer a key 403 AT-1022 whatever the body: a malformed or
    empty one as a valid one, never a 400 about it."""
    a, p, keys = world
    user_only = [r for r in routes() if r.user_only]
    assert [(r.method, r.path) for r in user_only] == [
        ("POST", "/orgs"),
        ("POST", "/orgs/{orgId}/members"),
        ("PUT", "/orgs/{orgId}/members/approve"),
        ("PUT", "/orgs/{orgId}/members/{memberId}"),
        ("POST", "/orgs/{orgId}/api_keys"),
    ]
    valid = {
        "/orgs": {
            "legalIdentifier": "5560360793",
            "legalName": "Key Made AB",
            "countryCode": "SE",
            "legalIdentifierCode": "SE:ORGNR",
        },
        "/orgs/{orgId}/api_keys": {"name": "key made", "expires": future(3600), "role": "orgadmin"},
        "/orgs/{orgId}/members": {"email": "made@example.com", "role": "orgadmin"},
        "/orgs/{orgId}/members/approve": {"ids": [str(uuid.uuid4())]},
        "/orgs/{orgId}/members/{memberId}": {"role": "orgadmin"},
    }
    bodies = [
        (b'{"legalName": 7}', "application/json"),
        (b"{not json", "application/json"),
        (b"", "application/json"),
        (b"<org/>", "application/xml"),
        (None, None),
    ]
    own_key = keys["key of another org"]  # Bob's orgadmin key of his organisation
    bob_org = (await api.me(BOB))["memberships"][0]["orgId"]
    for route in user_only:
        # in the key's own organisation and in another one
        for path in {fill(route.path, org_id, p["id"]) for org_id in (bob_org, a["id"])}:
            for data, ctype in bodies:
                headers = {"Content-Type": ctype} if ctype else {}
                status, body = await api.call(
                    route.method, path, key=own_key, data=data, headers=headers
                )
                assert (status, body["code"]) == (403, "AT-1022"), (path, data, body)
            status, body = await api.call(route.method, path, key=own_key, json=valid[route.path])
            assert (status, body["code"]) == (403, "AT-1022"), body
    # and nothing was made
    status, orgs = await api.call("GET", "/orgs?limit=500", as_="root@example.com", superadmin=True)
    assert status == 200 and "Key Made AB" not in {o["legalName"] for o in orgs["items"]}
    for org_id, who in ((bob_org, BOB), (a["id"], ALICE)):
        status, made = await api.call("GET", f"/orgs/{org_id}/api_keys?limit=500", as_=who)
        assert status == 200 and "key made" not in {k["name"] for k in made["items"]}
        status, invited = await api.call("GET", f"/orgs/{org_id}/members/pending", as_=who)
        assert status == 200 and "made@example.com" not in str(invited), invited
