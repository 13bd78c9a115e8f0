"""Upgrading a database to migration 0005 (users bound to their identity): users recorded
before it keep their ids (their token's subject), memberships and sign-in."""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import attrs
import pytest

from fourcorner.adapters.auth.local import subject_for
from fourcorner.adapters.sql.codec import make_converter
from fourcorner.adapters.system import system_clock
from fourcorner.application import users
from fourcorner.application.access import Principal
from fourcorner.application.collections import MEMBERS
from fourcorner.application.identity import Identity
from fourcorner.domain import clock
from fourcorner.domain.errors import Unauthorised
from fourcorner.domain.roles import Role
from fourcorner.domain.user import identity_key
from records import context
from records import user as legacy_user
from upgrade import Upgraded

EMAIL = "carol@example.com"
OLD_ID = subject_for(EMAIL)
ORG = uuid.UUID(int=9)
UPGRADE = 5  # the migration that binds users to their identities


def old_rows() -> tuple[tuple[Any, ...], tuple[Any, ...]]:
    """A users row and a members row as the code before migration 0005 wrote them."""
    user = legacy_user(OLD_ID, "Carol")
    data = make_converter().unstructure(user)
    for new in ("issuer", "subject", "tokens_not_before"):
        data.pop(new)
    created = clock.sortable(user.created_at)
    user_row = (OLD_ID, EMAIL, "Carol", "user", "", created, "carol", json.dumps(data))
    member = {
        "id": str(uuid.uuid4()),
        "org_id": str(ORG),
        "user_ref": OLD_ID,
        "role": "orgmember",
        "status": "ACTIVE",
        "created_at": user.created_at.isoformat(),
        "created_by": {"user_id": OLD_ID},
        "last_modified_at": user.created_at.isoformat(),
    }
    member_row = (
        member["id"],
        "orgmember",
        "ACTIVE",
        OLD_ID,
        "",
        "",
        created,
        str(ORG),
        "",
        json.dumps(member),
    )
    return user_row, member_row


INSERT_USER = (
    'INSERT INTO "users" ("id", "email", "name", "role", "country_code", "created_at", '
    '"search_text", "data") VALUES ({})'
)
INSERT_MEMBER = (
    'INSERT INTO "members" ("id", "role", "status", "user_ref", "first_name", "last_name", '
    '"created_at", "org_id", "search_text", "data") VALUES ({})'
)


async def check_the_old_user_signs_in(storage: Any) -> None:
    ctx = context(storage, system_clock)
    now = datetime.now(UTC)
    identity = Identity(
        OLD_ID,
        EMAIL,
        "Carol",
        expires_at=now + timedelta(hours=1),
        issuer="fourcorner-local",
        issued_at=now,
    )
    for _ in range(2):
        user = await users.sign_in(ctx, identity)
        assert user.id == OLD_ID
        assert user.identity_key == identity_key("fourcorner-local", OLD_ID)
    async with ctx.reads() as uow:
        assert [m.org_id for m in await uow.repository(MEMBERS).all(userRef=OLD_ID)] == [ORG]
    # deleted, it is refused its old tokens, as any user is
    root = Principal(user=attrs.evolve(legacy_user("root"), role=Role.SUPERADMIN))
    assert await users.delete_many(ctx, root, [OLD_ID]) == [OLD_ID]
    with pytest.raises(Unauthorised):
        await users.sign_in(ctx, identity)


def old_inserts() -> list[tuple[str, tuple[Any, ...]]]:
    user_row, member_row = old_rows()
    return [(INSERT_USER, user_row), (INSERT_MEMBER, member_row)]


async def test_users_from_before_0005_keep_their_ids(upgraded: Upgraded) -> None:
    async with upgraded(UPGRADE, old_inserts()) as storage:
        await check_the_old_user_signs_in(storage)
