"""The OIDC verifier against an identity provider's JWKS served by the test on 127.0.0.1."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import hmac
import json
import socket
from collections.abc import AsyncIterator, Callable, Coroutine
from datetime import UTC, datetime, timedelta
from typing import Any

import attrs
import jwt
import pytest
from aiohttp import web
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from jwt.algorithms import ECAlgorithm, RSAAlgorithm

from fourcorner.adapters.auth import CachingTokenVerifier, OidcTokenVerifier
from fourcorner.adapters.auth.oidc import MAX_JWKS_BYTES
from fourcorner.application.identity import Identity
from fourcorner.domain.errors import Unauthorised

ISSUER = "https://idp.example.test/realms/fourcorner"
AUDIENCE = "fourcorner-api"
START = datetime(2026, 1, 2, 10, 0, tzinfo=UTC)

ServerFactory = Callable[[web.Application], Coroutine[Any, Any, Any]]


class FakeClock:
    def __init__(self, now: datetime = START) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now

    def advance(self, **kwargs: float) -> None:
        self.now += timedelta(**kwargs)


@attrs.define
class SigningKey:
    kid: str
    alg: str
    private: rsa.RSAPrivateKey | ec.EllipticCurvePrivateKey

    def jwk(self, *, with_alg: bool = True) -> dict[str, Any]:
        public = self.private.public_key()
        data: dict[str, Any]
        if isinstance(public, rsa.RSAPublicKey):
            data = RSAAlgorithm.to_jwk(public, as_dict=True)
        else:
            data = ECAlgorithm.to_jwk(public, as_dict=True)
        data.update(kid=self.kid, use="sig")
        if with_alg:
            data["alg"] = self.alg
        return data

    def sign(self, clock: FakeClock, **overrides: Any) -> str:
        claims: dict[str, Any] = {
            "iss": ISSUER,
            "aud": AUDIENCE,
            "sub": "f2b6c1e0-1111-4222-8333-444455556666",
            "email": "ada@example.com",
            "name": "Ada Lovelace",
            "iat": int(clock.now.timestamp()),
            "nbf": int(clock.now.timestamp()),
            "exp": int((clock.now + timedelta(minutes=10)).timestamp()),
        }
        claims.update(overrides)
        claims = {k: v for k, v in claims.items() if v is not None}
        return jwt.encode(claims, self.private, algorithm=self.alg, headers={"kid": self.kid})


@attrs.define
class Keys:
    rsa: SigningKey
    ec: SigningKey
    outsider: SigningKey  # claims the RSA key's kid, but is not in the JWKS
    rotated: SigningKey  # published only after a key rotation


@pytest.fixture(scope="module")
def keys() -> Keys:
    rsa_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    return Keys(
        rsa=SigningKey("rsa-1", "RS256", rsa_key),
        ec=SigningKey("ec-1", "ES256", ec.generate_private_key(ec.SECP256R1())),
        outsider=SigningKey("rsa-1", "ES256", ec.generate_private_key(ec.SECP256R1())),
        rotated=SigningKey("ec-2", "ES256", ec.generate_private_key(ec.SECP256R1())),
    )


class Idp:
    """The identity provider's JWKS endpoint: what it serves can change during a test."""

    def __init__(self, published: list[dict[str, Any]]) -> None:
        self.published = published
        self.status = 200
        self.fetches = 0
        self.url = ""

    async def jwks(self, request: web.Request) -> web.Response:
        self.fetches += 1
        if self.status != 200:
            return web.Response(status=self.status, text="unavailable")
        return web.json_response({"keys": self.published})


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
async def idp(aiohttp_server: ServerFactory, keys: Keys) -> Idp:
    provider = Idp([keys.rsa.jwk(), keys.ec.jwk(with_alg=False)])
    app = web.Application()
    app.router.add_get("/jwks", provider.jwks)
    server = await aiohttp_server(app)
    provider.url = str(server.make_url("/jwks"))
    return provider


@pytest.fixture
async def make_verifier(
    idp: Idp, clock: FakeClock
) -> AsyncIterator[Callable[..., OidcTokenVerifier]]:
    made: list[OidcTokenVerifier] = []

    def make(**kwargs: Any) -> OidcTokenVerifier:
        kwargs.setdefault("jwks_url", idp.url)
        verifier = OidcTokenVerifier(ISSUER, AUDIENCE, clock=clock, **kwargs)
        made.append(verifier)
        return verifier

    yield make
    for verifier in made:
        await verifier.aclose()


@pytest.fixture
def verifier(make_verifier: Callable[..., OidcTokenVerifier]) -> OidcTokenVerifier:
    return make_verifier()


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def unsigned(header: dict[str, Any], claims: dict[str, Any]) -> str:
    return f"{b64url(json.dumps(header).encode())}.{b64url(json.dumps(claims).encode())}"


def claims_of(token: str) -> dict[str, Any]:
    return jwt.decode(token, options={"verify_signature": False})


async def refused(verifier: OidcTokenVerifier | CachingTokenVerifier, token: str) -> str:
    with pytest.raises(Unauthorised) as caught:
        await verifier.verify(token)
    assert caught.value.code == "AT-1018"
    return caught.value.reason


# --- accepted --------------------------------------------------------------------------------


async def test_rs256_token_gives_its_identity(
    verifier: OidcTokenVerifier, keys: Keys, clock: FakeClock
) -> None:
    token = keys.rsa.sign(clock, roles=["orgadmin", "superadmin"])

    assert await verifier.verify(token) == Identity(
        subject="f2b6c1e0-1111-4222-8333-444455556666",
        email="ada@example.com",
        name="Ada Lovelace",
        superadmin=True,
        expires_at=clock.now + timedelta(minutes=10),
        issuer=ISSUER,
        issued_at=clock.now.replace(microsecond=0),
    )


async def test_es256_token_with_a_key_without_alg(
    verifier: OidcTokenVerifier, keys: Keys, clock: FakeClock
) -> None:
    identity = await verifier.verify(keys.ec.sign(clock, roles=["orgadmin"]))

    assert identity.subject == "f2b6c1e0-1111-4222-8333-444455556666"
    assert not identity.superadmin


async def test_superadmin_claim_as_string_and_as_nested_path(
    make_verifier: Callable[..., OidcTokenVerifier], keys: Keys, clock: FakeClock
) -> None:
    flat = make_verifier(superadmin_claim="role", superadmin_value="admin")
    nested = make_verifier(superadmin_claim="realm_access.roles")

    assert (await flat.verify(keys.ec.sign(clock, role="admin"))).superadmin
    assert not (await flat.verify(keys.ec.sign(clock, role="administrator"))).superadmin
    token = keys.rsa.sign(clock, realm_access={"roles": ["superadmin"]})
    assert (await nested.verify(token)).superadmin


async def test_email_falls_back_to_preferred_username(
    verifier: OidcTokenVerifier, keys: Keys, clock: FakeClock
) -> None:
    fallback = keys.rsa.sign(clock, email=None, preferred_username="ada")
    nothing = keys.rsa.sign(clock, email=None, name=None)

    assert (await verifier.verify(fallback)).email == "ada"
    assert (await verifier.verify(nothing)).email == ""
    assert (await verifier.verify(nothing)).name == ""


async def test_an_address_is_verified_only_when_the_issuer_says_so_of_the_email_claim(
    verifier: OidcTokenVerifier, keys: Keys, clock: FakeClock
) -> None:
    said = keys.rsa.sign(clock, email_verified=True)
    unsaid = keys.rsa.sign(clock)
    denied = keys.rsa.sign(clock, email_verified=False)
    as_text = keys.rsa.sign(clock, email_verified="true")
    username = keys.rsa.sign(
        clock, email=None, preferred_username="a@b.example", email_verified=True
    )

    assert (await verifier.verify(said)).email_verified
    for token in (unsaid, denied, as_text, username):
        assert not (await verifier.verify(token)).email_verified


async def test_token_without_kid_is_refused_when_the_set_has_several_keys(
    verifier: OidcTokenVerifier, keys: Keys, clock: FakeClock
) -> None:
    token = jwt.encode(claims_of(keys.rsa.sign(clock)), keys.rsa.private, algorithm="RS256")

    assert "kid" in await refused(verifier, token)


# --- refused ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("overrides", "reason"),
    [
        ({"aud": "someone-else"}, "audience"),
        ({"aud": None}, "'aud'"),
        ({"iss": "https://evil.example.test"}, "issuer"),
        ({"sub": None}, "'sub'"),
        ({"sub": ""}, "'sub'"),
        ({"exp": None}, "'exp'"),
        ({"exp": "tomorrow"}, "'exp'"),
        ({"nbf": int((START + timedelta(minutes=5)).timestamp())}, "not valid yet"),
    ],
)
async def test_bad_claims_are_refused(
    verifier: OidcTokenVerifier,
    keys: Keys,
    clock: FakeClock,
    overrides: dict[str, Any],
    reason: str,
) -> None:
    assert reason in await refused(verifier, keys.rsa.sign(clock, **overrides))


async def test_expired_token_is_refused(
    verifier: OidcTokenVerifier, keys: Keys, clock: FakeClock
) -> None:
    token = keys.ec.sign(clock)
    clock.advance(minutes=10, seconds=31)

    assert "expired" in await refused(verifier, token)


async def test_token_signed_by_a_key_not_in_the_jwks_is_refused(
    verifier: OidcTokenVerifier, keys: Keys, clock: FakeClock
) -> None:
    forged = keys.outsider.sign(clock)  # ES256 under the RSA key's kid
    assert "algorithm" in await refused(verifier, forged)

    header, payload, _ = keys.ec.sign(clock).split(".")
    _, _, foreign_signature = (
        SigningKey("ec-1", "ES256", keys.rotated.private).sign(clock).split(".")
    )
    assert "signature" in await refused(verifier, f"{header}.{payload}.{foreign_signature}")


async def test_alg_none_is_refused(
    verifier: OidcTokenVerifier, keys: Keys, clock: FakeClock
) -> None:
    claims = claims_of(keys.rsa.sign(clock))
    for alg in ("none", "None", "NONE"):
        token = unsigned({"alg": alg, "typ": "JWT", "kid": "rsa-1"}, claims) + "."
        assert "algorithm" in await refused(verifier, token)


async def test_hs256_signed_with_the_public_key_is_refused(
    verifier: OidcTokenVerifier, keys: Keys, clock: FakeClock
) -> None:
    pem = keys.rsa.private.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    signing_input = unsigned(
        {"alg": "HS256", "typ": "JWT", "kid": "rsa-1"}, claims_of(keys.rsa.sign(clock))
    )
    mac = hmac.new(pem, signing_input.encode(), hashlib.sha256).digest()

    assert "algorithm" in await refused(verifier, f"{signing_input}.{b64url(mac)}")


async def test_unknown_kid_is_refused(
    verifier: OidcTokenVerifier, keys: Keys, clock: FakeClock
) -> None:
    assert "not one of the provider's keys" in await refused(verifier, keys.rotated.sign(clock))


@pytest.mark.parametrize("garbage", ["", "abc", "a.b.c", "é.é.é", "e30.e30.e30", "x" * 5000])
async def test_garbage_is_refused(verifier: OidcTokenVerifier, garbage: str) -> None:
    await refused(verifier, garbage)


@pytest.mark.parametrize("status", [500, 404, 503])
async def test_jwks_endpoint_failing_refuses(
    verifier: OidcTokenVerifier, idp: Idp, keys: Keys, clock: FakeClock, status: int
) -> None:
    idp.status = status

    assert "cannot be fetched" in await refused(verifier, keys.rsa.sign(clock))


async def test_jwks_endpoint_down_refuses(
    make_verifier: Callable[..., OidcTokenVerifier], keys: Keys, clock: FakeClock
) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    verifier = make_verifier(jwks_url=f"http://127.0.0.1:{port}/jwks")

    assert "cannot be fetched" in await refused(verifier, keys.rsa.sign(clock))


async def test_jwks_that_is_not_json_refuses(
    make_verifier: Callable[..., OidcTokenVerifier],
    aiohttp_server: ServerFactory,
    keys: Keys,
    clock: FakeClock,
) -> None:
    async def html(request: web.Request) -> web.Response:
        return web.Response(text="<html>login</html>", content_type="text/html")

    app = web.Application()
    app.router.add_get("/jwks", html)
    server = await aiohttp_server(app)
    verifier = make_verifier(jwks_url=str(server.make_url("/jwks")))

    assert "cannot be fetched" in await refused(verifier, keys.rsa.sign(clock))


@pytest.mark.parametrize("status", [301, 302, 307, 308])
async def test_a_jwks_endpoint_that_redirects_refuses(
    make_verifier: Callable[..., OidcTokenVerifier],
    aiohttp_server: ServerFactory,
    idp: Idp,
    keys: Keys,
    clock: FakeClock,
    status: int,
) -> None:
    """The key set comes from the configured URL only: a redirect, even to a set holding the
    right keys, is not followed, so no key is trusted from elsewhere."""

    async def moved(request: web.Request) -> web.Response:
        return web.Response(status=status, headers={"Location": idp.url})

    app = web.Application()
    app.router.add_get("/jwks", moved)
    server = await aiohttp_server(app)
    verifier = make_verifier(jwks_url=str(server.make_url("/jwks")))

    assert "cannot be fetched" in await refused(verifier, keys.rsa.sign(clock))
    assert idp.fetches == 0


@pytest.mark.parametrize(("padding", "accepted"), [(900_000, True), (MAX_JWKS_BYTES, False)])
async def test_a_key_set_larger_than_its_cap_refuses(
    make_verifier: Callable[..., OidcTokenVerifier],
    idp: Idp,
    keys: Keys,
    clock: FakeClock,
    padding: int,
    accepted: bool,
) -> None:
    """The same valid key set, with an encryption key skipped when parsing, is used under the
    cap and refused over it (read no further than the cap)."""
    idp.published = [keys.rsa.jwk(), {"kty": "oct", "use": "enc", "k": "A" * padding}]
    verifier = make_verifier()
    token = keys.rsa.sign(clock)
    if accepted:
        assert (await verifier.verify(token)).subject
    else:
        assert "cannot be fetched" in await refused(verifier, token)


# --- fetching and caching the key set --------------------------------------------------------


async def test_key_set_is_fetched_once_for_concurrent_requests_and_kept_for_its_ttl(
    make_verifier: Callable[..., OidcTokenVerifier], idp: Idp, keys: Keys, clock: FakeClock
) -> None:
    verifier = make_verifier(jwks_ttl=60.0)
    token = keys.rsa.sign(clock, exp=int((START + timedelta(hours=1)).timestamp()))

    await asyncio.gather(*(verifier.verify(token) for _ in range(20)))
    assert idp.fetches == 1

    clock.advance(seconds=59)
    await verifier.verify(token)
    assert idp.fetches == 1

    clock.advance(seconds=2)
    await verifier.verify(token)
    assert idp.fetches == 2


async def test_rotated_key_is_accepted_after_the_jwks_changes(
    verifier: OidcTokenVerifier, idp: Idp, keys: Keys, clock: FakeClock
) -> None:
    await verifier.verify(keys.rsa.sign(clock))
    assert idp.fetches == 1

    idp.published = [keys.rotated.jwk(), keys.rsa.jwk()]
    clock.advance(seconds=11)

    identity = await verifier.verify(keys.rotated.sign(clock))
    assert identity.email == "ada@example.com"
    assert idp.fetches == 2


async def test_unknown_kid_refetches_at_most_once_every_ten_seconds(
    verifier: OidcTokenVerifier, idp: Idp, keys: Keys, clock: FakeClock
) -> None:
    await verifier.verify(keys.rsa.sign(clock))
    clock.advance(seconds=11)

    for _ in range(5):
        await refused(verifier, keys.rotated.sign(clock))
    assert idp.fetches == 2

    idp.published = [keys.rotated.jwk()]
    clock.advance(seconds=5)
    await refused(verifier, keys.rotated.sign(clock))
    assert idp.fetches == 2

    clock.advance(seconds=5)
    assert (await verifier.verify(keys.rotated.sign(clock))).email == "ada@example.com"
    assert idp.fetches == 3


async def test_failed_fetch_is_not_retried_for_ten_seconds_then_recovers(
    verifier: OidcTokenVerifier, idp: Idp, keys: Keys, clock: FakeClock
) -> None:
    idp.status = 500
    for _ in range(3):
        await refused(verifier, keys.rsa.sign(clock))
    assert idp.fetches == 1

    idp.status = 200
    clock.advance(seconds=10)
    assert (await verifier.verify(keys.rsa.sign(clock))).subject
    assert idp.fetches == 2


async def test_failed_refetch_for_unknown_kid_keeps_the_cached_keys(
    verifier: OidcTokenVerifier, idp: Idp, keys: Keys, clock: FakeClock
) -> None:
    await verifier.verify(keys.rsa.sign(clock))
    idp.status = 500
    clock.advance(seconds=11)

    await refused(verifier, keys.rotated.sign(clock))
    assert idp.fetches == 2
    assert (await verifier.verify(keys.ec.sign(clock))).subject


async def test_cache_in_front_of_oidc_verifies_once(
    verifier: OidcTokenVerifier, idp: Idp, keys: Keys, clock: FakeClock
) -> None:
    cache = CachingTokenVerifier(verifier, clock=clock)
    token = keys.ec.sign(clock)

    assert await cache.verify(token) == await cache.verify(token)
    assert len(cache) == 1
    idp.status = 500
    clock.advance(minutes=6)  # past the JWKS TTL: only the cache can still answer
    assert (await cache.verify(token)).email == "ada@example.com"
    await cache.aclose()


def test_unsupported_algorithms_are_refused_at_construction() -> None:
    for algorithms in (["HS256"], ["none"], [], ["RS256", "EdDSA"]):
        with pytest.raises(ValueError):
            OidcTokenVerifier(ISSUER, AUDIENCE, "http://127.0.0.1:1/jwks", algorithms=algorithms)
