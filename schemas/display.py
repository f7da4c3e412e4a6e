"""Human-readable times for people (CLI cards; the page has the same rules in ``web/app.js``).

ISO-8601 stays in every JSON form; these strings are for reading only. An interval is shown at its own
granularity, its exclusive end turned into the last period it covers: ``[2011-02-01, 2011-03-01)`` month
is "Feb 2011", ``[2010-09-01, 2012-09-01)`` month is "Sep 2010 – Aug 2012", ``[1921-12-06, 1921-12-07)``
day is "6 Dec 1921". All instants are shown in UTC.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from diachron.schemas.time import Granularity, Interval, floor_to, to_utc

__all__ = ["human_instant", "human_interval"]


def human_instant(value: datetime | None, granularity: Granularity | str = Granularity.DAY) -> str:
    """``value`` (UTC) written at ``granularity``: "2015", "Q1 2015", "Feb 2011", "6 Dec 1921", "6 Dec 1921
    14:05 UTC".

    ``None`` gives "—" (an open side is worded by :func:`human_interval`).
    """
    if value is None:
        return "—"
    v, g = to_utc(value), Granularity(granularity)
    if g is Granularity.DECADE:
        return f"{v.year - v.year % 10}s"
    if g is Granularity.YEAR:
        return f"{v.year}"
    if g is Granularity.QUARTER:
        return f"Q{(v.month - 1) // 3 + 1} {v.year}"
    if g is Granularity.MONTH:
        return f"{v:%b} {v.year}"
    day = f"{v.day} {v:%b} {v.year}"
    if g is Granularity.DAY and (v.hour, v.minute, v.second) == (0, 0, 0):
        return day
    return f"{day} {v:%H:%M} UTC" if not v.second else f"{day} {v:%H:%M:%S} UTC"


def _last_period(end: datetime, granularity: Granularity) -> datetime:
    """The start of the period of ``granularity`` holding the last instant before the exclusive ``end``."""
    if granularity is Granularity.INSTANT:
        return end
    return floor_to(end - timedelta(microseconds=1), granularity)


def human_interval(interval: Interval, granularity: Granularity | str | None = None) -> str:
    """A half-open UTC interval as people write it, at ``granularity`` (default: the interval's own).

    Examples: "Feb 2011"; "Sep 2010 – Aug 2012"; "1 Sep 2010 – 31 Aug 2012" (``granularity="day"``);
    "before 1920"; "since 3 Mar 2020"; "any time" (both sides open).
    """
    g = Granularity(granularity or interval.granularity)
    start, end = interval.start, interval.end
    if start is None and end is None:
        return "any time"
    if start is None:
        return f"before {human_instant(end, g)}"
    if end is None:
        return f"since {human_instant(start, g)}"
    if g is Granularity.INSTANT or end - start <= timedelta(seconds=1):
        return human_instant(
            start, Granularity.INSTANT if (start.hour, start.minute) != (0, 0) else Granularity.DAY
        )
    last = _last_period(end, g)
    if last < start:  # shorter than one period of g: show the finer bounds
        return f"{human_instant(start, Granularity.INSTANT)} – {human_instant(end, Granularity.INSTANT)}"
    first, final = human_instant(start, g), human_instant(last, g)
    return first if first == final else f"{first} – {final}"
