"""Upgrading a database to migration 0015: the member records written without an email
address (an organisation's founder, and members made before members had one) take their
user's; invitations and records of no user keep theirs."""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime
from typing import Any

from fourcorner.adapters.sql.codec import make_converter
from fourcorner.application.collections import MEMBERS
from fourcorner.domain import clock
from fourcorner.domain.member import Member, MemberStatus
from fourcorner.domain.organisation import UserRef
from fourcorner.domain.roles import Role
from records import user as make_user
from upgrade import Upgraded

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
    conv = make_converter()
    created = clock.sortable(NOW)
    user = (
        USER.id,
        USER.email,
        USER.name,
        "user",
        "",
        created,
        "carol",
        json.dumps(conv.unstructure(USER)),
    )
    found: list[tuple[str, tuple[Any, ...]]] = [(INSERT["users"], user)]
    members = [
        member(FOUNDER, USER.id, MemberStatus.ACTIVE, ""),
        member(OLDER, USER.id, MemberStatus.PENDING, ""),
        member(INVITED, "", MemberStatus.INVITED, "dan@example.com"),
        member(NOBODYS, "gone", MemberStatus.ACTIVE, ""),
    ]
    for m in members:
        data = conv.unstructure(m)
        if m.id == OLDER:
            del data["email"]  # written before members had an address
        row = (
            str(m.id),
            m.role.value,
            m.status.value,
            m.user_ref or None,
            "",
            "",
            created,
            str(m.org_id),
            "",
            json.dumps(data),
            m.invited_email,
        )
        found.append((INSERT["members"], row))
    return found


INSERT = {
    "users": 'INSERT INTO "users" ("id", "email", "name", "role", "country_code", "created_at", '
    '"search_text", "data") VALUES ({})',
    "members": 'INSERT INTO "members" ("id", "role", "status", "user_ref", "first_name", '
    '"last_name", "created_at", "org_id", "search_text", "data", "invited_email") VALUES ({})',
}


async def check_the_addresses(storage: Any) -> None:
    async with storage.unit_of_work() as uow:
        found = {m.id: m.email for m in await uow.repository(MEMBERS).all()}
    assert found == EXPECTED


async def test_members_take_their_users_address(upgraded: Upgraded) -> None:
    async with upgraded(UPGRADE, rows()) as storage:
        await check_the_addresses(storage)
