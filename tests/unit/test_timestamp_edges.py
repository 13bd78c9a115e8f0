"""Timestamps a client writes near the limits of the years (1 to 9999): with an offset, a time
of 9999-12-31 or of 0001-01-01 may name an instant UTC cannot hold. Every reader of a client's
timestamp answers the instant or refuses the text as input; none lets an overflow through
(which the HTTP edge would answer 500)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fourcorner.adapters.as4.errors import As4Error
from fourcorner.adapters.as4.xml import parse_timestamp
from fourcorner.adapters.sbdh.header import parse_date_time
from fourcorner.application.api_keys import CreateApiKey
from fourcorner.domain import clock, filtering
from fourcorner.domain.errors import InvalidFilter, InvalidInput
from fourcorner.domain.filtering import FieldSpec, FieldType, Op
from fourcorner.entrypoints.http.converter import make_converter, structure

NEAR = timedelta(days=2)
local_times = st.datetimes(min_value=datetime.min, max_value=datetime.min + NEAR) | st.datetimes(
    min_value=datetime.max - NEAR, max_value=datetime.max
)
offsets = st.integers(-(24 * 60 - 1), 24 * 60 - 1)  # minutes: what ISO 8601 text can write
FIELDS = filtering.fields(FieldSpec("at", FieldType.DATETIME, lambda r: r))
CONV = make_converter()


def zone_text(minutes: int) -> str:
    sign = "-" if minutes < 0 else "+"
    hours, rest = divmod(abs(minutes), 60)
    return f"{sign}{hours:02d}:{rest:02d}"


@st.composite
def edge_timestamps(draw: st.DrawFn) -> tuple[str, datetime | None, int]:
    """A timestamp's text with a zone (``Z`` or an offset), the UTC instant it names (``None``
    when that instant lies outside the years 1 to 9999), and the offset in minutes."""
    local = draw(local_times)
    minutes = draw(st.none() | offsets)
    zone = "Z" if minutes is None else zone_text(minutes)
    try:
        instant: datetime | None = local - timedelta(minutes=minutes or 0)
    except OverflowError:
        instant = None
    text = local.isoformat() + zone
    return text, None if instant is None else instant.replace(tzinfo=UTC), minutes or 0


@given(edge_timestamps())
def test_parse_answers_the_instant_or_out_of_range(case):
    text, instant, _ = case
    if instant is None:
        with pytest.raises(clock.OutOfRange):
            clock.parse(text)
    else:
        assert clock.parse(text) == instant
        assert clock.parse(clock.sortable(instant)) == instant


@given(
    edge_timestamps(),
    st.sampled_from(sorted(filtering.OPS_BY_TYPE[FieldType.DATETIME], key=lambda o: o.value)),
)
def test_a_filter_reads_an_edge_timestamp_or_refuses_it_as_a_filter(case, op):
    text, instant, _ = case
    expression = f"at:{op.value}:{text}"
    if instant is None:
        with pytest.raises(InvalidFilter) as refused:
            filtering.parse(expression, FIELDS)
        assert refused.value.expression == expression
        assert clock.RANGE in refused.value.reason
        return
    condition = filtering.parse(expression, FIELDS)
    assert condition.value == ((instant,) if op is Op.IN else instant)
    assert condition.holds(clock.sortable(instant)) in (True, False)


@given(edge_timestamps())
def test_a_body_timestamp_is_read_or_refused_as_invalid_input(case):
    text, instant, _ = case
    body = {"name": "ci", "expires": text, "role": "orgmember"}
    if instant is None:
        with pytest.raises(InvalidInput) as refused:
            structure(CONV, body, CreateApiKey)
        [detail] = refused.value.details()
        assert detail.field == "$.expires"
        assert detail.problem == f"{text!r} is outside the timestamps this service takes, " + (
            clock.RANGE
        )
        return
    assert structure(CONV, body, CreateApiKey).expires == instant


@given(edge_timestamps())
def test_an_envelope_time_is_read_or_refused(case):
    text, instant, minutes = case
    read = parse_date_time(text)
    # xs:dateTime offsets go to 14 hours
    assert (read is None) is (instant is None or abs(minutes) > 14 * 60)
    if read is not None:
        assert clock.utc(read) == instant


@given(edge_timestamps())
def test_an_as4_timestamp_is_read_or_refused(case):
    text, instant, _ = case
    if instant is None:
        with pytest.raises(As4Error):
            parse_timestamp(text)
    else:
        assert parse_timestamp(text) == instant


@given(local_times)
def test_a_body_timestamp_without_a_zone_is_refused(local):
    text = local.isoformat()
    with pytest.raises(InvalidInput) as refused:
        structure(CONV, {"name": "ci", "expires": text, "role": "orgmember"}, CreateApiKey)
    [detail] = refused.value.details()
    assert detail.field == "$.expires" and "has no time zone" in detail.problem
    assert clock.parse(text) == local.replace(tzinfo=UTC)  # a filter's value may leave it out
