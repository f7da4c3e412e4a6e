"""The in-memory interval index path agrees with exact overlap on instants before 1970 and open sides."""

from __future__ import annotations

from datetime import UTC, datetime

import lancedb
import numpy as np
import pyarrow as pa

from diachron.retrieval.fast_search import FastSearcher
from diachron.retrieval.filters import TimeFilter
from diachron.retrieval.search import TemporalSearcher
from diachron.schemas.records import ChunkRecord, arrow_schema
from diachron.schemas.time import Interval


def t(year: int, month: int = 1, day: int = 1) -> datetime:
    return datetime(year, month, day, tzinfo=UTC)


def _row(chunk_id: str, intervals: list[tuple[datetime | None, datetime | None]], vector: list[float]) -> dict:
    ivs = [{"start": s, "end": e, "granularity": "day", "text": None} for s, e in intervals]
    starts = [s for s, _ in intervals]
    ends = [e for _, e in intervals]
    return {"chunk_id": chunk_id, "doc_id": chunk_id, "series_id": chunk_id, "seq": 0, "text": chunk_id,
            "token_count": 1, "published_at": None, "intervals": ivs,
            "event_start": None if None in starts else min(starts), "event_end": None if None in ends else max(ends),
            "time_source": "event", "time_status": "known", "valid_from": None, "valid_until": None,
            "annotator": "test", "embedder": "test/4", "recorded_at": t(2026), "run_id": "r", "vector": vector}


def test_fast_and_sql_paths_select_the_same_chunks(tmp_path):
    rows = [_row("wilson-1920", [(t(1920, 12, 7), t(1920, 12, 8))], [1, 0, 0, 0]),
            _row("hoover-1929", [(t(1929), t(1930)), (t(1931, 7), t(1932, 7))], [0, 1, 0, 0]),
            _row("lincoln-1862", [(t(1862, 12, 1), t(1862, 12, 2))], [0, 0, 1, 0]),
            _row("open-past", [(None, t(1900))], [0, 0, 0, 1]),
            _row("modern", [(t(2020), t(2021))], [0.5, 0.5, 0.5, 0.5])]
    table = lancedb.connect(str(tmp_path / "db")).create_table(
        "chunks", pa.Table.from_pylist(rows, schema=arrow_schema(ChunkRecord, dim=4)))
    fast, sql = FastSearcher(table), TemporalSearcher(table)
    vector = np.array([0.5, 0.5, 0.5, 0.5], dtype=np.float32)
    cases = {  # window -> chunks whose intervals overlap it, worked out by hand
        (t(1920), t(1941)): {"wilson-1920", "hoover-1929"},
        (t(1930), t(1931, 7)): set(),                 # between Hoover's two intervals
        (None, t(1862, 12, 1)): {"open-past"},        # touching Lincoln's start: half-open, excluded
        (t(1899), None): {"open-past", "wilson-1920", "hoover-1929", "modern"},
    }
    for (start, end), expected in cases.items():
        tf = TimeFilter(event=(Interval(start, end),))
        got_fast = {table.to_lance().take([int(i)], columns=["chunk_id"]).column(0)[0].as_py()
                    for i in fast.candidates(tf)}
        got_sql = {h.row["chunk_id"] for h in sql.search(vector, tf, k=10)}
        assert got_fast == expected == got_sql, (start, end)
        assert {h.row["chunk_id"] for h in fast.search(vector, tf, k=10)} == expected
