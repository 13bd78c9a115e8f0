"""The filter language: parsing, rendering, and the semantics every list shares."""

from datetime import UTC, datetime

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st

from domain import filtering
from domain.errors import InvalidFilter
from domain.filtering import FieldSpec, FieldType, Op


@attrs.frozen
class Rec:
    name: str
    mode: str | None
    active: bool
    count: int
    at: datetime


FIELDS = filtering.fields(
    FieldSpec("name", FieldType.STRING, lambda r: r.name),
    FieldSpec("mode", FieldType.ENUM, lambda r: r.mode, choices=("A", "B", "C"), nullable=True),
    FieldSpec("active", FieldType.BOOL, lambda r: r.active),
    FieldSpec("count", FieldType.INT, lambda r: r.count),
    FieldSpec("at", FieldType.DATETIME, lambda r: r.at),
)

texts = st.text(st.characters(codec="utf-8", exclude_characters="|"), max_size=8)
datetimes = st.datetimes(
    min_value=datetime(2000, 1, 1), max_value=datetime(2100, 1, 1), timezones=st.just(UTC)
)
records = st.lists(
    st.builds(
        Rec,
        name=texts,
        mode=st.sampled_from(["A", "B", "C", None]),
        active=st.booleans(),
        count=st.integers(-1000, 1000),
        at=datetimes,
    ),
    max_size=15,
)


def value_text(field: str):
    return {
        "name": texts,
        "mode": st.sampled_from(["A", "B", "C", "null"]),
        "active": st.sampled_from(["true", "false"]),
        "count": st.integers(-1000, 1000).map(str),
        "at": datetimes.map(lambda d: d.isoformat().replace("+00:00", "Z")),
    }[field]


@st.composite
def expressions(draw):
    field = draw(st.sampled_from(sorted(FIELDS)))
    spec = FIELDS[field]
    op = draw(st.sampled_from(sorted(filtering.OPS_BY_TYPE[spec.type], key=lambda o: o.value)))
    if op is Op.IN:
        values = draw(
            st.lists(value_text(field).filter(lambda v: v != "null"), min_size=1, max_size=3)
        )
        return f"{field}:in:{'|'.join(values)}"
    value = draw(value_text(field))
    if value == "null" and op not in (Op.EQ, Op.NE):
        value = "A"
    return f"{field}:{op.value}:{value}"


@given(expressions())
def test_any_accepted_filter_renders_back_to_the_same_string(expr):
    assert filtering.parse(expr, FIELDS).render() == expr


@given(expressions())
def test_parsing_the_rendering_gives_the_same_condition(expr):
    c = filtering.parse(expr, FIELDS)
    assert filtering.parse(c.render(), FIELDS) == c


@given(records, st.sampled_from(sorted(FIELDS)), st.data())
def test_eq_results_are_a_subset_of_the_unfiltered_list(recs, field, data):
    value = data.draw(value_text(field))
    cond = filtering.parse(f"{field}:eq:{value}", FIELDS)
    chosen = [r for r in recs if cond.matches(r)]
    assert all(r in recs for r in chosen)
    assert len(chosen) <= len(recs)


@given(records, st.sampled_from(["name", "mode", "count", "at"]), st.data())
def test_in_equals_the_union_of_its_eqs(recs, field, data):
    gen = value_text(field).filter(lambda v: v != "null")
    values = data.draw(st.lists(gen, min_size=1, max_size=4))
    in_cond = filtering.parse(f"{field}:in:{'|'.join(values)}", FIELDS)
    eqs = [filtering.parse(f"{field}:eq:{v}", FIELDS) for v in values]
    assert [r for r in recs if in_cond.matches(r)] == [
        r for r in recs if any(e.matches(r) for e in eqs)
    ]


@given(records, expressions())
def test_ne_is_the_complement_of_eq(recs, expr):
    field, op, value = expr.split(":", 2)
    if op != "eq":
        return
    eq = filtering.parse(expr, FIELDS)
    ne = filtering.parse(f"{field}:ne:{value}", FIELDS)
    for r in recs:
        assert eq.matches(r) != ne.matches(r)


@pytest.mark.parametrize(
    ("expr", "named"),
    [
        ("nope:eq:1", "unknown field 'nope'"),
        ("name:like:x", "unknown operator 'like'"),
        ("count:eq:ten", "count is an integer"),
        ("active:eq:yes", "boolean"),
        ("mode:eq:D", "one of A, B, C"),
        ("mode:contains:A", "does not apply"),
        ("at:gt:yesterday", "ISO 8601"),
        ("name", "<field>:<operator>:<value>"),
        ("mode:lt:null", "does not apply"),
        ("mode:in:A|null", "in takes values, not null"),
    ],
)
def test_bad_filters_are_refused_naming_the_problem(expr, named):
    with pytest.raises(InvalidFilter) as e:
        filtering.parse(expr, FIELDS)
    assert e.value.code == "AT-1004"
    assert named in e.value.message()


def test_values_may_contain_colons():
    c = filtering.parse("name:eq:0088:123", FIELDS)
    assert c.value == "0088:123"


def test_null_selects_records_without_a_value():
    recs = [Rec("x", None, True, 0, datetime.now(UTC)), Rec("y", "A", True, 0, datetime.now(UTC))]
    assert [r.name for r in recs if filtering.parse("mode:eq:null", FIELDS).matches(r)] == ["x"]
    assert [r.name for r in recs if filtering.parse("mode:ne:null", FIELDS).matches(r)] == ["y"]
    assert [r.name for r in recs if filtering.parse("mode:ne:A", FIELDS).matches(r)] == ["x"]


@given(st.text(max_size=20))
def test_integers_are_ascii_digits_with_an_optional_minus(raw):
    """``str.isdigit`` also takes "²" and "٣" (which ``int`` reads as 3, or refuses)."""
    expression = f"count:eq:{raw}"
    plain = raw.lstrip("-") if raw.count("-") <= 1 else ""
    if raw[:1] in ("-", *"0123456789") and plain.isascii() and plain.isdigit() and len(raw) <= 18:
        assert filtering.parse(expression, FIELDS).value == int(raw)
    else:
        with pytest.raises(InvalidFilter):
            filtering.parse(expression, FIELDS)


@pytest.mark.parametrize("raw", ["²", "٣", "-²", "１", "1_000", " 1", "+1", "--1", "1-"])
def test_digits_that_are_not_ascii_are_refused(raw):
    with pytest.raises(InvalidFilter):
        filtering.parse(f"count:eq:{raw}", FIELDS)
