"""Turning a request's credentials into a principal: a bearer token or an ``X-Api-Key``."""

from __future__ import annotations

import time
import uuid

from aiohttp import web

from application import api_keys, users
from application.access import Principal, authorise
from application.context import Context
from application.identity import Identity, TokenVerifier
from domain.errors import Unauthorised
from domain.roles import Role


class Authenticator:
    """``user_ttl``: how long a signed-in user is remembered by this process (seconds). Each
    request would otherwise read the user record again; the price is that a user deleted by a
    superadmin keeps reaching user-level endpoints for at most that long. Organisation
    endpoints check the membership in the database on every request regardless."""

    def __init__(self, ctx: Context, verifier: TokenVerifier, user_ttl: float = 2.0) -> None:
        self._ctx = ctx
        self._verifier = verifier
        self._ttl = user_ttl
        self._users: dict[Identity, tuple[float, Principal]] = {}

    async def __call__(self, request: web.Request) -> Principal:
        header = request.headers.get("Authorization")
        if header is not None:
            scheme, _, token = header.partition(" ")
            token = token.strip()
            if scheme.lower() != "bearer" or not token:
                raise Unauthorised(reason="the Authorization header is not 'Bearer <token>'")
            identity = await self._verifier.verify(token)
            now = time.monotonic()
            known = self._users.get(identity)
            if known is not None and known[0] > now:
                return known[1]
            principal = Principal(user=await users.sign_in(self._ctx, identity))
            if len(self._users) > 10_000:
                self._users.clear()
            self._users[identity] = (now + self._ttl, principal)
            return principal
        key = request.headers.get("X-Api-Key")
        if key is not None:
            return await api_keys.authenticate(self._ctx, key.strip())
        raise Unauthorised(
            reason="no credentials: send 'Authorization: Bearer <token>' or 'X-Api-Key: <key>'"
        )

    async def check(self, principal: Principal, org_id: uuid.UUID, role: Role) -> None:
        """Whether ``principal`` holds ``role`` in ``org_id``; raises 403/404 errors if not."""
        async with self._ctx.uow() as uow:
            await authorise(uow, principal, org_id, role)
