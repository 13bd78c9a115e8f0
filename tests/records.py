"""Records the storage tests build by hand."""

from __future__ import annotations

from datetime import UTC, datetime

from fourcorner.domain.organisation import UserRef
from fourcorner.domain.roles import Role
from fourcorner.domain.user import User

T0 = datetime(2026, 1, 2, 10, 0, tzinfo=UTC)


def user(ident: str = "u-1", name: str = "Ann") -> User:
    me = UserRef(ident)
    return User(
        id=ident,
        email=f"{ident}@example.com",
        name=name,
        role=Role.USER,
        terms_accepted_at=T0,
        created_at=T0,
        created_by=me,
        last_modified_at=T0,
        last_modified_by=me,
    )
