"""Turning a request's credentials into a principal: a bearer token or an ``X-Api-Key``.

Failed attempts are counted per client address and per API key prefix (``throttle``). A
client address over its allowance gets 429 before its credentials are looked at. A prefix over
its allowance refuses only keys that fail: the key is checked first, and one whose hash matches
is served, so wrong keys sent with a victim's prefix (shown in ``GET .../api_keys``) from one
address lock no one else out; guessing stays bounded by the address count, which every failure
adds to, whatever its prefix.
"""

from __future__ import annotations

import hashlib
import uuid
from datetime import datetime

from aiohttp import web

from fourcorner.application import api_keys, users
from fourcorner.application.access import Principal, authorise
from fourcorner.application.context import Context
from fourcorner.application.identity import TokenVerifier
from fourcorner.domain import api_key
from fourcorner.domain.clock import utc
from fourcorner.domain.errors import TooManyFailedAttempts, Unauthorised
from fourcorner.domain.roles import Role
from fourcorner.entrypoints.http.memo import StampedMemo
from fourcorner.entrypoints.http.proxy import client_address
from fourcorner.entrypoints.http.routing import KEPT_UNDER
from fourcorner.entrypoints.http.throttle import FailureTracker, address_key, prefix_key


class Authenticator:
    """Verified tokens are remembered by the verifier (``CachingTokenVerifier``); the user
    record and memberships are read through ``Context.reads()``, whose cache a commit clears.

    The principal a credential (the bearer token or the API key, as sent; filed under its
    BLAKE2b digest, ``KEPT_UNDER``, which the kept answers use too) came to is kept
    (``StampedMemo``) while the storage's ``read_stamp`` stays the one taken before its reads:
    a commit that changes a user, a membership, an organisation or an API key (a deletion, a
    revocation, a role change, an invitation) drops every entry. An entry also ends with its
    token's ``exp`` or its key's ``expires``, checked on every use against the service's
    clock; a token that does not say when it expires, or a refused credential, is not kept.
    The address's count is consulted before the memo, as before credentials are looked at; a
    key prefix's only once the key has failed."""

    def __init__(
        self, ctx: Context, verifier: TokenVerifier, throttle: FailureTracker | None = None
    ) -> None:
        self._ctx = ctx
        self._verifier = verifier
        self._throttle = FailureTracker(0, 1.0) if throttle is None else throttle
        # digest of the credential -> (principal, expires_at: None for a key, whose record says)
        self._known: StampedMemo[str, tuple[Principal, datetime | None]] = StampedMemo()

    async def __call__(self, request: web.Request) -> Principal:
        headers = request.headers.getall("Authorization", ())
        keys = request.headers.getall("X-Api-Key", ())
        if len(headers) + len(keys) != 1:
            # of two, a proxy in front may have checked the one this would not use
            what = "no credentials" if not headers and not keys else "more than one credential"
            raise Unauthorised(
                reason=f"{what}: send 'Authorization: Bearer <token>' or 'X-Api-Key: <key>'"
            )
        header = headers[0] if headers else None
        key = keys[0] if keys else None
        if key is not None:
            key = key.strip()
        counted: list[str] = []  # worked out only when some failure is remembered
        prefix_wait = 0
        if self._throttle.remembers_any():  # else no caller is over its allowance
            counted = _counted(request, key)
            wait = self._throttle.retry_after(counted[:1])
            if wait:
                raise TooManyFailedAttempts(retry_after=wait)
            prefix_wait = self._throttle.retry_after(counted[1:])
        sent = header if header is not None else "key:" + (key or "")
        # a header's bytes that are not UTF-8 come as lone surrogates: hashed as they are
        # BLAKE2b, 256 bits: half SHA-256's instructions on a bearer token of about 500
        # characters (no SHA extensions on the CPUs measured), as collision-resistant
        credential = hashlib.blake2b(
            sent.encode("utf-8", "surrogatepass"), digest_size=32
        ).hexdigest()
        stamp = self._ctx.read_stamp()
        request[KEPT_UNDER] = (credential, stamp)
        known = self._known.get(credential, stamp)
        if known is not None and _still_valid(*known, self._ctx.clock()):
            return known[0]
        try:
            if header is not None:
                principal, expires_at = await self._bearer(header)
            else:
                assert key is not None
                principal, expires_at = await api_keys.authenticate(self._ctx, key), None
        except Unauthorised as refused:
            self._throttle.failed(counted or _counted(request, key))
            if prefix_wait:  # the key's prefix is over its allowance: a guess, told to wait
                raise TooManyFailedAttempts(retry_after=prefix_wait) from refused
            raise
        if principal.key is not None or expires_at is not None:
            self._known.put(credential, (principal, expires_at), stamp)
        return principal

    async def _bearer(self, header: str) -> tuple[Principal, datetime | None]:
        scheme, _, token = header.partition(" ")
        token = token.strip()
        if scheme.lower() != "bearer" or not token:
            raise Unauthorised(reason="the Authorization header is not 'Bearer <token>'")
        identity = await self._verifier.verify(token)
        user = await users.sign_in(self._ctx, identity)
        expires_at = identity.expires_at
        return Principal(user=user), utc(expires_at) if expires_at is not None else None

    async def check(self, principal: Principal, org_id: uuid.UUID, role: Role) -> None:
        """Whether ``principal`` holds ``role`` in ``org_id``; raises 403/404 errors if not."""
        async with self._ctx.reads() as uow:
            await authorise(uow, principal, org_id, role)


def _counted(request: web.Request, key: str | None) -> list[str]:
    """What a failed attempt counts against: the client's address (behind a trusted proxy,
    the one it forwards: ``proxy``), first, then an API key's prefix."""
    counted = [address_key(client_address(request))]
    if key is not None:
        counted.append(prefix_key(api_key.prefix_of(key)))
    return counted


def _still_valid(principal: Principal, expires_at: datetime | None, now: datetime) -> bool:
    if principal.key is not None:
        return principal.key.usable_at(now)
    return expires_at is not None and now < expires_at
