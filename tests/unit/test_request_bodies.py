"""Request bodies at the JSON edge: unknown fields are refused by name, the fields of a record
sent back whole with a PUT are accepted and ignored, details name the request's own fields."""

from __future__ import annotations

import enum
import json
import typing
import uuid
from typing import Any

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st

from fourcorner.domain.errors import Detail, InvalidInput
from fourcorner.domain.organisation import Mode
from fourcorner.domain.roles import Role
from fourcorner.entrypoints.http.choices import BODY_CHOICES
from fourcorner.entrypoints.http.converter import camel, json_fields, make_converter, structure
from fourcorner.entrypoints.http.routes import routes
from fourcorner.entrypoints.http.routing import sent_back

CONV = make_converter()
WITH_BODY = [r for r in routes() if r.body is not None]
SENT_BACK = [r for r in WITH_BODY if sent_back(r)]
# the smallest valid body of each PUT that takes a whole record back
MINIMAL: dict[str, dict[str, Any]] = {"/orgs/{orgId}/members/{memberId}": {"role": "orgmember"}}
JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=2) | st.dictionaries(st.text(max_size=3), inner),
    max_leaves=4,
)


def path_to(name: str) -> str:
    return f"$.{name}" if name.isidentifier() else f"$[{json.dumps(name)}]"


def test_every_put_of_a_record_takes_it_back_and_the_others_take_nothing_extra():
    assert {r.path for r in SENT_BACK} == {
        "/orgs/{orgId}",
        "/users/{uid}",
        "/orgs/{orgId}/members/{memberId}",
        "/orgs/{orgId}/certificates/{certId}",
        "/orgs/{orgId}/aps/{apId}",
        "/orgs/{orgId}/participants/{participantId}",
        "/orgs/{orgId}/webhooks/{id}",
    }
    assert all(not sent_back(r) for r in WITH_BODY if r.method == "POST")


@given(st.sampled_from(WITH_BODY), st.text(min_size=1, max_size=12), JSON)
def test_a_field_the_request_does_not_take_is_refused_by_name(route, name, value):
    if name in json_fields(route.body) or name in sent_back(route):
        return
    with pytest.raises(InvalidInput) as refused:
        structure(CONV, {name: value}, route.body, ignore=sent_back(route))
    assert Detail(path_to(name), "not a field of this request") in refused.value.details()


@given(st.sampled_from(SENT_BACK), st.data())
def test_the_fields_of_the_record_sent_back_are_ignored(route, data):
    minimal = MINIMAL.get(route.path, {})
    extra = sorted(sent_back(route) - json_fields(route.body))
    chosen = data.draw(st.lists(st.sampled_from(extra), unique=True), label="fields")
    body = {**{k: data.draw(JSON, label=k) for k in chosen}, **minimal}
    assert structure(CONV, body, route.body, ignore=sent_back(route)) == structure(
        CONV, minimal, route.body
    )


@given(st.lists(st.uuids().map(str) | st.text(max_size=8), max_size=5))
def test_a_bad_id_is_named_by_its_place_in_the_list(ids):
    route = next(r for r in WITH_BODY if r.path == "/orgs/{orgId}/participants/batch-delete")
    bad = [i for i, v in enumerate(ids) if not _is_uuid(v)]
    if not bad:
        assert list(structure(CONV, {"ids": ids}, route.body).ids) == [uuid.UUID(v) for v in ids]
        return
    with pytest.raises(InvalidInput) as refused:
        structure(CONV, {"ids": ids}, route.body)
    assert [d.field for d in refused.value.details()] == [f"$.ids[{i}]" for i in bad]


def _is_uuid(text: str) -> bool:
    try:
        uuid.UUID(text)
    except ValueError:
        return False
    return True


def test_an_organisation_reference_is_named_as_sent():
    route = next(r for r in WITH_BODY if r.path == "/users/{uid}/join_org")
    with pytest.raises(InvalidInput) as refused:
        structure(CONV, {"orgId": "nope"}, route.body)
    assert [d.field for d in refused.value.details()] == ["$.orgId"]


@given(st.sampled_from(WITH_BODY), st.data())
def test_a_wrong_value_is_explained_in_plain_words(route, data):
    """Every problem of a body speaks JSON (types, allowed values), never Python: no module
    path, type union or class name; and a long value sent is quoted only in part."""
    fields = sorted(json_fields(route.body))
    chosen = data.draw(st.lists(st.sampled_from(fields), min_size=1, unique=True), label="f")
    body = {k: data.draw(JSON | st.just("x" * 300), label=k) for k in chosen}
    try:
        structure(CONV, body, route.body)
    except InvalidInput as e:
        for d in e.details():
            assert "fourcorner" not in d.problem and " | " not in d.problem, d
            assert "<class" not in d.problem and "typing." not in d.problem, d
            assert "x" * 100 not in d.problem, d


def test_an_unknown_enum_value_names_the_allowed_ones():
    route = next(r for r in WITH_BODY if r.path == "/orgs/{orgId}" and r.method == "PUT")
    with pytest.raises(InvalidInput) as refused:
        structure(CONV, {"modeChangeRequest": "BOGUS"}, route.body)
    assert refused.value.details() == [
        Detail("$.modeChangeRequest", "expected one of WHITELABEL, SHARED, got 'BOGUS'")
    ]


def _kinds(cls: type, field: str) -> tuple[Any, ...]:
    tp = typing.get_type_hints(cls)[
        next(a.name for a in attrs.fields(cls) if camel(a.name) == field)
    ]
    return typing.get_args(tp) or (tp,)


CHOSEN = [
    (route, field, BODY_CHOICES[route.body.__name__, field])
    for route in WITH_BODY
    for field in sorted(json_fields(route.body))
    if (route.body.__name__, field) in BODY_CHOICES
    and any(isinstance(k, type) and issubclass(k, enum.Enum) for k in _kinds(route.body, field))
]


# the values of the enums of those fields, the ones they take and the ones they do not
NAMED = st.sampled_from(sorted({m.value for k in (Role, Mode) for m in k}))


@given(st.sampled_from(CHOSEN), NAMED | JSON)
def test_a_value_a_field_does_not_take_is_refused_naming_only_those_it_takes(chosen, value):
    """A field that takes fewer values than its type holds (a member's role, a requested
    mode) names exactly those it takes when it refuses one, never its type's others."""
    route, field, allowed = chosen
    if value in allowed or (value is None and type(None) in _kinds(route.body, field)):
        return
    with pytest.raises(InvalidInput) as refused:
        structure(CONV, {field: value}, route.body)
    problems = [d.problem for d in refused.value.details() if d.field == f"$.{field}"]
    shown = repr(value) if isinstance(value, str) else None
    assert len(problems) == 1 and problems[0].startswith(
        f"expected one of {', '.join(allowed)}, got "
    )
    assert shown is None or problems[0].endswith(shown)


def test_the_fields_that_take_fewer_values_are_the_roles_and_the_mode_requested():
    assert {(r.body.__name__, f) for r, f, _ in CHOSEN} == {
        ("CreateMember", "role"),
        ("UpdateMember", "role"),
        ("CreateApiKey", "role"),
        ("UpdateOrganisation", "modeChangeRequest"),
    }
