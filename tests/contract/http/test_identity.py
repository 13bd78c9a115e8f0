"""Who a caller is, over HTTP: random user ids bound to the token's identity, deleted users that
stay deleted, and API keys that never outlive their creator's authority."""

from __future__ import annotations

import asyncio
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from fourcorner.adapters.auth.local import subject_for
from fourcorner.application.collections import MEMBERS, USERS
from fourcorner.domain.member import Member, MemberStatus
from fourcorner.domain.organisation import UserRef
from fourcorner.domain.roles import Role
from fourcorner.entrypoints.container import resolve
from records import user as legacy_user

from .conftest import BACKENDS

ALICE, BOB, CAROL, ROOT = (
    "alice@example.com",
    "bob@example.com",
    "carol@example.com",
    "root@example.com",
)


class MovableClock:
    """The real time plus an offset the test moves forward."""

    def __init__(self) -> None:
        self.offset = timedelta(0)

    def __call__(self) -> datetime:
        return datetime.now(UTC) + self.offset


@pytest.fixture(params=BACKENDS)
async def timed(request: Any, start_api: Any) -> tuple[Any, MovableClock]:
    clock = MovableClock()
    return await start_api(request.param, clock=clock), clock


def future(days: int = 30) -> str:
    return (datetime.now(UTC) + timedelta(days=days)).isoformat().replace("+00:00", "Z")


async def new_key(api: Any, org_id: str, *, as_: str) -> Any:
    status, created = await api.call(
        "POST",
        f"/orgs/{org_id}/api_keys",
        as_=as_,
        json={"name": "ci", "expires": future(), "role": "orgadmin"},
    )
    assert status == 201, created
    return created


async def delete_user(api: Any, uid: str) -> None:
    status, body = await api.call(
        "POST", "/users/batch-delete", as_=ROOT, superadmin=True, json={"ids": [uid]}
    )
    assert status == 200 and body == {"ids": [uid]}


def fresh_token(api: Any, email: str) -> str:
    return str(api.container.token_authority().issue(email))


# --- 12: user ids ------------------------------------------------------------------------------


async def test_user_ids_are_random_and_not_derived_from_the_email(api):
    me = await api.me(BOB)
    assert uuid.UUID(me["id"]).version == 4
    assert me["id"] != subject_for(BOB)
    assert "issuer" not in me and "subject" not in me
    # an orgadmin who works out an id from an email address finds nobody
    org = await api.org(ALICE)
    status, body = await api.call(
        "POST",
        f"/orgs/{org['id']}/members",
        as_=ALICE,
        json={"userId": subject_for(BOB), "role": "orgadmin"},
    )
    assert status == 404 and body["code"] == "AT-1040"
    assert (await api.me(BOB))["memberships"] == []


async def test_a_user_recorded_before_the_binding_keeps_its_id_and_memberships(api):
    org = await api.org(ALICE)
    old_id = subject_for(CAROL)  # how ids were made before
    ctx = await resolve(api.container.context)
    now = datetime.now(UTC)
    async with ctx.uow() as uow:
        await uow.repository(USERS).add(legacy_user(old_id, "Carol"))
        await uow.repository(MEMBERS).add(
            Member(
                id=uuid.uuid4(),
                org_id=uuid.UUID(org["id"]),
                user_ref=old_id,
                role=Role.ORGMEMBER,
                status=MemberStatus.ACTIVE,
                created_at=now,
                created_by=UserRef(old_id),
                last_modified_at=now,
                member_since=now,
            )
        )
        await uow.commit()
    for _ in range(2):  # bound on the first sign-in, found by its identity afterwards
        me = await api.me(CAROL)
        assert me["id"] == old_id and me["email"] == CAROL
        assert [m["orgId"] for m in me["memberships"]] == [org["id"]]


async def test_concurrent_first_calls_of_one_identity_make_one_user(api):
    for _ in range(20):
        email = f"u{uuid.uuid4().hex[:8]}@example.com"
        token = fresh_token(api, email)
        answers = await asyncio.gather(
            *(
                api.call("GET", "/users/me", headers={"Authorization": f"Bearer {token}"})
                for _ in range(8)
            )
        )
        assert {status for status, _ in answers} == {200}, answers
        assert len({body["id"] for _, body in answers}) == 1


# --- 3: deleted users ----------------------------------------------------------------------------


async def test_a_deleted_user_stays_deleted(timed):
    api, clock = timed
    org = await api.org(ALICE)
    alice = await api.me(ALICE)
    key = (await new_key(api, org["id"], as_=ALICE))["key"]
    bob = await api.me(BOB)  # the organisation keeps an orgadmin when she goes
    admin = {"userId": bob["id"], "role": "orgadmin"}
    assert (await api.call("POST", f"/orgs/{org['id']}/members", as_=ALICE, json=admin))[0] == 201
    await delete_user(api, alice["id"])

    # the token from before the deletion is refused, again and again, and re-creates nothing
    for _ in range(2):
        status, body = await api.call("GET", "/users/me", as_=ALICE)
        assert status == 401 and body["code"] == "AT-1018", body
    # her key is dead, and cannot put her back into the organisation
    status, _ = await api.call("GET", f"/orgs/{org['id']}", key=key)
    assert status == 401
    status, _ = await api.call(
        "POST",
        f"/orgs/{org['id']}/members",
        key=key,
        json={"userId": alice["id"], "role": "orgadmin"},
    )
    assert status == 401
    _, members = await api.call("GET", f"/orgs/{org['id']}/members", as_=ROOT, superadmin=True)
    assert [m["userRef"] for m in members["items"]] == [bob["id"]]

    # a later sign-in makes a new user: new id, no memberships, none of the old keys
    clock.offset += timedelta(minutes=2)
    token = fresh_token(api, ALICE)
    status, again = await api.call("GET", "/users/me", headers={"Authorization": f"Bearer {token}"})
    assert status == 200, again
    assert again["id"] != alice["id"] and again["memberships"] == []
    status, _ = await api.call("GET", f"/orgs/{org['id']}", key=key)
    assert status == 401
    status, _ = await api.call("GET", "/users/me", as_=ALICE)  # the old token, still
    assert status == 401


# --- 5: API keys and their creator's authority ---------------------------------------------------


async def test_a_keys_rights_follow_its_creator_down_and_out(api):
    org = await api.org(ALICE)
    bob = await api.me(BOB)
    status, _ = await api.call(
        "POST",
        f"/orgs/{org['id']}/members",
        as_=ALICE,
        json={"userId": bob["id"], "role": "orgadmin"},
    )
    assert status == 201
    alice = await api.me(ALICE)
    alice_member = alice["memberships"][0]["memberRef"]
    first = await new_key(api, org["id"], as_=ALICE)
    second = await new_key(api, org["id"], as_=ALICE)
    assert first["createdBy"] == second["createdBy"] == {"userId": alice["id"]}
    for key in (first["key"], second["key"]):
        status, _ = await api.call("GET", f"/orgs/{org['id']}/members", key=key)
        assert status == 200

    # Bob demotes Alice: her keys are orgmember keys from now on
    status, _ = await api.call(
        "PUT", f"/orgs/{org['id']}/members/{alice_member}", as_=BOB, json={"role": "orgmember"}
    )
    assert status == 200
    for key in (first["key"], second["key"]):
        status, body = await api.call("GET", f"/orgs/{org['id']}/members", key=key)
        assert status == 403 and body["code"] == "AT-1019", body
        status, _ = await api.call("GET", f"/orgs/{org['id']}/transactions/to_network", key=key)
        assert status == 200  # orgmember work
        status, body = await api.call(
            "PUT", f"/orgs/{org['id']}/members/reject", key=key, json={"ids": [bob["id"]]}
        )
        assert status == 403 and body["code"] == "AT-1019", body  # orgadmin work

    # Bob removes Alice: her keys open nothing, and cannot bring her back
    status, _ = await api.call("DELETE", f"/orgs/{org['id']}/members/{alice_member}", as_=BOB)
    assert status == 200
    for key in (first["key"], second["key"]):
        status, _ = await api.call("GET", f"/orgs/{org['id']}", key=key)
        assert status == 401
        status, _ = await api.call(
            "POST",
            f"/orgs/{org['id']}/members",
            key=key,
            json={"userId": alice["id"], "role": "orgadmin"},
        )
        assert status == 401
    assert (await api.me(ALICE))["memberships"] == []


async def test_a_superadmins_key_keeps_its_own_role(api):
    org = await api.org(ALICE)
    status, created = await api.call(
        "POST",
        f"/orgs/{org['id']}/api_keys",
        as_=ROOT,
        superadmin=True,
        json={"name": "ops", "expires": future(), "role": "orgadmin"},
    )
    assert status == 201, created
    status, _ = await api.call("GET", f"/orgs/{org['id']}/members", key=created["key"])
    assert status == 200
