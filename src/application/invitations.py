"""Invitations: an orgadmin invites an email address, and whoever signs in with that address,
verified by their identity provider, becomes a member.

``invite`` answers the same whether or not a user with that address exists (it never looks),
so it tells nothing about who has an account. An invitation is a member record with status
INVITED and no user; at most one per address and organisation. ``redeem`` runs at the end of
every sign-in: with a verified address it finds that address's open invitations (a read the
record cache answers, so it costs nothing when there are none) and makes each the user's
active membership, under the organisation's lock as every change of members is
(``application.members``). We chose activation at sign-in over an acceptance step: the
orgadmin chose the address and the role, and the person proves the address by signing in;
they may leave at once (``users.leave``).
"""

from __future__ import annotations

import uuid

import attrs

from fourcorner.application.access import Principal, authorise
from fourcorner.application.collections import ORGANISATIONS
from fourcorner.application.context import Context
from fourcorner.application.identity import Identity
from fourcorner.application.repositories import Members, Users
from fourcorner.domain import member as membership
from fourcorner.domain.errors import AlreadyMember
from fourcorner.domain.member import Member, MemberStatus
from fourcorner.domain.roles import Role
from fourcorner.domain.user import User


async def invite(
    ctx: Context, principal: Principal, org_id: uuid.UUID, email: str, role: Role
) -> Member:
    """An invitation of ``email`` to ``org_id`` with ``role`` (``AlreadyMember`` when that
    address has an open invitation there). A person only, never an API key: whoever redeems
    the invitation would keep the role after the key's revocation."""
    principal.require_user()
    address = membership.check_email(email)
    now = ctx.clock()
    async with ctx.uow() as uow:
        await authorise(uow, principal, org_id, Role.ORGADMIN, lock=True)
        members = Members(uow)
        if await members.invitation(org_id, address) is not None:
            raise AlreadyMember(user_id=address)
        invitation = Member(
            id=ctx.new_id(),
            org_id=org_id,
            user_ref="",
            role=role,
            status=MemberStatus.INVITED,
            email=address,
            created_at=now,
            created_by=principal.actor,
            last_modified_at=now,
        )
        await members.add(invitation)
        await uow.commit()
    return invitation


async def redeem(ctx: Context, user: User, identity: Identity) -> None:
    """Make the open invitations of the identity's verified address ``user``'s memberships."""
    if not identity.email_verified or not identity.email:
        return
    address = membership.normalise_email(identity.email)
    async with ctx.reads() as reading:
        found = await Members(reading).invitations_to(address)
    if not found:
        return
    now = ctx.clock()
    async with ctx.uow() as uow:
        # the user first, as a deletion of users locks them: one deleted since signing in
        # redeems nothing, and the invitations stay open
        if await Users(uow).lock_for_membership(user.id) is None:
            return
        members = Members(uow)
        for org_id in sorted({i.org_id for i in found}, key=str):  # one lock order for all
            if await uow.repository(ORGANISATIONS).lock(org_id) is None:
                continue
            # read again under the lock: another sign-in may have redeemed it meanwhile
            invitation = await members.invitation(org_id, address)
            if invitation is None:
                continue
            existing = await members.of_user_in(org_id, user.id)
            result = membership.redeem(invitation, existing, user.id, now)
            if existing is None:
                result = _named(result, user)
                await members.update(result)
            else:
                await members.remove(invitation.id)
                if result is not existing:
                    await members.update(result)
        await uow.commit()


def _named(m: Member, user: User) -> Member:
    return attrs.evolve(m, first_name=user.first_name, last_name=user.last_name)
