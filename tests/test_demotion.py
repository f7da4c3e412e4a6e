"""Demoted, not dropped (issue 28): the time filter rejects a chunk only on strong evidence.

Hand-worked corpora in a real LanceDB table: chunks whose only time outside the window is weak (a date
named in passing, an inferred or inherited span) or absent come back after the in-window ones; a chunk
with a stated event or state span, or a publication day, outside the window is rejected; ``strict=True``
keeps the hard filter. The same answers with the time index (the planner's fast paths) as without it, and
through the ``Client`` with the real embedder and ``RankingWeights``.
"""

from __future__ import annotations

import math
from datetime import UTC, datetime

import lancedb
import numpy as np
import pyarrow as pa
import pytest
from diachron.retrieval.filters import TimeFilter
from diachron.retrieval.search import Searcher
from diachron.retrieval.weights import RankingWeights
from diachron.schemas.errors import ConfigError
from diachron.schemas.records import ChunkRecord, arrow_schema
from diachron.schemas.time import Interval

pytestmark = pytest.mark.integration


def t(year: int) -> datetime:
    return datetime(year, 1, 1, tzinfo=UTC)


def _iv(start: int, end: int | None, kind: str = "event", provenance: str | None = None) -> dict:
    return {
        "start": t(start),
        "end": t(end) if end else None,
        "granularity": "year",
        "text": None,
        "kind": kind,
        "provenance": provenance,
    }


def _row(chunk_id: str, intervals: list[dict], vector: list[float], text: str | None = None) -> dict:
    starts = [iv["start"] for iv in intervals]
    ends = [iv["end"] for iv in intervals]
    return {
        "chunk_id": chunk_id,
        "doc_id": chunk_id,
        "series_id": chunk_id,
        "seq": 0,
        "text": text or chunk_id,
        "token_count": 1,
        "published_at": None,
        "intervals": intervals,
        "event_start": min(starts) if starts and None not in starts else None,
        "event_end": max(ends) if ends and None not in ends else None,
        "time_source": "event" if intervals else "unknown",
        "time_status": "known" if intervals else "unknown",
        "valid_from": None,
        "valid_until": None,
        "annotator": "test",
        "embedder": "test",
        "recorded_at": t(2026),
        "run_id": "r",
        "vector": vector,
    }


def _unit(cosine: float) -> list[float]:
    """A unit vector whose cosine with ``[1, 0, 0, 0]`` is ``cosine``."""
    return [cosine, math.sqrt(1 - cosine**2), 0.0, 0.0]


#: (chunk id, intervals, cosine with the query); the window is the year 2000.
CORPUS = [
    ("in-window-event", [_iv(2000, 2001)], 0.8),
    ("in-window-mention", [_iv(2000, 2001, "mention")], 0.6),
    ("mention-1990", [_iv(1990, 1991, "mention")], 0.99),  # weak: demoted
    ("inherited-1980", [_iv(1980, 1981, "inherited", "inherited:section")], 0.95),  # weak: demoted
    ("inferred-1985", [_iv(1985, 1990, "state", "inferred:open")], 0.9),  # weak: demoted
    ("undated", [], 0.5),  # unknown time: demoted
    ("stated-1990", [_iv(1990, 1991)], 1.0),  # strong: rejected
    ("state-1970s", [_iv(1970, 1980, "state")], 0.98),  # strong: rejected
    ("published-1995", [_iv(1995, 1996, "event", "published")], 0.97),  # metadata: rejected
]
WINDOW = (Interval(t(2000), t(2001)),)
QUERY = np.array([1, 0, 0, 0], dtype=np.float32)
# Admitted tier by rank (temporal 0.1): event 0.8 + 0.1 x 1.0 = 0.9; mention 0.6 + 0.1 x 0.25 = 0.625.
ADMITTED = ["in-window-event", "in-window-mention"]
# Lower tier by cosine (each + 0.1 x UNKNOWN_FIT = 0.01): 0.99, 0.95, 0.9, 0.5.
DEMOTED = ["mention-1990", "inherited-1980", "inferred-1985", "undated"]


@pytest.fixture(params=["no time index", "time index"])
def table(request, tmp_path):
    from diachron.ingest.time_index import build_time_index
    from diachron.schemas.time_index import index_dir

    rows = [_row(cid, ivs, _unit(c)) for cid, ivs, c in CORPUS]
    tbl = lancedb.connect(str(tmp_path / "db")).create_table(
        "chunks", pa.Table.from_pylist(rows, schema=arrow_schema(ChunkRecord, dim=4))
    )
    if request.param == "time index":
        build_time_index(tbl.to_lance(), index_dir(tbl.to_lance().uri), segment_rows=4, ann_min_rows=1024)
    return tbl


def _ids(hits) -> list[str]:
    return [h.row["chunk_id"] for h in hits]


def test_an_infinite_demotion_returns_the_demoted_after_the_in_window_chunks(table) -> None:
    searcher = Searcher(table, weights=RankingWeights(context=0.0, lexical=0.0, demotion=math.inf))
    assert (searcher.time_index is not None) == (searcher.plan(TimeFilter(event=WINDOW))[0].layout != "take")
    hits = searcher.search(QUERY, TimeFilter(event=WINDOW, admit_unknown=True), k=10)
    assert _ids(hits) == ADMITTED + DEMOTED  # the strong out-of-window chunks are rejected
    assert [round(h.focus, 3) for h in hits] == [1.0, 0.25, 0.1, 0.1, 0.1, 0.1]
    assert _ids(searcher.search(QUERY, TimeFilter(event=WINDOW, admit_unknown=True), k=3)) == [
        *ADMITTED,
        "mention-1990",
    ]


def test_a_finite_demotion_ranks_the_tiers_together_by_score(table) -> None:
    # demotion 0.2: mention-1990 0.99 + 0.01 - 0.2 = 0.80 < in-window-event 0.9, > in-window-mention 0.625
    searcher = Searcher(table, weights=RankingWeights(context=0.0, lexical=0.0, demotion=0.2))
    hits = searcher.search(QUERY, TimeFilter(event=WINDOW, admit_unknown=True), k=10)
    assert _ids(hits) == ["in-window-event", "mention-1990", "inherited-1980", "inferred-1985"] + [
        "in-window-mention",
        "undated",
    ]


def test_strict_keeps_the_hard_filter(table) -> None:
    searcher = Searcher(table, weights=RankingWeights(context=0.0, lexical=0.0, demotion=math.inf))
    assert _ids(searcher.search(QUERY, TimeFilter(event=WINDOW), k=10)) == ADMITTED
    assert searcher.count(TimeFilter(event=WINDOW)) == 2
    examples = searcher.outside_examples(QUERY, TimeFilter(event=WINDOW, admit_unknown=True), n=3)
    assert [e["chunk_id"] for e in examples] == ["stated-1990", "state-1970s", "published-1995"]


def test_ranking_weights_validate_and_override() -> None:
    weights = RankingWeights()
    assert (weights.temporal, weights.context, weights.lexical, weights.demotion) == (
        0.1,
        0.75,
        0.1,
        math.inf,
    )
    assert (weights.rerank_depth(10), weights.rerank_depth(30)) == (50, 90)
    assert (weights.coverage_depth(10), weights.current_depth(15)) == (100, 30)
    assert weights.override(temporal=None) is weights
    assert weights.override(lexical=0.0).lexical == 0.0
    for bad in ({"temporal": -0.1}, {"context": float("nan")}, {"rerank_min": 0}, {"lexical": "x"}):
        with pytest.raises(ConfigError, match=next(iter(bad))):
            RankingWeights(**bad)  # type: ignore[arg-type]


def test_the_demoted_tier_still_obeys_as_of(table) -> None:
    searcher = Searcher(table, weights=RankingWeights(context=0.0, lexical=0.0, demotion=math.inf))
    before = datetime(2025, 1, 1, tzinfo=UTC)  # every row was recorded in 2026
    assert searcher.search(QUERY, TimeFilter(event=WINDOW, admit_unknown=True, as_of=before), k=10) == []


def _document(doc_id: str, text: str) -> dict:
    return {
        "doc_id": doc_id,
        "series_id": doc_id,
        "title": doc_id,
        "text": text,
        "content_sha256": doc_id,
        "published_at": None,
        "published_at_source": "unknown",
        "source_timezone": None,
        "abstract": "",
        "version": None,
        "supersedes": None,
        "relation": None,
        "valid_from": None,
        "valid_until": None,
        "source_uri": "test",
        "metadata_json": "{}",
        "annotator": "test",
        "recorded_at": t(2026),
        "run_id": "r",
    }


def test_the_client_demotes_through_ranking_weights_with_the_real_embedder(tmp_path) -> None:
    from diachron.ingest.embedding import Embedder
    from diachron.retrieval.client import Client
    from diachron.schemas.records import DocumentRecord

    embedder = Embedder(None, threads=1)
    corpus = [  # (chunk id, text, intervals)
        ("opened-2000", "The mayor opened the river bridge in 2000.", [_iv(2000, 2001)]),
        ("elected-1990", "The mayor, first elected in 1990, opened a bridge.", [_iv(1990, 1991, "mention")]),
        ("opened-1990", "The mayor opened the old bridge in 1990.", [_iv(1990, 1991)]),
    ]
    vectors = embedder.embed([text for _, text, _ in corpus])
    rows = [_row(cid, ivs, v.tolist(), text) for (cid, text, ivs), v in zip(corpus, vectors, strict=True)]
    db = lancedb.connect(str(tmp_path / "db"))
    db.create_table("chunks", pa.Table.from_pylist(rows, schema=arrow_schema(ChunkRecord, dim=embedder.dim)))
    docs = [_document(cid, text) for cid, text, _ in corpus]
    db.create_table("documents", pa.Table.from_pylist(docs, schema=arrow_schema(DocumentRecord)))
    client = Client(str(tmp_path / "db"), embedder=embedder, weights=RankingWeights(demotion=math.inf))
    question, now = "Which bridge did the mayor open in 2000?", datetime(2026, 1, 1, tzinfo=UTC)

    def ranked(**kw) -> list[str]:
        result = client.search(question, k=5, now=now, chronological=False, **kw)
        return [e.chunk_id for e in result.evidence]

    assert ranked() == ["opened-2000", "elected-1990"]  # the passing mention of 1990 is demoted, not dropped
    assert ranked(strict=True) == ["opened-2000"]
    assert client.weights.demotion == math.inf and client.temporal_weight == 0.1
