"""The OpenAPI document lists exactly the routes that are served."""

from entrypoints.http.routes import routes


async def test_every_served_route_is_documented_and_every_documented_route_is_served(api):
    status, doc = await api.call("GET", "/openapi.json")
    assert status == 200 and doc["openapi"].startswith("3.1")
    documented = {(m.upper(), p) for p, ops in doc["paths"].items() for m in ops}
    served = set()
    for resource in api.client.app.router.resources():
        info = resource.get_info()
        path = info.get("path") or info.get("formatter")
        for route in resource:
            if route.method != "HEAD" and path != "/openapi.json":
                served.add((route.method, path))
    assert documented == served
    assert documented == {(r.method, r.path) for r in routes()}


async def test_error_codes_are_documented(api):
    _, doc = await api.call("GET", "/openapi.json")
    for code in ("AT-1018", "AT-1120", "AT-1001"):
        assert code in doc["info"]["description"]
    op = doc["paths"]["/orgs/{orgId}"]["put"]
    assert "AT-1120" in op["description"] and "422" in op["responses"]
