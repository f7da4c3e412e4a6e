"""The LLM annotator's own logic without vLLM (runs in the main venv): imports, parsing, checks, retry,
fallback.

The canned answers below test our parser and policy, not a model; the HTTP backend's retries run against a
real local HTTP server on a background thread.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from diachron.ingest.annotation.base import DocumentAnnotation, DocumentContext
from diachron.ingest.annotation.llm import (
    STAGE2_SCHEMA,
    LLMAnnotator,
    LLMOutputError,
    LLMPolicy,
    build_llm_annotator,
    check_interval,
    parse_stage1,
    parse_stage2,
)
from diachron.ingest.annotation.rules import RuleAnnotator
from diachron.ingest.errors import ConfigError
from diachron.schemas.time import Granularity, Interval
from diachron.temporal.llm_backends import Completion, OpenAIHTTPBackend

D = lambda *a: datetime(*a, tzinfo=UTC)


def _event(start: str, end: str | None = None, grain: str = "day", what: str = "e") -> dict:
    return {"description": what, "entities": [], "start": start, "end": end, "granularity": grain}


def _answer(*events: dict) -> str:
    return json.dumps({"events": list(events)})


def test_package_imports_without_vllm() -> None:
    code = (
        "import sys; sys.modules['vllm'] = None\n"
        "import diachron.ingest.annotation.llm, diachron.temporal.llm_backends, diachron.ingest.stages\n"
        "assert sys.modules['vllm'] is None\nprint('ok')"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )
    assert out.stdout.strip() == "ok", out.stderr


def test_stage2_parses_periods_and_half_open_ranges() -> None:
    events = parse_stage2(
        _answer(
            _event("2015-03-01", None, "month", "merger closed"),
            _event("2015-01-01", "2015-07-01", "quarter"),
            _event("2016-02-29", None, "day"),
            _event("2000-03-31", "2000-03-31", "day"),
        )
    )  # inclusive one-day answer
    assert [e.interval for e in events] == [
        Interval(D(2015, 3, 1), D(2015, 4, 1)),
        Interval(D(2015, 1, 1), D(2015, 7, 1)),
        Interval(D(2016, 2, 29), D(2016, 3, 1)),
        Interval(D(2000, 3, 31), D(2000, 4, 1)),
    ]
    assert events[0].interval.granularity is Granularity.MONTH and events[0].description == "merger closed"


def test_stage2_keeps_impossible_dates_as_problems() -> None:
    bad_day, inverted = parse_stage2(_answer(_event("2015-02-30"), _event("2015-05-01", "2015-04-01")))
    assert bad_day.interval is None and "2015-02-30" in bad_day.problem
    assert inverted.interval is None and "inverted" in inverted.problem


@pytest.mark.parametrize(
    "text, where",
    [
        ('{"events": [', "not JSON"),
        ("", "not JSON"),
        (_answer(*[_event("2015-01-01")] * 5), "schema violation at ['events']"),
        (
            json.dumps({"events": [{"description": "x", "start": "2015-01-01"}]}),
            "schema violation at ['events', 0]",
        ),
        (_answer(_event("15-1-1")), "schema violation at ['events', 0, 'start']"),
        (_answer(_event("2015-01-01", grain="week")), "schema violation at ['events', 0, 'granularity']"),
    ],
)
def test_stage2_rejects_what_breaks_the_schema(text: str, where: str) -> None:
    with pytest.raises(LLMOutputError, match=f"^{where.replace('[', '.').replace(']', '.')}"):
        parse_stage2(text)


def test_stage2_schema_caps_arrays() -> None:
    events = STAGE2_SCHEMA["properties"]["events"]
    assert events["maxItems"] == 4 and events["items"]["properties"]["entities"]["maxItems"] == 3


def test_stage1_parses_and_rejects() -> None:
    answer = parse_stage1('{"published": "2019-10-31", "confidence": 0.8, "abstract": " Q4 results. "}')
    assert (answer.published, answer.confidence, answer.abstract) == (D(2019, 10, 31), 0.8, "Q4 results.")
    with pytest.raises(LLMOutputError, match="published"):
        parse_stage1('{"published": "2019-13-01", "confidence": 0.8, "abstract": ""}')
    with pytest.raises(LLMOutputError, match="schema"):
        parse_stage1('{"published": null, "confidence": 3, "abstract": ""}')


def test_check_interval_bounds() -> None:
    policy = LLMPolicy(date_tolerance=timedelta(days=31), future_tolerance=timedelta(days=366))
    march_5 = Interval(D(2015, 3, 5), D(2015, 3, 6))
    assert (
        check_interval(
            Interval(D(2015, 3, 1), D(2015, 4, 1)), explicit=[march_5], published=None, policy=policy
        )
        is None
    )
    # [2015-04-06, 2015-04-07) ends its gap to [.., 2015-03-06) after 31 days: still within the bound
    assert (
        check_interval(
            Interval(D(2015, 4, 6), D(2015, 4, 7)), explicit=[march_5], published=None, policy=policy
        )
        is None
    )
    flag = check_interval(
        Interval(D(2015, 4, 7), D(2015, 4, 8)), explicit=[march_5], published=None, policy=policy
    )
    assert flag.startswith("llm interval [2015-04-07T00:00:00Z, 2015-04-08T00:00:00Z) is 32 days")
    flag = check_interval(
        Interval(D(2022, 1, 1), D(2023, 1, 1)), explicit=[], published=D(2020, 1, 1), policy=policy
    )
    assert "starts 731 days after publication" in flag
    assert (
        check_interval(
            Interval(D(2020, 6, 1), D(2020, 7, 1)), explicit=[], published=D(2020, 1, 1), policy=policy
        )
        is None
    )
    # seen from the 135M model for "on 5 May 2015": overlaps the written date but spans 457 years
    flag = check_interval(
        Interval(D(1558, 6, 1), D(2015, 6, 1)), explicit=[march_5], published=D(2015, 6, 1), policy=policy
    )
    assert flag == (
        "llm interval [1558-06-01T00:00:00Z, 2015-06-01T00:00:00Z) spans 166916 days (bound 3653 days)"
    )


class ScriptedBackend:
    """Returns the queued completions in order and records each call's budget and temperature."""

    model_name = "/models/smol-test"

    def __init__(self, *batches: list[Completion]) -> None:
        self.batches = list(batches)
        self.calls: list[tuple[int, int, float]] = []

    def generate(self, conversations, *, schema, max_tokens, temperature):
        self.calls.append((len(conversations), max_tokens, temperature))
        batch = self.batches.pop(0)
        assert len(batch) == len(conversations)
        return batch


def ok(text: str) -> Completion:
    return Completion(text, "stop", 10)


DOC = DocumentAnnotation(D(2015, 6, 1), "metadata", "IBM results.", "x")


def test_retry_once_then_fall_back_to_rules_with_provenance() -> None:
    texts = ["Revenue fell in March 2015.", "The board met on 5 May 2015.", "Nothing dated here."]
    backend = ScriptedBackend(
        [
            Completion('{"events": [', "length", 256),
            ok("not json"),
            ok(_answer(_event("2015-03-01", None, "month"))),
        ],
        [ok(_answer(_event("2015-03-01", None, "month"))), Completion("", "error:400", 0)],
    )
    notes = LLMAnnotator(backend, RuleAnnotator()).annotate_chunks(texts, doc=DOC)
    assert backend.calls == [(3, 256, 0.0), (2, 512, 0.6)]
    assert [n.annotator for n in notes] == [
        "vllm:smol-test:p1",
        "rules(fallback:vllm:smol-test:p1)",
        "vllm:smol-test:p1",
    ]
    assert notes[0].intervals == [Interval(D(2015, 3, 1), D(2015, 4, 1))]
    assert notes[1].intervals == [Interval(D(2015, 5, 5), D(2015, 5, 6))] and notes[1].flags == []
    # the LLM invented March for a passage with no date: no explicit date to contradict, within the future
    # bound
    assert notes[2].intervals == [Interval(D(2015, 3, 1), D(2015, 4, 1))]


def test_nonsense_intervals_become_flags_and_rule_dates_stay() -> None:
    backend = ScriptedBackend(
        [
            ok(
                _answer(
                    _event("2400-01-01", None, "year", "made up"),
                    _event("2015-02-30", None, "day", "bad day"),
                    _event("2015-05-01", None, "month", "board meeting"),
                )
            )
        ]
    )
    note = LLMAnnotator(backend, RuleAnnotator()).annotate_chunks(
        ["The board met on 5 May 2015; in 2012 too."], doc=DOC
    )[0]
    assert note.annotator == "vllm:smol-test:p1"
    assert note.intervals == [Interval(D(2015, 5, 1), D(2015, 6, 1)), Interval(D(2012, 1, 1), D(2013, 1, 1))]
    assert note.texts[0] == "board meeting"
    assert len(note.flags) == 2
    assert "[2400-01-01T00:00:00Z, 2401-01-01T00:00:00Z)" in note.flags[0] and "'made up'" in note.flags[0]
    assert "invalid interval 2015-02-30" in note.flags[1]


def test_batches_follow_batch_size() -> None:
    backend = ScriptedBackend([ok(_answer())] * 2, [ok(_answer())] * 2, [ok(_answer())])
    notes = LLMAnnotator(backend, RuleAnnotator(), LLMPolicy(batch_size=2)).annotate_chunks(
        ["a", "b", "c", "d", "e"], doc=DOC
    )
    assert [c[0] for c in backend.calls] == [2, 2, 1] and len(notes) == 5


def test_stage1_uses_llm_time_only_without_metadata_and_when_confident() -> None:
    answer = ok('{"published": "2015-06-02", "confidence": 0.9, "abstract": "Quarterly results."}')
    doc = DocumentContext("d1", "IBM", "IBM reported results.", "End.", None)
    stage1 = LLMAnnotator(ScriptedBackend([answer]), RuleAnnotator()).annotate_document(doc)
    assert (stage1.published_at, stage1.published_at_source, stage1.abstract, stage1.annotator) == (
        D(2015, 6, 2),
        "llm",
        "Quarterly results.",
        "vllm:smol-test:p1",
    )
    with_meta = DocumentContext("d1", "IBM", "IBM reported results.", "End.", D(2015, 1, 1))
    stage1 = LLMAnnotator(ScriptedBackend([answer]), RuleAnnotator()).annotate_document(with_meta)
    assert (stage1.published_at, stage1.published_at_source) == (D(2015, 1, 1), "metadata")
    failed = LLMAnnotator(ScriptedBackend([ok("{")], [ok("{")]), RuleAnnotator()).annotate_document(with_meta)
    assert (
        failed.annotator == "rules(fallback:vllm:smol-test:p1)" and failed.abstract == "IBM reported results."
    )


def test_factory_validates_options_before_starting_anything() -> None:
    with pytest.raises(ConfigError, match="needs a model"):
        build_llm_annotator({}, fallback=RuleAnnotator())
    with pytest.raises(ConfigError, match=r"unknown vllm annotator options \['colour'\]"):
        build_llm_annotator({"model": "/m", "colour": "red"}, fallback=RuleAnnotator())
    with pytest.raises(ConfigError, match="bad vllm"):
        build_llm_annotator(
            {"model": "/m", "url": "http://127.0.0.1:9", "batch_size": "many"}, fallback=RuleAnnotator()
        )
    annotator = build_llm_annotator(
        {"model": "/m/SmolLM2", "url": "http://127.0.0.1:9", "batch_size": 4, "date_tolerance_days": 7},
        fallback=RuleAnnotator(),
    )
    assert isinstance(annotator.backend, OpenAIHTTPBackend) and annotator.name == "vllm:SmolLM2:p1"
    assert annotator.policy.batch_size == 4 and annotator.policy.date_tolerance == timedelta(days=7)


@pytest.fixture
def flaky_server():
    """A local OpenAI-style server: the first request gets 503, prompts with 'reject' get 400."""
    seen: list[dict] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            seen.append(body)
            prompt = body["messages"][-1]["content"]
            status = 503 if len(seen) == 1 else 400 if "reject" in prompt else 200
            payload = (
                {
                    "choices": [{"message": {"content": '{"events": []}'}, "finish_reason": "stop"}],
                    "usage": {"completion_tokens": 5},
                }
                if status == 200
                else {"error": "no"}
            )
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}", seen
    server.shutdown()
    server.server_close()


def test_http_backend_retries_5xx_and_returns_4xx_as_failed_answer(flaky_server) -> None:
    url, seen = flaky_server
    backend = OpenAIHTTPBackend(url, "smol", timeout_s=5, retries=3, concurrency=1)
    out = backend.generate(
        [[{"role": "user", "content": "hello"}], [{"role": "user", "content": "reject me"}]],
        schema=STAGE2_SCHEMA,
        max_tokens=32,
        temperature=0.0,
    )
    backend.close()
    assert out == [Completion('{"events": []}', "stop", 5), Completion("", "error:400", 0)]
    assert len(seen) == 3  # 503, retried 200, 400 not retried
    assert (
        seen[0]["response_format"]["json_schema"]["schema"] == STAGE2_SCHEMA and seen[0]["max_tokens"] == 32
    )
