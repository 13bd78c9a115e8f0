"""A route marked ``user_only`` refuses an API key in the router, before its handler runs:
the handler is not trusted to check the caller itself (``POST /orgs``'s does, so an HTTP test
of it would pass without the router's check)."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

import cattrs
import pytest
from aiohttp.test_utils import make_mocked_request

from fourcorner.application.access import Principal
from fourcorner.domain.api_key import ApiKey
from fourcorner.domain.errors import Forbidden
from fourcorner.domain.organisation import UserRef
from fourcorner.domain.roles import Role
from fourcorner.domain.user import User
from fourcorner.entrypoints.http.routing import Reply, Req, Route, endpoint

NOW = datetime(2026, 3, 1, tzinfo=UTC)
USER = User("user-1", "ann@example.com", NOW, UserRef("user-1"), NOW, UserRef("user-1"))
KEY = ApiKey(
    id=uuid.UUID(int=1),
    org_id=uuid.UUID(int=2),
    name="ci",
    description="",
    expires=NOW + timedelta(days=30),
    is_active=True,
    role=Role.ORGADMIN,
    key_hash="",
    prefix="fck_000000",
    created_at=NOW,
    created_by=UserRef("user-1"),
    last_modified_at=NOW,
)


def _handle(principal: Principal, calls: list[Principal | None]):
    """The aiohttp handler of a ``user_only`` route whose own handler checks nothing and
    records each call, for a caller that authenticates as ``principal``."""

    async def unguarded(req: Req) -> Reply:
        calls.append(req.principal)
        return Reply(201, {"made": True})

    async def authenticate(_request: object) -> Principal:
        return principal

    route = Route(
        "POST", "/things", unguarded, "make a thing", Role.USER, "test", status=201, user_only=True
    )
    return endpoint(route, cattrs.Converter(), authenticate)


async def test_an_api_key_is_refused_before_the_handler_runs() -> None:
    calls: list[Principal | None] = []
    handle = _handle(Principal(key=KEY), calls)
    with pytest.raises(Forbidden):
        await handle(make_mocked_request("POST", "/things"))
    assert calls == []


async def test_a_user_reaches_the_handler() -> None:
    calls: list[Principal | None] = []
    user = Principal(user=USER)
    response = await _handle(user, calls)(make_mocked_request("POST", "/things"))
    assert response.status == 201
    assert calls == [user]
