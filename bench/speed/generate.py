"""Seeded generator of synthetic ``chunks`` tables and window queries for the speed benchmarks.

Rows follow the real ``chunks`` schema (:func:`diachron.schemas.records.arrow_schema` of ``ChunkRecord``, dim
384). Event time spans ~30 years (``[1995-01-01, 2025-01-01)`` UTC): each known chunk has 1–3 half-open
intervals, a mix of instants (``[t, t+1 µs)``), days, months and years, a few open-ended ("since …");
some chunks have unknown time. Vectors are unit-norm float32, either ``uniform`` on the sphere (the worst
case for partitioned indexes) or ``clustered`` (Gaussian blobs around 256 centres, like real embeddings).
Everything is derived from one ``numpy`` seed, so the same arguments give the same table.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import numpy as np
import pyarrow as pa
from diachron.schemas.records import ChunkRecord, arrow_schema
from diachron.schemas.time import Interval

__all__ = ["DIM", "EPOCH_US", "SPAN_US", "WINDOWS", "Flat", "Query", "generate", "queries"]

DIM = 384
EPOCH_US = int(datetime(1995, 1, 1, tzinfo=UTC).timestamp() * 1_000_000)
SPAN_US = int(datetime(2025, 1, 1, tzinfo=UTC).timestamp() * 1_000_000) - EPOCH_US
DAY_US = 86_400 * 1_000_000
WINDOWS = ("1 day", "1 month", "1 year", "7 years", "20 years", "before", "after")
_GRANULARITIES = np.array(["instant", "day", "month", "year"])
_GRANULARITY_P = [0.10, 0.40, 0.30, 0.20]
_LENGTH_US = np.array([1, DAY_US, 30 * DAY_US, 365 * DAY_US])
_CENTRES = 256
_TS = pa.timestamp("us", tz="UTC")


@dataclass(frozen=True, slots=True)
class Flat:
    """The event intervals of a table, flattened: interval ``j`` belongs to row ``row[j]``.

    ``start``/``end`` are int64 µs since the Unix epoch (UTC), half-open; open sides are int64 min/max.
    """

    row: np.ndarray
    start: np.ndarray
    end: np.ndarray


@dataclass(frozen=True, slots=True)
class Query:
    """A window query: ``window`` kind, the half-open UTC interval, and a unit float32 ``(dim,)`` vector."""

    window: str
    interval: Interval
    vector: np.ndarray


def _unit(x: np.ndarray) -> np.ndarray:
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)


def _vectors(rng: np.random.Generator, n: int, kind: str, centres: np.ndarray) -> np.ndarray:
    if kind == "uniform":
        return _unit(rng.standard_normal((n, DIM), dtype=np.float32))
    if kind == "clustered":
        pick = rng.integers(0, len(centres), n)
        return _unit(centres[pick] + 0.05 * rng.standard_normal((n, DIM), dtype=np.float32))
    raise ValueError(f"unknown vector kind {kind!r}: use 'uniform' or 'clustered'")


def _intervals(rng: np.random.Generator, n: int) -> tuple[Flat, np.ndarray, np.ndarray]:
    """Flat intervals plus per-row ``counts`` and the granularity name of each interval."""
    unknown = rng.random(n) < 0.03
    counts = np.where(unknown, 0, rng.choice([1, 2, 3], n, p=[0.7, 0.2, 0.1]))
    total = int(counts.sum())
    row = np.repeat(np.arange(n), counts)
    kind = rng.choice(len(_GRANULARITIES), total, p=_GRANULARITY_P)
    centre = np.repeat(rng.integers(0, SPAN_US, n), counts)  # a chunk's intervals lie near each other
    jitter = rng.integers(-2 * 365 * DAY_US, 2 * 365 * DAY_US, total)
    start = np.clip(centre + jitter, 0, SPAN_US - 400 * DAY_US)
    start = np.where(kind == 0, start, start - start % DAY_US) + EPOCH_US
    end = start + _LENGTH_US[kind]
    open_end = rng.random(total) < 0.01
    end = np.where(open_end, np.iinfo(np.int64).max, end)
    return Flat(row, start.astype(np.int64), end.astype(np.int64)), counts, _GRANULARITIES[kind]


def _ts_array(values: np.ndarray, open_value: int) -> pa.Array:
    return pa.array(values, type=pa.int64(), mask=values == open_value).cast(_TS)


def generate(n: int, *, seed: int = 0, kind: str = "uniform") -> tuple[pa.Table, Flat]:
    """A ``chunks`` table of ``n`` rows and its flattened intervals (row ``i`` = offset ``i``).

    Raises:
        ValueError: ``kind`` is not ``uniform`` or ``clustered``.
    """
    rng = np.random.default_rng(seed)
    centres = _unit(np.random.default_rng(10_000).standard_normal((_CENTRES, DIM), dtype=np.float32))
    flat, counts, granularity = _intervals(rng, n)
    vectors = _vectors(rng, n, kind, centres)
    lo, hi = np.iinfo(np.int64).min, np.iinfo(np.int64).max
    offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int32)
    struct = pa.StructArray.from_arrays(
        [
            _ts_array(flat.start, lo),
            _ts_array(flat.end, hi),
            pa.array(granularity),
            pa.nulls(len(flat.row), pa.string()),
        ],
        names=["start", "end", "granularity", "text"],
    )
    hull_start = np.full(n, hi, dtype=np.int64)
    np.minimum.at(hull_start, flat.row, flat.start)
    hull_end = np.full(n, lo, dtype=np.int64)
    np.maximum.at(hull_end, flat.row, flat.end)
    known = counts > 0
    ids = pa.array([f"s{seed}-{i:08d}" for i in range(n)])
    docs = pa.array([f"d{seed}-{i // 20:07d}" for i in range(n)])
    published = _ts_array(np.where(known, hull_start, lo), lo)
    recorded = pa.array(np.full(n, EPOCH_US + SPAN_US), type=pa.int64()).cast(_TS)
    nothing = pa.nulls(n, _TS)
    columns = {
        "chunk_id": ids,
        "doc_id": docs,
        "series_id": docs,
        "seq": pa.array(np.arange(n) % 20),
        "text": pa.array([f"chunk {i}" for i in range(n)]),
        "token_count": pa.array(np.full(n, 128)),
        "published_at": published,
        "intervals": pa.ListArray.from_arrays(pa.array(offsets), struct),
        "event_start": _ts_array(np.where(known, hull_start, lo), lo),
        "event_end": _ts_array(np.where(known, hull_end, hi), hi),
        "time_source": pa.array(np.where(known, "event", "unknown")),
        "time_status": pa.array(np.where(known, "known", "unknown")),
        "valid_from": nothing,
        "valid_until": nothing,
        "annotator": pa.array(["bench"] * n),
        "embedder": pa.array(["all-MiniLM-L6-v2/384"] * n),
        "recorded_at": recorded,
        "run_id": pa.array(["bench"] * n),
        "vector": pa.FixedSizeListArray.from_arrays(pa.array(vectors.reshape(-1)), DIM),
    }
    schema = arrow_schema(ChunkRecord, dim=DIM)
    return pa.Table.from_arrays([columns[f.name] for f in schema], schema=schema), flat


def queries(n_per_window: int, *, seed: int = 1, kind: str = "uniform") -> list[Query]:
    """``n_per_window`` queries for each of :data:`WINDOWS`, with vectors of the table's ``kind``."""
    rng = np.random.default_rng(seed)
    centres = _unit(np.random.default_rng(10_000).standard_normal((_CENTRES, DIM), dtype=np.float32))
    out = []
    years = {"1 year": 1, "7 years": 7, "20 years": 20}
    for window in WINDOWS:
        for _ in range(n_per_window):
            granularity = "year"
            if window in ("1 day", "1 month"):
                year, month = int(rng.integers(1996, 2024)), int(rng.integers(1, 13))
                start = datetime(year, month, 1, tzinfo=UTC)
                end = datetime(year + month // 12, month % 12 + 1, 1, tzinfo=UTC)
                granularity = "month"
                if window == "1 day":
                    start = start.replace(day=int(rng.integers(1, 29)))
                    end, granularity = start + timedelta(days=1), "day"
            elif window == "after":
                start, end = datetime(int(rng.integers(2016, 2021)), 1, 1, tzinfo=UTC), None
            elif window == "before":
                start, end = None, datetime(int(rng.integers(1999, 2004)), 1, 1, tzinfo=UTC)
            else:
                year = int(rng.integers(1996, 2025 - years[window]))
                start = datetime(year, 1, 1, tzinfo=UTC)
                end = datetime(year + years[window], 1, 1, tzinfo=UTC)
            vector = _vectors(rng, 1, kind, centres)[0]
            out.append(Query(window, Interval(start, end, granularity), vector))
    return out
