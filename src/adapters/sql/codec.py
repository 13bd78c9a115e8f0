"""Records as the SQL stores keep them: one JSON text per record, in the ``data`` column.

UUIDs are strings, datetimes ISO 8601 with microseconds and their offset, enums their value,
tuples lists; nested attrs classes are objects keyed by attribute name. Keys absent from the
text take the field's default, and keys the class no longer has are ignored, so adding a
field with a default or dropping one needs no data migration.

The text is written by orjson, about ten times faster than the standard library's ``json``,
which wrote it before and still writes what orjson refuses: an integer past 64 bits, a lone
surrogate, a key that is not a string (a float that is not finite, which JSON has not and no
stored record holds, is written as ``null`` by orjson, as ``NaN`` by json). Each text is read
by the library that wrote it, told apart by the space ``json`` puts after a key's colon:
orjson would read a longer integer as a float. Records are structured without cattrs'
detailed validation, which halves that time: a stored record that no longer fits its class is
a bug whose message needs no path into the record.
"""

from __future__ import annotations

import json
import uuid
from collections import Counter
from collections.abc import Set
from datetime import datetime
from typing import Any, TypeVar

import orjson
from cattrs.errors import BaseValidationError
from cattrs.preconf.json import JsonConverter, configure_converter

T = TypeVar("T")

# datetimes and dataclasses are unstructured by the converter first: one left over (in a
# mapping typed ``Any``) is refused, as by ``json``, not written in orjson's own form
_PASSTHROUGH = orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_PASSTHROUGH_DATACLASS


class RecordConverter(JsonConverter):
    def dumps(self, obj: Any, unstructure_as: Any = None, **kwargs: Any) -> str:
        plain = self.unstructure(obj, unstructure_as=unstructure_as)
        if not kwargs:
            try:
                return orjson.dumps(plain, option=_PASSTHROUGH).decode()
            except TypeError:  # orjson.JSONEncodeError: json writes what it can of it
                pass
        return json.dumps(plain, **kwargs)

    def loads(self, data: bytes | str, cl: type[T], **kwargs: Any) -> T:
        text = data.decode() if isinstance(data, bytes) else data
        colon = text.find('":')  # after the first key: json spaces it, orjson does not
        if colon > 0 and text[colon + 2 : colon + 3] != " " and not kwargs:
            try:
                plain = orjson.loads(text)
            except orjson.JSONDecodeError:
                plain = json.loads(text)
        else:
            plain = json.loads(text, **kwargs)
        return self.structure(plain, cl)


UNREADABLE: tuple[type[Exception], ...] = (
    ValueError,
    TypeError,
    KeyError,
    AttributeError,
    BaseValidationError,
)
"""What ``RecordConverter.loads`` raises on a stored text that is no record of its type (a
damaged row): for a caller that tells the operator so in a line rather than a traceback."""


def _datetime(value: Any, _: type) -> datetime:
    return datetime.fromisoformat(value)


def _uuid(value: Any, _: type) -> uuid.UUID:
    return uuid.UUID(value)


def make_converter() -> JsonConverter:
    """A converter of its own (never cattrs' global one) for the stores' JSON records."""
    converter = RecordConverter(
        detailed_validation=False,
        unstruct_collection_overrides={Set: list, Counter: dict},  # as cattrs' json preset
    )
    configure_converter(converter)
    converter.register_unstructure_hook(uuid.UUID, str)
    converter.register_structure_hook(uuid.UUID, _uuid)
    converter.register_unstructure_hook(datetime, lambda dt: dt.isoformat(timespec="microseconds"))
    converter.register_structure_hook(datetime, _datetime)
    return converter
