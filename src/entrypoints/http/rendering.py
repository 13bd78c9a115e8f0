"""How an answer is rendered: one response class per answer, the allow-list of what it shows.

A response class is an attrs class that is never instantiated. Its fields name, in order, what
the answer shows of a record — each read from the record's attribute of the same name (or
``source``), written under its camelCase name (or ``json``) by the interface's converter — and
what the handler adds (``given``, always last). Nothing else of a record is shown: a field
added to a record reaches no answer until a response class names it. The answer's JSON Schema
(``Answer.schema``, for the OpenAPI document) is derived from the same class, so the document
and the answers cannot disagree.

``Answer`` renders one response class; ``ListReply`` and ``ListOf`` are lists of one.
"""

from __future__ import annotations

import types
import typing
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

import attrs
import cattrs

from fourcorner.entrypoints.http.converter import camel
from fourcorner.entrypoints.http.json_schema import schema_of

_T = TypeVar("_T")
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


@typing.dataclass_transform(frozen_default=True, field_specifiers=(attrs.field, shown, given, tag))
def response_class(cls: type[_T]) -> type[_T]:
    """``attrs.frozen``, for a response class with ``shown``/``given``/``tag`` fields.

    mypy's attrs plugin takes any value after a field's type for its default, so a ``shown``
    field (which has none) would be a default followed by fields without one; declared field
    makers, these three are read as what they are.
    """
    return attrs.frozen(cls)


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


_Render = Callable[[Any], dict[str, Any]]
_Given = list[tuple[str, str, Callable[[Any], Any] | None]]  # name, JSON name, hook


def _nullable(tp: Any) -> bool:
    return typing.get_origin(tp) in (typing.Union, types.UnionType) and type(None) in (
        typing.get_args(tp)
    )


def _compile(cls: type, conv: cattrs.Converter) -> tuple[_Render, _Given]:
    """A function that renders a record as ``cls`` shows it (written out field by field, as
    cattrs writes its own), and the given fields with their hooks."""
    hints = typing.get_type_hints(cls)
    lines = ["def render(obj):", "    d = {}"]
    scope: dict[str, Any] = {}
    given_fields: _Given = []
    for i, a in enumerate(attrs.fields(cls)):
        meta, name, tp = _shown(a), json_name(a), hints[a.name]
        hook = meta.render
        if hook is None and meta.const is None and _without_none(tp) not in _PLAIN_TYPES:
            hook = conv.get_unstructure_hook(_without_none(tp))
        if meta.given:
            given_fields.append((a.name, name, hook))
            continue
        if meta.const is not None:
            lines.append(f"    d[{name!r}] = {meta.const!r}")
            continue
        source = meta.source or a.name
        if not source.isidentifier():
            raise TypeError(f"{cls.__name__}.{a.name}: source {source!r} is not a name")
        scope[f"h{i}"] = hook
        value = f"h{i}(v)" if hook is not None else "v"
        lines.append(f"    v = obj.{source}")
        if meta.omit_none:
            lines.append(f"    if v is not None: d[{name!r}] = {value}")
        elif _nullable(tp) and hook is not None:
            lines.append(f"    d[{name!r}] = None if v is None else {value}")
        else:
            lines.append(f"    d[{name!r}] = {value}")
    lines.append("    return d")
    exec(compile("\n".join(lines), f"<render {cls.__name__}>", "exec"), scope)  # noqa: S102
    render: _Render = scope["render"]
    return render, given_fields


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
    # the renderer made for the converter last used (one converter per app)
    _compiled: list[tuple[cattrs.Converter, _Render, _Given, frozenset[str]]] = attrs.field(
        factory=list, init=False, eq=False, repr=False
    )

    def __attrs_post_init__(self) -> None:
        seen_given = False
        for a in attrs.fields(self.cls):
            if _shown(a).given:
                seen_given = True
            elif seen_given:
                raise TypeError(f"{self.cls.__name__}.{a.name}: given fields come last")

    def _renderer(self, conv: cattrs.Converter) -> tuple[_Render, _Given, frozenset[str]]:
        compiled = self._compiled
        if not compiled or compiled[0][0] is not conv:
            render, given_fields = _compile(self.cls, conv)
            names = frozenset(name for name, _, _ in given_fields)
            compiled[:] = [(conv, render, given_fields, names)]
        _, render, given_fields, names = compiled[0]
        return render, given_fields, names

    def dump(self, conv: cattrs.Converter, obj: Any, **extra: Any) -> dict[str, Any]:
        """``obj`` as the response class shows it; ``extra``: the values of its given fields."""
        render, given_fields, names = self._renderer(conv)
        if (extra or names) and extra.keys() != names:
            raise TypeError(f"{self.name}: given {sorted(extra)}, declared {sorted(names)}")
        memo = self._memo
        known = memo.get(id(obj))
        if known is not None and known[0] is obj:
            data = known[1]
        else:
            data = render(obj)
            if len(memo) >= _MEMO_SIZE:
                memo.clear()
            memo[id(obj)] = (obj, data)  # holding obj keeps its id from being reused
        out = data.copy()
        for name, json, hook in given_fields:
            value = extra[name]
            out[json] = value if hook is None or value is None else hook(value)
        return out

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
class ListReply:
    """A list answer: ``{"items": [...], "nextCursor": ...}`` of an answer."""

    answer: Answer

    def schema(self, components: dict[str, Any]) -> dict[str, Any]:
        return {
            "type": "object",
            "properties": {
                "items": {
                    "type": "array",
                    "items": self.answer.schema(components),
                    "description": "The records of this page, in the order of the sort.",
                },
                "nextCursor": {
                    "anyOf": [{"type": "string"}, {"type": "null"}],
                    "description": "Pass as `cursor` for the next page; null on the last page.",
                },
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


Response = Answer | ListReply | ListOf | Text


XML = Text("an XML document")
