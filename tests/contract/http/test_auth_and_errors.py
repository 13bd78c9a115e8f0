"""Authentication failures, error shapes, and bad input that changes nothing."""

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
    from adapters.auth import LocalTokenAuthority

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
    resp = await api.client.get("/healthz")
    assert len(resp.headers["X-Request-Id"]) == 32


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
