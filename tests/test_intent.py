"""Tests of the rule-based question parser; expected intervals worked out by hand."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from conftest import shared_path

from diachron.temporal.tagger import FiscalCalendar
from diachron.retrieval.intent import IntentConfig, parse_intent
from diachron.schemas.intent import Relation
from diachron.schemas.time import Granularity, parse_instant

NOW = datetime(2026, 4, 17, 10, 0, tzinfo=UTC)
QUESTIONS = shared_path() / "data" / "stocks_quandl_wiki" / "questions.jsonl"


def _t(value: str | None) -> datetime | None:
    return None if value is None else parse_instant(value)


@pytest.mark.parametrize(("question", "relation", "intervals", "core"), [
    ("Between September 2010 and August 2012, how did Microsoft Corp. (MSFT) stock perform?", "between",
     [("2010-09-01", "2012-09-01")], "how did Microsoft Corp. (MSFT) stock perform?"),
    ("How did presidents talk about tariffs between 1920 and 1940?", "between",
     [("1920-01-01", "1941-01-01")], "How did presidents talk about tariffs?"),
    ("What did the company build from 2012 to 2014?", "between", [("2012-01-01", "2015-01-01")],
     "What did the company build?"),
    ("What happened in 2015?", "at", [("2015-01-01", "2016-01-01")], "What happened?"),
    ("What happened on 20 April 2025?", "at", [("2025-04-20", "2025-04-21")], "What happened?"),
    ("How did sales do in March 2016?", "at", [("2016-03-01", "2016-04-01")], "How did sales do?"),
    ("What happened in 2008 and 2012?", "at", [("2008-01-01", "2009-01-01"), ("2012-01-01", "2013-01-01")],
     "What happened?"),
    ("Which laws were passed before 1920?", "before", [(None, "1920-01-01")], "Which laws were passed?"),
    ("What changed after 2015?", "after", [("2016-01-01", None)], "What changed?"),
    ("What changed since March 2016?", "after", [("2016-03-01", None)], "What changed?"),
    ("What happened after 2010 and before 2015?", "between", [("2011-01-01", "2015-01-01")], "What happened?"),
    ("What has happened up to now?", "before", [(None, "2026-04-17T10:00:00Z")], "What has happened?"),
    ("Which projects shipped so far?", "before", [(None, "2026-04-17T10:00:00Z")], "Which projects shipped?"),
    ("Who is currently the CEO?", "current", [("2026-04-17T10:00:00Z", "2026-04-17T10:00:00.000001Z")],
     "Who is the CEO?"),
    ("What is today's price?", "current", [("2026-04-17T10:00:00Z", "2026-04-17T10:00:00.000001Z")],
     "What is today's price?"),
    ("How did revenue compare last quarter?", "at", [("2026-01-01", "2026-04-01")], "How did revenue compare?"),
    # Duckling's reading of "N years ago": the month N years back (one grain finer than the unit)
    ("What did the company do two years ago?", "at", [("2024-04-01", "2024-05-01")], "What did the company do?"),
    ("What did we ship last year?", "at", [("2025-01-01", "2026-01-01")], "What did we ship?"),
    ("What did we ship last month?", "at", [("2026-03-01", "2026-04-01")], "What did we ship?"),
    ("What did we ship this year?", "at", [("2026-01-01", "2027-01-01")], "What did we ship?"),
    ("What music was popular in the 1920s?", "at", [("1920-01-01", "1930-01-01")], "What music was popular?"),
    ("What were revenues in Q3 2015?", "at", [("2015-07-01", "2015-10-01")], "What were revenues?"),
    ("What is the capital of France?", "unknown", [], "What is the capital of France?"),
])
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
    local = parse_intent("How did revenue compare last quarter?", now=now,
                         config=IntentConfig(timezone="America/Los_Angeles"))
    assert (utc.intervals[0].start, utc.intervals[0].end) == (_t("2026-01-01"), _t("2026-04-01"))
    assert (local.intervals[0].start, local.intervals[0].end) == (_t("2025-10-01T07:00:00Z"),
                                                                  _t("2026-01-01T08:00:00Z"))
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
