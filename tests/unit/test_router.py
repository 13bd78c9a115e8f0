"""The app's router keeps what a method and path resolved to: a path asked for again is not
walked through aiohttp's resources, resolves to the same route with the same path values, and
what is kept stays bounded and follows the resources added."""

from __future__ import annotations

from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import make_mocked_request

from fourcorner.entrypoints.http.app import _Router


async def _ok(request: web.Request) -> web.StreamResponse:
    return web.Response()


def _router() -> _Router:
    router = _Router()
    router.add_resource("/orgs").add_route("GET", _ok)
    org = router.add_resource("/orgs/{orgId}")
    org.add_route("GET", _ok)
    org.add_route("*", _ok)
    router.unmatched = router.add_resource(r"/{path:[\s\S]*}").add_route("*", _ok)
    return router


def _walks(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The paths aiohttp's own resolution is asked for."""
    walked: list[str] = []
    resolve = web.UrlDispatcher.resolve

    async def counted(self: web.UrlDispatcher, request: web.Request) -> Any:
        walked.append(request.path)
        return await resolve(self, request)

    monkeypatch.setattr(web.UrlDispatcher, "resolve", counted)
    return walked


async def test_a_path_asked_for_again_is_not_walked(monkeypatch: pytest.MonkeyPatch) -> None:
    walked = _walks(monkeypatch)
    router = _router()
    first = await router.resolve(make_mocked_request("GET", "/orgs/abc"))
    again = await router.resolve(make_mocked_request("GET", "/orgs/abc"))
    other = await router.resolve(make_mocked_request("GET", "/orgs/def"))
    assert walked == ["/orgs/abc", "/orgs/def"]
    assert again.route is first.route and dict(again) == dict(first) == {"orgId": "abc"}
    assert dict(other) == {"orgId": "def"}
    assert again is not first  # a match info of its own: aiohttp adds the app and freezes it


async def test_the_method_is_part_of_what_is_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    walked = _walks(monkeypatch)
    router = _router()
    get = await router.resolve(make_mocked_request("GET", "/orgs/abc"))
    post = await router.resolve(make_mocked_request("POST", "/orgs/abc"))
    assert post.route is not get.route and post.route.method == "*"
    assert (await router.resolve(make_mocked_request("POST", "/orgs/abc"))).route is post.route
    assert walked == ["/orgs/abc", "/orgs/abc"]


async def test_an_unmatched_target_goes_to_unmatched_and_is_not_kept(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Paths no API route matches, and long ones, are anyone's choice before authentication:
    none is kept, so they neither fill memory nor push the API's paths out."""
    walked = _walks(monkeypatch)
    router = _router()
    for _ in range(2):
        found = await router.resolve(make_mocked_request("OPTIONS", "*"))
        assert found.route is router.unmatched and dict(found) == {}
        other = await router.resolve(make_mocked_request("GET", "/nothing/here"))
        assert other.route is router.unmatched
    long = "/orgs/" + "a" * _Router.KEPT_PATH
    for _ in range(2):
        assert dict(await router.resolve(make_mocked_request("GET", long))) == {"orgId": long[6:]}
    assert walked == ["*", "/nothing/here"] * 2 + [long] * 2
    assert router._resolved == {}


async def test_kept_answers_are_bounded_and_follow_new_resources(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    walked = _walks(monkeypatch)
    router = _router()
    monkeypatch.setattr(_Router, "KEPT", 2)
    for path in ("/orgs/a", "/orgs/b", "/orgs/c", "/orgs/a"):
        await router.resolve(make_mocked_request("GET", path))
    assert walked == ["/orgs/a", "/orgs/b", "/orgs/c", "/orgs/a"]  # full at the third
    assert len(router._resolved) <= 2
    router.add_resource("/orgs/{orgId}/members").add_route("GET", _ok)
    await router.resolve(make_mocked_request("GET", "/orgs/a"))
    assert walked[-1] == "/orgs/a" and len(walked) == 5
