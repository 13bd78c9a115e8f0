"""Upgrading a database to migration 0016: the active API keys whose creator had left their
organisation (or been removed from it) end, so they do not come back when the creator joins
again; the keys of active members and of superadmins stay as they were."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import attrs

from fourcorner.application.collections import API_KEYS
from fourcorner.domain.api_key import ApiKey
from fourcorner.domain.member import Member, MemberStatus
from fourcorner.domain.organisation import UserRef
from fourcorner.domain.roles import Role
from records import user as make_user
from upgrade import Upgraded, key_row, member_row, user_row

UPGRADE = 16  # the migration under test
NOW = datetime(2026, 3, 1, tzinfo=UTC)
CAROL = make_user(str(uuid.UUID(int=1)), "Carol")
ROOT = attrs.evolve(make_user(str(uuid.UUID(int=2)), "Root"), role=Role.SUPERADMIN)
IN, REJOINING, LEFT = (uuid.UUID(int=n) for n in (21, 22, 23))  # Carol's organisations


def key(n: int, org: uuid.UUID, creator: str, *, active: bool = True) -> ApiKey:
    return ApiKey(
        id=uuid.UUID(int=100 + n),
        org_id=org,
        name=f"key {n}",
        description="",
        expires=NOW + timedelta(days=30),
        is_active=active,
        role=Role.ORGADMIN,
        key_hash=f"{n:064x}",
        prefix="fck_abcdef",
        created_at=NOW,
        created_by=UserRef(creator),
        last_modified_at=NOW,
    )


def membership(n: int, org: uuid.UUID, status: MemberStatus) -> Member:
    return Member(
        id=uuid.UUID(int=200 + n),
        org_id=org,
        user_ref=CAROL.id,
        role=Role.ORGADMIN,
        status=status,
        created_at=NOW,
        created_by=UserRef(CAROL.id),
        last_modified_at=NOW,
    )


KEYS = {
    key(1, IN, CAROL.id): True,  # she is a member: it stays
    key(2, REJOINING, CAROL.id): False,  # she left and asks to join again
    key(3, LEFT, CAROL.id): False,  # she left
    key(4, LEFT, ROOT.id): True,  # a superadmin's key holds without a membership
    key(5, IN, CAROL.id, active=False): False,
}


def rows() -> list[tuple[str, tuple[Any, ...]]]:
    return [
        user_row(CAROL),
        user_row(ROOT),
        member_row(membership(1, IN, MemberStatus.ACTIVE)),
        member_row(membership(2, REJOINING, MemberStatus.PENDING)),
        *(key_row(k) for k in KEYS),
    ]


async def test_the_keys_of_creators_who_left_end(upgraded: Upgraded) -> None:
    async with upgraded(UPGRADE, rows()) as storage, storage.unit_of_work() as uow:
        found = {k.id: k.is_active for k in await uow.repository(API_KEYS).all()}
    assert found == {k.id: active for k, active in KEYS.items()}
