"""The evaluation's metric functions, coverage-aware top-k and split rule, on hand-worked examples."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from diachron.retrieval.coverage import coverage_top_k
from diachron.retrieval.search import Hit
from diachron.schemas.records import intervals_to_arrow
from diachron.schemas.time import Granularity, Interval, period

from bench.eval.data import split_of
from bench.eval.metrics import (
    Item,
    endpoint_share,
    in_window_precision,
    months_of,
    recall_at_k,
    temporal_coverage,
)


def _m(year: int, month: int) -> datetime:
    return datetime(year, month, 1, tzinfo=UTC)


def _item(doc: str, year: int, month: int) -> Item:
    return Item(doc, (period(_m(year, month), Granularity.MONTH),), _m(year, month))


WINDOW = Interval(_m(2010, 1), _m(2010, 6))  # Jan..May 2010: 5 months
GOLD = {f"d{m}" for m in range(1, 6)}


def test_months_of_window() -> None:
    assert months_of(WINDOW) == [_m(2010, m) for m in range(1, 6)]


def test_recall_divides_by_k_when_gold_is_larger() -> None:
    retrieved = [_item("d1", 2010, 1), _item("x", 2011, 1), _item("d3", 2010, 3)]
    assert recall_at_k(retrieved, GOLD, 2) == 0.5  # 1 of min(2, 5)
    assert recall_at_k(retrieved, GOLD, 3) == pytest.approx(2 / 3)  # 2 of min(3, 5)


def test_recall_divides_by_gold_when_gold_is_smaller() -> None:
    retrieved = [_item("d1", 2010, 1), _item("d2", 2010, 2), _item("x", 2011, 1)] + [_item("y", 2012, 1)] * 7
    assert recall_at_k(retrieved, {"d1", "d2", "d9"}, 10) == pytest.approx(2 / 3)  # 2 of min(10, 3)
    with pytest.raises(ValueError):
        recall_at_k(retrieved, set(), 10)


def test_in_window_precision_half_open() -> None:
    # Jun 2010 starts exactly at the window's end: outside. Dec 2009 ends at its start: outside.
    retrieved = [_item("d1", 2010, 1), _item("a", 2010, 6), _item("b", 2009, 12), _item("d5", 2010, 5)]
    assert in_window_precision(retrieved, WINDOW, 4) == 0.5
    assert in_window_precision(retrieved, WINDOW, 1) == 1.0
    assert in_window_precision([], WINDOW, 5) is None


def test_coverage_with_a_gap() -> None:
    # gold in Jan, Feb, May; March is non-gold; April missing: 3 of 5 months covered.
    retrieved = [_item("d1", 2010, 1), _item("d2", 2010, 2), _item("z", 2010, 3), _item("d5", 2010, 5)]
    assert temporal_coverage(retrieved, GOLD, WINDOW, 10) == 0.6
    assert temporal_coverage(retrieved, GOLD, WINDOW, 2) == 0.4


def test_endpoint_share_against_uniform() -> None:
    # in-window items: Jan, Jan, May, Mar -> 3 of 4 at the ends; Jul 2010 is outside and ignored.
    retrieved = [
        _item("d1", 2010, 1),
        _item("e", 2010, 1),
        _item("d5", 2010, 5),
        _item("o", 2010, 7),
        _item("d3", 2010, 3),
    ]
    assert endpoint_share(retrieved, WINDOW, 5) == (0.75, 0.4)
    assert endpoint_share(retrieved, Interval(_m(2010, 1), _m(2010, 3)), 5) is None  # 2-month window


def _hit(doc: str, year: int, month: int, score: float) -> Hit:
    return Hit(
        {"doc_id": doc, "intervals": intervals_to_arrow([period(_m(year, month), Granularity.MONTH)])}, score
    )


def test_coverage_top_k_spreads_over_periods() -> None:
    periods = [period(_m(2010, m), Granularity.MONTH) for m in (1, 2, 3)]
    hits = [
        _hit("j1", 2010, 1, 0.9),
        _hit("j2", 2010, 1, 0.8),
        _hit("j3", 2010, 1, 0.7),
        _hit("f1", 2010, 2, 0.6),
        _hit("out", 2011, 1, 0.65),
        _hit("m1", 2010, 3, 0.5),
    ]
    assert [h.row["doc_id"] for h in hits[:3]] == ["j1", "j2", "j3"]  # plain top-3: one month
    assert [h.row["doc_id"] for h in coverage_top_k(hits, periods, k=3)] == ["j1", "f1", "m1"]
    assert [h.row["doc_id"] for h in coverage_top_k(hits, periods, k=5)] == ["j1", "f1", "m1", "j2", "j3"]
    assert [h.row["doc_id"] for h in coverage_top_k(hits, periods, k=6)][-1] == "out"  # outside: last
    assert coverage_top_k(hits, [], k=2) == hits[:2]


def test_split_by_trailing_number() -> None:
    assert split_of("trend-0000") == "dev"
    assert split_of("trend-0007") == "test"
    assert split_of("month-best-AAPL-2001") == "test"
    with pytest.raises(ValueError):
        split_of("no-number")


def test_bm25_ranks_by_shared_terms(tmp_path) -> None:
    import lancedb
    import pyarrow as pa
    from diachron.retrieval.baselines import BM25Searcher
    from diachron.schemas.records import ChunkRecord, arrow_schema

    texts = {
        "a": "tariff debate in congress",
        "b": "the weather was mild",
        "c": "tariff tariff schedule revised",
    }
    day = period(_m(1930, 1), Granularity.MONTH)
    rows = [
        {
            "chunk_id": cid,
            "doc_id": cid,
            "series_id": cid,
            "seq": 0,
            "text": text,
            "token_count": 4,
            "published_at": day.start,
            "intervals": intervals_to_arrow([day]),
            "event_start": day.start,
            "event_end": day.end,
            "time_source": "event",
            "time_status": "known",
            "valid_from": None,
            "valid_until": None,
            "annotator": "test",
            "embedder": "none/4",
            "recorded_at": day.start,
            "run_id": "t",
            "vector": [1.0, 0.0, 0.0, 0.0],
        }
        for cid, text in texts.items()
    ]
    table = lancedb.connect(str(tmp_path)).create_table(
        "chunks", pa.Table.from_pylist(rows, schema=arrow_schema(ChunkRecord, dim=4))
    )
    hits = BM25Searcher(table).search("tariff schedule", k=2)
    assert [h.row["doc_id"] for h in hits] == ["c", "a"]  # c has both terms (tariff twice), a has one
    assert hits[0].score > hits[1].score > 0
    assert len(BM25Searcher(table).search("tariff", k=10)) == 3  # k capped at the table size


def _retrieval_cases() -> list:
    import json
    import os
    from pathlib import Path

    shared = os.environ.get("DIACHRON_SHARED")
    path = (
        (Path(shared) if shared else Path(__file__).resolve().parents[2] / "shared")
        / "cases"
        / "temporal_cases.jsonl"
    )
    if not path.is_file():
        return [pytest.param(None, id="cases-file-missing")]
    cases = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return [pytest.param(c, id=c["id"]) for c in cases if c["input"]["kind"] == "retrieval"]


@pytest.fixture(scope="module")
def embedder():
    from diachron.ingest.embedding import Embedder

    return Embedder()


@pytest.mark.integration
@pytest.mark.parametrize("case", _retrieval_cases())
def test_retrieval_case(case, embedder, tmp_path) -> None:
    """Each ``retrieval`` temporal case on a real LanceDB table through the real Client (and T24 bites)."""
    from bench.eval.retrieval_cases import run_retrieval_case

    if case is None:
        pytest.fail("temporal cases file not found (set DIACHRON_SHARED to the shared folder)")
    passed, observed = run_retrieval_case(case, embedder, tmp_path)
    assert passed, observed


def test_timeqa_pages_map_chunks_back_to_passages(tmp_path) -> None:
    """A page document keeps each passage's offsets; chunks map back to the passages they overlap."""
    import json

    from bench.eval.timeqa import build_pages, chunk_passage_map, passage_ranking

    passages = [
        {"doc_id": "p#0", "page": "P", "section": "P", "passage_index": 0, "title": "P", "text": "A one."},
        {
            "doc_id": "p#1",
            "page": "P",
            "section": "Career",
            "passage_index": 1,
            "title": "P — Career",
            "text": "B two. B three.",
        },
        {
            "doc_id": "p#2",
            "page": "P",
            "section": "Career",
            "passage_index": 2,
            "title": "P — Career",
            "text": "C four.",
        },
    ]
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("".join(json.dumps(p) + "\n" for p in reversed(passages)), encoding="utf-8")
    index = build_pages(corpus, tmp_path / "pages.jsonl")
    # headings open sections; passages in passage order, separated by blank lines
    assert index.texts["timeqa:P"] == "## P\n\nA one.\n\n## Career\n\nB two. B three.\n\nC four.\n\n"
    chunks = [
        {"chunk_id": "c0", "doc_id": "timeqa:P", "seq": 0, "text": "## P\n\nA one.\n\n## Career\n\nB two."},
        {"chunk_id": "c1", "doc_id": "timeqa:P", "seq": 1, "text": "B three.\n\nC four."},
    ]
    mapping = chunk_passage_map(index, chunks)
    assert mapping == {"c0": ["p#0", "p#1"], "c1": ["p#1", "p#2"]}
    # chunk ranking c1, c0 -> passages p#1, p#2, then p#0 (p#1 counted once)
    assert passage_ranking(["c1", "c0"], mapping.__getitem__, 3) == ["p#1", "p#2", "p#0"]
    assert passage_ranking(["c1", "c0"], mapping.__getitem__, 1) == ["p#1"]
    assert json.loads((tmp_path / "pages.jsonl").read_text().splitlines()[0])["published_at"] is None


def test_timeqa_gold_removed_only_when_known_and_outside(tmp_path) -> None:
    from bench.eval.timeqa import TimeQAQuestion, removed_by_filter

    window = Interval(_m(2005, 11), _m(2005, 12))
    q = TimeQAQuestion("q", "…in Nov 2005?", window, "in-month", frozenset({"g"}), "P", _m(2021, 9))
    inside = intervals_to_arrow([Interval(_m(2002, 1), _m(2008, 1))])
    outside = intervals_to_arrow([Interval(_m(2002, 1), _m(2004, 1))])
    rows = {
        "a": {"time_status": "known", "intervals": outside},
        "b": {"time_status": "known", "intervals": inside},
        "u": {"time_status": "unknown", "intervals": []},
    }
    assert removed_by_filter(q, rows, {"g": ["a"]})
    assert not removed_by_filter(q, rows, {"g": ["a", "b"]})  # one chunk of the gold passage overlaps
    assert not removed_by_filter(q, rows, {"g": ["u"]})  # unknown time: a lower tier, not removed
