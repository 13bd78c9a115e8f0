"""Users: created from a verified token's claims on their first authenticated call.

A user is bound to the identity that signed them in: the token's issuer and subject
(``identity_key``). Their id is random, so it tells nothing about the person and cannot be
worked out from an email address; records made before that binding keep their ids and are
bound on their next sign-in. Deleting a user records the identity's deletion
(``DeletedIdentity``): tokens issued before it are refused for good, and a later sign-in of the
same identity makes a new user (a new id, no memberships, none of the old API keys).
"""

from __future__ import annotations

import hashlib
import uuid
from datetime import datetime, timedelta

import attrs

from fourcorner.domain.organisation import UserRef
from fourcorner.domain.roles import Role

TOKEN_CLOCK_SKEW = timedelta(seconds=30)
"""How far an issuer's clock may run ahead of ours: a token whose issue time is within this
of a deletion may have been issued before it, and is refused."""


def identity_key(issuer: str, subject: str) -> str:
    """The fixed-length key of an (issuer, subject) pair: unambiguous for any two strings."""
    raw = f"{len(issuer)}:{issuer}{subject}".encode("utf-8", "surrogatepass")
    return hashlib.sha256(raw).hexdigest()


def issued_in_time(issued_at: datetime | None, not_before: datetime | None) -> bool:
    """Whether a token issued at ``issued_at`` may sign in where tokens issued up to
    ``not_before`` are refused; a token that does not say when it was issued may not."""
    if not_before is None:
        return True
    return issued_at is not None and issued_at > not_before


@attrs.frozen
class User:
    id: str
    email: str
    created_at: datetime
    created_by: UserRef
    last_modified_at: datetime
    last_modified_by: UserRef
    name: str = ""
    phone: str = ""
    country_code: str = ""
    opted_in_to_receive_info: bool = False
    role: Role = Role.USER
    # Signing up means accepting the operator's terms and conditions; this is when.
    terms_accepted_at: datetime | None = None
    # The identity that signs this user in; both empty on a record made before the binding.
    issuer: str = ""
    subject: str = ""
    # Tokens issued up to this time are refused (an earlier user of this identity was deleted).
    tokens_not_before: datetime | None = None

    @property
    def first_name(self) -> str:
        return self.name.split(" ", 1)[0] if self.name else ""

    @property
    def last_name(self) -> str:
        parts = self.name.split(" ", 1)
        return parts[1] if len(parts) == 2 else ""

    @property
    def identity_key(self) -> str | None:
        """``identity_key(issuer, subject)``; ``None`` while the record is not bound."""
        return identity_key(self.issuer, self.subject) if self.subject else None


@attrs.frozen
class DeletedIdentity:
    """The identity of a deleted user, and when it was deleted (the latest time, when its
    users were deleted more than once). ``identity_key`` of a user deleted before being bound
    is ``identity_key("", <user id>)``: such a user's id was their token's subject."""

    id: uuid.UUID
    identity_key: str
    user_id: str
    deleted_at: datetime
    created_at: datetime

    @property
    def tokens_not_before(self) -> datetime:
        """Tokens issued up to this time may predate the deletion."""
        return self.deleted_at + TOKEN_CLOCK_SKEW
