"""The filter language: parsing, rendering, and the semantics every list shares."""

from datetime import UTC, datetime

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st

from fourcorner.domain import clock, filtering
from fourcorner.domain.errors import InvalidFilter
from fourcorner.domain.filtering import FieldSpec, FieldType, Op


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


@given(records, st.sampled_from(["name", "mode", "count", "at"]), st.data())
def test_not_in_is_the_complement_of_in(recs, field, data):
    """The service's ``notIn``: exactly the records ``in`` leaves out, those with no value
    among them."""
    gen = value_text(field).filter(lambda v: v != "null")
    values = data.draw(st.lists(gen, min_size=1, max_size=4))
    in_cond = filtering.parse(f"{field}:in:{'|'.join(values)}", FIELDS)
    not_in = attrs.evolve(in_cond, op=Op.NOT_IN)
    for r in recs:
        assert in_cond.matches(r) != not_in.matches(r)


def test_no_client_operator_is_the_services_own():
    assert Op.NOT_IN not in filtering.CLIENT_OPS
    assert all(Op.NOT_IN not in ops for ops in filtering.OPS_BY_TYPE.values())
    with pytest.raises(InvalidFilter) as e:
        filtering.parse("name:nope:x", FIELDS)
    assert "notIn" not in e.value.message()  # nor named among the operators


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
        ("name:notIn:x", "unknown operator 'notIn'"),  # the service's own, not a client's
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


# --- datetimes compare at the precision the interface shows ----------------------------------


@given(datetimes, st.sampled_from(range(7)))
def test_a_datetime_filter_by_a_records_own_shown_value_finds_it(at, shown):
    """``createdAt`` as the interface shows it (milliseconds by default, cut, not rounded):
    eq/gte/lte find the record, gt/lt/ne leave it out, whatever its sub-shown digits."""
    spec = FieldSpec("at", FieldType.DATETIME, lambda r: r.at, shown=shown)
    fields = filtering.fields(spec)
    record = Rec("x", None, True, 0, at)
    text = clock.coarsen(clock.sortable(at), shown) if shown < 6 else clock.sortable(at)
    held = {op: filtering.parse(f"at:{op}:{text}", fields).matches(record) for op in OPS}
    assert held == {"eq": True, "gte": True, "lte": True, "gt": False, "lt": False, "ne": False}
    assert filtering.parse(f"at:in:{text}", fields).matches(record)
    if shown == 3:
        assert clock.iso(at) == text[:23] + "Z"  # the text is what the interface shows


OPS = ("eq", "ne", "lt", "lte", "gt", "gte")


@given(datetimes, datetimes, st.sampled_from(OPS))
def test_a_datetime_filter_compares_the_shown_value(at, target, op):
    """The record's value is cut to milliseconds, the target is taken as written."""
    record = Rec("x", None, True, 0, at)
    shown = clock.parse(clock.iso(at))
    written = clock.parse(clock.iso(target)) if target.microsecond % 2 else target
    text = written.isoformat().replace("+00:00", "Z")
    compare = {
        "eq": shown == written,
        "ne": shown != written,
        "lt": shown < written,
        "lte": shown <= written,
        "gt": shown > written,
        "gte": shown >= written,
    }
    assert filtering.parse(f"at:{op}:{text}", FIELDS).matches(record) is compare[op]


def test_conditions_the_service_sets_compare_at_the_stored_precision():
    at = datetime(2026, 1, 2, 10, 0, 0, 123456, tzinfo=UTC)
    record = Rec("x", None, True, 0, at)
    shown = datetime(2026, 1, 2, 10, 0, 0, 123000, tzinfo=UTC)
    direct = filtering.Condition(FIELDS["at"], Op.GT, shown, clock.iso(shown))
    assert direct.matches(record)  # 123456 µs is after 123 ms
    assert not filtering.parse(f"at:gt:{clock.iso(shown)}", FIELDS).matches(record)


# --- other names and other spellings ---------------------------------------------------------


def test_a_field_is_found_by_its_aliases_and_normalises_its_values():
    spec = FieldSpec(
        "profile",
        FieldType.STRING,
        lambda r: r.name,
        aliases=("old-profile",),
        normalise=lambda v: v.removeprefix("wire-"),
    )
    fields = filtering.fields(spec)
    record = Rec("as4", None, True, 0, datetime.now(UTC))
    for expr in ("profile:eq:as4", "profile:eq:wire-as4", "old-profile:eq:wire-as4"):
        assert filtering.parse(expr, fields).matches(record), expr
    assert filtering.parse("profile:in:wire-x|wire-as4", fields).matches(record)
    assert not filtering.parse("profile:eq:wire-x", fields).matches(record)
    with pytest.raises(InvalidFilter) as e:
        filtering.parse("nope:eq:1", fields)
    assert "fields: profile" in e.value.message()
