"""The ``retrieval`` cases of ``shared/cases/temporal_cases.jsonl`` (T10, T16, T22, T24) as tests.

Each case's records are written straight into a real LanceDB ``chunks`` table (real embeddings of their
texts) and queried through the real :class:`~diachron.retrieval.client.Client`. T24 adds 4,000 generated
deploy-checklist distractors on other days; the test first proves the case bites (an unfiltered top-10
misses the target) and then that the prefiltered search finds it. Distractor texts come from a few
templates, so identical texts share one embedding (embedding each copy again would give the same vector).
"""

from __future__ import annotations

import json
import os
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from diachron.schemas.intent import Relation
from diachron.schemas.records import ChunkRecord, arrow_schema, intervals_to_arrow
from diachron.schemas.time import Interval, parse_instant

pytestmark = pytest.mark.integration

SHARED = Path(os.environ.get("DIACHRON_SHARED") or Path(__file__).resolve().parents[2] / "shared")
RECORDED = datetime(2026, 1, 1, tzinfo=UTC)


def case(case_id: str) -> dict[str, Any]:
    for line in (SHARED / "cases/temporal_cases.jsonl").read_text(encoding="utf-8").splitlines():
        if line.strip() and json.loads(line)["id"] == case_id:
            return json.loads(line)
    raise LookupError(f"case {case_id} not in {SHARED}/cases/temporal_cases.jsonl")


@pytest.fixture(scope="module")
def embedder() -> Any:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from diachron.ingest.embedding import Embedder

    model = Embedder()
    model.warm_up()
    return model


def naive(text: str) -> datetime:
    """The source's own instant: naive stays naive (the store must read it as UTC), offsets are kept."""
    return datetime.fromisoformat(text)


def chunk_rows(records: list[dict[str, Any]], vectors: np.ndarray, embedder_id: str) -> list[dict[str, Any]]:
    rows = []
    for rec, vec in zip(records, vectors, strict=True):
        start, end = naive(rec["event_interval"]["start"]), naive(rec["event_interval"]["end"])
        rows.append(
            {
                "chunk_id": rec["id"],
                "doc_id": f"doc-{rec['id']}",
                "series_id": f"doc-{rec['id']}",
                "seq": 0,
                "text": rec["text"],
                "token_count": len(rec["text"].split()),
                "published_at": None,
                "intervals": intervals_to_arrow([Interval(start, end)]),
                "event_start": start,
                "event_end": end,
                "time_source": "event",
                "time_status": "known",
                "valid_from": None,
                "valid_until": None,
                "annotator": "case",
                "embedder": embedder_id,
                "recorded_at": None,
                "run_id": "cases",
                "vector": vec.tolist(),
            }
        )
    return rows


def build_store(
    path: Path, records: list[dict[str, Any]], embedder: Any, vectors: np.ndarray | None = None
) -> Any:
    from diachron.ingest.store import Store
    from diachron.retrieval.client import Client

    store = Store(str(path), dim=embedder.dim)
    vectors = embedder.embed([r["text"] for r in records]) if vectors is None else vectors
    rows = chunk_rows(records, vectors, embedder.spec.id)
    store.insert_new(
        "chunks", pa.Table.from_pylist(rows, schema=arrow_schema(ChunkRecord, dim=embedder.dim)), now=RECORDED
    )
    store.table("documents")
    return Client(str(path), embedder=embedder)


def with_text(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{**r, "text": r.get("text") or f"Record {r['id']}: an event was logged."} for r in records]


def query_intent(client: Any, query: dict[str, Any], reference: datetime) -> Any:
    """The case's own interval; relation from its open side (start open: before, end open: after)."""
    from diachron.retrieval.client import with_intervals

    iv = Interval.from_dict(query["interval"])
    relation = Relation.BEFORE if iv.start is None else Relation.AFTER if iv.end is None else Relation.AT
    return with_intervals(client.parse(query["text"], now=reference), [iv], relation)


def returned(result: Any) -> set[str]:
    return {e.chunk_id for e in result.evidence}


def check(expected: dict[str, Any], got: set[str]) -> None:
    assert set(expected.get("must_return", ())) <= got
    assert not set(expected.get("must_not_return", ())) & got


def test_t10_boundary_instant_is_inclusive_at_start_exclusive_at_end(tmp_path: Path, embedder: Any) -> None:
    c = case("T10")
    client = build_store(tmp_path / "db", with_text(c["input"]["records"]), embedder)
    for query, expected in zip(c["input"]["queries"], c["expected"]["per_query"], strict=True):
        check(expected, returned(client.search_intent(query_intent(client, query, RECORDED), k=10)))


@pytest.fixture
def new_york_clock(monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.setenv("TZ", "America/New_York")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


def test_t16_naive_source_timestamps_mean_utc_under_a_local_zone(
    tmp_path: Path, embedder: Any, new_york_clock: Any
) -> None:
    c = case("T16")
    assert time.localtime(0).tm_zone in ("EST", "EDT")  # the process's zone really is New York
    client = build_store(tmp_path / "db", with_text(c["input"]["records"]), embedder)
    (query,), (expected,) = c["input"]["queries"], c["expected"]["per_query"]
    check(expected, returned(client.search_intent(query_intent(client, query, RECORDED), k=10)))
    naive_point = with_intervals_naive(client, query["text"], datetime(2024, 7, 1, 10, 0))
    check(expected, returned(client.search_intent(naive_point, k=10)))
    miss = with_intervals_naive(client, query["text"], datetime(2024, 7, 1, 11, 0))  # end is exclusive
    assert returned(client.search_intent(miss, k=10)) == set()


def with_intervals_naive(client: Any, text: str, instant: datetime) -> Any:
    from diachron.retrieval.client import with_intervals

    return with_intervals(client.parse(text, now=RECORDED), [Interval.at(instant)], Relation.AT)


def test_t22_up_to_now_is_bound_to_the_reference_time(tmp_path: Path, embedder: Any) -> None:
    c = case("T22")
    client = build_store(tmp_path / "db", with_text(c["input"]["records"]), embedder)
    (query,), (expected,) = c["input"]["queries"], c["expected"]["per_query"]
    clock = parse_instant(query["clock"])
    result = client.search(query["text"], k=10, now=clock)
    assert result.intent.relation.value == query["relation"]
    assert [(i.start, i.end) for i in result.intent.intervals] == [(None, clock)]
    check(expected, returned(result))


TEMPLATES = [
    "deploy checklist",
    "Deploy checklist.",
    "deploy checklist notes",
    "Deploy checklist:",
    "The deploy checklist",
    "deploy checklist items",
    "Deploy checklist notes.",
    "our deploy checklist",
    "deploy checklist update",
    "deploy checklist review",
    "Deploy checklist (draft)",
    "deploy checklists",
]


def test_t24_narrow_window_is_prefiltered_not_post_filtered(tmp_path: Path, embedder: Any) -> None:
    c = case("T24")
    (target,), (query,), (expected,) = (
        c["input"]["records"],
        c["input"]["queries"],
        c["expected"]["per_query"],
    )
    window = Interval.from_dict(query["interval"])
    q = embedder.embed([query["text"]])[0]
    texts = [target["text"], *TEMPLATES]
    vectors = embedder.embed(texts)
    target_score = float(vectors[0] @ q)
    closer = [(t, v) for t, v in zip(TEMPLATES, vectors[1:], strict=True) if float(v @ q) > target_score]
    assert len(closer) >= 5, "the templates must be closer to the query than the target"
    records, rows_vectors = [{**target, "id": "target"}], [vectors[0]]
    day, n = datetime(2015, 1, 1, 14, tzinfo=UTC), 0
    while n < 4000:
        if not window.contains(day):
            text, vec = closer[n % len(closer)]
            records.append(
                {
                    "id": f"d{n}",
                    "text": text,
                    "event_interval": {
                        "start": day.isoformat(),
                        "end": (day + timedelta(hours=1)).isoformat(),
                    },
                }
            )
            rows_vectors.append(vec)
            n += 1
        day += timedelta(days=1)
    client = build_store(tmp_path / "db", records, embedder, vectors=np.stack(rows_vectors))
    assert client.chunks.count_rows() == 4001
    unfiltered = client.naive_search(query["text"], k=query["k"])
    assert "target" not in returned(unfiltered), "the case must bite: unfiltered top-10 misses the target"
    result = client.search_intent(
        query_intent(client, query, parse_instant(c["reference_time"])), k=query["k"]
    )
    check(expected, returned(result))
    assert result.trace.candidates_after_filter == 1
