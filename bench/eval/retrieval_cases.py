"""The ``retrieval`` temporal cases through a real LanceDB ``chunks`` table and the real :class:`Client`.

Each case's records become chunk rows (event interval -> ``intervals`` and hull, naive timestamps read
as UTC, as ingest does) in a fresh database under ``workdir``; each query runs through
:meth:`Client.search_intent` with its explicit interval (or through the intent parser with its clock and
relation words) and its ``must_return`` / ``must_not_return`` ids are checked. Where the case asks for
distractors (T24), they are generated and the case is shown to bite: an unfiltered top-k must miss the
target. Distractor rows share one embedding of their text (identical texts embed identically).
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from datetime import timedelta
from pathlib import Path
from typing import Any

import pyarrow as pa
from diachron.ingest.embedding import Embedder
from diachron.schemas.intent import Relation, TemporalIntent
from diachron.schemas.records import (
    ChunkRecord,
    DocumentRecord,
    arrow_schema,
    intervals_to_arrow,
)
from diachron.schemas.time import Granularity, Interval, parse_instant

__all__ = ["run_retrieval_case"]

_DISTRACTORS = 4000
_DISTRACTOR_TEXT = "deploy checklist notes"


@contextmanager
def _process_tz(zone: str | None) -> Iterator[None]:
    """Run with the process time zone ``zone`` (the case's ``environment.TZ``), restored afterwards."""
    old = os.environ.get("TZ")
    if zone:
        os.environ["TZ"] = zone
        time.tzset()
    try:
        yield
    finally:
        if zone:
            if old is None:
                os.environ.pop("TZ", None)
            else:
                os.environ["TZ"] = old
            time.tzset()


def _interval(data: dict[str, Any]) -> Interval:
    return Interval(
        parse_instant(data["start"]) if data.get("start") else None,
        parse_instant(data["end"]) if data.get("end") else None,
    )


def _row(
    chunk_id: str, text: str, interval: Interval, vector: list[float], embedder_id: str
) -> dict[str, Any]:
    return {
        "chunk_id": chunk_id,
        "doc_id": chunk_id,
        "series_id": chunk_id,
        "seq": 0,
        "text": text,
        "token_count": len(text.split()),
        "published_at": interval.start,
        "intervals": intervals_to_arrow([interval]),
        "event_start": interval.start,
        "event_end": interval.end,
        "time_source": "event",
        "time_status": "known",
        "valid_from": None,
        "valid_until": None,
        "annotator": "case",
        "embedder": embedder_id,
        "recorded_at": interval.start or parse_instant("2000-01-01"),
        "run_id": "case",
        "vector": vector,
    }


def _rows(case: dict[str, Any], embedder: Embedder) -> list[dict[str, Any]]:
    records = case["input"]["records"]
    texts = [r.get("text") or f"record {r['id']}" for r in records]
    vectors = embedder.embed(texts)
    rows = [
        _row(r["id"], t, _interval(r["event_interval"]), v.tolist(), embedder.spec.id)
        for r, t, v in zip(records, texts, vectors, strict=True)
    ]
    if case["input"].get("distractors"):
        target = _interval(records[0]["event_interval"])
        vector = embedder.embed([_DISTRACTOR_TEXT])[0].tolist()
        day = target.start - timedelta(days=_DISTRACTORS // 2)  # type: ignore[operator]
        for n in range(_DISTRACTORS + 1):
            start = day + timedelta(days=n)
            if start.date() != target.start.date():  # type: ignore[union-attr]
                rows.append(
                    _row(
                        f"distractor-{n}",
                        _DISTRACTOR_TEXT,
                        Interval(start, start + timedelta(hours=1)),
                        vector,
                        embedder.spec.id,
                    )
                )
    return rows


def _intent(query: dict[str, Any], client: Any, reference: str | None) -> TemporalIntent:
    clock = parse_instant(query.get("clock") or reference or "2000-01-01T00:00:00Z")
    intent = client.parse(query["text"], now=clock)
    if "interval" in query:
        return replace(
            intent,
            intervals=(_interval(query["interval"]),),
            relation=Relation.BETWEEN,
            granularity=Granularity.INSTANT,
        )
    return intent


def run_retrieval_case(case: dict[str, Any], embedder: Embedder, workdir: Path) -> tuple[bool, str]:
    """``(passed, observed)`` for one ``retrieval`` case; ``observed`` lists the ids returned per query.

    Raises:
        KeyError: the case lacks ``records`` or ``queries``.
    """
    import lancedb
    from diachron.retrieval.client import Client

    db_dir = workdir / case["id"]
    with _process_tz(case["input"].get("environment", {}).get("TZ")):
        db = lancedb.connect(str(db_dir))
        table = pa.Table.from_pylist(
            _rows(case, embedder), schema=arrow_schema(ChunkRecord, dim=embedder.dim)
        )
        db.create_table("chunks", table, mode="overwrite")
        db.create_table("documents", schema=arrow_schema(DocumentRecord), mode="overwrite")  # empty: no cards
        client = Client(str(db_dir), embedder=embedder)
        passed, observed = True, []
        for query, want in zip(case["input"]["queries"], case["expected"]["per_query"], strict=True):
            k = query.get("k", 10)
            intent = _intent(query, client, case.get("reference_time"))
            got = {e.doc_id for e in client.search_intent(intent, k=k).evidence}
            passed &= (
                set(want.get("must_return", [])) <= got and not set(want.get("must_not_return", [])) & got
            )
            if case["input"].get("distractors"):
                unfiltered = {
                    e.doc_id for e in client.search_intent(intent, k=k, use_time_filter=False).evidence
                }
                passed &= not set(want.get("must_return", [])) <= unfiltered  # the case bites
                observed.append(
                    f"unfiltered top-{k} has target: {bool(set(want['must_return']) <= unfiltered)}"
                )
            shown = sorted(got)[:5] + (["…"] if len(got) > 5 else [])
            observed.append(f"{query['text']!r} -> {shown}")
    return bool(passed), "; ".join(observed)
