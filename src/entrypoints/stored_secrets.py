"""The secrets the database holds, read for ``fourcorner check`` through a connection the
check opened read-only: the storage adapters would apply pending migrations when they open, and
the check changes nothing. The statements and the decoding are the stores' own (``Tables``, the
record codec); opening them is what the service does with them (``application.sealed``)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import attrs

from fourcorner.adapters.sql.codec import UNREADABLE, make_converter
from fourcorner.adapters.sql.dialect import Dialect
from fourcorner.adapters.sql.table import Tables
from fourcorner.application.ports import KeySealer
from fourcorner.application.sealed import FIELDS, SealedField
from fourcorner.application.storage import Cursor, Query, page_of
from fourcorner.domain.errors import SecretUnusable

PAGE = 200  # records read at once

Fetch = Callable[[str, Sequence[object]], Sequence[Sequence[Any]]]


@attrs.frozen
class StoredSecret:
    """One record's sealed secret, as stored."""

    field: SealedField[Any]
    record: Any

    @property
    def name(self) -> str:
        """``the private key of certificate <id>``."""
        return self.field.name(self.record.id)


@attrs.frozen
class Keys:
    """Which at-rest key opens each stored secret: how many the current key opens, those only
    the previous key opens (to be sealed again: ``fourcorner reseal``), and those neither opens,
    each with why."""

    current: int
    previous: tuple[StoredSecret, ...]
    unopened: tuple[tuple[StoredSecret, str], ...]


@attrs.frozen
class StoredSecrets:
    """Every secret the database holds (at least one)."""

    secrets: tuple[StoredSecret, ...]

    @property
    def name(self) -> str:
        """The name of the first, to show one."""
        return self.secrets[0].name

    def keys(self, sealer: KeySealer) -> Keys:
        current, previous, unopened = 0, [], []
        for secret in self.secrets:
            try:
                key = secret.field.key_of(sealer, secret.record)
            except SecretUnusable as e:
                unopened.append((secret, e.reason))
                continue
            if key == "previous":
                previous.append(secret)
            else:
                current += 1
        return Keys(current, tuple(previous), tuple(unopened))


def every(fetch: Fetch, dialect: Dialect) -> StoredSecrets | None:
    """Every stored secret (certificates' private keys, then webhooks' signing secrets, then
    SML tasks' migration keys), reading with ``fetch`` (SQL text of ``dialect``, parameters →
    rows) a page at a time; None when the database holds none. ``ValueError`` when a record
    read cannot be decoded."""
    tables, converter = Tables(dialect), make_converter()
    found: list[StoredSecret] = []
    for field in FIELDS:
        query = Query(limit=PAGE)
        while True:
            statement = tables(field.collection).page(query)
            records = []
            for row in fetch(statement.sql, statement.params):
                try:
                    records.append(converter.loads(row[0], field.collection.type))
                except UNREADABLE as e:
                    raise ValueError(f"a stored {field.resource} cannot be read ({e})") from None
            page = page_of(field.collection, records, query.limit)
            found += (StoredSecret(field, r) for r in page.items if getattr(r, field.attribute))
            if page.next_cursor is None:
                break
            query = attrs.evolve(query, after=Cursor.decode(page.next_cursor))
    return StoredSecrets(tuple(found)) if found else None
