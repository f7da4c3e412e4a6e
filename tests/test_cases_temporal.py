"""Every question / document case of ``shared/cases/temporal_cases.jsonl`` as a test (id = case id).

The cases run through the same runner as the evaluation's case table (:mod:`bench.eval.cases`): the real
tagger for document text (the document's publication date, else its dateline, never ``ingested_at``) and
the real intent parser for questions. Set ``DIACHRON_SHARED`` to the shared folder; a missing file fails.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from conftest import shared_path

from bench.eval.cases import expected_intervals, observed_intervals

KINDS = ("question", "document_text", "document")


def _cases_file() -> Path:
    return shared_path() / "cases" / "temporal_cases.jsonl"


def _load() -> list[Any]:
    path = _cases_file()
    if not path.is_file():
        return [pytest.param(None, id="cases-file-missing")]
    cases = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return [pytest.param(c, id=c["id"]) for c in cases if c["input"]["kind"] in KINDS]


@pytest.mark.parametrize("case", _load())
def test_case(case: dict[str, Any] | None) -> None:
    if case is None:
        pytest.fail(
            f"temporal cases file not found: {_cases_file()} (set DIACHRON_SHARED to the shared folder)"
        )
    got = observed_intervals(case)
    want = expected_intervals(case)
    if case["expected"]["kind"] == "interval" and case["input"]["kind"] == "document_text":
        assert want <= got, f"{case['id']}: expected {want} among {got}"
        assert len(got) == 1, f"{case['id']}: spurious intervals in {got}"
    else:
        assert got == want, f"{case['id']}: {case['why']}"
