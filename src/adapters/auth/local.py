"""The embedded token authority: the server signs its users' tokens with its own ES256 key.

The key lives at ``<data dir>/keys/token-signing-key.pem`` (mode 0600). It is created on first
use, atomically: a process writes a complete key to a temporary file and hard-links it into
place, which fails when another process got there first; then everyone reads the one that won.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import hashlib
import json
import os
import secrets
import threading
import uuid
from datetime import timedelta
from pathlib import Path
from typing import Any

import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

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
from fourcorner.adapters.private import make_dirs
from fourcorner.application.identity import Identity

KEY_FILE = Path("keys") / "token-signing-key.pem"
"""Where the signing key lives, relative to the data dir."""

SUBJECT_NAMESPACE = uuid.UUID("2cf1618c-6a4a-4131-98d0-cdcfacc10bd0")
"""The UUID namespace of local subjects: ``sub = uuid5(SUBJECT_NAMESPACE, normalised email)``.

The subject names the person to this authority, as an OIDC provider's ``sub`` does; it is not
their user id (user ids are random, bound to the issuer and subject at the first sign-in).
Users created before that binding have the subject as their id, and keep it."""

_ALGORITHM = "ES256"


def subject_for(email: str) -> str:
    """The subject that the local authority gives an email address (case and spaces ignored)."""
    return str(uuid.uuid5(SUBJECT_NAMESPACE, email.strip().lower()))


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _thumbprint(key: ec.EllipticCurvePublicKey) -> str:
    """The key's RFC 7638 JWK thumbprint (SHA-256), used as ``kid``."""
    numbers = key.public_numbers()
    size = (key.curve.key_size + 7) // 8
    members = {
        "crv": "P-256",
        "kty": "EC",
        "x": _b64url(numbers.x.to_bytes(size, "big")),
        "y": _b64url(numbers.y.to_bytes(size, "big")),
    }
    canonical = json.dumps(members, separators=(",", ":"), sort_keys=True).encode("ascii")
    return _b64url(hashlib.sha256(canonical).digest())


def _read_key(path: Path) -> ec.EllipticCurvePrivateKey:
    key = serialization.load_pem_private_key(path.read_bytes(), password=None)
    if not isinstance(key, ec.EllipticCurvePrivateKey) or not isinstance(key.curve, ec.SECP256R1):
        raise ValueError(f"{path} does not hold an EC P-256 private key")
    return key


def _create_key(path: Path) -> None:
    """Write a new key to ``path`` unless a key is there already; never leaves a partial file."""
    make_dirs(path.parent)
    pem = ec.generate_private_key(ec.SECP256R1()).private_bytes(
        encoding=serialization.Encoding.PEM,
        format=serialization.PrivateFormat.PKCS8,
        encryption_algorithm=serialization.NoEncryption(),
    )
    temp = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(8)}.tmp")
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "wb") as f:
            os.fchmod(f.fileno(), 0o600)
            f.write(pem)
            f.flush()
            os.fsync(f.fileno())
        # When another process linked its key first, this fails and that key is the one used.
        with contextlib.suppress(FileExistsError):
            os.link(temp, path)
    finally:
        temp.unlink(missing_ok=True)


def load_or_create_key(path: Path) -> ec.EllipticCurvePrivateKey:
    """The key at ``path``, created first if there is none."""
    try:
        return _read_key(path)
    except FileNotFoundError:
        _create_key(path)
    return _read_key(path)


class LocalTokenAuthority:
    """Issues and verifies the tokens of the embedded default (``FOURCORNER_AUTH_MODE=local``).

    Satisfies ``application.identity.TokenVerifier``. Nothing is read or written until a token
    is issued or verified.
    """

    def __init__(
        self,
        data_dir: Path,
        *,
        issuer: str = "fourcorner-local",
        audience: str = "fourcorner",
        clock: Clock | None = None,
    ) -> None:
        self._key_path = Path(data_dir) / KEY_FILE
        self._issuer = issuer
        self._audience = audience
        self._clock: Clock = clock or system_clock
        self._lock = threading.Lock()
        self._key: ec.EllipticCurvePrivateKey | None = None
        self._public: ec.EllipticCurvePublicKey | None = None
        self._kid = ""

    @property
    def key_path(self) -> Path:
        return self._key_path

    def _signing_key(self) -> ec.EllipticCurvePrivateKey:
        with self._lock:
            if self._key is None:
                key = load_or_create_key(self._key_path)
                self._public = key.public_key()
                self._kid = _thumbprint(self._public)
                self._key = key
            return self._key

    def key_id(self) -> str:
        """The ``kid`` of the signing key (its RFC 7638 thumbprint); creates the key if needed."""
        self._signing_key()
        return self._kid

    def issue(
        self,
        email: str,
        *,
        name: str = "",
        superadmin: bool = False,
        ttl: timedelta = timedelta(hours=12),
    ) -> str:
        """A signed token for the user with this email address, valid for ``ttl``."""
        address = email.strip().lower()
        if not address:
            raise ValueError("a token needs an email address")
        if ttl <= timedelta(0):
            raise ValueError("a token's lifetime must be positive")
        key = self._signing_key()
        now = now_from(self._clock)
        issued = int(now.timestamp())
        claims: dict[str, Any] = {
            "iss": self._issuer,
            "aud": self._audience,
            "sub": subject_for(address),
            "email": address,
            "name": name.strip(),
            "iat": issued,
            "nbf": issued,
            "exp": int((now + ttl).timestamp()),
        }
        if superadmin:
            claims["superadmin"] = True
        return jwt.encode(claims, key, algorithm=_ALGORITHM, headers={"kid": self._kid})

    async def verify(self, token: str) -> Identity:
        token = compact(token)
        public = self._public
        if public is None:
            public = (await asyncio.to_thread(self._signing_key)).public_key()
        try:
            claims: dict[str, Any] = jwt.decode(
                token,
                public,
                algorithms=[_ALGORITHM],
                audience=self._audience,
                issuer=self._issuer,
                options=decode_options(["iss", "aud", "sub", "email", "exp", "iat"]),
            )
        except jwt.PyJWTError as e:
            raise refusal(e) from e
        expires_at = check_times(claims, now_from(self._clock))
        return Identity(
            subject=required_text(claims, "sub"),
            email=required_text(claims, "email"),
            name=text_claim(claims, "name"),
            email_verified=True,  # this service's own authority names the address
            superadmin=claims.get("superadmin") is True,
            expires_at=expires_at,
            issuer=self._issuer,
            issued_at=issued_at(claims),
        )

    def __repr__(self) -> str:
        return f"LocalTokenAuthority(key_path={str(self._key_path)!r}, issuer={self._issuer!r})"
