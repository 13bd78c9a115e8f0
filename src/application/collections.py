"""The aggregates the service stores, as collections of the storage port."""

from __future__ import annotations

from application.storage import Collection
from domain import api_key, member, organisation, user
from domain.api_key import ApiKey
from domain.filtering import FieldSpec, FieldType
from domain.member import Member
from domain.organisation import Organisation
from domain.user import User


def _org_id(spec_get: str = "org_id") -> FieldSpec:
    return FieldSpec("orgId", FieldType.UUID, lambda r: getattr(r, spec_get))


ORGANISATIONS: Collection[Organisation] = Collection(
    name="organisations",
    type=Organisation,
    columns={
        **organisation.FILTERS,
        "legalKey": FieldSpec("legalKey", FieldType.STRING, lambda o: o.legal_key),
        "createdBy": FieldSpec("createdBy", FieldType.STRING, lambda o: o.created_by.user_id),
    },
    filterable=frozenset(organisation.FILTERS),
    search=organisation.SEARCH,
    unique=(("legalKey",),),
)

USERS: Collection[User] = Collection(
    name="users",
    type=User,
    columns={**user.FILTERS},
    filterable=frozenset(user.FILTERS),
    search=user.SEARCH,
)

MEMBERS: Collection[Member] = Collection(
    name="members",
    type=Member,
    columns={**member.FILTERS, "orgId": _org_id()},
    # status is the list itself (members, or pending members), not a client filter
    filterable=frozenset(member.FILTERS) - {"status"},
    search=member.SEARCH,
    unique=(("orgId", "userRef"),),
)

API_KEYS: Collection[ApiKey] = Collection(
    name="api_keys",
    type=ApiKey,
    columns={
        **api_key.FILTERS,
        "orgId": _org_id(),
        "keyHash": FieldSpec("keyHash", FieldType.STRING, lambda k: k.key_hash),
    },
    filterable=frozenset(api_key.FILTERS),
    search=api_key.SEARCH,
    unique=(("keyHash",),),
)

ALL: tuple[Collection[object], ...] = (ORGANISATIONS, USERS, MEMBERS, API_KEYS)  # type: ignore[assignment]
