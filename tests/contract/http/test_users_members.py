"""Users and members over HTTP: join, approve, reject, roles, leave, and the last orgadmin."""

ALICE, BOB, CAROL, ROOT = (
    "alice@example.com",
    "bob@example.com",
    "carol@example.com",
    "root@example.com",
)


async def test_users_me_creates_the_user_from_the_token(api):
    me = await api.me(BOB)
    assert me["email"] == BOB and me["role"] == "user" and me["memberships"] == []
    assert me["type"] == "USER"
    again = await api.me(BOB)
    assert again["id"] == me["id"] and again["createdAt"] == me["createdAt"]


async def test_a_user_updates_only_their_own_record(api):
    me = await api.me(BOB)
    status, body = await api.call(
        "PUT",
        f"/users/{me['id']}",
        as_=BOB,
        json={"phone": "+46 8 123", "optedInToReceiveInfo": True},
    )
    assert status == 200, body
    assert body["phone"] == "+46 8 123" and body["optedInToReceiveInfo"] is True
    other = await api.me(CAROL)
    status, body = await api.call("PUT", f"/users/{other['id']}", as_=BOB, json={"phone": "1"})
    assert status == 403 and body["code"] == "AT-1022"
    assert (await api.me(CAROL))["phone"] == ""


async def test_a_users_country_code_is_checked_as_an_organisations(api):
    """Two capital letters A to Z, refused (400 AT-1001) at $.countryCode as an
    organisation's code is; "" is no country."""
    me = await api.me(BOB)
    path = f"/users/{me['id']}"
    for bad in ("se", "SWE", "S", "S1", "\u00c5\u00c4"):
        status, body = await api.call("PUT", path, as_=BOB, json={"countryCode": bad})
        assert status == 400 and body["code"] == "AT-1001", (bad, body)
        assert body["details"] == [
            {"field": "$.countryCode", "problem": "a two-letter country code in capitals, e.g. SE"}
        ], bad
    assert (await api.me(BOB))["countryCode"] == ""
    for good in ("NO", ""):
        status, body = await api.call("PUT", path, as_=BOB, json={"countryCode": good})
        assert status == 200 and body["countryCode"] == good, (good, body)


async def test_adding_an_unknown_user_is_not_found_and_told_only_to_an_orgadmin(api):
    """A user id that names no user (as one deleted) is 404 AT-1040 for the organisation's
    orgadmin; a caller who is no member learns nothing of it (403 AT-1020)."""
    org = await api.org(ALICE)
    await api.me(BOB)
    path = f"/orgs/{org['id']}/members"
    for unknown in ("nobody", "0b9d3b4e-5f7a-4c1e-9a51-3c2f0a6d7e81"):
        status, body = await api.call("POST", path, as_=ALICE, json={"userId": unknown})
        assert status == 404 and body["code"] == "AT-1040" and unknown in body["error"], body
        status, body = await api.call("POST", path, as_=BOB, json={"userId": unknown})
        assert status == 403 and body["code"] == "AT-1020", body


async def test_join_approve_and_membership_shows(api):
    org = await api.org(ALICE)
    bob = await api.me(BOB)
    status, pending = await api.call(
        "POST", f"/users/{bob['id']}/join_org", as_=BOB, json={"orgId": org["id"]}
    )
    assert status == 201, pending
    assert pending["type"] == "MEMBER" and pending["status"] == "PENDING"
    status, listed = await api.call("GET", f"/orgs/{org['id']}/members/pending", as_=ALICE)
    assert [m["userRef"] for m in listed["items"]] == [bob["id"]]
    # a pending member has no access yet
    status, _ = await api.call("GET", f"/orgs/{org['id']}/members", as_=BOB)
    assert status == 403
    status, body = await api.call(
        "PUT", f"/orgs/{org['id']}/members/approve", as_=ALICE, json={"ids": [pending["id"]]}
    )
    assert status == 200 and body == {"ids": [pending["id"]]}
    me = await api.me(BOB)
    assert [(m["orgId"], m["role"]) for m in me["memberships"]] == [(org["id"], "orgmember")]
    # an orgmember is not an orgadmin
    status, body = await api.call("GET", f"/orgs/{org['id']}/members", as_=BOB)
    assert status == 403 and body["code"] == "AT-1019"
    status, listed = await api.call("GET", f"/orgs/{org['id']}/members", as_=ALICE)
    assert sorted(m["role"] for m in listed["items"]) == ["orgadmin", "orgmember"]
    # the founding member shows their address, as a member who joined does
    assert sorted((m["role"], m["email"]) for m in listed["items"]) == [
        ("orgadmin", ALICE),
        ("orgmember", BOB),
    ]


async def test_reject_and_ask_again(api):
    org = await api.org(ALICE)
    bob = await api.me(BOB)
    _, pending = await api.call(
        "POST", f"/users/{bob['id']}/join_org", as_=BOB, json={"orgId": org["id"]}
    )
    status, _ = await api.call(
        "PUT", f"/orgs/{org['id']}/members/reject", as_=ALICE, json={"ids": [pending["id"]]}
    )
    assert status == 200
    status, got = await api.call("GET", f"/orgs/{org['id']}/members/{pending['id']}", as_=ALICE)
    assert got["status"] == "REJECTED"
    assert (await api.me(BOB))["memberships"] == []
    # approving a rejected request is a conflict; asking again makes it pending again
    status, body = await api.call(
        "PUT", f"/orgs/{org['id']}/members/approve", as_=ALICE, json={"ids": [pending["id"]]}
    )
    assert status == 409 and body["code"] == "AT-1096"
    status, again = await api.call(
        "POST", f"/users/{bob['id']}/join_org", as_=BOB, json={"orgId": org["id"]}
    )
    assert status == 201 and again["status"] == "PENDING"
    status, body = await api.call(
        "POST", f"/users/{bob['id']}/join_org", as_=BOB, json={"orgId": org["id"]}
    )
    assert status == 409 and body["code"] == "AT-1092"


async def test_join_needs_an_existing_org_and_ones_own_uid(api):
    bob, carol = await api.me(BOB), await api.me(CAROL)
    org = await api.org(ALICE)
    status, body = await api.call(
        "POST",
        f"/users/{bob['id']}/join_org",
        as_=BOB,
        json={"orgId": "6f1d1d3e-5ef7-4b37-9d0d-6a3b1f2c9a10"},
    )
    assert status == 404 and body["code"] == "AT-1040"
    status, body = await api.call(
        "POST", f"/users/{carol['id']}/join_org", as_=BOB, json={"orgId": org["id"]}
    )
    assert status == 403


async def test_create_member_update_role_and_the_last_admin_rule(api):
    org = await api.org(ALICE)
    bob = await api.me(BOB)
    status, member = await api.call(
        "POST",
        f"/orgs/{org['id']}/members",
        as_=ALICE,
        json={"userId": bob["id"], "role": "orgmember"},
    )
    assert status == 201 and member["status"] == "ACTIVE" and member["role"] == "orgmember"
    me_alice = await api.me(ALICE)
    alice_member = me_alice["memberships"][0]["memberRef"]
    # the only orgadmin can neither step down nor leave
    status, body = await api.call(
        "PUT", f"/orgs/{org['id']}/members/{alice_member}", as_=ALICE, json={"role": "orgmember"}
    )
    assert status == 409 and body["code"] == "AT-1093"
    status, body = await api.call(
        "POST", f"/users/{me_alice['id']}/leave_org", as_=ALICE, json={"orgId": org["id"]}
    )
    assert status == 409 and body["code"] == "AT-1093"
    status, body = await api.call("DELETE", f"/orgs/{org['id']}/members/{alice_member}", as_=ALICE)
    assert status == 409
    # once Bob is orgadmin too, Alice may leave
    status, body = await api.call(
        "PUT", f"/orgs/{org['id']}/members/{member['id']}", as_=ALICE, json={"role": "orgadmin"}
    )
    assert status == 200 and body["role"] == "orgadmin"
    status, body = await api.call(
        "POST", f"/users/{me_alice['id']}/leave_org", as_=ALICE, json={"orgId": org["id"]}
    )
    assert status == 200 and body == {"ids": [alice_member]}
    assert (await api.me(ALICE))["memberships"] == []
    status, _ = await api.call("GET", f"/orgs/{org['id']}", as_=ALICE)
    assert status == 403
    # leaving again: what is missing is her membership of the organisation
    status, body = await api.call(
        "POST", f"/users/{me_alice['id']}/leave_org", as_=ALICE, json={"orgId": org["id"]}
    )
    assert status == 404 and body["code"] == "AT-1040", body
    assert body["error"] == f"User {me_alice['id']} is no member of organisation {org['id']}."


async def test_a_role_refused_names_only_the_roles_a_member_takes(api):
    """A member's role is orgmember or orgadmin (the OpenAPI document lists those two): a role
    refused, unknown or not an organisation's, is answered with exactly those."""
    org = await api.org(ALICE)
    bob = await api.me(BOB)
    path = f"/orgs/{org['id']}/members"
    status, member = await api.call("POST", path, as_=ALICE, json={"userId": bob["id"]})
    assert status == 201
    for method, where, body in (
        ("PUT", f"{path}/{member['id']}", {"role": "king"}),
        ("PUT", f"{path}/{member['id']}", {"role": "superadmin"}),
        ("POST", path, {"userId": bob["id"], "role": "king"}),
        ("POST", path, {"email": CAROL, "role": "user"}),
    ):
        status, answer = await api.call(method, where, as_=ALICE, json=body)
        assert status == 400 and answer["code"] == "AT-1001", answer
        assert answer["details"] == [
            {
                "field": "$.role",
                "problem": f"expected one of orgmember, orgadmin, got {body['role']!r}",
            }
        ]


async def test_delete_member_and_unknown_member(api):
    org = await api.org(ALICE)
    bob = await api.me(BOB)
    _, member = await api.call(
        "POST", f"/orgs/{org['id']}/members", as_=ALICE, json={"userId": bob["id"]}
    )
    status, body = await api.call("DELETE", f"/orgs/{org['id']}/members/{member['id']}", as_=ALICE)
    assert status == 200 and body == {"ids": [member["id"]]}
    status, body = await api.call("GET", f"/orgs/{org['id']}/members/{member['id']}", as_=ALICE)
    assert status == 404 and body["code"] == "AT-1040"
    status, body = await api.call("GET", f"/orgs/{org['id']}/members/not-a-uuid", as_=ALICE)
    assert status == 400


async def test_a_member_id_of_another_org_is_not_found(api):
    a = await api.org(ALICE)
    b = await api.org(BOB, legal_id="5560360793")
    bob_member = (await api.me(BOB))["memberships"][0]["memberRef"]
    status, body = await api.call("GET", f"/orgs/{a['id']}/members/{bob_member}", as_=ALICE)
    assert status == 404
    assert b["id"] not in str(body)


async def test_superadmin_deletes_users(api):
    bob = await api.me(BOB)
    status, body = await api.call(
        "POST", "/users/batch-delete", as_=ALICE, json={"ids": [bob["id"]]}
    )
    assert status == 403
    status, body = await api.call(
        "POST",
        "/users/batch-delete",
        as_=ROOT,
        superadmin=True,
        json={"ids": [bob["id"], bob["id"]]},
    )
    assert status == 200 and body == {"ids": [bob["id"]]}
    status, body = await api.call("GET", "/users/me", as_=BOB)
    assert status == 401, body


async def test_a_batch_of_users_with_a_bad_or_unknown_id_deletes_none(api):
    """As every batch delete: an id that is no UUID is 400 AT-1001 at its place in the list,
    an unknown one 404, and neither deletes the others."""
    bob = await api.me(BOB)
    unknown = "0b9d3b4e-5f7a-4c1e-9a51-3c2f0a6d7e81"
    for ids, code in (([bob["id"], "nobody"], 400), ([bob["id"], unknown], 404)):
        status, body = await api.call(
            "POST", "/users/batch-delete", as_=ROOT, superadmin=True, json={"ids": ids}
        )
        assert status == code, body
        if code == 400:
            assert body["code"] == "AT-1001"
            assert [d["field"] for d in body["details"]] == ["$.ids[1]"]
        else:
            assert body["code"] == "AT-1040" and unknown in body["error"]
        assert (await api.me(BOB))["id"] == bob["id"]


async def test_deleting_the_last_orgadmin_of_an_organisation_is_refused(api):
    """API.md: an organisation keeps at least one orgadmin. A batch that would delete its last
    one (or its last ones together) is refused whole, 409 AT-1093 naming the organisation."""
    org = await api.org(ALICE)
    alice, bob = (await api.me(ALICE))["id"], (await api.me(BOB))["id"]

    async def delete(*ids):
        return await api.call(
            "POST", "/users/batch-delete", as_=ROOT, superadmin=True, json={"ids": list(ids)}
        )

    status, body = await delete(bob, alice)
    assert status == 409 and body["code"] == "AT-1093", body
    assert org["id"] in body["error"]
    assert (await api.me(BOB))["id"] == bob  # the whole batch was refused
    status, body = await api.call(
        "POST", f"/orgs/{org['id']}/members", as_=ALICE, json={"userId": bob, "role": "orgadmin"}
    )
    assert status == 201, body
    status, body = await delete(alice, bob)
    assert status == 409 and body["code"] == "AT-1093", body
    status, body = await delete(alice)
    assert status == 200 and body == {"ids": [alice]}
    status, body = await api.call("GET", f"/orgs/{org['id']}/members", as_=BOB)
    assert [(m["userRef"], m["role"]) for m in body["items"]] == [(bob, "orgadmin")]
