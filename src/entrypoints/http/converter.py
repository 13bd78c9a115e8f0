"""The JSON edge: one cattrs converter for the interface (camelCase, strict types); the JSON
Schema of the same classes is ``json_schema``, so the OpenAPI document and the validation never
disagree.

Every request body is read by ``load_json`` (UTF-8, member names unique in their object,
nesting depth, text that can be written back) and ``structure`` (types, and the text lengths of
``limits``).

An object may hold only the fields its class declares: any other is refused (AT-1001, one
detail per field, ``$.legalname``), at every depth. The one exception is for whole records sent
back (``structure(..., ignore=...)``): fields the resource shows but a request does not take
(``id``, ``createdAt``, ...) are accepted at the top of the body and left out of the command
(``read_only`` refuses those sent with a value other than the record's).
"""

from __future__ import annotations

import enum
import json
import re
import types
import typing
import uuid
from collections.abc import Callable
from datetime import datetime
from typing import Any

import attrs
import cattrs
from cattrs.errors import (
    ClassValidationError,
    IterableValidationError,
    IterableValidationNote,
)
from cattrs.gen import make_dict_structure_fn, make_dict_unstructure_fn, override
from cattrs.v import format_exception

from fourcorner.application.absent import Absent
from fourcorner.domain import clock
from fourcorner.domain.errors import Detail, InvalidInput, MalformedBody
from fourcorner.domain.text import QUOTED_LENGTH, quoted, text_problem
from fourcorner.entrypoints.http.choices import BODY_CHOICES
from fourcorner.entrypoints.http.limits import MAX_JSON_DEPTH, text_length


def camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(p[:1].upper() + p[1:] for p in rest)


class UnknownFields(Exception):
    """Keys of a JSON object that its class does not declare."""

    def __init__(self, names: list[str]) -> None:
        super().__init__(f"unknown fields: {', '.join(names)}")
        self.names = names


class Refused(ValueError):
    """A value refused by a rule of this edge; its message is the problem as clients read it."""


def json_fields(cls: type) -> frozenset[str]:
    """The JSON names of an attrs class's fields."""
    return frozenset(camel(a.name) for a in attrs.fields(cls))


def _strict(kind: type, label: str) -> Any:
    def hook(value: Any, _: Any) -> Any:
        if type(value) is not kind and not (kind is float and type(value) is int):
            raise Refused(f"expected {label}, got {_json_type(value)}")
        return value

    return hook


def _json_type(value: Any) -> str:
    return {
        str: "a string",
        int: "an integer",
        float: "a number",
        bool: "a boolean",
        list: "an array",
        dict: "an object",
        type(None): "null",
    }.get(type(value), type(value).__name__)


def _datetime(value: Any, _: Any) -> datetime:
    if not isinstance(value, str):
        raise Refused(f"expected an ISO 8601 timestamp string, got {_json_type(value)}")
    try:
        # API.md: timestamps are UTC, written with Z; an offset names the instant as well
        return clock.parse(value, zoned=True)
    except clock.NoZone:
        raise Refused(
            f"{quoted(value)} has no time zone; write the time in UTC ending in Z"
            " (2027-12-31T00:00:00Z) or with its offset (+01:00)"
        ) from None
    except clock.OutOfRange:
        raise Refused(
            f"{quoted(value)} is outside the timestamps this service takes, {clock.RANGE}"
        ) from None
    except ValueError:
        raise Refused(f"{quoted(value)} is not an ISO 8601 timestamp") from None


def _uuid(value: Any, _: Any) -> uuid.UUID:
    if not isinstance(value, str):
        raise Refused(f"expected a UUID string, got {_json_type(value)}")
    try:
        return uuid.UUID(value)
    except ValueError:
        raise Refused(f"{quoted(value)} is not a UUID") from None


def _enum(cls: type[enum.Enum]) -> Any:
    def hook(value: Any, _: Any) -> enum.Enum:
        for member in cls:
            if member.value == value:
                return member
        _refuse_choice(tuple(str(m.value) for m in cls), value)

    return hook


def _refuse_choice(allowed: tuple[str, ...], value: Any) -> typing.NoReturn:
    raise Refused(f"expected one of {', '.join(allowed)}, got {_shown(value)}")


def _is_enum(tp: Any) -> bool:
    """An enum, or a union holding one (``Mode | Absent | None``)."""
    kinds = typing.get_args(tp) or (tp,)
    return any(isinstance(k, type) and issubclass(k, enum.Enum) for k in kinds)


def _chosen(conv: cattrs.Converter, tp: Any, limit: int, allowed: tuple[str, ...]) -> Any:
    """``_bounded`` of an enum field that takes only ``allowed`` of its values
    (``BODY_CHOICES``): any other is refused naming those, never the values the rules refuse
    anyway."""
    nullable = type(None) in typing.get_args(tp)

    def chosen(value: Any, _: Any) -> Any:
        _measured(value, limit)
        if value not in allowed and not (value is None and nullable):
            _refuse_choice(allowed, value)
        return conv.structure(value, tp)

    return chosen


def _measured(value: Any, limit: int) -> None:
    """Refuse a JSON string, or a string of a JSON array, longer than ``limit``."""
    if isinstance(value, str) and len(value) > limit:
        raise Refused(f"at most {limit} characters, got {len(value)}")
    if isinstance(value, list):
        for i, item in enumerate(value):
            if isinstance(item, str) and len(item) > limit:
                raise Refused(f"item {i}: at most {limit} characters, got {len(item)}")


def _bounded(conv: cattrs.Converter, tp: Any, limit: int) -> Any:
    """The hook of an attribute whose text holds at most ``limit`` characters: its JSON string,
    or each string of its JSON array, is measured before it is read as ``tp``."""

    def hook(value: Any, _: Any) -> Any:
        _measured(value, limit)
        return conv.structure(value, tp)

    return hook


def _is_sequence(tp: Any) -> bool:
    """``tuple[X, ...]`` or ``list[X]``."""
    return typing.get_origin(tp) in (tuple, list)


def _sequence(conv: cattrs.Converter, item: Any) -> Any:
    def hook(value: Any, tp: Any) -> tuple[Any, ...]:
        if not isinstance(value, list):
            raise Refused(f"expected an array, got {_json_type(value)}")
        out, failed = [], []
        for i, v in enumerate(value):
            try:
                out.append(conv.structure(v, item))
            except Exception as e:
                note = IterableValidationNote(f"Structuring {item} @ index {i}", i, item)
                e.__notes__ = [*getattr(e, "__notes__", []), note]
                failed.append(e)
        if failed:
            raise IterableValidationError(f"While structuring {tp!r}", failed, tp)
        return tuple(out)

    return hook


def present(tp: Any) -> Any:
    """``tp`` without ``Absent``: what a field that may be left out takes when it is sent."""
    args = tuple(a for a in typing.get_args(tp) if a is not Absent)
    return args[0] if len(args) == 1 else typing.Union[args]  # noqa: UP007


def _present(conv: cattrs.Converter, tp: Any) -> Any:
    inner = present(tp)
    return lambda value, _: conv.structure(value, inner)


# fields of nested records the specification says "may be absent": left out of an answer
# when they have no value, never written as null (a request may still send null)
ABSENT_WHEN_NONE = frozenset({"web_contact_url"})


def make_converter() -> cattrs.Converter:
    conv = cattrs.Converter(detailed_validation=True, forbid_extra_keys=False)
    conv.register_structure_hook(str, _strict(str, "a string"))
    conv.register_structure_hook(bool, _strict(bool, "a boolean"))
    conv.register_structure_hook(int, _strict(int, "an integer"))
    conv.register_structure_hook(float, _strict(float, "a number"))
    conv.register_structure_hook(datetime, _datetime)
    conv.register_unstructure_hook(datetime, clock.iso)
    conv.register_structure_hook(uuid.UUID, _uuid)
    conv.register_unstructure_hook(uuid.UUID, str)
    conv.register_structure_hook_factory(
        lambda t: isinstance(t, type) and issubclass(t, enum.Enum), _enum
    )
    conv.register_unstructure_hook_factory(
        lambda t: isinstance(t, type) and issubclass(t, enum.Enum), lambda _: lambda e: e.value
    )
    conv.register_structure_hook_factory(
        lambda t: Absent in typing.get_args(t), lambda t: _present(conv, t)
    )
    conv.register_structure_hook_factory(
        _is_sequence, lambda t: _sequence(conv, typing.get_args(t)[0])
    )

    def field_hook(cls: type, name: str, tp: Any) -> Any:
        allowed = BODY_CHOICES.get((cls.__name__, camel(name)))
        if allowed and _is_enum(tp):
            return _chosen(conv, tp, text_length(name), allowed)
        return _bounded(conv, tp, text_length(name))

    def structure_attrs(cls: type) -> Any:
        hints = typing.get_type_hints(cls)
        renames = {
            a.name: override(
                rename=camel(a.name), struct_hook=field_hook(cls, a.name, hints[a.name])
            )
            for a in attrs.fields(cls)
        }
        inner: Callable[[Any, Any], Any]
        inner = make_dict_structure_fn(cls, conv, **renames)  # type: ignore[arg-type]
        known = json_fields(cls)

        def hook(value: Any, t: Any) -> Any:
            if not isinstance(value, dict):
                raise Refused(f"expected an object, got {_json_type(value)}")
            unknown = [k for k in value if k not in known]
            if not unknown:
                return inner(value, t)
            problems: list[Exception] = [UnknownFields(unknown)]
            try:  # the declared fields are checked too, so one answer names every problem
                inner({k: v for k, v in value.items() if k in known}, t)
            except ClassValidationError as e:
                problems = [*e.exceptions, *problems]
            raise ClassValidationError(f"While structuring {cls.__name__}", problems, cls)

        return hook

    def unstructure_attrs(cls: type) -> Any:
        renames = {
            a.name: override(
                rename=camel(a.name),
                omit_if_default=a.name in ABSENT_WHEN_NONE and a.default is None,
            )
            for a in attrs.fields(cls)
        }
        return make_dict_unstructure_fn(cls, conv, **renames)  # type: ignore[arg-type]

    conv.register_structure_hook_factory(attrs.has, structure_attrs)
    conv.register_unstructure_hook_factory(attrs.has, unstructure_attrs)
    return conv


def _constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON value")


def load_json(raw: bytes) -> Any:
    """The JSON value of a request body (RFC 8259): UTF-8 text (a leading byte order mark
    let through), each object's member names unique, nested at most ``MAX_JSON_DEPTH`` deep,
    its strings and member names text that can be stored and written back (``domain.text``)."""
    try:  # strictly: json.loads(bytes) would read UTF-16 and UTF-32, and encoded surrogates
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise MalformedBody(reason="the body is not UTF-8") from None
    try:
        data = json.loads(text, parse_constant=_constant, object_pairs_hook=_members)
    except RecursionError:  # the parser gives up before the nesting limit is checked below
        raise MalformedBody(reason=f"the body nests deeper than {MAX_JSON_DEPTH} levels") from None
    except ValueError as e:
        if json.detect_encoding(raw) not in ("utf-8", "utf-8-sig"):  # UTF-16 or UTF-32 of ASCII
            raise MalformedBody(reason="the body is not UTF-8") from None
        raise MalformedBody(reason=f"the body is not valid JSON ({e})") from None
    _check_tree(data)
    return data


class _Repeated(dict[str, Any]):
    """An object in which the member ``name`` appears more than once: ``_check_tree``, which
    knows where it is, refuses it."""

    __slots__ = ("name",)

    def __init__(self, members: dict[str, Any], name: str) -> None:
        super().__init__(members)
        self.name = name


def _members(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """An object's members: with a name repeated, ``json.loads`` would keep the last value
    silently (``{"role": "orgmember", "role": "orgadmin"}``)."""
    members = dict(pairs)
    if len(members) == len(pairs):
        return members
    seen: set[str] = set()
    for name, _ in pairs:  # the first name given again
        if name in seen:
            break
        seen.add(name)
    return _Repeated(members, name)


Where = tuple["Where", str | int] | None  # a JSON path, innermost step last, built lazily


def _check_tree(data: Any) -> None:
    stack: list[tuple[Any, int, Where]] = [(data, 1, None)]
    while stack:
        value, depth, where = stack.pop()
        if isinstance(value, str):
            problem = text_problem(value)
            if problem:
                raise InvalidInput.one(json_path(where), problem)
        elif isinstance(value, dict | list):
            if depth > MAX_JSON_DEPTH:
                raise MalformedBody(reason=f"the body nests deeper than {MAX_JSON_DEPTH} levels")
            if isinstance(value, list):
                stack.extend((v, depth + 1, (where, i)) for i, v in enumerate(value))
                continue
            for k, v in value.items():
                problem = text_problem(k)
                if problem:
                    raise InvalidInput.one(json_path(where), f"a member name: {problem}")
                stack.append((v, depth + 1, (where, k)))
            if isinstance(value, _Repeated):
                raise InvalidInput.one(
                    json_path((where, value.name)),
                    "the member name is given more than once in its object",
                )


_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*")


def json_path(where: Where) -> str:
    """``$.contacts[0].name``: member names that are not plain words are quoted, and a long
    one (never a field's) is cut as ``_member`` cuts it, so a path repeats no long name back."""
    steps: list[str] = []
    while where is not None:
        where, step = where
        if isinstance(step, int):
            steps.append(f"[{step}]")
        elif len(step) > QUOTED_LENGTH:
            steps.append(_member(step))
        elif _NAME.fullmatch(step):
            steps.append(f".{step}")
        else:
            steps.append(f"[{json.dumps(step)}]")
    return "$" + "".join(reversed(steps))


def _format(exc: BaseException, tp: Any) -> str:
    """The problem as clients read it: the edge's own words (``Refused``), else the JSON the
    field takes, in plain words (never a Python type's name)."""
    if isinstance(exc, Refused):
        return str(exc)
    if isinstance(exc, KeyError):
        return format_exception(exc, tp)  # "required field missing"
    return f"expected {plain(tp)}" if tp is not None else "invalid value"


def plain(tp: Any) -> str:
    """The JSON a field of type ``tp`` takes, in words: "one of DEMO, SHARED or null"."""
    words = {
        str: "a string",
        bool: "a boolean",
        int: "an integer",
        float: "a number",
        datetime: "an ISO 8601 timestamp string",
        uuid.UUID: "a UUID string",
        type(None): "null",
    }
    if tp in words:
        return words[tp]
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        return "one of " + ", ".join(str(m.value) for m in tp)
    if typing.get_origin(tp) in (tuple, list):
        return "an array"
    if typing.get_origin(tp) in (typing.Union, types.UnionType):
        return " or ".join(plain(a) for a in typing.get_args(tp) if a is not Absent)
    if attrs.has(tp):
        return "an object"
    return "a JSON value"


def _shown(value: Any) -> str:
    """A JSON value as a problem quotes it: text quoted and bounded, others by their type."""
    return quoted(value) if isinstance(value, str) else _json_type(value)


def structure(
    conv: cattrs.Converter, data: Any, cls: type[Any], *, ignore: frozenset[str] = frozenset()
) -> Any:
    """Structure ``data`` into ``cls``, turning every failure into ``InvalidInput`` details.
    ``ignore``: top-level fields accepted and dropped when ``cls`` does not declare them (the
    read-only fields of a record sent back whole)."""
    if not isinstance(data, dict):
        raise InvalidInput.one("$", f"expected a JSON object, got {_json_type(data)}")
    if ignore:
        declared = json_fields(cls)
        data = {k: v for k, v in data.items() if k in declared or k not in ignore}
    try:
        return conv.structure(data, cls)
    except cattrs.BaseValidationError as e:
        raise InvalidInput(_details(e, "$", None)) from None
    except (TypeError, ValueError) as e:
        raise InvalidInput.one("$", str(e)) from None


def _details(exc: BaseException, path: str, tp: Any) -> list[Detail]:
    """The problems of a failed ``structure`` with their JSON paths (as ``transform_error``
    finds them, with the attributes' JSON names, and one detail per unknown field)."""
    if isinstance(exc, UnknownFields):
        return [Detail(path + _member(name), "not a field of this request") for name in exc.names]
    if isinstance(exc, IterableValidationError):
        indexed, rest = exc.group_exceptions()
        steps = [(e, f"{path}[{note.index!r}]", note.type) for e, note in indexed]
    elif isinstance(exc, ClassValidationError):
        named, rest = exc.group_exceptions()
        steps = [(e, f"{path}.{camel(note.name)}", note.type) for e, note in named]
    else:
        return [Detail(path, _format(exc, tp))]
    steps += [(e, path, None) for e in rest]
    return [detail for e, where, t in steps for detail in _details(e, where, t)]


def _member(name: str) -> str:
    """The JSON path step to the member ``name`` of an object; a long name (never a field's)
    is cut at ``QUOTED_LENGTH`` characters, an ellipsis marking the cut."""
    if len(name) > QUOTED_LENGTH:
        return f"[{json.dumps(name[:QUOTED_LENGTH] + '…', ensure_ascii=False)}]"
    return f".{name}" if name.isidentifier() else f"[{json.dumps(name)}]"
