"""The real vLLM CPU engine behind the ``vllm`` annotator: plumbing, not quality (the model is 135M).

Run in the LLM venv after ``scripts/setup_llm_cpu.sh``: ``.venv-llm/bin/python -m pytest -m llm tests/llm``.
Two engines never run at once (2 cores): each Ray Data LLM processor run stops its engine actor at its end,
and the local Ray is shut down before the HTTP server starts.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest

pytest.importorskip("vllm", reason="the real-engine tests run in the LLM venv (scripts/setup_llm_cpu.sh)")

from diachron.ingest.annotation.base import DocumentAnnotation
from diachron.ingest.annotation.llm import (
    STAGE1_SCHEMA,
    STAGE2_SCHEMA,
    build_llm_annotator,
    parse_stage1,
    parse_stage2,
)
from diachron.ingest.annotation.rules import RuleAnnotator
from diachron.schemas.time import Interval
from diachron.temporal.llm_backends import build_backend

pytestmark = [pytest.mark.llm, pytest.mark.timeout(1800)]

MODEL = Path(os.environ.get("DIACHRON_LLM_MODEL_DIR", Path.home() / ".cache/diachron/smollm2-135m-instruct"))
ENGINE = {"max_model_len": 2048, "max_num_seqs": 8, "gpu_memory_utilization": 0.15}
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
def local_ray():
    import ray

    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield
    ray.shutdown()


class TestRayDataLLMProcessor:
    """vLLM through ``ray.data.llm`` (``vLLMEngineProcessorConfig`` + ``build_processor``), CPU build."""

    def test_one_processor_run_answers_a_batch_with_schema_valid_json(self, local_ray) -> None:
        backend = build_backend({"model": str(MODEL), **ENGINE})
        out = backend.generate(
            [_conversation(t) for t in TEXTS], schema=STAGE2_SCHEMA, max_tokens=192, temperature=0.0
        )
        assert len(out) == 4 and all(c.tokens > 0 for c in out)
        finished = [c for c in out if c.finish_reason == "stop"]
        assert finished, [c.text for c in out]
        for c in finished:  # guided decoding: every finished answer parses under the schema
            events = parse_stage2(c.text)
            assert all(e.interval is None or isinstance(e.interval, Interval) for e in events)
        stage1 = backend.generate(
            [[{"role": "user", "content": "When was this published? ARMONK, 20 July 2015 -- IBM reported."}]],
            schema=STAGE1_SCHEMA,
            max_tokens=160,
            temperature=0.0,
        )[0]
        if stage1.finish_reason == "stop":
            assert 0 <= parse_stage1(stage1.text).confidence <= 1

    def test_ingest_asks_every_document_through_the_processor(self, local_ray, tmp_path) -> None:
        """A whole ``run_ingest`` with the vllm annotator: stage 1 of all documents in one processor run,
        stage 2 of all chunks in the next, the annotate actors replaying the answers."""
        import json

        import lancedb
        from diachron.ingest.pipeline import IngestConfig, run_ingest
        from diachron.ingest.stages import StageConfig

        source = tmp_path / "docs.jsonl"
        source.write_text(
            "".join(
                json.dumps({"doc_id": f"d{i}", "title": "IBM", "published_at": "2015-06-01", "text": t})
                + "\n"
                for i, t in enumerate(TEXTS)
            )
        )
        stages = StageConfig(
            annotator="vllm", annotator_options={"model": str(MODEL), **ENGINE, "batch_size": 4}
        )
        summary = run_ingest(
            [str(source)], IngestConfig(db_uri=str(tmp_path / "db"), num_cpus=2, stages=stages)
        )
        assert summary.documents_written == 4
        chunks = lancedb.connect(str(tmp_path / "db")).open_table("chunks").to_arrow().to_pylist()
        annotators = {c["annotator"] for c in chunks}
        assert annotators <= {PROVENANCE, f"rules(fallback:{PROVENANCE})"}, annotators
        assert PROVENANCE in annotators  # at least one chunk kept the model's answer
        merger = next(c for c in chunks if "Acme" in c["text"])  # the written date stays (rules cross-check)
        day = datetime(2015, 5, 5, 12, tzinfo=UTC)
        assert any(
            (iv["start"] is None or iv["start"] <= day) and (iv["end"] is None or day < iv["end"])
            for iv in merger["intervals"]
        ), merger


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
