"""The OpenAPI document lists exactly the routes that are served."""

import pytest
from openapi_spec_validator import OpenAPIV31SpecValidator

from fourcorner.entrypoints.http import errors, openapi
from fourcorner.entrypoints.http.routes import routes


async def test_every_served_route_is_documented_and_every_documented_route_is_served(api):
    status, doc = await api.call("GET", "/openapi.json")
    assert status == 200 and doc["openapi"].startswith("3.1")
    documented = {(m.upper(), p) for p, ops in doc["paths"].items() for m in ops}
    served = set()
    for resource in api.client.app.router.resources():
        info = resource.get_info()
        path = info.get("path") or info.get("formatter")
        for route in resource:
            # "*": every other method on a known path, refused with 405 and Allow
            if route.method not in ("HEAD", "*") and path != "/openapi.json":
                served.add((route.method, path))
    assert documented == served
    assert documented == {(r.method, r.path) for r in routes()}


async def test_the_document_is_valid_openapi_3_1(api):
    _, doc = await api.call("GET", "/openapi.json")
    problems = [e.message for e in OpenAPIV31SpecValidator(doc).iter_errors()]
    assert problems == []


async def test_every_operation_has_a_summary_a_description_and_its_error_codes(api):
    _, doc = await api.call("GET", "/openapi.json")
    known = {c.code: c for c in errors.catalogue()}
    for path, ops in doc["paths"].items():
        for method, op in ops.items():
            assert op["summary"] and len(op["summary"]) < len(op["description"]), (method, path)
            codes = op["x-error-codes"]
            assert set(codes) <= known.keys(), (method, path)
            for code in codes:  # each code is in the description and under its status
                assert f"`{code}`" in op["description"], (method, path, code)
                assert any(code in answer["description"] for answer in op["responses"].values())
            # the errors' statuses (not a success, nor the SMP's 304 Not Modified)
            statuses = {s for s in op["responses"] if not s.startswith(("2", "304"))}
            assert statuses == {str(openapi.status_of(known[c].kind)) for c in codes}


async def test_document_uploads_have_their_bodies(api):
    _, doc = await api.call("GET", "/openapi.json")
    for path, method in (
        ("/orgs/{orgId}/transactions", "post"),
        ("/uploads/{token}", "put"),
        ("/validation", "post"),
    ):
        content = doc["paths"][path][method]["requestBody"]["content"]
        assert {"application/xml", "text/xml", "multipart/form-data"} == content.keys()
        assert content["multipart/form-data"]["schema"]["required"] == ["file"]


async def test_enums_are_the_values_the_server_takes(api):
    _, doc = await api.call("GET", "/openapi.json")
    schemas = doc["components"]["schemas"]
    org_roles = {"orgadmin", "orgmember"}
    for name in ("CreateMember", "UpdateMember", "CreateApiKey", "Member", "ApiKey"):
        role = schemas[name]["properties"]["role"]
        assert set(role.get("enum") or role["anyOf"][0]["enum"]) == org_roles, name
    mode = schemas["UpdateOrganisation"]["properties"]["modeChangeRequest"]["anyOf"][0]
    assert set(mode["enum"]) == {"WHITELABEL", "SHARED"}
    statuses = schemas["Transaction"]["properties"]["transactionStatus"]["enum"]
    assert set(statuses) == {"UNPROCESSED", "PROCESSING", "COMPLETED", "FAILED", "REJECTED"}
    _, constants = await api.call("GET", "/constants?key=WEBHOOK_EVENTS", as_="a@example.com")
    for name in ("CreateWebhook", "Webhook"):
        events = schemas[name]["properties"]["events"]["items"]["enum"]
        assert events == constants["values"], name


async def test_the_smp_environments_documented_are_the_ones_served(api):
    """The SMP's {environment} was any string: a client (or schemathesis) reading the
    document could not learn that only 'test' and 'prod' are served."""
    _, doc = await api.call("GET", "/openapi.json")
    for path, item in doc["paths"].items():
        if "{environment}" not in path:
            continue
        [param] = [p for p in item["get"]["parameters"] if p["name"] == "environment"]
        assert param["schema"]["enum"] == ["test", "prod"], path
    for environment, served in (("test", True), ("prod", True), ("TEST", False), ("x", False)):
        resp = await api.client.get(f"/smp/{environment}/iso6523-actorid-upis::0088:1")
        body = await resp.json()
        assert resp.status in (400, 404) and ("No SMP" not in body["error"]) is served, body


async def test_error_codes_are_documented(api):
    _, doc = await api.call("GET", "/openapi.json")
    for code in ("AT-1018", "AT-1120", "AT-1001"):
        assert code in doc["info"]["description"]
    op = doc["paths"]["/orgs/{orgId}"]["put"]
    assert "AT-1120" in op["description"] and "422" in op["responses"]


async def test_the_docs_page_renders_the_document_from_packaged_assets(api):
    resp = await api.client.get("/docs")
    page = await resp.text()
    assert resp.status == 200 and resp.content_type == "text/html"
    assert "/openapi.json" in page and "https://" not in page  # no CDN
    for asset in ("/docs/static/swagger-ui-bundle.js", "/docs/static/swagger-ui.css"):
        assert asset in page
        served = await api.client.get(asset)
        assert served.status == 200 and len(await served.read()) > 10_000
    assert (await api.client.get("/docs/static/..%2Fpyproject.toml")).status == 404
    assert (await api.client.get("/docs/static/LICENSE")).status == 404


async def test_a_browser_lists_the_operations(api, tmp_path):
    """Headless Chromium loads /docs, runs Swagger UI and shows the operations."""
    import asyncio
    import os
    import shutil

    browser = shutil.which("chromium")
    if browser is None:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail("chromium is not installed (make test installs Debian's chromium)")
        pytest.skip("chromium is not installed: apt-get install chromium")
    url = str(api.client.make_url("/docs"))
    proc = await asyncio.create_subprocess_exec(
        browser,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        f"--user-data-dir={tmp_path / 'chromium'}",
        "--virtual-time-budget=15000",
        "--dump-dom",
        url,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL,
    )
    dom = (await asyncio.wait_for(proc.communicate(), 90))[0].decode()
    assert "swagger-ui" in dom
    for shown in ("/orgs/{orgId}/participants", "/document_types", "Create an organisation"):
        assert shown in dom, shown


async def test_an_operation_only_a_person_may_call_says_so(api):
    """The routes that refuse an API key (``Route.user_only``) say it in their description,
    and no other route does."""
    _, doc = await api.call("GET", "/openapi.json")
    saying = {
        (method.upper(), path)
        for path, ops in doc["paths"].items()
        for method, op in ops.items()
        if "A user's token only: an API key is refused (`AT-1022`)." in op["description"]
    }
    assert saying == {(r.method, r.path) for r in routes() if r.user_only}
    assert ("POST", "/orgs/{orgId}/api_keys") in saying
