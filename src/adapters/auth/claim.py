"""Helpers shared by the token verifiers: time checks against an injectable clock, claim reading,
and the translation of PyJWT's errors into ``Unauthorised`` (AT-1018)."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import jwt
from jwt.exceptions import InvalidSubjectError

from fourcorner.domain.clock import utc
from fourcorner.domain.errors import Unauthorised
from fourcorner.domain.text import text_problem

if TYPE_CHECKING:
    from jwt.types import Options

Clock = Callable[[], datetime]

LEEWAY_SECONDS = 30.0
"""How far a token's ``exp``, ``nbf`` and ``iat`` may be off the verifier's clock."""

MAX_CLAIM_LENGTH = 256
"""The longest text claim read (``sub``, ``email``, ``name``): they are stored with the user."""


def compact(token: str) -> str:
    """``token`` if it can be a JWT in compact serialisation, which is ASCII (base64url parts and
    dots); a header decoded leniently can carry anything, which PyJWT cannot even encode."""
    if not token.isascii():
        raise Unauthorised(reason="the token is not a well-formed signed JWT")
    return token


def decode_options(require: list[str]) -> Options:
    """PyJWT's options: these claims required, and no time checks (PyJWT reads its own clock;
    the verifiers check times against theirs with ``check_times``)."""
    return {"verify_exp": False, "verify_nbf": False, "verify_iat": False, "require": require}


def system_clock() -> datetime:
    return datetime.now(UTC)


def now_from(clock: Clock) -> datetime:
    """The clock's reading as an aware UTC datetime (a naive reading is taken to be UTC)."""
    return utc(clock())


def refusal(error: jwt.PyJWTError) -> Unauthorised:
    """The ``Unauthorised`` that stands for one of PyJWT's refusals."""
    if isinstance(error, jwt.InvalidSignatureError):
        return Unauthorised(reason="the token's signature is not valid")
    if isinstance(error, jwt.InvalidAlgorithmError):
        return Unauthorised(reason="the token's signing algorithm is not accepted")
    if isinstance(error, jwt.InvalidAudienceError):
        return Unauthorised(reason="the token is not meant for this service (audience)")
    if isinstance(error, jwt.InvalidIssuerError):
        return Unauthorised(reason="the token was not issued by the expected issuer")
    if isinstance(error, jwt.MissingRequiredClaimError):
        return Unauthorised(reason=f"the token lacks the {error.claim!r} claim")
    if isinstance(error, InvalidSubjectError):
        return Unauthorised(reason="the token's subject is not valid")
    if isinstance(error, jwt.DecodeError):
        return Unauthorised(reason="the token is not a well-formed signed JWT")
    if isinstance(error, jwt.InvalidKeyError | jwt.PyJWKError):
        return Unauthorised(reason="the token's key cannot verify it")
    return Unauthorised(reason="the token is not valid")


def _numeric_date(claims: Mapping[str, Any], name: str) -> float | None:
    value = claims.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise Unauthorised(reason=f"the token's {name!r} claim is not a time")
    return float(value)


def check_times(claims: Mapping[str, Any], now: datetime) -> datetime:
    """Check ``exp`` (required), ``nbf`` and ``iat`` against ``now``; return the expiry time."""
    exp = _numeric_date(claims, "exp")
    if exp is None:
        raise Unauthorised(reason="the token lacks the 'exp' claim")
    current = now.timestamp()
    if exp <= current - LEEWAY_SECONDS:
        raise Unauthorised(reason="the token has expired")
    nbf = _numeric_date(claims, "nbf")
    if nbf is not None and nbf > current + LEEWAY_SECONDS:
        raise Unauthorised(reason="the token is not valid yet")
    iat = _numeric_date(claims, "iat")
    if iat is not None and iat > current + LEEWAY_SECONDS:
        raise Unauthorised(reason="the token was issued in the future")
    try:
        return datetime.fromtimestamp(exp, UTC)
    except (OverflowError, OSError, ValueError) as e:
        raise Unauthorised(reason="the token's 'exp' claim is not a time") from e


def issued_at(claims: Mapping[str, Any]) -> datetime | None:
    """The time of the ``iat`` claim (checked by ``check_times`` first); ``None`` without one."""
    iat = _numeric_date(claims, "iat")
    if iat is None:
        return None
    try:
        return datetime.fromtimestamp(iat, UTC)
    except (OverflowError, OSError, ValueError) as e:
        raise Unauthorised(reason="the token's 'iat' claim is not a time") from e


def text_claim(claims: Mapping[str, Any], name: str) -> str:
    """The claim's value when it is a string, else the empty string; refused when it is text
    that could not be stored and shown again, or longer than ``MAX_CLAIM_LENGTH``."""
    value = claims.get(name)
    if not isinstance(value, str):
        return ""
    problem = text_problem(value)
    if problem:
        raise Unauthorised(reason=f"the token's {name!r} claim cannot be stored ({problem})")
    if len(value) > MAX_CLAIM_LENGTH:
        raise Unauthorised(
            reason=f"the token's {name!r} claim is longer than {MAX_CLAIM_LENGTH} characters"
        )
    return value


def required_text(claims: Mapping[str, Any], name: str) -> str:
    """The claim's value, unchanged; refused when it is missing, not a string or blank."""
    value = text_claim(claims, name)
    if not value.strip():
        raise Unauthorised(reason=f"the token lacks the {name!r} claim")
    return value
