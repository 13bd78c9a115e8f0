"""Who is calling and what they may do: principals, and the organisation role check."""

from __future__ import annotations

import uuid
from datetime import datetime

import attrs

from fourcorner.application.collections import API_KEYS, ORGANISATIONS, USERS
from fourcorner.application.repositories import Members
from fourcorner.application.storage import UnitOfWork
from fourcorner.domain import api_key, roles
from fourcorner.domain.api_key import ApiKey
from fourcorner.domain.errors import Forbidden, NotAMember, NotFound
from fourcorner.domain.member import Member
from fourcorner.domain.organisation import Organisation, UserRef
from fourcorner.domain.roles import Role
from fourcorner.domain.user import User


@attrs.frozen
class Principal:
    """A signed-in user, or an organisation's API key."""

    user: User | None = None
    key: ApiKey | None = None

    @property
    def actor(self) -> UserRef:
        if self.user is not None:
            return UserRef(self.user.id)
        assert self.key is not None
        return self.key.created_by

    @property
    def is_superadmin(self) -> bool:
        return self.user is not None and self.user.role is Role.SUPERADMIN

    @property
    def global_role(self) -> Role:
        """The role outside any organisation: ``user`` or ``superadmin``."""
        return Role.SUPERADMIN if self.is_superadmin else Role.USER

    def require_user(self) -> User:
        """The signed-in user; an API key is refused where only a person may act."""
        if self.user is None:
            raise Forbidden(reason="this operation needs a user's token, not an API key")
        return self.user

    def require_own(self, uid: str) -> User:
        """The signed-in user, when ``uid`` is their own id: a user acts only on their own
        account (an API key on none)."""
        user = self.require_user()
        if user.id != uid:
            raise Forbidden(reason="a user may act only on their own account")
        return user

    def require(self, required: Role) -> None:
        """Check a role that does not depend on an organisation (``user``, ``superadmin``)."""
        roles.require(self.global_role, required)


async def key_role(uow: UnitOfWork, key: ApiKey) -> Role | None:
    """What ``key`` may do in its organisation now (``domain.api_key.effective_role``): its
    creator's current standing bounds it; ``None`` when the creator is gone or no active member.
    """
    creator = await uow.repository(USERS).get(key.created_by.user_id)
    if creator is None:
        return None
    member = None
    if creator.role is not Role.SUPERADMIN:
        member = await Members(uow).active_of_user_in(key.org_id, creator.id)
    return api_key.effective_role(key.role, creator.role, member.role if member else None)


@attrs.frozen
class OrgAccess:
    org: Organisation
    role: Role
    member: Member | None


async def authorise(
    uow: UnitOfWork,
    principal: Principal,
    org_id: uuid.UUID,
    required: Role,
    *,
    lock: bool = False,
) -> OrgAccess:
    """The caller's role in ``org_id``, checked against ``required``.

    A superadmin may act in any organisation; an API key only in its own, with no more than
    its creator holds there now (``key_role``); a user only where an active member. A non-member
    gets 403 whether or not the organisation exists, so ids of other organisations are not
    disclosed.

    ``lock``: first hold the organisation's record (``Repository.lock``) until the unit of work
    ends. Every unit of work that changes the organisation or its members does, so they run one
    at a time per organisation, and what this one reads next (the caller's membership, the
    member set) is what the ones before it committed: a decision taken on it still holds when
    it is written.
    """
    orgs = uow.repository(ORGANISATIONS)
    locked = await orgs.lock(org_id) if lock else None
    role, member = await _standing(uow, principal, org_id, required)
    org = locked if lock else await orgs.get(org_id)
    if org is None:
        raise NotFound(resource="organisation", ident=str(org_id))
    return OrgAccess(org, role, member)


async def authorised_still(
    uow: UnitOfWork, principal: Principal, org_id: uuid.UUID, required: Role, now: datetime
) -> None:
    """``authorise`` again, where a change is written, after it passed in an earlier unit of
    work of the same request: the caller's standing (their membership, or their key's
    creator's) is read again as ``uow`` reads it, with the same errors (a member's membership
    is required, which a store may check with the commit: ``NotAMember`` may come from
    there), and a key itself too (one revoked or expired since the request began is
    refused); the organisation is not, as it was found then and organisations are never
    removed (a superadmin's, that the user is still there)."""
    if principal.key is not None:
        key = await uow.repository(API_KEYS).get(principal.key.id)
        if key is None or not key.usable_at(now):
            raise Forbidden(reason="the API key was revoked or has expired")
    elif not principal.is_superadmin and required is Role.ORGMEMBER:
        # any active membership holds that role (``ORG_ROLES``): required, not read, so the
        # store may check it with the commit
        await Members(uow).require_active(org_id, principal.require_user().id)
        return
    await _standing(uow, principal, org_id, required)


async def _standing(
    uow: UnitOfWork, principal: Principal, org_id: uuid.UUID, required: Role
) -> tuple[Role, Member | None]:
    """The caller's role in ``org_id`` (and membership), checked against ``required``, as
    ``uow`` reads them: a member's membership, and a superadmin, who holds none, themselves:
    one deleted since the request signed in is an unknown user (as a member whose membership
    went is refused), in every unit of work that asks, whether it changes something or not
    (a reading one answers from the storage's cache of users, which a commit clears)."""
    if principal.key is not None:
        held = await key_role(uow, principal.key) if principal.key.org_id == org_id else None
        if held is None:
            raise NotAMember(org_id=str(org_id))
        role, member = held, None
    elif principal.is_superadmin:
        user = principal.require_user()
        if await uow.repository(USERS).get(user.id) is None:
            raise NotFound(resource="user", ident=user.id)
        role, member = Role.SUPERADMIN, None
    else:
        user = principal.require_user()
        member = await Members(uow).active_of_user_in(org_id, user.id)
        if member is None:
            raise NotAMember(org_id=str(org_id))
        role = member.role
    roles.require(role, required)
    return role, member
