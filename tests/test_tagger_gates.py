"""The tagger's pattern gates (``_patterns.GATES``) are necessary conditions: gating changes no reading.

A gate lets a pattern run only on a text holding what every match of the pattern holds (a month name, a
four-digit year, "fiscal", ...). Checked two ways on real text (stock summaries, TimeQA passages, the
temporal cases, Duckling's dev corpus) and on one hand-written example per gated pattern: wherever a
pattern matches, all its gates match; and the tagger's output with the gates equals its output without.
"""

from __future__ import annotations

import itertools
import json
import re
from datetime import UTC, datetime

import pytest
from conftest import shared_path
from diachron.temporal import _patterns as P
from diachron.temporal import tagger as T
from diachron.temporal.tagger import TaggerConfig, extract_mentions

# one text per gated pattern that the pattern itself matches (so the soundness check is never vacuous)
EXAMPLES = {
    P.WORD_DATE_MDY: "It began on March 1, 2000.",
    P.WORD_DATE_DMY: "It began on 1 March 2000.",
    P.MONTH_YEAR: "in March 2000",
    P.DAY_RANGE: "March 3-5, 2020",
    P.DAY_RANGE_SHARED_YEAR: "from 3 June to 7 June 2024",
    P.MONTH_RANGE_YEAR: "March-May 2012",
    P.MONTH_RANGE_BARE: "spring of 2012 (March through May)",
    P.RELATIVE_MONTH_DAY: "next February 28",
    P.DURATION_ENDED: "nine months ended September 30, 2016 and 2015",
    P.DURATION_UP_TO: "the 24 hours up to 2 a.m. New York time on 10 March 2024",
    P.ISO_DATE: "Effective 2022-07-01.",
    P.NUMERIC_DATE: "Visit on 15/4/2019.",
    P.QUARTER: "FY2023 Q4 and Q4 2018",
    P.HALF: "the first half of 2009",
    P.FISCAL_YEAR: "the fiscal year 1931",
    P.FISCAL_RELATIVE: "the present fiscal year",
    P.DECADE: "in the 1930s",
    P.PART_OF_YEAR: "mid-2007",
    P.YEAR: "in 2008",
    P.YEAR_RANGE: "1546–1553 : Robert Weston",
    P.YEAR_PRESENT: "- 2019–present : Bernt Eirik Isaksen Lyngstad",
    P.YEAR_EARLY: "born in about 1541",
    P.CENTURY: "the 20th century",
    P.RELATIVE_ORDINAL_DAY: "the 1st of last month",
    P.RELATIVE_AGO: "three years ago",
    P.RELATIVE_PERIOD: "last quarter",
    P.RELATIVE_DAY: "yesterday",
    P.WEEKDAY: "put off until Monday",
    P.PRESENT_REF: "currently",
    P.CLOCK_RANGE: "today from 2PM to 3PM",
    P.RANGE: "from January 2004 until the end of 2005",
}


def _corpus() -> list[str]:
    shared = shared_path()
    texts = list(EXAMPLES.values())
    for line in (shared / "cases" / "temporal_cases.jsonl").read_text(encoding="utf-8").splitlines():
        case = json.loads(line)["input"]
        texts += [case["text"]] if "text" in case else [q["text"] for q in case.get("queries", [])]
    for line in (shared / "cases" / "duckling_en_time_dev.jsonl").read_text(encoding="utf-8").splitlines():
        texts.extend(json.loads(line)["texts"][:2])
    stocks = (shared / "data" / "stocks_quandl_wiki" / "monthly_summaries.jsonl").read_text(encoding="utf-8")
    texts += [json.loads(line)["text"] for line in itertools.islice(stocks.splitlines(), 0, None, 50)]
    timeqa = (shared / "data" / "timeqa_dev" / "corpus.jsonl").read_text(encoding="utf-8")
    texts += [json.loads(line)["text"] for line in itertools.islice(timeqa.splitlines(), 0, None, 100)]
    return texts


@pytest.fixture(scope="module")
def corpus() -> list[str]:
    return _corpus()


def test_every_gated_pattern_has_an_example_it_matches() -> None:
    assert set(EXAMPLES) == set(P.GATES)
    assert [text for pattern, text in EXAMPLES.items() if not pattern.search(text)] == []


def _holds(gate: P.Gate, text: str) -> bool:
    return gate.regex.search(text.translate(P.FOLD).lower() if gate.folded else text) is not None


def test_gates_hold_wherever_their_pattern_matches(corpus: list[str]) -> None:
    broken = [
        (pattern.pattern[:40], gate.regex.pattern, text[:80])
        for text in corpus
        for pattern, gates in P.GATES.items()
        if pattern.search(text)
        for gate in gates
        if not _holds(gate, text)
    ]
    assert broken == []


def test_the_fold_maps_every_letter_ignorecase_matches_to_its_ascii_letter() -> None:
    # every character of the Basic Multilingual Plane that IGNORECASE matches to an ASCII letter
    # ("K" Kelvin sign, long s, dotless i, dotted capital I) folds to that letter, one character for one
    letters = "abcdefghijklmnopqrstuvwxyz"
    candidates = [
        chr(c)
        for c in range(0x80, 0x10000)
        if any(x in letters for x in (chr(c).lower() + chr(c).upper()).lower())
    ]
    matched = [(x, ch) for ch in candidates for x in letters if re.fullmatch(x, ch, re.IGNORECASE)]
    assert {ch for _, ch in matched} == {"\u0130", "\u0131", "\u017f", "\u212a"}
    assert all(ch.translate(P.FOLD).lower() == x for x, ch in matched)
    assert all(len(chr(c).translate(P.FOLD).lower()) == 1 for c in range(0x10000))


def test_gating_changes_no_reading(corpus: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    ref = datetime(2013, 2, 12, 6, 30, tzinfo=UTC)  # Duckling's clock (04:30 at UTC-2)
    config = TaggerConfig(grammar=False)  # the gates are in front of our own patterns only
    gated = [extract_mentions(text, reference=ref, config=config) for text in corpus]
    monkeypatch.setattr(P, "GATES", {})
    assert T.P.GATES == {}
    assert [extract_mentions(text, reference=ref, config=config) for text in corpus] == gated


FILLER = (
    "The committee met in the capital and heard the reports of the several departments, which were read "
    "aloud and entered in the record without objection from any member present at the session. "
)


def test_a_count_of_days_is_no_cue_for_duckling_but_an_offset_is() -> None:
    from diachron.temporal.grammar import SHORT_TEXT, _pieces

    text = (
        FILLER
        + "The stock traded on 23 days in the month. "
        + FILLER
        + "Prices rose over the past eighteen months."
    )
    assert len(text) > SHORT_TEXT  # a long text is read sentence by sentence, only where a time cue is
    assert [piece.strip() for _, piece in _pieces(text, [])] == ["Prices rose over the past eighteen months."]


def test_an_offset_in_long_text_is_read() -> None:
    # by hand: the past eighteen months at 21 January 1946 are July 1944 to December 1945 (whole months)
    text = (
        FILLER
        + "The stock traded on 23 days in the month. "
        + FILLER
        + "Prices rose over the past eighteen months."
    )
    found = extract_mentions(text, reference=datetime(1946, 1, 21, tzinfo=UTC))
    assert [(m.text, m.interval.start, m.interval.end) for m in found] == [
        ("past eighteen months", datetime(1944, 7, 1, tzinfo=UTC), datetime(1946, 1, 1, tzinfo=UTC))
    ]


def test_leads_find_the_same_matches(corpus: list[str]) -> None:
    # a led pattern is its pattern behind a lookahead for the characters its matches start with
    assert set(P.LEADS) >= {P.RANGE, P.YEAR, P.WORD_DATE_MDY, P.WORD_DATE_DMY, P.DAY_RANGE_SHARED_YEAR}
    for led, lead in P.LEADS.items():
        assert led.pattern.startswith(lead)
        unled = re.compile(led.pattern[len(lead) :], led.flags)
        for text in corpus:
            assert [(m.span(), m.groupdict()) for m in led.finditer(text)] == [
                (m.span(), m.groupdict()) for m in unled.finditer(text)
            ], (lead, text[:80])


def test_the_folded_trigger_answers_as_the_trigger(corpus: list[str]) -> None:
    from diachron.temporal import grammar as G

    assert (
        G._TRIGGER_FOLDED.pattern == G._TRIGGER_FOLDED.pattern.lower()
    )  # no capital literal, no \S \W \D \B
    texts = [
        *corpus,
        "We met in May.",
        "we may meet",
        "early May",
        "EARLY MAY 3PM",
        "ſpring",
        "last \u212aelvin days",
    ]
    for text in texts:
        folded = text.translate(P.FOLD).lower()
        for start in range(0, len(text), 37):
            stop = min(len(text), start + 80)
            assert bool(
                G._TRIGGER_FOLDED.search(folded, start, stop) or G._MAY.search(text, start, stop)
            ) == bool(G._TRIGGER.search(text, start, stop)), text[start:stop]
