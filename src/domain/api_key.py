"""API keys: machine access for one organisation, with a role no higher than their creator's.

A key acts for the user who created it (a key created with another key, for the user behind
that key). Its role is checked against that user's standing at every request, not only at
creation: the lower of the key's own role and the creator's current role in the organisation.
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Iterable
from datetime import datetime

import attrs

from fourcorner.domain.errors import ExpiryInPast, InvalidInput, RoleAboveCreator
from fourcorner.domain.organisation import UserRef
from fourcorner.domain.roles import ORG_ROLES, Role, lower

KEY_PREFIX = "fck_"
PREFIX_LENGTH = len(KEY_PREFIX) + 6
"""How many leading characters of a key are kept (``ApiKey.prefix``) to tell keys apart."""


@attrs.frozen
class ApiKey:
    id: uuid.UUID
    org_id: uuid.UUID
    name: str
    description: str
    expires: datetime
    is_active: bool
    role: Role
    key_hash: str
    # The first characters of the key, shown so a person can tell keys apart.
    prefix: str
    created_at: datetime
    created_by: UserRef
    last_modified_at: datetime

    def usable_at(self, now: datetime) -> bool:
        return self.is_active and now < self.expires


def ended_with_membership(keys: Iterable[ApiKey], user_id: str, at: datetime) -> list[ApiKey]:
    """The active keys among ``keys`` (of one organisation) that ``user_id`` created, made
    inactive for good: a member's keys end when they leave the organisation or are removed
    from it (or deleted), so that none comes back to life when they join it again."""
    return [
        attrs.evolve(k, is_active=False, last_modified_at=at)
        for k in keys
        if k.is_active and k.created_by.user_id == user_id
    ]


def prefix_of(key: str) -> str:
    """The leading characters of a key that are shown beside it (and that failed attempts
    are counted by); the rest stays secret."""
    return key[:PREFIX_LENGTH]


def effective_role(own: Role, creator: Role, creator_in_org: Role | None) -> Role | None:
    """What a key may do now: ``own`` is its role, ``creator`` its creating user's global role
    (``user`` or ``superadmin``), ``creator_in_org`` that user's role as an active member of
    the key's organisation (``None``: not an active member).

    A superadmin's key holds its own role; any other key holds the lower of its own role and
    its creator's, and nothing (``None``) once its creator is no active member.
    """
    if creator is Role.SUPERADMIN:
        return own
    if creator_in_org is None:
        return None
    return lower(own, creator_in_org)


def hash_key(key: str) -> str:
    """Keys are 256-bit random strings, so one SHA-256 is a sound, fast verifier."""
    return hashlib.sha256(key.encode()).hexdigest()


def check_new_key(role: Role, creator_role: Role, expires: datetime, now: datetime) -> None:
    if role not in ORG_ROLES:
        raise InvalidInput.one("$.role", "an API key's role is orgmember or orgadmin")
    if not creator_role.satisfies(role):
        raise RoleAboveCreator(requested=role.value, held=creator_role.value)
    if expires <= now:
        raise ExpiryInPast()
