"""The one search path: exact candidates for every filter kind, instants before 1970, open sides."""

from __future__ import annotations

from datetime import UTC, datetime

import lancedb
import numpy as np
import pyarrow as pa
import pytest
from diachron.retrieval.filters import TimeFilter
from diachron.retrieval.search import Searcher
from diachron.schemas.records import ChunkRecord, arrow_schema, intervals_from_arrow
from diachron.schemas.time import Interval


def t(year: int, month: int = 1, day: int = 1) -> datetime:
    return datetime(year, month, day, tzinfo=UTC)


def _row(
    chunk_id: str,
    intervals: list[tuple[datetime | None, datetime | None]],
    vector: list[float],
    *,
    valid: tuple[datetime | None, datetime | None] = (None, None),
    recorded: datetime | None = None,
) -> dict:
    ivs = [{"start": s, "end": e, "granularity": "day", "text": None} for s, e in intervals]
    starts = [s for s, _ in intervals]
    ends = [e for _, e in intervals]
    return {
        "chunk_id": chunk_id,
        "doc_id": chunk_id,
        "series_id": chunk_id,
        "seq": 0,
        "text": chunk_id,
        "token_count": 1,
        "published_at": None,
        "intervals": ivs,
        "event_start": None if None in starts or not starts else min(starts),
        "event_end": None if None in ends or not ends else max(ends),
        "time_source": "event" if intervals else "unknown",
        "time_status": "known" if intervals else "unknown",
        "valid_from": valid[0],
        "valid_until": valid[1],
        "annotator": "test",
        "embedder": "test/4",
        "recorded_at": recorded or t(2026),
        "run_id": "r",
        "vector": vector,
    }


def _sql_ids(table, tf: TimeFilter) -> set[str]:
    """Independent check: LanceDB's SQL filter on the hull, then the exact per-interval check."""
    where = tf.sql()
    data = table.to_lance().to_table(columns=["chunk_id", "intervals"], filter=where).to_pylist()
    return {r["chunk_id"] for r in data if tf.matches(intervals_from_arrow(r["intervals"]))}


def test_candidates_match_hand_worked_overlaps_and_the_sql_filter(tmp_path):
    rows = [
        _row("wilson-1920", [(t(1920, 12, 7), t(1920, 12, 8))], [1, 0, 0, 0]),
        _row("hoover-1929", [(t(1929), t(1930)), (t(1931, 7), t(1932, 7))], [0, 1, 0, 0]),
        _row("lincoln-1862", [(t(1862, 12, 1), t(1862, 12, 2))], [0, 0, 1, 0]),
        _row("open-past", [(None, t(1900))], [0, 0, 0, 1]),
        _row("modern", [(t(2020), t(2021))], [0.5, 0.5, 0.5, 0.5]),
    ]
    table = lancedb.connect(str(tmp_path / "db")).create_table(
        "chunks", pa.Table.from_pylist(rows, schema=arrow_schema(ChunkRecord, dim=4))
    )
    fast = Searcher(table)
    vector = np.array([0.5, 0.5, 0.5, 0.5], dtype=np.float32)
    cases = {  # window -> chunks whose intervals overlap it, worked out by hand
        (t(1920), t(1941)): {"wilson-1920", "hoover-1929"},
        (t(1930), t(1931, 7)): set(),  # between Hoover's two intervals
        (None, t(1862, 12, 1)): {"open-past"},  # touching Lincoln's start: half-open, excluded
        (t(1899), None): {"open-past", "wilson-1920", "hoover-1929", "modern"},
    }
    for (start, end), expected in cases.items():
        tf = TimeFilter(event=(Interval(start, end),))
        got_fast = {
            table.to_lance().take([int(i)], columns=["chunk_id"]).column(0)[0].as_py()
            for i in fast.candidates(tf)
        }
        got_sql = _sql_ids(table, tf)
        assert got_fast == expected == got_sql, (start, end)
        assert {h.row["chunk_id"] for h in fast.search(vector, tf, k=10)} == expected


def _ids(table, offsets) -> set[str]:
    return set(
        table.to_lance().take(np.asarray(offsets, dtype=np.int64), columns=["chunk_id"]).column(0).to_pylist()
    )


def test_valid_time_transaction_time_and_no_filter_use_the_same_index(tmp_path):
    rows = [
        _row("policy-v1", [(t(2020), t(2021))], [1, 0, 0, 0], valid=(t(2020), t(2022)), recorded=t(2020)),
        _row("policy-v2", [(t(2022), t(2023))], [0, 1, 0, 0], valid=(t(2022), None), recorded=t(2022)),
        _row("undated", [], [0, 0, 1, 0], recorded=t(2021)),
        _row("late", [(t(2021), t(2022))], [0, 0, 0, 1], recorded=t(2024, 6)),
    ]
    table = lancedb.connect(str(tmp_path / "db")).create_table(
        "chunks", pa.Table.from_pylist(rows, schema=arrow_schema(ChunkRecord, dim=4))
    )
    searcher = Searcher(table)
    cases = {  # worked out by hand from the rows above
        TimeFilter(): {"policy-v1", "policy-v2", "undated", "late"},
        # valid at 2021-06-01: v1 [2020, 2022); rows with open validity (undated, late) are valid always
        TimeFilter(valid=(Interval.at(t(2021, 6)),)): {"policy-v1", "undated", "late"},
        TimeFilter(valid=(Interval.at(t(2022)),)): {
            "policy-v2",
            "undated",
            "late",
        },  # v1 ends at 2022: excluded
        TimeFilter(as_of=t(2021, 12)): {"policy-v1", "undated"},
        TimeFilter(as_of=t(2022)): {"policy-v1", "policy-v2", "undated"},  # recorded_at <= as_of
        # event + as_of: late overlaps the window in event time but was recorded after as_of
        TimeFilter(event=(Interval(t(2020, 6), t(2023)),), as_of=t(2023)): {"policy-v1", "policy-v2"},
    }
    vector = np.array([0.5, 0.5, 0.5, 0.5], dtype=np.float32)
    for tf, expected in cases.items():
        assert _ids(table, searcher.candidates(tf)) == expected, tf
        assert searcher.count(tf) == len(expected)
        assert {h.row["chunk_id"] for h in searcher.search(vector, tf, k=10)} == expected
        assert _sql_ids(table, tf) == expected, tf  # the SQL filter (lineage's gaps) agrees


def test_focus_ranking_and_rejected_examples(tmp_path):
    rows = [
        _row("focused", [(t(1929), t(1930))], [0.96, 0.28, 0, 0]),
        _row("mentions", [(t(1929, 6), t(1929, 7)), (t(1950), t(1951))], [1, 0, 0, 0]),
        _row("outside", [(t(1960), t(1961))], [1, 0, 0, 0]),
        _row("undated", [], [0.8, 0.6, 0, 0]),
    ]
    table = lancedb.connect(str(tmp_path / "db")).create_table(
        "chunks", pa.Table.from_pylist(rows, schema=arrow_schema(ChunkRecord, dim=4))
    )
    vector = np.array([1, 0, 0, 0], dtype=np.float32)
    tf = TimeFilter(event=(Interval(t(1929), t(1930)),))
    # cosine (unit vectors): mentions 1.0, focused 0.96; focus: mentions 1/2, focused 1
    pure = Searcher(table, temporal_weight=0.0).search(vector, tf, k=2)
    assert [h.row["chunk_id"] for h in pure] == ["mentions", "focused"]
    assert [h.focus for h in pure] == [0.5, 1.0]
    assert np.isclose(pure[1].score, 0.96, atol=1e-6)
    # with weight 0.1: mentions 1.0 + 0.05 = 1.05 < focused 0.96 + 0.1 = 1.06
    weighted = Searcher(table, temporal_weight=0.1).search(vector, tf, k=2)
    assert [h.row["chunk_id"] for h in weighted] == ["focused", "mentions"]
    examples = Searcher(table).outside_examples(vector, tf, n=3)
    assert [(e["chunk_id"], e["why"]) for e in examples] == [
        ("outside", "no event interval overlaps the query"),
        ("undated", "unknown time"),
    ]
    assert Searcher(table).outside_examples(vector, TimeFilter()) == []


def test_lexical_signal_lifts_the_chunk_naming_what_is_asked(tmp_path):
    # B.o.B (TimeQA): both chunks lie in the window; the tour chunk is more similar (0.95 vs 0.90), the label
    # chunk names the thing asked. BM25 of "record label", scaled by the pool's best: labels 1, tour 0 (no
    # shared word), a chunk naming "label" once in a longer text strictly between.
    rows = [
        _row("tour", [(t(2011), t(2012))], [0.95, 0.3122499, 0, 0]),
        _row("labels", [(t(2011), t(2012))], [0.9, 0.4358899, 0, 0]),
        _row("imprint", [(t(2011), t(2012))], [0.5, 0.8660254, 0, 0]),
    ]
    rows[0]["text"] = "B.o.B toured Europe with Bruno Mars in 2011 ."
    rows[1]["text"] = "In 2011 B.o.B was signed to Grand Hustle Records , his record label ."
    rows[2]["text"] = (
        "Rebel Rock , an imprint of the label , released a mixtape by B.o.B and others in 2011 ."
    )
    table = lancedb.connect(str(tmp_path / "db")).create_table(
        "chunks", pa.Table.from_pylist(rows, schema=arrow_schema(ChunkRecord, dim=4))
    )
    vector = np.array([1, 0, 0, 0], dtype=np.float32)
    tf = TimeFilter(event=(Interval(t(2011, 2), t(2012, 9)),))
    no_index = Searcher(table)
    assert not no_index.has_text_index
    assert [h.row["chunk_id"] for h in no_index.search(vector, tf, k=2, text="record label")] == [
        "tour",
        "labels",
    ]
    table.create_fts_index("text", replace=True)
    searcher = Searcher(table)
    assert searcher.has_text_index
    lexical = searcher.lexical("record label", ["labels", "tour", "imprint"])
    assert lexical[0] == 1.0 and lexical[1] == 0.0 and 0.0 < lexical[2] < 1.0
    # focus 1 for all; r = cosine + 0.1 x lexical: labels 0.90 + 0.1 = 1.00 > tour 0.95
    assert [h.row["chunk_id"] for h in searcher.search(vector, tf, k=2, text="record label")] == [
        "labels",
        "tour",
    ]
    assert [h.row["chunk_id"] for h in searcher.search(vector, tf, k=2)] == ["tour", "labels"]  # no text
    off = Searcher(table, lexical_weight=0.0)
    assert [h.row["chunk_id"] for h in off.search(vector, tf, k=2, text="record label")] == ["tour", "labels"]
    # query syntax is not read: quotes, colons and operators are words (or nothing), never an error
    assert searcher.lexical('text:"record" AND (label', ["labels"]).tolist() == [1.0]


@pytest.mark.integration
def test_lexical_signal_scores_every_pool_chunk_however_many_match(tmp_path):
    # 1,200 chunks name the record label, the pool's 3 are the longest (lowest BM25, far below the table's top
    # hundreds): each still gets its score, equal (after scaling by the pool's best) to the one an unfiltered
    # full-text query over the whole table gives it (a second method)
    from lance.query import MatchQuery

    rows = [_row(f"c{i:04d}", [(t(2011), t(2012))], [1, 0, 0, 0]) for i in range(1200)]
    for i, row in enumerate(rows):
        row["text"] = "B.o.B signed to a record label ." + " He toured ." * (i % 40)
    table = lancedb.connect(str(tmp_path / "db")).create_table(
        "chunks", pa.Table.from_pylist(rows, schema=arrow_schema(ChunkRecord, dim=4))
    )
    table.create_fts_index("text", replace=True)
    pool = ["c0039", "c0079", "c0038"]  # 39, 39 and 38 repetitions: among the longest texts
    lexical = Searcher(table).lexical("record label", pool)
    every = table.to_lance().to_table(
        columns=["chunk_id", "_score"], limit=len(rows), full_text_query=MatchQuery("record label", "text")
    )
    score = dict(zip(every.column("chunk_id").to_pylist(), every.column("_score").to_pylist(), strict=True))
    assert (
        sorted(score, key=score.get, reverse=True).index("c0038") >= 1100
    )  # far outside any top few hundred
    best = max(score[c] for c in pool)
    assert lexical.tolist() == pytest.approx([score[c] / best for c in pool])
    assert max(lexical) == 1.0 and min(lexical) > 0.0
    assert Searcher(table).lexical("record label", []).tolist() == []


@pytest.mark.integration
def test_a_long_lived_client_sees_rows_written_after_it_opened(tmp_path):
    from diachron.ingest.embedding import Embedder
    from diachron.ingest.store import Store
    from diachron.retrieval.client import Client

    embedder = Embedder()
    store = Store(str(tmp_path / "db"), dim=embedder.dim)

    def write(chunk_id: str, text: str) -> None:
        row = _row(chunk_id, [(t(1931), t(1932))], embedder.embed([text])[0].tolist())
        row.update(text=text, embedder=embedder.spec.id)
        store.insert_new(
            "chunks", pa.Table.from_pylist([row], schema=arrow_schema(ChunkRecord, dim=embedder.dim))
        )

    write("harbour", "The harbour froze over in the winter of 1931.")
    store.table("documents")
    client = Client(str(tmp_path / "db"), embedder=embedder)
    question = "What happened in 1931?"
    assert [e.chunk_id for e in client.search(question, k=5).evidence] == ["harbour"]
    write("bridge", "The new bridge opened to traffic in 1931.")
    result = client.search(question, k=5)
    assert sorted(e.chunk_id for e in result.evidence) == ["bridge", "harbour"]
    assert result.trace.candidates_after_filter == 2
    assert result.trace.plan == {
        "path": "exact",
        "candidates": 2,
        "scored_rows": 2,
        "expected_recall": 1.0,
        "layout": "take",
    }
