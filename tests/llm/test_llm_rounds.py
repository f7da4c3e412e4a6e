"""Ray Data LLM rounds without vLLM (main venv, CI): which requests each round gathers, and the replay.

The engine here answers from a script keyed by the request's schema and budget (it stands in for the
processor run; the real one is in ``test_llm_annotator.py``). Ray Data, the chunker, the rule annotator
and :func:`~diachron.ingest.annotation.document.annotate_document` are the real ones.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest
from diachron.ingest.annotation.llm import STAGE1_SCHEMA, precompute_answers
from diachron.temporal.llm_backends import Completion, ReplayBackend, build_backend, request_key

pytestmark = pytest.mark.timeout(900)

MODEL = "/models/smol-test"
DOCS = [
    {
        "doc_id": "a",
        "title": "IBM and Acme",
        "text": "IBM closed its merger with Acme on 5 May 2015. Revenue fell 3% in the first quarter.",
        "published_at": datetime(2015, 6, 1, tzinfo=UTC),
    },
    {
        "doc_id": "b",
        "title": "Board",
        "text": "The board met on 3 March 2014 and appointed a new chair.",
        "published_at": None,
    },
]
STAGE1 = json.dumps({"published": "2014-03-04", "confidence": 0.9, "abstract": "A short summary."})
EVENT = json.dumps(
    {
        "events": [
            {"description": "dated", "entities": [], "start": "2015-05-05", "end": None, "granularity": "day"}
        ]
    }
)


class ScriptedEngine:
    """Stage 1: a valid answer. Stage 2: the first try at doc a's text is truncated, its retry is valid."""

    def __init__(self) -> None:
        self.rounds: list[list[tuple[str, int, float]]] = []

    def answer(self, requests) -> dict[str, Completion]:
        rows = requests.take_all()
        self.rounds.append(
            sorted(
                (
                    "stage1"
                    if json.loads(r["sampling_params"]["structured_outputs"]["json"]) == STAGE1_SCHEMA
                    else "stage2",
                    r["budget"],
                    r["sampling_params"]["temperature"],
                )
                for r in rows
            )
        )
        out = {}
        for r in rows:
            stage1 = json.loads(r["sampling_params"]["structured_outputs"]["json"]) == STAGE1_SCHEMA
            truncated = (
                not stage1
                and "Acme" in r["messages"][-1]["content"]
                and r["sampling_params"]["temperature"] == 0
            )
            text = STAGE1 if stage1 else ('{"events": [' if truncated else EVENT)
            out[r["key"]] = Completion(text, "length" if truncated else "stop", 7)
        return out


@pytest.fixture(scope="module")
def local_ray():
    import ray

    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield
    ray.shutdown()


def test_rounds_ask_stage1_then_stage2_then_retries_and_replay_answers_them(local_ray) -> None:
    import ray
    import ray.data
    from diachron.ingest.annotation.document import annotate_document, build_chunker
    from diachron.ingest.stages import StageConfig, build_annotator

    config = StageConfig(annotator="vllm", annotator_options={"model": MODEL, "max_tokens_chunk": 100})
    engine = ScriptedEngine()
    options = precompute_answers(ray.data.from_items(DOCS), config, engine=engine)
    # round 1: stage 1 of both documents; round 2: stage 2 of each chunk (one chunk each: short texts);
    # round 3: the one retry (twice the budget, the retry temperature); round 4 finds nothing to ask
    assert engine.rounds == [
        [("stage1", 160, 0.0), ("stage1", 160, 0.0)],
        [("stage2", 100, 0.0), ("stage2", 100, 0.0)],
        [("stage2", 200, 0.6)],
    ]
    answers = ray.get(options["answers"])
    assert len(answers) == 5 and options["model"] == MODEL
    annotator = build_annotator(StageConfig(annotator="vllm", annotator_options=options))
    assert isinstance(annotator.backend, ReplayBackend) and not annotator.backend.record
    chunker = build_chunker()
    for doc in DOCS:
        done = annotate_document(
            doc["text"],
            doc_id=doc["doc_id"],
            title=doc["title"],
            published_at=doc["published_at"],
            annotator=annotator,
            chunker=chunker,
        )
        assert done.stage1.annotator == "vllm:smol-test:p1" and done.stage1.abstract == "A short summary."
        assert [n.annotator for n in done.notes] == ["vllm:smol-test:p1"]
    # metadata time wins over the LLM's; without metadata the LLM's (confident, near the dateline) is used
    assert annotate_document(
        **_kw(DOCS[1]), annotator=annotator, chunker=chunker
    ).stage1.published_at == datetime(2014, 3, 4, tzinfo=UTC)


def _kw(doc: dict) -> dict:
    return {
        "text": doc["text"],
        "doc_id": doc["doc_id"],
        "title": doc["title"],
        "published_at": doc["published_at"],
    }


def test_replay_records_unknown_requests_and_keys_are_exact() -> None:
    messages = [{"role": "user", "content": "When?"}]
    key = request_key(messages, STAGE1_SCHEMA, 160, 0.0)
    assert key != request_key(messages, STAGE1_SCHEMA, 320, 0.6) and len(key) == 64
    known = Completion(STAGE1, "stop", 9)
    replay = ReplayBackend({key: known}, model_name=MODEL, record=True)
    other = [{"role": "user", "content": "Where?"}]
    out = replay.generate([messages, other], schema=STAGE1_SCHEMA, max_tokens=160, temperature=0.0)
    assert out == [known, Completion("", "pending", 0)]
    (row,) = replay.missing.values()
    assert row["messages"] == other and row["budget"] == 160
    assert row["sampling_params"] == {
        "max_tokens": 160,
        "temperature": 0.0,
        "structured_outputs": {"json": json.dumps(STAGE1_SCHEMA)},
    }
    strict = ReplayBackend({}, model_name=MODEL)
    assert strict.generate([other], schema=STAGE1_SCHEMA, max_tokens=160, temperature=0.0) == [
        Completion("", "missing", 0)
    ]


def test_build_backend_picks_the_ray_data_llm_processor_for_cpu_and_gpu() -> None:
    cpu = build_backend({"model": MODEL, "max_num_seqs": 8, "gpu_memory_utilization": 0.3})
    config = cpu.processor_config()
    assert config.model_source == MODEL and config.placement_group_config["bundles"][0]["CPU"] == 1
    assert not config.placement_group_config["bundles"][0].get("GPU")
    assert config.engine_kwargs["dtype"] == "bfloat16" and config.engine_kwargs["enforce_eager"] is True
    assert config.engine_kwargs["max_num_seqs"] == 8
    gpu = build_backend({"model": MODEL, "num_gpus": 1, "concurrency": 2}).processor_config()
    assert gpu.placement_group_config["bundles"][0]["GPU"] == 1 and gpu.concurrency == 2
    assert gpu.engine_kwargs["dtype"] == "auto"
