"""Anaphoric time in narrative text ("two years later", "the following season"): counted from the text's
previous mention, across chunks, on short real passages (TimeQA / Wikipedia) with intervals worked out by
hand; unresolved where nothing fine enough precedes (the reading HeidelTime gives narrative documents)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from diachron.ingest.annotation.base import DocumentAnnotation
from diachron.ingest.annotation.rules import RuleAnnotator
from diachron.schemas.time import Granularity, Interval
from diachron.temporal.anaphora import NarrativeClock, find_anaphoric, resolve_anaphoric
from diachron.temporal.tagger import extract_mentions

G = Granularity
UNDATED = DocumentAnnotation(None, "unknown", "", "rules")


def t(year: int, month: int = 1, day: int = 1) -> datetime:
    return datetime(year, month, day, tzinfo=UTC)


def _read(text: str, reference: datetime | None = None) -> list[tuple[str, Interval]]:
    clock = NarrativeClock(reference)
    return [(m.text, m.interval) for m in clock.read(text, extract_mentions(text, reference=reference))]


@pytest.mark.parametrize(
    "phrase, unit, shift",
    [
        ("Two years later", "year", 2),
        ("a month earlier", "month", -1),
        ("The following season", "season", 1),
        ("the next day", "day", 1),
        ("the previous year", "year", -1),
        ("later that year", "year", 0),
        ("that same year", "year", 0),
        ("three weeks afterwards", "week", 3),
        ("two years before.", "year", -2),
    ],
)
def test_found(phrase: str, unit: str, shift: int) -> None:
    [a] = find_anaphoric(phrase)
    assert (a.unit, a.shift) == (unit, shift)


@pytest.mark.parametrize(
    "text",
    [
        "Two years after his death , a statue was built .",  # anchored on an event, not a date
        "It came a year later than planned .",  # a comparison
        "He visits every year .",
    ],
)
def test_not_anaphoric(text: str) -> None:
    assert find_anaphoric(text) == []


def test_two_years_later_counts_from_the_last_year_named() -> None:
    # B.o.B (TimeQA): 2006 + 2 = 2008, a year
    text = (
        "In 2006 , B.o.B was discovered by Brian Richardson . Two years later , Jonsin and B.o.B signed a "
        "joint venture deal , with Atlantic Records ."
    )
    assert _read(text) == [
        ("2006", Interval(t(2006), t(2007), G.YEAR)),
        ("Two years later", Interval(t(2008), t(2009), G.YEAR)),
    ]


def test_chained_and_day_grain() -> None:
    # Dennis Quaid (TimeQA): married 4 July 2004; "the next day" is 5 July; "the following year" then 2005
    text = (
        "Quaid married Kimberly Buffington on July 4 , 2004 . The next day they left for Montana . "
        "The following year they moved to Austin ."
    )
    assert [i for _, i in _read(text)] == [
        Interval(t(2004, 7, 4), t(2004, 7, 5), G.DAY),
        Interval(t(2004, 7, 5), t(2004, 7, 6), G.DAY),
        Interval(t(2005), t(2006), G.YEAR),
    ]


def test_range_anchor_forward_from_its_end_backward_from_its_start() -> None:
    fwd = _read("He served as mayor from 1965 to 1975 . The following year he retired .")
    back = _read("He served as mayor from 1965 to 1975 . The previous year he had been a councillor .")
    assert fwd[-1][1] == Interval(t(1976), t(1977), G.YEAR)
    assert back[-1][1] == Interval(t(1964), t(1965), G.YEAR)


def test_anchor_coarser_than_the_unit_leaves_it_unresolved() -> None:
    # a year cannot say which day "the next day" is; with no date at all nothing is resolved either
    assert [x for x, _ in _read("In 1995 he joined the club . The next day he played .")] == ["1995"]
    assert _read("Two years later he left .") == []


def test_publication_time_is_the_anchor_before_any_mention() -> None:
    assert _read("The following year the plant will close .", reference=t(2019, 5, 2)) == [
        ("The following year", Interval(t(2020), t(2021), G.YEAR))
    ]


def test_rule_annotator_carries_the_anchor_across_chunks() -> None:
    # Alan Baró (TimeQA): the anchor of the second chunk's "the following season" is the first chunk's date
    notes = RuleAnnotator().annotate_chunks(
        [
            "On 8 July 2010 , Baró returned to Segunda División , signing a two-year deal at Albacete .",
            "The following season he joined CD Alcoyano .",
        ],
        doc=UNDATED,
    )
    assert notes[1].intervals == [Interval(t(2011), t(2012), G.YEAR)]
    assert notes[1].texts == ["The following season"]
    assert notes[1].kinds == ["state_start"]  # "joined": a state from then on


def test_resolve_keeps_the_time_zone_period() -> None:
    [a] = find_anaphoric("the next day")
    anchor = Interval(
        datetime(2004, 7, 4, 4, tzinfo=UTC), datetime(2004, 7, 5, 4, tzinfo=UTC), G.DAY
    )  # 4 July, New York
    assert resolve_anaphoric(a, anchor, timezone="America/New_York") == Interval(
        datetime(2004, 7, 5, 4, tzinfo=UTC), datetime(2004, 7, 6, 4, tzinfo=UTC), G.DAY
    )


def test_a_parenthesized_lifespan_is_no_anchor() -> None:
    # Heinrich Vogeler (TimeQA): "The couple had one daughter , Elsbeth ( 1898-1984 ) . The next year …"
    text = (
        "In 1901 he married Martha Schröder . The couple had one daughter , Elsbeth ( 1898-1984 ) . "
        "The next year , he built a house ."
    )
    assert _read(text)[-1] == ("The next year", Interval(t(1902), t(1903), G.YEAR))


def test_an_unresolved_phrase_leaves_the_taggers_reading() -> None:
    # no earlier date and no publication time: "the next day" stays unread, and nothing the tagger read is
    # lost
    text = "On 4 July 2004 they met . The next day they left ."
    assert [x for x, _ in _read(text)] == ["4 July 2004", "The next day"]
    assert [x for x, _ in _read("The next day they left .")] == []


def test_a_phrase_that_cannot_resolve_keeps_the_taggers_reading() -> None:
    # the anchor (1995, a year) cannot say which day "the next day" is: the tagger's deictic reading of
    # "next day" against the publication day (3 May 2019) is kept, as before anaphora was read
    got = _read("In 1995 he joined . The next day he played .", reference=t(2019, 5, 2))
    assert got == [
        ("1995", Interval(t(1995), t(1996), G.YEAR)),
        ("next day", Interval(t(2019, 5, 3), t(2019, 5, 4), G.DAY)),
    ]
