"""Dates and canonical strings (SPEC §3 "Dates", §4.2), v1.1 range rules included."""

import datetime as dt

import pytest

from resolver.values import canonical, format_day, format_instant, parse_date

UTC = dt.UTC


@pytest.mark.parametrize(
    "value",
    [
        "9999-12-31T23:00:00-05:00",
        "0001-01-01T00:00:00+01:00",
        "0000-01-01",
        "0000-12-31T23:00:00-01:00",
        "0000-01-01T00:00:00Z",
        "10000-01-01",
        "2026-02-30",
        "2026-11-20T10:00:00+24:00",
        dt.datetime(9999, 12, 31, 23, 0, tzinfo=dt.timezone(dt.timedelta(hours=-5))),
        dt.datetime(1, 1, 1, 0, 0, tzinfo=dt.timezone(dt.timedelta(hours=1))),
    ],
    ids=str,
)
def test_parse_date__instant_outside_years_1_to_9999_utc__is_no_date(value):
    assert parse_date(value) is None


@pytest.mark.parametrize(
    ("value", "instant"),
    [
        ("9999-12-31T23:59:59.9999999Z", dt.datetime(9999, 12, 31, 23, 59, 59, 999999, UTC)),
        ("9999-12-31T18:59:59-05:00", dt.datetime(9999, 12, 31, 23, 59, 59, tzinfo=UTC)),
        ("0001-01-01T01:00+01:00", dt.datetime(1, 1, 1, tzinfo=UTC)),
        ("0001-01-01", dt.datetime(1, 1, 1, tzinfo=UTC)),
        (dt.date(9999, 12, 31), dt.datetime(9999, 12, 31, tzinfo=UTC)),
    ],
    ids=str,
)
def test_parse_date__instant_at_the_edges_of_the_range__is_a_date(value, instant):
    assert parse_date(value)[0] == instant


def test_format_instant__year_below_1000__four_digits():
    assert format_instant(dt.datetime(999, 5, 1, tzinfo=UTC)) == "0999-05-01T00:00:00Z"
    assert format_instant(dt.datetime(1, 1, 1, 0, 0, 7, tzinfo=UTC)) == "0001-01-01T00:00:07Z"


def test_format_day__year_below_1000__four_digits():
    assert format_day(dt.datetime(999, 5, 1, tzinfo=UTC)) == "0999-05-01"


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (dt.datetime(999, 5, 1, 12, 0), "0999-05-01T12:00:00Z"),
        (dt.date(999, 5, 1), "0999-05-01"),
        (
            dt.datetime(9999, 12, 31, 23, 0, tzinfo=dt.timezone(dt.timedelta(hours=-5))),
            "9999-12-31T23:00:00-05:00",
        ),
    ],
    ids=str,
)
def test_canonical__dates__four_digit_years_and_never_an_error(value, text):
    assert canonical(value) == text
