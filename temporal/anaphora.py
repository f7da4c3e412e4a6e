"""Anaphoric time expressions of narrative text: "two years later", "the following year", "that same year".

They name a time relative to the last time the text mentioned, not to its publication date: "In 2006, B.o.B
was discovered … Two years later, Jonsin and B.o.B signed a joint venture deal" means 2008, in a page that
has no publication date at all. HeidelTime resolves them the same way in narrative documents, against the
latest preceding temporal expression (Strötgen & Gertz, "Multilingual and cross-domain temporal tagging",
LRE 47(2), 2013, §4.2 "reference time"; TimeML's ``anchorTimeID``). The tagger
(:mod:`diachron.temporal.tagger`) resolves deictic expressions ("next year", "last month") against the
publication time; this module adds the anaphoric ones, whose wording ties them to the narrative:

- ``N <unit>s later|afterwards|earlier|previously`` ("two years later", "a month earlier"; "N years
  before/after" only when the phrase ends there: "two years after his death" anchors on an event, not a date);
- ``the following|next|subsequent|previous|preceding|prior|same <unit>`` ("the following season");
- ``that|that same|later that|earlier that <unit>`` ("later that year").

Units: day, week, month, year, season (read as a year), decade. The anchor is the latest preceding mention
in document order (across chunks: the caller carries it) whose interval is bounded, that does not open a
parenthesis (a lifespan "( 1898-1984 )" names a person, the story stays where it was), and no coarser than the
unit ("the next day" needs a day; "the following year" a year, month or day); without one, the publication
time when the document has one; else the expression is left unresolved. A forward shift counts from the
anchor's last period (the end of "from 1965 to 1975"), a backward one from its first. Every interval is
half-open UTC, the period of the unit in the tagger's time zone.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

from diachron.schemas.time import Granularity, Interval, add_months, floor_to, period, to_utc
from diachron.temporal import _patterns as P
from diachron.temporal.tagger import TimeMention

__all__ = ["AnaphoricTime", "NarrativeClock", "find_anaphoric", "resolve_anaphoric"]

G = Granularity
_UNITS = {"day": G.DAY, "week": G.DAY, "month": G.MONTH, "year": G.YEAR, "season": G.YEAR, "decade": G.DECADE}
_MONTHS = {G.MONTH: 1, G.YEAR: 12, G.DECADE: 120}
_SHIFT = {"following": 1, "next": 1, "subsequent": 1, "previous": -1, "preceding": -1, "prior": -1, "same": 0}
_NUMBER = r"an?|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|\d{1,2}"
_UNIT = r"day|week|month|year|season|decade"
_PATTERN = re.compile(
    rf"\b(?:(?P<n>{_NUMBER})\s+(?P<unit1>{_UNIT})s?\s+(?:(?P<later>later|afterwards?)|(?P<earlier>earlier|previously))"
    rf"(?!\s+than)"
    rf"|(?P<n2>{_NUMBER})\s+(?P<unit2>{_UNIT})s?\s+(?:(?P<after>after)|(?P<before>before))(?=\s*(?:[,.;:)]|$))"
    rf"|the\s+(?P<which>following|next|subsequent|previous|preceding|prior|same)\s+(?P<unit3>{_UNIT})"
    rf"|(?P<that>(?:later|earlier)\s+(?:that|the\s+same)|that\s+same|that)\s+(?P<unit4>day|month|year|season))\b",
    re.IGNORECASE,
)


#: a date opening a parenthesis ("Elsbeth ( 1898-1984 )"): it identifies someone, the narrative does not move
_PARENTHESIZED = re.compile(r"\(\s*$")


@dataclass(frozen=True, slots=True)
class AnaphoricTime:
    """An anaphoric expression found in a text: its ``(start, end)`` offsets, unit and shift in units."""

    span: tuple[int, int]
    text: str
    unit: str
    shift: int


def find_anaphoric(text: str) -> list[AnaphoricTime]:
    """The anaphoric time expressions of ``text`` in text order (module docstring), unresolved."""
    out = []
    for m in _PATTERN.finditer(text):
        if m["unit1"] or m["unit2"]:
            n = P.number_value(m["n"] or m["n2"])
            sign = 1 if (m["later"] or m["after"]) else -1
            out.append(AnaphoricTime(m.span(), m[0], (m["unit1"] or m["unit2"]).lower(), sign * n))
        elif m["unit3"]:
            out.append(AnaphoricTime(m.span(), m[0], m["unit3"].lower(), _SHIFT[m["which"].lower()]))
        else:
            out.append(AnaphoricTime(m.span(), m[0], m["unit4"].lower(), 0))
    return out


def resolve_anaphoric(
    expr: AnaphoricTime, anchor: Interval | None, *, timezone: str = "UTC"
) -> Interval | None:
    """The interval ``expr`` names, counted from ``anchor`` (half-open UTC), or ``None`` when the anchor is
    missing, open, or coarser than the expression's unit.

    Example: "two years later" from ``[2006-01-01, 2007-01-01)`` is ``[2008-01-01, 2009-01-01)``; "the
    next day" from 4 July 2004 is 5 July 2004; "the following year" from "from 1965 to 1975" is 1976.
    """
    unit = _UNITS[expr.unit]
    if anchor is None or anchor.start is None or anchor.end is None or anchor.granularity.rank > unit.rank:
        return None
    zone = ZoneInfo(timezone)
    point = (anchor.end - timedelta(microseconds=1)) if expr.shift > 0 else anchor.start
    local = floor_to(point.astimezone(zone).replace(tzinfo=None), unit)
    if unit is G.DAY:  # a day, or a week counted in days from a day ("two weeks later")
        start = local + timedelta(days=expr.shift * (7 if expr.unit == "week" else 1))
        end = start + timedelta(days=1)
    else:
        start = add_months(local, _MONTHS[unit] * expr.shift)
        end = add_months(start, _MONTHS[unit])
    if not 1 <= start.year <= 9998:
        return None
    return Interval(to_utc(start, tz=zone), to_utc(end, tz=zone), unit)


class NarrativeClock:
    """The reference time of a narrative as it is read in document order (module docstring).

    Feed it each text's mentions in order (:meth:`read`): it returns them with the anaphoric expressions
    added (resolved against the latest preceding mention, or ``reference``), and remembers the last one for
    the next text (a chunk's "the following year" may count from a year named in the chunk before).

    Args:
        reference: the document's publication time, the anchor before any mention (``None``: none).
        timezone: IANA zone of the periods (the tagger's).
    """

    def __init__(self, reference: datetime | None, *, timezone: str = "UTC") -> None:
        self.timezone = timezone
        self.anchor: Interval | None = (
            None if reference is None else period(to_utc(reference), G.DAY, tz=timezone)
        )

    def read(self, text: str, mentions: list[TimeMention]) -> list[TimeMention]:
        """``mentions`` (of ``text``, in text order) with its anaphoric expressions added, in text order; a
        tagger mention overlapping an anaphoric phrase gives way to it when the phrase resolves ("the
        following day" counts from the narrative, not from the publication date), else it stays."""
        found = find_anaphoric(text)

        def overlaps(m: TimeMention, a: AnaphoricTime) -> bool:
            return m.span[0] < a.span[1] and a.span[0] < m.span[1]

        shadowed = {a.span: [m for m in mentions if overlaps(m, a)] for a in found}
        items: list[TimeMention | AnaphoricTime] = [
            m for m in mentions if not any(overlaps(m, a) for a in found)
        ]
        out: list[TimeMention] = []
        for item in sorted([*items, *found], key=lambda x: x.span[0]):
            if isinstance(item, TimeMention):
                self._take(text, item, out)
                continue
            interval = resolve_anaphoric(item, self.anchor, timezone=self.timezone)
            if interval is None:
                for m in shadowed[item.span]:
                    self._take(text, m, out)
            else:
                self._take(text, TimeMention(interval, item.text, item.span, source="anaphora"), out)
        return out

    def _take(self, text: str, mention: TimeMention, out: list[TimeMention]) -> None:
        """Keep ``mention``; it becomes the anchor when bounded and not opening a parenthesis."""
        out.append(mention)
        if (
            mention.interval.start is not None
            and mention.interval.end is not None
            and not _PARENTHESIZED.search(text, max(0, mention.span[0] - 8), mention.span[0])
        ):
            self.anchor = mention.interval
