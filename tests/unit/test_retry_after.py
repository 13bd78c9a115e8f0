"""Reading a busy peer's ``Retry-After`` (``adapters.retry_after``): delta-seconds and the three
forms of an HTTP-date read back as the wait they say, at most ``LONGEST_ASKED``; anything
else is no wait at all (None), never an error."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fourcorner.adapters.retry_after import asked_wait
from fourcorner.domain.retry import LONGEST_ASKED

NOW = datetime(2026, 1, 2, 10, 0, 0, tzinfo=UTC)


def bounded(wait: timedelta) -> timedelta:
    return min(max(wait, timedelta(0)), LONGEST_ASKED)


@given(seconds=st.integers(0, 10**40), zeros=st.integers(0, 3), space=st.sampled_from(["", " "]))
def test_any_delta_seconds_is_that_wait_up_to_the_longest(
    seconds: int, zeros: int, space: str
) -> None:
    value = f"{space}{'0' * zeros}{seconds}{space}"
    longest = seconds >= LONGEST_ASKED.total_seconds()
    assert asked_wait(value, NOW) == (LONGEST_ASKED if longest else timedelta(seconds=seconds))


def imf_fixdate(at: datetime) -> str:  # Fri, 02 Jan 2026 10:02:00 GMT
    return format_datetime(at, usegmt=True)


def rfc850(at: datetime) -> str:  # Friday, 02-Jan-26 10:02:00 GMT (obsolete, still read)
    return at.strftime("%A, %d-%b-%y %H:%M:%S GMT")


def asctime(at: datetime) -> str:  # Fri Jan  2 10:02:00 2026 (obsolete, still read)
    return f"{at:%a %b} {at.day:2d} {at:%H:%M:%S %Y}"


@given(
    # RFC 850's two-digit year is read in 1969..2068
    at=st.datetimes(datetime(1970, 1, 1), datetime(2068, 12, 31), timezones=st.just(UTC)),
    form=st.sampled_from([imf_fixdate, rfc850, asctime]),
)
def test_any_http_date_is_the_wait_until_it(at: datetime, form: object) -> None:
    at = at.replace(microsecond=0)
    assert asked_wait(form(at), NOW) == bounded(at - NOW)  # type: ignore[operator]


@given(seconds=st.integers(0, 7200))
def test_a_date_ahead_waits_until_then_and_one_past_not_at_all(seconds: int) -> None:
    ahead = imf_fixdate(NOW + timedelta(seconds=seconds))
    assert asked_wait(ahead, NOW) == min(timedelta(seconds=seconds), LONGEST_ASKED)
    assert asked_wait(imf_fixdate(NOW - timedelta(seconds=seconds)), NOW) == timedelta(0)


@pytest.mark.parametrize(
    "value",
    [
        None,
        "",
        "soon",
        "-5",
        "+5",
        "1.5",
        "5s",
        "0x10",
        "1e3",
        "10_000",
        "١٢٠",  # digits, but not ASCII ones
        "Fri, 31 Feb 2026 10:02:00 GMT",  # no such day
        "Fri, 02 Jan 99999 10:02:00 GMT",
        "Fri, 02 Jan 2026 25:02:00 GMT",
    ],
)
def test_a_value_that_does_not_read_is_ignored(value: str | None) -> None:
    assert asked_wait(value, NOW) is None


@given(st.text())
def test_any_text_is_a_bounded_wait_or_ignored(value: str) -> None:
    wait = asked_wait(value, NOW)
    assert wait is None or timedelta(0) <= wait <= LONGEST_ASKED
