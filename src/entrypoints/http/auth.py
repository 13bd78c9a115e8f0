"""Turning a request's credentials into a principal: a bearer token or an ``X-Api-Key``.

Failed attempts are counted per client address and per API key prefix (``throttle``); a
caller over its allowance gets 429 before its credentials are looked at.
"""

from __future__ import annotations

import uuid

from aiohttp import web

from fourcorner.application import api_keys, users
from fourcorner.application.access import Principal, authorise
from fourcorner.application.context import Context
from fourcorner.application.identity import TokenVerifier
from fourcorner.domain import api_key
from fourcorner.domain.errors import TooManyFailedAttempts, Unauthorised
from fourcorner.domain.roles import Role
from fourcorner.entrypoints.http.throttle import FailureTracker, address_key, prefix_key


class Authenticator:
    """Verified tokens are remembered by the verifier (``CachingTokenVerifier``); the user
    record and memberships are read through ``Context.reads()``, whose cache a commit clears."""

    def __init__(
        self, ctx: Context, verifier: TokenVerifier, throttle: FailureTracker | None = None
    ) -> None:
        self._ctx = ctx
        self._verifier = verifier
        self._throttle = FailureTracker(0, 1.0) if throttle is None else throttle

    async def __call__(self, request: web.Request) -> Principal:
        header = request.headers.get("Authorization")
        key = request.headers.get("X-Api-Key") if header is None else None
        if header is None and key is None:
            raise Unauthorised(
                reason="no credentials: send 'Authorization: Bearer <token>' or 'X-Api-Key: <key>'"
            )
        counted = [address_key(request.remote)]
        if key is not None:
            key = key.strip()
            counted.append(prefix_key(api_key.prefix_of(key)))
        wait = self._throttle.retry_after(counted)
        if wait:
            raise TooManyFailedAttempts(retry_after=wait)
        try:
            if header is not None:
                return await self._bearer(header)
            assert key is not None
            return await api_keys.authenticate(self._ctx, key)
        except Unauthorised:
            self._throttle.failed(counted)
            raise

    async def _bearer(self, header: str) -> Principal:
        scheme, _, token = header.partition(" ")
        token = token.strip()
        if scheme.lower() != "bearer" or not token:
            raise Unauthorised(reason="the Authorization header is not 'Bearer <token>'")
        identity = await self._verifier.verify(token)
        return Principal(user=await users.sign_in(self._ctx, identity))

    async def check(self, principal: Principal, org_id: uuid.UUID, role: Role) -> None:
        """Whether ``principal`` holds ``role`` in ``org_id``; raises 403/404 errors if not."""
        async with self._ctx.reads() as uow:
            await authorise(uow, principal, org_id, role)
