"""Seeded faults for the harness's own test: storage adapters that wrap the in-memory one and
get one thing wrong, each given to the container as its ``storage_adapter`` override (never
through a setting the service reads). Each is a bug a service of this kind could have."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import attrs

from fourcorner.adapters.memory import InMemoryStorage
from fourcorner.application.storage import Page, Query
from fourcorner.domain.filtering import Op
from fourcorner.domain.member import Member
from fourcorner.domain.roles import Role


class FaultyRepository:
    """A repository of ``collection`` with the fault's methods in front of the real one."""

    def __init__(self, inner: Any, collection: str, fault: Fault) -> None:
        self._inner = inner
        self._collection = collection
        self._fault = fault

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    async def list(self, query: Query) -> Page[Any]:
        return await self._fault.list(self._collection, self._inner, query)

    async def first(self, **equals: object) -> Any:
        return await self._fault.first(self._collection, self._inner, equals)

    async def add(self, item: Any) -> None:
        await self._inner.add(self._fault.adding(self._collection, item))


class FaultyUnitOfWork:
    def __init__(self, inner: Any, fault: Fault) -> None:
        self._inner = inner
        self._fault = fault

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def repository(self, collection: Any) -> Any:
        return FaultyRepository(self._inner.repository(collection), collection.name, self._fault)

    async def __aenter__(self) -> FaultyUnitOfWork:
        await self._inner.__aenter__()
        return self

    async def __aexit__(self, *exc: Any) -> Any:
        return await self._inner.__aexit__(*exc)


class Fault:
    """No fault: every call passes through. Subclasses get one thing wrong."""

    name = "none"

    def __init__(self) -> None:
        self.inner = InMemoryStorage()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def unit_of_work(self) -> FaultyUnitOfWork:
        return FaultyUnitOfWork(self.inner.unit_of_work(), self)

    def reader(self) -> FaultyUnitOfWork:
        return FaultyUnitOfWork(self.inner.reader(), self)

    async def list(self, collection: str, repo: Any, query: Query) -> Page[Any]:
        return await repo.list(query)

    async def first(self, collection: str, repo: Any, equals: dict[str, object]) -> Any:
        return await repo.first(**equals)

    def adding(self, collection: str, item: Any) -> Any:
        return item


class RoleCheckRemoved(Fault):
    """Every active member passes the role checks as an orgadmin."""

    name = "role check removed"

    async def first(self, collection: str, repo: Any, equals: dict[str, object]) -> Any:
        found = await repo.first(**equals)
        if collection == "members" and isinstance(found, Member):
            return attrs.evolve(found, role=Role.ORGADMIN)
        return found


class FilterInverted(Fault):
    """``eq`` on an organisation's ``legalName`` filters as ``ne``."""

    name = "filter operator inverted"

    async def list(self, collection: str, repo: Any, query: Query) -> Page[Any]:
        if collection == "organisations":
            where = tuple(
                attrs.evolve(c, op=Op.NE) if c.field.name == "legalName" and c.op is Op.EQ else c
                for c in query.where
            )
            query = attrs.evolve(query, where=where)
        return await repo.list(query)


class CursorSkips(Fault):
    """A page read with a cursor leaves out its first record."""

    name = "cursor skips a record"

    async def list(self, collection: str, repo: Any, query: Query) -> Page[Any]:
        page = await repo.list(query)
        if query.after is not None and page.items:
            return Page(page.items[1:], page.next_cursor)
        return page


class UniquenessUnchecked(Fault):
    """An organisation is stored without its legal identifier's key, so another with the
    same legal identifier is not found (by the use case, nor by the storage's index)."""

    name = "missing uniqueness check"

    def adding(self, collection: str, item: Any) -> Any:
        if collection == "organisations":
            return attrs.evolve(item, legal_key=f"{item.legal_key}#{item.id}")
        return item


class MembersOfEveryOrganisation(Fault):
    """An organisation's member list is not limited to the organisation."""

    name = "isolation: members of every organisation listed"

    async def list(self, collection: str, repo: Any, query: Query) -> Page[Any]:
        if collection == "members":
            where = tuple(c for c in query.where if c.field.name != "orgId")
            query = attrs.evolve(query, where=where)
        return await repo.list(query)


FAULTS: list[Callable[[], Fault]] = [
    RoleCheckRemoved,
    FilterInverted,
    CursorSkips,
    UniquenessUnchecked,
    MembersOfEveryOrganisation,
]
