"""Answers that keep the temporal contract, on the essay's matrix; damaged tables and ``diachron repair``.

One real ingest (local Ray, LanceDB in a tmp dir, the real embedder) in two runs — a base run recorded on
1 Dec 2024 and a late run two days later — holds every row of the matrix: a three-version refund policy
(point lookup on a superseded version, before/after the change on 1 March 2024, the current version, a
question with no time), a data-retention version that arrived late (as-of before and after its
recording), two overlapping travel-policy versions (contradiction), three parking rules ("the old rule":
a clarification question), and an undated note (missing time). Each expected answer below is worked out
by hand from those records (valid intervals are half-open: v1 valid [1 Jan, 1 Mar) is "1 Jan 2024 – 29 Feb
2024").

The LLM path runs against a tiny real HTTP server on 127.0.0.1 that returns canned OpenAI-format replies
(a fake endpoint; the request, the transport and the check are the real code).
"""

from __future__ import annotations

import json
import os
import shutil
import threading
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest

pytestmark = pytest.mark.integration

BASE_CLOCK = datetime(2024, 12, 1, tzinfo=UTC)
LATE_CLOCK = datetime(2024, 12, 3, tzinfo=UTC)
NOW = datetime(2024, 12, 10, tzinfo=UTC)


def _policy(series: str, n: int, text: str, start: str, **kw: Any) -> dict[str, Any]:
    return {
        "doc_id": f"{series}/v{n}",
        "series_id": series,
        "version": str(n),
        "title": f"{series} v{n}",
        "text": text,
        "valid_from": start,
        "published_at": start,
        **kw,
    }


REFUND = "Refund policy: customers may return goods for a refund within {} days."
BASE = [
    _policy("refund", 1, REFUND.format(14), "2024-01-01"),
    _policy("refund", 2, REFUND.format(30), "2024-03-01", supersedes="1"),
    _policy("refund", 3, REFUND.format(60), "2024-06-01", supersedes="2"),
    _policy("retention", 1, "Data retention rule: logs are kept for 90 days.", "2023-01-01"),
    _policy("retention", 3, "Data retention rule: logs are kept for 30 days.", "2023-09-01"),
    _policy(
        "travel", 1, "Travel policy: economy class for all flights.", "2022-01-01", valid_until="2022-07-01"
    ),
    _policy("travel", 2, "Travel policy: business class for flights over six hours.", "2022-06-01"),
    *[
        _policy("parking", n, f"Parking rule: staff may park in garage {g} with a permit.", start)
        for n, g, start in ((1, "A", "2019-01-01"), (2, "B", "2019-06-01"), (3, "C", "2020-01-01"))
    ],
    {
        "doc_id": "badge-note",
        "title": "Badge note",
        "text": "Badge note: visitors hand their badges back at the front desk when they leave.",
    },
]
LATE = [_policy("retention", 2, "Data retention rule: logs are kept for 60 days.", "2023-05-01")]


def _jsonl(path: Path, rows: list[dict[str, Any]]) -> str:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return str(path)


@pytest.fixture(scope="module")
def matrix_db(tmp_path_factory: pytest.TempPathFactory) -> str:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from diachron.ingest.pipeline import IngestConfig, run_ingest

    tmp = tmp_path_factory.mktemp("answer")
    db = str(tmp / "db")
    config = IngestConfig(db_uri=db, num_cpus=2, optimize=False)
    first = run_ingest([_jsonl(tmp / "base.jsonl", BASE)], config, clock=lambda: BASE_CLOCK)
    second = run_ingest([_jsonl(tmp / "late.jsonl", LATE)], config, clock=lambda: LATE_CLOCK)
    assert (first.documents_written, second.documents_written) == (len(BASE), 1)
    return db


@pytest.fixture(scope="module")
def client(matrix_db: str) -> Any:
    from diachron.retrieval.client import Client

    return Client(matrix_db)


def _paragraphs(answer: Any) -> list[str]:
    return answer.text.split("\n\n")


# ---- the matrix, answered without a model ---------------------------------------------------------------


def test_point_lookup_on_a_superseded_policy(client: Any) -> None:
    reply = client.answer("Which refund policy applied on 10 April 2024?", k=1, now=NOW)
    assert reply.scope == "on 10 Apr 2024" and reply.checked and reply.source == "summary"
    assert _paragraphs(reply)[:2] == [
        "On 10 Apr 2024, the evidence says:",
        "refund/v2 (valid 1 Mar 2024 – 31 May 2024; superseded by refund/v3 on 1 Jun 2024; recorded "
        "1 Dec 2024): Refund policy: customers may return goods for a refund within 30 days. [1]",
    ]
    assert "14 days" not in reply.text and "60 days" not in reply.text  # never blended
    (cited,) = reply.citations
    assert (cited.n, cited.doc_id) == (1, "refund/v2")
    assert (cited.valid.start, cited.valid.end) == (
        datetime(2024, 3, 1, tzinfo=UTC),
        datetime(2024, 6, 1, tzinfo=UTC),
    )


@pytest.mark.parametrize(
    ("day", "expected"),
    [
        (
            "29 February 2024",  # the last day of v1 (valid [1 Jan, 1 Mar))
            "refund/v1 (valid 1 Jan 2024 – 29 Feb 2024; superseded by refund/v2 on 1 Mar 2024; recorded "
            "1 Dec 2024): Refund policy: customers may return goods for a refund within 14 days. [1]",
        ),
        (
            "1 March 2024",  # the change: v2 takes effect
            "refund/v2 (valid 1 Mar 2024 – 31 May 2024; superseded by refund/v3 on 1 Jun 2024; recorded "
            "1 Dec 2024): Refund policy: customers may return goods for a refund within 30 days. [1]",
        ),
    ],
)
def test_before_and_after_a_change(client: Any, day: str, expected: str) -> None:
    reply = client.answer(f"Which refund policy applied on {day}?", k=1, now=NOW)
    assert _paragraphs(reply)[1] == expected


def test_late_ingestion_as_of_before_and_after_its_recording(client: Any) -> None:
    question = "Which data retention rule applied on 1 June 2023?"
    before = client.answer(question, k=1, now=NOW, as_of=datetime(2024, 12, 2, tzinfo=UTC))
    assert before.scope == "on 1 Jun 2023, as recorded by 2 Dec 2024 00:00 UTC"
    assert _paragraphs(before)[:2] == [
        "On 1 Jun 2023, as recorded by 2 Dec 2024 00:00 UTC, the evidence says:",
        "retention/v1 (valid 1 Jan 2023 – 31 Aug 2023; superseded by retention/v3 on 1 Sep 2023; recorded "
        "1 Dec 2024): Data retention rule: logs are kept for 90 days. [1]",
    ]
    after = client.answer(question, k=1, now=NOW, as_of=datetime(2024, 12, 4, tzinfo=UTC))
    assert _paragraphs(after)[1] == (
        "retention/v2 (valid 1 May 2023 – 31 Aug 2023; superseded by retention/v3 on 1 Sep 2023; recorded "
        "3 Dec 2024): Data retention rule: logs are kept for 60 days. [1]"
    )


def test_contradiction_is_stated_not_blended(client: Any) -> None:
    reply = client.answer("Which travel policy applied on 15 June 2022?", k=2, now=NOW)
    paragraphs = _paragraphs(reply)
    assert paragraphs[0] == "On 15 Jun 2022, the evidence says:"
    assert [p.split(" (")[0] for p in paragraphs[1:3]] == ["travel/v1", "travel/v2"]
    assert paragraphs[1].endswith("Travel policy: economy class for all flights. [1]")
    assert paragraphs[2].endswith("Travel policy: business class for flights over six hours. [2]")
    assert paragraphs[1].startswith("travel/v1 (valid 1 Jan 2022 – 30 Jun 2022;")
    assert paragraphs[2].startswith("travel/v2 (valid since 1 Jun 2022;")
    # the overlap [1 Jun 2022, 1 Jul 2022) of the two versions
    assert paragraphs[3] == (
        "Conflict: travel/v1 and travel/v2 (travel) both apply between 1 Jun 2022 and 30 Jun 2022; "
        "read them apart, not blended [1][2]."
    )


def test_current_and_the_fallback_to_now_when_the_question_has_no_time(client: Any) -> None:
    current = client.answer("What is the current refund policy?", k=1, now=NOW)
    assert current.scope == "now (10 Dec 2024)"
    assert _paragraphs(current)[1] == (
        "refund/v3 (valid since 1 Jun 2024; the version valid now; recorded 1 Dec 2024): Refund policy: "
        "customers may return goods for a refund within 60 days. [1]"
    )
    timeless = client.answer("What does the refund policy say about returning goods?", k=3, now=NOW)
    paragraphs = _paragraphs(timeless)
    assert timeless.scope == "at any time (no time in the question)"
    assert paragraphs[0] == (
        "No time in the question, so this is read as now (10 Dec 2024); earlier versions are marked "
        "superseded:"
    )
    assert [p.split(" (")[0] for p in paragraphs[1:4]] == ["refund/v1", "refund/v2", "refund/v3"]
    assert "superseded by refund/v2" in paragraphs[1] and "superseded by refund/v3" in paragraphs[2]
    assert "the version valid now" in paragraphs[3]


def test_missing_time_is_said(client: Any) -> None:
    reply = client.answer("What do visitors do with their badges when they leave?", k=1, now=NOW)
    assert _paragraphs(reply)[1] == (
        "Time unknown (admitted by similarity only; not dated): Badge note: visitors hand their badges back "
        "at the front desk when they leave. [1]"
    )


def test_an_ambiguous_old_rule_gets_a_question_back(client: Any) -> None:
    reply = client.answer("What did the old parking rule say?", k=3, now=NOW)
    assert reply.needs_clarification and reply.citations == ()
    assert reply.text == (
        "Which one do you mean? 2 earlier versions of parking, and each gives another answer: version 1 "
        "(parking/v1, valid 1 Jan 2019 – 31 May 2019); version 2 (parking/v2, valid 1 Jun 2019 – "
        "31 Dec 2019). Ask again with a date (e.g. 'on <day>')."
    )


# ---- the LLM path: a real HTTP server with canned OpenAI-format replies ---------------------------------


class _Canned(BaseHTTPRequestHandler):
    replies: list[str] = []
    requests: list[dict[str, Any]] = []

    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        self._send({"object": "list", "data": [{"id": "canned-model", "object": "model"}]})

    def do_POST(self) -> None:  # noqa: N802 - http.server's name
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).requests.append({"path": self.path, **body})
        reply = type(self).replies.pop(0)
        content = reply if reply.startswith("{") else json.dumps({"answer": reply})  # JSON: sent as it is
        self._send(
            {
                "id": "x",
                "object": "chat.completion",
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": content},
                        "finish_reason": "stop",
                    }
                ],
                "usage": {"completion_tokens": 20},
            }
        )

    def _send(self, payload: dict[str, Any]) -> None:
        data = json.dumps(payload).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture(scope="module")
def endpoint() -> Any:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Canned)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()


GOOD = (
    "On 10 April 2024 the refund policy was refund/v2: goods may be returned within 30 days [1]. "
    "It took effect on 1 March 2024 [1]."
)


@pytest.mark.parametrize(
    ("reply", "source", "reason"),
    [
        (GOOD, "llm", None),
        (
            "Refunds are possible within 30 days [9].",
            "summary",
            "LLM answer rejected: the reply cites [9], but the evidence has 1 card(s)",
        ),
        (
            "Since 1 January 2020 refunds are possible within 30 days [1].",
            "summary",
            "LLM answer rejected: the reply states '1 January 2020' ([2020-01-01T00:00:00Z, "
            "2020-01-02T00:00:00Z)), outside the cited evidence's intervals",
        ),
        (
            "Refunds are possible within 30 days.",
            "summary",
            "LLM answer rejected: the reply cites no evidence card",
        ),
    ],
)
def test_the_llm_reply_is_checked(
    client: Any, endpoint: str, reply: str, source: str, reason: str | None
) -> None:
    from diachron.retrieval.answer import LLMConfig

    _Canned.replies[:] = [reply]
    _Canned.requests.clear()
    answer = client.answer(
        "Which refund policy applied on 10 April 2024?", k=1, now=NOW, llm=LLMConfig(endpoint)
    )
    assert (answer.source, answer.reason, answer.checked) == (source, reason, True)
    if source == "llm":
        assert answer.text == GOOD and [c.doc_id for c in answer.citations] == ["refund/v2"]
    else:  # the deterministic answer, with the reason
        assert _paragraphs(answer)[0] == "On 10 Apr 2024, the evidence says:"
    (request,) = _Canned.requests
    assert request["path"] == "/v1/chat/completions" and request["model"] == "canned-model"
    system, user = request["messages"]
    assert "Scope the answer" in system["content"]
    card = "[1] refund/v2 (published 2024-03-01T00:00:00Z; valid [2024-03-01T00:00:00Z, 2024-06-01T00:00:00Z)"
    assert card in user["content"]
    assert request["response_format"]["type"] == "json_schema"


def test_an_unreachable_endpoint_gives_the_deterministic_answer(client: Any) -> None:
    from diachron.retrieval.answer import LLMConfig

    dead = LLMConfig("http://127.0.0.1:9/v1", model="m", timeout=2, retries=1)
    answer = client.answer("Which refund policy applied on 10 April 2024?", k=1, now=NOW, llm=dead)
    assert answer.source == "summary" and answer.reason.startswith("LLM endpoint failed: ")


def test_the_bench_s_option_letter_goes_through_the_same_client(endpoint: str) -> None:
    from bench.eval.answer import AnswerConfig, ask

    _Canned.replies[:] = ['{"letter": "C"}', '{"letter": "E"}']
    _Canned.requests.clear()
    config = AnswerConfig(endpoint, "canned-model", timeout=10)
    assert ask(config, "Which option? A. x B. y C. z") == "C"
    assert ask(config, "Which option?") is None  # no letter A-D in the reply
    first = _Canned.requests[0]
    assert first["response_format"]["json_schema"]["schema"]["properties"]["letter"]["enum"] == list("ABCD")


# ---- CLI and JSON -----------------------------------------------------------------------------------------


def test_ask_answer_json_extends_the_result(matrix_db: str) -> None:
    from typer.testing import CliRunner

    from diachron.cli import app

    argv = ["ask", "Which refund policy applied on 10 April 2024?", "--db", matrix_db, "-k", "1"]
    result = CliRunner().invoke(app, [*argv, "--now", "2024-12-10T00:00:00Z", "--answer", "--json"])
    assert result.exit_code == 0, result.output
    payload = json.loads(result.stdout)
    assert {"schema_version", "intent", "evidence", "trace", "signals", "answer"} <= set(payload)
    assert payload["evidence"][0]["doc_id"] == "refund/v2"
    answer = payload["answer"]
    assert (answer["scope"], answer["checked"], answer["source"], answer["reason"]) == (
        "on 10 Apr 2024",
        True,
        "summary",
        None,
    )
    assert answer["text"].startswith("On 10 Apr 2024, the evidence says:\n\nrefund/v2 (valid 1 Mar 2024")
    assert [(c["n"], c["doc_id"]) for c in answer["citations"]] == [(1, "refund/v2")]
    assert answer["citations"][0]["valid"] == {
        "start": "2024-03-01T00:00:00Z",
        "end": "2024-06-01T00:00:00Z",
        "granularity": "day",
    }
    plain = CliRunner().invoke(app, [*argv, "--now", "2024-12-10T00:00:00Z", "--json"])
    assert "answer" not in json.loads(plain.stdout)  # unchanged without --answer
    shown = CliRunner().invoke(app, [*argv, "--now", "2024-12-10T00:00:00Z", "--answer"])
    assert "Answer — on 10 Apr 2024" in shown.stdout and "[1]" in shown.stdout


# ---- a damaged table --------------------------------------------------------------------------------


def test_a_damaged_table_is_one_line_and_repair_rolls_it_back(matrix_db: str, tmp_path: Path) -> None:
    from served import serving
    from typer.testing import CliRunner

    from diachron.cli import app
    from diachron.service import ServiceConfig

    db = str(tmp_path / "db")
    shutil.copytree(matrix_db, db)
    files = sorted((Path(db) / "chunks.lance" / "data").glob("*.lance"), key=lambda p: p.stat().st_mtime)
    assert len(files) == 2  # the base run's rows, then the late run's
    newest = files[-1]
    size = newest.stat().st_size
    with newest.open("r+b") as handle:  # cut the late run's data file short
        handle.truncate(size // 2)
    question = ["ask", "Which data retention rule applied on 1 June 2023?", "--db", db]

    broken = CliRunner().invoke(app, question)
    assert broken.exit_code == 1
    (line,) = broken.output.strip().splitlines()
    assert line.startswith(f"error: {db} is damaged: table 'chunks' (version ")
    assert f"data file data/{newest.name} holds {size // 2} of its {size} bytes" in line
    assert f"Run `diachron repair {db}`" in line and "Traceback" not in broken.output

    ingest = CliRunner().invoke(app, ["ingest", str(tmp_path / "none.jsonl"), "--db", db])
    assert ingest.exit_code == 1 and ingest.output.strip() == line  # named before any work starts

    with serving(ServiceConfig(db=db, timeout_s=300)) as url:
        health = httpx.get(f"{url}/health", timeout=60)
        assert health.status_code == 503 and health.json()["status"] == "damaged"
        assert health.json()["detail"] == line.removeprefix("error: ")
        search = httpx.post(f"{url}/search", json={"question": "retention rule"}, timeout=300)
        assert search.status_code == 503 and search.json()["detail"] == line.removeprefix("error: ")

    repaired = CliRunner().invoke(app, ["repair", db, "--json"])
    assert repaired.exit_code == 0, repaired.output
    (row,) = json.loads(repaired.stdout)["repaired"]
    # the late run added one fragment: the version before it holds the base run's 11 chunks
    assert (row["table"], row["rows"]) == ("chunks", len(BASE))
    assert row["restored_from"] < row["damaged_version"] < row["new_version"]
    assert newest.stat().st_size == size // 2  # nothing deleted or rewritten in place

    refund = ["ask", "Which refund policy applied on 10 April 2024?", "--db", db, "-k", "1", "--json"]
    works = CliRunner().invoke(app, [*refund, "--now", "2024-12-10T00:00:00Z"])
    assert works.exit_code == 0, works.output
    assert [e["doc_id"] for e in json.loads(works.stdout)["evidence"]] == ["refund/v2"]
    again = CliRunner().invoke(app, ["repair", db])
    assert again.exit_code == 0 and "no damaged table found; nothing changed" in again.output
