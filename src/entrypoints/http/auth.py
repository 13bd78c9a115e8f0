"""Turning a request's credentials into a principal: a bearer token or an ``X-Api-Key``."""

from __future__ import annotations

import uuid

from aiohttp import web

from application import api_keys, users
from application.access import Principal, authorise
from application.context import Context
from application.identity import TokenVerifier
from domain.errors import Unauthorised
from domain.roles import Role


class Authenticator:
    """Verified tokens are remembered by the verifier (``CachingTokenVerifier``); the user
    record and memberships are read through ``Context.reads()``, whose cache a commit clears."""

    def __init__(self, ctx: Context, verifier: TokenVerifier) -> None:
        self._ctx = ctx
        self._verifier = verifier

    async def __call__(self, request: web.Request) -> Principal:
        header = request.headers.get("Authorization")
        if header is not None:
            scheme, _, token = header.partition(" ")
            token = token.strip()
            if scheme.lower() != "bearer" or not token:
                raise Unauthorised(reason="the Authorization header is not 'Bearer <token>'")
            identity = await self._verifier.verify(token)
            return Principal(user=await users.sign_in(self._ctx, identity))
        key = request.headers.get("X-Api-Key")
        if key is not None:
            return await api_keys.authenticate(self._ctx, key.strip())
        raise Unauthorised(
            reason="no credentials: send 'Authorization: Bearer <token>' or 'X-Api-Key: <key>'"
        )

    async def check(self, principal: Principal, org_id: uuid.UUID, role: Role) -> None:
        """Whether ``principal`` holds ``role`` in ``org_id``; raises 403/404 errors if not."""
        async with self._ctx.reads() as uow:
            await authorise(uow, principal, org_id, role)
