"""Records as the SQL stores keep them: one JSON text per record, in the ``data`` column.

UUIDs are strings, datetimes ISO 8601 with microseconds and their offset, enums their value,
tuples lists; nested attrs classes are objects keyed by attribute name. Keys absent from the
text take the field's default, and keys the class no longer has are ignored, so adding a
field with a default or dropping one needs no data migration.
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from cattrs.preconf.json import JsonConverter
from cattrs.preconf.json import make_converter as make_json_converter


def _datetime(value: Any, _: type) -> datetime:
    return datetime.fromisoformat(value)


def _uuid(value: Any, _: type) -> uuid.UUID:
    return uuid.UUID(value)


def make_converter() -> JsonConverter:
    """A converter of its own (never cattrs' global one) for the stores' JSON records."""
    converter = make_json_converter()
    converter.register_unstructure_hook(uuid.UUID, str)
    converter.register_structure_hook(uuid.UUID, _uuid)
    converter.register_unstructure_hook(datetime, lambda dt: dt.isoformat(timespec="microseconds"))
    converter.register_structure_hook(datetime, _datetime)
    return converter
