"""The CLI's public ``--json`` outputs (README documents them), through typer's real runner."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest
from typer.testing import CliRunner

from diachron.cli import app

runner = CliRunner()


def test_annotate_json_contract():
    text = "Membership renewals opened on the 1st of last month. The board met on March 3, 2025."
    result = runner.invoke(app, ["annotate", text, "--published-at", "2025-04-05T19:29:42Z", "--json"])
    assert result.exit_code == 0, result.output
    payload = json.loads(result.stdout)
    assert payload["schema_version"].startswith("1.")
    assert (payload["published_at"], payload["published_at_source"]) == ("2025-04-05T19:29:42Z", "metadata")
    [chunk] = payload["chunks"]
    spans = {(i["start"], i["end"], i["granularity"]) for i in chunk["intervals"]}
    assert spans == {("2025-03-01T00:00:00Z", "2025-03-02T00:00:00Z", "day"),
                     ("2025-03-03T00:00:00Z", "2025-03-04T00:00:00Z", "day")}
    assert set(chunk) >= {"chunk_id", "text", "intervals"}


def test_annotate_rejects_a_bad_clock():
    result = runner.invoke(app, ["annotate", "text", "--published-at", "yesterday"])
    assert result.exit_code != 0 and "ISO-8601" in result.output


@pytest.mark.integration
def test_ask_json_contract(stock_db):
    question = "How did Microsoft Corp. (MSFT) stock perform between September 2010 and August 2012?"
    result = runner.invoke(app, ["ask", question, "--db", stock_db[0], "-k", "5", "--now", "2026-01-01T00:00:00Z",
                                 "--json"])
    assert result.exit_code == 0, result.output
    payload = json.loads(result.stdout)
    assert payload["schema_version"].startswith("1.")
    intent = payload["intent"]
    assert intent["relation"] == "between" and intent["reference_time"] == "2026-01-01T00:00:00Z"
    assert intent["intervals"] == [{"start": "2010-09-01T00:00:00Z", "end": "2012-09-01T00:00:00Z",
                                    "granularity": "month"}]
    assert intent["needs_clarification"] is False
    evidence = payload["evidence"]
    assert len(evidence) == 5 and all(e["doc_id"].startswith("stock-MSFT-") for e in evidence)
    published = [e["published_at"] for e in evidence]
    assert published == sorted(published) and all(p.endswith("Z") for p in published)
    assert {"chunk_id", "doc_id", "published_at", "intervals", "time_source", "score", "text"} <= set(evidence[0])
    assert payload["trace"]["candidates_after_filter"] >= 24


def test_ask_without_an_index_says_what_to_do(tmp_path):
    result = runner.invoke(app, ["ask", "anything", "--db", str(tmp_path / "none")])
    assert result.exit_code != 0
    assert "diachron ingest" in str(result.exception) or "diachron ingest" in result.output
