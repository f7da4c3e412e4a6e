"""The temporal case table: each case of ``shared/cases/temporal_cases.jsonl`` through the real library.

``question`` cases go through :func:`diachron.retrieval.intent.parse_intent` with the case's clock;
``document_text`` and ``document`` cases through :func:`diachron.temporal.tagger.extract_mentions`
against the document's own time (publication date, else its dateline; never the ingest time). The
comparison rules are those of the cases' README: a single expected interval of a text must be the only
one found; an expected set must equal the found set. ``retrieval`` cases run against a real LanceDB
table (:mod:`bench.eval.retrieval_cases`) when an embedder and a work folder are given, else "not run".
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from diachron.ingest.embedding import Embedder
from diachron.retrieval.intent import IntentConfig, parse_intent
from diachron.schemas.time import format_instant, parse_instant
from diachron.temporal.tagger import FiscalCalendar, TaggerConfig, extract_mentions

from bench.eval.retrieval_cases import run_retrieval_case

__all__ = ["CaseResult", "expected_intervals", "observed_intervals", "run_cases"]

Pair = tuple[datetime | None, datetime | None]


@dataclass(frozen=True, slots=True)
class CaseResult:
    """One case: ``status`` is ``pass``, ``fail`` or ``not run``; ``observed`` and ``expected`` as text."""

    id: str
    category: str
    kind: str
    status: str
    observed: str
    expected: str


def _instant(value: str | None) -> datetime | None:
    return None if value is None else parse_instant(value)


def _show(pairs: set[Pair]) -> str:
    return "; ".join(
        f"[{format_instant(s) or '-inf'}, {format_instant(e) or '+inf'})"
        for s, e in sorted(
            pairs, key=lambda p: (p[0] is not None, p[0] or datetime.min, p[1] is None, p[1] or datetime.min)
        )
    )


def expected_intervals(case: dict[str, Any]) -> set[Pair]:
    exp = case["expected"]
    items = exp["intervals"] if exp["kind"] == "intervals" else [exp]
    return {(_instant(i["start"]), _instant(i["end"])) for i in items}


def _document_reference(data: dict[str, Any]) -> datetime | None:
    if data.get("published"):
        return parse_instant(data["published"])
    if data.get("dateline"):
        found = extract_mentions(data["dateline"], reference=None)
        return found[0].interval.start if found else None
    return None


def observed_intervals(case: dict[str, Any]) -> set[Pair]:
    data = case["input"]
    if data["kind"] == "question":
        config = IntentConfig(timezone=data.get("data_timezone") or "UTC")
        intent = parse_intent(data["text"], now=parse_instant(case["reference_time"]), config=config)
        return {(i.start, i.end) for i in intent.intervals}
    if data["kind"] == "document":
        reference, config = _document_reference(data), TaggerConfig()
    else:
        reference = parse_instant(case["reference_time"]) if case.get("reference_time") else None
        fiscal = (
            FiscalCalendar.parse(data["fiscal_calendar"]) if data.get("fiscal_calendar") else FiscalCalendar()
        )
        config = TaggerConfig(timezone=data.get("timezone") or "UTC", fiscal=fiscal)
    return {
        (m.interval.start, m.interval.end)
        for m in extract_mentions(data["text"], reference=reference, config=config)
    }


def _run(case: dict[str, Any], embedder: Embedder | None, workdir: Path | None) -> CaseResult:
    kind = case["input"]["kind"]
    head = (case["id"], case["category"], kind)
    if kind == "retrieval":
        want = json.dumps(case["expected"]["per_query"])
        if embedder is None or workdir is None:
            return CaseResult(*head, "not run", "-", want)
        try:
            passed, observed = run_retrieval_case(case, embedder, workdir)
        except Exception as exc:  # noqa: BLE001 - a crash is a failed case, reported with its message
            return CaseResult(*head, "fail", f"error: {exc}", want)
        return CaseResult(*head, "pass" if passed else "fail", observed, want)
    want = expected_intervals(case)
    try:
        got = observed_intervals(case)
    except Exception as exc:  # noqa: BLE001 - a crash is a failed case, reported with its message
        return CaseResult(*head, "fail", f"error: {exc}", _show(want))
    if case["expected"]["kind"] == "interval" and kind == "document_text":
        ok = want <= got and len(got) == 1
    else:
        ok = got == want
    return CaseResult(*head, "pass" if ok else "fail", _show(got) or "(none)", _show(want))


def run_cases(
    path: Path, *, embedder: Embedder | None = None, workdir: Path | None = None
) -> list[CaseResult]:
    """Every case of the JSONL file at ``path``, in file order (retrieval cases need ``embedder`` and
    ``workdir``).

    Raises:
        FileNotFoundError: ``path`` does not exist.
    """
    lines = Path(path).read_text(encoding="utf-8").splitlines()
    return [_run(json.loads(line), embedder, workdir) for line in lines if line.strip()]
