"""LanceDB writes of the bitemporal tables: insert-only upserts, transaction time, indexes.

Rows are keyed by content-derived ids and written with ``merge_insert(key).when_not_matched_insert_all()``
only: an existing row is never rewritten, so ``recorded_at`` (transaction time, set here at write) is
immutable and re-running a batch writes nothing (DESIGN.md, "Write").
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from diachron.ingest.errors import StoreConflictError
from diachron.schemas.records import TABLES, arrow_schema

__all__ = ["Store"]

log = logging.getLogger(__name__)

KEYS = {"documents": "doc_id", "chunks": "chunk_id", "quarantine": "quarantine_id", "runs": "run_id"}
SCALAR_INDEXES = {"chunks": ["event_start", "event_end", "doc_id", "recorded_at"],
                  "documents": ["doc_id", "series_id"]}
VECTOR_INDEX_MIN_ROWS = 100_000


class Store:
    """The four diachron tables in one LanceDB database (a local path or an object-store URI).

    Args:
        uri: LanceDB URI.
        dim: embedding dimension of ``chunks.vector`` (needed to create the table).
    """

    def __init__(self, uri: str, *, dim: int) -> None:
        import lancedb

        self.uri = uri
        self.dim = dim
        self.db = lancedb.connect(uri)

    def table(self, name: str) -> Any:
        """Open ``name``, creating it empty with its schema when missing."""
        if name in self._names():
            return self.db.open_table(name)
        schema = arrow_schema(TABLES[name], dim=self.dim)
        return self.db.create_table(name, schema=schema, exist_ok=True)

    def _names(self) -> set[str]:
        result = self.db.list_tables()
        return set(getattr(result, "tables", result))

    def insert_new(self, name: str, table: pa.Table, *, now: datetime | None = None) -> int:
        """Insert rows whose key is not yet present; returns the number inserted.

        ``recorded_at`` (when the table has it) is set to ``now`` (default: the current UTC time) for the
        new rows; rows already stored keep theirs.

        Raises:
            StoreConflictError: the commit failed after LanceDB's own retries (transient; retry the task).
        """
        if table.num_rows == 0:
            return 0
        target = self.table(name)
        if "recorded_at" in table.schema.names:
            stamp = pa.array([now or datetime.now(UTC)] * table.num_rows, type=pa.timestamp("us", tz="UTC"))
            table = table.set_column(table.schema.get_field_index("recorded_at"), "recorded_at", stamp)
        table = table.cast(target.schema)
        try:
            result = target.merge_insert(KEYS[name]).when_not_matched_insert_all().execute(table)
        except OSError as exc:  # lance raises IOError/OSError for commit conflicts
            raise StoreConflictError(f"commit to {name!r} failed: {exc}") from exc
        return int(result.num_inserted_rows)

    def existing(self, name: str, column: str, values: list[str], columns: list[str]) -> pa.Table:
        """Rows of ``name`` whose ``column`` is in ``values`` (matched in Arrow, not via a SQL string)."""
        target = self.table(name)
        if not values or target.count_rows() == 0:
            return pa.table({c: pa.array([], type=target.schema.field(c).type) for c in columns})
        data = target.to_lance().to_table(columns=list(dict.fromkeys([column, *columns])))
        return data.filter(pc.is_in(data[column], value_set=pa.array(values))).select(columns)

    def optimize(self) -> None:
        """Compact tables and (re)build scalar indexes on the time columns; a vector index once large."""
        for name, columns in SCALAR_INDEXES.items():
            target = self.table(name)
            if target.count_rows() == 0:
                continue
            target.optimize()
            for column in columns:
                target.create_scalar_index(column, replace=True)
        chunks = self.table("chunks")
        if chunks.count_rows() >= VECTOR_INDEX_MIN_ROWS:
            chunks.create_index(metric="cosine", vector_column_name="vector", index_type="IVF_HNSW_SQ",
                                replace=True)
