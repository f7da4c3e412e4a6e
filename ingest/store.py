"""LanceDB writes of the bitemporal tables: insert-only upserts, transaction time, per-run commits, indexes.

Rows are keyed by content-derived ids and written with ``merge_insert(key).when_not_matched_insert_all()``:
a committed row is never rewritten, so ``recorded_at`` (transaction time, set here at write) is immutable
and re-running a batch writes nothing (docs/design.md, "Write").

A pipeline run commits in a fixed order (:meth:`Store.begin_run`, then ``documents``, ``chunks``,
``quarantine`` via :meth:`Store.merge_staged`, then :meth:`Store.finish_run`), one Lance transaction per
table, all rows stamped with the run's commit time. The ``runs`` row is the commit marker: it is written
first with status ``committing`` (and the writer's host, pid and lease) and turned to ``success`` last. A
run whose marker is still ``committing`` when its process is gone (same host) or its lease has expired is
*dead*; its rows are invisible to version planning and the next run that produces the same ids replaces
them (``when_matched_update_all`` limited to dead run ids), so a kill at any commit point is repaired with
the new run's ``run_id`` and ``recorded_at``. Rows of a live concurrent run are never touched.
"""

from __future__ import annotations

import json
import logging
import os
import re
import socket
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from diachron.ingest.errors import StoreConflictError
from diachron.ingest.time_index import build_time_index, publish_time_index
from diachron.schemas.records import TABLES, arrow_schema
from diachron.schemas.time_index import index_dir

__all__ = ["COMMIT_LEASE", "Store"]

log = logging.getLogger(__name__)

KEYS = {"documents": "doc_id", "chunks": "chunk_id", "quarantine": "quarantine_id", "runs": "run_id"}
SCALAR_INDEXES = {
    "chunks": ["event_start", "event_end", "doc_id", "recorded_at", "text"],
    "documents": ["doc_id", "series_id"],
}
#: columns indexed for full text (BM25, stemmed, stop words removed), not BTREE: the chunk text, the lexical
#: signal of the ranking (:mod:`diachron.retrieval.search`)
FULL_TEXT = frozenset({"text"})
#: how long a run may stay ``committing`` before another host treats it as dead
COMMIT_LEASE = timedelta(minutes=30)
_RUN_ID = re.compile(r"^[A-Za-z0-9_.:-]+$")


class Store:
    """The four diachron tables in one LanceDB database (a local path or an object-store URI).

    Args:
        uri: LanceDB URI.
        dim: embedding dimension of ``chunks.vector`` (needed to create the table).
        storage_options: object-store options for ``s3://`` … URIs (``endpoint``, ``allow_http``, keys).
    """

    def __init__(self, uri: str, *, dim: int, storage_options: dict[str, str] | None = None) -> None:
        import lancedb

        self.uri = uri
        self.dim = dim
        self.storage_options = storage_options or None
        self.db = lancedb.connect(uri, storage_options=self.storage_options)

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

    # --- per-run commit -----------------------------------------------------------------------------------

    def begin_run(self, row: dict[str, Any], *, now: datetime) -> None:
        """Write the run's commit marker: its ``runs`` row with status ``committing``, host, pid and lease."""
        marker = dict(
            row,
            status="committing",
            finished_at=now,
            config_json=_with_owner(row["config_json"], now + COMMIT_LEASE),
        )
        self._upsert_run(marker)

    def finish_run(self, row: dict[str, Any]) -> None:
        """Replace the run's marker by its final ``runs`` row (status ``success``): the run is committed."""
        self._upsert_run(row)

    def _upsert_run(self, row: dict[str, Any]) -> None:
        from diachron.schemas.records import RunRecord

        table = pa.Table.from_pylist([row], schema=arrow_schema(RunRecord)).cast(self.table("runs").schema)
        try:
            self.table("runs").merge_insert(
                "run_id"
            ).when_matched_update_all().when_not_matched_insert_all().execute(table)
        except OSError as exc:
            raise StoreConflictError(f"commit to 'runs' failed: {exc}") from exc

    def dead_runs(self, *, now: datetime | None = None) -> set[str]:
        """Run ids whose commit marker is ``committing`` but whose writer is gone (same host, pid not alive)
        or whose lease expired, and runs marked ``failed``. Their rows are uncommitted."""
        runs = self.table("runs")
        if runs.count_rows() == 0:
            return set()
        data = runs.to_lance().to_table(columns=["run_id", "status", "config_json"]).to_pylist()
        clock = now or datetime.now(UTC)
        host = socket.gethostname()
        dead = set()
        for r in data:
            if r["status"] == "failed":
                dead.add(r["run_id"])
            elif r["status"] == "committing":
                owner = _owner(r["config_json"])
                gone = owner.get("host") == host and not _alive(owner.get("pid"))
                expired = (
                    owner.get("lease_until") is None or datetime.fromisoformat(owner["lease_until"]) < clock
                )
                if gone or expired:
                    dead.add(r["run_id"])
        return dead

    def mark_failed(self, run_ids: Iterable[str]) -> None:
        """Turn dead ``committing`` markers into ``failed`` (their rows were replaced or never written)."""
        ids = sorted(run_ids)
        if not ids:
            return
        runs = self.table("runs")
        runs.update(where=_in_sql("run_id", ids) + " AND status = 'committing'", values={"status": "failed"})

    def merge_staged(
        self, name: str, batches: Iterator[pa.RecordBatch], *, recorded_at: datetime, replace_runs: set[str]
    ) -> dict[str, int]:
        """Merge staged rows into ``name`` in one transaction; ``{"inserted", "replaced", "duplicates"}``.

        New keys are inserted; keys held by a row of a run in ``replace_runs`` (dead runs) are replaced;
        every other existing key is left alone (insert-only). ``recorded_at`` is set to the commit time on
        every written row; a key repeated in the staged rows is written once (later copies counted in
        ``duplicates``). Rows stream through in batches (constant memory).

        Raises:
            StoreConflictError: the commit failed after Lance's own conflict retries (transient).
        """
        target = self.table(name)
        schema = target.schema
        key = KEYS[name]
        seen: set[str] = set()
        dups = 0

        def stamped() -> Iterator[pa.RecordBatch]:
            nonlocal dups
            for batch in batches:
                table = pa.Table.from_batches([batch])
                ids = table.column(key).to_pylist()
                keep = [i for i, k in enumerate(ids) if not (k in seen or seen.add(k))]  # type: ignore[func-returns-value]
                dups += len(ids) - len(keep)
                if len(keep) < len(ids):
                    table = table.take(keep)
                if "recorded_at" in table.schema.names:
                    stamp = pa.array([recorded_at] * table.num_rows, type=pa.timestamp("us", tz="UTC"))
                    table = table.set_column(
                        table.schema.get_field_index("recorded_at"), "recorded_at", stamp
                    )
                yield from table.select(schema.names).cast(schema).to_batches()

        builder = target.to_lance().merge_insert(key)
        if replace_runs:
            builder = builder.when_matched_update_all(_in_sql("target.run_id", sorted(replace_runs)))
        builder = builder.when_not_matched_insert_all()
        try:
            result = builder.execute(pa.RecordBatchReader.from_batches(schema, stamped()))
        except OSError as exc:
            raise StoreConflictError(f"commit to {name!r} failed: {exc}") from exc
        return {
            "inserted": int(result["num_inserted_rows"]),
            "replaced": int(result["num_updated_rows"]),
            "duplicates": dups,
        }

    @contextmanager
    def commit_lock(self) -> Iterator[None]:
        """Hold the database's commit lock (local databases): one run commits at a time.

        Lance's insert-only ``merge_insert`` does not see a concurrent insert of the same key (measured,
        Lance 14: two processes inserting 40 overlapping keys at once left 80 rows for 50 keys), so two runs
        committing overlapping documents at once would both insert them. The lock is an ``flock`` on
        ``<db>/_staging/.commit.lock``, released when the holder exits, even by SIGKILL. Object-store URIs
        take no lock: concurrent writers there must commit one after another (e.g. one Airflow pool slot).
        """
        if "://" in self.uri and not self.uri.startswith("file://"):
            yield
            return
        import fcntl
        from pathlib import Path

        path = Path(self.uri.removeprefix("file://")) / "_staging" / ".commit.lock"
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("a") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)

    def ids_of_run(self, name: str, run_id: str) -> set[str]:
        """Keys of the rows of ``name`` that run ``run_id`` wrote (a scan of two columns)."""
        key = KEYS[name]
        data = self.table(name).to_lance().to_table(columns=[key], filter=_in_sql("run_id", [run_id]))
        return set(data.column(key).to_pylist())

    def existing(self, name: str, column: str, values: list[str], columns: list[str]) -> pa.Table:
        """Rows of ``name`` whose ``column`` is in ``values`` (matched in Arrow, not via a SQL string)."""
        target = self.table(name)
        if not values or target.count_rows() == 0:
            return pa.table({c: pa.array([], type=target.schema.field(c).type) for c in columns})
        data = target.to_lance().to_table(columns=list(dict.fromkeys([column, *columns])))
        return data.filter(pc.is_in(data[column], value_set=pa.array(values))).select(columns)

    def ensure_indexes(self) -> None:
        """Build the scalar indexes of :data:`SCALAR_INDEXES` that are missing (cheap when all exist): a run
        killed after its data commits, or one that wrote nothing, still leaves the store indexed."""
        for name, columns in SCALAR_INDEXES.items():
            target = self.table(name)
            if target.count_rows() == 0:
                continue
            have = {c for index in target.list_indices() for c in index.columns}
            for column in columns:
                if column not in have:
                    _create_index(target, column)

    def optimize(self) -> None:
        """Compact tables, (re)build scalar indexes on the time columns, the full-text index on the chunk text
        and the time-partitioned vector index.

        The vector index is :mod:`diachron.ingest.time_index` (beside the table; on object storage as
        objects, versioned with it; extended incrementally when rows were only appended): search reads it
        for exact scoring in time order and for its approximate path at scale. No LanceDB vector index is
        built: with a prefilter its recall collapses at wide windows (issue 15).
        """
        for name, columns in SCALAR_INDEXES.items():
            target = self.table(name)
            if target.count_rows() == 0:
                continue
            target.optimize()  # also folds new rows into the existing indexes (the full-text one is kept)
            have = {c for index in target.list_indices() for c in index.columns}
            for column in columns:
                if column not in FULL_TEXT or column not in have:
                    _create_index(target, column)
        dataset = self.table("chunks").to_lance()
        directory = index_dir(str(dataset.uri))
        if directory is not None:
            build_time_index(dataset, directory)
        else:  # object storage: objects beside the table, versioned with it (issue 30)
            publish_time_index(dataset, str(dataset.uri), self.storage_options)


def _create_index(table: Any, column: str) -> None:
    """(Re)build the index of ``column``: full text for :data:`FULL_TEXT`, else BTREE."""
    if column in FULL_TEXT:
        table.create_fts_index(column, replace=True)
    else:
        table.create_scalar_index(column, replace=True)


def _in_sql(column: str, run_ids: list[str]) -> str:
    """``column IN (...)`` for run ids, which are ours (hex, ``dag-…``), never user text: checked anyway."""
    for r in run_ids:
        if not _RUN_ID.match(r):
            raise ValueError(f"not a run id: {r!r}")
    return f"{column} IN ({', '.join(repr(r) for r in run_ids)})"


def _with_owner(config_json: str, lease_until: datetime) -> str:
    config = json.loads(config_json or "{}")
    config["_commit"] = {
        "host": socket.gethostname(),
        "pid": os.getpid(),
        "lease_until": lease_until.isoformat(),
    }
    return json.dumps(config, default=str)


def _owner(config_json: str) -> dict[str, Any]:
    try:
        return dict(json.loads(config_json or "{}").get("_commit") or {})
    except (ValueError, AttributeError):
        return {}


def _alive(pid: Any) -> bool:
    if not isinstance(pid, int):
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
