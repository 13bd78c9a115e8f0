"""The embedded token authority (local mode) and the verification cache."""

from __future__ import annotations

import base64
import hashlib
import json
import stat
import threading
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec
from jwt.algorithms import ECAlgorithm

from fourcorner.adapters.auth import CachingTokenVerifier, LocalTokenAuthority
from fourcorner.adapters.auth.local import KEY_FILE, subject_for
from fourcorner.application.identity import Identity, TokenVerifier
from fourcorner.domain.errors import Unauthorised

START = datetime(2026, 1, 2, 10, 0, tzinfo=UTC)


class FakeClock:
    def __init__(self, now: datetime = START) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now

    def advance(self, **kwargs: float) -> None:
        self.now += timedelta(**kwargs)


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def b64url_json(part: str) -> dict[str, object]:
    decoded: dict[str, object] = json.loads(base64.urlsafe_b64decode(part + "=" * (-len(part) % 4)))
    return decoded


async def refused(verifier: TokenVerifier, token: str) -> Unauthorised:
    with pytest.raises(Unauthorised) as caught:
        await verifier.verify(token)
    assert caught.value.code == "AT-1018"
    return caught.value


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def authority(tmp_path: Path, clock: FakeClock) -> LocalTokenAuthority:
    return LocalTokenAuthority(tmp_path, clock=clock)


# --- issue and verify ------------------------------------------------------------------------


async def test_issued_token_verifies_to_its_identity(
    authority: LocalTokenAuthority, clock: FakeClock
) -> None:
    token = authority.issue("ada@example.com", name="Ada Lovelace", ttl=timedelta(hours=1))

    identity = await authority.verify(token)

    assert identity == Identity(
        subject=subject_for("ada@example.com"),
        email="ada@example.com",
        name="Ada Lovelace",
        email_verified=True,
        superadmin=False,
        expires_at=clock.now + timedelta(hours=1),
        issuer="fourcorner-local",
        issued_at=clock.now.replace(microsecond=0),
    )


async def test_token_carries_the_documented_claims_and_kid(
    authority: LocalTokenAuthority, clock: FakeClock
) -> None:
    token = authority.issue("ada@example.com")
    header_part, payload_part, _ = token.split(".")
    header, claims = b64url_json(header_part), b64url_json(payload_part)

    assert header["alg"] == "ES256"
    assert header["kid"] == authority.key_id()
    assert claims["iss"] == "fourcorner-local"
    assert claims["aud"] == "fourcorner"
    assert claims["iat"] == claims["nbf"] == int(clock.now.timestamp())
    assert claims["exp"] == int((clock.now + timedelta(hours=12)).timestamp())
    assert "superadmin" not in claims


async def test_subject_is_stable_per_email_and_ignores_case(tmp_path: Path) -> None:
    first = LocalTokenAuthority(tmp_path / "one")
    second = LocalTokenAuthority(tmp_path / "two")

    a = await first.verify(first.issue("Ada@Example.com"))
    b = await first.verify(first.issue("  ada@example.COM "))
    c = await second.verify(second.issue("ada@example.com"))
    other = await first.verify(first.issue("grace@example.com"))

    assert a.subject == b.subject == c.subject
    assert a.email == b.email == "ada@example.com"
    assert other.subject != a.subject


async def test_superadmin_flag(authority: LocalTokenAuthority) -> None:
    assert (await authority.verify(authority.issue("root@example.com", superadmin=True))).superadmin
    assert not (await authority.verify(authority.issue("user@example.com"))).superadmin


@pytest.mark.parametrize(
    ("email", "name"),
    [
        ("ada@example.com", "Ada \ud800"),
        ("ada@example.com", "Ada\u0000"),
        ("ada@example.com", "A" * 257),
        ("a" * 250 + "@example.com", ""),
    ],
)
async def test_claims_that_cannot_be_stored_are_refused(
    authority: LocalTokenAuthority, email: str, name: str
) -> None:
    """The claims become the user record: text it could not write back is refused."""
    reason = (await refused(authority, authority.issue(email, name=name))).reason
    assert "claim" in reason and reason.isascii()


async def test_a_token_that_is_not_ascii_is_refused(authority: LocalTokenAuthority) -> None:
    """A header decoded leniently carries undecodable bytes as lone surrogates."""
    token = authority.issue("ada@example.com")
    for bad in (token + "\udcff", "\udcff" + token[1:], "é" + token[1:]):
        await refused(authority, bad)


def test_issue_refuses_blank_email_and_non_positive_ttl(authority: LocalTokenAuthority) -> None:
    with pytest.raises(ValueError):
        authority.issue("  ")
    with pytest.raises(ValueError):
        authority.issue("ada@example.com", ttl=timedelta(0))


# --- the signing key -------------------------------------------------------------------------


def test_no_key_is_created_before_first_use(tmp_path: Path) -> None:
    LocalTokenAuthority(tmp_path)
    assert not (tmp_path / KEY_FILE).exists()


async def test_key_file_is_created_once_with_mode_0600_and_reused(tmp_path: Path) -> None:
    first = LocalTokenAuthority(tmp_path)
    token = first.issue("ada@example.com")
    key_path = tmp_path / KEY_FILE
    content = key_path.read_bytes()

    assert stat.S_IMODE(key_path.stat().st_mode) == 0o600
    assert [p.name for p in key_path.parent.iterdir()] == [key_path.name]

    second = LocalTokenAuthority(tmp_path)
    assert (await second.verify(token)).email == "ada@example.com"
    assert second.key_id() == first.key_id()
    assert key_path.read_bytes() == content


def test_kid_is_the_rfc7638_thumbprint_of_the_key(authority: LocalTokenAuthority) -> None:
    kid = authority.key_id()
    key = serialization.load_pem_private_key(authority.key_path.read_bytes(), password=None)
    assert isinstance(key, ec.EllipticCurvePrivateKey)
    jwk = ECAlgorithm.to_jwk(key.public_key(), as_dict=True)
    members = {name: jwk[name] for name in ("crv", "kty", "x", "y")}
    canonical = json.dumps(members, separators=(",", ":"), sort_keys=True).encode()

    assert kid == b64url(hashlib.sha256(canonical).digest())


def test_authorities_started_together_agree_on_one_key(tmp_path: Path) -> None:
    authorities = [LocalTokenAuthority(tmp_path) for _ in range(8)]
    barrier = threading.Barrier(len(authorities))
    kids: list[str] = []

    def start(authority: LocalTokenAuthority) -> None:
        barrier.wait()
        kids.append(authority.key_id())

    threads = [threading.Thread(target=start, args=(a,)) for a in authorities]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert len(kids) == len(authorities)
    assert len(set(kids)) == 1
    assert sorted(p.name for p in (tmp_path / KEY_FILE).parent.iterdir()) == [KEY_FILE.name]


# --- refusals --------------------------------------------------------------------------------


async def test_token_of_another_data_dir_is_refused(tmp_path: Path) -> None:
    mine = LocalTokenAuthority(tmp_path / "mine")
    theirs = LocalTokenAuthority(tmp_path / "theirs")

    error = await refused(mine, theirs.issue("ada@example.com"))
    assert "signature" in error.reason


async def test_expired_token_is_refused(authority: LocalTokenAuthority, clock: FakeClock) -> None:
    token = authority.issue("ada@example.com", ttl=timedelta(minutes=5))
    clock.advance(minutes=5, seconds=10)
    await authority.verify(token)  # within the 30 s leeway

    clock.advance(seconds=30)
    error = await refused(authority, token)
    assert "expired" in error.reason


async def test_token_from_the_future_is_refused(
    tmp_path: Path, authority: LocalTokenAuthority, clock: FakeClock
) -> None:
    later = LocalTokenAuthority(tmp_path, clock=FakeClock(clock.now + timedelta(minutes=5)))
    error = await refused(authority, later.issue("ada@example.com"))
    assert "not valid yet" in error.reason


async def test_tampered_payload_is_refused(authority: LocalTokenAuthority) -> None:
    header, payload, signature = authority.issue("ada@example.com").split(".")
    claims = b64url_json(payload)
    claims["superadmin"] = True
    forged = ".".join([header, b64url(json.dumps(claims).encode()), signature])

    await refused(authority, forged)


async def test_alg_none_token_is_refused(authority: LocalTokenAuthority) -> None:
    _, payload, _ = authority.issue("ada@example.com").split(".")
    header = b64url(json.dumps({"alg": "none", "typ": "JWT"}).encode())

    await refused(authority, f"{header}.{payload}.")


@pytest.mark.parametrize(
    ("issuer", "audience"), [("someone-else", "fourcorner"), ("fourcorner-local", "other")]
)
async def test_wrong_issuer_or_audience_is_refused(
    tmp_path: Path, issuer: str, audience: str
) -> None:
    minter = LocalTokenAuthority(tmp_path, issuer=issuer, audience=audience)
    verifier = LocalTokenAuthority(tmp_path)

    await refused(verifier, minter.issue("ada@example.com"))


@pytest.mark.parametrize("garbage", ["", "abc", "a.b.c", "é.é.é", "x" * 5000, "..", "e30.e30.e30"])
async def test_garbage_is_refused(authority: LocalTokenAuthority, garbage: str) -> None:
    await refused(authority, garbage)


# --- the cache -------------------------------------------------------------------------------


class CountingVerifier:
    """Accepts tokens ``ok:<n>`` (expiring ``n`` minutes after START); refuses anything else."""

    def __init__(self) -> None:
        self.calls: list[str] = []

    async def verify(self, token: str) -> Identity:
        self.calls.append(token)
        kind, _, minutes = token.partition(":")
        if kind != "ok":
            raise Unauthorised(reason="the token is not valid")
        return Identity(
            subject=f"user-{token}",
            email="ada@example.com",
            expires_at=START + timedelta(minutes=int(minutes)),
        )


@pytest.fixture
def inner() -> CountingVerifier:
    return CountingVerifier()


async def test_cache_answers_a_seen_token_without_the_inner_verifier(
    inner: CountingVerifier, clock: FakeClock
) -> None:
    cache = CachingTokenVerifier(inner, clock=clock)

    first = await cache.verify("ok:10")
    second = await cache.verify("ok:10")

    assert first == second
    assert inner.calls == ["ok:10"]


async def test_cache_entry_ends_at_the_token_expiry(
    inner: CountingVerifier, clock: FakeClock
) -> None:
    cache = CachingTokenVerifier(inner, clock=clock)
    await cache.verify("ok:10")

    clock.advance(minutes=9, seconds=59)
    await cache.verify("ok:10")
    assert inner.calls == ["ok:10"]

    clock.advance(seconds=1)
    await cache.verify("ok:10")
    assert inner.calls == ["ok:10", "ok:10"]


async def test_cache_does_not_keep_an_already_expired_identity(
    inner: CountingVerifier, clock: FakeClock
) -> None:
    cache = CachingTokenVerifier(inner, clock=clock)
    clock.advance(minutes=20)

    await cache.verify("ok:10")
    await cache.verify("ok:10")

    assert len(cache) == 0
    assert inner.calls == ["ok:10", "ok:10"]


async def test_cache_is_bounded_least_recently_used_first(
    inner: CountingVerifier, clock: FakeClock
) -> None:
    cache = CachingTokenVerifier(inner, max_entries=2, clock=clock)
    await cache.verify("ok:11")
    await cache.verify("ok:12")
    await cache.verify("ok:11")  # now the most recently used
    await cache.verify("ok:13")  # evicts ok:12

    assert len(cache) == 2
    inner.calls.clear()
    await cache.verify("ok:11")
    await cache.verify("ok:13")
    assert inner.calls == []
    await cache.verify("ok:12")
    assert inner.calls == ["ok:12"]


async def test_cache_does_not_remember_refusals(inner: CountingVerifier, clock: FakeClock) -> None:
    cache = CachingTokenVerifier(inner, clock=clock)

    await refused(cache, "bad")
    await refused(cache, "bad")

    assert inner.calls == ["bad", "bad"]
    assert len(cache) == 0


async def test_cache_in_front_of_the_local_authority(
    authority: LocalTokenAuthority, clock: FakeClock
) -> None:
    cache = CachingTokenVerifier(authority, clock=clock)
    token = authority.issue("ada@example.com", ttl=timedelta(minutes=1))

    assert (await cache.verify(token)).email == "ada@example.com"
    assert len(cache) == 1

    clock.advance(minutes=1)
    # The entry ends at expiry; the authority's leeway still accepts, but nothing is re-cached.
    assert (await cache.verify(token)).email == "ada@example.com"
    assert len(cache) == 0

    clock.advance(seconds=31)
    await refused(cache, token)
