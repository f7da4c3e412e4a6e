"""The ingest pipeline: sources -> versions -> Ray Data (annotate+chunk, embed, validate) -> LanceDB.

One entry point, :func:`run_ingest`, shared by the CLI, the Airflow DAGs and the tests. The driver reads
sources and plans versions; Ray runs the stages in parallel (a local Ray, or the cluster at
``IngestConfig.ray_address``); the driver streams the results into LanceDB with insert-only upserts and
writes one ``runs`` row per run.
"""

from __future__ import annotations

import json
import logging
import time
import uuid
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from typing import Any

import pyarrow as pa

from diachron.ingest.errors import EmbedderMismatchError, WorkerLostError
from diachron.ingest.sources import SOTU_DEFAULT_YEARS, Rejected, SourceDocument, load_source
from diachron.ingest.stages import AnnotateStage, EmbedStage, StageConfig, ValidateStage, quarantine_id
from diachron.ingest.store import Store
from diachron.ingest.validation import ValidationConfig
from diachron.ingest.versioning import PlannedDocument, StoredVersion, plan_versions
from diachron.schemas.records import ChunkRecord, DocumentRecord, QuarantineRecord, RunRecord, arrow_schema

__all__ = ["IngestConfig", "RunSummary", "run_ingest"]

log = logging.getLogger(__name__)

Progress = Callable[[str, dict[str, Any]], None]


@dataclass(slots=True)
class IngestConfig:
    """Configuration of one ingest run (resolved once at the edge: CLI flags, DAG params, env).

    Attributes:
        db_uri: LanceDB URI (local directory or object store).
        stages: stage configuration (embedder, chunk size, annotator, time zone, fiscal calendar).
        validation: interval bounds for validation.
        sotu_years: inclusive year slice of the ``sotu`` source; ``None`` = the whole corpus.
        ray_address: an existing Ray cluster (``None`` = start or reuse a local Ray).
        num_cpus: CPUs for a local Ray (``None`` = all).
        batch_size: documents per Ray batch.
        optimize: compact tables and rebuild scalar indexes after writing.
    """

    db_uri: str
    stages: StageConfig = field(default_factory=StageConfig)
    validation: ValidationConfig = field(default_factory=ValidationConfig)
    sotu_years: tuple[int, int] | None = SOTU_DEFAULT_YEARS
    ray_address: str | None = None
    num_cpus: int | None = None
    batch_size: int = 16
    optimize: bool = True


@dataclass(slots=True)
class RunSummary:
    """What a run did: counts, wall time (seconds) and the run id recorded in ``runs``."""

    run_id: str
    documents_seen: int
    documents_unchanged: int
    documents_written: int
    chunks_written: int
    quarantined: int
    seconds: float
    status: str = "success"

    @property
    def chunks_per_second(self) -> float:
        return self.chunks_written / self.seconds if self.seconds else 0.0


def _ensure_ray(address: str | None, num_cpus: int | None) -> None:
    import ray

    if ray.is_initialized():
        return
    kwargs: dict[str, Any] = {"include_dashboard": False, "ignore_reinit_error": True,
                              "logging_level": logging.WARNING, "log_to_driver": True}
    if address:
        ray.init(address=address, **kwargs)
    else:
        ray.init(num_cpus=num_cpus, **kwargs)


def _stored_versions(store: Store, series: list[str]) -> list[StoredVersion]:
    table = store.existing("documents", "series_id", series,
                           ["doc_id", "series_id", "content_sha256", "version", "recorded_at"])
    return [StoredVersion(r["doc_id"], r["series_id"], r["content_sha256"], r["version"], r["recorded_at"].isoformat())
            for r in table.to_pylist()]


def _check_embedder(store: Store, embedder_id: str) -> None:
    runs = store.table("runs")
    if runs.count_rows() == 0:
        return
    used = set(runs.to_lance().to_table(columns=["embedder"]).column("embedder").to_pylist())
    used.discard("")
    if used and used != {embedder_id}:
        raise EmbedderMismatchError(f"store {store.uri} was built with {sorted(used)}, not {embedder_id}; "
                                    "use the same embedder or a new database")


def _doc_input_rows(todo: list[PlannedDocument]) -> list[dict[str, Any]]:
    return [{"doc_id": p.doc_id, "series_id": p.series_id, "title": p.source.title, "text": p.source.text,
             "published_at": p.source.published_at, "valid_from": p.source.valid_from,
             "valid_until": p.source.valid_until} for p in todo]


def _document_row(p: PlannedDocument, stage1: dict[str, Any], annotator: str, run_id: str) -> dict[str, Any]:
    src: SourceDocument = p.source
    return {"doc_id": p.doc_id, "series_id": p.series_id, "title": src.title, "text": src.text,
            "content_sha256": p.content_sha256, "published_at": stage1.get("published_at", src.published_at),
            "published_at_source": stage1.get("published_at_source", "metadata" if src.published_at else "unknown"),
            "source_timezone": src.source_timezone, "abstract": stage1.get("abstract", ""), "version": src.version,
            "supersedes": p.supersedes, "relation": p.relation, "valid_from": src.valid_from,
            "valid_until": src.valid_until, "source_uri": src.source_uri,
            "metadata_json": json.dumps(src.metadata, default=str, sort_keys=True), "annotator": annotator,
            "recorded_at": None, "run_id": run_id}


class _Writer:
    """Buffers stage output and writes it to the store in groups (chunks first, then their documents)."""

    def __init__(self, store: Store, run_id: str, now: Callable[[], datetime], dim: int) -> None:
        self.store, self.run_id, self.now, self.dim = store, run_id, now, dim
        self.chunks_written = 0
        self.quarantine: list[dict[str, Any]] = []
        self.stage1: dict[str, dict[str, Any]] = {}
        self.annotators: dict[str, str] = {}

    def consume(self, batch: pa.Table, embedder_id: str) -> None:
        keep = []
        for row in batch.to_pylist():
            doc_id = row["doc_id"]
            if row["seq"] >= 0:
                self.stage1.setdefault(doc_id, {k: row[k] for k in ("published_at", "published_at_source", "abstract")})
                self.annotators.setdefault(doc_id, row["annotator"])
            for entry in json.loads(row["_quarantine"]) if row["_quarantine"] else []:
                self._quarantine(entry["stage"], row["chunk_id"] or doc_id, entry["reason"],
                                 entry.get("payload") or {"chunk_id": row["chunk_id"], "doc_id": doc_id})
            if row["_rejected"]:
                if row["chunk_id"] is not None:
                    self._quarantine("validate_chunk", row["chunk_id"], row["_rejected"],
                                     {"chunk_id": row["chunk_id"], "doc_id": doc_id, "text": row["text"]})
                continue
            row.update(embedder=embedder_id, recorded_at=None, run_id=self.run_id)
            keep.append({k: row[k] for k in ChunkRecord.__slots__})
        table = pa.Table.from_pylist(keep, schema=arrow_schema(ChunkRecord, dim=self.dim))
        self.chunks_written += self.store.insert_new("chunks", table, now=self.now())

    def _quarantine(self, stage: str, record_id: str, reason: str, payload: dict[str, Any]) -> None:
        self.quarantine.append({"quarantine_id": quarantine_id(self.run_id, stage, record_id, reason),
                                "run_id": self.run_id, "stage": stage, "record_id": record_id, "reason": reason,
                                "payload_json": json.dumps(payload, default=str), "recorded_at": None})

    def reject_sources(self, rejected: Iterable[Rejected]) -> None:
        for r in rejected:
            self._quarantine("source", r.record_id, r.reason, r.payload)

    def flush_quarantine(self) -> int:
        table = pa.Table.from_pylist(self.quarantine, schema=arrow_schema(QuarantineRecord))
        return self.store.insert_new("quarantine", table, now=self.now())


def run_ingest(sources: list[str], config: IngestConfig, *, progress: Progress | None = None,
               clock: Callable[[], datetime] | None = None) -> RunSummary:
    """Ingest ``sources`` into the store at ``config.db_uri``.

    Args:
        sources: source specs (see :func:`diachron.ingest.sources.load_source`).
        config: run configuration.
        progress: optional callback ``(event, info)`` for phases (``loaded``, ``planned``, ``batch``, ``done``).
        clock: transaction-time clock (default: current UTC time); injectable for tests.

    Returns:
        A :class:`RunSummary`; the same counts are in the ``runs`` row.

    Raises:
        SourceError: a source path is missing or of unknown format (terminal).
        EmbedderMismatchError: the store was built by another embedder (terminal).
        WorkerLostError: Ray lost a worker (transient: retry).
        StoreConflictError: a LanceDB commit failed (transient: retry).
    """
    now = clock or (lambda: datetime.now(UTC))
    emit = progress or (lambda event, info: None)
    t0, started, run_id = time.perf_counter(), now(), uuid.uuid4().hex[:16]
    _ensure_ray(config.ray_address, config.num_cpus)  # before LanceDB: no fork after LanceDB (STACK_NOTES)
    docs, rejected = _load(sources, config)
    emit("loaded", {"documents": len(docs), "rejected": len(rejected)})

    from diachron.ingest.embedding import resolve_embedder

    spec = resolve_embedder(config.stages.embedder)
    store = Store(config.db_uri, dim=spec.dim)
    _check_embedder(store, spec.id)
    plan = plan_versions(docs, _stored_versions(store, sorted({d.series_id or d.doc_id for d in docs})))
    emit("planned", {"todo": len(plan.todo), "unchanged": len(plan.unchanged)})

    writer = _Writer(store, run_id, now, spec.dim)
    writer.reject_sources(rejected)
    if plan.todo:
        _run_stages(plan.todo, config, writer, spec.id, emit)
    doc_rows = [_document_row(p, writer.stage1.get(p.doc_id, {}), writer.annotators.get(p.doc_id, "none"), run_id)
                for p in plan.todo]
    docs_written = store.insert_new("documents", pa.Table.from_pylist(doc_rows, schema=arrow_schema(DocumentRecord)),
                                    now=now())
    quarantined = writer.flush_quarantine()
    if config.optimize and (docs_written or writer.chunks_written):
        store.optimize()
    summary = RunSummary(run_id, len(docs), len(plan.unchanged), docs_written, writer.chunks_written, quarantined,
                         time.perf_counter() - t0)
    _write_run(store, summary, sources, config, spec, started, now())
    emit("done", asdict(summary))
    return summary


def _load(sources: list[str], config: IngestConfig) -> tuple[list[SourceDocument], list[Rejected]]:
    docs: list[SourceDocument] = []
    rejected: list[Rejected] = []
    for source in sources:
        for item in load_source(source, sotu_years=config.sotu_years):
            (rejected if isinstance(item, Rejected) else docs).append(item)  # type: ignore[arg-type]
    return docs, rejected


def _run_stages(todo: list[PlannedDocument], config: IngestConfig, writer: _Writer, embedder_id: str,
                emit: Progress) -> None:
    import ray
    import ray.data
    from ray.data import ActorPoolStrategy

    ctx = ray.data.DataContext.get_current()
    ctx.enable_progress_bars = False
    rows = _doc_input_rows(todo)
    # from_items builds the blocks in the driver: ``from_arrow`` runs a metadata task whose worker aborted
    # here ("Mutex corrupt", abseil) under load; Ray retried it, but a new user should not see that.
    ds = ray.data.from_items(rows, override_num_blocks=max(1, -(-len(rows) // config.batch_size)))
    ds = ds.map_batches(AnnotateStage, fn_constructor_args=(config.stages,), batch_format="pyarrow",
                        batch_size=config.batch_size, compute=ActorPoolStrategy(size=1), num_cpus=0.5)
    ds = ds.map_batches(EmbedStage, fn_constructor_args=(config.stages,), batch_format="pyarrow",
                        batch_size=config.stages.embed_batch_size * 4, compute=ActorPoolStrategy(size=1), num_cpus=1)
    ds = ds.map_batches(ValidateStage, fn_constructor_args=(config.validation,), batch_format="pyarrow",
                        batch_size=256, compute=ActorPoolStrategy(size=1), num_cpus=0.25)
    try:
        for batch in ds.iter_batches(batch_format="pyarrow", batch_size=512):
            writer.consume(batch, embedder_id)
            emit("batch", {"chunks_written": writer.chunks_written, "documents_done": len(writer.stage1),
                           "documents_total": len(todo)})
    except ray.exceptions.RayActorError as exc:
        raise WorkerLostError(f"a Ray worker was lost: {exc}") from exc


def _write_run(store: Store, s: RunSummary, sources: list[str], config: IngestConfig, spec: Any,
               started: datetime, finished: datetime) -> None:
    row = {"run_id": s.run_id, "started_at": started, "finished_at": finished, "sources_json": json.dumps(sources),
           "config_json": json.dumps(asdict(config), default=str), "embedder": spec.id, "embedding_dim": spec.dim,
           "documents_seen": s.documents_seen, "documents_written": s.documents_written,
           "chunks_written": s.chunks_written, "quarantined": s.quarantined, "status": s.status}
    store.insert_new("runs", pa.Table.from_pylist([row], schema=arrow_schema(RunRecord)), now=finished)
