"""The JSON Schema (OpenAPI 3.1) of the classes the interface's converter reads and writes:
the same names (camelCase), types and text lengths (``limits``) as ``converter``."""

from __future__ import annotations

import enum
import types
import typing
import uuid
from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any

import attrs

from fourcorner.application.absent import Absent
from fourcorner.entrypoints.http.converter import camel
from fourcorner.entrypoints.http.limits import text_length


def schema_of(tp: Any, components: dict[str, Any]) -> dict[str, Any]:
    """The JSON Schema (OpenAPI 3.1) of a type as this converter reads and writes it."""
    if tp is str:
        return {"type": "string"}
    if tp is bool:
        return {"type": "boolean"}
    if tp is int:
        return {"type": "integer"}
    if tp is float:
        return {"type": "number"}
    if tp is datetime:
        return {"type": "string", "format": "date-time"}
    if tp is uuid.UUID:
        return {"type": "string", "format": "uuid"}
    if tp is Any:
        return {}
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        return {"type": "string", "enum": [m.value for m in tp]}
    origin = typing.get_origin(tp)
    if origin in (tuple, list):
        return {"type": "array", "items": schema_of(typing.get_args(tp)[0], components)}
    if origin in (dict, Mapping):
        return {"type": "object"}
    if origin in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(tp) if a not in (type(None), Absent)]
        inner = (
            schema_of(args[0], components)
            if len(args) == 1
            else {"anyOf": [schema_of(a, components) for a in args]}
        )
        return {"anyOf": [inner, {"type": "null"}]}
    if attrs.has(tp):
        name = tp.__name__
        if name not in components:
            components[name] = {}  # reserve the name first: classes may refer to themselves
            components[name] = object_schema(tp, components)
        return {"$ref": f"#/components/schemas/{name}"}
    raise TypeError(f"no JSON schema for {tp!r}")


def object_schema(
    cls: type, components: dict[str, Any], *, omit: frozenset[str] = frozenset()
) -> dict[str, Any]:
    hints = typing.get_type_hints(cls)
    props: dict[str, Any] = {}
    required: list[str] = []
    for a in attrs.fields(cls):
        if a.name in omit:
            continue
        props[camel(a.name)] = schema_of(hints[a.name], components)
        if a.default is attrs.NOTHING:
            required.append(camel(a.name))
    out: dict[str, Any] = {"type": "object", "properties": props}
    if required:
        out["required"] = required
    return out


def _classes_in(tp: Any) -> list[type]:
    if attrs.has(tp):
        return [tp]
    return [c for arg in typing.get_args(tp) for c in _classes_in(arg)]


def read_classes(bodies: Iterable[type]) -> list[type]:
    """The classes the converter reads for these request bodies: them and those they hold."""
    seen: dict[type, None] = {}
    todo = list(bodies)
    while todo:
        cls = todo.pop()
        if cls in seen:
            continue
        seen[cls] = None
        hints = typing.get_type_hints(cls)
        todo.extend(c for a in attrs.fields(cls) for c in _classes_in(hints[a.name]))
    return list(seen)


def _with_max_length(schema: dict[str, Any], limit: int) -> dict[str, Any]:
    if schema.get("type") == "string":
        return {**schema, "maxLength": limit}
    out = dict(schema)
    if "items" in schema:
        out["items"] = _with_max_length(schema["items"], limit)
    if "anyOf" in schema:
        out["anyOf"] = [_with_max_length(s, limit) for s in schema["anyOf"]]
    return out


def declare_lengths(components: dict[str, Any], classes: Iterable[type]) -> None:
    """Add the ``maxLength`` the converter enforces to each string of these classes' schemas.

    Only classes the converter reads carry lengths: a class the service only writes keeps text
    of any length it was given (a certificate's subject, a delivery attempt's error)."""
    for cls in classes:
        props = components[cls.__name__]["properties"]
        for a in attrs.fields(cls):
            name = camel(a.name)
            props[name] = _with_max_length(props[name], text_length(a.name))
