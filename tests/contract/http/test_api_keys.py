"""API keys over HTTP: shown once, hashed, enforced (active, expiry, role, own org only)."""

from datetime import UTC, datetime, timedelta

from multidict import CIMultiDict

ALICE, BOB = "alice@example.com", "bob@example.com"


def future(days: int = 30) -> str:
    return (datetime.now(UTC) + timedelta(days=days)).isoformat().replace("+00:00", "Z")


async def make_key(api, org_id, **changes):
    body = {
        "name": "ci",
        "description": "pipeline",
        "expires": future(),
        "isActive": True,
        "role": "orgadmin",
    }
    body.update(changes)
    return await api.call("POST", f"/orgs/{org_id}/api_keys", as_=ALICE, json=body)


async def test_the_key_is_returned_once_and_works_for_its_org(api):
    org = await api.org(ALICE)
    status, created = await make_key(api, org["id"])
    assert status == 201, created
    key = created["key"]
    assert key.startswith("fck_") and created["type"] == "API_KEY" and "keyHash" not in created
    status, got = await api.call("GET", f"/orgs/{org['id']}", key=key)
    assert status == 200 and got["id"] == org["id"]
    status, listed = await api.call("GET", f"/orgs/{org['id']}/api_keys", as_=ALICE)
    assert [k["id"] for k in listed["items"]] == [created["id"]]
    assert "key" not in listed["items"][0] and key not in str(listed)


async def test_a_key_is_refused_in_another_org_and_where_a_user_is_needed(api):
    a = await api.org(ALICE)
    b = await api.org(BOB, legal_id="5560360793")
    _, created = await make_key(api, a["id"])
    status, body = await api.call("GET", f"/orgs/{b['id']}", key=created["key"])
    assert status == 403 and body["code"] == "AT-1020"
    status, body = await api.call("GET", "/users/me", key=created["key"])
    assert status == 403 and body["code"] == "AT-1022"


async def test_inactive_expired_revoked_and_unknown_keys_are_401(api):
    org = await api.org(ALICE)
    _, inactive = await make_key(api, org["id"], isActive=False)
    _, live = await make_key(api, org["id"])
    for key in (inactive["key"], "fck_not-a-key", "garbage"):
        status, body = await api.call("GET", f"/orgs/{org['id']}", key=key)
        assert status == 401 and body["code"] == "AT-1018"
    status, body = await api.call("DELETE", f"/orgs/{org['id']}/api_keys/{live['id']}", as_=ALICE)
    assert status == 200 and body == {"ids": [live["id"]]}
    status, body = await api.call("GET", f"/orgs/{org['id']}", key=live["key"])
    assert status == 401


async def test_expiry_must_be_in_the_future_and_role_an_org_role(api):
    org = await api.org(ALICE)
    past = (datetime.now(UTC) - timedelta(days=1)).isoformat()
    status, body = await make_key(api, org["id"], expires=past)
    assert status == 422 and body["code"] == "AT-1123"
    status, body = await make_key(api, org["id"], role="superadmin")
    assert status == 400
    status, body = await make_key(api, org["id"], role="boss")
    assert status == 400 and body["details"][0]["field"] == "$.role"


async def test_an_expiry_without_a_time_zone_is_refused(api):
    """API.md: timestamps are UTC, ending in Z; a time without a zone names no instant."""
    org = await api.org(ALICE)
    naive = future().removesuffix("Z")
    status, body = await make_key(api, org["id"], expires=naive)
    assert status == 400 and body["code"] == "AT-1001", body
    assert body["details"] == [
        {
            "field": "$.expires",
            "problem": f"{naive!r} has no time zone; write the time in UTC ending in Z"
            " (2027-12-31T00:00:00Z) or with its offset (+01:00)",
        }
    ]
    for zoned in (naive + "Z", naive + "+01:00"):
        status, body = await make_key(api, org["id"], expires=zoned)
        assert status == 201, body


async def test_an_orgmember_key_cannot_do_orgadmin_work(api):
    org = await api.org(ALICE)
    _, member_key = await make_key(api, org["id"], role="orgmember")
    status, body = await api.call("GET", f"/orgs/{org['id']}", key=member_key["key"])
    assert status == 403 and body["code"] == "AT-1019"


async def test_a_key_never_creates_a_key_a_users_token_does(api):
    """SPEC: an orgadmin (a person) creates API keys. A key, even an orgadmin key, is refused
    403 AT-1022 in API.md's error shape and nothing is made: else a short-lived key could mint
    a long-lived one that its revocation leaves working."""
    org = await api.org(ALICE)
    o = f"/orgs/{org['id']}"
    _, short = await make_key(api, org["id"], role="orgadmin", expires=future(1))
    _, member_key = await make_key(api, org["id"], role="orgmember")
    for key in (short["key"], member_key["key"]):
        for role in ("orgadmin", "orgmember"):
            status, body = await api.call(
                "POST",
                f"{o}/api_keys",
                key=key,
                json={"name": "minted", "expires": future(3650), "role": role},
            )
            assert status == 403, body
            assert body["code"] == "AT-1022", body
            assert {"code", "error"} <= set(body) <= {"code", "error", "details"}, body
    status, listed = await api.call("GET", f"{o}/api_keys", as_=ALICE)
    assert status == 200
    assert sorted(k["name"] for k in listed["items"]) == ["ci", "ci"]  # no "minted"
    # the same request with a user's token makes the key
    status, made = await api.call(
        "POST",
        f"{o}/api_keys",
        as_=ALICE,
        json={"name": "minted", "expires": future(), "role": "orgadmin"},
    )
    assert status == 201 and made["key"].startswith("fck_"), made


CAROL, ROOT = "carol@example.com", "root@example.com"


async def test_a_members_keys_end_for_good_when_they_go(api):
    """Carol's keys of an organisation end when she leaves it, is removed from it or is
    deleted: they stay refused once she is a member again, and the list shows them inactive."""
    org = await api.org(ALICE)
    o = f"/orgs/{org['id']}"
    carol = (await api.me(CAROL))["id"]

    async def add_carol() -> str:
        admin = {"userId": carol, "role": "orgadmin"}
        status, member = await api.call("POST", f"{o}/members", as_=ALICE, json=admin)
        assert status == 201, member
        return str(member["id"])

    async def carols_key() -> dict:
        body = {"name": "carol's", "expires": future(), "role": "orgadmin"}
        status, created = await api.call("POST", f"{o}/api_keys", as_=CAROL, json=body)
        assert status == 201, created
        assert (await api.call("GET", o, key=created["key"]))[0] == 200
        return created

    async def refused(created: dict) -> None:
        status, body = await api.call("GET", o, key=created["key"])
        assert status == 401 and body["code"] == "AT-1018", body

    member = await add_carol()
    left = await carols_key()
    path = f"/users/{carol}/leave_org"
    assert (await api.call("POST", path, as_=CAROL, json={"orgId": org["id"]}))[0] == 200
    await refused(left)
    member = await add_carol()
    await refused(left)  # back again, her old key stays dead

    removed = await carols_key()
    assert (await api.call("DELETE", f"{o}/members/{member}", as_=ALICE))[0] == 200
    await refused(removed)
    await add_carol()
    await refused(removed)

    deleted = await carols_key()
    status, body = await api.call(
        "POST", "/users/batch-delete", as_=ROOT, superadmin=True, json={"ids": [carol]}
    )
    assert status == 200, body
    await refused(deleted)
    _, listed = await api.call("GET", f"{o}/api_keys", as_=ALICE)
    assert {k["id"]: k["isActive"] for k in listed["items"]} == {
        left["id"]: False,
        removed["id"]: False,
        deleted["id"]: False,
    }


async def test_a_key_never_grants_a_person_access_a_users_token_does(api):
    """SECURITY.md: a key cannot mint a credential that outlives it. Making a member, inviting
    an address, approving a pending member and changing a member's role answer any key 403
    AT-1022 and change nothing, so no one a key made an orgadmin keeps that after the key is
    revoked; the key may still list, reject and remove members. The same requests with a
    person's token succeed."""
    org = await api.org(ALICE)
    o = f"/orgs/{org['id']}"
    carol, dave = (await api.me(CAROL))["id"], (await api.me("dave@example.com"))["id"]
    status, member = await api.call(
        "POST", f"{o}/members", as_=ALICE, json={"userId": carol, "role": "orgmember"}
    )
    assert status == 201, member
    status, pending = await api.call(
        "POST", f"/users/{dave}/join_org", as_="dave@example.com", json={"orgId": org["id"]}
    )
    assert status == 201, pending
    _, admin_key = await make_key(api, org["id"], role="orgadmin", expires=future(1))

    async def members() -> dict[str, tuple[str, str]]:
        out = {}
        for path in (f"{o}/members?limit=500", f"{o}/members/pending?limit=500"):
            status, listed = await api.call("GET", path, as_=ALICE)
            assert status == 200, listed
            out |= {m["id"]: (m["role"], m["status"]) for m in listed["items"]}
        return out

    before = await members()
    grants = [
        ("POST", f"{o}/members", {"userId": dave, "role": "orgadmin"}),
        ("POST", f"{o}/members", {"email": "eve@example.com", "role": "orgadmin"}),
        ("PUT", f"{o}/members/approve", {"ids": [pending["id"]]}),
        ("PUT", f"{o}/members/{member['id']}", {"role": "orgadmin"}),
    ]
    for method, path, body in grants:
        status, answer = await api.call(method, path, key=admin_key["key"], json=body)
        assert (status, answer["code"]) == (403, "AT-1022"), (path, body, answer)
    assert await members() == before
    # the key still lists, rejects and removes members
    status, listed = await api.call("GET", f"{o}/members", key=admin_key["key"])
    assert status == 200 and len(listed["items"]) == 2, listed
    status, listed = await api.call("GET", f"{o}/members/pending", key=admin_key["key"])
    assert status == 200 and [m["id"] for m in listed["items"]] == [pending["id"]], listed
    status, answer = await api.call(
        "PUT", f"{o}/members/reject", key=admin_key["key"], json={"ids": [pending["id"]]}
    )
    assert status == 200 and answer == {"ids": [pending["id"]]}, answer
    status, answer = await api.call("DELETE", f"{o}/members/{member['id']}", key=admin_key["key"])
    assert status == 200 and answer == {"ids": [member["id"]]}, answer
    # a person's token grants what the key could not
    status, again = await api.call(
        "POST", f"/users/{dave}/join_org", as_="dave@example.com", json={"orgId": org["id"]}
    )
    assert status == 201, again
    for method, path, body in (
        ("POST", f"{o}/members", {"userId": carol, "role": "orgmember"}),
        ("POST", f"{o}/members", {"email": "eve@example.com", "role": "orgadmin"}),
        ("PUT", f"{o}/members/approve", {"ids": [again["id"]]}),
    ):
        status, answer = await api.call(method, path, as_=ALICE, json=body)
        assert status in (200, 201), (path, answer)
        if path.endswith("/members") and "userId" in body:
            carols = answer["id"]
    status, answer = await api.call(
        "PUT", f"{o}/members/{carols}", as_=ALICE, json={"role": "orgadmin"}
    )
    assert status == 200 and answer["role"] == "orgadmin", answer


async def test_a_request_with_more_than_one_credential_is_401_whichever_would_pass(api):
    """Of two Authorization headers the first counted, and a token beside a key won over it:
    a proxy in front that checked the other one would let another caller through."""
    org = await api.org(ALICE)
    _, created = await make_key(api, org["id"])
    key, token, other = created["key"], api.token(ALICE), api.token(BOB)
    await api.me(BOB)
    for pairs in (
        [("Authorization", f"Bearer {token}"), ("Authorization", f"Bearer {other}")],
        [("Authorization", f"Bearer {token}"), ("Authorization", "Bearer not-a-token")],
        [("X-Api-Key", key), ("X-Api-Key", key)],
        [("Authorization", f"Bearer {token}"), ("X-Api-Key", key)],
        [("Authorization", f"Bearer {other}"), ("X-Api-Key", "fck_not-a-key")],
    ):
        resp = await api.client.get(f"/orgs/{org['id']}", headers=CIMultiDict(pairs))
        body = await resp.json()
        assert (resp.status, body["code"]) == (401, "AT-1018"), (pairs, body)
        assert "more than one credential" in body["error"], body
        # and nothing is changed by such a request
        resp = await api.client.put(
            f"/orgs/{org['id']}", headers=CIMultiDict(pairs), json={"shortName": "changed"}
        )
        assert resp.status == 401
    status, got = await api.call("GET", f"/orgs/{org['id']}", key=key)
    assert status == 200 and got["shortName"] == org["shortName"], got
