"""The HTTP edge against hostile callers: throttled failed authentication, the headers every
answer carries, and requests too malformed for aiohttp to parse."""

from __future__ import annotations

import asyncio
import logging
from typing import Any
from urllib.parse import urlsplit

import aiohttp
import pytest

from .conftest import BACKENDS
from .test_as4_endpoint import setup

ALICE = "alice@example.com"


@pytest.fixture(params=BACKENDS)
async def strict(request: Any, start_api: Any) -> Any:
    """A server that allows three failed authentications per address and key prefix."""
    return await start_api(request.param, auth_failure_limit=3, auth_failure_window=60)


async def get(api: Any, path: str, **headers: str) -> tuple[int, Any, Any]:
    resp = await api.client.get(path, headers=headers)
    body = await resp.json() if resp.content_type == "application/json" else await resp.read()
    return resp.status, body, resp.headers


async def test_failed_authentication_is_throttled_per_address(strict):
    api = strict
    token = api.token(ALICE)
    assert (await get(api, "/users/me", Authorization=f"Bearer {token}"))[0] == 200
    # no credentials at all is no guess: not counted
    for _ in range(5):
        assert (await get(api, "/users/me"))[0] == 401
    wrong = [{"X-Api-Key": "fck_wrong1-guess"}, {"Authorization": "Bearer not-a-token"}] * 2
    statuses = [(await get(api, "/users/me", **h))[0] for h in wrong]
    assert statuses == [401, 401, 401, 429]
    status, body, headers = await get(api, "/users/me", **{"X-Api-Key": "fck_other-guess"})
    assert status == 429 and body["code"] == "AT-1029" and "error" in body
    assert 1 <= int(headers["Retry-After"]) <= 20
    # while it waits, the address gets nowhere, even with good credentials
    assert (await get(api, "/users/me", Authorization=f"Bearer {token}"))[0] == 429
    # public routes still answer
    assert (await get(api, "/healthz"))[0] == 200


async def test_failed_authentication_is_throttled_per_key_prefix(strict):
    api = strict
    url = api.client.make_url("/users/me")

    async def from_address(last: int, key: str) -> int:
        connector = aiohttp.TCPConnector(local_addr=(f"127.0.0.{last}", 0))
        async with (
            aiohttp.ClientSession(connector=connector) as session,
            session.get(url, headers={"X-Api-Key": key}) as resp,
        ):
            return resp.status

    # one failure each from three addresses, all with one prefix
    assert [await from_address(n, f"fck_target{n}-guess") for n in (2, 3, 4)] == [401] * 3
    # a fourth address is refused for that prefix, not for another
    assert await from_address(5, "fck_target-another-guess") == 429
    assert await from_address(5, "fck_differ-guess") == 401


async def test_wrong_keys_with_a_victims_prefix_lock_out_only_the_guesser(strict):
    """A key's prefix is shown in ``GET .../api_keys``: wrong keys sent with it from one
    address, past the allowance, refuse that address (429 before any lookup) and other wrong
    keys with the prefix (429), but never the genuine key from elsewhere, used before or not."""
    api = strict
    org = await api.org(ALICE)
    made = []
    for name in ("used before", "never used"):
        body = {"name": name, "expires": "2999-01-01T00:00:00Z", "role": "orgadmin"}
        status, created = await api.call(
            "POST", f"/orgs/{org['id']}/api_keys", as_=ALICE, json=body
        )
        assert status == 201, created
        made.append(created["key"])
    used, fresh = made
    path = f"/orgs/{org['id']}"

    async def from_address(last: int, key: str) -> int:
        connector = aiohttp.TCPConnector(local_addr=(f"127.0.0.{last}", 0))
        async with (
            aiohttp.ClientSession(connector=connector) as session,
            session.get(api.client.make_url(path), headers={"X-Api-Key": key}) as resp,
        ):
            return resp.status

    assert await from_address(2, used) == 200
    for victim, guesser, other in ((used, 3, 4), (fresh, 5, 6)):
        guesses = [await from_address(guesser, f"{victim[:10]}wrong{n}") for n in range(11)]
        assert guesses == [401] * 3 + [429] * 8
        assert await from_address(guesser, victim) == 429  # the guesser's address waits
        assert await from_address(other, f"{victim[:10]}wrong-again") == 429  # so does the prefix
    for last in (2, 7):
        assert [await from_address(last, key) for key in (used, fresh)] == [200, 200]


async def test_a_flood_of_wrong_keys_is_refused_after_the_allowance(api):
    statuses = [
        (await get(api, "/users/me", **{"X-Api-Key": f"fck_{n:06d}-guess"}))[0] for n in range(60)
    ]
    # the default: 10 failures per minute per address
    assert statuses == [401] * 10 + [429] * 50


async def test_every_answer_carries_the_security_headers(api):
    token = api.token(ALICE)
    answers = {
        "public": await get(api, "/healthz"),
        "unknown route": await get(api, "/no/such/route"),
        "unknown route, odd characters": await get(api, "/no/such%0A%FF%00/route%2F"),
        "refused": await get(api, "/users/me"),
        "signed in": await get(api, "/users/me", Authorization=f"Bearer {token}"),
        "openapi": await get(api, "/openapi.json"),
        "a file": await get(api, "/docs/static/swagger-ui.css"),
        "method not allowed": await _answer(api, "DELETE", "/healthz"),
        "unknown expectation": await _answer(api, "GET", "/users/me", Expect="nothing-known"),
        "unknown route, unknown expectation": await _answer(
            api, "GET", "/no/such/route", Expect="nothing-known"
        ),
    }
    for name, (_, _, headers) in answers.items():
        assert headers["X-Content-Type-Options"] == "nosniff", name
        assert headers["Server"] == "fourcorner", name
        assert "Strict-Transport-Security" not in headers, name  # the public URL is http
    for name in ("refused", "signed in"):
        assert answers[name][2]["Cache-Control"] == "no-store", name
    assert "Cache-Control" not in answers["public"][2]
    assert answers["method not allowed"][0] == 405
    assert answers["unknown route"][1]["code"] == "AT-1041"
    assert answers["unknown route, odd characters"][1]["code"] == "AT-1041"
    for name in ("unknown expectation", "unknown route, unknown expectation"):
        status, body, headers = answers[name]
        assert status == 417, name
        assert body["code"] == "AT-1043", name
        assert "nothing-known" in body["error"], name
        assert headers["Content-Type"].startswith("application/json"), name
        assert headers["X-Request-Id"], name


@pytest.mark.parametrize("line", [b"OPTIONS * HTTP/1.1", b"CONNECT example.test:443 HTTP/1.1"])
async def test_a_target_no_route_can_match_is_a_404_in_the_api_shape(api, line):
    """Request targets that are not paths (``*``, ``host:port``): answered as an unknown route,
    not by aiohttp (whose answer names its version)."""
    reader, writer = await asyncio.open_connection("127.0.0.1", api.client.port)
    try:
        writer.write(line + b"\r\nHost: x\r\nConnection: close\r\n\r\n")
        await writer.drain()
        raw = await asyncio.wait_for(reader.read(), 10)
    finally:
        writer.close()
    head, _, body = raw.partition(b"\r\n\r\n")
    assert head.split()[1] == b"404", raw[:300]
    assert b'"code":"AT-1041"' in body
    lowered = head.lower()
    assert b"server: fourcorner" in lowered and b"x-content-type-options: nosniff" in lowered


@pytest.mark.parametrize(
    ("version", "status", "code"),
    [
        (b"HTTP/2.0", b"505", b"AT-1044"),
        (b"HTTP/0.9", b"505", b"AT-1044"),
        # versions the HTTP/1 parser itself does not read: a malformed request line
        (b"HTTP/1.2", b"400", b"AT-1001"),
        (b"HTTP/3.0", b"400", b"AT-1001"),
    ],
)
@pytest.mark.parametrize("target", [b"GET /healthz", b"GET /no/such/route", b"POST /orgs"])
async def test_a_request_line_of_another_http_version_is_refused_in_the_api_shape(
    api, version, status, code, target
):
    """This server speaks HTTP/1.1 and 1.0: a request line naming another version is
    refused in the error shape on any route, its handler never run: 505 for one the parser
    reads (``HTTP/2.0``, ``HTTP/0.9``), 400 for one it does not."""
    reader, writer = await asyncio.open_connection("127.0.0.1", api.client.port)
    try:
        writer.write(
            target + b" " + version + b"\r\nHost: x\r\nContent-Type: application/json\r\n"
            b"Content-Length: 2\r\nConnection: close\r\n\r\n{}"
        )
        await writer.drain()
        raw = await asyncio.wait_for(reader.read(), 10)
    finally:
        writer.close()
    head, _, body = raw.partition(b"\r\n\r\n")
    assert head.split()[1] == status, raw[:300]
    assert b'"code":"' + code + b'"' in body
    if status == b"505":
        assert version[5:] in body
        # answered in this server's own version (RFC 9112, 2.3), and the connection closed
        assert head.startswith(b"HTTP/1.1 505 "), raw[:300]
        assert b"connection: close" in head.lower()
    lowered = head.lower()
    assert b"server: fourcorner" in lowered and b"x-request-id: " in lowered


async def test_http_1_0_and_1_1_request_lines_are_served(api):
    for version in (b"HTTP/1.0", b"HTTP/1.1"):
        reader, writer = await asyncio.open_connection("127.0.0.1", api.client.port)
        try:
            writer.write(b"GET /healthz " + version + b"\r\nHost: x\r\nConnection: close\r\n\r\n")
            await writer.drain()
            raw = await asyncio.wait_for(reader.read(), 10)
        finally:
            writer.close()
        assert raw.split()[1] == b"200", raw[:300]


def _org_body(name: str) -> dict[str, str]:
    return {
        "legalIdentifier": "2120000787",
        "legalName": name,
        "countryCode": "SE",
        "legalIdentifierCode": "SE:ORGNR",
    }


async def _answer(api: Any, method: str, path: str, **headers: str) -> tuple[int, Any, Any]:
    resp = await api.client.request(method, path, headers=headers)
    body = await resp.json() if resp.content_type == "application/json" else await resp.read()
    return resp.status, body, resp.headers


async def test_an_unknown_expectation_with_a_body_changes_nothing(api):
    """A body sent with an expectation the service does not meet: 417 in the error shape, the
    route's handler never run, nothing created."""
    token = api.token(ALICE)
    auth = {"Authorization": f"Bearer {token}"}
    resp = await api.client.post(
        "/orgs",
        json=_org_body("Expecting AB"),
        headers=auth | {"Expect": "a-miracle"},
    )
    assert resp.status == 417
    assert (await resp.json())["code"] == "AT-1043"
    status, orgs = await api.call("GET", "/orgs", as_="root@example.com", superadmin=True)
    assert status == 200
    assert "Expecting AB" not in [o["legalName"] for o in orgs["items"]]


async def test_a_body_sent_after_100_continue_is_read(api):
    """A client that waits for ``100 Continue`` before its body gets it, and its answer."""
    token = api.token(ALICE)
    resp = await api.client.post(
        "/orgs",
        json=_org_body("Continue AB"),
        headers={"Authorization": f"Bearer {token}"},
        expect100=True,
    )
    assert resp.status == 201, await resp.text()


async def test_an_https_public_url_turns_on_strict_transport_security(start_api):
    api = await start_api("memory", public_url="https://fourcorner.example.test")
    for path in ("/healthz", "/users/me"):
        _, _, headers = await get(api, path)
        assert headers["Strict-Transport-Security"].startswith("max-age=")


@pytest.mark.parametrize(
    "head",
    [
        b"Authorization: Bearer " + b"SECRETTOKEN" * 1000,
        b"X-Api-Key: fck_" + b"SECRETKEY" * 1000,
        b"X-Anything: " + b"SECRETVALUE" * 1000,
    ],
)
async def test_an_oversized_header_is_refused_without_echoing_it(api, head, caplog):
    port = api.client.port
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        writer.write(b"GET /users/me HTTP/1.1\r\nHost: x\r\n" + head + b"\r\n\r\n")
        await writer.drain()
        with caplog.at_level(logging.DEBUG):
            raw = await asyncio.wait_for(reader.read(), 10)
    finally:
        writer.close()
    status_line, _, rest = raw.partition(b"\r\n")
    headers, _, body = rest.partition(b"\r\n\r\n")
    assert status_line.split()[1] == b"400", raw[:300]
    assert b"SECRET" not in raw
    assert b'"code":"AT-1001"' in body
    lowered = headers.lower()
    assert b"server: fourcorner" in lowered and b"aiohttp" not in lowered
    assert b"x-content-type-options: nosniff" in lowered
    assert "SECRET" not in caplog.text


async def test_a_body_that_does_not_decode_from_its_content_encoding_is_a_400(api):
    """``Content-Encoding: gzip`` over bytes that are not gzip: a 400 in the error shape at the
    JSON interface, the SBD upload, the pre-signed upload URL and the AS4 endpoint alike."""
    org = await api.org(ALICE)
    _, aps = await api.call("GET", f"/orgs/{org['id']}/aps/alltouse", as_=ALICE)
    ap_id = aps["items"][0]["id"]
    _, upload = await api.call(
        "GET", f"/orgs/{org['id']}/transactions/upload_url?ap={ap_id}", as_=ALICE
    )
    _, _, as4_path = await setup(api)
    requests = [
        ("POST", f"/orgs/{org['id']}/webhooks", "application/json", True),
        ("POST", f"/orgs/{org['id']}/transactions?ap={ap_id}", "application/xml", True),
        ("PUT", urlsplit(upload["uploadUrl"]).path, "application/xml", False),
        ("POST", as4_path, 'multipart/related; boundary="x"', False),
    ]
    for method, url, content_type, signed_in in requests:
        status, body = await api.call(
            method,
            url,
            as_=ALICE if signed_in else None,
            data=b"not gzip at all",
            headers={"Content-Type": content_type, "Content-Encoding": "gzip"},
        )
        assert status == 400 and body["code"] == "AT-1000", (url, status, body)
