"""Who is calling: the identity a verified bearer token carries, and the port that verifies it."""

from __future__ import annotations

from datetime import datetime
from typing import Protocol

import attrs


@attrs.frozen
class Identity:
    """A verified token's claims that the service uses.

    ``issuer`` and ``subject`` name the person at their identity provider; the user record
    bound to that pair is found (or created, with a random id) on each authenticated call.
    ``issued_at`` (the ``iat`` claim) tells a token issued before its user was deleted.
    """

    subject: str
    email: str
    name: str = ""
    superadmin: bool = False
    expires_at: datetime | None = None
    issuer: str = ""
    issued_at: datetime | None = None
    email_verified: bool = False  # the issuer vouches for the address (invitations need it)


class TokenVerifier(Protocol):
    """Verifies a bearer token and returns its identity; raises ``domain.errors.Unauthorised``."""

    async def verify(self, token: str) -> Identity: ...
