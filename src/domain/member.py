"""Membership of a user in an organisation: pending → member, or rejected; removed by leaving
or by an orgadmin. An organisation always keeps at least one active orgadmin.

An orgadmin may also invite an email address: an INVITED member with no user yet
(``user_ref`` empty), which becomes the active membership of the first user who signs in
with that address verified (``redeem``)."""

from __future__ import annotations

import enum
import uuid
from collections.abc import Collection, Iterable
from datetime import datetime

import attrs

from fourcorner.domain.errors import AlreadyMember, InvalidInput, LastOrgAdmin, NotPending
from fourcorner.domain.organisation import UserRef
from fourcorner.domain.roles import ORG_ROLES, Role


class MemberStatus(enum.Enum):
    PENDING = "PENDING"
    ACTIVE = "ACTIVE"
    REJECTED = "REJECTED"
    INVITED = "INVITED"  # an email address invited; no user yet


@attrs.frozen
class Member:
    id: uuid.UUID
    org_id: uuid.UUID
    user_ref: str
    role: Role
    status: MemberStatus
    created_at: datetime
    created_by: UserRef
    last_modified_at: datetime
    first_name: str = ""
    last_name: str = ""
    member_since: datetime | None = None
    # the address the membership was asked or invited for (set on records made since)
    email: str = ""

    def __attrs_post_init__(self) -> None:
        if self.role not in ORG_ROLES:
            raise ValueError(f"a member's role is orgmember or orgadmin, not {self.role.value}")

    @property
    def is_admin(self) -> bool:
        return self.status is MemberStatus.ACTIVE and self.role is Role.ORGADMIN

    def approve(self, at: datetime) -> Member:
        if self.status is not MemberStatus.PENDING:
            raise NotPending(member_id=str(self.id))
        return attrs.evolve(self, status=MemberStatus.ACTIVE, member_since=at, last_modified_at=at)

    def reject(self, at: datetime) -> Member:
        if self.status is not MemberStatus.PENDING:
            raise NotPending(member_id=str(self.id))
        return attrs.evolve(self, status=MemberStatus.REJECTED, last_modified_at=at)

    def with_role(self, role: Role, at: datetime) -> Member:
        return attrs.evolve(self, role=role, last_modified_at=at)

    @property
    def invited_email(self) -> str | None:
        """The address of an open invitation; None for every other record."""
        return self.email if self.status is MemberStatus.INVITED else None


def normalise_email(text: str) -> str:
    return text.strip().lower()


def check_email(text: str, field: str = "$.email") -> str:
    """An address to invite, normalised: ``local@domain``, no spaces, a dot in the domain."""
    address = normalise_email(text)
    local, _, domain = address.rpartition("@")
    if (
        not local
        or "." not in domain.strip(".")
        or any(c.isspace() or c in '@<>()[],;:\\"' for c in local + domain)
        or len(address) > 254
    ):
        raise InvalidInput.one(field, "an email address, such as name@example.com")
    return address


def redeem(invitation: Member, existing: Member | None, user_ref: str, at: datetime) -> Member:
    """The membership an invitation gives the user ``user_ref`` who signed in with its address:
    the invitation itself made active, or (when they have a record in the organisation already)
    that record: kept as it is when active, else made active with the invitation's role. The
    invitation is removed in the second case."""
    if existing is None:
        return attrs.evolve(
            invitation,
            user_ref=user_ref,
            status=MemberStatus.ACTIVE,
            member_since=at,
            last_modified_at=at,
        )
    if existing.status is MemberStatus.ACTIVE:
        return existing
    return attrs.evolve(
        existing,
        status=MemberStatus.ACTIVE,
        role=invitation.role,
        member_since=at,
        last_modified_at=at,
    )


def ask_to_join(existing: Member | None, fresh: Member) -> Member:
    """A user asks to join. A rejected request may be made again; a pending or active one not."""
    if existing is None:
        return fresh
    if existing.status is MemberStatus.REJECTED:
        return attrs.evolve(
            existing,
            status=MemberStatus.PENDING,
            role=Role.ORGMEMBER,
            last_modified_at=fresh.created_at,
        )
    raise AlreadyMember(user_id=existing.user_ref)


def add_directly(existing: Member | None, fresh: Member) -> Member:
    """An orgadmin makes a user a member: a pending request is granted, a rejected one reversed."""
    if existing is None:
        return fresh
    if existing.status is MemberStatus.ACTIVE:
        raise AlreadyMember(user_id=existing.user_ref)
    return attrs.evolve(
        existing,
        status=MemberStatus.ACTIVE,
        role=fresh.role,
        member_since=fresh.created_at,
        last_modified_at=fresh.created_at,
    )


def ensure_an_admin_remains(
    members: Iterable[Member], changed: Member, new_role: Role | None
) -> None:
    """Refuse a removal (``new_role`` None) or demotion that leaves no active orgadmin."""
    if not changed.is_admin or new_role is Role.ORGADMIN:
        return
    if not any(m.is_admin and m.id != changed.id for m in members):
        raise LastOrgAdmin()


def ensure_an_admin_remains_without(members: Iterable[Member], users: Collection[str]) -> None:
    """Refuse removing every membership of ``users`` (deleted) from an organisation whose
    members are ``members`` when that leaves it no active orgadmin."""
    current = list(members)
    leaving = [m for m in current if m.user_ref in users]
    if not any(m.is_admin for m in leaving):
        return
    if not any(m.is_admin and m.user_ref not in users for m in current):
        raise LastOrgAdmin(org_id=str(leaving[0].org_id))
