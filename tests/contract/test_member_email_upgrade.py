"""Upgrading a database to migration 0015: the member records written without an email
address (an organisation's founder, and members made before members had one) take their
user's; invitations and records of no user keep theirs."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any

from fourcorner.application.collections import MEMBERS
from fourcorner.domain.member import Member, MemberStatus
from fourcorner.domain.organisation import UserRef
from fourcorner.domain.roles import Role
from records import user as make_user
from upgrade import Upgraded, member_row, user_row

UPGRADE = 15  # the migration under test
NOW = datetime(2026, 3, 1, tzinfo=UTC)
USER = make_user(str(uuid.UUID(int=1)), "Carol")
FOUNDER, OLDER, INVITED, NOBODYS = (uuid.UUID(int=n) for n in (11, 12, 13, 14))
EXPECTED = {
    FOUNDER: USER.email,
    OLDER: USER.email,
    INVITED: "dan@example.com",
    NOBODYS: "",
}


def member(ident: uuid.UUID, user_ref: str, status: MemberStatus, email: str) -> Member:
    return Member(
        id=ident,
        org_id=uuid.UUID(int=100 + ident.int),
        user_ref=user_ref,
        role=Role.ORGADMIN,
        status=status,
        created_at=NOW,
        created_by=UserRef(USER.id),
        last_modified_at=NOW,
        email=email,
    )


def rows() -> list[tuple[str, tuple[Any, ...]]]:
    """The users row and the members rows as the code before 0015 wrote them."""
    return [
        user_row(USER),
        member_row(member(FOUNDER, USER.id, MemberStatus.ACTIVE, "")),
        # written before members had an address
        member_row(member(OLDER, USER.id, MemberStatus.PENDING, ""), without="email"),
        member_row(member(INVITED, "", MemberStatus.INVITED, "dan@example.com")),
        member_row(member(NOBODYS, "gone", MemberStatus.ACTIVE, "")),
    ]


async def check_the_addresses(storage: Any) -> None:
    async with storage.unit_of_work() as uow:
        found = {m.id: m.email for m in await uow.repository(MEMBERS).all()}
    assert found == EXPECTED


async def test_members_take_their_users_address(upgraded: Upgraded) -> None:
    async with upgraded(UPGRADE, rows()) as storage:
        await check_the_addresses(storage)
