"""Interval algebra of diachron.schemas.time, table-driven, values worked out by hand."""

from datetime import UTC, date, datetime, timedelta

import pytest
from diachron.schemas.time import Granularity, Interval, add_months, format_instant, parse_instant, period


def t(*args: int) -> datetime:
    return datetime(*args, tzinfo=UTC)


@pytest.mark.parametrize(
    ("value", "grain", "start", "end"),
    [
        (date(2015, 6, 1), "year", t(2015, 1, 1), t(2016, 1, 1)),
        (date(2016, 3, 5), "month", t(2016, 3, 1), t(2016, 4, 1)),
        (date(2016, 2, 29), "day", t(2016, 2, 29), t(2016, 3, 1)),
        (date(2015, 11, 30), "quarter", t(2015, 10, 1), t(2016, 1, 1)),
        (date(1929, 10, 24), "decade", t(1920, 1, 1), t(1930, 1, 1)),
        (datetime(2023, 12, 6, 14, 30), "hour", t(2023, 12, 6, 14), t(2023, 12, 6, 15)),
    ],
)
def test_period_is_half_open(value, grain, start, end):
    interval = period(value, grain)
    assert (interval.start, interval.end, interval.granularity) == (start, end, Granularity(grain))


def test_period_in_a_declared_zone_is_converted_to_utc():
    # 6 Dec 2023 in Los Angeles (UTC-8) is [08:00Z, next day 08:00Z)
    interval = period(date(2023, 12, 6), "day", tz="America/Los_Angeles")
    assert (interval.start, interval.end) == (t(2023, 12, 6, 8), t(2023, 12, 7, 8))


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        ((t(2020, 1, 1), t(2020, 2, 1)), (t(2020, 2, 1), t(2020, 3, 1)), False),  # touching: half-open
        ((t(2020, 1, 1), t(2020, 2, 1)), (t(2020, 1, 31), t(2020, 3, 1)), True),
        ((None, t(2025, 1, 1)), (t(2025, 1, 1), t(2025, 1, 2)), False),  # "before 2025" vs 1 Jan 2025
        ((t(2025, 1, 1), None), (t(2025, 1, 1), t(2025, 1, 2)), True),  # "from 1 Jan 2025 on"
        ((None, None), (t(1990, 1, 1), t(1990, 1, 2)), True),
    ],
)
def test_overlaps(a, b, expected):
    assert Interval(*a).overlaps(Interval(*b)) is expected
    assert Interval(*b).overlaps(Interval(*a)) is expected


def test_point_query_selects_what_was_valid_then():
    point = Interval.at(t(2019, 6, 1))
    assert Interval(t(2019, 3, 26), t(2019, 7, 1)).overlaps(point)
    assert not Interval(t(2019, 6, 2), None).overlaps(point)
    assert point.end - point.start == timedelta(microseconds=1)


def test_empty_or_inverted_interval_is_rejected():
    with pytest.raises(ValueError, match="empty or inverted"):
        Interval(t(2020, 1, 1), t(2020, 1, 1))


def test_intersection_and_hull():
    a, b = Interval(t(2012, 1, 1), t(2014, 1, 1), "year"), Interval(t(2013, 6, 1), t(2015, 1, 1), "month")
    assert a.intersection(b) == Interval(t(2013, 6, 1), t(2014, 1, 1))
    assert a.hull(b) == Interval(t(2012, 1, 1), t(2015, 1, 1))
    assert Interval(t(2012, 1, 1), t(2013, 1, 1)).intersection(Interval(t(2013, 1, 1), None)) is None


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2022-06-01", t(2022, 6, 1)),
        ("2022-06-01T00:00:00Z", t(2022, 6, 1)),
        ("2008-10-31T16:00:00-04:00", t(2008, 10, 31, 20)),
        ("2024-07-01T10:00:00", t(2024, 7, 1, 10)),  # naive source timestamps mean UTC, whatever TZ says
    ],
)
def test_parse_instant(text, expected):
    assert parse_instant(text) == expected


def test_format_and_json_round_trip():
    interval = Interval(t(2015, 1, 1), None, "year")
    assert interval.to_dict() == {"start": "2015-01-01T00:00:00Z", "end": None, "granularity": "year"}
    assert Interval.from_dict(interval.to_dict()) == interval
    assert format_instant(None) is None


def test_add_months_clamps_the_day():
    assert add_months(t(2016, 1, 31), 1) == t(2016, 2, 29)
    assert add_months(t(2015, 11, 15), 3) == t(2016, 2, 15)
