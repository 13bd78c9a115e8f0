"""Membership of a user in an organisation: pending → member, or rejected; removed by leaving
or by an orgadmin. An organisation always keeps at least one active orgadmin."""

from __future__ import annotations

import enum
import uuid
from collections.abc import Iterable
from datetime import datetime

import attrs

from domain.errors import AlreadyMember, LastOrgAdmin, NotPending
from domain.filtering import FieldSpec, FieldType, fields
from domain.organisation import UserRef
from domain.roles import ORG_ROLES, Role


class MemberStatus(enum.Enum):
    PENDING = "PENDING"
    ACTIVE = "ACTIVE"
    REJECTED = "REJECTED"


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


FILTERS = fields(
    FieldSpec("id", FieldType.UUID, lambda m: m.id),
    FieldSpec("role", FieldType.ENUM, lambda m: m.role, choices=tuple(r.value for r in ORG_ROLES)),
    FieldSpec(
        "status", FieldType.ENUM, lambda m: m.status, choices=tuple(s.value for s in MemberStatus)
    ),
    FieldSpec("userRef", FieldType.STRING, lambda m: m.user_ref),
    FieldSpec("firstName", FieldType.STRING, lambda m: m.first_name),
    FieldSpec("lastName", FieldType.STRING, lambda m: m.last_name),
    FieldSpec("createdAt", FieldType.DATETIME, lambda m: m.created_at),
)
SEARCH = ("firstName", "lastName", "userRef")
