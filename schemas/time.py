"""Interval algebra of the time model: UTC instants, half-open ``[start, end)`` intervals, granularity.

Every instant in diachron is a timezone-aware :class:`datetime.datetime` in UTC. Every interval is
half-open ``[start, end)``; ``start=None`` is the open past, ``end=None`` the open future
(see docs/design.md, "Time model"). "2015" is ``[2015-01-01, 2016-01-01)``.
"""

from __future__ import annotations

import calendar
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta, tzinfo
from enum import StrEnum
from typing import Any
from zoneinfo import ZoneInfo

#: an open side of an interval in the int64-µs (UTC) arrays of the time indexes: ``start = None`` is stored
#: as ``OPEN_PAST``, ``end = None`` as ``OPEN_FUTURE`` (±2**61 µs ≈ ±73,000 years: beyond every datetime)
OPEN_PAST, OPEN_FUTURE = -(2**61), 2**61
__all__ = [
    "OPEN_FUTURE",
    "OPEN_PAST",
    "Granularity",
    "Interval",
    "add_months",
    "floor_to",
    "format_instant",
    "parse_instant",
    "period",
    "to_utc",
]


class Granularity(StrEnum):
    """How an interval was written, finest to coarsest (ordering is meaningful)."""

    INSTANT = "instant"
    HOUR = "hour"
    DAY = "day"
    MONTH = "month"
    QUARTER = "quarter"
    YEAR = "year"
    DECADE = "decade"

    @property
    def rank(self) -> int:
        return list(Granularity).index(self)


def to_utc(value: datetime | date, *, tz: tzinfo | str | None = None) -> datetime:
    """Normalise an instant to an aware UTC datetime.

    A naive datetime (or a date, read as midnight) is interpreted in ``tz`` when given, else as UTC:
    naive source timestamps mean UTC (DESIGN: "date-only metadata means midnight UTC unless the source
    declares a time zone"). Never uses the process's local zone.
    """
    if not isinstance(value, datetime):
        value = datetime(value.year, value.month, value.day)
    if value.tzinfo is None:
        zone = ZoneInfo(tz) if isinstance(tz, str) else (tz or UTC)
        value = value.replace(tzinfo=zone)
    return value.astimezone(UTC)


def parse_instant(text: str, *, tz: tzinfo | str | None = None) -> datetime:
    """Parse an ISO-8601 date or datetime (``Z`` or offset allowed) to aware UTC.

    Raises:
        ValueError: when ``text`` is not ISO-8601, or lies outside the years 1–9999 once in UTC.
    """
    raw = text.strip()
    if raw.endswith(("Z", "z")):
        raw = raw[:-1] + "+00:00"
    try:
        parsed = datetime.fromisoformat(raw)
    except ValueError as exc:
        raise ValueError(f"not an ISO-8601 instant: {text!r}") from exc
    try:
        return to_utc(parsed, tz=tz)
    except OverflowError as exc:  # e.g. 9999-12-31T23:00:00-05:00 is past datetime.max in UTC
        raise ValueError(f"instant out of range (years 0001–9999 in UTC): {text!r}") from exc


def format_instant(value: datetime | None) -> str | None:
    """ISO-8601 UTC with ``Z`` (``2015-01-01T00:00:00Z``); ``None`` stays ``None`` (an open side)."""
    if value is None:
        return None
    value = to_utc(value)
    text = f"{value.year:04d}-{value:%m-%dT%H:%M:%S}"  # strftime's %Y drops the zero padding of year 1
    if value.microsecond:
        text += f".{value.microsecond:06d}"
    return text + "Z"


def add_months(value: datetime, months: int) -> datetime:
    """Shift by whole months, clamping the day (31 Jan + 1 month = 28/29 Feb)."""
    total = value.year * 12 + (value.month - 1) + months
    year, month = divmod(total, 12)
    day = min(value.day, calendar.monthrange(year, month + 1)[1])
    return value.replace(year=year, month=month + 1, day=day)


def floor_to(value: datetime, granularity: Granularity) -> datetime:
    """Start of the period of ``granularity`` containing ``value`` (in ``value``'s own zone)."""
    g = Granularity(granularity)
    if g is Granularity.INSTANT:
        return value
    value = value.replace(minute=0, second=0, microsecond=0)
    if g is Granularity.HOUR:
        return value
    value = value.replace(hour=0)
    if g is Granularity.DAY:
        return value
    value = value.replace(day=1)
    if g is Granularity.MONTH:
        return value
    if g is Granularity.QUARTER:
        return value.replace(month=3 * ((value.month - 1) // 3) + 1)
    value = value.replace(month=1)
    if g is Granularity.YEAR:
        return value
    return value.replace(year=value.year - value.year % 10)


def _step(start: datetime, granularity: Granularity) -> datetime:
    g = Granularity(granularity)
    if g is Granularity.INSTANT:
        return start + timedelta(microseconds=1)
    if g is Granularity.HOUR:
        return start + timedelta(hours=1)
    if g is Granularity.DAY:
        return start + timedelta(days=1)
    months = {Granularity.MONTH: 1, Granularity.QUARTER: 3, Granularity.YEAR: 12, Granularity.DECADE: 120}
    return add_months(start, months[g])


def period(
    value: datetime | date, granularity: Granularity | str, *, tz: tzinfo | str | None = None
) -> Interval:
    """The whole period of ``granularity`` that contains ``value``, as a UTC interval.

    ``period(date(2016, 3, 5), "month")`` is ``[2016-03-01, 2016-04-01)``. The period is computed in
    ``tz`` (default UTC) and converted, so "5 March in Los Angeles" is ``[08:00Z, next day 08:00Z)``.
    """
    g = Granularity(granularity)
    if not isinstance(value, datetime):
        value = datetime(value.year, value.month, value.day)
    zone = ZoneInfo(tz) if isinstance(tz, str) else (tz or UTC)
    local = value.replace(tzinfo=zone) if value.tzinfo is None else value.astimezone(zone)
    start = floor_to(local, g)
    end = _step(start, g)
    return Interval(to_utc(start), to_utc(end), g)


@dataclass(frozen=True, slots=True, order=True)
class Interval:
    """A half-open UTC interval ``[start, end)``.

    Attributes:
        start: inclusive lower bound (aware UTC), or ``None`` for the open past.
        end: exclusive upper bound (aware UTC), or ``None`` for the open future.
        granularity: how the interval was written (for display), e.g. ``month`` for "March 2016".

    Raises:
        ValueError: when ``start >= end`` (an empty or inverted interval).
    """

    start: datetime | None
    end: datetime | None
    granularity: Granularity = field(default=Granularity.DAY, compare=False)

    def __post_init__(self) -> None:
        start = None if self.start is None else to_utc(self.start)
        end = None if self.end is None else to_utc(self.end)
        object.__setattr__(self, "start", start)
        object.__setattr__(self, "end", end)
        object.__setattr__(self, "granularity", Granularity(self.granularity))
        if start is not None and end is not None and not start < end:
            raise ValueError(f"empty or inverted interval [{format_instant(start)}, {format_instant(end)})")

    # --- algebra -------------------------------------------------------------------------------
    def overlaps(self, other: Interval) -> bool:
        """True when the two half-open intervals share at least one instant."""
        left_ok = other.end is None or self.start is None or self.start < other.end
        right_ok = self.end is None or other.start is None or other.start < self.end
        return left_ok and right_ok

    def contains(self, instant: datetime) -> bool:
        """True when ``start <= instant < end``."""
        instant = to_utc(instant)
        return (self.start is None or self.start <= instant) and (self.end is None or instant < self.end)

    def intersection(self, other: Interval) -> Interval | None:
        """The common part, or ``None`` when disjoint."""
        if not self.overlaps(other):
            return None
        starts = [s for s in (self.start, other.start) if s is not None]
        ends = [e for e in (self.end, other.end) if e is not None]
        g = min(self.granularity, other.granularity, key=lambda x: x.rank)
        return Interval(max(starts) if starts else None, min(ends) if ends else None, g)

    def hull(self, other: Interval) -> Interval:
        """The smallest interval covering both."""
        start = None if self.start is None or other.start is None else min(self.start, other.start)
        end = None if self.end is None or other.end is None else max(self.end, other.end)
        return Interval(start, end, max(self.granularity, other.granularity, key=lambda x: x.rank))

    def bounded(self, lower: datetime | None, upper: datetime | None) -> Interval:
        """Replace open sides by ``lower``/``upper`` (e.g. the index's time extent)."""
        return Interval(
            self.start if self.start is not None else lower,
            self.end if self.end is not None else upper,
            self.granularity,
        )

    @property
    def is_open(self) -> bool:
        return self.start is None or self.end is None

    @property
    def duration(self) -> timedelta | None:
        return None if self.is_open else self.end - self.start  # type: ignore[operator]

    # --- constructors / conversion ----------------------------------------------------------------
    @classmethod
    def at(cls, instant: datetime) -> Interval:
        """A point query: the instant ``t`` as ``[t, t + 1 µs)`` (selects what was valid at ``t``)."""
        t = to_utc(instant)
        return cls(t, t + timedelta(microseconds=1), Granularity.INSTANT)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Interval:
        """From ``{"start": ISO|None, "end": ISO|None, "granularity"?: str}``; naive strings mean UTC."""
        start = data.get("start")
        end = data.get("end")
        return cls(
            parse_instant(start) if isinstance(start, str) else start,
            parse_instant(end) if isinstance(end, str) else end,
            Granularity(data.get("granularity") or Granularity.DAY),
        )

    def to_dict(self) -> dict[str, Any]:
        """``{"start": "…Z"|None, "end": "…Z"|None, "granularity": str}`` (the JSON form)."""
        return {
            "start": format_instant(self.start),
            "end": format_instant(self.end),
            "granularity": self.granularity.value,
        }

    def __str__(self) -> str:
        return f"[{format_instant(self.start) or '-inf'}, {format_instant(self.end) or '+inf'})"
