"""A secret the database holds, read for ``fourcorner check`` through a connection the check
opened read-only: the storage adapters would apply pending migrations when they open, and the
check changes nothing. The statement and the decoding are the stores' own (``Tables``, the
record codec); opening it is what the service does with it (``application.sealed``)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import attrs

from fourcorner.adapters.sql.codec import UNREADABLE, make_converter
from fourcorner.adapters.sql.dialect import Dialect
from fourcorner.adapters.sql.table import Tables
from fourcorner.application.ports import KeySealer
from fourcorner.application.sealed import FIELDS, SealedField
from fourcorner.application.storage import Query
from fourcorner.domain.errors import SecretUnusable

# records read at most per field to find one with a secret (a certificate may have none)
LOOKED_AT = 200

Fetch = Callable[[str, Sequence[object]], Sequence[Sequence[Any]]]


@attrs.frozen
class StoredSecret:
    """One record's sealed secret, as stored."""

    field: SealedField[Any]
    record: Any

    @property
    def name(self) -> str:
        """``the private key of certificate <id>``."""
        return f"the {self.field.secret} of {self.field.resource} {self.record.id}"

    def problem(self, sealer: KeySealer) -> str | None:
        """Why ``sealer`` does not open it, or None when it does."""
        try:
            self.field.open(sealer, self.record)
        except SecretUnusable as e:
            return e.reason
        return None


def first(fetch: Fetch, dialect: Dialect) -> StoredSecret | None:
    """The first stored secret found (certificates' private keys first, then webhooks'
    signing secrets), reading with ``fetch`` (SQL text of ``dialect``, parameters → rows);
    None when the database holds none. ``ValueError`` when a record read cannot be decoded."""
    tables, converter = Tables(dialect), make_converter()
    for field in FIELDS:
        statement = tables(field.collection).page(Query(limit=LOOKED_AT))
        for row in fetch(statement.sql, statement.params):
            try:
                record = converter.loads(row[0], field.collection.type)
            except UNREADABLE as e:
                raise ValueError(f"a stored {field.resource} cannot be read ({e})") from None
            if getattr(record, field.attribute):
                return StoredSecret(field, record)
    return None
