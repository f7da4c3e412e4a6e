"""Every question / document case of ``shared/cases/temporal_cases.jsonl`` as a test (id = case id).

Set ``DIACHRON_SHARED`` to the shared folder to load the cases from elsewhere; a missing file fails.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from ingest.annotation.tagger import FiscalCalendar, TaggerConfig, extract_mentions
from retrieval.intent import IntentConfig, parse_intent
from schemas.time import parse_instant

KINDS = ("question", "document_text", "document")


def _cases_file() -> Path:
    shared = os.environ.get("DIACHRON_SHARED")
    base = Path(shared) if shared else Path(__file__).resolve().parents[2] / "shared"
    return base / "cases" / "temporal_cases.jsonl"


def _load() -> list[Any]:
    path = _cases_file()
    if not path.is_file():
        return [pytest.param(None, id="cases-file-missing")]
    cases = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return [pytest.param(c, id=c["id"]) for c in cases if c["input"]["kind"] in KINDS]


def _expected(case: dict[str, Any]) -> set[tuple[Any, Any]]:
    exp = case["expected"]
    items = exp["intervals"] if exp["kind"] == "intervals" else [exp]
    return {(_instant(i["start"]), _instant(i["end"])) for i in items}


def _instant(value: str | None) -> Any:
    return None if value is None else parse_instant(value)


def _document_reference(data: dict[str, Any]) -> Any:
    """Publication date, else the dateline, else none; never ``ingested_at`` (T21)."""
    if data.get("published"):
        return parse_instant(data["published"])
    if data.get("dateline"):
        found = extract_mentions(data["dateline"], reference=None)
        return found[0].interval.start if found else None
    return None


def _extracted(case: dict[str, Any]) -> set[tuple[Any, Any]]:
    data = case["input"]
    if data["kind"] == "question":
        config = IntentConfig(timezone=data.get("data_timezone") or "UTC")
        intent = parse_intent(data["text"], now=parse_instant(case["reference_time"]), config=config)
        return {(i.start, i.end) for i in intent.intervals}
    if data["kind"] == "document":
        reference = _document_reference(data)
        config = TaggerConfig()
    else:
        reference = parse_instant(case["reference_time"]) if case.get("reference_time") else None
        fiscal = FiscalCalendar.parse(data["fiscal_calendar"]) if data.get("fiscal_calendar") else FiscalCalendar()
        config = TaggerConfig(timezone=data.get("timezone") or "UTC", fiscal=fiscal)
    return {(m.interval.start, m.interval.end) for m in extract_mentions(data["text"], reference=reference,
                                                                          config=config)}


@pytest.mark.parametrize("case", _load())
def test_case(case: dict[str, Any] | None) -> None:
    if case is None:
        pytest.fail(f"temporal cases file not found: {_cases_file()} (set DIACHRON_SHARED to the shared folder)")
    got = _extracted(case)
    want = _expected(case)
    if case["expected"]["kind"] == "interval" and case["input"]["kind"] == "document_text":
        assert want <= got, f"{case['id']}: expected {want} among {got}"
        assert len(got) == 1, f"{case['id']}: spurious intervals in {got}"
    else:
        assert got == want, f"{case['id']}: {case['why']}"
