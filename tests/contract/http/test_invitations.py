"""Members by email: an orgadmin invites an address; the first user who signs in with it,
verified, becomes a member. The answer tells nothing about who has an account."""

from __future__ import annotations

import asyncio
from typing import Any

from fourcorner.application import invitations
from fourcorner.application.collections import MEMBERS, USERS
from fourcorner.application.identity import Identity
from fourcorner.entrypoints.container import resolve

ALICE, BOB, CAROL, DAVE = (
    "alice@example.com",
    "bob@example.com",
    "carol@example.com",
    "dave@example.com",
)
_VARY = ("id", "email", "createdAt", "lastModifiedAt")


async def _invite(api: Any, org: dict[str, Any], email: str, role: str = "orgmember") -> Any:
    return await api.call(
        "POST", f"/orgs/{org['id']}/members", as_=ALICE, json={"email": email, "role": role}
    )


async def _members(api: Any, org: dict[str, Any], which: str = "") -> list[dict[str, Any]]:
    status, page = await api.call("GET", f"/orgs/{org['id']}/members{which}", as_=ALICE)
    assert status == 200, page
    return list(page["items"])


async def test_an_invitation_answers_alike_with_or_without_an_account(api):
    org = await api.org(ALICE)
    await api.me(CAROL)  # Carol has an account, Dave has none
    answers = [await _invite(api, org, email) for email in (CAROL, DAVE)]
    assert [status for status, _ in answers] == [201, 201], answers
    carol, dave = (body for _, body in answers)
    assert {k: v for k, v in carol.items() if k not in _VARY} == {
        k: v for k, v in dave.items() if k not in _VARY
    }
    assert carol["status"] == "INVITED" and carol["userRef"] == "" and carol["email"] == CAROL
    assert carol["role"] == "orgmember" and carol["memberSince"] is None
    # pending members show their address; the members list has none of them
    pending = await _members(api, org, "/pending")
    assert sorted(m["email"] for m in pending) == [CAROL, DAVE]
    assert [m["status"] for m in await _members(api, org)] == ["ACTIVE"]


async def test_signing_in_with_the_address_makes_the_member(api):
    org = await api.org(ALICE)
    await api.me(CAROL)
    status, carol_inv = await _invite(api, org, CAROL.upper(), role="orgadmin")
    assert status == 201 and carol_inv["email"] == CAROL
    status, dave_inv = await _invite(api, org, DAVE)
    assert status == 201
    me = await api.me(CAROL)  # an existing account, on its next request
    assert [(m["orgId"], m["role"]) for m in me["memberships"]] == [(org["id"], "orgadmin")]
    me = await api.me(DAVE)  # a new account, at its first
    assert [(m["orgId"], m["role"]) for m in me["memberships"]] == [(org["id"], "orgmember")]
    active = {m["userRef"]: m for m in await _members(api, org)}
    assert active[me["id"]]["id"] == dave_inv["id"]
    assert active[me["id"]]["status"] == "ACTIVE" and active[me["id"]]["memberSince"]
    assert active[me["id"]]["firstName"] == "Dave"
    assert await _members(api, org, "/pending") == []
    # the address is free again: a new invitation is a new record
    status, again = await _invite(api, org, DAVE)
    assert status == 201 and again["id"] != dave_inv["id"]
    await api.me(DAVE)  # already a member: the invitation goes, the membership stays
    assert await _members(api, org, "/pending") == []
    assert [m["role"] for m in await _members(api, org) if m["userRef"] == me["id"]] == [
        "orgmember"
    ]


async def test_a_pending_request_is_granted_by_an_invitation(api):
    org = await api.org(ALICE)
    bob = await api.me(BOB)
    status, asked = await api.call(
        "POST", f"/users/{bob['id']}/join_org", as_=BOB, json={"orgId": org["id"]}
    )
    assert status == 201 and asked["email"] == BOB
    status, _ = await _invite(api, org, BOB, role="orgadmin")
    assert status == 201
    assert sorted(m["status"] for m in await _members(api, org, "/pending")) == [
        "INVITED",
        "PENDING",
    ]
    me = await api.me(BOB)
    assert [(m["orgId"], m["role"]) for m in me["memberships"]] == [(org["id"], "orgadmin")]
    assert await _members(api, org, "/pending") == []
    [granted] = [m for m in await _members(api, org) if m["userRef"] == bob["id"]]
    assert granted["id"] == asked["id"]


async def test_invitations_refused_and_withdrawn(api):
    org = await api.org(ALICE)
    path = f"/orgs/{org['id']}/members"
    for body, field in (
        ({"email": "nope"}, "$.email"),
        ({"email": "a b@example.com"}, "$.email"),
        ({"email": "a@example"}, "$.email"),
        ({"email": "x" * 250 + "@example.com"}, "$.email"),
        ({}, "$.userId"),
        ({"email": CAROL, "userId": "someone"}, "$.userId"),
        ({"email": CAROL, "role": "superadmin"}, "$.role"),
    ):
        status, answer = await api.call("POST", path, as_=ALICE, json=body)
        assert status == 400, (body, answer)
        assert answer["details"][0]["field"] == field, answer
    status, made = await _invite(api, org, CAROL)
    assert status == 201
    status, answer = await _invite(api, org, " Carol@Example.com ")
    assert status == 409 and answer["code"] == "AT-1092"
    # an invitation is not a request to approve; the orgadmin withdraws it
    for verb in ("approve", "reject"):
        status, answer = await api.call(
            "PUT", f"{path}/{verb}", as_=ALICE, json={"ids": [made["id"]]}
        )
        assert status == 409 and answer["code"] == "AT-1096"
    status, _ = await api.call("DELETE", f"{path}/{made['id']}", as_=ALICE)
    assert status == 200
    assert (await api.me(CAROL))["memberships"] == []
    # only an orgadmin invites
    status, _ = await api.call("POST", path, as_=CAROL, json={"email": DAVE})
    assert status == 403


async def test_an_address_the_issuer_does_not_vouch_for_redeems_nothing(api):
    org = await api.org(ALICE)
    await _invite(api, org, CAROL)
    me = await api.me(BOB)
    ctx = await resolve(api.container.context)
    async with ctx.uow() as uow:
        bob = await uow.repository(USERS).get(me["id"])
    await invitations.redeem(ctx, bob, Identity("bob", CAROL, email_verified=False))
    assert [m["status"] for m in await _members(api, org, "/pending")] == ["INVITED"]
    await invitations.redeem(ctx, bob, Identity("bob", CAROL, email_verified=True))
    assert await _members(api, org, "/pending") == []


async def test_concurrent_requests_make_one_membership(api):
    """20 rounds: an invited person's next four requests at once all redeem the invitation
    (their account exists already: two first sign-ins at once are another matter, that of
    creating the user)."""
    org = await api.org(ALICE)
    ctx = await resolve(api.container.context)
    for round_ in range(20):
        email = f"person{round_}@example.com"
        await api.me(email)
        status, _ = await _invite(api, org, email)
        assert status == 201
        answers = await asyncio.gather(*(api.call("GET", "/users/me", as_=email) for _ in range(4)))
        assert [s for s, _ in answers] == [200] * 4, answers
        async with ctx.uow() as uow:
            user = await uow.repository(USERS).first(email=email)
            mine = await uow.repository(MEMBERS).all(userRef=user.id)
            left = await uow.repository(MEMBERS).all(invitedEmail=email)
        assert [(m.org_id, m.status.value) for m in mine] == [(mine[0].org_id, "ACTIVE")]
        assert left == []


async def test_redeeming_races_withdrawing_and_inviting_again(api):
    """20 rounds: two requests of the invited person, the orgadmin's withdrawal of the
    invitation and a new invitation, all at once: every request answers without error, and
    the person ends with at most one of an active membership and an open invitation."""
    org = await api.org(ALICE)
    ctx = await resolve(api.container.context)
    path = f"/orgs/{org['id']}/members"
    for round_ in range(20):
        email = f"racer{round_}@example.com"
        await api.me(email)
        status, made = await _invite(api, org, email)
        assert status == 201
        me_a, me_b, withdrawn, again = await asyncio.gather(
            api.call("GET", "/users/me", as_=email),
            api.call("GET", "/users/me", as_=email),
            api.call("DELETE", f"{path}/{made['id']}", as_=ALICE),
            _invite(api, org, email),
        )
        assert me_a[0] == me_b[0] == 200, (me_a, me_b)
        assert withdrawn[0] == 200, withdrawn
        assert again[0] in (201, 409), again
        async with ctx.uow() as uow:
            user = await uow.repository(USERS).first(email=email)
            mine = await uow.repository(MEMBERS).all(userRef=user.id)
            open_ = await uow.repository(MEMBERS).all(invitedEmail=email)
        assert len(mine) + len(open_) <= 1, (mine, open_)
        assert all(m.status.value == "ACTIVE" for m in mine)
