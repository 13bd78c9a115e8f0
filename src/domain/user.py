"""Users: created from a verified token's claims on their first authenticated call."""

from __future__ import annotations

from datetime import datetime

import attrs

from domain.filtering import FieldSpec, FieldType, fields
from domain.organisation import UserRef
from domain.roles import Role


@attrs.frozen
class User:
    id: str
    email: str
    created_at: datetime
    created_by: UserRef
    last_modified_at: datetime
    last_modified_by: UserRef
    name: str = ""
    phone: str = ""
    country_code: str = ""
    opted_in_to_receive_info: bool = False
    role: Role = Role.USER
    # Signing up means accepting the operator's terms and conditions; this is when.
    terms_accepted_at: datetime | None = None

    @property
    def first_name(self) -> str:
        return self.name.split(" ", 1)[0] if self.name else ""

    @property
    def last_name(self) -> str:
        parts = self.name.split(" ", 1)
        return parts[1] if len(parts) == 2 else ""


FILTERS = fields(
    FieldSpec("id", FieldType.STRING, lambda u: u.id),
    FieldSpec("email", FieldType.STRING, lambda u: u.email),
    FieldSpec("name", FieldType.STRING, lambda u: u.name),
    FieldSpec("role", FieldType.ENUM, lambda u: u.role, choices=("user", "superadmin")),
    FieldSpec("countryCode", FieldType.STRING, lambda u: u.country_code),
    FieldSpec("createdAt", FieldType.DATETIME, lambda u: u.created_at),
)
SEARCH = ("name", "email")
