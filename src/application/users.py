"""Use cases of users: sign-in, the caller's record, own updates, joining and leaving."""

from __future__ import annotations

import uuid

import attrs

from application.access import Principal
from application.collections import MEMBERS, ORGANISATIONS, USERS
from application.context import Context
from application.identity import Identity
from domain import member as membership
from domain.errors import Detail, Forbidden, InvalidInput, NotFound
from domain.member import Member, MemberStatus
from domain.organisation import Organisation, UserRef
from domain.roles import Role
from domain.user import User


@attrs.frozen
class Membership:
    member: Member
    org: Organisation


@attrs.frozen
class Me:
    user: User
    memberships: tuple[Membership, ...]


@attrs.frozen
class UpdateUser:
    name: str | None = None
    phone: str | None = None
    country_code: str | None = None
    opted_in_to_receive_info: bool | None = None


async def sign_in(ctx: Context, identity: Identity) -> User:
    """The user behind a verified token; created from its claims on the first call."""
    role = Role.SUPERADMIN if identity.superadmin else Role.USER
    async with ctx.reads() as reading:
        user = await reading.repository(USERS).get(identity.subject)
    if user is not None and user.role is role and user.email == identity.email:
        return user
    async with ctx.uow() as uow:
        users = uow.repository(USERS)
        user = await users.get(identity.subject)
        if user is not None and user.role is role and user.email == identity.email:
            return user
        now = ctx.clock()
        if user is None:
            me = UserRef(identity.subject)
            user = User(
                id=identity.subject,
                email=identity.email,
                name=identity.name,
                role=role,
                terms_accepted_at=now,
                created_at=now,
                created_by=me,
                last_modified_at=now,
                last_modified_by=me,
            )
            await users.add(user)
        else:
            user = attrs.evolve(user, role=role, email=identity.email, last_modified_at=now)
            await users.update(user)
        await uow.commit()
    return user


async def me(ctx: Context, principal: Principal) -> Me:
    user = principal.require_user()
    async with ctx.reads() as uow:
        user = await uow.repository(USERS).get(user.id) or user
        members = await uow.repository(MEMBERS).all(userRef=user.id, status=MemberStatus.ACTIVE)
        orgs = uow.repository(ORGANISATIONS)
        found = []
        for m in members:
            org = await orgs.get(m.org_id)
            if org is not None:
                found.append(Membership(m, org))
    return Me(user, tuple(found))


def _own(principal: Principal, uid: str) -> User:
    user = principal.require_user()
    if user.id != uid:
        raise Forbidden(reason="a user may act only on their own account")
    return user


async def update(ctx: Context, principal: Principal, uid: str, cmd: UpdateUser) -> User:
    user = _own(principal, uid)
    # "" is no country, as a user without one shows it (so a GET answer can be PUT back)
    if cmd.country_code and not (
        len(cmd.country_code) == 2 and cmd.country_code.isalpha() and cmd.country_code.isupper()
    ):
        raise InvalidInput([Detail("$.countryCode", "a two-letter country code in capitals")])
    changes = {k: v for k, v in attrs.asdict(cmd, recurse=False).items() if v is not None}
    async with ctx.uow() as uow:
        users = uow.repository(USERS)
        current = await users.get(user.id)
        if current is None:
            raise NotFound(resource="user", ident=uid)
        updated = attrs.evolve(
            current, **changes, last_modified_at=ctx.clock(), last_modified_by=UserRef(user.id)
        )
        await users.update(updated)
        await uow.commit()
    return updated


async def delete_many(ctx: Context, principal: Principal, ids: list[str]) -> list[str]:
    """A superadmin deletes users and their memberships; unknown ids are left out of the answer."""
    principal.require(Role.SUPERADMIN)
    done: list[str] = []
    async with ctx.uow() as uow:
        users, members = uow.repository(USERS), uow.repository(MEMBERS)
        for uid in dict.fromkeys(ids):
            if await users.remove(uid):
                for m in await members.all(userRef=uid):
                    await members.remove(m.id)
                done.append(uid)
        await uow.commit()
    return done


async def join(ctx: Context, principal: Principal, uid: str, org_id: uuid.UUID) -> Member:
    """Ask to join an organisation: a pending member, for its orgadmins to approve."""
    user = _own(principal, uid)
    now = ctx.clock()
    async with ctx.uow() as uow:
        if await uow.repository(ORGANISATIONS).get(org_id) is None:
            raise NotFound(resource="organisation", ident=str(org_id))
        members = uow.repository(MEMBERS)
        existing = await members.first(orgId=org_id, userRef=user.id)
        fresh = Member(
            id=ctx.new_id(),
            org_id=org_id,
            user_ref=user.id,
            role=Role.ORGMEMBER,
            status=MemberStatus.PENDING,
            first_name=user.first_name,
            last_name=user.last_name,
            created_at=now,
            created_by=UserRef(user.id),
            last_modified_at=now,
        )
        result = membership.ask_to_join(existing, fresh)
        await (members.add(result) if existing is None else members.update(result))
        await uow.commit()
    return result


async def leave(ctx: Context, principal: Principal, uid: str, org_id: uuid.UUID) -> Member:
    """Leave at once (or withdraw a pending request); the last orgadmin cannot leave."""
    user = _own(principal, uid)
    async with ctx.uow() as uow:
        members = uow.repository(MEMBERS)
        mine = await members.first(orgId=org_id, userRef=user.id)
        if mine is None or mine.status is MemberStatus.REJECTED:
            raise NotFound(resource="membership", ident=str(org_id))
        membership.ensure_an_admin_remains(await members.all(orgId=org_id), mine, None)
        await members.remove(mine.id)
        await uow.commit()
    return mine
