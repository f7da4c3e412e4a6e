"""Duckling's English time corpus (development half) through the question parser and the document tagger.

Every text of ``shared/cases/duckling_en_time_dev.jsonl`` runs (scoring rules: ``tests/duckling_corpus.py``).
One test per category and reader, so a regression names its category and its texts; the few texts we
read differently from Duckling on purpose are listed in :data:`DIFFERENT_ON_PURPOSE` with the reason, and
a test fails as well when one of them starts to pass (the list must be kept true). Targets (issue 28):
at least 97% exact for each reader on each half of the file (A: even example groups, B: odd; the
scoring of ``python -m bench.eval.news --duckling``), no time on any negative example.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

import pytest
from conftest import shared_path
from duckling_corpus import Outcome, examples, run_parser, run_tagger

CORPUS = shared_path() / "cases" / "duckling_en_time_dev.jsonl"

# text -> why diachron reads it differently (both readers)
DIFFERENT_ON_PURPOSE = {
    "3-4pm": "a clock-range end is the exclusive bound (temporal case T09): [15:00, 16:00), not 17:00",
    "around 3-4pm": "as '3-4pm'",
    "from 3 to 4 in the PM": "as '3-4pm'",
    "this Thu 9-11am": "as '3-4pm': [09:00, 11:00)",
    "8am until 6": "as '3-4pm': [08:00, 18:00)",
    "through 2014": "'through X' includes X (DESIGN: B included at its own granularity): before 2015",
    "the week": "Duckling's 'rest of this week' reading; we read the calendar week [Mon, next Mon)",
    "in 15": "a bare 'in 15' in prose is a count, not 15 minutes from now",
    "7p": "a bare number with a/p is not read alone (the same rule refuses the negatives '4a', '3 30')",
}


def _require_corpus() -> Path:
    if not CORPUS.is_file():
        pytest.fail(f"Duckling corpus not found: {CORPUS} (set DIACHRON_SHARED to the shared folder)")
    return CORPUS


@cache
def _outcomes(reader: str) -> dict[str, list[Outcome]]:
    run = run_parser if reader == "parser" else run_tagger
    out: dict[str, list[Outcome]] = {}
    for example in examples(_require_corpus()):
        out.setdefault(example.category, []).append(run(example))
    return out


def _categories() -> list[str]:
    if not CORPUS.is_file():
        return ["corpus-missing"]
    return sorted({e.category for e in examples(CORPUS)})


def _show(outcome: Outcome) -> str:
    got = "; ".join(f"[{s}, {e})" for s, e in outcome.observed) or "nothing"
    want = " or ".join(f"[{s}, {e})" for s, e in sorted(outcome.example.accepted, key=str)) or "nothing"
    return f"{outcome.example.text!r}: got {got}, want {want}"


@pytest.mark.parametrize("reader", ["parser", "tagger"])
@pytest.mark.parametrize("category", _categories())
def test_category(reader: str, category: str) -> None:
    outcomes = _outcomes(reader)[category]
    misses = [o for o in outcomes if not o.exact and o.example.text not in DIFFERENT_ON_PURPOSE]
    now_right = [o.example.text for o in outcomes if o.exact and o.example.text in DIFFERENT_ON_PURPOSE]
    assert not misses, f"{reader}, {category}: {len(misses)} of {len(outcomes)} wrong:\n" + "\n".join(
        map(_show, misses)
    )
    assert not now_right, f"{reader}: now read as Duckling does, drop from DIFFERENT_ON_PURPOSE: {now_right}"


@pytest.mark.parametrize("reader", ["parser", "tagger"])
def test_targets(reader: str) -> None:
    outcomes = [o for group in _outcomes(reader).values() for o in group]
    groups = list(dict.fromkeys(e.id.rsplit("/", 1)[0] for e in examples(_require_corpus())))  # file order
    half = {gid: i % 2 for i, gid in enumerate(groups)}
    for h in (0, 1):
        mine = [o for o in outcomes if half[o.example.id.rsplit("/", 1)[0]] == h]
        exact = sum(o.exact for o in mine)
        assert exact / len(mine) >= 0.97, f"{reader}, half {'AB'[h]}: {exact}/{len(mine)} exact"
    negatives = [o for o in outcomes if not o.example.accepted]
    assert negatives and all(o.exact for o in negatives), [_show(o) for o in negatives if not o.exact]
