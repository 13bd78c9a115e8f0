"""Request bodies are RFC 8259 JSON (``converter.load_json``): UTF-8 text only, never UTF-16 or
UTF-32 (which ``json.loads`` of bytes would read), and no member name twice in one object
(where ``json.loads`` would keep the last value: ``{"role": "orgmember", "role": "orgadmin"}``).
A repeated name is refused as invalid input naming the member, at any depth."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fourcorner.domain.errors import InvalidInput, MalformedBody
from fourcorner.domain.text import QUOTED_LENGTH, text_problem
from fourcorner.entrypoints.http.converter import load_json

BODY = {"userId": "u-1", "role": "orgmember", "tags": ["a", {"b": 1.5, "c": None}]}

ENCODINGS = ["utf-16", "utf-16-le", "utf-16-be", "utf-32", "utf-32-le", "utf-32-be"]


@pytest.mark.parametrize("encoding", ENCODINGS)
def test_a_body_in_utf16_or_utf32_is_not_utf8(encoding: str) -> None:
    raw = json.dumps(BODY).encode(encoding)
    assert json.loads(raw) == BODY  # what the standard library would have read
    with pytest.raises(MalformedBody) as caught:
        load_json(raw)
    assert caught.value.reason == "the body is not UTF-8"


def test_utf8_with_a_byte_order_mark_is_read_and_bytes_that_are_not_utf8_are_refused() -> None:
    raw = json.dumps(BODY, ensure_ascii=False).encode()
    assert load_json(b"\xef\xbb\xbf" + raw) == load_json(raw) == BODY
    # a stray byte, an encoded surrogate (which json.loads of bytes lets through), a cut-off
    # sequence
    for bad in (b'{"a": "\xff"}', b'"\xed\xa0\x80"', b'{"a": "\xc3"}'):
        with pytest.raises(MalformedBody) as caught:
            load_json(bad)
        assert caught.value.reason == "the body is not UTF-8", bad
    with pytest.raises(MalformedBody):  # one mark is let through, not two
        load_json(b"\xef\xbb\xbf\xef\xbb\xbf{}")


@pytest.mark.parametrize(
    ("raw", "field"),
    [
        (b'{"userId": "u", "role": "orgmember", "role": "orgadmin"}', "$.role"),
        (b'{"a": {"b": 1, "b": 1}}', "$.a.b"),
        (b'{"items": [{}, {}, {"x": 1, "y": 2, "x": 3}]}', "$.items[2].x"),
        (b'[{"a b": {"a b": 1, "a b": 2}}]', '$[0]["a b"]["a b"]'),
        (b'{"\\u0061": 1, "a": 2}', "$.a"),  # the same name, written two ways
    ],
)
def test_a_repeated_member_name_is_invalid_input_naming_the_member(raw: bytes, field: str) -> None:
    with pytest.raises(InvalidInput) as caught:
        load_json(raw)
    assert caught.value.code == "AT-1001"
    [detail] = caught.value.details()
    assert detail.field == field and "more than once" in detail.problem


# --- the property: any object, with or without a member name repeated somewhere -------------

KEYS = st.text(max_size=4).filter(lambda k: text_problem(k) is None)
SCALARS = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=6).filter(lambda s: text_problem(s) is None)
)
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(KEYS, inner, max_size=3),
    max_leaves=12,
)
OBJECTS = st.dictionaries(KEYS, VALUES, max_size=4)

Path = tuple[str | int, ...]


def objects_in(value: Any, path: Path = ()) -> list[Path]:
    """The paths of the non-empty objects in ``value``, outermost first."""
    found: list[Path] = []
    if isinstance(value, dict):
        found += [path] if value else []
        for k, v in value.items():
            found += objects_in(v, (*path, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            found += objects_in(v, (*path, i))
    return found


def dump(value: Any, path: Path, where: Path, name: str, again: Any, at: int) -> str:
    """``value`` as JSON text, with the member ``name`` of the object at ``where`` given once
    more (with the value ``again``) as its ``at``-th member."""
    if isinstance(value, list):
        items = [dump(v, (*path, i), where, name, again, at) for i, v in enumerate(value)]
        return "[" + ", ".join(items) + "]"
    if not isinstance(value, dict):
        return json.dumps(value)
    members = [
        f"{json.dumps(k)}: {dump(v, (*path, k), where, name, again, at)}" for k, v in value.items()
    ]
    if path == where:
        members.insert(at, f"{json.dumps(name)}: {json.dumps(again)}")
    return "{" + ", ".join(members) + "}"


def spelt(path: Path) -> str:
    """The path as the service names fields: ``$.items[2].x``, ``$["a b"]``."""
    out = "$"
    for step in path:
        if isinstance(step, int):
            out += f"[{step}]"
        elif re.fullmatch(r"[A-Za-z_][A-Za-z0-9_-]*", step):
            out += f".{step}"
        else:
            out += f"[{json.dumps(step)}]"
    return out


@given(OBJECTS)
def test_an_object_without_repeated_names_is_read_as_json_loads_reads_it(value: Any) -> None:
    raw = json.dumps(value, ensure_ascii=False).encode()
    assert load_json(raw) == json.loads(raw) == value


@given(st.data())
def test_a_name_repeated_at_any_depth_is_refused_naming_that_member(data: st.DataObject) -> None:
    value = data.draw(OBJECTS.filter(bool))
    where = data.draw(st.sampled_from(objects_in(value)))
    target = value
    for step in where:
        target = target[step]
    names = list(target)
    name = data.draw(st.sampled_from(names))
    # anywhere after its first appearance, with any value (the same one, too)
    at = data.draw(st.integers(names.index(name) + 1, len(names)))
    again = data.draw(SCALARS | st.just(target[name]))
    raw = dump(value, (), where, name, again, at).encode()
    with pytest.raises(InvalidInput) as caught:
        load_json(raw)
    [detail] = caught.value.details()
    assert detail.field == spelt((*where, name)), raw


@given(st.integers(1, 20_000), st.integers(0, 3), st.booleans())
def test_a_path_names_a_member_by_at_most_quoted_length_characters(
    length: int, depth: int, repeated: bool
) -> None:
    """A member name is the client's text of any length: a path (here to a repeated name, or
    to text the service refuses) names each by at most ``QUOTED_LENGTH`` characters of it, so
    a 400 never repeats a long name back."""
    name = "n" * length
    inner = f'{{"{name}": 1, "{name}": 2}}' if repeated else f'{{"{name}": "\\u0000"}}'
    raw = f'{{"{name}": ' * depth + inner + "}" * depth
    with pytest.raises(InvalidInput) as caught:
        load_json(raw.encode())
    [detail] = caught.value.details()
    steps = depth + 1
    assert len(detail.field) <= 1 + steps * (QUOTED_LENGTH + 5)
    if length <= QUOTED_LENGTH:
        assert detail.field == "$" + f".{name}" * steps
    else:
        assert name[: QUOTED_LENGTH + 1] not in detail.field
