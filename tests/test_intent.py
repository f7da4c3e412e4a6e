"""Tests of the rule-based question parser; expected intervals worked out by hand."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest
from conftest import shared_path
from diachron.retrieval.intent import IntentConfig, parse_intent
from diachron.schemas.intent import Relation
from diachron.schemas.time import Granularity, parse_instant
from diachron.temporal.tagger import FiscalCalendar

NOW = datetime(2026, 4, 17, 10, 0, tzinfo=UTC)
QUESTIONS = shared_path() / "data" / "stocks_quandl_wiki" / "questions.jsonl"


def _t(value: str | None) -> datetime | None:
    return None if value is None else parse_instant(value)


@pytest.mark.parametrize(
    ("question", "relation", "intervals", "core"),
    [
        (
            "Between September 2010 and August 2012, how did Microsoft Corp. (MSFT) stock perform?",
            "between",
            [("2010-09-01", "2012-09-01")],
            "how did Microsoft Corp. (MSFT) stock perform?",
        ),
        (
            "How did presidents talk about tariffs between 1920 and 1940?",
            "between",
            [("1920-01-01", "1941-01-01")],
            "How did presidents talk about tariffs?",
        ),
        (
            "What did the company build from 2012 to 2014?",
            "between",
            [("2012-01-01", "2015-01-01")],
            "What did the company build?",
        ),
        ("What happened in 2015?", "at", [("2015-01-01", "2016-01-01")], "What happened?"),
        ("What happened on 20 April 2025?", "at", [("2025-04-20", "2025-04-21")], "What happened?"),
        ("How did sales do in March 2016?", "at", [("2016-03-01", "2016-04-01")], "How did sales do?"),
        (
            "What happened in 2008 and 2012?",
            "at",
            [("2008-01-01", "2009-01-01"), ("2012-01-01", "2013-01-01")],
            "What happened?",
        ),
        ("Which laws were passed before 1920?", "before", [(None, "1920-01-01")], "Which laws were passed?"),
        ("What changed after 2015?", "after", [("2016-01-01", None)], "What changed?"),
        ("What changed since March 2016?", "after", [("2016-03-01", None)], "What changed?"),
        (
            "What happened after 2010 and before 2015?",
            "between",
            [("2011-01-01", "2015-01-01")],
            "What happened?",
        ),
        ("What has happened up to now?", "before", [(None, "2026-04-17T10:00:00Z")], "What has happened?"),
        (
            "Which projects shipped so far?",
            "before",
            [(None, "2026-04-17T10:00:00Z")],
            "Which projects shipped?",
        ),
        (
            "Who is currently the CEO?",
            "current",
            [("2026-04-17T10:00:00Z", "2026-04-17T10:00:00.000001Z")],
            "Who is the CEO?",
        ),
        (
            "What is today's price?",
            "current",
            [("2026-04-17T10:00:00Z", "2026-04-17T10:00:00.000001Z")],
            "What is today's price?",
        ),
        (
            "How did revenue compare last quarter?",
            "at",
            [("2026-01-01", "2026-04-01")],
            "How did revenue compare?",
        ),
        # "N years ago" names the calendar year N back, the written unit (issue 28: a month is invented
        # precision)
        (
            "What did the company do two years ago?",
            "at",
            [("2024-01-01", "2025-01-01")],
            "What did the company do?",
        ),
        ("What did we ship last year?", "at", [("2025-01-01", "2026-01-01")], "What did we ship?"),
        ("What did we ship last month?", "at", [("2026-03-01", "2026-04-01")], "What did we ship?"),
        ("What did we ship this year?", "at", [("2026-01-01", "2027-01-01")], "What did we ship?"),
        (
            "What music was popular in the 1920s?",
            "at",
            [("1920-01-01", "1930-01-01")],
            "What music was popular?",
        ),
        ("What were revenues in Q3 2015?", "at", [("2015-07-01", "2015-10-01")], "What were revenues?"),
        ("What is the capital of France?", "unknown", [], "What is the capital of France?"),
    ],
)
def test_parse_intent(question: str, relation: str, intervals: list[tuple[Any, Any]], core: str) -> None:
    intent = parse_intent(question, now=NOW)
    assert intent.relation is Relation(relation)
    assert [(i.start, i.end) for i in intent.intervals] == [(_t(s), _t(e)) for s, e in intervals]
    assert intent.core_query == core
    assert intent.reference_time == NOW


def test_unknown_has_lower_confidence_and_no_granularity() -> None:
    intent = parse_intent("What is the capital of France?", now=NOW)
    assert intent.confidence < 1.0 and intent.granularity is None and intent.intervals == ()


def test_granularity_is_the_coarsest() -> None:
    intent = parse_intent("Compare March 2016 with the 1920s.", now=NOW)
    assert intent.granularity is Granularity.DECADE


def test_relative_resolution_notes_zone_and_uses_declared_zone() -> None:
    now = datetime(2026, 4, 1, 0, 30, tzinfo=UTC)  # still 31 March in Los Angeles
    utc = parse_intent("How did revenue compare last quarter?", now=now)
    local = parse_intent(
        "How did revenue compare last quarter?", now=now, config=IntentConfig(timezone="America/Los_Angeles")
    )
    assert (utc.intervals[0].start, utc.intervals[0].end) == (_t("2026-01-01"), _t("2026-04-01"))
    assert (local.intervals[0].start, local.intervals[0].end) == (
        _t("2025-10-01T07:00:00Z"),
        _t("2026-01-01T08:00:00Z"),
    )
    assert any("UTC" in note for note in utc.assumptions)


def test_fiscal_quarter_question() -> None:
    config = IntentConfig(fiscal=FiscalCalendar(2, "end"))
    intent = parse_intent("How did the pipeline close in FY23 Q4?", now=NOW, config=config)
    assert [(i.start, i.end) for i in intent.intervals] == [(_t("2022-11-01"), _t("2023-02-01"))]
    assert intent.core_query == "How did the pipeline close?"


def _stock_questions(kind: str) -> list[Any]:
    rows = [json.loads(line) for line in QUESTIONS.read_text().splitlines() if line.strip()]
    return [pytest.param(r, id=r["qid"]) for r in rows if r["type"] in kind.split("|")]


@pytest.mark.parametrize("row", _stock_questions("window_change_mc"))
def test_window_change_questions(row: dict[str, Any]) -> None:
    intent = parse_intent(row["question"], now=NOW)
    assert intent.relation is Relation.BETWEEN
    assert [(i.start, i.end) for i in intent.intervals] == [(_t(row["window_start"]), _t(row["window_end"]))]
    assert intent.granularity is Granularity.MONTH
    assert intent.core_query.startswith("how did ") and row["ticker"] in intent.core_query


@pytest.mark.parametrize("row", _stock_questions("best_month_of_year|worst_month_of_year"))
def test_best_worst_month_questions(row: dict[str, Any]) -> None:
    intent = parse_intent(row["question"], now=NOW)
    assert intent.relation is Relation.AT
    assert [(i.start, i.end) for i in intent.intervals] == [(_t(row["window_start"]), _t(row["window_end"]))]
    assert intent.core_query.startswith("in which month did ")


# --- issue 12: windows written the way people write them (expected windows worked out by hand) --------------
@pytest.mark.parametrize(
    ("question", "relation", "window", "core"),
    [
        (
            "How did AAPL stock trend in late 2008, from September to December?",
            "between",
            ("2008-09-01", "2009-01-01"),
            "How did AAPL stock trend?",
        ),
        (
            "How did MSFT stock do between mid-2007 and mid-2008?",
            "between",
            ("2007-05-01", "2008-09-01"),
            "How did MSFT stock do?",
        ),
        (
            "How did IBM stock perform from January 2004 until the end of 2005?",
            "between",
            ("2004-01-01", "2006-01-01"),
            "How did IBM stock perform?",
        ),
        (
            "How did GE stock trade in the spring of 2012 (March through May)?",
            "between",
            ("2012-03-01", "2012-06-01"),
            "How did GE stock trade?",
        ),
        (
            "What did presidents say in the early 1980s?",
            "at",
            ("1980-01-01", "1984-01-01"),
            "What did presidents say?",
        ),
        ("Which wars shaped the 20th century?", "at", ("1900-01-01", "2000-01-01"), "Which wars shaped?"),
        (
            "In the time period 1550 to 1560, who ruled England?",
            "between",
            ("1550-01-01", "1561-01-01"),
            "who ruled England?",
        ),
        ("What changed this decade?", "at", ("2020-01-01", "2030-01-01"), "What changed?"),
    ],
)
def test_window_phrasings(question: str, relation: str, window: tuple[str, str], core: str) -> None:
    intent = parse_intent(question, now=NOW)
    assert intent.relation is Relation(relation)
    assert [(i.start, i.end) for i in intent.intervals] == [(_t(window[0]), _t(window[1]))]
    assert intent.core_query == core


def test_hours_up_to_a_local_instant_in_a_named_zone_across_dst() -> None:
    # 2 a.m. EST on 10 March 2024 is the instant New York's clocks jump to 3 a.m. (07:00Z); 24 hours before it
    intent = parse_intent(
        "What happened in the 24 hours up to 2 a.m. New York time on 10 March 2024?", now=NOW
    )
    assert [(i.start, i.end) for i in intent.intervals] == [
        (_t("2024-03-09T07:00:00Z"), _t("2024-03-10T07:00:00Z"))
    ]


@pytest.mark.parametrize(
    ("question", "window"),
    [
        # a question about records looks back: the latest 3 March on or before the clock (17 April 2026)
        ("What happened on March 3?", ("2026-03-03", "2026-03-04")),
        ("What happened on 20 May?", ("2025-05-20", "2025-05-21")),
        ("Who won in November?", ("2025-11-01", "2025-12-01")),
        ("What was announced on Friday?", ("2026-04-17", "2026-04-18")),  # the clock's own Friday
        # future tense or no tense: the next one (Duckling's reading)
        ("What will happen on 20 May?", ("2026-05-20", "2026-05-21")),
        ("Meetings on 20 May?", ("2026-05-20", "2026-05-21")),
        ("What is planned for Friday?", ("2026-04-24", "2026-04-25")),
        ("What is expected on 20 May?", ("2026-05-20", "2026-05-21")),
        ("United Nations meeting on 20 May?", ("2026-05-20", "2026-05-21")),  # "United" is no past tense
    ],
)
def test_year_less_dates_follow_the_tense(question: str, window: tuple[str, str]) -> None:
    intent = parse_intent(question, now=NOW)
    assert [(i.start, i.end) for i in intent.intervals] == [(_t(window[0]), _t(window[1]))]


def test_next_february_28_from_a_leap_day() -> None:
    intent = parse_intent("What is due next February 28?", now=datetime(2024, 2, 29, 12, tzinfo=UTC))
    assert [(i.start, i.end) for i in intent.intervals] == [(_t("2025-02-28"), _t("2025-03-01"))]


@pytest.mark.parametrize(
    ("question", "relation", "window"),
    [
        ("What happened after 2 pm?", "after", ("2026-04-17T14:00:00Z", None)),  # a clock time: from it on
        ("What changed after March 3, 2015?", "after", ("2015-03-04", None)),  # a day: after it ends
        ("What happened before 11 am?", "before", (None, "2026-04-17T11:00:00Z")),
        ("What was built by 2015?", "before", (None, "2016-01-01")),  # past tense: by the end of 2015
        ("What is due by Monday?", "between", ("2026-04-17T10:00:00Z", "2026-04-20")),  # a deadline from now
    ],
)
def test_relation_words(question: str, relation: str, window: tuple[str | None, str | None]) -> None:
    intent = parse_intent(question, now=NOW)
    assert intent.relation is Relation(relation)
    assert [(i.start, i.end) for i in intent.intervals] == [(_t(window[0]), _t(window[1]))]


def test_long_question_is_refused_and_a_long_one_under_the_cap_parses() -> None:
    from diachron.retrieval.intent import MAX_QUESTION_CHARS, QuestionTooLongError

    with pytest.raises(QuestionTooLongError, match="at most 4,000"):
        parse_intent("what happened in 2001 " * 5000, now=NOW)
    question = " ".join(f"and on March {d % 28 + 1}, {1900 + d}" for d in range(200))[:MAX_QUESTION_CHARS]
    intent = parse_intent(question, now=NOW)
    n = question.count(", 19") - (
        0 if question.rstrip()[-4:].isdigit() else 1
    )  # a cut last date is not whole
    assert len(intent.intervals) >= n - 1 and intent.relation is Relation.AT


def test_parse_question_public_entry_point() -> None:
    import diachron

    intent = diachron.parse_question(
        "How did revenue compare last quarter?",
        now=datetime(2026, 4, 1, 0, 30, tzinfo=UTC),
        timezone="America/Los_Angeles",
    )
    assert [(i.start, i.end) for i in intent.intervals] == [
        (_t("2025-10-01T07:00:00Z"), _t("2026-01-01T08:00:00Z"))
    ]
    fiscal = diachron.parse_question(
        "How did the pipeline close in FY23 Q4?", now=NOW, fiscal_calendar="2:end"
    )
    assert [(i.start, i.end) for i in fiscal.intervals] == [(_t("2022-11-01"), _t("2023-02-01"))]
    with pytest.raises(ValueError, match="unknown time zone"):
        diachron.parse_question("What happened in 2015?", now=NOW, timezone="Mars/Base")


def test_cli_intent_json() -> None:
    from typer.testing import CliRunner

    from diachron.cli import app

    result = CliRunner().invoke(
        app,
        ["intent", "What changed between mid-2007 and mid-2008?", "--now", "2026-04-17T10:00:00Z", "--json"],
    )
    assert result.exit_code == 0, result.output
    body = json.loads(result.stdout)
    assert body["intent"]["relation"] == "between" and body["intent"]["core_query"] == "What changed?"
    assert body["intent"]["intervals"][0]["start"] == "2007-05-01T00:00:00Z"
    bad = CliRunner().invoke(app, ["intent", "x", "--timezone", "Mars/Base"])
    assert bad.exit_code == 1 and "Traceback" not in bad.output


@pytest.mark.parametrize("now", [datetime(9999, 12, 31, 23, tzinfo=UTC), datetime(1, 1, 1, 1, tzinfo=UTC)])
@pytest.mark.parametrize(
    "question",
    [
        "What happens tomorrow?",
        "What happened yesterday?",
        "What happened in 2015?",
        "What happened on Friday?",
        "in 2 hours",
        "What happens next year?",
    ],
)
def test_clock_at_the_edge_of_the_calendar_never_raises(now: datetime, question: str) -> None:
    intent = parse_intent(question, now=now)  # a reading past the years 1-9999 is dropped, the rest kept
    assert all(i.start is None or 1 <= i.start.year <= 9999 for i in intent.intervals)


@pytest.mark.parametrize(
    ("question", "window"),
    [
        # TimeQA questions (shared/data/timeqa_dev), windows from the dataset's own question grammar
        (
            "What stadium was Athletic Club Omonoia Nicosia's home field in late 1950s?",
            ("1956-01-01", "1960-01-01"),
        ),
        ("Who was prime minister of New Zealand after May 2002, Helen Clark?", ("2002-06-01", None)),
        ("Who held the Regius Professorship between May 1546 and Oct 1551?", ("1546-05-01", "1551-11-01")),
    ],
)
def test_timeqa_windows(question: str, window: tuple[str, str | None]) -> None:
    intent = parse_intent(question, now=datetime(2021, 9, 1, tzinfo=UTC))
    assert [(i.start, i.end) for i in intent.intervals] == [(_t(window[0]), _t(window[1]))]


@pytest.mark.parametrize(
    ("question", "relation", "window", "event"),
    [
        # a date between "the" and a noun names an event: it stays in the core query; its time is the date as
        # written with the relation word applied (after a year = from the next year on, since = from its
        # start)
        ("What changed since the 1929 crash?", "after", ("1929-01-01", None), "the 1929 crash"),
        (
            "What happened after the 2008 financial crisis?",
            "after",
            ("2009-01-01", None),
            "the 2008 financial crisis",
        ),
        (
            "How did markets move before the 2016 election?",
            "before",
            (None, "2016-01-01"),
            "the 2016 election",
        ),
        (
            "How did sales do during the March 2020 lockdown?",
            "at",
            ("2020-03-01", "2020-04-01"),
            "the March 2020 lockdown",
        ),
    ],
)
def test_a_date_inside_an_event_name_stays_in_the_core_query(
    question: str, relation: str, window: tuple[str | None, str | None], event: str
) -> None:
    intent = parse_intent(question, now=NOW)
    assert intent.core_query == question
    assert intent.relation.value == relation
    assert [(i.start, i.end) for i in intent.intervals] == [(_t(window[0]), _t(window[1]))]
    assert [a for a in intent.assumptions if f"'{event}' dated by the time written in it" in a] != []


@pytest.mark.parametrize(
    ("question", "core"),
    [
        (
            "Who played in the 2008 season?",
            "Who played season?",
        ),  # a time word after the date: a period, no event
        ("What happened after the 1920s?", "What happened?"),
        ("What happened in the 2008 and 2009 seasons?", "What happened and seasons?"),
        ("What happened the next day?", "What happened?"),  # relative: no event
    ],
)
def test_periods_are_no_event_names(question: str, core: str) -> None:
    intent = parse_intent(question, now=NOW)
    assert intent.core_query == core
    assert not any("dated by the time written in it" in a for a in intent.assumptions)


@pytest.mark.parametrize(
    ("question", "window", "describing"),
    [
        # TimeQA questions with two times: one dates a phrase describing the subject (a relative clause, a
        # participle after a noun, an event of the subject), the other is the time asked; windows by hand
        (
            "New Zealand politician who served as the 37th prime minister of New Zealand between Jun 2004 "
            "and Nov 2005, Helen Elizabeth Clark received which award in 2008?",
            ("2008-01-01", "2009-01-01"),
            "between Jun 2004 and Nov 2005",
        ),
        (
            "The submarine that was sunk on May 6, 1944 during her ninth patrol was "
            "commanded by what man in Sep 1942?",
            ("1942-09-01", "1942-10-01"),
            "May 6, 1944",
        ),
        (
            "between Jun 1939 and May 1949, what was the moniker of the Lowell, Massachusetts school, "
            "chartered in 1894 as a teacher training institution?",
            ("1939-06-01", "1949-06-01"),
            "1894",
        ),
        (
            "Which two schools did the 2002 to 2008 head coach of the Tampa Bay "
            "Buccaneers attend after Aug 1984?",
            ("1984-09-01", None),
            "2002 to 2008",
        ),
    ],
)
def test_a_time_describing_the_subject_is_no_filter(
    question: str, window: tuple[str, str | None], describing: str
) -> None:
    intent = parse_intent(question, now=datetime(2021, 9, 1, tzinfo=UTC))
    assert [(i.start, i.end) for i in intent.intervals] == [(_t(window[0]), _t(window[1]))]
    assert describing in intent.core_query  # it names whom the question is about: kept for the similarity
    assert any(a.startswith(f"'{describing}' describes the subject") for a in intent.assumptions)


def test_two_times_of_the_main_clause_are_both_read() -> None:
    # no describing phrase: both times are the question's ("purchased in 1787 and owned it until 1796")
    intent = parse_intent(
        "Who purchased the Villa del Balbianello in 1787 and owned it until 1796?",
        now=datetime(2021, 9, 1, tzinfo=UTC),
    )
    assert [(i.start, i.end) for i in intent.intervals] == [
        (_t("1787-01-01"), _t("1788-01-01")),
        (None, _t("1797-01-01")),
    ]


@pytest.mark.parametrize(
    ("question", "window"),
    [
        # typed questions: a lower-case month before a year, "the years"/"the period" inside a range
        (
            "Who was the original host of the game show during the period 1975 to dec 1981?",
            ("1975-01-01", "1982-01-01"),
        ),
        (
            "What television shows did David Hasselhoff act in between the years 1975 and 1982?",
            ("1975-01-01", "1983-01-01"),
        ),
        (
            "Spanning the months in Oct 1982, the Milan subway line ended its run at which location?",
            ("1982-10-01", "1982-11-01"),
        ),
    ],
)
def test_typed_ranges_and_bare_units(question: str, window: tuple[str, str]) -> None:
    intent = parse_intent(question, now=datetime(2021, 9, 1, tzinfo=UTC))
    assert [(i.start, i.end) for i in intent.intervals] == [(_t(window[0]), _t(window[1]))]
