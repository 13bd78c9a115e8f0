"""Membership and organisation changes racing each other over HTTP, many rounds per backend.

Each round sends its requests at once (``asyncio.gather``); on PostgreSQL they run in
overlapping transactions on different pooled connections. Whatever the interleaving, the
outcome must be one that the requests in some serial order would give: an organisation keeps an
orgadmin, a deleted member stays deleted, one of several approvals of a request wins, and no
change is lost.
"""

from __future__ import annotations

import asyncio
import itertools
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from fourcorner.domain.checkdigits import luhn_check_digit

from .conftest import BACKENDS

ALICE, BOB, ROOT = "alice@example.com", "bob@example.com", "root@example.com"
ROUNDS = 24
ERROR_KEYS = {"code", "error", "details"}  # API.md: details is optional


def org_number(n: int) -> str:
    """A valid Swedish organisation number (SE:ORGNR), a different one for each ``n``."""
    payload = f"55{n:07d}"
    return payload + str(luhn_check_digit(payload))


async def as_root(api: Any, method: str, path: str, **kwargs: Any) -> tuple[int, Any]:
    return await api.call(method, path, as_=ROOT, superadmin=True, **kwargs)


async def active_members(api: Any, org_id: str) -> dict[str, dict[str, Any]]:
    """The organisation's active members by user id, as a superadmin sees them."""
    status, body = await as_root(api, "GET", f"/orgs/{org_id}/members?limit=500")
    assert status == 200, body
    return {m["userRef"]: m for m in body["items"]}


async def make_orgadmin(api: Any, org_id: str, user_id: str) -> None:
    """A superadmin makes the user an active orgadmin, whatever they were."""
    found = (await active_members(api, org_id)).get(user_id)
    if found is None:
        status, body = await as_root(
            api, "POST", f"/orgs/{org_id}/members", json={"userId": user_id, "role": "orgadmin"}
        )
        assert status == 201, body
    elif found["role"] != "orgadmin":
        path = f"/orgs/{org_id}/members/{found['id']}"
        status, body = await as_root(api, "PUT", path, json={"role": "orgadmin"})
        assert status == 200, body


def error_shaped(body: Any) -> bool:
    return isinstance(body, dict) and {"code", "error"} <= set(body) <= ERROR_KEYS


def refused_cleanly(status: int, body: Any) -> bool:
    return status in (403, 404, 409) and error_shaped(body)


async def test_two_orgadmins_acting_on_each_other_always_leave_an_orgadmin(api: Any) -> None:
    """Alice and Bob, both orgadmins, demote, delete or leave at the same time, in every
    pairing; an organisation is never left without an orgadmin."""
    org = await api.org(ALICE)
    org_id = org["id"]
    users = {ALICE: (await api.me(ALICE))["id"], BOB: (await api.me(BOB))["id"]}

    async def act(action: str, actor: str, other: str, ids: dict[str, str]) -> tuple[int, Any]:
        if action == "demote":
            path = f"/orgs/{org_id}/members/{ids[other]}"
            return await api.call("PUT", path, as_=actor, json={"role": "orgmember"})
        if action == "delete":
            return await api.call("DELETE", f"/orgs/{org_id}/members/{ids[other]}", as_=actor)
        path = f"/users/{users[actor]}/leave_org"
        return await api.call("POST", path, as_=actor, json={"orgId": org_id})

    pairs = list(itertools.product(("demote", "delete", "leave"), repeat=2))
    for round_ in range(ROUNDS):
        for user_id in users.values():
            await make_orgadmin(api, org_id, user_id)
        members = await active_members(api, org_id)
        ids = {email: members[uid]["id"] for email, uid in users.items()}
        alice_does, bob_does = pairs[round_ % len(pairs)]
        outcomes = await asyncio.gather(
            act(alice_does, ALICE, BOB, ids), act(bob_does, BOB, ALICE, ids)
        )
        for status, body in outcomes:
            assert status == 200 or refused_cleanly(status, body), (round_, status, body)
        admins = [
            m for m in (await active_members(api, org_id)).values() if m["role"] == "orgadmin"
        ]
        assert admins, f"round {round_} ({alice_does} / {bob_does}) left no orgadmin: {outcomes}"


async def test_a_member_deleted_during_a_role_change_never_comes_back(api: Any) -> None:
    org = await api.org(ALICE)
    org_id = org["id"]
    bob = (await api.me(BOB))["id"]
    for round_ in range(ROUNDS):
        status, member = await api.call(
            "POST", f"/orgs/{org_id}/members", as_=ALICE, json={"userId": bob}
        )
        assert status == 201, member
        path = f"/orgs/{org_id}/members/{member['id']}"
        changed, deleted = await asyncio.gather(
            api.call("PUT", path, as_=ALICE, json={"role": "orgadmin"}),
            api.call("DELETE", path, as_=ALICE),
        )
        assert deleted[0] == 200, (round_, deleted)
        assert changed[0] == 200 or refused_cleanly(*changed), (round_, changed)
        status, body = await api.call("GET", path, as_=ALICE)
        assert status == 404, (round_, status, body)
        assert bob not in await active_members(api, org_id), round_
        status, body = await api.call("GET", f"/orgs/{org_id}", as_=BOB)
        assert status == 403, (round_, status, body)


async def test_of_concurrent_approvals_of_one_request_exactly_one_succeeds(api: Any) -> None:
    org = await api.org(ALICE)
    org_id = org["id"]
    await make_orgadmin(api, org_id, (await api.me(BOB))["id"])
    for round_ in range(ROUNDS):
        joiner = await api.me(f"joiner{round_}@example.com")
        status, pending = await api.call(
            "POST",
            f"/users/{joiner['id']}/join_org",
            as_=joiner["email"],
            json={"orgId": org_id},
        )
        assert status == 201, pending
        body = {"ids": [pending["id"]]}
        path = f"/orgs/{org_id}/members/approve"
        outcomes = await asyncio.gather(
            api.call("PUT", path, as_=ALICE, json=body),
            api.call("PUT", path, as_=BOB, json=body),
            as_root(api, "PUT", path, json=body),
        )
        statuses = sorted(status for status, _ in outcomes)
        assert statuses == [200, 409, 409], (round_, outcomes)
        for status, answer in outcomes:
            if status == 409:
                assert error_shaped(answer) and answer["code"] == "AT-1096", answer
        member = (await active_members(api, org_id))[joiner["id"]]
        assert member["status"] == "ACTIVE"


async def test_a_user_asking_to_join_while_an_orgadmin_adds_them_ends_a_member(api: Any) -> None:
    """In either order the user ends an active member: asked first, the request is granted
    (201, 201); added first, the request is refused as already a member (409 AT-1092)."""
    org = await api.org(ALICE)
    org_id = org["id"]
    for round_ in range(ROUNDS):
        joiner = await api.me(f"asker{round_}@example.com")
        asked, added = await asyncio.gather(
            api.call(
                "POST",
                f"/users/{joiner['id']}/join_org",
                as_=joiner["email"],
                json={"orgId": org_id},
            ),
            api.call("POST", f"/orgs/{org_id}/members", as_=ALICE, json={"userId": joiner["id"]}),
        )
        assert added[0] == 201, (round_, added)
        assert asked[0] == 201 or (asked[0] == 409 and asked[1]["code"] == "AT-1092"), (
            round_,
            asked,
        )
        member = (await active_members(api, org_id)).get(joiner["id"])
        assert member is not None and member["id"] == added[1]["id"], round_


async def test_a_granted_mode_change_is_not_undone_by_a_concurrent_edit(api: Any) -> None:
    """A superadmin grants the requested mode while an orgadmin renames the organisation:
    both changes stay, whichever commits first."""
    contact = {"name": "Bea", "email": "bea@example.com", "contactType": "BUSINESS"}
    org = await api.org(ALICE, contacts=[contact])
    path = f"/orgs/{org['id']}"
    modes = ["SHARED", "WHITELABEL"]  # the modes one may ask for
    for round_ in range(ROUNDS):
        wanted = modes[round_ % len(modes)]
        status, body = await api.call("PUT", path, as_=ALICE, json={"modeChangeRequest": wanted})
        assert status == 200, body
        granted, renamed = await asyncio.gather(
            as_root(api, "PUT", path, json={"organisationMode": wanted}),
            api.call("PUT", path, as_=ALICE, json={"legalName": f"ACME round {round_}"}),
        )
        assert granted[0] == 200 and renamed[0] == 200, (round_, granted, renamed)
        status, now = await as_root(api, "GET", path)
        assert (now["organisationMode"], now["modeChangeRequest"], now["legalName"]) == (
            wanted,
            None,
            f"ACME round {round_}",
        ), round_


async def test_a_users_concurrent_first_organisations_share_mode_once(api: Any) -> None:
    """Only a user's first organisation has shared mode enabled, also when they create two at
    once."""
    for round_ in range(ROUNDS):
        founder = f"founder{round_}@example.com"
        await api.me(founder)  # signed up before the race
        outcomes = await asyncio.gather(
            *(
                api.call(
                    "POST",
                    "/orgs",
                    as_=founder,
                    json={
                        "legalIdentifier": org_number(2 * round_ + n),
                        "legalName": "ACME AB",
                        "countryCode": "SE",
                        "legalIdentifierCode": "SE:ORGNR",
                    },
                )
                for n in range(2)
            )
        )
        assert [status for status, _ in outcomes] == [201, 201], outcomes
        shared = sorted(body["sharedModeEnabled"] for _, body in outcomes)
        assert shared == [False, True], (round_, outcomes)


@pytest.mark.parametrize("backend", BACKENDS)
async def test_of_concurrent_revocations_of_one_api_key_exactly_one_succeeds(
    start_api: Any, backend: str
) -> None:
    # every round presents the revoked key once: no limit on failed authentication here
    api = await start_api(backend, auth_failure_limit=0)
    org = await api.org(ALICE)
    keys = f"/orgs/{org['id']}/api_keys"
    expires = (datetime.now(UTC) + timedelta(days=30)).isoformat()
    for round_ in range(ROUNDS):
        status, created = await api.call(
            "POST",
            keys,
            as_=ALICE,
            json={"name": f"ci {round_}", "expires": expires, "role": "orgmember"},
        )
        assert status == 201, created
        outcomes = await asyncio.gather(
            api.call("DELETE", f"{keys}/{created['id']}", as_=ALICE),
            as_root(api, "DELETE", f"{keys}/{created['id']}"),
        )
        assert sorted(status for status, _ in outcomes) == [200, 404], (round_, outcomes)
        status, body = await api.call("GET", f"/orgs/{org['id']}", key=created["key"])
        assert status == 401, (round_, body)


async def test_deleting_users_never_leaves_an_organisation_without_an_orgadmin(api: Any) -> None:
    """Of an organisation's two orgadmins, a superadmin deletes one while the other is deleted
    in another request, leaves or steps down: at most one of the two changes is made (the
    other is 409 AT-1093), and the organisation keeps an orgadmin."""
    for round_ in range(ROUNDS):
        first, second = f"first{round_}@example.com", f"second{round_}@example.com"
        org = await api.org(first, legal_id=org_number(1000 + round_))
        users = {who: (await api.me(who))["id"] for who in (first, second)}
        await make_orgadmin(api, org["id"], users[second])
        mine = (await active_members(api, org["id"]))[users[first]]["id"]
        other = ("delete", "leave", "demote")[round_ % 3]
        if other == "delete":
            racing = as_root(api, "POST", "/users/batch-delete", json={"ids": [users[first]]})
        elif other == "leave":
            path = f"/users/{users[first]}/leave_org"
            racing = api.call("POST", path, as_=first, json={"orgId": org["id"]})
        else:
            path = f"/orgs/{org['id']}/members/{mine}"
            racing = api.call("PUT", path, as_=first, json={"role": "orgmember"})
        outcomes = await asyncio.gather(
            as_root(api, "POST", "/users/batch-delete", json={"ids": [users[second]]}), racing
        )
        statuses = sorted(status for status, _ in outcomes)
        assert statuses == [200, 409], (round_, other, outcomes)
        refused = next(body for status, body in outcomes if status == 409)
        assert error_shaped(refused) and refused["code"] == "AT-1093", refused
        admins = [
            m for m in (await active_members(api, org["id"])).values() if m["role"] == "orgadmin"
        ]
        assert len(admins) == 1, (round_, other, outcomes, admins)
