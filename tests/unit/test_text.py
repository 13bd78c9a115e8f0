"""Text the service accepts, and the JSON reader every request body goes through."""

from __future__ import annotations

import json
from typing import Any

import pytest
from aiohttp.test_utils import make_mocked_request
from hypothesis import given
from hypothesis import strategies as st
from lxml import etree

from fourcorner.domain.errors import InvalidInput, MalformedBody
from fourcorner.domain.text import text_problem
from fourcorner.entrypoints.http.converter import load_json
from fourcorner.entrypoints.http.limits import MAX_JSON_DEPTH
from fourcorner.entrypoints.http.routing import check_text

CHARS = (
    st.characters()
    | st.characters(categories=["Cs", "Cc", "Cn"])
    | st.sampled_from("\ud800\udfff\x00\x0b\ufffe\uffff\t\n\r\x7f\x85")
)


def writable(text: str) -> bool:
    """What lxml writes into XML, and UTF-8 encodes (the reference the rule follows)."""
    try:
        element = etree.Element("a")
        element.text = text
        etree.tostring(element)
    except ValueError:
        return False
    return True


@given(st.text(CHARS, max_size=30))
def test_text_is_accepted_exactly_when_xml_and_utf8_can_write_it(text):
    problem = text_problem(text)
    assert (problem is None) == writable(text), problem
    if problem is not None:
        assert problem.isascii()  # an error may quote it: it must itself be writable


def depth(value: Any) -> int:
    if isinstance(value, list):
        return 1 + max((depth(v) for v in value), default=0)
    if isinstance(value, dict):
        return 1 + max((depth(v) for v in value.values()), default=0)
    return 0


def strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [s for v in value for s in strings(v)]
    if isinstance(value, dict):
        return [s for k, v in value.items() for s in (k, *strings(v))]
    return []


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(CHARS, max_size=6),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(CHARS, max_size=4), inner),
    max_leaves=12,
)


@st.composite
def json_texts(draw: st.DrawFn) -> bytes:
    value = draw(JSON)
    for _ in range(draw(st.integers(0, 3)) * draw(st.sampled_from([1, 30, 400]))):
        value = draw(st.sampled_from([[value], {"k": value}]))
    return json.dumps(value).encode()


@given(json_texts())
def test_any_json_text_is_read_within_the_limits_or_refused_as_input(raw):
    try:
        data = load_json(raw)
    except (MalformedBody, InvalidInput) as e:
        assert e.message().isascii() and all(d.field.isascii() for d in e.details())
        return
    assert depth(data) <= MAX_JSON_DEPTH
    assert all(text_problem(s) is None for s in strings(data))
    assert json.loads(raw) == data


def test_the_nesting_limit_counts_arrays_and_objects():
    at_limit = "[" * (MAX_JSON_DEPTH - 1) + "{}" + "]" * (MAX_JSON_DEPTH - 1)
    assert depth(load_json(at_limit.encode())) == MAX_JSON_DEPTH
    for deeper in ("[" + at_limit + "]", "[" * 100_000 + "]" * 100_000):
        with pytest.raises(MalformedBody, match=str(MAX_JSON_DEPTH)):
            load_json(deeper.encode())


@pytest.mark.parametrize(
    ("raw", "field"),
    [
        (b'"\\ud800"', "$"),
        (b'{"a": ["ok", "\\udc00"]}', "$.a[1]"),
        (b'{"a b": {"c": "\\u0000"}}', '$["a b"].c'),
        (b'{"a": {"\\ud83d": 1}}', "$.a"),
        (b'{"\\ud83d\\ude00": "\\uffff"}', '$["\\ud83d\\ude00"]'),
    ],
)
def test_unwritable_text_is_refused_naming_where_it_is(raw, field):
    with pytest.raises(InvalidInput) as caught:
        load_json(raw)
    assert caught.value.details()[0].field == field


def test_surrogates_in_a_request_line_decoded_leniently_are_refused():
    """aiohttp's pure-Python parser decodes undecodable bytes of the request line as lone
    surrogates (``surrogateescape``)."""
    request = make_mocked_request("GET", "/orgs", match_info={"orgId": "a\udcff"})
    with pytest.raises(InvalidInput) as caught:
        check_text(request)
    assert caught.value.details()[0].field == "orgId"
    check_text(make_mocked_request("GET", "/orgs?search=%C3%A5", match_info={"orgId": "å"}))
