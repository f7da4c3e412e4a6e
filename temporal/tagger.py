"""Rule-based temporal expression tagger: finds time expressions in text and resolves them to intervals.

Every interval is half-open ``[start, end)`` in UTC. Local dates and clock times are read in
``TaggerConfig.timezone``; relative expressions ("last month", "until Monday") resolve against the
document's publication time (``reference``) and are skipped when it is unknown, so results never depend
on the machine clock. Finding expressions is diachron's own work (``_patterns.py``); see docs/design.md,
"Ingest: Stage 2".
"""

from __future__ import annotations

import functools
import logging
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Literal
from zoneinfo import ZoneInfo

from diachron.schemas.time import Granularity, Interval, add_months, to_utc
from diachron.temporal import _patterns as P
from diachron.temporal.resolve import apply_relation, relation_before, tense_at

__all__ = ["FiscalCalendar", "TaggerConfig", "TimeMention", "extract_mentions", "names_the_present"]

logger = logging.getLogger(__name__)
G = Granularity


@dataclass(frozen=True)
class FiscalCalendar:
    """A fiscal calendar: the month a fiscal year starts and which calendar year names it.

    Attributes:
        start_month: first month of the fiscal year (1..12).
        named_by: ``"end"`` if FY N ends in calendar year N (US federal, FY2023 = Oct 2022..Sep 2023),
            ``"start"`` if FY N begins in calendar year N.
    """

    start_month: int = 1
    named_by: Literal["end", "start"] = "end"

    def __post_init__(self) -> None:
        if not 1 <= self.start_month <= 12 or self.named_by not in ("end", "start"):
            raise ValueError(f"invalid fiscal calendar: {self.start_month}, {self.named_by!r}")

    @classmethod
    def parse(cls, text: str) -> FiscalCalendar:
        """Read a calendar from words or the short form ``"feb:end"`` / ``"7:start"``.

        Example: "fiscal year runs 1 February to 31 January and is named after the calendar year in
        which it ends" gives ``FiscalCalendar(2, "end")``.

        Raises:
            ValueError: when no start month can be found.
        """
        raw = text.strip().lower()
        short = re.fullmatch(r"([a-z]{3,9}|\d{1,2})\s*(?::\s*(end|start|begin))?", raw)
        if short:
            month = int(short[1]) if short[1].isdigit() else _month_or_error(short[1])
            return cls(month, "start" if short[2] in ("start", "begin") else "end")
        if re.search(r"\bcalendar year\b", raw) and not re.search(r"named", raw):
            return cls(1, "end")
        found = re.search(rf"\b(?:{'|'.join(P.MONTHS)})\b", raw)
        if not found:
            raise ValueError(f"cannot read a fiscal calendar from {text!r}")
        named = re.search(
            r"named\s+(?:after|for|by)\s+.*?\b(ends?|ending|begins?|beginning|starts?|starting)", raw
        )
        named_by: Literal["end", "start"] = "start" if named and named[1][0] in "bs" else "end"
        return cls(P.month_number(found[0]), named_by)

    def year(self, fy: int) -> Interval:
        """Fiscal year ``fy`` as a UTC interval (granularity year)."""
        start = self._start(fy)
        return Interval(start, add_months(start, 12), G.YEAR)

    def quarter(self, fy: int, q: int) -> Interval:
        """Quarter ``q`` (1..4) of fiscal year ``fy``, UTC, granularity quarter."""
        if not 1 <= q <= 4:
            raise ValueError(f"quarter must be 1..4, got {q}")
        start = add_months(self._start(fy), 3 * (q - 1))
        return Interval(start, add_months(start, 3), G.QUARTER)

    def half(self, fy: int, h: int) -> Interval:
        """Half ``h`` (1..2) of fiscal year ``fy``, UTC, granularity quarter (the finest one above month)."""
        if h not in (1, 2):
            raise ValueError(f"half must be 1 or 2, got {h}")
        start = add_months(self._start(fy), 6 * (h - 1))
        return Interval(start, add_months(start, 6), G.QUARTER)

    def fiscal_year_of(self, year: int, month: int) -> int:
        """The label of the fiscal year containing calendar ``year``/``month``."""
        if self.start_month == 1:
            return year
        if self.named_by == "end":
            return year + 1 if month >= self.start_month else year
        return year if month >= self.start_month else year - 1

    def _start(self, fy: int) -> datetime:
        shift = 1 if self.named_by == "end" and self.start_month != 1 else 0
        return datetime(fy - shift, self.start_month, 1, tzinfo=UTC)


def _month_or_error(word: str) -> int:
    try:
        return P.month_number(word)
    except ValueError as exc:
        raise ValueError(f"not a month: {word!r}") from exc


@dataclass(frozen=True)
class TaggerConfig:
    """Configuration of :func:`extract_mentions`.

    Attributes:
        timezone: IANA zone in which local dates and clock times in the text are read; results are UTC.
        fiscal: the fiscal calendar for "FY23 Q4", "fiscal year 1931", "the present fiscal year".
        date_order: order of numeric dates; ``auto`` settles it once per text from its unambiguous
            numeric dates (a first field above 12 means DMY), MDY if nothing decides.
        grammar: also read the text with Duckling's grammar (:mod:`diachron.temporal.grammar`: clock
            times, year-less dates, holidays, offsets, parts of day, written zones); needs a reference.
    """

    timezone: str = "UTC"
    fiscal: FiscalCalendar = field(default_factory=FiscalCalendar)
    date_order: Literal["auto", "DMY", "MDY"] = "auto"
    grammar: bool = True

    @classmethod
    def from_options(
        cls, timezone: str = "UTC", fiscal_calendar: FiscalCalendar | str | None = None
    ) -> TaggerConfig:
        """The configuration of the public entry points' options, checked.

        Args:
            timezone: an IANA zone name.
            fiscal_calendar: a :class:`FiscalCalendar`, its words or short form (``"2:end"``), or ``None``.

        Raises:
            ValueError: an unknown time zone or an unreadable fiscal calendar (one line).
        """
        from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

        try:
            ZoneInfo(timezone)
        except (ZoneInfoNotFoundError, ValueError) as exc:
            raise ValueError(
                f"unknown time zone {timezone!r}: use an IANA name such as 'Europe/Paris'"
            ) from exc
        fiscal = (
            FiscalCalendar.parse(fiscal_calendar)
            if isinstance(fiscal_calendar, str)
            else fiscal_calendar or FiscalCalendar()
        )
        return cls(timezone=timezone, fiscal=fiscal)


@dataclass(frozen=True)
class TimeMention:
    """One time expression found in a text.

    Attributes:
        interval: the resolved half-open UTC interval of the expression itself, with its granularity
            ("since 2020" gives 2020: ``[2020-01-01, 2021-01-01)``).
        text: the matched surface text (without a leading relation word or preposition).
        span: ``(start, end)`` character offsets in the input.
        is_range: True for an explicit range ("between 2012 and 2014", "March-April 2021", "9:30 - 11:00").
        relation: the relation word written just before it, lower case: ``since``, ``from``, ``after``,
            ``before``, ``until``, ``till``, ``through``, ``up to``, ``by``, ``as of``, ``later than``,
            ``prior to``, ``starting in``, …; ``None`` when there is none (ranges carry none).
        reading: the interval with the relation applied (:func:`diachron.temporal.resolve.apply_relation`):
            "since 2020" is ``[2020-01-01, +inf)``, "before 11 am" ``[-inf, 11:00)``, "by 2pm" (not past
            tense) ``[reference, 14:00)``; equal to ``interval`` without a relation.
        source: ``"rules"`` (diachron's patterns), ``"duckling"`` (Duckling's grammar) or ``"anaphora"``
            (counted from the narrative's previous mention, :mod:`diachron.temporal.anaphora`).
    """

    interval: Interval
    text: str
    span: tuple[int, int]
    is_range: bool = False
    relation: str | None = None
    reading: Interval | None = None
    source: str = "rules"

    def __post_init__(self) -> None:
        if self.reading is None:
            object.__setattr__(self, "reading", self.interval)


@dataclass(frozen=True)
class _Ctx:
    text: str
    reference: datetime | None
    config: TaggerConfig
    dmy: bool

    @property
    def zone(self) -> ZoneInfo:
        return ZoneInfo(self.config.timezone)

    @property
    def today(self) -> datetime | None:
        """Local midnight (naive) of the reference day, or None without a reference."""
        if self.reference is None:
            return None
        local = to_utc(self.reference).astimezone(self.zone)
        return datetime(local.year, local.month, local.day)

    def span(self, start: datetime, end: datetime, granularity: Granularity) -> Interval:
        """Interval from naive local bounds."""
        return Interval(to_utc(start, tz=self.zone), to_utc(end, tz=self.zone), granularity)

    def day(self, year: int, month: int, day: int) -> Interval:
        start = datetime(year, month, day)
        return self.span(start, start + timedelta(days=1), G.DAY)

    def months(self, year: int, month: int, count: int, granularity: Granularity) -> Interval:
        start = datetime(year, month, 1)
        return self.span(start, add_months(start, count), granularity)

    def fiscal(self, interval: Interval) -> Interval:
        """A fiscal period (built at UTC midnight) re-read as local midnights."""
        start, end = (v.replace(tzinfo=None) for v in (interval.start, interval.end))  # type: ignore[union-attr]
        return self.span(start, end, interval.granularity)

    def full_year(self, digits: str) -> int:
        """A 2- or 4-digit year; 2 digits pick the century putting it in [ref - 80, ref + 20)."""
        value = int(digits)
        if len(digits) == 4:
            return value
        if self.reference is None:
            return value + (1900 if value >= 69 else 2000)
        low = to_utc(self.reference).year - 80
        year = low - low % 100 + value
        return year if year >= low else year + 100


Found = list[tuple[Interval, tuple[int, int]]]
Resolver = Callable[[re.Match[str], _Ctx], "Interval | Found | None"]


# --- absolute dates and periods ------------------------------------------------------------------
def _word_date(m: re.Match[str], ctx: _Ctx) -> Interval:
    return ctx.day(int(m["year"]), P.month_number(m["month"]), P.ordinal_value(m["day"]))


def _iso_date(m: re.Match[str], ctx: _Ctx) -> Interval:
    return ctx.day(int(m["year"]), int(m["month"]), int(m["day"]))


def _numeric_date(m: re.Match[str], ctx: _Ctx) -> Interval:
    first, second = int(m["a"]), int(m["b"])
    day, month = (first, second) if ctx.dmy else (second, first)
    return ctx.day(ctx.full_year(m["year"]), month, day)


def _month_year(m: re.Match[str], ctx: _Ctx) -> Interval:
    return ctx.months(int(m["year"]), P.month_number(m["month"]), 1, G.MONTH)


def _month_range_year(m: re.Match[str], ctx: _Ctx) -> Interval | None:
    first, last = P.month_number(m["m1"]), P.month_number(m["m2"])
    if last < first:
        return None
    return ctx.months(int(m["year"]), first, last - first + 1, G.MONTH)


def _month_range_bare(m: re.Match[str], ctx: _Ctx) -> Interval | None:
    """ "(March through May)": the months of the year written just before it in the sentence, else nothing
    (Duckling's grammar then reads it against the reference)."""
    left = re.split(r"[.;!?]\s", ctx.text[max(0, m.start() - 100) : m.start()])[-1]
    years = re.findall(rf"(?<![\d$.,]){P.YEAR4}(?![\d%])", left)
    first, last = P.month_number(m["m1"]), P.month_number(m["m2"])
    if not years or last < first:
        return None
    return ctx.months(int(years[-1]), first, last - first + 1, G.MONTH)


def _zone_named(words: str | None, ctx: _Ctx) -> ZoneInfo:
    """ "New York " -> America/New_York (a city of the IANA database); the text's zone otherwise."""
    if words:
        key = "/" + "_".join(words.split())
        for name in _zone_names():
            if name.endswith(key):
                return ZoneInfo(name)
    return ctx.zone


@functools.lru_cache(maxsize=1)
def _zone_names() -> tuple[str, ...]:
    import zoneinfo

    return tuple(sorted(zoneinfo.available_timezones()))


def _duration_up_to(m: re.Match[str], ctx: _Ctx) -> Interval:
    """ "the 24 hours up to 2 a.m. New York time on 10 March 2024": ``[T - 24 h, T)``, T read in the named
    zone (DST-correct: a wall time skipped by the clock change reads with the offset before it)."""
    zone = _zone_named(m["zone"], ctx)
    day = P.ordinal_value(m["day"] or m["day2"])
    month = P.month_number(m["month"] or m["month2"])
    hour, minute = _clock(m["t"], _clock_suffix(m["t"]))
    end = to_utc(datetime(int(m["year"]), month, day, hour, minute), tz=zone)
    count = P.number_value(m["n"]) if not m["n"].isdigit() else int(m["n"])
    unit = m["unit"].lower()
    delta = (
        timedelta(hours=count)
        if unit == "hours"
        else timedelta(days=count)
        if unit == "days"
        else timedelta(minutes=count)
    )
    return Interval(end - delta, end, G.HOUR if unit != "days" else G.DAY)


def _day_range(m: re.Match[str], ctx: _Ctx) -> Interval | None:
    year, month = int(m["year"]), P.month_number(m["month"])
    first, last = P.ordinal_value(m["d1"]), P.ordinal_value(m["d2"])
    return ctx.day(year, month, first).hull(ctx.day(year, month, last)) if first < last else None


def _day_range_shared_year(m: re.Match[str], ctx: _Ctx) -> Interval | None:
    """ "from 3 June to 7 June 2024" / "between June 3 and June 7, 2024": one year for both ends, B in."""
    year = int(m["year"])
    if m["m2"] is not None:
        last_month, first_month = P.month_number(m["m2"]), P.month_number(m["m1"] or m["m2"])
        first_day, last_day = P.ordinal_value(m["d1"]), P.ordinal_value(m["d2"])
    else:
        first_month, last_month = P.month_number(m["m1b"]), P.month_number(m["m2b"])
        first_day, last_day = P.ordinal_value(m["d1b"]), P.ordinal_value(m["d2b"])
    first, last = ctx.day(year, first_month, first_day), ctx.day(year, last_month, last_day)
    return first.hull(last) if first.start < last.start else None  # type: ignore[operator]


def _year(m: re.Match[str], ctx: _Ctx) -> Interval:
    return ctx.months(int(m["year"]), 1, 12, G.YEAR)


def _year_range(m: re.Match[str], ctx: _Ctx) -> Interval | None:
    first = int(m["y1"])
    last = int(m["y2"]) if len(m["y2"]) == 4 else first - first % 100 + int(m["y2"])
    if last < first and len(m["y2"]) == 2:
        last += 100
    if last <= first or last - first > 50:
        return None
    return ctx.months(first, 1, 12 * (last - first + 1), G.YEAR)


_PART_YEARS = {"early": (0, 4), "mid": (3, 4), "late": (6, 4)}  # decade: first, middle, last four years
_PART_MONTHS = {"early": (1, 4), "mid": (5, 4), "late": (9, 4)}  # year: Jan-Apr, May-Aug, Sep-Dec


def _decade(m: re.Match[str], ctx: _Ctx) -> Interval:
    """ "the 1920s" is the decade; "the early 1980s" its first four years (1980-83), "mid" 1983-86, "late"
    1986-89 (as TimeQA's question grammar reads them)."""
    decade = int(m["decade"])
    if m["part"]:
        first, count = _PART_YEARS[m["part"].lower()]
        return ctx.months(decade + first, 1, 12 * count, G.YEAR)
    return ctx.months(decade, 1, 120, G.DECADE)


def _part_of_year(m: re.Match[str], ctx: _Ctx) -> Interval:
    """ "early 2008" is January-April, "mid-2007" May-August, "late 2008" September-December."""
    part = m["part"].lower()
    first, count = _PART_MONTHS["late" if part.startswith("end") else part]
    return ctx.months(int(m["year"]), first, count, G.MONTH)


def _century(m: re.Match[str], ctx: _Ctx) -> Interval:
    """ "the 20th century" is ``[1900, 2000)`` (granularity decade, the coarsest there is)."""
    n = P.ordinal_value(m["n"])
    return ctx.months(100 * (n - 1), 1, 1200, G.DECADE) if 1 <= n <= 21 else None  # type: ignore[return-value]


def _relative_month_day(m: re.Match[str], ctx: _Ctx) -> Interval | None:
    """ "next February 28": the first such day after the reference day; "last": the latest before it."""
    if ctx.today is None:
        return None
    month, day, which = P.month_number(m["month"]), P.ordinal_value(m["day"]), m["which"].lower()
    days = [
        datetime(y, month, day)
        for y in range(ctx.today.year - 4, ctx.today.year + 5)
        if _exists(y, month, day)
    ]
    if which == "next":
        picked = [d for d in days if d > ctx.today][:1]
    elif which == "last":
        picked = [d for d in days if d < ctx.today][-1:]
    else:
        picked = [d for d in days if d.year == ctx.today.year]
    return ctx.day(picked[0].year, month, day) if picked else None


def _exists(year: int, month: int, day: int) -> bool:
    try:
        datetime(year, month, day)
    except ValueError:
        return False
    return True


def _fiscal_label(text: str, ctx: _Ctx) -> int:
    return ctx.full_year(re.findall(r"\d+", text)[-1])


def _quarter(m: re.Match[str], ctx: _Ctx) -> Interval:
    q = int(m["q1"] or m["q2"]) if not m["qw"] else _ORDINALS.index(_ord_word(m["qw"])) + 1
    fiscal = m["fy1"] or m["fy2"]
    if fiscal:
        return ctx.fiscal(ctx.config.fiscal.quarter(_fiscal_label(fiscal, ctx), q))
    return ctx.months(int(m["y1"]), 3 * q - 2, 3, G.QUARTER)


_ORDINALS = ["first", "second", "third", "fourth"]


def _ord_word(word: str) -> str:
    return {"1st": "first", "2nd": "second", "3rd": "third", "4th": "fourth"}.get(word.lower(), word.lower())


def _half(m: re.Match[str], ctx: _Ctx) -> Interval:
    h = int(m["h1"] or m["h2"]) if not m["hw"] else _ORDINALS.index(m["hw"].lower()) + 1
    fiscal = m["fy1"] or m["fy2"]
    if fiscal:
        return ctx.fiscal(ctx.config.fiscal.half(_fiscal_label(fiscal, ctx), h))
    return ctx.months(int(m["y1"]), 6 * h - 5, 6, G.QUARTER)


def _fiscal_year(m: re.Match[str], ctx: _Ctx) -> Interval:
    return ctx.fiscal(ctx.config.fiscal.year(_fiscal_label(m["fy"] or m["year"], ctx)))


def _duration_ended(m: re.Match[str], ctx: _Ctx) -> Found:
    """ "nine months ended September 30, 2016 and 2015": one interval per year, end day included."""
    if m["n"]:
        count, weeks = P.number_value(m["n"]), m["unit"].lower() == "weeks"
    else:
        count, weeks = {"year": 12, "quarter": 3}.get(m["kind"].lower(), 6), False
    month = P.month_number(m["month"])
    years = [(int(m["year"]), (m.start(), m.end("year")))]
    offset = m.start("more")
    years += [(int(y[0]), (offset + y.start(), offset + y.end())) for y in re.finditer(r"\d{4}", m["more"])]
    found: Found = []
    for year, span in years:
        if m["day"]:
            end = datetime(year, month, P.ordinal_value(m["day"])) + timedelta(days=1)
        else:
            end = add_months(datetime(year, month, 1), 1)
        start = end - timedelta(weeks=count) if weeks else add_months(end, -count)
        found.append((ctx.span(start, end, G.DAY if weeks else G.MONTH), span))
    return found


def _range(m: re.Match[str], ctx: _Ctx) -> Interval | None:
    """ "from A to B", "between A and B", "A–B": the hull, B included at its own granularity."""
    first = _resolve_atom(m["a1"] or m["a2"], ctx)
    last = _resolve_atom(m["b1"] or m["b2"], ctx)
    if first is None or last is None or not first.start < last.end:  # type: ignore[operator]
        return None
    return first.hull(last)


def _resolve_atom(text: str, ctx: _Ctx) -> Interval | None:
    for cand in _candidates(text, ctx, _ATOM_RULES):
        if cand.start == 0 and cand.end == len(text) and len(cand.found) == 1:
            return cand.found[0][0]
    return None


# --- relative expressions (need the reference time) ---------------------------------------------
_SHIFT = {
    "this": 0,
    "current": 0,
    "present": 0,
    "last": -1,
    "past": -1,
    "previous": -1,
    "preceding": -1,
    "next": 1,
    "coming": 1,
    "ensuing": 1,
}


def _period(today: datetime, unit: str, shift: int, ctx: _Ctx) -> Interval:
    """The day/week/month/quarter/year ``shift`` units away from the one holding ``today`` (local)."""
    if unit == "day":
        start = today + timedelta(days=shift)
        return ctx.span(start, start + timedelta(days=1), G.DAY)
    if unit == "week":
        start = today - timedelta(days=today.weekday()) + timedelta(weeks=shift)
        return ctx.span(start, start + timedelta(weeks=1), G.DAY)
    if unit == "year":
        return ctx.months(today.year + shift, 1, 12, G.YEAR)
    if unit == "decade":
        return ctx.months(today.year - today.year % 10 + 10 * shift, 1, 120, G.DECADE)
    months, granularity = (1, G.MONTH) if unit == "month" else (3, G.QUARTER)
    offset = 0 if unit == "month" else (today.month - ctx.config.fiscal.start_month) % 3
    start = add_months(today.replace(day=1), months * shift - offset)
    return ctx.months(start.year, start.month, months, granularity)


def _present_ref(m: re.Match[str], ctx: _Ctx) -> Interval | None:
    """ "currently", "now": the reference instant (TimeML's PRESENT_REF), one second as Duckling's "now"."""
    return (
        None
        if ctx.reference is None
        else Interval(ctx.reference, ctx.reference + timedelta(seconds=1), G.INSTANT)
    )


def _relative_day(m: re.Match[str], ctx: _Ctx) -> Interval | None:
    shift = {"today": 0, "yesterday": -1, "tomorrow": 1}[m["word"].lower()]
    return None if ctx.today is None else _period(ctx.today, "day", shift, ctx)


def _relative_period(m: re.Match[str], ctx: _Ctx) -> Interval | None:
    shift = _SHIFT[m["which"].lower()]
    return None if ctx.today is None else _period(ctx.today, m["unit"].lower(), shift, ctx)


def _relative_ago(m: re.Match[str], ctx: _Ctx) -> Interval | None:
    shift = -P.number_value(m["n"])
    return None if ctx.today is None else _period(ctx.today, m["unit"].lower(), shift, ctx)


def _relative_ordinal_day(m: re.Match[str], ctx: _Ctx) -> Interval | None:
    """ "the 1st of last month": the month shift, then the written day replaces the reference day."""
    if ctx.today is None:
        return None
    month = add_months(ctx.today.replace(day=1), _SHIFT[m["which"].lower()])
    return ctx.day(month.year, month.month, P.ordinal_value(m["day"]))


def _fiscal_relative(m: re.Match[str], ctx: _Ctx) -> Interval | None:
    if ctx.today is None:
        return None
    fiscal = ctx.config.fiscal
    label = fiscal.fiscal_year_of(ctx.today.year, ctx.today.month) + _SHIFT[m["which"].lower()]
    return ctx.fiscal(fiscal.year(label))


_FUTURE_CUE = re.compile(
    r"\b(?:until|till|by|before|from|starting|through|next|on or before)\s+$", re.IGNORECASE
)


def _weekday(m: re.Match[str], ctx: _Ctx) -> Interval | None:
    """ "until Monday" / "next Monday": the first such day after the reference day; a bare or "last"
    weekday: the latest one before it (news reports past events by weekday)."""
    if ctx.today is None:
        return None
    target = P.WEEKDAYS.index(m["weekday"].lower())
    which = (m["which"] or "").lower()
    future = which.startswith(("next", "this")) and "past" not in which
    if not which and _FUTURE_CUE.search(ctx.text[max(0, m.start() - 20) : m.start()]):
        future = True
    delta = (target - ctx.today.weekday()) % 7 or 7
    if not future:
        delta = -((ctx.today.weekday() - target) % 7 or 7)
    return _period(ctx.today, "day", delta, ctx)


def _clock(text: str, suffix: str | None) -> tuple[int, int]:
    digits = re.findall(r"\d+", text)
    hour, minute = int(digits[0]), int(digits[1]) if len(digits) > 1 else 0
    if suffix == "p" and hour < 12:
        hour += 12
    elif suffix == "a" and hour == 12:
        hour = 0
    return hour, minute


def _clock_suffix(text: str) -> str | None:
    found = re.search(r"([ap])\.?m", text, re.IGNORECASE)
    return found[1].lower() if found else None


def _anchor_day(text: str, ctx: _Ctx) -> datetime | None:
    word = text.strip().lower()
    if word in ("today", "yesterday", "tomorrow"):
        return (
            None
            if ctx.today is None
            else ctx.today + timedelta(days={"today": 0, "yesterday": -1}.get(word, 1))
        )
    found = P.WORD_DATE_MDY.search(text)
    return datetime(int(found["year"]), P.month_number(found["month"]), P.ordinal_value(found["day"]))


def _clock_range(m: re.Match[str], ctx: _Ctx) -> Interval | None:
    """ "today from 2PM to 3PM": local clock times on a day; the end time is the exclusive bound."""
    suffix = _clock_suffix(m["t2"])
    anchor = m["day1"] or m["day2"]
    if suffix is None or anchor is None:
        return None
    day = _anchor_day(anchor, ctx)
    if day is None:
        return None
    start, end = _clock(m["t1"], _clock_suffix(m["t1"]) or suffix), _clock(m["t2"], suffix)
    if start >= end and _clock_suffix(m["t1"]) is None:
        start = _clock(m["t1"], "a")
    return ctx.span(
        day.replace(hour=start[0], minute=start[1]), day.replace(hour=end[0], minute=end[1]), G.HOUR
    )


# --- engine -----------------------------------------------------------------------------------------
@dataclass(frozen=True)
class _Candidate:
    start: int
    end: int
    found: Found
    is_range: bool
    rank: int
    tier: int = 0  # 0: diachron's own kinds, 1: Duckling's grammar, 2: our generic dates and relative words
    relation: str | None = None
    reading: Interval | None = None


_ATOM_RULES: list[tuple[re.Pattern[str], Resolver, bool]] = [
    (P.WORD_DATE_MDY, _word_date, False),
    (P.WORD_DATE_DMY, _word_date, False),
    (P.ISO_DATE, _iso_date, False),
    (P.NUMERIC_DATE, _numeric_date, False),
    (P.MONTH_YEAR, _month_year, False),
    (P.QUARTER, _quarter, False),
    (P.HALF, _half, False),
    (P.FISCAL_YEAR, _fiscal_year, False),
    (P.DECADE, _decade, False),
    (P.PART_OF_YEAR, _part_of_year, False),
    (P.YEAR, _year, False),
    (P.YEAR_EARLY, _year, False),
]
_ALL_RULES: list[tuple[re.Pattern[str], Resolver, bool]] = [
    (P.DURATION_ENDED, _duration_ended, False),
    (P.CLOCK_RANGE, _clock_range, True),
    (P.RANGE, _range, True),
    (P.MONTH_RANGE_YEAR, _month_range_year, True),
    (P.MONTH_RANGE_BARE, _month_range_bare, True),
    (P.DURATION_UP_TO, _duration_up_to, False),
    (P.DAY_RANGE, _day_range, True),
    (P.DAY_RANGE_SHARED_YEAR, _day_range_shared_year, True),
    (P.YEAR_PRESENT, _year, False),
    (P.YEAR_RANGE, _year_range, True),
    *_ATOM_RULES,
    (P.CENTURY, _century, False),
    (P.FISCAL_RELATIVE, _fiscal_relative, False),
    (P.RELATIVE_ORDINAL_DAY, _relative_ordinal_day, False),
    (P.RELATIVE_MONTH_DAY, _relative_month_day, False),
    (P.RELATIVE_AGO, _relative_ago, False),
    (P.RELATIVE_PERIOD, _relative_period, False),
    (P.RELATIVE_DAY, _relative_day, False),
    (P.WEEKDAY, _weekday, False),
    (P.PRESENT_REF, _present_ref, False),
]
# Our generic kinds, which Duckling's grammar reads as well or better: on an equal span its reading wins.
_GENERIC = {
    P.WORD_DATE_MDY,
    P.WORD_DATE_DMY,
    P.MONTH_YEAR,
    P.YEAR,
    P.RELATIVE_ORDINAL_DAY,
    P.RELATIVE_AGO,
    P.RELATIVE_PERIOD,
    P.RELATIVE_DAY,
    P.WEEKDAY,
    P.PRESENT_REF,
}


def _tier(pattern: re.Pattern[str], m: re.Match[str]) -> int:
    """0 for diachron's own kinds, 2 for the generic ones; "four years ago" / "two months ago" are our own:
    the written unit is the granularity (the calendar year or month), where Duckling counts back to a day
    or a month. Days and weeks stay Duckling's (the day that many days or weeks back)."""
    if pattern is P.RELATIVE_AGO and m["unit"].lower() in ("month", "quarter", "year"):
        return 0
    return 2 if pattern in _GENERIC else 0


# ranks (in _ALL_RULES) of our generic kinds that do not depend on the reference: Duckling reads them alike
_ABSOLUTE_RANKS = {
    i
    for i, (pattern, _, _) in enumerate(_ALL_RULES)
    if pattern in (P.WORD_DATE_MDY, P.WORD_DATE_DMY, P.MONTH_YEAR, P.YEAR)
}


def _gated(text: str) -> Callable[[re.Pattern[str]], bool]:
    """Whether a pattern can match ``text`` at all (:data:`_patterns.GATES`; each gate searched once)."""
    seen: dict[P.Gate, bool] = {}
    folded: list[str] = []

    def can_match(pattern: re.Pattern[str]) -> bool:
        for gate in P.GATES.get(pattern, ()):
            if gate not in seen:
                if gate.folded and not folded:
                    folded.append(text.translate(P.FOLD).lower())
                seen[gate] = gate.regex.search(folded[0] if gate.folded else text) is not None
            if not seen[gate]:
                return False
        return True

    return can_match


def _candidates(
    text: str, ctx: _Ctx, rules: list[tuple[re.Pattern[str], Resolver, bool]]
) -> list[_Candidate]:
    out: list[_Candidate] = []
    can_match = _gated(text)
    for rank, (pattern, resolver, is_range) in enumerate(rules):
        if not can_match(pattern):
            continue
        for m in pattern.finditer(text):
            try:
                result = resolver(m, ctx)
            except (ValueError, OverflowError) as exc:  # 30 February, or past the years 1-9999
                logger.debug("dropped %r: %s", m[0], exc)
                continue
            if result is None:
                continue
            found = [(result, m.span())] if isinstance(result, Interval) else result
            out.append(_Candidate(m.start(), m.end(), found, is_range, rank, _tier(pattern, m)))
    return out


def _grammar_candidates(text: str, ctx: _Ctx, ours: list[_Candidate]) -> list[_Candidate]:
    from diachron.temporal.grammar import grammar_mentions

    if ctx.reference is None or not ctx.config.grammar:
        return []
    covered = [(c.start, c.end) for c in ours if c.tier == 0 or c.rank in _ABSOLUTE_RANKS]
    return [
        _Candidate(g.span[0], g.span[1], [(g.interval, g.span)], g.is_range, 0, 1, g.relation, g.reading)
        for g in grammar_mentions(
            text, reference=ctx.reference, timezone=ctx.config.timezone, covered=covered
        )
    ]


def _select(candidates: list[_Candidate]) -> list[_Candidate]:
    """diachron's own kinds first (longest first), then the longest of Duckling's readings and our generic
    dates (on an equal span Duckling's reading); no two chosen candidates overlap."""
    chosen: list[_Candidate] = []
    for cand in sorted(candidates, key=lambda c: (c.tier != 0, c.start - c.end, c.tier, c.rank, c.start)):
        if all(cand.end <= other.start or other.end <= cand.start for other in chosen):
            chosen.append(cand)
    return sorted(chosen, key=lambda c: c.start)


def _day_first(text: str, config: TaggerConfig) -> bool:
    """Settle numeric date order once per text: majority of unambiguous dates, dotted dates DMY."""
    if config.date_order != "auto":
        return config.date_order == "DMY"
    votes: list[bool] = []
    separators: set[str] = set()
    for m in P.NUMERIC_DATE.finditer(text) if _gated(text)(P.NUMERIC_DATE) else ():
        first, second = int(m["a"]), int(m["b"])
        separators.add(m["sep"])
        if first > 12 >= second or second > 12 >= first:
            votes.append(first > 12)
    if votes:
        return votes.count(True) > votes.count(False) or (
            votes.count(True) == votes.count(False) and votes[0]
        )
    return separators == {"."}


# a month name written in lower case before a year ("dec 1981", "from 1975 to march 1981"): questions are
# typed that way; followed by a year it is a date, never the verb "may" or "march"
_LOWER_MONTH = re.compile(
    r"\b(?-i:january|february|march|april|may|june|july|august|september|october|november|"
    r"december|jan|feb|mar|apr|jun|jul|aug|sept|sep|oct|nov|dec)\b(?=\.?\s+"
    r"(?:[0-3]?\d(?:st|nd|rd|th)?\s?,?\s+)?[12]\d{3}\b)"
)
# Duckling reads a bare plural unit as the current one ("between the years 1975 and 1982", "over the years")
_BARE_UNITS = re.compile(r"(?:the\s+)?(?:years|months|weeks|days|decades|centuries)", re.I)
# ... and a holiday in a lower-case word of prose ("money has been lent abroad", "the advent of radio")
_COMMON_WORDS = re.compile(r"(?-i:lent|advent)")


_COUNTED = re.compile(
    r"\d|year|month|week|day|decade|centur|hour|minute|second|quarter|thousand|hundred", re.I
)
_YEAR_WORD = re.compile(r"\b\d{4}\b")


def _out_of_table(text: str, cand: _Candidate, reference: datetime | None) -> bool:
    """A named day without a number ("Lent", "Easter") that Duckling put two years or more from the
    reference with no year written before it in the sentence: its holiday tables cover a range of years,
    and outside it the nearest table year comes back (Lent in a 1926 text read as 1950)."""
    words = text[cand.start : cand.end]
    if reference is None or _COUNTED.search(words) or not cand.found:
        return False
    sentence = text[max(text.rfind(".", 0, cand.start), text.rfind("\n", 0, cand.start)) + 1 : cand.start]
    if _YEAR_WORD.search(sentence):
        return False  # "In 2008 the office closed at Christmas": the written year completes it
    start = cand.found[0][0].start
    return start is not None and abs((start - reference).days) >= 730


# a bare number that is the object of a verb of paying ("paid 2000", "Pay ABC 2000", "costs 1,999") is an
# amount, not a year: one word (the payee) may stand between; a preposition ("paid in 2000") makes a year
_PAID = re.compile(
    r"\b(?:pay|pays|paid|paying|owe|owes|owed|cost|costs|charge|charges|charged|spend|spends|spent|earn|"
    r"earns|earned|bid|bids|price|priced|sell|sells|sold)\s+(?:(?!in\b|on\b|at\b|by\b|for\b|since\b|from\b|"
    r"until\b|of\b|the\b)\w+\s+)?$",
    re.I,
)


def _amount(text: str, cand: _Candidate) -> bool:
    """A year candidate that is a paid amount (:data:`_PAID`)."""
    return (
        cand.tier == 2
        and text[cand.start : cand.end].isdigit()
        and _PAID.search(text, max(0, cand.start - 40), cand.start) is not None
    )


def names_the_present(mention: TimeMention) -> bool:
    """True for a mention that is the reference instant itself ("now", "currently", "at present")."""
    return P.PRESENT_REF.fullmatch(mention.text) is not None


def _cased_months(text: str) -> str:
    """``text`` with lower-case month names before a year capitalized (same length)."""
    return _LOWER_MONTH.sub(lambda m: m[0].capitalize(), text) if _LOWER_MONTH.search(text) else text


def extract_mentions(
    text: str, *, reference: datetime | None, config: TaggerConfig = TaggerConfig()
) -> list[TimeMention]:
    """Find the time expressions of ``text`` and resolve each to a half-open UTC interval.

    Args:
        text: the input text.
        reference: the document's publication time (aware; naive means UTC) against which relative
            expressions resolve; when None, relative expressions are skipped.
        config: time zone of local dates, fiscal calendar and numeric date order.

    Returns:
        Non-overlapping mentions in text order. One phrase may give several mentions ("nine months
        ended September 30, 2016 and 2015" gives one per year, each with its own span).
    """
    ref = None if reference is None else to_utc(reference)
    scan = _cased_months(text)  # same length: spans and mention texts stay the input's
    ctx = _Ctx(scan, ref, config, _day_first(scan, config))
    mentions: list[TimeMention] = []
    ours = _candidates(scan, ctx, _ALL_RULES)
    grammar = [
        c
        for c in _grammar_candidates(scan, ctx, ours)
        if not (
            _BARE_UNITS.fullmatch(text[c.start : c.end])
            or _COMMON_WORDS.fullmatch(text[c.start : c.end])
            or _out_of_table(text, c, ref)
        )
    ]
    ours = [c for c in ours if not _amount(scan, c)]
    for cand in _select(ours + grammar):
        for interval, (s, e) in cand.found:
            relation, reading = cand.relation, cand.reading
            if cand.tier != 1 and not cand.is_range:
                before = relation_before(text, s)
                relation = before[0] if before else None
                tense = tense_at(text, (s, e)) if relation == "by" else "none"  # only "by" depends on it
                reading = apply_relation(relation, interval, reference=ref, tense=tense)
            mentions.append(
                TimeMention(
                    interval,
                    text[s:e],
                    (s, e),
                    cand.is_range,
                    relation,
                    reading,
                    "duckling" if cand.tier == 1 else "rules",
                )
            )
    logger.debug("%d time mentions in %d characters", len(mentions), len(text))
    return mentions
