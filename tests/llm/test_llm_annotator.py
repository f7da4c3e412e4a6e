"""The real vLLM CPU engine behind the ``vllm`` annotator: plumbing, not quality (the model is 135M).

Run in the LLM venv after ``scripts/setup_llm_cpu.sh``: ``.venv-llm/bin/python -m pytest -m llm tests/llm``.
Two engines never run at once (2 cores): the Ray actor's class-scoped fixture is torn down before the
HTTP server's starts.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

pytest.importorskip("vllm", reason="the real-engine tests run in the LLM venv (scripts/setup_llm_cpu.sh)")

from diachron.ingest.annotation.base import DocumentAnnotation, DocumentContext
from diachron.ingest.annotation.llm import (
    STAGE1_SCHEMA,
    STAGE2_SCHEMA,
    LLMAnnotator,
    LLMPolicy,
    build_llm_annotator,
    parse_stage1,
    parse_stage2,
)
from diachron.ingest.annotation.rules import RuleAnnotator
from diachron.schemas.time import Interval

pytestmark = [pytest.mark.llm, pytest.mark.timeout(400)]

MODEL = Path(os.environ.get("DIACHRON_LLM_MODEL_DIR", Path.home() / ".cache/diachron/smollm2-135m-instruct"))
ENGINE = {"max_model_len": 2048, "max_num_seqs": 8, "gpu_memory_utilization": 0.3}
PROVENANCE = "vllm:smollm2-135m-instruct:p1"
DOC = DocumentAnnotation(datetime(2015, 6, 1, tzinfo=UTC), "metadata", "IBM quarterly results.", "rules")
TEXTS = [
    "IBM closed its merger with Acme on 5 May 2015.",
    "Revenue fell 3% in the first quarter of 2015 compared with 2014.",
    "The chief executive said the company would hire 500 people next year.",
    "Shares rose after the announcement.",
]


def _conversation(text: str) -> list[dict[str, str]]:
    return [{"role": "user", "content": f"List the dated events in this passage as JSON: {text}"}]


@pytest.fixture(scope="module", autouse=True)
def model_dir() -> Path:
    if not (MODEL / "config.json").exists():
        pytest.fail(f"no converted model at {MODEL}: run scripts/setup_llm_cpu.sh")
    return MODEL


@pytest.fixture(scope="class")
def ray_annotator():
    import ray

    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    annotator = build_llm_annotator(
        {"model": str(MODEL), "num_gpus": 0, **ENGINE, "batch_size": 4}, fallback=RuleAnnotator()
    )
    yield annotator
    annotator.backend.close()
    ray.shutdown()


class TestOfflineEngineInRayActor:
    def test_batch_answers_are_schema_valid_json(self, ray_annotator) -> None:
        out = ray_annotator.backend.generate(
            [_conversation(t) for t in TEXTS], schema=STAGE2_SCHEMA, max_tokens=192, temperature=0.0
        )
        assert len(out) == 4 and all(c.tokens > 0 for c in out)
        finished = [c for c in out if c.finish_reason == "stop"]
        assert finished, [c.text for c in out]
        for c in finished:  # guided decoding: every finished answer parses under the schema
            events = parse_stage2(c.text)
            assert all(e.interval is None or isinstance(e.interval, Interval) for e in events)

    def test_stage1_answer_parses(self, ray_annotator) -> None:
        doc = DocumentContext(
            "d1",
            "IBM results",
            "ARMONK, N.Y., 20 July 2015 -- IBM reported revenue of $20.8 billion for the second quarter.",
            "Contact: press office.",
            None,
        )
        stage1 = ray_annotator.annotate_document(doc)
        assert stage1.annotator in (PROVENANCE, f"rules(fallback:{PROVENANCE})")
        if stage1.annotator == PROVENANCE:
            assert stage1.abstract and stage1.published_at_source in ("llm", "rules", "unknown")
        raw = ray_annotator.backend.generate(
            [[{"role": "user", "content": "When was this published? " + doc.first_segment}]],
            schema=STAGE1_SCHEMA,
            max_tokens=160,
            temperature=0.0,
        )[0]
        if raw.finish_reason == "stop":
            assert 0 <= parse_stage1(raw.text).confidence <= 1

    def test_chunks_are_batched_checked_and_attributed(self, ray_annotator) -> None:
        annotator = LLMAnnotator(
            ray_annotator.backend, RuleAnnotator(), LLMPolicy(batch_size=2, max_tokens_chunk=160)
        )
        notes = annotator.annotate_chunks(TEXTS, doc=DOC)
        assert len(notes) == 4
        assert 4 <= annotator.stats["requests"] <= 8  # each chunk once, the unusable ones once more
        rules = RuleAnnotator().annotate_chunks(TEXTS, doc=DOC)
        for note, rule in zip(notes, rules, strict=True):
            assert note.annotator in (PROVENANCE, f"rules(fallback:{PROVENANCE})")
            assert all(
                any(i.overlaps(r) for i in note.intervals) for r in rule.intervals
            )  # written dates stay
            assert all(
                isinstance(i, Interval) and (i.start is None or i.end is None or i.start < i.end)
                for i in note.intervals
            )
            assert len(note.texts) == len(note.intervals)

    def test_truncation_retries_once_then_falls_back_with_provenance(self, ray_annotator) -> None:
        tiny = LLMAnnotator(ray_annotator.backend, RuleAnnotator(), LLMPolicy(max_tokens_chunk=3))
        notes = tiny.annotate_chunks(TEXTS[:2], doc=DOC)
        assert tiny.stats["requests"] == 4  # 2 tries x 2 chunks: 3 then 6 tokens cannot close the JSON
        assert [n.annotator for n in notes] == [f"rules(fallback:{PROVENANCE})"] * 2
        assert notes[0].intervals == [
            Interval(datetime(2015, 5, 5, tzinfo=UTC), datetime(2015, 5, 6, tzinfo=UTC))
        ]
        assert tiny.stats["fallbacks"] == 2

    def test_out_of_bound_intervals_become_flags(self, ray_annotator) -> None:
        # a policy under which every dated event is nonsense: no interval may last longer than 0 s. Each
        # LLM interval must then leave the chunk as a flag (a quarantine row); only rule dates remain.
        strict = LLMAnnotator(ray_annotator.backend, RuleAnnotator(), LLMPolicy(max_span=timedelta(0)))
        notes = strict.annotate_chunks(TEXTS, doc=DOC)
        rules = RuleAnnotator().annotate_chunks(TEXTS, doc=DOC)
        for note, rule in zip(notes, rules, strict=True):
            assert note.intervals == rule.intervals  # only the rule tagger's dates remain
            assert all(f.startswith(f"{PROVENANCE}: ") for f in note.flags)
        assert sum(len(n.flags) for n in notes if n.annotator == PROVENANCE) >= 1


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="class")
def server_url(tmp_path_factory):
    import httpx

    port = _free_port()
    log = tmp_path_factory.mktemp("vllm") / "server.log"
    cmd = [
        sys.executable,
        "-m",
        "vllm.entrypoints.openai.api_server",
        "--model",
        str(MODEL),
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--served-model-name",
        "smol",
        "--dtype",
        "bfloat16",
        "--enforce-eager",
        "--max-model-len",
        "2048",
        "--max-num-seqs",
        "8",
        "--gpu-memory-utilization",
        "0.3",
    ]
    with log.open("w") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 240
        while True:
            if proc.poll() is not None:
                pytest.fail(f"vLLM server exited {proc.returncode}: {log.read_text()[-2000:]}")
            try:
                if httpx.get(f"{url}/health", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"vLLM server not healthy in 240 s: {log.read_text()[-2000:]}")
            time.sleep(2)
        yield url
    finally:
        os.killpg(proc.pid, 15)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, 9)
            proc.wait(timeout=10)


class TestOpenAICompatibleServer:
    def test_http_backend_annotates_through_the_server(self, server_url) -> None:
        annotator = build_llm_annotator(
            {
                "model": str(MODEL),
                "url": server_url,
                "served_model": "smol",
                "timeout_s": 120,
                "batch_size": 4,
            },
            fallback=RuleAnnotator(),
        )
        raw = annotator.backend.generate(
            [_conversation(t) for t in TEXTS[:2]], schema=STAGE2_SCHEMA, max_tokens=192, temperature=0.0
        )
        assert all(c.tokens > 0 for c in raw)
        for c in raw:
            if c.finish_reason == "stop":
                parse_stage2(c.text)
        notes = annotator.annotate_chunks(TEXTS[:2], doc=DOC)
        assert [n.annotator.endswith(PROVENANCE) or n.annotator == PROVENANCE for n in notes] == [True] * 2
        assert any(n.annotator == PROVENANCE for n in notes)
        annotator.backend.close()
