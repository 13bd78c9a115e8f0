"""A user deleted while a membership of theirs is being made, many rounds per backend.

Each round sends its requests at once (``asyncio.gather``), as ``test_membership_races`` does,
each of them first in some rounds: a superadmin deletes the user while an orgadmin adds them by
id, they ask to join another organisation, redeem an invitation to a third (at sign-in) or
found an organisation of their own. Whatever the interleaving, no membership is left referring to a user that is gone: either
the user is gone with every membership of theirs, or the deletion was refused and the user
stays with theirs. A create that comes after the deletion is refused cleanly, never a 500.

The same cases are then played in one order that a race may take: the user signs in, is deleted,
and only then does the request reach its unit of work.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Coroutine
from typing import Any

import pytest

from fourcorner.application import invitations, members, organisations, users, webhooks
from fourcorner.application.access import Principal
from fourcorner.application.identity import Identity
from fourcorner.application.repositories import Members, Users
from fourcorner.domain.errors import NotFound
from fourcorner.domain.member import Member
from fourcorner.domain.user import User
from fourcorner.entrypoints.container import resolve

from .conftest import BACKENDS
from .test_membership_races import as_root, error_shaped, org_number

ALICE, BOB, CAROL = "alice@example.com", "bob@example.com", "carol@example.com"
ROUNDS = 20


@pytest.fixture(params=BACKENDS)
async def api(request: Any, start_api: Any) -> Any:
    # a deleted user's token fails to sign in, in round after round: no limit on that here
    return await start_api(request.param, auth_failure_limit=0)


async def stored(api: Any, user_id: str) -> tuple[User | None, list[Member]]:
    """The user's record, if any, and every member record that refers to them, as stored."""
    ctx = await resolve(api.container.context)
    async with ctx.uow() as uow:
        return await Users(uow).get(user_id), await Members(uow).of_user(user_id)


async def delete(api: Any, user_id: str) -> tuple[int, Any]:
    return await as_root(api, "POST", "/users/batch-delete", json={"ids": [user_id]})


async def at_once(
    round_: int, **requests: Coroutine[Any, Any, tuple[int, Any]]
) -> dict[str, tuple[int, Any]]:
    """The answers to ``requests``, sent at once in an order turned by one place each round,
    so that each is sent first in some rounds; by name, in the order given."""
    names = list(requests)
    turn = round_ % len(names)
    order = names[turn:] + names[:turn]
    answers = dict(zip(order, await asyncio.gather(*(requests[n] for n in order)), strict=True))
    return {name: answers[name] for name in names}


def refused_as_gone(answer: tuple[int, Any]) -> bool:
    """A refusal for a user who is gone: their token no longer signs in (401), or the user is
    not found (404, as an unknown user)."""
    status, body = answer
    codes = {401: "AT-1018", 404: "AT-1040"}
    return status in codes and error_shaped(body) and body["code"] == codes[status]


async def test_a_user_deleted_while_made_a_member_is_left_in_no_organisation(api: Any) -> None:
    """An orgadmin adds the user by id, the user asks to join and signs in with an open
    invitation, while a superadmin deletes them: the deletion always succeeds (they are no
    orgadmin), and afterwards no member record refers to them."""
    orgs = {}
    for n, who in enumerate((ALICE, BOB, CAROL)):
        orgs[who] = (await api.org(who, legal_id=org_number(2000 + n)))["id"]
    for round_ in range(ROUNDS):
        email = f"leaver{round_}@example.com"
        user_id = (await api.me(email))["id"]
        status, body = await api.call(
            "POST", f"/orgs/{orgs[CAROL]}/members", as_=CAROL, json={"email": email}
        )
        assert status == 201, body
        outcomes = await at_once(
            round_,
            deleted=delete(api, user_id),
            added=api.call(
                "POST", f"/orgs/{orgs[ALICE]}/members", as_=ALICE, json={"userId": user_id}
            ),
            joined=api.call(
                "POST", f"/users/{user_id}/join_org", as_=email, json={"orgId": orgs[BOB]}
            ),
            signed_in=api.call("GET", "/users/me", as_=email),
        )
        deleted, added, joined, signed_in = outcomes.values()
        assert deleted == (200, {"ids": [user_id]}), (round_, outcomes)
        assert added[0] == 201 or refused_as_gone(added), (round_, outcomes)
        assert joined[0] == 201 or refused_as_gone(joined), (round_, outcomes)
        assert signed_in[0] == 200 or refused_as_gone(signed_in), (round_, outcomes)
        user, members = await stored(api, user_id)
        assert user is None, (round_, outcomes)
        assert members == [], (round_, outcomes, members)


async def test_a_user_deleted_while_founding_an_organisation_is_left_in_none(api: Any) -> None:
    """The user founds an organisation (becoming its orgadmin) while a superadmin deletes
    them. Founded first, the deletion is refused (409 AT-1093: the new organisation would have
    no orgadmin) and the user stays its orgadmin; deleted first, the founding is refused and
    no member record refers to the user."""
    for round_ in range(ROUNDS):
        email = f"founder{round_}@example.com"
        user_id = (await api.me(email))["id"]
        body = {
            "legalIdentifier": org_number(3000 + round_),
            "legalName": "ACME AB",
            "countryCode": "SE",
            "legalIdentifierCode": "SE:ORGNR",
        }
        outcomes = await at_once(
            round_,
            deleted=delete(api, user_id),
            founded=api.call("POST", "/orgs", as_=email, json=body),
        )
        deleted, founded = outcomes.values()
        user, members = await stored(api, user_id)
        if deleted[0] == 200:
            assert refused_as_gone(founded), (round_, outcomes)
            assert user is None and members == [], (round_, outcomes, members)
        else:
            assert deleted[0] == 409 and deleted[1]["code"] == "AT-1093", (round_, outcomes)
            assert founded[0] == 201, (round_, outcomes)
            assert user is not None, (round_, outcomes)
            assert [(str(m.org_id), m.role.value) for m in members] == [
                (founded[1]["id"], "orgadmin")
            ], (round_, outcomes, members)


async def test_a_user_deleted_after_signing_in_is_made_a_member_nowhere(api: Any) -> None:
    """The request of a user (or about them) signed in before a deletion reaches its unit of
    work after it: the user is not found (as an unknown one), an open invitation is not
    redeemed, and no member record refers to the user."""
    ctx = await resolve(api.container.context)
    alice_org = (await api.org(ALICE, legal_id=org_number(4000)))["id"]
    bob_org = (await api.org(BOB, legal_id=org_number(4001)))["id"]
    carol_org = (await api.org(CAROL, legal_id=org_number(4002)))["id"]
    email = "late@example.com"
    user_id = (await api.me(email))["id"]
    user, _ = await stored(api, user_id)
    alice, _ = await stored(api, (await api.me(ALICE))["id"])
    assert user is not None and alice is not None
    status, body = await api.call(
        "POST", f"/orgs/{carol_org}/members", as_=CAROL, json={"email": email}
    )
    assert status == 201, body
    assert await delete(api, user_id) == (200, {"ids": [user_id]})

    identity = Identity(user.subject, email, issuer=user.issuer, email_verified=True)
    await invitations.redeem(ctx, user, identity)
    refusals = {
        "added": lambda: members.create(
            ctx, Principal(user=alice), uuid.UUID(alice_org), members.CreateMember(user.id)
        ),
        "joined": lambda: users.join(ctx, Principal(user=user), user.id, uuid.UUID(bob_org)),
        "founded": lambda: organisations.create(
            ctx,
            Principal(user=user),
            organisations.CreateOrganisation(org_number(4003), "ACME AB", "SE", "SE:ORGNR"),
        ),
    }
    for what, attempt in refusals.items():
        with pytest.raises(NotFound) as refused:
            await attempt()
        assert (refused.value.resource, refused.value.ident) == ("user", user_id), what
    assert await stored(api, user_id) == (None, [])
    status, body = await api.call("GET", f"/orgs/{carol_org}/members/pending", as_=CAROL)
    assert status == 200, body
    assert [m["email"] for m in body["items"]] == [email]  # still open, for a new account


async def test_a_superadmin_deleted_after_signing_in_changes_no_organisation(api: Any) -> None:
    """A superadmin holds no membership that the deletion removes: their request that signed
    in before the deletion and reaches its unit of work after it finds the user gone (as an
    unknown one), and nothing changes."""
    ctx = await resolve(api.container.context)
    alice_org = (await api.org(ALICE, legal_id=org_number(4010)))["id"]
    bob_id = (await api.me(BOB))["id"]
    status, body = await api.call("GET", "/users/me", as_="ops@example.com", superadmin=True)
    assert status == 200, body
    ops, _ = await stored(api, body["id"])
    assert ops is not None
    assert await delete(api, ops.id) == (200, {"ids": [ops.id]})
    with pytest.raises(NotFound) as refused:
        await members.create(
            ctx, Principal(user=ops), uuid.UUID(alice_org), members.CreateMember(bob_id)
        )
    assert (refused.value.resource, refused.value.ident) == ("user", ops.id)
    _, bob_memberships = await stored(api, bob_id)
    assert bob_memberships == []


async def test_a_superadmin_deleted_after_signing_in_reads_and_changes_nothing(api: Any) -> None:
    """Not only where the organisation is held (``members.create`` above): every check of a
    superadmin reads them again, a change that holds nothing (removing a webhook) and a read
    alike, so a request signed in before the deletion finds the user gone."""
    ctx = await resolve(api.container.context)
    alice_org = (await api.org(ALICE, legal_id=org_number(4020)))["id"]
    status, hook = await api.call(
        "POST",
        f"/orgs/{alice_org}/webhooks",
        as_=ALICE,
        json={"url": "https://hooks.example.com/in", "events": ["webhook.test"]},
    )
    assert status == 201, hook
    status, body = await api.call("GET", "/users/me", as_="ops2@example.com", superadmin=True)
    assert status == 200, body
    ops, _ = await stored(api, body["id"])
    assert ops is not None
    stale = Principal(user=ops)
    assert (await organisations.get(ctx, stale, uuid.UUID(alice_org))).org.id == uuid.UUID(
        alice_org
    )
    assert await delete(api, ops.id) == (200, {"ids": [ops.id]})
    attempts = {
        "removed a webhook": lambda: webhooks.delete_many(
            ctx, stale, uuid.UUID(alice_org), [uuid.UUID(hook["id"])]
        ),
        "read the organisation": lambda: organisations.get(ctx, stale, uuid.UUID(alice_org)),
    }
    for what, attempt in attempts.items():
        with pytest.raises(NotFound) as refused:
            await attempt()
        assert (refused.value.resource, refused.value.ident) == ("user", ops.id), what
    status, body = await api.call("GET", f"/orgs/{alice_org}/webhooks/{hook['id']}", as_=ALICE)
    assert status == 200, body
