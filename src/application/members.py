"""Use cases of an organisation's members, for its orgadmins.

Each change locks the organisation's record before it reads anything (``authorise(...,
lock=True)``), as joining and leaving do (``application.users``): changes to one
organisation's members run one at a time, so the member set a decision reads (the last
orgadmin rule, a pending request) is still the member set when its outcome is committed.
Making a user a member locks that user before the organisation
(``Users.lock_for_membership``), as deleting users does, so no membership outlives its user.

Only a person grants access (makes a member, invites, approves, changes a role): an API key
is refused (``Principal.require_user``), as it is when making keys (``api_keys.create``), so
no key leaves behind a person it made an orgadmin once it is revoked or expires. A key may
still list, reject and remove members, which grants nothing.
"""

from __future__ import annotations

import uuid

import attrs

from fourcorner.application import api_keys, invitations
from fourcorner.application.access import Principal, authorise
from fourcorner.application.collections import MEMBERS
from fourcorner.application.context import Context
from fourcorner.application.listing import ListRequest
from fourcorner.application.repositories import Members, Users
from fourcorner.application.scoped import InOrg, list_in_org, owned
from fourcorner.application.storage import Page, UnitOfWork
from fourcorner.domain import member as membership
from fourcorner.domain.errors import InvalidInput, NotFound
from fourcorner.domain.member import Member, MemberStatus
from fourcorner.domain.roles import ORG_ROLES, Role


@attrs.frozen
class CreateMember:
    """A user by id (made a member at once), or an email address (invited: see
    ``application.invitations``); one of the two."""

    user_id: str | None = None
    role: Role = Role.ORGMEMBER
    email: str | None = None


@attrs.frozen
class UpdateMember:
    role: Role


def _org_role(role: Role, field: str = "$.role") -> Role:
    if role not in ORG_ROLES:
        raise InvalidInput.one(field, "a member's role is orgmember or orgadmin")
    return role


async def list_members(
    ctx: Context,
    principal: Principal,
    org_id: uuid.UUID,
    request: ListRequest,
    status: MemberStatus | tuple[MemberStatus, ...],
) -> Page[Member]:
    statuses = status if isinstance(status, tuple) else (status,)
    scope = Members.with_status(statuses)
    return await list_in_org(ctx, principal, org_id, MEMBERS, request, scope=scope)


async def _member(uow: UnitOfWork, org_id: uuid.UUID, member_id: uuid.UUID) -> Member:
    return await owned(uow, MEMBERS, org_id, member_id, "member")


get = InOrg(MEMBERS, "member").get


async def create(
    ctx: Context, principal: Principal, org_id: uuid.UUID, cmd: CreateMember
) -> Member:
    """Make a user a member directly (a pending request of theirs is granted), or invite an
    email address. A person only, never an API key."""
    principal.require_user()
    role = _org_role(cmd.role)
    if (cmd.user_id is None) == (cmd.email is None):
        raise InvalidInput.one("$.userId", "give either userId or email")
    if cmd.user_id is None:
        assert cmd.email is not None
        return await invitations.invite(ctx, principal, org_id, cmd.email, role)
    now = ctx.clock()
    async with ctx.uow() as uow:
        # the user before the organisation, as a deletion of users locks them; refused only
        # once the caller is known to be an orgadmin here, who alone may learn who exists
        user = await Users(uow).lock_for_membership(cmd.user_id)
        await authorise(uow, principal, org_id, Role.ORGADMIN, lock=True)
        if user is None:
            raise NotFound(resource="user", ident=cmd.user_id)
        members = Members(uow)
        existing = await members.of_user_in(org_id, user.id)
        fresh = Member(
            id=ctx.new_id(),
            org_id=org_id,
            user_ref=user.id,
            role=role,
            status=MemberStatus.ACTIVE,
            first_name=user.first_name,
            last_name=user.last_name,
            email=user.email,
            member_since=now,
            created_at=now,
            created_by=principal.actor,
            last_modified_at=now,
        )
        result = membership.add_directly(existing, fresh)
        await (members.add(result) if existing is None else members.update(result))
        await uow.commit()
    return result


async def decide(
    ctx: Context, principal: Principal, org_id: uuid.UUID, ids: list[uuid.UUID], approve: bool
) -> list[Member]:
    """Approve or reject pending members, all or none; approving takes a person, never an API
    key."""
    if approve:
        principal.require_user()
    now = ctx.clock()
    async with ctx.uow() as uow:
        await authorise(uow, principal, org_id, Role.ORGADMIN, lock=True)
        members = Members(uow)
        done = []
        for mid in dict.fromkeys(ids):
            m = await _member(uow, org_id, mid)
            m = m.approve(now) if approve else m.reject(now)
            await members.update(m)
            done.append(m)
        await uow.commit()
    return done


async def update(
    ctx: Context, principal: Principal, org_id: uuid.UUID, member_id: uuid.UUID, cmd: UpdateMember
) -> Member:
    """Change a member's role; a person only, never an API key."""
    principal.require_user()
    role = _org_role(cmd.role)
    async with ctx.uow() as uow:
        await authorise(uow, principal, org_id, Role.ORGADMIN, lock=True)
        members = Members(uow)
        m = await _member(uow, org_id, member_id)
        membership.ensure_an_admin_remains(await members.of_org(org_id), m, role)
        m = m.with_role(role, ctx.clock())
        await members.update(m)
        await uow.commit()
    return m


async def delete(
    ctx: Context, principal: Principal, org_id: uuid.UUID, member_id: uuid.UUID
) -> Member:
    async with ctx.uow() as uow:
        await authorise(uow, principal, org_id, Role.ORGADMIN, lock=True)
        members = Members(uow)
        m = await _member(uow, org_id, member_id)
        membership.ensure_an_admin_remains(await members.of_org(org_id), m, None)
        await members.remove(m.id)
        await api_keys.end_with_membership(uow, org_id, m.user_ref, ctx.clock())
        await uow.commit()
    return m
