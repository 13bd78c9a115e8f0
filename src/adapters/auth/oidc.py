"""Verifies tokens of an external OpenID Connect provider against its published keys (JWKS).

The JWKS is fetched with aiohttp, kept for ``jwks_ttl`` seconds, and fetched again early when a
token names a key id (``kid``) the cached set lacks, at most once every ten seconds. A failed
fetch is also remembered for ten seconds, so a provider that is down is not asked on every
request. Every refusal, including "the keys cannot be fetched", is ``Unauthorised`` (AT-1018).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import aiohttp
import jwt

from fourcorner.adapters.answer import AnswerTooLarge, read_capped
from fourcorner.adapters.auth.claim import (
    Clock,
    check_times,
    compact,
    decode_options,
    issued_at,
    now_from,
    refusal,
    required_text,
    system_clock,
    text_claim,
)
from fourcorner.application.identity import Identity
from fourcorner.domain.errors import Unauthorised

FETCH_TIMEOUT_SECONDS = 5.0
MIN_REFETCH_SECONDS = 10.0
MAX_JWKS_BYTES = 1 << 20

# The algorithms a verifier may be configured with, and the key each needs (kty, crv).
_KEY_KINDS: dict[str, tuple[str, str | None]] = {
    "RS256": ("RSA", None),
    "RS384": ("RSA", None),
    "RS512": ("RSA", None),
    "PS256": ("RSA", None),
    "PS384": ("RSA", None),
    "PS512": ("RSA", None),
    "ES256": ("EC", "P-256"),
    "ES384": ("EC", "P-384"),
    "ES512": ("EC", "P-521"),
}

_KEYS_UNAVAILABLE = "the identity provider's keys cannot be fetched"

SessionFactory = Callable[[], aiohttp.ClientSession]
# kid (None for a key without one) -> algorithm -> key bound to that algorithm
KeySet = dict[str | None, dict[str, jwt.PyJWK]]


class _FetchFailed(Exception):
    pass


def _default_session() -> aiohttp.ClientSession:
    return aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=FETCH_TIMEOUT_SECONDS))


def _claim_at(claims: Mapping[str, Any], name: str) -> Any:
    """A claim by name; a dotted name that is not a claim itself walks nested objects
    (``realm_access.roles``)."""
    if name in claims:
        return claims[name]
    value: Any = claims
    for part in name.split("."):
        if not isinstance(value, Mapping) or part not in value:
            return None
        value = value[part]
    return value


def parse_jwks(document: Any, algorithms: Iterable[str]) -> KeySet:
    """The signing keys of a JWKS document usable with ``algorithms``; others are skipped."""
    if not isinstance(document, Mapping) or not isinstance(document.get("keys"), list):
        raise _FetchFailed("the document is not a JWK set")
    keys: KeySet = {}
    for jwk_data in document["keys"]:
        if not isinstance(jwk_data, dict) or jwk_data.get("use", "sig") != "sig":
            continue
        kid = jwk_data.get("kid")
        if kid is not None and not isinstance(kid, str):
            continue
        declared = jwk_data.get("alg")
        for alg in algorithms:
            kty, crv = _KEY_KINDS[alg]
            if jwk_data.get("kty") != kty or (crv is not None and jwk_data.get("crv") != crv):
                continue
            if declared is not None and declared != alg:
                continue
            try:
                keys.setdefault(kid, {})[alg] = jwt.PyJWK(jwk_data, algorithm=alg)
            except jwt.PyJWTError:
                continue
    return {kid: by_alg for kid, by_alg in keys.items() if by_alg}


class OidcTokenVerifier:
    """Satisfies ``application.identity.TokenVerifier`` for ``FOURCORNER_AUTH_MODE=oidc``.

    The aiohttp session is created on first use, from ``session_factory`` when given, and is
    owned by the verifier: ``aclose()`` closes it.
    """

    def __init__(
        self,
        issuer: str,
        audience: str,
        jwks_url: str,
        *,
        algorithms: Iterable[str] = ("RS256", "ES256"),
        superadmin_claim: str = "roles",
        superadmin_value: str = "superadmin",
        session_factory: SessionFactory | None = None,
        jwks_ttl: float = 300.0,
        clock: Clock | None = None,
    ) -> None:
        chosen = tuple(dict.fromkeys(algorithms))
        unsupported = [alg for alg in chosen if alg not in _KEY_KINDS]
        if unsupported or not chosen:
            raise ValueError(
                f"unsupported token algorithms {unsupported}; choose from {sorted(_KEY_KINDS)}"
            )
        self._issuer = issuer
        self._audience = audience
        self._jwks_url = jwks_url
        self._algorithms = chosen
        self._superadmin_claim = superadmin_claim
        self._superadmin_value = superadmin_value
        self._session_factory: SessionFactory = session_factory or _default_session
        self._session: aiohttp.ClientSession | None = None
        self._jwks_ttl = jwks_ttl
        self._clock: Clock = clock or system_clock
        self._lock = asyncio.Lock()
        self._keys: KeySet | None = None
        self._fetched_at = 0.0
        self._attempted_at: float | None = None
        self._last_failed = False

    async def aclose(self) -> None:
        session, self._session = self._session, None
        if session is not None and not session.closed:
            await session.close()

    async def verify(self, token: str) -> Identity:
        token = compact(token)
        try:
            header = jwt.get_unverified_header(token)
        except jwt.PyJWTError as e:
            raise refusal(e) from e
        alg = header.get("alg")
        if alg not in self._algorithms:
            raise Unauthorised(reason="the token's signing algorithm is not accepted")
        kid = header.get("kid")
        if kid is not None and not isinstance(kid, str):
            raise Unauthorised(reason="the token's key id (kid) is not valid")
        key = await self._key_for(kid, alg)
        try:
            claims: dict[str, Any] = jwt.decode(
                token,
                key,
                algorithms=[alg],
                audience=self._audience,
                issuer=self._issuer,
                options=decode_options(["iss", "aud", "sub", "exp"]),
            )
        except jwt.PyJWTError as e:
            raise refusal(e) from e
        expires_at = check_times(claims, now_from(self._clock))
        return Identity(
            subject=required_text(claims, "sub"),
            email=text_claim(claims, "email") or text_claim(claims, "preferred_username"),
            name=text_claim(claims, "name"),
            email_verified=bool(text_claim(claims, "email"))
            and claims.get("email_verified") is True,
            superadmin=self._is_superadmin(claims),
            expires_at=expires_at,
            issuer=self._issuer,
            issued_at=issued_at(claims),
        )

    def _is_superadmin(self, claims: Mapping[str, Any]) -> bool:
        value = _claim_at(claims, self._superadmin_claim)
        if isinstance(value, str):
            return value == self._superadmin_value
        if isinstance(value, list):
            return self._superadmin_value in value
        return False

    # --- keys -------------------------------------------------------------------------------

    def _now(self) -> float:
        return now_from(self._clock).timestamp()

    def _fresh(self, now: float) -> bool:
        return self._keys is not None and 0.0 <= now - self._fetched_at < self._jwks_ttl

    def _may_refetch(self, now: float) -> bool:
        if self._attempted_at is None:
            return True
        since = now - self._attempted_at
        return since < 0.0 or since >= MIN_REFETCH_SECONDS

    async def _key_for(self, kid: str | None, alg: str) -> jwt.PyJWK:
        if not self._fresh(self._now()):
            await self._refresh(force=False)
        keys = self._keys or {}
        if kid is None and len(keys) == 1:
            kid = next(iter(keys))
        if kid not in keys and self._may_refetch(self._now()):
            await self._refresh(force=True)
            keys = self._keys or {}
        by_alg = keys.get(kid)
        if by_alg is None:
            if kid is None:
                raise Unauthorised(reason="the token does not name its signing key (kid)")
            raise Unauthorised(reason="the token's signing key is not one of the provider's keys")
        key = by_alg.get(alg)
        if key is None:
            raise Unauthorised(reason="the token's signing algorithm does not match its key")
        return key

    async def _refresh(self, *, force: bool) -> None:
        """Fetch the JWKS; afterwards fresh keys are cached or ``Unauthorised`` is raised.

        ``force`` asks for a fetch although the cached keys are fresh (an unknown ``kid``); a
        failure then keeps the cached keys.
        """
        seen = self._attempted_at
        async with self._lock:
            now = self._now()
            if self._attempted_at != seen:
                # Another request fetched while this one waited: use its outcome.
                if self._fresh(now):
                    return
                raise Unauthorised(reason=_KEYS_UNAVAILABLE)
            if not force and self._fresh(now):
                return
            if self._last_failed and not self._may_refetch(now) and not self._fresh(now):
                raise Unauthorised(reason=_KEYS_UNAVAILABLE)
            self._attempted_at = now
            try:
                keys = await self._download()
            except _FetchFailed as e:
                self._last_failed = True
                if force and self._fresh(now):
                    return
                raise Unauthorised(reason=_KEYS_UNAVAILABLE) from e
            self._keys = keys
            self._fetched_at = now
            self._last_failed = False

    async def _download(self) -> KeySet:
        if self._session is None or self._session.closed:
            self._session = self._session_factory()
        try:
            async with self._session.get(
                self._jwks_url,
                headers={"Accept": "application/json"},
                timeout=aiohttp.ClientTimeout(total=FETCH_TIMEOUT_SECONDS),
                allow_redirects=False,  # the configured URL answers, or no key is trusted
            ) as response:
                if response.status != 200:
                    raise _FetchFailed(f"the JWKS endpoint answered {response.status}")
                body = await read_capped(response, MAX_JWKS_BYTES)
            document = json.loads(body)
        except AnswerTooLarge as e:
            raise _FetchFailed(f"the JWKS document is too large: {e}") from e
        except (aiohttp.ClientError, TimeoutError, ValueError) as e:
            raise _FetchFailed(str(e)) from e
        return parse_jwks(document, self._algorithms)

    def __repr__(self) -> str:
        return f"OidcTokenVerifier(issuer={self._issuer!r}, jwks_url={self._jwks_url!r})"
