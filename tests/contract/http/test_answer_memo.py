"""Kept principals and kept answers (``entrypoints.http.memo``): a route marked ``memo`` reads
nothing but the record cache's collections through readers, and what is kept follows every
change a request could see: edits, removed members, revoked keys, deleted users, expiry."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from fourcorner.adapters.sql.cache import CACHED_COLLECTIONS
from fourcorner.entrypoints.container import resolve

from .test_identity import ALICE, BOB, CAROL, MovableClock, delete_user, new_key

CACHED = ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]


class Recording:
    """The storage's repository maker, noting each collection asked for and whether its reads
    may come from the record cache (a reader's) or not (a unit of work that writes)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.seen: list[tuple[str, bool]] = []

    def __call__(self, executor: Any, collection: Any, *, cached: bool = False) -> Any:
        self.seen.append((collection.name, cached))
        return self.inner(executor, collection, cached=cached)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


@pytest.fixture(params=CACHED)
async def timed(request: Any, start_api: Any) -> tuple[Any, MovableClock]:
    clock = MovableClock()
    return await start_api(request.param, clock=clock), clock


async def test_memo_routes_read_only_cached_collections_through_readers(timed):
    api, _ = timed
    org = await api.org(ALICE)
    created = await new_key(api, org["id"], as_=ALICE)
    storage = await resolve(api.container.storage)
    recording = Recording(storage.repositories)
    storage.repositories = recording
    routes = [r for r in api.container.route_table() if r.memo]
    assert {r.path for r in routes} >= {"/orgs/{orgId}", "/users/me"}
    for route in routes:
        path = route.path.replace("{orgId}", org["id"])
        assert "{" not in path, f"{route.path}: give the test a value for its parameters"
        for credentials in ({"as_": ALICE}, {"key": created["key"]}):
            recording.seen.clear()
            status, _ = await api.call("GET", path + "?first=1", **credentials)
            if route.path == "/users/me" and "key" in credentials:
                assert status != 200  # /users/me refuses a key
                continue
            assert status == 200, (route.path, credentials)
            assert recording.seen, f"{route.path} read nothing: the test saw no reads"
            assert all(cached for _, cached in recording.seen), (route.path, recording.seen)
            assert {name for name, _ in recording.seen} <= set(CACHED_COLLECTIONS), route.path
            # asked again: answered from what was kept, no reads at all
            recording.seen.clear()
            again, _ = await api.call("GET", path + "?first=1", **credentials)
            assert again == 200 and recording.seen == [], (route.path, recording.seen)
            # another query is the same answer, kept once: a caller cannot file entries by
            # varying it
            other, _ = await api.call("GET", path + "?second=2", **credentials)
            assert other == 200 and recording.seen == [], (route.path, recording.seen)


async def test_kept_answers_follow_edits_members_and_keys(timed):
    api, _ = timed
    org = await api.org(ALICE)
    path = f"/orgs/{org['id']}"
    created = await new_key(api, org["id"], as_=ALICE)
    for _ in range(2):
        assert (await api.call("GET", path, as_=ALICE))[1]["legalName"] == "ACME AB"
        assert (await api.call("GET", path, key=created["key"]))[0] == 200
    status, body = await api.call("PUT", path, as_=ALICE, json={"legalName": "Renamed AB"})
    assert status == 200, body
    assert (await api.call("GET", path, as_=ALICE))[1]["legalName"] == "Renamed AB"
    assert (await api.call("GET", path, key=created["key"]))[1]["legalName"] == "Renamed AB"
    # bob, an orgadmin now, then removed
    await api.me(BOB)
    bob = (await api.me(BOB))["id"]
    status, member = await api.call(
        "POST", f"{path}/members", as_=ALICE, json={"userId": bob, "role": "orgadmin"}
    )
    assert status == 201, member
    for _ in range(2):
        assert (await api.call("GET", path, as_=BOB))[0] == 200
        assert [m["orgId"] for m in (await api.me(BOB))["memberships"]] == [org["id"]]
    status, _ = await api.call("DELETE", f"{path}/members/{member['id']}", as_=ALICE)
    assert status == 200
    assert (await api.call("GET", path, as_=BOB))[0] in (403, 404)
    assert (await api.me(BOB))["memberships"] == []
    # the key revoked
    status, _ = await api.call("DELETE", f"{path}/api_keys/{created['id']}", as_=ALICE)
    assert status == 200
    status, body = await api.call("GET", path, key=created["key"])
    assert status == 401, body


async def test_kept_principals_end_with_the_user_and_the_token(timed):
    api, clock = timed
    org = await api.org(ALICE)
    token = api.container.token_authority().issue(BOB, ttl=timedelta(minutes=10))
    bob = {"Authorization": f"Bearer {token}"}
    for _ in range(2):
        assert (await api.call("GET", "/users/me", headers=bob))[0] == 200
    clock.offset += timedelta(minutes=11)  # past the token's exp
    status, body = await api.call("GET", "/users/me", headers=bob)
    assert status == 401, body
    # a user deleted: their kept principal and kept answers go with them
    alice = (await api.me(ALICE))["id"]
    for _ in range(2):
        assert (await api.call("GET", f"/orgs/{org['id']}", as_=ALICE))[0] == 200
    carol = {"userId": (await api.me(CAROL))["id"], "role": "orgadmin"}  # the orgadmin who stays
    assert (await api.call("POST", f"/orgs/{org['id']}/members", as_=ALICE, json=carol))[0] == 201
    await delete_user(api, alice)
    assert (await api.call("GET", "/users/me", as_=ALICE))[0] == 401
    assert (await api.call("GET", f"/orgs/{org['id']}", as_=ALICE))[0] == 401


async def test_an_expired_key_is_refused_though_its_answer_was_kept(timed):
    api, clock = timed
    org = await api.org(ALICE)
    expires = (datetime.now(UTC) + timedelta(minutes=5)).isoformat().replace("+00:00", "Z")
    status, created = await api.call(
        "POST",
        f"/orgs/{org['id']}/api_keys",
        as_=ALICE,
        json={"name": "short", "expires": expires, "role": "orgadmin"},
    )
    assert status == 201, created
    for _ in range(2):
        assert (await api.call("GET", f"/orgs/{org['id']}", key=created["key"]))[0] == 200
    clock.offset += timedelta(minutes=6)
    status, body = await api.call("GET", f"/orgs/{org['id']}", key=created["key"])
    assert status == 401, body
