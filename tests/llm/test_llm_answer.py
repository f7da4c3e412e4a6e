"""The answer step through the real vLLM CPU server: plumbing and the check, not quality (the model is 135M).

Run in the LLM venv after ``scripts/setup_llm_cpu.sh``: ``.venv-llm/bin/python -m pytest -m llm tests/llm``.
The server fixture is the annotator tests' (one OpenAI-compatible server on 127.0.0.1, stopped at the end).
Whatever the small model writes, the answer keeps the contract: either its reply passed the check (every
[n] exists, every date inside the cited evidence) or the deterministic answer comes back with the reason.
"""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

pytest.importorskip("vllm", reason="the real-engine tests run in the LLM venv (scripts/setup_llm_cpu.sh)")

from diachron.retrieval.answer import LLMConfig, answer, check_reply, compose
from diachron.schemas.evidence import Evidence, SearchResult, SearchTrace
from diachron.schemas.intent import Relation, TemporalIntent
from diachron.schemas.time import Granularity, Interval
from test_llm_annotator import model_dir, server_url  # noqa: F401 - the fixtures

pytestmark = [pytest.mark.llm, pytest.mark.timeout(1800)]


def _utc(*args: int) -> datetime:
    return datetime(*args, tzinfo=UTC)


def _result() -> SearchResult:
    card = Evidence(
        chunk_id="c2",
        doc_id="refund/v2",
        series_id="refund",
        title="Refund policy v2",
        text="Refund policy: customers may return goods for a refund within 30 days.",
        score=0.8,
        published_at=_utc(2024, 3, 1),
        intervals=(Interval(_utc(2024, 3, 1), _utc(2024, 3, 2), Granularity.DAY),),
        time_source="event",
        valid_from=_utc(2024, 3, 1),
        valid_until=_utc(2024, 6, 1),
        recorded_at=_utc(2024, 12, 1),
        superseded_by="refund/v3",
        rank=1,
    )
    intent = TemporalIntent(
        core_query="Which refund policy applied?",
        intervals=(Interval(_utc(2024, 4, 10), _utc(2024, 4, 11), Granularity.DAY),),
        relation=Relation.CURRENT,
        reference_time=_utc(2024, 12, 10),
        granularity=Granularity.DAY,
    )
    trace = SearchTrace(filter={"as_of": None}, candidates_after_filter=3, anchors=0, anchor_granularity=None)
    return SearchResult(intent=intent, evidence=(card,), trace=trace)


def test_the_real_model_s_answer_keeps_the_contract(server_url) -> None:  # noqa: F811 - the fixture
    result = _result()
    reply = answer(result, llm=LLMConfig(f"{server_url}/v1", "smol", timeout=300, max_tokens=120))
    assert reply.checked and reply.scope == "on 10 Apr 2024"
    if reply.source == "llm":
        assert check_reply(reply.text, result) is None and reply.reason is None
    else:
        assert reply.reason.startswith("LLM answer rejected: ") and reply.text == compose(result).text
