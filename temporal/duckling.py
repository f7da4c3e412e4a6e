"""Duckling's English time grammar (``pyduckling-native-phihos``) as typed, half-open UTC intervals.

Duckling (facebook/duckling, BSD) recognises and normalises single time expressions: clock times, dates
with or without a year, holidays, seasons, parts of day, offsets ("in 7 days", "a week ago"), ranges
("July 13-15", "9:30 - 11:00 on Thursday"), written zones ("4pm CET"), "last 2 days". This module only
converts its answers; what is diachron's (document-time resolution, tense, fiscal calendars,
early/mid/late, decades, relation words) stays in :mod:`diachron.temporal.tagger` and
:mod:`diachron.temporal.resolve`.

Conversion: a value ``v`` of grain ``g`` is ``[v, v + 1 g)`` (the step taken in the local calendar of
``timezone``); an interval's ``to`` is already exclusive; a missing side is open.
"""

from __future__ import annotations

import functools
import logging
import os
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from diachron.schemas.time import Granularity, Interval, add_months, to_utc

__all__ = ["DucklingMatch", "duckling_parse"]

logger = logging.getLogger(__name__)

#: Duckling grain -> (granularity for display, step in (months, timedelta))
_GRAINS: dict[str, tuple[Granularity, int, timedelta]] = {
    "second": (Granularity.INSTANT, 0, timedelta(seconds=1)),
    "minute": (Granularity.INSTANT, 0, timedelta(minutes=1)),
    "hour": (Granularity.HOUR, 0, timedelta(hours=1)),
    "day": (Granularity.DAY, 0, timedelta(days=1)),
    "week": (Granularity.DAY, 0, timedelta(weeks=1)),
    "month": (Granularity.MONTH, 1, timedelta(0)),
    "quarter": (Granularity.QUARTER, 3, timedelta(0)),
    "year": (Granularity.YEAR, 12, timedelta(0)),
}
_MAX_CHARS = 4000  # Duckling's chart parser grows fast with input length: callers split longer text


@dataclass(frozen=True)
class DucklingMatch:
    """One expression Duckling found.

    Attributes:
        span: ``(start, end)`` character offsets in the parsed text.
        text: the expression as written.
        interval: half-open UTC interval (one side may be open: "after 2 pm", "before 11 am").
        grain: Duckling's grain of the value or of the interval's first side ("minute", "day", "week", ...).
        latent: Duckling's flag for a reading it only guesses ("1974", "7p", "morning" alone).
        is_interval: True when Duckling answered an interval, not a single value.
        holiday: the holiday's name when Duckling recognised one.
    """

    span: tuple[int, int]
    text: str
    interval: Interval
    grain: str
    latent: bool
    is_interval: bool
    holiday: str | None = None


def _zoneinfo_dir() -> str:
    for candidate in ("/usr/share/zoneinfo",):
        if os.path.isdir(candidate):
            return candidate
    import tzdata  # the PyPI time zone database, when the system has none

    return os.path.join(os.path.dirname(tzdata.__file__), "zoneinfo")


@functools.lru_cache(maxsize=1)
def _engine() -> tuple[Any, Any, Any]:
    import duckling

    zones = duckling.load_time_zones(_zoneinfo_dir())
    lang = duckling.default_locale_lang(duckling.parse_lang("EN"))
    return zones, lang, duckling.parse_dimensions(["time"])


@functools.lru_cache(maxsize=256)
def _context(timezone: str, epoch: int) -> Any:
    """Duckling's clock and locale for one reference second (the sentences of a text share it)."""
    import duckling

    zones, lang, _ = _engine()
    try:
        return duckling.Context(duckling.parse_ref_time(zones, timezone, epoch), lang)
    except Exception as exc:  # the binding raises its own error type for an unknown zone
        raise ValueError(f"unknown time zone for Duckling: {timezone!r}") from exc


def _instant(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def _value_interval(value: dict[str, Any], zone: ZoneInfo) -> tuple[Interval, str]:
    grain = value["grain"]
    granularity, months, step = _GRAINS[grain]
    start = _instant(value["value"])
    local = start.astimezone(zone).replace(tzinfo=None)
    end_local = add_months(local, months) if months else local + step
    return Interval(to_utc(start), to_utc(end_local, tz=zone), granularity), grain


def _interval(value: dict[str, Any], zone: ZoneInfo) -> tuple[Interval, str] | None:
    if value.get("type") == "value":
        return _value_interval(value, zone)
    side_from, side_to = value.get("from"), value.get("to")
    if side_from is None and side_to is None:
        return None
    grain = (side_from or side_to)["grain"]
    start = to_utc(_instant(side_from["value"])) if side_from else None
    end = to_utc(_instant(side_to["value"])) if side_to else None
    if start is not None and end is not None and not start < end:
        return None
    return Interval(start, end, _GRAINS[grain][0]), grain


def duckling_parse(
    text: str, *, reference: datetime, timezone: str = "UTC", latent: bool = False
) -> list[DucklingMatch]:
    """Every time expression Duckling reads in ``text`` against the clock ``reference``.

    Args:
        text: at most a few thousand characters (longer text is parsed in pieces by the tagger).
        reference: the clock (aware; naive means UTC), whole seconds.
        timezone: IANA zone of the local wall clock the text is read in.
        latent: also return Duckling's latent readings.

    Returns:
        Matches in Duckling's order (longest readings; they may overlap), intervals in UTC.

    Raises:
        ValueError: ``timezone`` is not an IANA zone, or ``text`` is longer than 4,000 characters.
    """
    if len(text) > _MAX_CHARS:
        raise ValueError(f"text of {len(text)} characters: Duckling is given at most {_MAX_CHARS}")
    import duckling

    _, _, dims = _engine()
    try:
        zone = ZoneInfo(timezone)
    except (ZoneInfoNotFoundError, ValueError) as exc:
        raise ValueError(f"unknown time zone for Duckling: {timezone!r}") from exc
    context = _context(timezone, int(to_utc(reference).timestamp()))
    out: list[DucklingMatch] = []
    for item in duckling.parse(text, context, dims, latent):
        try:
            converted = _interval(item["value"], zone)
        except (KeyError, ValueError, OverflowError) as exc:
            logger.debug("duckling value dropped for %r: %s", item.get("body"), exc)
            continue
        if converted is None:
            continue
        interval, grain = converted
        out.append(
            DucklingMatch(
                (item["start"], item["end"]),
                item["body"],
                interval,
                grain,
                bool(item.get("latent")),
                item["value"].get("type") == "interval",
                item["value"].get("holidayBeta"),
            )
        )
    return out
