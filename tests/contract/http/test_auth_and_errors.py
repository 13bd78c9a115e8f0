"""Authentication failures, error shapes, and bad input that changes nothing."""

import asyncio
import json
import re
import uuid

import multidict
import pytest

ALICE = "alice@example.com"


@pytest.mark.parametrize(
    "headers",
    [
        {},
        {"Authorization": "Bearer not-a-jwt"},
        {"Authorization": "Basic YWxpY2U6cHc="},
        {"Authorization": "Bearer "},
        {"X-Api-Key": ""},
    ],
)
async def test_missing_or_bad_credentials_are_401_AT_1018(api, headers):
    status, body = await api.call("GET", "/users/me", headers=headers)
    assert status == 401
    assert body["code"] == "AT-1018" and body["error"]


async def test_a_token_of_another_server_is_refused(api, tmp_path):
    from fourcorner.adapters.auth import LocalTokenAuthority

    other = LocalTokenAuthority(tmp_path / "elsewhere").issue(ALICE)
    status, body = await api.call("GET", "/users/me", headers={"Authorization": f"Bearer {other}"})
    assert status == 401 and body["code"] == "AT-1018"


@pytest.mark.parametrize(
    ("data", "ctype", "status", "code"),
    [
        (b"{not json", "application/json", 400, "AT-1000"),
        (b"", "application/json", 400, "AT-1000"),
        (b"[1, 2]", "application/json", 400, "AT-1001"),
        (b'{"legalName": "x"}', "text/plain", 415, "AT-1003"),
        (b"\xff\xfe", "application/json", 400, "AT-1000"),
    ],
)
async def test_malformed_bodies(api, data, ctype, status, code):
    got, body = await api.call(
        "POST", "/orgs", as_=ALICE, data=data, headers={"Content-Type": ctype}
    )
    assert (got, body["code"]) == (status, code), body
    assert (await api.me(ALICE))["memberships"] == []


async def test_a_body_sent_without_a_content_type_is_refused_as_untyped(api):
    """aiohttp reads a missing or empty Content-Type as application/octet-stream: the
    refusal named that type, which the client never sent."""
    org = await api.org(ALICE)
    sends = f"/orgs/{org['id']}/transactions?ap={uuid.uuid4()}"
    for path, header in (("/orgs", b""), ("/orgs", b"Content-Type: \r\n"), (sends, b"")):
        reader, writer = await asyncio.open_connection("127.0.0.1", api.client.port)
        writer.write(f"POST {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n".encode())
        writer.write(f"Authorization: Bearer {api.token(ALICE)}\r\n".encode())
        writer.write(header + b"Content-Length: 2\r\n\r\n{}")
        answer = await reader.read()
        writer.close()
        head, _, body = answer.partition(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 415 "), answer
        error = json.loads(body)
        assert error["code"] == "AT-1003" and "(none)" in error["error"], (path, error)
        assert "octet-stream" not in error["error"], error
    status, error = await api.call(
        "POST", "/orgs", as_=ALICE, data=b"{}", headers={"Content-Type": "text/plain"}
    )
    assert status == 415 and "text/plain" in error["error"], error


async def test_an_oversized_body_is_413(api):
    big = b'{"legalName": "' + b"x" * (2 * 1024 * 1024) + b'"}'
    status, body = await api.call(
        "POST", "/orgs", as_=ALICE, data=big, headers={"Content-Type": "application/json"}
    )
    assert status == 413 and body["code"] == "AT-1002"


async def test_unknown_routes_and_methods_answer_json(api):
    status, body = await api.call("GET", "/nowhere")
    assert status == 404 and body["code"] == "AT-1041"
    status, body = await api.call("DELETE", "/orgs", as_=ALICE)
    assert status == 405 and body["code"] == "AT-1042"


@pytest.mark.parametrize(
    "query", ["filter=legalName:like:x", "filter=nope:eq:1", "limit=0", "limit=abc", "cursor=%%%"]
)
async def test_bad_list_parameters_are_400(api, query):
    status, body = await api.call("GET", f"/orgs?{query}", as_="root@example.com", superadmin=True)
    assert status == 400, body
    assert body["code"] in ("AT-1001", "AT-1004", "AT-1005")


async def test_request_ids_are_returned_and_accepted(api):
    resp = await api.client.get("/healthz", headers={"X-Request-Id": "abc-123"})
    assert resp.headers["X-Request-Id"] == "abc-123"
    made = {(await api.client.get("/healthz")).headers["X-Request-Id"] for _ in range(300)}
    assert len(made) == 300  # past one batch of ids read from the OS (app.request_ids)
    assert all(re.fullmatch("[0-9a-f]{32}", made_id) for made_id in made)


async def test_health_and_readiness(api):
    assert await api.call("GET", "/healthz") == (200, {"status": "ok"})
    assert await api.call("GET", "/readyz") == (200, {"status": "ready"})


async def test_pagination_walks_every_organisation_once(api):
    ids = []
    for i, legal in enumerate(
        ["2120000787", "5560360793", "2021005489", "5567037485", "5560125790"]
    ):
        ids.append((await api.org(f"u{i}@example.com", legal_id=legal))["id"])
    seen, cursor = [], None
    while True:
        path = "/orgs?limit=2" + (f"&cursor={cursor}" if cursor else "")
        status, page = await api.call("GET", path, as_="root@example.com", superadmin=True)
        assert status == 200 and len(page["items"]) <= 2
        seen += [o["id"] for o in page["items"]]
        cursor = page["nextCursor"]
        if cursor is None:
            break
    operator = "00000000-0000-4000-8000-000000000001"  # the operator's own organisation
    assert seen == [operator, *ids]


async def test_metrics_in_the_prometheus_text_format(api):
    await api.org(ALICE)
    await api.call("GET", "/users/me", as_=ALICE)
    await api.call("GET", "/nowhere")
    resp = await api.client.get("/metrics")
    text = await resp.text()
    assert resp.status == 200 and resp.content_type == "text/plain"
    assert 'fourcorner_http_requests_total{method="GET",route="/users/me",status="200"} 1.0' in text
    assert 'fourcorner_http_requests_total{method="POST",route="/orgs",status="201"} 1.0' in text
    assert 'route="(unmatched)",status="404"' in text
    assert "fourcorner_http_request_duration_seconds_bucket" in text
    assert 'fourcorner_queue_depth{queue="transactions_to_send"} 0.0' in text
    assert 'fourcorner_queue_depth{queue="webhook_deliveries"} 0.0' in text


METRICS_TOKEN = "scrape-0123456789abcdef"


@pytest.mark.parametrize(
    "sent",
    [
        None,
        "Bearer",
        f"Basic {METRICS_TOKEN}",
        f"Bearer {METRICS_TOKEN}x",
        f"Bearer {METRICS_TOKEN[:-1]}",
        "Bearer \udcff",
    ],
)
async def test_with_a_metrics_token_a_scrape_without_it_is_401(start_api, sent):
    api = await start_api("sqlite", metrics_token=METRICS_TOKEN)
    headers = (
        {}
        if sent is None
        else {"Authorization": sent.encode("utf-8", "surrogatepass").decode("latin-1")}
    )
    resp = await api.client.get("/metrics", headers=headers)
    body = await resp.json()
    assert resp.status == 401 and body["code"] == "AT-1018"
    assert "fourcorner_" not in json.dumps(body)
    ok = await api.client.get("/metrics", headers={"Authorization": f"Bearer {METRICS_TOKEN}"})
    assert ok.status == 200 and "fourcorner_queue_depth" in await ok.text()
    # another credential of the API is no metrics token
    status, _ = await api.call("GET", "/users/me", as_=ALICE)
    assert status == 200


async def test_a_scrape_with_two_authorization_headers_is_401_whichever_is_the_token(start_api):
    """As the API refuses more than one credential: of two headers, a proxy in front may have
    checked the one not used."""
    api = await start_api("sqlite", metrics_token=METRICS_TOKEN)
    right, other = f"Bearer {METRICS_TOKEN}", "Bearer not-the-token"
    for pair in ((right, other), (other, right), (right, right)):
        headers = multidict.CIMultiDict([("Authorization", pair[0]), ("Authorization", pair[1])])
        resp = await api.client.get("/metrics", headers=headers)
        assert resp.status == 401 and (await resp.json())["code"] == "AT-1018", pair
    ok = await api.client.get("/metrics", headers={"Authorization": right})
    assert ok.status == 200


async def test_wrong_metrics_tokens_are_throttled_per_address(start_api):
    api = await start_api("sqlite", metrics_token=METRICS_TOKEN, auth_failure_limit=3)
    wrong = {"Authorization": "Bearer not-the-token-at-all"}
    statuses = [(await api.client.get("/metrics", headers=wrong)).status for _ in range(4)]
    assert statuses == [401, 401, 401, 429]
    # refused before the token is looked at, the right one included, until the window passes
    right = {"Authorization": f"Bearer {METRICS_TOKEN}"}
    assert (await api.client.get("/metrics", headers=right)).status == 429


async def test_queue_depths_are_read_at_most_once_a_second_however_often_scraped(
    start_api, monkeypatch
):
    import types

    from fourcorner.application import gauges
    from fourcorner.entrypoints.http import metrics

    api = await start_api("sqlite")
    now = [1000.0]  # the metrics module's clock alone (asyncio's own keeps running)
    monkeypatch.setattr(metrics, "time", types.SimpleNamespace(monotonic=lambda: now[0]))
    reads = 0
    real = gauges.read

    async def counted(ctx):
        nonlocal reads
        reads += 1
        return await real(ctx)

    monkeypatch.setattr(gauges, "read", counted)
    for _ in range(20):
        assert (await api.client.get("/metrics")).status == 200
    assert reads == 1
    now[0] += metrics.GAUGE_SECONDS  # a second later the depths are read again
    assert (await api.client.get("/metrics")).status == 200
    assert reads == 2


@pytest.mark.parametrize(
    ("method", "path", "allow"),
    [
        ("DELETE", "/orgs", "GET, HEAD, POST"),
        ("TRACE", "/orgs", "GET, HEAD, POST"),
        ("TRACE", "/users/me", "GET, HEAD"),
        ("PATCH", "/orgs/{org}", "GET, HEAD, PUT"),
        ("GET", "/orgs/{org}/members/approve", "PUT"),
        ("DELETE", "/orgs/{org}/members/reject", "PUT"),
        ("PUT", "/orgs/{org}/members/pending", "GET, HEAD"),
        ("GET", "/orgs/{org}/participants/batch-delete", "POST"),
        ("GET", "/orgs/{org}/webhooks/trigger-test-event", "POST"),
        ("PUT", "/orgs/{org}/transactions/upload_url", "GET, HEAD"),
        ("GET", "/users/batch-delete", "POST"),
        ("POST", "/openapi.json", "GET, HEAD"),
    ],
)
async def test_a_known_path_with_another_method_is_405_with_allow(api, method, path, allow):
    """Literal sub-paths (``members/approve``) are never read as an id of the path beside them
    (``members/{memberId}``): their other methods are 405, not 400 "not a UUID"."""
    org = await api.org(ALICE)
    resp = await api.client.request(
        method,
        path.format(org=org["id"]),
        headers={"Authorization": f"Bearer {api.token(ALICE)}"},
    )
    body = await resp.json()
    assert resp.status == 405 and body["code"] == "AT-1042", body
    assert resp.headers["Allow"] == allow


async def test_literal_sub_paths_still_serve_their_own_methods(api):
    org = await api.org(ALICE)
    status, body = await api.call(
        "PUT", f"/orgs/{org['id']}/members/approve", as_=ALICE, json={"ids": []}
    )
    assert status == 200 and body == {"ids": []}
    status, body = await api.call("GET", f"/orgs/{org['id']}/members/pending", as_=ALICE)
    assert status == 200 and body["items"] == []
    status, body = await api.call("GET", f"/orgs/{org['id']}/members/not-a-uuid", as_=ALICE)
    assert status == 400 and body["code"] == "AT-1001"  # a real id slot keeps its check


@pytest.mark.parametrize(
    ("method", "path", "body", "field"),
    [
        ("POST", "/users/{uid}/join_org", {"orgId": "nope"}, "$.orgId"),
        ("POST", "/users/{uid}/leave_org", {"orgId": 7}, "$.orgId"),
        ("PUT", "/orgs/{org}/members/approve", {"ids": ["{org}", "nope"]}, "$.ids[1]"),
        ("POST", "/orgs/{org}/participants/batch-delete", {"ids": ["nope"]}, "$.ids[0]"),
        ("POST", "/orgs/{org}/webhooks/batch-delete", {"ids": [1]}, "$.ids[0]"),
        ("POST", "/orgs/{org}/webhooks/trigger-test-event", {"event": "x.y"}, "$.event"),
        ("POST", "/orgs/{org}/webhooks/trigger-test-event", {"eventType": "x.y"}, "$.eventType"),
    ],
)
async def test_details_name_the_field_of_the_request(api, method, path, body, field):
    org = await api.org(ALICE)
    me = await api.me(ALICE)
    fill = {"org": org["id"], "uid": me["id"]}
    sent = {
        k: [v.format(**fill) if isinstance(v, str) else v for v in vs]
        if isinstance(vs, list)
        else vs
        for k, vs in body.items()
    }
    status, err = await api.call(method, path.format(**fill), as_=ALICE, json=sent)
    assert status == 400 and err["code"] == "AT-1001", err
    assert [d["field"] for d in err["details"]] == [field]


async def test_head_answers_where_get_does_without_a_body(api):
    org = await api.org(ALICE)
    auth = {"Authorization": f"Bearer {api.token(ALICE)}"}
    for path, headers in (
        ("/healthz", {}),
        ("/users/me", auth),
        (f"/orgs/{org['id']}", auth),
        ("/openapi.json", {}),
    ):
        got = await api.client.get(path, headers=headers)
        head = await api.client.head(path, headers=headers)
        assert head.status == got.status == 200, path
        assert head.headers["Content-Type"] == got.headers["Content-Type"], path
        assert await head.read() == b"", path
    # the same refusals as a GET: no credentials, no such route
    assert (await api.client.head("/users/me")).status == 401
    assert (await api.client.head("/no/such/route")).status == 404
    # a path without GET has no HEAD either
    resp = await api.client.head(f"/orgs/{org['id']}/participants/batch-delete", headers=auth)
    assert resp.status == 405 and resp.headers["Allow"] == "POST"


async def test_error_answers_quote_a_large_input_only_in_part(api):
    org = await api.org(ALICE)
    auth = {"Authorization": f"Bearer {api.token(ALICE)}"}
    big = "k" * 5000
    answers = [
        await api.client.get("/constants", params={"key": big}, headers=auth),
        await api.client.get(f"/orgs/{org['id']}/participants/{big}", headers=auth),
        await api.client.get(f"/{big}", headers=auth),
        await api.client.get(
            f"/orgs/{org['id']}/participants", params={"filter": big}, headers=auth
        ),
        await api.client.put(f"/orgs/{org['id']}", json={big: 1}, headers=auth),
        await api.client.put(
            f"/orgs/{org['id']}", json={"modeChangeRequest": "B" * 200}, headers=auth
        ),
        await api.client.post(
            "/orgs",
            json={
                "legalIdentifier": "1" * 200,
                "legalName": "X",
                "countryCode": "SE",
                "legalIdentifierCode": "SE:ORGNR",
            },
            headers=auth,
        ),
    ]
    for resp in answers:
        body = await resp.json()
        assert 400 <= resp.status < 500, body
        texts = [body["error"]] + [t for d in body.get("details", []) for t in d.values()]
        assert all(len(t) <= 500 for t in texts), body
        assert not any("k" * 100 in t or "1" * 100 in t or "B" * 100 in t for t in texts), body
