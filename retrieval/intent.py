"""Rule-based question parser: question -> :class:`~diachron.schemas.intent.TemporalIntent` (TA-RAG §3.2).

The time expressions are found and resolved by the tagger (:func:`diachron.temporal.tagger.extract_mentions`)
against the question's clock ``now``, in the one declared zone ``IntentConfig.timezone``; the words around
them decide the relation (``between``, ``at``, ``before``, ``after``, ``current``, ``unknown``). Intervals
are half-open UTC ``[start, end)``. This module only returns typed values; it never builds queries.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass, field
from datetime import datetime

from diachron.retrieval.errors import RetrievalError
from diachron.schemas.intent import Relation, TemporalIntent
from diachron.schemas.time import Granularity, Interval, format_instant, to_utc
from diachron.temporal.tagger import FiscalCalendar, TaggerConfig, TimeMention, extract_mentions

__all__ = [
    "MAX_QUESTION_CHARS",
    "NON_EVENT_WORDS",
    "IntentConfig",
    "QuestionTooLongError",
    "core_query",
    "event_named_by",
    "parse_intent",
    "parse_question",
]

logger = logging.getLogger(__name__)

_I = re.IGNORECASE
_UP_TO_NOW = re.compile(
    r"\b(?:up\s+(?:to|until)\s+(?:now|today|the\s+present)|until\s+now|till\s+now|so\s+far|"
    r"to\s+date|thus\s+far)\b",
    _I,
)
_CURRENT = re.compile(
    r"\b(?:currently|right\s+now|nowadays|at\s+present|at\s+the\s+moment|these\s+days|now|"
    r"current|today's|today’s|present-day|latest|newest|most\s+recent)\b",
    _I,
)
_CURRENT_REMOVABLE = re.compile(
    r"\s*\b(?:currently|right\s+now|nowadays|at\s+present|at\s+the\s+moment|"
    r"these\s+days)\b",
    _I,
)
_CONNECTORS = re.compile(
    r"(?:\b(?:in|during|on|for|of|at|within|throughout|over|as\s+of|between|from|before|"
    r"after|since|until|till|by|prior\s+to|up\s+to|up\s+until|through|earlier\s+than|"
    r"later\s+than|starting|beginning|the|(?:time\s+)?period|years?)\s+)+$",
    _I,
)
_NOW_WORD = re.compile(
    r"(?:right\s+)?now|currently|at\s+present|at\s+the\s+moment|these\s+days", _I
)  # _read_clock's
_VALID_AT = re.compile(
    r"(?:\b(?:current|in\s+force|in\s+effect|valid|applied|applicable|applies|apply)\s+"
    r"(?:on|in|at|as\s+of|during)|\b(?:latest|newest|most\s+recent)\b[^.?!]*\bas\s+of)\s+"
    r"(?:the\s+)?$",
    _I,
)  # "the latest release as of 1 June 2015": valid (current) then
_RELATIVE = re.compile(
    r"\b(?:today|yesterday|tomorrow|last|next|this|ago|current|present|coming|previous|"
    r"preceding|Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday)\b",
    _I,
)
#: words that make no event of a phrase: determiners, ordinals and time words ("the end of 2005", "the 2008
#: season")
NON_EVENT_WORDS = frozenset(
    {
        "the",
        "a",
        "an",
        "of",
        "to",
        "in",
        "on",
        "for",
        "and",
        "at",
        "our",
        "their",
        "its",
        "his",
        "her",
        "first",
        "second",
        "third",
        "last",
        "next",
        "this",
        "that",
        "end",
        "beginning",
        "start",
        "middle",
        "year",
        "years",
        "month",
        "months",
        "week",
        "weeks",
        "day",
        "days",
        "quarter",
        "decade",
        "century",
        "period",
        "time",
        "half",
        "fiscal",
        "early",
        "mid",
        "late",
        "spring",
        "summer",
        "autumn",
        "fall",
        "winter",
        "season",
    }
)
_THE = re.compile(r"\bthe\s+$", _I)
_EVENT_NOUNS = re.compile(
    r"\s+(?P<words>(?:[A-Za-z][\w'’-]*\s+){0,5}?[A-Za-z][\w'’-]*)(?=\s*(?:[?.,;:!)]|$)|\s+(?:and|or|"
    r"but|what|how|who|which|when|did|does|do|was|were|is|are|has|have|had|in|on|at|for|to|"
    r"with|by|from|of)\b)",
    _I,
)


@dataclass(frozen=True)
class IntentConfig:
    """Configuration of :func:`parse_intent`.

    Attributes:
        timezone: the one declared IANA zone in which relative expressions ("last quarter") resolve; a
            client's own zone must not shift them.
        fiscal: the fiscal calendar for "FY23 Q4" and "this fiscal year".
    """

    timezone: str = "UTC"
    fiscal: FiscalCalendar = field(default_factory=FiscalCalendar)


@dataclass
class _Reading:
    intervals: list[Interval] = field(default_factory=list)
    relations: list[Relation] = field(default_factory=list)
    removals: list[tuple[int, int]] = field(default_factory=list)
    assumptions: list[str] = field(default_factory=list)


#: longest question read (characters); parsing is linear in the length, the cap keeps the filter small
MAX_QUESTION_CHARS = 4000


class QuestionTooLongError(RetrievalError, ValueError):
    """The question is longer than :data:`MAX_QUESTION_CHARS` characters: shorten it."""


def parse_intent(question: str, *, now: datetime, config: IntentConfig | None = None) -> TemporalIntent:
    """Split a question into a core query and its reference interval(s).

    Year-less dates and bare weekdays follow the question's tense: a question about records ("what
    happened on 3 March?", "who won in November?") takes the latest occurrence on or before ``now``;
    "next …", a future tense or no tense at all take the next one (Duckling's reading). Relation words
    make open intervals (:func:`diachron.temporal.resolve.apply_relation`).

    Args:
        question: the user's question, at most :data:`MAX_QUESTION_CHARS` characters.
        now: the reference clock (aware; naive means UTC) against which relative expressions resolve.
        config: time zone and fiscal calendar; defaults to UTC and the calendar year.

    Returns:
        The intent: intervals half-open UTC; relation ``unknown`` with no intervals when the question
        has no time.

    Raises:
        QuestionTooLongError: (a ``ValueError``) the question is longer than :data:`MAX_QUESTION_CHARS`.
    """
    if len(question) > MAX_QUESTION_CHARS:
        raise QuestionTooLongError(
            f"the question has {len(question):,} characters: at most {MAX_QUESTION_CHARS:,} "
            "are read; shorten it"
        )
    config = config or IntentConfig()
    now = to_utc(now)
    tagger = TaggerConfig(timezone=config.timezone, fiscal=config.fiscal)
    mentions = [
        m
        for m in extract_mentions(question, reference=now, config=tagger)
        if not _is_todays(m, question) and not _NOW_WORD.fullmatch(m.text)
    ]
    reading = _read_mentions(question, mentions, now, config) if mentions else _read_clock(question, now)
    relation = _combine(reading)
    granularity = max((i.granularity for i in reading.intervals), key=lambda g: g.rank, default=None)
    confidence = 0.5 if relation is Relation.UNKNOWN else 0.8 if reading.assumptions else 1.0
    return TemporalIntent(
        core_query=_core_query(question, reading.removals),
        intervals=tuple(reading.intervals),
        relation=relation,
        reference_time=now,
        granularity=granularity,
        confidence=confidence,
        assumptions=tuple(reading.assumptions),
    )


def _is_todays(mention: TimeMention, question: str) -> bool:
    """ "today's price" asks about the present state, not about the whole day."""
    return mention.text.lower() == "today" and question[mention.span[1] : mention.span[1] + 2] in ("'s", "’s")


# a time inside a phrase that describes the question's subject, not the time asked: a relative clause ("the
# politician who served … between 2004 and 2005, … received which award in 2008?", "the submarine that was
# sunk on May 6, 1944 … was commanded by whom in Sep 1942?") or a participle after a noun ("the chemist born
# February 13, 1859", "the school, chartered in 1894")
_DESCRIBING = re.compile(
    r"\b[a-z]+\s+(?:who|that)\s+[a-z]+|\b(?!(?:was|were|is|are|be|been|being|has|have|had)\b)"
    r"[a-z]+,?\s+(?:born|chartered|founded|established|built|flown|formed|launched|"
    r"commissioned|known)\b",
    _I,
)


def descriptors(question: str, mentions: list[TimeMention]) -> list[bool]:
    """Per mention: it dates a phrase describing the question's subject, not the time the question asks.

    A mention is *describing* when the words since the previous mention (or the question's start) open a
    relative clause or a participle after a noun (:data:`_DESCRIBING`), or when it names an event of the
    subject ("the 2002 to 2008 head coach": :func:`event_named_by`). When every mention would be describing,
    none is: the question has one time, read as usual.
    """
    flags, since = [], 0
    for mention in mentions:
        flags.append(
            bool(_DESCRIBING.search(question, since, mention.span[0]))
            or event_named_by(question, mention) is not None
        )
        since = mention.span[1]
    return [False] * len(flags) if all(flags) else flags


def _read_mentions(
    question: str, mentions: list[TimeMention], now: datetime, config: IntentConfig
) -> _Reading:
    reading = _Reading()
    refined = _refined(question, mentions)
    describing = descriptors(question, [m for m, _ in refined])
    for (mention, lead), describes in zip(refined, describing, strict=True):
        start, end = mention.span
        start = min(start, lead)
        if describes:  # it stays in the core query: it names whom or what the question is about
            reading.assumptions.append(
                f"'{mention.text}' describes the subject, not the time asked: not a filter"
            )
            continue
        before_text = question[max(0, start - 60) : start]
        interval, relation = _relate(mention, before_text)
        if interval in reading.intervals:
            continue
        reading.intervals.append(interval)
        reading.relations.append(relation)
        event = event_named_by(question, mention)
        if event is not None:  # "since the 1929 crash": the date is the event's, it stays in the core query
            reading.assumptions.append(
                f"'{event}' dated by the time written in it ({mention.text}): "
                f"{interval} ({relation.value}); a search of an index dates the event itself"
            )
            continue
        cue = _CONNECTORS.search(before_text)
        cue_start = start - len(before_text) + cue.start() if cue else start
        reading.removals.append((cue_start, end))
        if _RELATIVE.search(mention.text) or mention.source == "duckling":
            reading.assumptions.append(
                f"'{mention.text}' resolved against {format_instant(now)} in {config.timezone}"
            )
        if interval.is_open:
            reading.assumptions.append(f"'{question[cue_start:end].strip()}' read as {interval}")
    return reading


def event_named_by(question: str, mention: TimeMention) -> str | None:
    """The event a date modifies ("the 1929 crash", "the 2008 financial crisis", "the 2016 election"), or
    None.

    A date written between "the" and a noun that is no time word names an event; the phrase is returned
    from "the" to its last word (at most six words after the date, up to punctuation, a conjunction or a
    preposition). Relative dates ("the next day") and periods ("the 2008 season", "after the 1920s?") name
    none; "the 1990s boom" does.
    """
    start, end = mention.span
    the = None if mention.text.lower().startswith("the ") else _THE.search(question, max(0, start - 8), start)
    if (the is None and not mention.text.lower().startswith("the ")) or _RELATIVE.search(mention.text):
        return None
    nouns = _EVENT_NOUNS.match(question, end)
    if nouns is None or nouns["words"].split()[0].lower() in NON_EVENT_WORDS:
        return None
    return question[the.start() if the else start : nouns.end()]


_GLOSS = re.compile(r"\s*(?:,|\(|—|–|-|:)\s*(?:from\s+|between\s+|i\.e\.\s*)?$", _I)


def _refined(question: str, mentions: list[TimeMention]) -> list[tuple[TimeMention, int]]:
    """A mention glossed right after by an overlapping, more explicit one ("late 2008, from September to
    December", "spring of 2012 (March through May)") gives way to the gloss; each kept mention comes with
    the offset where its words begin (the glossed mention's start)."""
    kept: list[tuple[TimeMention, int]] = []
    for mention in mentions:
        if kept:
            last, lead = kept[-1]
            gap = question[last.span[1] : mention.span[0]]
            if (
                len(gap) <= 12
                and _GLOSS.fullmatch(gap)
                and last.relation is None
                and mention.reading is not None
                and last.interval.overlaps(mention.reading)
            ):
                kept[-1] = (mention, lead)
                continue
        kept.append((mention, mention.span[0]))
    return kept


def _relate(mention: TimeMention, before_text: str) -> tuple[Interval, Relation]:
    """The interval and relation of one mention: its relation word's reading, or the period itself."""
    iv = mention.interval
    if mention.is_range:
        return iv, Relation.BETWEEN
    if _VALID_AT.search(before_text):  # "which rule applied on 20 April": valid time, not event time
        return iv, Relation.CURRENT
    reading = mention.reading or iv
    if mention.relation is None or reading == iv:
        return iv, Relation.AT
    if reading.start is None:
        return reading, Relation.BEFORE
    if reading.end is None:
        return reading, Relation.AFTER
    return reading, Relation.BETWEEN  # "by Friday" read as a deadline: [now, Friday)


def _read_clock(question: str, now: datetime) -> _Reading:
    """No explicit time: "so far" / "up to now" (before now), "currently" (at now), or nothing."""
    reading = _Reading()
    up_to_now = _UP_TO_NOW.search(question)
    if up_to_now:
        reading.intervals.append(Interval(None, now, Granularity.INSTANT))
        reading.relations.append(Relation.BEFORE)
        reading.removals.append(up_to_now.span())
        reading.assumptions.append(f"'{up_to_now[0]}' read as before {format_instant(now)}")
    elif _CURRENT.search(question):
        reading.intervals.append(Interval.at(now))
        reading.relations.append(Relation.CURRENT)
        reading.removals.extend(m.span() for m in _CURRENT_REMOVABLE.finditer(question))
        reading.assumptions.append(f"current state read at {format_instant(now)}")
    return reading


def _combine(reading: _Reading) -> Relation:
    """One relation for the question; "after A … before B" becomes the range between them."""
    kinds = set(reading.relations)
    if not kinds:
        return Relation.UNKNOWN
    if len(kinds) == 1:
        return reading.relations[0]
    if kinds == {Relation.BEFORE, Relation.AFTER}:
        hull = reading.intervals[0]
        for other in reading.intervals[1:]:
            hull = hull.intersection(other) or hull
        reading.intervals[:] = [hull]
        return Relation.BETWEEN
    logger.debug("mixed relations %s; keeping the first", kinds)
    return reading.relations[0]


def core_query(question: str, removals: list[tuple[int, int]]) -> str:
    """``question`` without the character spans ``removals`` (time expressions and their connecting
    words), whitespace and punctuation tidied."""
    return _core_query(question, removals)


def _core_query(question: str, removals: list[tuple[int, int]]) -> str:
    """The question without its time expressions and their connecting words, punctuation tidied."""
    text = question
    for start, end in sorted(removals, reverse=True):
        text = text[:start] + " " + text[end:]
    text = re.sub(r"\(\s*\)", " ", text)
    if text.count(")") > text.count("("):  # a removed gloss "(March through May)" leaves its ")"
        text = re.sub(r"\s\)", " ", text, count=text.count(")") - text.count("("))
    text = re.sub(r"\s+", " ", text)
    text = re.sub(r"(?:\s+\b(?:and|or)\b)+\s*(?=[?.!,;:]|$)", "", text)
    text = re.sub(r"\s+([?.!,;:])", r"\1", text)
    text = re.sub(r"([,;:])(?=[,;:?.!])", "", text)
    return re.sub(r"^[\s,;:.\-–]+", "", text).strip()


def parse_question(
    question: str,
    *,
    now: datetime,
    timezone: str = "UTC",
    fiscal_calendar: FiscalCalendar | str | None = None,
) -> TemporalIntent:
    """The public question parser: ``question`` -> its core query, time interval(s) and relation.

    Example::

        >>> from datetime import datetime, UTC
        >>> from diachron import parse_question
        >>> now = datetime(2026, 4, 17, tzinfo=UTC)
        >>> intent = parse_question("What changed between mid-2007 and mid-2008?", now=now)
        >>> intent.relation.value, [str(i) for i in intent.intervals], intent.core_query
        ('between', ['[2007-05-01T00:00:00Z, 2008-09-01T00:00:00Z)'], 'What changed?')

    Args:
        question: at most :data:`MAX_QUESTION_CHARS` characters.
        now: the clock the question is read against (aware; naive means UTC).
        timezone: IANA zone of the asker's calendar: "yesterday", "3pm", "March" are local days and
            hours there (results are UTC); a zone written in the question ("4pm CET") wins.
        fiscal_calendar: a :class:`~diachron.temporal.tagger.FiscalCalendar`, or its words / short
            form (``"2:end"``: FY2023 = February 2022 to January 2023); ``None`` = the calendar year.

    Returns:
        A :class:`~diachron.schemas.intent.TemporalIntent`: intervals half-open UTC ``[start, end)``
        (``None`` = open side), relation ``at``/``between``/``before``/``after``/``current``/``unknown``,
        the assumptions made (clock, zone, tense policy).

    Raises:
        ValueError: an unknown time zone or an unreadable fiscal calendar (one line);
            :class:`QuestionTooLongError` (a ``ValueError``) beyond :data:`MAX_QUESTION_CHARS`.
    """
    config = TaggerConfig.from_options(timezone, fiscal_calendar)
    return parse_intent(
        question, now=now, config=IntentConfig(timezone=config.timezone, fiscal=config.fiscal)
    )
