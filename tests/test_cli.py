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
    spans = {
        (i["start"], i["end"], i["granularity"], i["kind"]) for i in chunk["intervals"] if not i["provenance"]
    }
    assert spans == {
        ("2025-03-01T00:00:00Z", "2025-03-02T00:00:00Z", "day", "state_start"),  # "opened on"
        ("2025-03-03T00:00:00Z", "2025-03-04T00:00:00Z", "day", "event"),
    }
    # derived, as ingest writes them: renewals opened on 1 March and nothing later changes -> the span lasts
    # until the text's publication day (5 April, end 6 April); the section's hull is that same span, so no
    # inherited span is added
    derived = {
        (i["start"], i["end"], i["kind"], i["provenance"]) for i in chunk["intervals"] if i["provenance"]
    }
    assert derived == {("2025-03-01T00:00:00Z", "2025-04-06T00:00:00Z", "state", "inferred:to-publication")}
    assert set(chunk) >= {"chunk_id", "text", "intervals", "time_source"}


def test_annotate_rejects_a_bad_clock():
    result = runner.invoke(app, ["annotate", "text", "--published-at", "yesterday"])
    assert result.exit_code != 0 and "ISO-8601" in result.output


@pytest.mark.integration
def test_ask_json_contract(stock_db):
    question = "How did Microsoft Corp. (MSFT) stock perform between September 2010 and August 2012?"
    result = runner.invoke(
        app, ["ask", question, "--db", stock_db[0], "-k", "5", "--now", "2026-01-01T00:00:00Z", "--json"]
    )
    assert result.exit_code == 0, result.output
    payload = json.loads(result.stdout)
    assert payload["schema_version"].startswith("1.")
    intent = payload["intent"]
    assert intent["relation"] == "between" and intent["reference_time"] == "2026-01-01T00:00:00Z"
    assert intent["intervals"] == [
        {"start": "2010-09-01T00:00:00Z", "end": "2012-09-01T00:00:00Z", "granularity": "month"}
    ]
    assert intent["needs_clarification"] is False
    evidence = payload["evidence"]
    assert len(evidence) == 5 and all(e["doc_id"].startswith("stock-MSFT-") for e in evidence)
    published = [e["published_at"] for e in evidence]
    assert published == sorted(published) and all(p.endswith("Z") for p in published)
    assert {"chunk_id", "doc_id", "published_at", "intervals", "time_source", "score", "text"} <= set(
        evidence[0]
    )
    assert payload["trace"]["candidates_after_filter"] >= 24


def test_ask_without_an_index_says_what_to_do(tmp_path):
    result = runner.invoke(app, ["ask", "anything", "--db", str(tmp_path / "none")])
    assert result.exit_code != 0
    assert "diachron ingest" in str(result.exception) or "diachron ingest" in result.output


def test_ask_with_a_file_as_db_says_it_is_a_file(tmp_path):
    """A file given as --db is named as a file, not met with "run diachron ingest into <file>"."""
    path = tmp_path / "notes.txt"
    path.write_text("not an index")
    result = runner.invoke(app, ["ask", "How did IBM do in 2011?", "--db", str(path)])
    assert result.exit_code == 1
    line = " ".join(result.output.split())
    assert line.startswith("error:") and "is a file, not a LanceDB directory" in line
    assert "diachron ingest SOURCE --db" not in line


# ---- the CLI as a new user meets it (issue 14) -------------------------------------------------------------


def _options(command) -> list:
    import typer.main

    return [p for p in typer.main.get_command(app).commands[command].params if p.param_type_name == "option"]


def test_every_option_has_help_text():
    import typer.main

    missing = [
        f"{name} {'/'.join(p.opts)}"
        for name in typer.main.get_command(app).commands
        for p in _options(name)
        if not (p.help or "").strip()
    ]
    assert missing == []


@pytest.mark.parametrize(
    ("argv", "words"),
    [
        (["ask", "   "], "the question is empty"),
        (["ask", "How did IBM do in 2011?", "--now", "9999-12-31T23:00:00-05:00"], "out of range"),
        (["ask", "How did IBM do in 2011?", "--as-of", "last week"], "ISO-8601"),
        (
            ["ask", "How did IBM do yesterday?", "--timezone", "Mars/Olympus"],
            "unknown time zone 'Mars/Olympus' for --timezone",
        ),
        (
            ["intent", "How did IBM do yesterday?", "--timezone", "Mars/Olympus"],
            "unknown time zone 'Mars/Olympus' for --timezone",
        ),
        (
            ["ask", "How did IBM do in FY11?", "--fiscal-calendar", "banana"],
            "bad fiscal calendar 'banana' for --fiscal-calendar",
        ),
        (
            ["intent", "How did IBM do in FY11?", "--fiscal-calendar", "banana"],
            "bad fiscal calendar 'banana' for --fiscal-calendar",
        ),
        (
            ["ask", "How did IBM do yesterday?", "--db", "http://127.0.0.1:9", "--timezone", "Europe/Berlin"],
            "a service reads questions in its own zone",
        ),
        (["serve", "--timezone", "Mars/Olympus"], "unknown time zone 'Mars/Olympus'"),
    ],
)
def test_ask_refuses_bad_input_in_one_line(argv, words):
    result = runner.invoke(app, argv)
    assert result.exit_code == 1
    assert words in result.output and "Traceback" not in result.output
    assert not isinstance(result.exception, OverflowError)


@pytest.mark.parametrize(
    ("argv", "words"),
    [
        (["ask", "--bogus", "x"], "No such option: --bogus"),
        (["ask", "How did IBM do in 2011?", "-k", "0"], "'-k' / '--top-k'"),
        (["ask"], "Missing argument 'question'"),
        (["nosuch"], "No such command 'nosuch'"),
    ],
)
def test_usage_errors_are_one_line_on_stderr_with_exit_2(argv, words):
    """Option-parse errors come in the style of our own errors ("error: …", one line), not a boxed panel."""
    result = runner.invoke(app, argv, prog_name="diachron")
    assert result.exit_code == 2, result.output
    assert result.stdout == ""
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: ") and words in lines[0], result.stderr
    assert lines[0].endswith(
        f"(see `diachron {argv[0]} --help`)" if argv[0] != "nosuch" else "(see `diachron --help`)"
    )
    assert not set("╭╮╰╯│") & set(result.stderr)


def test_our_refusals_share_the_style_with_exit_1():
    result = runner.invoke(app, ["intent", "How did IBM do?", "--now", "soon"])
    assert result.exit_code == 1 and result.stdout == ""
    assert (
        result.stderr.startswith("error: --now must be an ISO-8601 instant")
        and result.stderr.count("\n") == 1
    )
    # a value diachron reads and refuses is exit 1 for annotate too (README: "1 for the rest")
    result = runner.invoke(app, ["annotate", "text", "--published-at", "yesterday"])
    assert result.exit_code == 1 and result.stdout == ""
    assert result.stderr.startswith("error: --published-at must be an ISO-8601 instant")
    assert "'yesterday'" in result.stderr and result.stderr.count("\n") == 1


def _ingest_in_a_fresh_process(argv: list[str]) -> list[str]:
    """Run ``diachron ingest ARGV`` in a subprocess (so other tests' imports don't count); assert it exited 1
    without importing Ray; return its non-blank stderr lines."""
    import subprocess
    import sys

    script = (
        "import sys\nfrom diachron.cli import app\n"
        f"sys.argv = {['diachron', 'ingest', *argv]!r}\n"
        "try:\n    app()\nexcept SystemExit as exc:\n    code = exc.code\n"
        "print('ray imported' if 'ray' in sys.modules else 'no ray', code)\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.stdout.split()[-3:] == ["no", "ray", "1"], done.stdout + done.stderr
    return [line for line in done.stderr.splitlines() if line.strip()]


def test_ingest_checks_its_sources_before_ray_starts(tmp_path):
    """A missing file fails in one line, and Ray is never imported."""
    lines = _ingest_in_a_fresh_process([str(tmp_path / "missing.jsonl"), "--db", str(tmp_path / "db")])
    assert len(lines) == 1 and lines[0].startswith("error: source not found:") and "missing.jsonl" in lines[0]
    assert not (tmp_path / "db").exists()


@pytest.mark.parametrize(
    ("option", "words"),
    [
        (["--timezone", "Mars/Olympus"], "error: unknown time zone 'Mars/Olympus' for --timezone"),
        (["--fiscal-calendar", "banana"], "error: bad fiscal calendar 'banana' for --fiscal-calendar"),
    ],
)
def test_ingest_and_annotate_refuse_a_bad_zone_or_fiscal_calendar_before_ray_starts(tmp_path, option, words):
    """A new user's finding: ingest accepted them, then quarantined every document (zone) or lost a Ray worker
    (fiscal calendar). Now one line, exit 1, Ray never imported, nothing created."""
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.txt").write_text("In 2005 it rained.", encoding="utf-8")
    lines = _ingest_in_a_fresh_process([str(tmp_path / "docs"), "--db", str(tmp_path / "db"), *option])
    assert len(lines) == 1 and lines[0].startswith(words), lines
    assert not (tmp_path / "db").exists()
    result = runner.invoke(app, ["annotate", "In 2005 it rained.", *option])
    assert result.exit_code == 1 and result.stdout == "" and "Traceback" not in result.output
    assert result.stderr.startswith(words) and result.stderr.count("\n") == 1


def test_run_ingest_refuses_a_bad_zone_before_ray_starts(tmp_path):
    from diachron.ingest.errors import ConfigError
    from diachron.ingest.pipeline import IngestConfig, run_ingest
    from diachron.ingest.stages import StageConfig

    (tmp_path / "a.txt").write_text("In 2005 it rained.", encoding="utf-8")
    config = IngestConfig(db_uri=str(tmp_path / "db"), stages=StageConfig(timezone="Mars/Olympus"))
    with pytest.raises(ConfigError, match="unknown time zone 'Mars/Olympus'"):
        run_ingest([str(tmp_path)], config)
    assert not (tmp_path / "db").exists()


def test_quarantine_lists_rows_newest_first_with_their_reasons(tmp_path):
    import lancedb
    import pyarrow as pa
    from diachron.schemas.records import QuarantineRecord, arrow_schema

    def row(n: int, run: str, stage: str, reason: str) -> dict:
        return {
            "quarantine_id": f"q{n}",
            "run_id": run,
            "stage": stage,
            "record_id": f"doc-{n}",
            "reason": reason,
            "payload_json": "{}",
            "recorded_at": datetime(2026, 4, n, tzinfo=UTC),
        }

    rows = [
        row(1, "r1", "source", "line 3: not JSON"),
        row(3, "r2", "validate_interval", "end before start"),
        row(2, "r1", "lineage", "supersedes doc-9, which is not stored"),
    ]
    lancedb.connect(str(tmp_path / "db")).create_table(
        "quarantine", pa.Table.from_pylist(rows, schema=arrow_schema(QuarantineRecord))
    )
    result = runner.invoke(app, ["quarantine", "--db", str(tmp_path / "db")])
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines() == [
        "2026-04-03T00:00:00Z  validate_interval  doc-3: end before start  (run r2)",
        "2026-04-02T00:00:00Z  lineage  doc-2: supersedes doc-9, which is not stored  (run r1)",
        "2026-04-01T00:00:00Z  source  doc-1: line 3: not JSON  (run r1)",
    ]
    assert result.stderr.strip() == "3 of 3 quarantined rows"
    result = runner.invoke(
        app, ["quarantine", "--db", str(tmp_path / "db"), "--run", "r1", "-n", "1", "--json"]
    )
    payload = json.loads(result.stdout)
    assert payload["total"] == 2 and [r["record_id"] for r in payload["rows"]] == ["doc-2"]
    missing = runner.invoke(app, ["quarantine", "--db", str(tmp_path / "nothing")])
    assert missing.exit_code == 1 and missing.stderr.startswith("error: no diachron database at")


def test_quarantine_of_an_ingest_that_quarantined_nothing_is_empty_not_an_error(tmp_path):
    """A new user's finding: after a clean ingest (no quarantine table is written) the command failed."""
    import lancedb
    import pyarrow as pa

    db = lancedb.connect(str(tmp_path / "db"))
    db.create_table("chunks", pa.table({"chunk_id": ["c1"]}))
    result = runner.invoke(app, ["quarantine", "--db", str(tmp_path / "db"), "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["total"] == 0 and json.loads(result.stdout)["rows"] == []
    result = runner.invoke(app, ["quarantine", "--db", str(tmp_path / "db")])
    assert result.exit_code == 0 and result.stderr.strip() == "0 of 0 quarantined rows"
    other = tmp_path / "other"
    lancedb.connect(str(other)).create_table("notes", pa.table({"x": [1]}))
    result = runner.invoke(app, ["quarantine", "--db", str(other)])
    assert (
        result.exit_code == 1 and result.stderr.startswith("error: ") and "no chunks table" in result.stderr
    )


@pytest.mark.integration
def test_ask_cards_show_the_question_as_asked_and_dates_as_people_write_them(stock_db):
    question = "How did Microsoft Corp. (MSFT) stock perform in February 2011?"
    result = runner.invoke(
        app, ["ask", question, "--db", stock_db[0], "-k", "1", "--now", "2026-01-01T00:00:00Z"]
    )
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0] == f"Q: {question}"
    assert lines[1].startswith("Reading this as: 1 Feb 2011 – 28 Feb 2011 (at)")
    import re

    assert re.search(r"Answer for [^·]*\bFeb 2011\b", result.stdout), result.stdout
    assert "published 28 Feb 2011" in result.stdout
    assert "T00:00:00Z" not in result.stdout  # ISO stays in --json


@pytest.mark.integration
def test_an_empty_answer_says_why(stock_db):
    """The stock summaries run 2000–2013: a question about 1850 gets the window, the index's span and what to
    try."""
    from datetime import timedelta

    import lancedb
    import pyarrow.compute as pc

    result = runner.invoke(
        app,
        ["ask", "How did IBM stock perform in 1850?", "--db", stock_db[0], "--now", "2026-01-01T00:00:00Z"],
    )
    assert result.exit_code == 0, result.output
    text = " ".join(result.stdout.split())
    assert "No evidence for 1 Jan 1850 – 31 Dec 1850 (at)." in text
    rows = (
        lancedb.connect(stock_db[0])
        .open_table("chunks")
        .to_lance()
        .to_table(columns=["event_start", "event_end"])
    )
    first, last = (
        pc.min(rows["event_start"]).as_py().year,
        (pc.max(rows["event_end"]).as_py() - timedelta(1)).year,
    )
    assert 2000 <= first <= last <= 2013  # the summaries' own years (end exclusive)
    assert f"The index covers {first} – {last}." in text and "Try a wider window" in text


@pytest.mark.integration
@pytest.mark.parametrize(
    ("question", "window"),
    [
        # a day (no per-period gap detection for `at` a day) and an open window: worked out from the questions
        (
            "What happened on 3 March 2031?",
            {"start": "2031-03-03T00:00:00Z", "end": "2031-03-04T00:00:00Z", "granularity": "day"},
        ),
        (
            "How did IBM stock do after 2030?",
            {"start": "2031-01-01T00:00:00Z", "end": None, "granularity": "year"},
        ),
    ],
)
def test_an_empty_json_answer_carries_a_gap_signal_saying_why(stock_db, question, window):
    """The stock summaries were written 2000–2013 and speak of no later time, so nothing answers these;
    --json says so in ``signals``."""
    result = runner.invoke(
        app, ["ask", question, "--db", stock_db[0], "--now", "2026-01-01T00:00:00Z", "--json"]
    )
    assert result.exit_code == 0, result.output
    payload = json.loads(result.stdout)
    assert payload["evidence"] == [] and payload["intent"]["intervals"] == [window]
    assert payload["signals"] == [
        {"type": "gap", "interval": window, "reason": "no chunk with known time in the window"}
    ]


@pytest.mark.integration
def test_ask_imports_no_ray_spacy_or_great_expectations(stock_db):
    import subprocess
    import sys

    script = (
        "import sys\nfrom diachron.cli import app\n"
        "sys.argv = ['diachron', 'ask', 'How did IBM do in March 2011?', '--db', "
        f"{stock_db[0]!r}, '-k', '1']\n"
        "try:\n    app()\nexcept SystemExit:\n    pass\n"
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'ray', 'spacy', 'great_expectations', "
        "'sentence_transformers'}))\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().splitlines()[-1] == "[]"


@pytest.mark.integration
def test_ask_reads_the_question_in_the_asker_s_zone_and_fiscal_calendar(stock_db):
    """``ask`` takes ``--timezone`` / ``--fiscal-calendar`` as ``intent`` does (a new user's finding: only
    ``intent`` had them). At 02:00Z on 17 April 2026 it is 22:00 on the 16th in New York (EDT, UTC-4), so
    "yesterday" is 15 April there: [15 Apr 04:00Z, 16 Apr 04:00Z). Microsoft's fiscal year ends in June
    ("7:end": FY2011 = July 2010 to June 2011)."""
    argv = ["ask", "What happened yesterday?", "--db", stock_db[0], "--now", "2026-04-17T02:00:00Z", "--json"]
    result = runner.invoke(app, [*argv, "--timezone", "America/New_York"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["intent"]["intervals"] == [
        {"start": "2026-04-15T04:00:00Z", "end": "2026-04-16T04:00:00Z", "granularity": "day"}
    ]
    utc = json.loads(runner.invoke(app, argv).stdout)["intent"][
        "intervals"
    ]  # the default zone: UTC's 16 April
    assert [(i["start"], i["end"]) for i in utc] == [("2026-04-16T00:00:00Z", "2026-04-17T00:00:00Z")]
    result = runner.invoke(
        app,
        [
            "ask",
            "How did Microsoft Corp. (MSFT) stock do in FY2011?",
            "--db",
            stock_db[0],
            "--fiscal-calendar",
            "7:end",
            "-k",
            "3",
            "--json",
        ],
    )
    assert result.exit_code == 0, result.output
    payload = json.loads(result.stdout)
    [window] = payload["intent"]["intervals"]
    assert (window["start"], window["end"]) == ("2010-07-01T00:00:00Z", "2011-07-01T00:00:00Z")
    assert payload["evidence"] and all(e["doc_id"].startswith("stock-MSFT-") for e in payload["evidence"])


@pytest.mark.integration
def test_serve_reads_questions_in_its_zone(stock_db):
    """``diachron serve --timezone``: the service's /intent reads "yesterday" in that zone (a real process on
    127.0.0.1; the same hand-worked window as the ``ask`` test above)."""
    import os
    import socket
    import subprocess
    import sys
    import time

    import httpx

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    script = "import sys\nfrom diachron.cli import app\nsys.argv = sys.argv[1:]\napp()\n"
    server = subprocess.Popen(
        [
            sys.executable,
            "-c",
            script,
            "diachron",
            "serve",
            "--db",
            stock_db[0],
            "--port",
            str(port),
            "--timezone",
            "America/New_York",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "HF_HUB_OFFLINE": "1"},
    )
    try:
        deadline = time.monotonic() + 120
        while True:
            assert server.poll() is None, server.stderr.read()
            try:
                answer = httpx.get(
                    f"http://127.0.0.1:{port}/intent",
                    timeout=2,
                    params={"question": "What happened yesterday?", "now": "2026-04-17T02:00:00Z"},
                )
                break
            except httpx.HTTPError:
                assert time.monotonic() < deadline, "diachron serve did not answer within 120 s"
                time.sleep(0.3)
        [window] = answer.json()["intent"]["intervals"]
        assert (window["start"], window["end"]) == ("2026-04-15T04:00:00Z", "2026-04-16T04:00:00Z")
    finally:
        server.terminate()
        server.wait(timeout=30)
