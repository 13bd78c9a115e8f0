"""How an answer is rendered: one response class per answer, the allow-list of what it shows.

A response class is an attrs class that is never instantiated. Its fields name, in order, what
the answer shows of a record — each read from the record's attribute of the same name (or
``source``), written under its camelCase name (or ``json``) by the interface's converter — and
what the handler adds (``given``, always last). Nothing else of a record is shown: a field
added to a record reaches no answer until a response class names it. The answer's JSON Schema
(``Answer.schema``, for the OpenAPI document) is derived from the same class, so the document
and the answers cannot disagree.

``Answer`` renders one response class; ``Envelope`` and ``ListOf`` are lists of one.
"""

from __future__ import annotations

import operator
import types
import typing
from collections.abc import Callable, Mapping
from typing import Any

import attrs
import cattrs

from fourcorner.entrypoints.http.converter import camel
from fourcorner.entrypoints.http.json_schema import schema_of

_KEY = "fourcorner.http.shown"
_MEMO_SIZE = 1024
_PLAIN_TYPES = (str, int, bool, float)


@attrs.frozen
class Shown:
    """How one field of a response class is shown (the ``metadata`` of ``shown``/``given``)."""

    json: str | None = None
    source: str | None = None  # the record's attribute; default: the field's own name
    render: Callable[[Any], Any] | None = None  # instead of the converter's hook for the type
    omit_none: bool = False  # left out of the answer when absent (else written as null)
    given: bool = False  # passed by the handler, not read from the record
    const: str | None = None  # the same value in every answer (the ``type`` tag)
    schema: Mapping[str, Any] | None = None  # instead of the schema derived from the type
    description: str = ""


_PLAIN = Shown()


def shown(
    *,
    json: str | None = None,
    source: str | None = None,
    render: Callable[[Any], Any] | None = None,
    omit_none: bool = False,
    schema: Mapping[str, Any] | None = None,
    description: str = "",
) -> Any:
    """A field read from the record, with a name, source, rendering or schema of its own."""
    meta = Shown(json, source, render, omit_none, schema=schema, description=description)
    return attrs.field(metadata={_KEY: meta})


def given(*, schema: Mapping[str, Any] | None = None, description: str = "") -> Any:
    """A field the handler passes to ``Answer.dump`` (declared after every other field)."""
    return attrs.field(metadata={_KEY: Shown(given=True, schema=schema, description=description)})


def tag(value: str) -> Any:
    """The ``type`` field that names the kind of record, the same in every answer."""
    return attrs.field(metadata={_KEY: Shown(const=value)})


def _shown(a: attrs.Attribute[Any]) -> Shown:
    meta: Shown = a.metadata.get(_KEY, _PLAIN)
    return meta


def json_name(a: attrs.Attribute[Any]) -> str:
    return _shown(a).json or camel(a.name)


def _without_none(tp: Any) -> Any:
    if typing.get_origin(tp) in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        if len(args) == 1:
            return args[0]
    return tp


# a step of rendering: JSON name, getter, hook (None: the value as it is), omit None, constant
_Step = tuple[str, Callable[[Any], Any], Callable[[Any], Any] | None, bool, str | None]


@attrs.frozen
class Answer:
    """Renders records as the response class ``cls`` shows them; ``name`` is the schema's
    name in the OpenAPI document. ``record``: the answer is a resource's record, which clients
    may send back whole in a PUT (``routing.sent_back``); not so a list of ids or a status."""

    cls: type
    name: str
    record: bool = True
    # the last records rendered, by identity: records are immutable, and the storage adapters'
    # caches hand out the same record objects request after request
    _memo: dict[int, tuple[Any, dict[str, Any]]] = attrs.field(
        factory=dict, init=False, eq=False, repr=False
    )
    _plan: list[tuple[cattrs.Converter, list[_Step], frozenset[str]]] = attrs.field(
        factory=list, init=False, eq=False, repr=False
    )

    def __attrs_post_init__(self) -> None:
        seen_given = False
        for a in attrs.fields(self.cls):
            if _shown(a).given:
                seen_given = True
            elif seen_given:
                raise TypeError(f"{self.cls.__name__}.{a.name}: given fields come last")

    def _steps(self, conv: cattrs.Converter) -> tuple[list[_Step], frozenset[str]]:
        plan = self._plan
        if plan and plan[0][0] is conv:
            return plan[0][1], plan[0][2]
        hints = typing.get_type_hints(self.cls)
        steps: list[_Step] = []
        given_names: set[str] = set()
        for a in attrs.fields(self.cls):
            meta = _shown(a)
            if meta.given:
                given_names.add(a.name)
                continue
            tp = _without_none(hints[a.name])
            hook = meta.render
            if hook is None and meta.const is None and tp not in _PLAIN_TYPES:
                hook = conv.get_unstructure_hook(tp)
            getter = operator.attrgetter(meta.source or a.name)
            steps.append((json_name(a), getter, hook, meta.omit_none, meta.const))
        plan[:] = [(conv, steps, frozenset(given_names))]
        return steps, frozenset(given_names)

    def dump(self, conv: cattrs.Converter, obj: Any, **extra: Any) -> dict[str, Any]:
        """``obj`` as the response class shows it; ``extra``: the values of its given fields."""
        steps, given_names = self._steps(conv)
        if extra.keys() != given_names:
            raise TypeError(f"{self.name}: given {sorted(extra)}, declared {sorted(given_names)}")
        memo = self._memo
        known = memo.get(id(obj))
        if known is not None and known[0] is obj:
            data = known[1]
        else:
            data = {}
            for name, get, hook, omit_none, const in steps:
                if const is not None:
                    data[name] = const
                    continue
                value = get(obj)
                if value is None:
                    if not omit_none:
                        data[name] = None
                elif hook is None:
                    data[name] = value
                else:
                    data[name] = hook(value)
            if len(memo) >= _MEMO_SIZE:
                memo.clear()
            memo[id(obj)] = (obj, data)  # holding obj keeps its id from being reused
        if not extra:
            return dict(data)
        return {**data, **{camel(k): conv.unstructure(v) for k, v in extra.items()}}

    def fields(self) -> frozenset[str]:
        """The JSON names of the fields this answer shows."""
        return frozenset(json_name(a) for a in attrs.fields(self.cls))

    def schema(self, components: dict[str, Any]) -> dict[str, Any]:
        if self.name not in components:
            components[self.name] = {}  # reserved: a class may hold itself
            hints = typing.get_type_hints(self.cls)
            props: dict[str, Any] = {}
            required: list[str] = []
            for a in attrs.fields(self.cls):
                meta = _shown(a)
                name = json_name(a)
                if meta.const is not None:
                    prop: dict[str, Any] = {"type": "string", "const": meta.const}
                elif meta.schema is not None:
                    prop = dict(meta.schema)
                else:
                    tp = _without_none(hints[a.name]) if meta.omit_none else hints[a.name]
                    prop = _schema_of(tp, components)
                if meta.description:
                    prop = {**prop, "description": meta.description}
                props[name] = prop
                if not meta.omit_none:
                    required.append(name)
            components[self.name] = {"type": "object", "properties": props, "required": required}
        return {"$ref": f"#/components/schemas/{self.name}"}


def _is_response_class(tp: Any) -> bool:
    return attrs.has(tp) and tp.__module__.startswith(__name__.rpartition(".")[0] + ".")


def _schema_of(tp: Any, components: dict[str, Any]) -> dict[str, Any]:
    """``json_schema.schema_of``, except that a response class held in another (a nested list of
    them) has its schema made as an answer's: with its fields' own schemas and names."""
    if _is_response_class(tp):
        return Answer(tp, tp.__name__.removesuffix("Response")).schema(components)
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if origin in (tuple, list) and args and _is_response_class(args[0]):
        return {"type": "array", "items": _schema_of(args[0], components)}
    if origin in (typing.Union, types.UnionType) and any(map(_is_response_class, args)):
        inner = [_schema_of(a, components) for a in args if a is not type(None)]
        return {"anyOf": [*inner, {"type": "null"}]}
    return schema_of(tp, components)


@attrs.frozen
class Envelope:
    """A list answer: ``{"items": [...], "nextCursor": ...}`` of an answer."""

    answer: Answer

    def schema(self, components: dict[str, Any]) -> dict[str, Any]:
        return {
            "type": "object",
            "properties": {
                "items": {"type": "array", "items": self.answer.schema(components)},
                "nextCursor": {"anyOf": [{"type": "string"}, {"type": "null"}]},
            },
            "required": ["items", "nextCursor"],
        }


@attrs.frozen
class ListOf:
    """A JSON array of an answer."""

    answer: Answer

    def schema(self, components: dict[str, Any]) -> dict[str, Any]:
        return {"type": "array", "items": self.answer.schema(components)}


@attrs.frozen
class Text:
    """An answer that is not JSON (XML, HTML, scripts, metrics); ``content_type`` of the route."""

    description: str = ""

    def schema(self, components: dict[str, Any]) -> dict[str, Any]:
        out: dict[str, Any] = {"type": "string"}
        if self.description:
            out["description"] = self.description
        return out


Response = Answer | Envelope | ListOf | Text


XML = Text("an XML document")
