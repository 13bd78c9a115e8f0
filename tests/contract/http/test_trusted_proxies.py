"""Behind a reverse proxy listed in ``FOURCORNER_TRUSTED_PROXIES``, what counts by client
address counts the clients the proxy forwards, each on its own: the failed-authentication
throttle and the AS4 limit per address. A peer that is no trusted proxy is its own client,
whatever forwarding header it sends: a spoofed one changes nothing."""

from __future__ import annotations

from typing import Any

import aiohttp
import pytest

from fourcorner.entrypoints.container import resolve
from fourcorner.entrypoints.http.address_limit import AddressLimit
from sbd_factory import make_sbd

from .test_as4_endpoint import error_code, message, no_errors_logged, setup
from .test_as4_per_address import answer_at_once
from .test_as4_slow_senders import stalled
from .test_participants import gln
from .test_transactions import until

PROXY = "127.0.0.1"  # the test client's own address: the proxy in front of the service
DIRECT = "127.0.0.2"  # a client that reaches the service directly
ALICE, BOB_CLIENT = "198.51.100.1", "2001:db8:1::7"  # two clients behind the proxy
LIMIT = 3
WRONG = {"Authorization": "Bearer not-a-token"}  # a failure counted by address only


def via(header: str, client: str, forged: str = "") -> dict[str, str]:
    """The forwarding header a proxy sends for ``client``, after what the client ``forged``."""
    if header == "X-Forwarded-For":
        return {header: ", ".join(filter(None, [forged, client]))}
    node = f'"[{client}]:4711"' if ":" in client else client
    return {header: ", ".join(filter(None, [forged, f"for={node};proto=https"]))}


async def failing(api: Any, source: str, headers: dict[str, str]) -> int:
    """The status of a request with wrong credentials from ``source`` with ``headers``."""
    url = api.client.make_url("/users/me")
    connector = aiohttp.TCPConnector(local_addr=(source, 0))
    async with (
        aiohttp.ClientSession(connector=connector) as session,
        session.get(url, headers={**WRONG, **headers}) as resp,
    ):
        return resp.status


@pytest.mark.parametrize("header", ["X-Forwarded-For", "Forwarded"])
async def test_behind_a_trusted_proxy_each_client_is_throttled_on_its_own(start_api, header):
    """One client's failures bring it to 429, whatever it prepends to the header; the
    other client behind the same proxy still gets its 401, and so does the proxy's own
    address. A direct client's spoofed header is not believed: its failures count together."""
    api = await start_api("memory", auth_failure_limit=LIMIT, trusted_proxies=PROXY)
    forgeries = ["203.0.113.1", "203.0.113.2, 10.0.0.1", "unknown", "for=203.0.113.9"]
    statuses = [await failing(api, PROXY, via(header, ALICE, f)) for f in forgeries]
    assert statuses == [401] * LIMIT + [429]
    assert await failing(api, PROXY, via(header, BOB_CLIENT)) == 401
    assert await failing(api, PROXY, {}) == 401  # the proxy's own requests: its own count
    spoofed = [await failing(api, DIRECT, via(header, f"192.0.2.{n}")) for n in range(4)]
    assert spoofed == [401] * LIMIT + [429]


@pytest.mark.parametrize("header", ["X-Forwarded-For", "Forwarded"])
async def test_without_trusted_proxies_a_forwarding_header_changes_nothing(start_api, header):
    """The default: no proxy trusted, so a client that names itself another address in each
    request is still counted as the address it connects from."""
    api = await start_api("memory", auth_failure_limit=LIMIT)
    spoofed = [await failing(api, PROXY, via(header, f"192.0.2.{n}")) for n in range(4)]
    assert spoofed == [401] * LIMIT + [429]


def _state(check: Any) -> Any:
    async def predicate() -> Any:
        return check()

    return predicate


async def test_behind_a_trusted_proxy_each_client_has_its_own_as4_messages_in_flight(
    start_api, caplog
):
    """``LIMIT`` slow messages of one client through the proxy hold that client's count, not
    the proxy's: its next one is refused (503 AT-1504), while another client's message
    through the same proxy gets its receipt. A direct client that names itself a new address
    in each message is counted as itself."""
    api = await start_api(
        "sqlite", as4_inbound_per_address=LIMIT, trusted_proxies=f"{PROXY}, 10.0.0.0/8"
    )
    _, receiver, path = await setup(api)
    limit: AddressLimit = await resolve(api.container.as4_per_address)
    slow = [
        await stalled(api, path, source=PROXY, headers=via("X-Forwarded-For", ALICE, forged))
        for forged in ("203.0.113.1", "203.0.113.2", "")
    ]
    spoofing = [
        await stalled(api, path, source=DIRECT, headers={"X-Forwarded-For": f"192.0.2.{n}"})
        for n in range(LIMIT)
    ]
    try:
        await until(_state(lambda: limit.in_flight(ALICE) == LIMIT), within=5)
        await until(_state(lambda: limit.in_flight(DIRECT) == LIMIT), within=5)
        assert limit.in_flight(PROXY) == 0
        # the next one of each is refused at once, unread
        for source, headers in (
            (PROXY, via("X-Forwarded-For", ALICE, "203.0.113.3, 10.0.0.7")),
            (DIRECT, {"X-Forwarded-For": "192.0.2.99"}),
        ):
            status, _, body = await answer_at_once(
                *await stalled(api, path, source=source, headers=headers)
            )
            assert status == 503 and body["code"] == "AT-1504", (source, body)
        # the other client behind the proxy is served, through a second proxy too
        sender = f"0088:{gln(88)}"
        msg = message(
            api, make_sbd(sender=sender, receiver=receiver), sender=sender, receiver=receiver
        )
        forwarded = {**msg.http_headers, "X-Forwarded-For": f"{BOB_CLIENT}, 10.0.0.2"}
        resp = await api.client.post(path, data=msg.body, headers=forwarded)
        answer = await resp.read()
        assert resp.status == 200 and error_code(answer) is None and b"Receipt" in answer
        assert limit.in_flight(ALICE) == LIMIT
    finally:
        for _, writer in slow + spoofing:
            writer.close()
    await until(_state(lambda: len(limit) == 0), within=5)
    no_errors_logged(caplog)


@pytest.mark.parametrize("trusted", [PROXY, ""])
async def test_the_access_log_names_the_client_a_trusted_proxy_forwards(start_api, caplog, trusted):
    """Each request's log line names its client: behind a listed proxy, the client the proxy
    forwards; else the connection's peer, whatever header it sends."""
    api = await start_api("memory", trusted_proxies=trusted)
    caplog.set_level("INFO", logger="fourcorner")
    assert await failing(api, PROXY, via("X-Forwarded-For", ALICE, "203.0.113.1")) == 401
    (line,) = [r for r in caplog.records if getattr(r, "event", "") == "http.request"]
    assert line.client == (ALICE if trusted else PROXY)
    assert line.route == "/users/me" and line.status == 401


async def test_behind_a_trusted_proxy_wrong_metrics_tokens_count_per_client(start_api):
    """A scrape with a wrong metrics token counts against the client the listed proxy
    forwards: one client's guesses bring it to 429, the other's scrape is still only 401, and
    a direct client's spoofed header is its own address's count."""
    api = await start_api(
        "memory", metrics_token="m" * 32, auth_failure_limit=LIMIT, trusted_proxies=PROXY
    )

    async def scrape(source: str, headers: dict[str, str]) -> int:
        connector = aiohttp.TCPConnector(local_addr=(source, 0))
        async with (
            aiohttp.ClientSession(connector=connector) as session,
            session.get(api.client.make_url("/metrics"), headers={**WRONG, **headers}) as resp,
        ):
            return resp.status

    guesses = [
        await scrape(PROXY, via("X-Forwarded-For", ALICE, f"203.0.113.{n}")) for n in range(4)
    ]
    assert guesses == [401] * LIMIT + [429]
    assert await scrape(PROXY, via("X-Forwarded-For", BOB_CLIENT)) == 401
    spoofed = [await scrape(DIRECT, via("X-Forwarded-For", f"192.0.2.{n}")) for n in range(4)]
    assert spoofed == [401] * LIMIT + [429]
