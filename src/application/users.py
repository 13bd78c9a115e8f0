"""Use cases of users: sign-in, the caller's record, own updates, joining and leaving."""

from __future__ import annotations

import uuid
from datetime import datetime

import attrs

from fourcorner.application import api_keys, invitations
from fourcorner.application.access import Principal
from fourcorner.application.collections import ORGANISATIONS
from fourcorner.application.context import Context
from fourcorner.application.identity import Identity
from fourcorner.application.repositories import DeletedIdentities, Members, Users
from fourcorner.application.storage import UnitOfWork
from fourcorner.domain import member as membership
from fourcorner.domain.errors import (
    Conflict,
    Detail,
    InvalidInput,
    NotFound,
    Unauthorised,
)
from fourcorner.domain.fields import optional_problems
from fourcorner.domain.member import Member, MemberStatus
from fourcorner.domain.organisation import Organisation, UserRef
from fourcorner.domain.roles import Role
from fourcorner.domain.text import quoted
from fourcorner.domain.user import DeletedIdentity, User, identity_key, issued_in_time


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
    """The user bound to a verified token's identity (its issuer and subject); open
    invitations of the token's verified email address become the user's memberships.

    The first sign-in of an identity creates its user, with a random id; a record made before
    users were bound to identities (its id is the token's subject) is bound on its next
    sign-in. A token issued before a user of its identity was deleted is refused for good (a
    token that does not say when it was issued, too, once such a deletion is recorded).
    """
    user = await _signed_in(ctx, identity)
    await invitations.redeem(ctx, user, identity)
    return user


async def _signed_in(ctx: Context, identity: Identity) -> User:
    role = Role.SUPERADMIN if identity.superadmin else Role.USER
    key = identity_key(identity.issuer, identity.subject)
    async with ctx.reads() as reading:
        user = await Users(reading).by_identity(key)
    if user is not None and _up_to_date(user, identity, role):
        return user
    try:
        return await _sign_in(ctx, identity, key, role)
    except Conflict:
        # a first sign-in of the same identity, at the same time, created the user
        return await _sign_in(ctx, identity, key, role)


def _up_to_date(user: User, identity: Identity, role: Role) -> bool:
    """Whether ``user`` is as the token says; ``Unauthorised`` for a token that predates the
    deletion of an earlier user of the identity."""
    if not issued_in_time(identity.issued_at, user.tokens_not_before):
        raise Unauthorised(reason=_PREDATES_DELETION)
    return user.role is role and user.email == identity.email and user.subject != ""


_PREDATES_DELETION = "the token was issued before its user was deleted; sign in again"


async def _sign_in(ctx: Context, identity: Identity, key: str, role: Role) -> User:
    async with ctx.uow() as uow:
        users = Users(uow)
        user = await users.by_identity(key)
        if user is None:
            legacy = await users.get(identity.subject)
            user = legacy if legacy is not None and legacy.identity_key is None else None
        if user is not None:
            # held until this unit of work ends, so a deletion in between is seen: an update
            # must not write a deleted user back
            user = await users.lock(user.id)
        now = ctx.clock()
        if user is None:
            not_before = await _deleted_until(uow, identity)
            if not issued_in_time(identity.issued_at, not_before):
                raise Unauthorised(reason=_PREDATES_DELETION)
            uid = str(ctx.new_id())
            me = UserRef(uid)
            user = User(
                id=uid,
                email=identity.email,
                name=identity.name,
                role=role,
                terms_accepted_at=now,
                created_at=now,
                created_by=me,
                last_modified_at=now,
                last_modified_by=me,
                issuer=identity.issuer,
                subject=identity.subject,
                tokens_not_before=not_before,
            )
            await users.add(user)
        elif _up_to_date(user, identity, role):
            return user
        else:
            user = attrs.evolve(
                user,
                role=role,
                email=identity.email,
                issuer=identity.issuer,
                subject=identity.subject,
                last_modified_at=now,
            )
            await users.update(user)
        await uow.commit()
    return user


async def _deleted_until(uow: UnitOfWork, identity: Identity) -> datetime | None:
    """Tokens of ``identity`` issued up to this time are refused: a user of it was deleted
    (recorded under its issuer and subject, or under its subject alone for a user deleted
    before being bound)."""
    deletions = DeletedIdentities(uow)
    keys = {
        identity_key(identity.issuer, identity.subject),
        identity_key("", identity.subject),
    }
    found = [await deletions.by_identity(k) for k in sorted(keys)]
    return max((d.tokens_not_before for d in found if d is not None), default=None)


async def me(ctx: Context, principal: Principal) -> Me:
    user = principal.require_user()
    async with ctx.reads() as uow:
        user = await Users(uow).get(user.id) or user
        members = await Members(uow).active_of_user(user.id)
        orgs = uow.repository(ORGANISATIONS)
        found = []
        for m in members:
            org = await orgs.get(m.org_id)
            if org is not None:
                found.append(Membership(m, org))
    return Me(user, tuple(found))


async def update(ctx: Context, principal: Principal, uid: str, cmd: UpdateUser) -> User:
    user = principal.require_own(uid)
    # "" is no country, as a user without one shows it (so a GET answer can be PUT back)
    if problems := optional_problems("$", cmd.country_code, None):
        raise InvalidInput(problems)
    changes = {k: v for k, v in attrs.asdict(cmd, recurse=False).items() if v is not None}
    async with ctx.uow() as uow:
        users = Users(uow)
        # held: a sign-in that brings the identity's name or email writes the row meanwhile
        current = await users.lock(user.id)
        if current is None:
            raise NotFound(resource="user", ident=uid)
        updated = attrs.evolve(
            current, **changes, last_modified_at=ctx.clock(), last_modified_by=UserRef(user.id)
        )
        await users.update(updated)
        await uow.commit()
    return updated


async def delete_many(ctx: Context, principal: Principal, ids: list[str]) -> list[str]:
    """A superadmin deletes users and their memberships, all or none: refused (409
    ``LastOrgAdmin``) when that leaves an organisation without an orgadmin. An id that is no UUID
    is refused (400, ``$.ids[i]``) and an unknown one not found (404), as in every batch
    delete. A user made before users got random ids keeps their token's subject as id, which
    need not be a UUID: such an id is taken when it names a user.

    Each deletion is recorded against the user's identity: tokens issued before it never sign
    in again, and a later sign-in of the identity creates a new user with a new id. A deleted
    user's id is never used again, so the API keys they created stay dead.
    """
    principal.require(Role.SUPERADMIN)
    now = ctx.clock()
    async with ctx.uow() as uow:
        users, members = Users(uow), Members(uow)
        found = await _users_to_delete(users, ids)
        memberships = await _memberships_kept_to(uow, [user.id for user in found])
        await members.remove_many([m.id for m in memberships])
        for m in memberships:
            await api_keys.end_with_membership(uow, m.org_id, m.user_ref, now)
        deletions = DeletedIdentities(uow)
        for user in found:
            await users.remove(user.id)
            key = user.identity_key or identity_key("", user.id)
            earlier = await deletions.by_identity(key)
            if earlier is None:
                await deletions.add(DeletedIdentity(ctx.new_id(), key, user.id, now, now))
            else:
                latest = max(earlier.deleted_at, now)
                await deletions.update(attrs.evolve(earlier, user_id=user.id, deleted_at=latest))
        await uow.commit()
    return [user.id for user in found]


async def _memberships_kept_to(uow: UnitOfWork, user_ids: list[str]) -> list[Member]:
    """Every membership of the users ``user_ids``, each organisation of them locked (as every
    change of an organisation's members locks it, ``application.members``) and checked to
    keep an orgadmin without them (``LastOrgAdmin``)."""
    orgs, members = uow.repository(ORGANISATIONS), Members(uow)
    gone = set(user_ids)
    locked: set[uuid.UUID] = set()
    while True:
        found = [m for uid in user_ids for m in await members.of_user(uid)]
        # read again once their organisations are locked; none is added meanwhile, as making
        # a membership locks its user first (Users.lock_for_membership), but a check is cheap
        fresh = sorted({m.org_id for m in found} - locked, key=str)  # one lock order for all
        if not fresh:
            return found
        for org_id in fresh:
            await orgs.lock(org_id)
            membership.ensure_an_admin_remains_without(await members.of_org(org_id), gone)
        locked.update(fresh)


async def _users_to_delete(users: Users, ids: list[str]) -> list[User]:
    """The users of ``ids`` (each once, in the order given), locked until the unit of work
    ends: in the order of their ids, one lock order for every deletion. Ids that name no user
    are refused: 400 for those that are no UUID (each at its place), else 404."""
    found: dict[str, User] = {}
    missing: dict[int, str] = {}
    for i, uid in sorted(enumerate(ids), key=lambda place: place[1]):
        user = found.get(uid) or await users.lock(uid)
        if user is None:
            missing[i] = uid
        else:
            found[uid] = user
    malformed = [
        Detail(f"$.ids[{i}]", f"{quoted(uid)} is not a user id (a UUID)")
        for i, uid in sorted(missing.items())
        if not _uuid_text(uid)
    ]
    if malformed:
        raise InvalidInput(malformed)
    if missing:
        raise NotFound(resource="user", ident=missing[min(missing)])
    return [found[uid] for uid in dict.fromkeys(ids)]


def _uuid_text(text: str) -> bool:
    try:
        return bool(uuid.UUID(text))
    except ValueError:
        return False


async def join(ctx: Context, principal: Principal, uid: str, org_id: uuid.UUID) -> Member:
    """Ask to join an organisation: a pending member, for its orgadmins to approve."""
    caller = principal.require_own(uid)
    now = ctx.clock()
    async with ctx.uow() as uow:
        # the user first, as a deletion of users locks them: one deleted since signing in is
        # not made a member
        user = await Users(uow).lock_for_membership(caller.id)
        if user is None:
            raise NotFound(resource="user", ident=uid)
        # locked as every change of the organisation's members locks it (application.members)
        if await uow.repository(ORGANISATIONS).lock(org_id) is None:
            raise NotFound(resource="organisation", ident=str(org_id))
        members = Members(uow)
        existing = await members.of_user_in(org_id, user.id)
        fresh = Member(
            id=ctx.new_id(),
            org_id=org_id,
            user_ref=user.id,
            role=Role.ORGMEMBER,
            status=MemberStatus.PENDING,
            first_name=user.first_name,
            last_name=user.last_name,
            email=user.email,
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
    user = principal.require_own(uid)
    async with ctx.uow() as uow:
        # locked first, so the member set read next is not changing under the last-orgadmin rule
        await uow.repository(ORGANISATIONS).lock(org_id)
        members = Members(uow)
        mine = await members.of_user_in(org_id, user.id)
        if mine is None or mine.status is MemberStatus.REJECTED:
            raise NotFound(
                resource="membership",
                ident=str(org_id),
                missing=f"User {user.id} is no member of organisation {org_id}",
            )
        membership.ensure_an_admin_remains(await members.of_org(org_id), mine, None)
        await members.remove(mine.id)
        await api_keys.end_with_membership(uow, org_id, user.id, ctx.clock())
        await uow.commit()
    return mine
