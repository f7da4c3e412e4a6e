"""Per-run staging of rows written by Ray workers, committed once per run by the driver.

Workers write their blocks as Lance fragments under ``<db>/_staging/<run_id>/<table>.lance`` (the same
URI scheme as the database: a shared path or an object store) and hand back only the fragments'
metadata (JSON, a few hundred bytes each). The driver commits those fragments into the staging dataset
(one Lance ``Overwrite`` transaction per table), then :meth:`diachron.ingest.store.Store.merge_staged`
merges each staged table into its target in one transaction. Fragments of a retried or killed task
that never reached the driver are never committed (Lance ignores uncommitted files); the staging
folder is dropped after the run's commit.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pyarrow as pa

__all__ = ["Staging", "merge_run_table"]


class Staging:
    """The staging area of one run.

    Args:
        db_uri: the LanceDB URI of the target database.
        run_id: the run's id (names the folder).
        storage_options: object-store options (``endpoint``, ``allow_http``, keys …) or ``None``.
    """

    def __init__(self, db_uri: str, run_id: str, storage_options: dict[str, str] | None = None) -> None:
        self.root = f"{db_uri.rstrip('/')}/_staging/{run_id}"
        self.storage_options = storage_options or None

    def uri(self, name: str) -> str:
        return f"{self.root}/{name}.lance"

    def write(self, name: str, table: pa.Table) -> list[str]:
        """Write ``table`` as uncommitted fragments of staged table ``name``; returns their metadata (JSON).

        Runs on a worker. Nothing becomes visible until :meth:`commit`.
        """
        if table.num_rows == 0:
            return []
        import os

        os.environ.setdefault(
            "LANCE_LOG", "error"
        )  # before lance loads in a worker: no "will be created" noise
        from lance.fragment import write_fragments

        fragments = write_fragments(
            table, self.uri(name), schema=table.schema, storage_options=self.storage_options
        )
        return [json.dumps(f.to_json()) for f in fragments]

    def commit(self, name: str, fragments: list[str], schema: pa.Schema) -> Any:
        """Commit the fragments of ``name`` (one transaction); the staged ``LanceDataset``, or ``None``."""
        if not fragments:
            return None
        import lance
        from lance.fragment import FragmentMetadata

        metas = [FragmentMetadata.from_json(f) for f in fragments]
        # ids must be unique within a dataset: workers wrote them without coordination
        for i, meta in enumerate(metas):
            meta.id = i
        return lance.LanceDataset.commit(
            self.uri(name),
            lance.LanceOperation.Overwrite(schema, metas),
            storage_options=self.storage_options,
        )

    @staticmethod
    def batches(
        dataset: Any, *, order_by: str | None = None, batch_size: int = 1024
    ) -> Iterator[pa.RecordBatch]:
        """Stream the staged rows (optionally sorted by ``order_by``, nulls first) in batches."""
        scanner = dataset.scanner(batch_size=batch_size, order_by=[order_by] if order_by else None)
        yield from scanner.to_reader()

    def drop(self) -> None:
        """Delete the staging folder (best effort: leftovers are invisible and harmless)."""
        import os

        import pyarrow.fs as pafs

        try:
            if self.root.startswith("s3://"):
                env = {k.lower(): v for k, v in os.environ.items() if k.startswith("AWS_")}
                fs, path = _s3({**env, **(self.storage_options or {})}), self.root.split("://", 1)[1]
            elif "://" in self.root and not self.root.startswith("file://"):
                fs, path = pafs.FileSystem.from_uri(self.root)
            else:
                fs, path = pafs.LocalFileSystem(), self.root.removeprefix("file://")
            fs.delete_dir(path)
        except (OSError, ValueError, pa.ArrowException):
            pass


def _s3(options: dict[str, str]) -> Any:
    """A pyarrow S3 filesystem from Lance-style options (``aws_endpoint``, ``allow_http``, keys, region)."""
    import pyarrow.fs as pafs

    endpoint = options.get("aws_endpoint") or options.get("endpoint") or options.get("aws_endpoint_url")
    allow_http = str(options.get("allow_http") or options.get("aws_allow_http") or "").lower() == "true"
    return pafs.S3FileSystem(
        access_key=options.get("aws_access_key_id"),
        secret_key=options.get("aws_secret_access_key"),
        region=options.get("aws_region") or options.get("region") or "us-east-1",
        endpoint_override=endpoint.split("://", 1)[-1] if endpoint else None,
        scheme="http" if allow_http else "https",
    )


def merge_run_table(
    name: str,
    fragments: list[str],
    *,
    staging: Staging,
    db_uri: str,
    dim: int,
    recorded_at: Any,
    replace_runs: set[str],
    run_id: str,
) -> dict[str, int]:
    """Merge one staged table of run ``run_id`` into the database (runs as a Ray task beside the driver).

    Commits ``fragments`` (worker fragment metadata, JSON) into the staged table ``name``, then streams its
    rows into the target with :meth:`~diachron.ingest.store.Store.merge_staged` (one transaction; ``chunks``
    in ``event_start`` order, and only chunks of documents this run wrote: a concurrent run owns the
    others). Returns ``{"inserted", "replaced", "duplicates"}``.

    Raises:
        StoreConflictError: the commit failed after Lance's own retries (transient).
    """
    from diachron.ingest.store import Store
    from diachron.schemas.records import TABLES, arrow_schema

    empty = {"inserted": 0, "replaced": 0, "duplicates": 0}
    dataset = staging.commit(name, fragments, arrow_schema(TABLES[name], dim=dim))
    if dataset is None:
        return empty
    store = Store(db_uri, dim=dim, storage_options=staging.storage_options)
    batches = Staging.batches(dataset, order_by="event_start" if name == "chunks" else None)
    if name == "chunks":
        batches = _of_documents(batches, store.ids_of_run("documents", run_id))
    return store.merge_staged(name, batches, recorded_at=recorded_at, replace_runs=replace_runs)


def _of_documents(batches: Iterator[pa.RecordBatch], doc_ids: set[str]) -> Iterator[pa.RecordBatch]:
    import pyarrow.compute as pc

    allowed = pa.array(sorted(doc_ids), type=pa.string())
    for batch in batches:
        yield batch.filter(pc.is_in(batch.column("doc_id"), value_set=allowed))
