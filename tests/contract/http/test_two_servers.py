"""Two servers on one database (two processes, as operators run them): access taken away
through one is refused by the other, although the other had the caller's records cached."""

import asyncio

ALICE, BOB = "alice@example.com", "bob@example.com"


async def refused_within(call, seconds: float) -> int:
    """Poll ``call`` until it answers 401 or 403; the status, or the last one seen."""
    status = 0
    for _ in range(int(seconds / 0.01)):
        status, _ = await call()
        if status in (401, 403):
            return status
        await asyncio.sleep(0.01)
    return status


async def test_a_removed_member_is_refused_by_the_other_server(two_servers):
    first, second = two_servers
    org = await first.org(ALICE)
    bob = await second.me(BOB)
    status, member = await first.call(
        "POST",
        f"/orgs/{org['id']}/members",
        as_=ALICE,
        json={"userId": bob["id"], "role": "orgadmin"},
    )
    assert status == 201, member
    for _ in range(3):  # the second server now holds Bob's membership in its cache
        status, _ = await second.call("GET", f"/orgs/{org['id']}", as_=BOB)
        assert status == 200
    status, _ = await first.call("DELETE", f"/orgs/{org['id']}/members/{member['id']}", as_=ALICE)
    assert status == 200
    status = await refused_within(
        lambda: second.call("GET", f"/orgs/{org['id']}", as_=BOB), seconds=1.0
    )
    assert status == 403
    status, me = await second.call("GET", "/users/me", as_=BOB)
    assert status == 200 and me["memberships"] == []


async def test_a_revoked_api_key_is_refused_by_the_other_server(two_servers):
    first, second = two_servers
    org = await first.org(ALICE)
    status, created = await first.call(
        "POST",
        f"/orgs/{org['id']}/api_keys",
        as_=ALICE,
        json={
            "name": "ci",
            "description": "pipeline",
            "expires": "2099-01-01T00:00:00Z",
            "isActive": True,
            "role": "orgadmin",
        },
    )
    assert status == 201, created
    for _ in range(3):
        status, _ = await second.call("GET", f"/orgs/{org['id']}", key=created["key"])
        assert status == 200
    status, _ = await first.call("DELETE", f"/orgs/{org['id']}/api_keys/{created['id']}", as_=ALICE)
    assert status == 200
    status = await refused_within(
        lambda: second.call("GET", f"/orgs/{org['id']}", key=created["key"]), seconds=1.0
    )
    assert status == 401


async def test_an_organisation_changed_through_one_server_reads_changed_through_the_other(
    two_servers,
):
    first, second = two_servers
    org = await first.org(ALICE)
    status, _ = await second.call("GET", f"/orgs/{org['id']}", as_=ALICE)
    assert status == 200
    status, _ = await first.call(
        "PUT", f"/orgs/{org['id']}", as_=ALICE, json={"legalName": "Renamed AB"}
    )
    assert status == 200
    for _ in range(100):
        status, body = await second.call("GET", f"/orgs/{org['id']}", as_=ALICE)
        if body["legalName"] == "Renamed AB":
            break
        await asyncio.sleep(0.01)
    assert body["legalName"] == "Renamed AB"
