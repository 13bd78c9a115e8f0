"""Read-only fields sent back with a PUT: accepted with the record's current value, refused
with any other.

Clients send records back whole (``routing.sent_back``): the fields a PUT does not take (a
participant's ``smpRef``, a certificate's ``certPem``, an organisation's ``sharedModeEnabled``)
are accepted when they hold the value the record has, which is what a record read with GET and
sent back unchanged holds. A different value is a change the PUT cannot make: 400 AT-1001,
one detail per field, instead of an answer that looks as if it had been made. The record's
own bookkeeping (``RECORD_METADATA``: its id, kind and who changed it when) stays ignored: it
says which version of the record the client read, not what it wants changed.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson

from fourcorner.domain.errors import Detail, InvalidInput

RECORD_METADATA = frozenset(
    {"id", "type", "createdAt", "createdBy", "lastModifiedAt", "lastModifiedBy"}
)
_SHOWN = 80  # characters of the current value a problem quotes


def sent_read_only(data: Any, read_only: frozenset[str]) -> dict[str, Any]:
    """The read-only fields of a PUT body (``data``, the JSON value) that are compared with the
    record: those of ``read_only`` that it holds, bookkeeping left out."""
    if not isinstance(data, dict):
        return {}
    return {k: v for k, v in data.items() if k in read_only and k not in RECORD_METADATA}


def check_unchanged(sent: Mapping[str, Any], current: Any) -> None:
    """Refuse ``sent`` read-only values that differ from the ``current`` record's (its JSON,
    as a GET answers it), naming each field and its current value."""
    if not isinstance(current, dict):
        return
    problems = [
        Detail(f"$.{name}", f"read-only: a PUT cannot change it (it is {_shown(current[name])})")
        for name, value in sent.items()
        if name in current and current[name] != value
    ]
    if problems:
        raise InvalidInput(problems)


def _shown(value: Any) -> str:
    text = orjson.dumps(value).decode()
    return text if len(text) <= _SHOWN else text[: _SHOWN - 1] + "…"
