"""The validate stage: Great Expectations checks of the intervals and chunks of each batch."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import pyarrow as pa
from diachron.ingest.annotation.document import chunk_time, hull
from diachron.ingest.stages.base import CHUNK, PENDING_QUARANTINE, REJECTED, ROW_KIND, Stage
from diachron.ingest.stages.quarantine import add_quarantine
from diachron.schemas.records import intervals_to_arrow
from diachron.schemas.time import Interval, add_months, format_instant

__all__ = ["ValidateStage"]


class ValidateStage(Stage):
    """Great Expectations checks (:class:`~diachron.ingest.validation.Validator`) of ``chunk`` rows.

    An invalid interval leaves its chunk (a ``validate_interval`` quarantine entry; the chunk's time is
    worked out again from the rest); an invalid chunk becomes a ``rejected`` row with a ``validate_chunk``
    entry. Other rows pass through unchanged.

    REQUIRES: row_kind, chunk_id, doc_id, text, time_source, intervals, published_at, pending_quarantine.
    """

    REQUIRES = (ROW_KIND, "chunk_id", "doc_id", "text", "time_source", "intervals", "published_at")
    REQUIRES += (PENDING_QUARANTINE,)

    def __init__(self, config: Any = None) -> None:
        from diachron.ingest.validation import Validator

        self.validator = Validator(config)
        self.validator.warm_up()  # import GX while the other stages load their models

    def process(self, batch: pa.Table) -> pa.Table:
        rows = batch.to_pylist()
        chunks = [row for row in rows if row[ROW_KIND] == CHUNK]
        if chunks:
            self._check_intervals(chunks)
            self._check_chunks(chunks)
        return pa.Table.from_pylist(rows, schema=batch.schema)

    def _check_intervals(self, rows: list[dict[str, Any]]) -> None:
        """Drop the invalid intervals of event-timed rows (each quarantined) and re-time those rows."""
        import pandas as pd

        flat = [
            (r, i, iv)
            for r, row in enumerate(rows)
            if row["time_source"] == "event"
            for i, iv in enumerate(row["intervals"] or [])
        ]
        if not flat:
            return
        limit = self.validator.config.max_years_after_publication
        latest = [_years_after(rows[r]["published_at"], limit) for r, _, _ in flat]
        frame = pd.DataFrame(
            {
                "start": pd.Series([iv["start"] for _, _, iv in flat], dtype="datetime64[us, UTC]"),
                "end": pd.Series([iv["end"] for _, _, iv in flat], dtype="datetime64[us, UTC]"),
                "latest_start": pd.Series(latest, dtype="datetime64[us, UTC]"),
                "provenance": pd.Series([iv.get("provenance") for _, _, iv in flat], dtype="object"),
            }
        )
        drop: dict[int, set[int]] = {}
        for pos, reasons in self.validator.check_intervals(frame).items():
            r, i, iv = flat[pos]
            drop.setdefault(r, set()).add(i)
            payload = {"chunk_id": rows[r]["chunk_id"], "interval": _json_interval(iv)}
            add_quarantine(rows[r], "validate_interval", "; ".join(reasons), payload)
        for r, indices in drop.items():
            _retime(rows[r], [iv for i, iv in enumerate(rows[r]["intervals"]) if i not in indices])

    def _check_chunks(self, rows: list[dict[str, Any]]) -> None:
        """Turn the chunks that fail the chunk expectations into ``rejected`` rows with their reasons."""
        import pandas as pd

        columns = ("chunk_id", "doc_id", "text", "time_source")
        frame = pd.DataFrame({k: [row[k] for row in rows] for k in columns})
        for pos, reasons in self.validator.check_chunks(frame).items():
            row = rows[pos]
            row[ROW_KIND] = REJECTED
            payload = {"chunk_id": row["chunk_id"], "doc_id": row["doc_id"], "text": row["text"]}
            add_quarantine(row, "validate_chunk", "; ".join(reasons), payload)


def _years_after(instant: datetime | None, years: int) -> datetime | None:
    return None if instant is None else add_months(instant, 12 * min(years, 9998 - instant.year))


def _json_interval(iv: dict[str, Any]) -> dict[str, Any]:
    return {
        "start": format_instant(iv["start"]),
        "end": format_instant(iv["end"]),
        "granularity": iv["granularity"],
        "text": iv.get("text"),
    }


def _retime(row: dict[str, Any], kept: list[dict[str, Any]]) -> None:
    """Recompute a chunk's time after invalid intervals were removed (kept ones keep kind and provenance)."""
    intervals = [Interval(iv["start"], iv["end"], iv["granularity"]) for iv in kept]
    new, source, status = chunk_time(intervals, row["published_at"])
    if source == "event":
        row["intervals"] = [dict(iv) for iv in kept]
    else:
        row["intervals"] = intervals_to_arrow(new, provenance=["published"] * len(new))
    row["event_start"], row["event_end"] = hull(new)
    row["time_source"], row["time_status"] = source, status
