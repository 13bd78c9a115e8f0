"""Two servers on one database (two processes, as operators run them): access taken away
through one is refused by the other, although the other had the caller's records cached."""

import asyncio
import time
from typing import Any

import psycopg
import pytest

import pg
from fourcorner.adapters.postgres import failures
from fourcorner.entrypoints.container import resolve

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


ON_POSTGRES = pytest.mark.parametrize(
    "two_servers", [pytest.param("postgres", marks=pytest.mark.postgres)], indirect=True
)
HERE = "addr:127.0.0.1"  # the test client's address, as the throttle counts it


async def until(check, seconds: float = 2.0) -> bool:
    """Poll ``check`` until it holds (True), or ``seconds`` have passed (False)."""
    for _ in range(int(seconds / 0.01)):
        if check():
            return True
        await asyncio.sleep(0.01)
    return check()


async def spread_failures(servers: list[Any]) -> bool:
    """The limit's failures from this address, taken in turn by ``servers``, then one more
    asked of each: whether every server refused it (429 ``AT-1029``; else 401 ``AT-1018``)."""
    limit = servers[0].container.settings().auth_failure_limit
    for n in range(limit):
        server = servers[n % len(servers)]
        status, _ = await server.call("GET", "/users/me", key=f"fck_guess{n:02d}-x")
        assert status == 401
    trackers = [server.container.auth_throttle() for server in servers]
    # the last failures reach the other servers within a short wait, if they are told at all
    await until(lambda: all(t.retry_after([HERE]) for t in trackers))
    answers = set()
    for server in servers:
        status, body = await server.call("GET", "/users/me", key="fck_guess99-x")
        answers.add((status, body.get("code")))
    assert answers <= {(429, "AT-1029"), (401, "AT-1018")} and len(answers) == 1
    return answers == {(429, "AT-1029")}


async def test_failures_spread_over_two_servers_are_refused_as_one_servers(two_servers):
    """PostgreSQL: the servers tell each other their failed authentications, so the limit's
    10 failures taken five by each leave the address refused by both (429), as one server
    taking all ten would; SQLite (one process a database): each counts its own."""
    shared = two_servers[0].container.settings().storage_kind == "postgres"
    assert await spread_failures(two_servers) == shared


@ON_POSTGRES
async def test_failures_are_shared_again_once_the_listener_is_back(two_servers):
    """Cut the listeners' connections: each server counts on its own meanwhile, and once they
    are back, they tell each other their failures again."""
    storages = [await resolve(server.container.storage) for server in two_servers]
    schema = two_servers[0].container.settings().database_schema
    async with await psycopg.AsyncConnection.connect(pg.URL, autocommit=True) as admin:
        await admin.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = %s",
            (f"fourcorner-listener:{schema}",),
        )
    assert await until(lambda: not any(s.listening for s in storages))
    assert await until(lambda: all(s.listening for s in storages))
    assert await spread_failures(two_servers)


async def notify(payloads: list[str]) -> None:
    async with await psycopg.AsyncConnection.connect(pg.URL, autocommit=True) as conn:
        for payload in payloads:
            await conn.execute("SELECT pg_notify('fourcorner_failures', %s)", (payload,))


@ON_POSTGRES
async def test_a_malformed_notification_of_failures_is_ignored(two_servers):
    """Notifications on the failures' channel are input: a malformed one, or one not signed by
    the key the servers derive from their at-rest key, changes nothing, and a well-formed one,
    however many failures it claims, refuses a key for one interval at most (the limit's
    failures at once)."""
    first, _ = two_servers
    settings = first.container.settings()
    tracker = first.container.auth_throttle()
    key = first.container.sealer().derived(failures.LABEL)[0]
    sender = f"{settings.database_schema}:{'e' * 12}:"
    sent = str(int(time.time() * 1000))
    await notify(
        [
            failures.signed(key, sender, sent, '{"addr:127.0.0.1": 1.5}'),
            failures.signed(key, sender, sent, '{"addr:127.0.0.1": 100'),
            failures.signed(key, sender, sent, '["addr:127.0.0.1", 100]'),
            failures.signed(key, sender, sent, '{"addr:127.0.0.1": 100, "nonsense": 1}'),
            failures.signed(
                key, f"{settings.database_schema}:EEEEEEEEEEEE:", sent, '{"addr:127.0.0.1": 100}'
            ),
            failures.signed(key, f"fc_elsewhere:{'e' * 12}:", sent, '{"addr:127.0.0.1": 100}'),
            failures.signed(b"x" * 32, sender, sent, '{"addr:127.0.0.1": 100}'),  # forged
            sender + '{"addr:127.0.0.1": 100}',  # not signed at all
            "no colon at all",
            # well-formed, but claims much
            failures.signed(key, sender, sent, '{"addr:192.0.2.9": 1000000}'),
            # the last: once heard, all were
            failures.signed(key, sender, sent, '{"addr:192.0.2.1": 1}'),
        ]
    )
    assert await until(lambda: tracker.remembers_any() and len(tracker) == 2)
    assert tracker.retry_after([HERE]) == 0
    interval = settings.auth_failure_window / settings.auth_failure_limit
    assert 0 < tracker.retry_after(["addr:192.0.2.9"]) <= interval
    assert tracker.retry_after(["addr:192.0.2.1"]) == 0
    status, _ = await first.call("GET", "/users/me", as_=ALICE)
    assert status == 200


@ON_POSTGRES
async def test_the_failures_go_out_on_the_listeners_connection_and_success_sends_nothing(
    two_servers, monkeypatch
):
    """A successful authentication sends the same statements before any failure and once
    failures are remembered and shared (none: its principal is kept); the failures themselves
    are sent by the listener, on its own connection, never by a connection of the pool."""
    first, second = two_servers
    sent: list[tuple[str, str, Any]] = []
    execute = psycopg.AsyncConnection.execute

    async def recorded(self: Any, query: Any, params: Any = None, **kwargs: Any) -> Any:
        name = self.info.get_parameters().get("application_name", "")
        sent.append((name, str(query), params))
        return await execute(self, query, params, **kwargs)

    for _ in range(2):  # the principal and the records read for it are kept from now on
        assert (await first.call("GET", "/users/me", as_=ALICE))[0] == 200
    monkeypatch.setattr(psycopg.AsyncConnection, "execute", recorded)
    assert (await first.call("GET", "/users/me", as_=ALICE))[0] == 200
    before, sent[:] = list(sent), []
    for n in range(3):
        assert (await first.call("GET", "/users/me", key=f"fck_guess{n:02d}-x"))[0] == 401
    assert await until(lambda: second.container.auth_throttle().remembers_any())
    told = [(name, params) for name, query, params in sent if "pg_notify" in query]
    assert told and all(name.startswith("fourcorner-listener:") for name, _ in told)
    assert all(params[0] == "fourcorner_failures" for _, params in told)
    sent[:] = []
    assert first.container.auth_throttle().remembers_any()
    assert (await first.call("GET", "/users/me", as_=ALICE))[0] == 200
    await asyncio.sleep(0.3)  # what the listener would send, it sends within 0.1 s
    assert sent == before
    assert not any("pg_notify" in query for _, query, _ in sent)
