"""The role ladder: superadmin ⊇ orgadmin ⊇ orgmember ⊇ user.

Organisation roles hold only inside their organisation; ``superadmin`` holds everywhere.
"""

from __future__ import annotations

import enum

from fourcorner.domain.errors import RoleNotPermitted


class Role(enum.Enum):
    USER = "user"
    ORGMEMBER = "orgmember"
    ORGADMIN = "orgadmin"
    SUPERADMIN = "superadmin"

    @property
    def rank(self) -> int:
        return _RANK[self]

    def satisfies(self, required: Role) -> bool:
        """Whether a caller holding this role may call an endpoint that requires ``required``."""
        return self.rank >= required.rank


_RANK = {Role.USER: 0, Role.ORGMEMBER: 1, Role.ORGADMIN: 2, Role.SUPERADMIN: 3}

ORG_ROLES = (Role.ORGMEMBER, Role.ORGADMIN)


def require(held: Role, required: Role) -> None:
    """Raise ``RoleNotPermitted`` unless ``held`` satisfies ``required``."""
    if not held.satisfies(required):
        raise RoleNotPermitted(required=required.value, held=held.value)


def highest(*roles: Role) -> Role:
    return max(roles, key=lambda r: r.rank)


def lower(a: Role, b: Role) -> Role:
    """The lower of two roles on the ladder: what a caller holds when both bound it (an API
    key's own role and its creator's current role)."""
    return a if a.rank <= b.rank else b
