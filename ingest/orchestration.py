"""Scheduled ingest in four steps — discover, plan shards, process a shard, finalize — for Airflow, the CLI.

The Airflow DAGs (``dags/nightly_refresh.py``, ``dags/backfill.py``) call these functions and nothing
else; tests and scripts call them the same way. Everything returned is small and JSON-serialisable
(paths, ids, counts, resolved settings) so it can travel as XCom; documents travel as staged JSONL files.

1. :func:`discover` reads the configured sources, keeps the documents whose content hash is not yet in
   the ``documents`` table (new documents and changed versions; file mtimes are never used), optionally
   only those whose valid time overlaps a window ``[start, end)``, and stages them as one JSONL file.
2. :func:`plan_shards` splits the staged file into shard files, keeping each version series together.
3. :func:`process_shard` runs :func:`diachron.ingest.pipeline.run_ingest` on one shard file: one Ray job
   against ``RAY_ADDRESS`` (a local Ray when unset). Writes are insert-only with content-derived ids, so a
   retried shard finishes what a failed attempt started and never duplicates a row.
4. :func:`finalize` compacts the tables, rebuilds their indexes and writes one ``runs`` row for the whole
   orchestrated run (``run_id`` = ``dag-<hash>``), next to the per-shard rows written by ``run_ingest``.

Errors keep the ingest taxonomy (``diachron.ingest.errors``): transient ones propagate so Airflow retries
the task; :func:`fail_fast` turns terminal ones into ``AirflowFailException`` (no retry).
"""

from __future__ import annotations

import glob
import json
import logging
import os
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import asdict, dataclass, fields
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pyarrow as pa
from diachron.ingest.errors import ConfigError, TransientIngestError
from diachron.ingest.sources import Rejected, SourceDocument, SourceError, load_source
from diachron.ingest.versioning import LineageConfig, infer_series
from diachron.schemas.errors import TerminalError
from diachron.schemas.ids import content_sha256, short_hash
from diachron.schemas.time import Interval, format_instant, parse_instant

__all__ = [
    "InjectedShardFault",
    "Settings",
    "discover",
    "edge_lookup",
    "expand_sources",
    "fail_fast",
    "finalize",
    "plan_shards",
    "process_shard",
    "resolve_settings",
    "source_record",
]

log = logging.getLogger(__name__)

#: Setting name -> the Airflow Variable / environment variable that supplies it when no DAG param does.
SETTING_SOURCES = {
    "sources": "DIACHRON_SOURCES",
    "db_uri": "DIACHRON_DB_URI",
    "staging_dir": "DIACHRON_STAGING_DIR",
    "ray_address": "RAY_ADDRESS",
    "num_cpus": "DIACHRON_NUM_CPUS",
    "embedder": "DIACHRON_EMBEDDER",
    "max_shards": "DIACHRON_MAX_SHARDS",
    "shard_docs": "DIACHRON_SHARD_DOCS",
}


@dataclass(frozen=True, slots=True)
class Settings:
    """Resolved configuration of one orchestrated run (JSON-serialisable via :func:`dataclasses.asdict`).

    Attributes:
        sources: source specs (files, folders, ``sotu``) or glob patterns, expanded by :func:`discover`.
        db_uri: LanceDB URI shared by every worker (a shared volume path or an object-store URI).
        staging_dir: shared directory for the staged and shard JSONL files.
        ray_address: an existing Ray cluster; ``None`` = a local Ray in the task's process.
        num_cpus: CPUs of that local Ray (``None`` = all).
        embedder: embedder name or model directory (``None`` = the default packaged model).
        max_shards: upper bound on parallel shards.
        shard_docs: target documents per shard (fewer documents give fewer shards).
        valid_from, valid_until: optional valid-time window ``[valid_from, valid_until)`` (ISO-8601, UTC when
            no offset); only documents whose valid time overlaps it are ingested.
        reason: why the run was started (recorded in the ``runs`` row).
        series_field, version_field: record fields that name a document's series and version (e.g.
            ``package``), as :class:`~diachron.ingest.versioning.LineageConfig`; ``None`` = the standard
            fields, series inferred from ``supersedes`` chains.
        fail_first_attempts: fault injection for tests and drills: every shard task raises
            :class:`InjectedShardFault` (transient) on attempts ``1..fail_first_attempts``, right after it has
            committed its chunks, before its quarantine and runs rows — a crash between two commits. 0 = off.
    """

    sources: list[str]
    db_uri: str
    staging_dir: str
    ray_address: str | None = None
    num_cpus: int | None = None
    embedder: str | None = None
    max_shards: int = 4
    shard_docs: int = 64
    valid_from: str | None = None
    valid_until: str | None = None
    reason: str = ""
    fail_first_attempts: int = 0
    series_field: str | None = None
    version_field: str | None = None

    @property
    def lineage(self) -> LineageConfig:
        """The lineage field mapping of these settings."""
        return LineageConfig(series_field=self.series_field, version_field=self.version_field)

    def window(self) -> Interval | None:
        """The valid-time window as a half-open UTC :class:`Interval`, or ``None`` when neither bound is set.

        Raises:
            ConfigError: a bound is not ISO-8601 or the window is empty.
        """
        if not (self.valid_from or self.valid_until):
            return None
        try:
            start = parse_instant(self.valid_from) if self.valid_from else None
            end = parse_instant(self.valid_until) if self.valid_until else None
            return Interval(start, end)
        except ValueError as exc:
            raise ConfigError(
                f"bad valid-time window [{self.valid_from}, {self.valid_until}): {exc}"
            ) from exc


class InjectedShardFault(TransientIngestError):
    """Raised on purpose by :func:`process_shard` when ``fail_first_attempts`` asks for it (transient)."""


def edge_lookup(name: str) -> str | None:
    """Look ``name`` up as an Airflow Variable, then in the environment (inside Airflow tasks only)."""
    from airflow.sdk import Variable

    try:
        value = Variable.get(name, default=None)
    except Exception:  # noqa: BLE001 - no metadata DB / API reachable: the environment still answers
        value = None
    return value if value not in (None, "") else os.environ.get(name)


def resolve_settings(params: Mapping[str, Any], lookup: Callable[[str], str | None]) -> Settings:
    """Settings from DAG params, falling back to ``lookup(SETTING_SOURCES[name])``, then the defaults.

    ``sources`` from ``lookup`` is a JSON list or a comma-separated string.

    Raises:
        ConfigError: no sources, no ``db_uri``/``staging_dir``, or a number that does not parse.
    """
    values: dict[str, Any] = {}
    for f in fields(Settings):
        value = params.get(f.name)
        if value in (None, "", []) and f.name in SETTING_SOURCES:
            value = lookup(SETTING_SOURCES[f.name])
        if value in (None, "", []):
            continue
        values[f.name] = _coerce(f.name, value)
    missing = [name for name in ("sources", "db_uri", "staging_dir") if name not in values]
    if missing:
        raise ConfigError(
            f"missing settings {missing}: give them as DAG params or set "
            f"{[SETTING_SOURCES[m] for m in missing]} (Airflow Variable or environment)"
        )
    settings = Settings(**values)
    settings.window()  # a bad window fails here, before any task runs
    return settings


def _coerce(name: str, value: Any) -> Any:
    if name == "sources":
        if isinstance(value, str):
            value = json.loads(value) if value.lstrip().startswith("[") else value.split(",")
        return [str(v).strip() for v in value if str(v).strip()]
    if name in {"num_cpus", "max_shards", "shard_docs", "fail_first_attempts"}:
        try:
            number = int(value)
        except (TypeError, ValueError) as exc:
            raise ConfigError(f"setting {name!r} must be an integer, got {value!r}") from exc
        if number < (0 if name == "fail_first_attempts" else 1):
            raise ConfigError(f"setting {name!r} is out of range: {number}")
        return number
    return str(value)


@contextmanager
def fail_fast() -> Iterator[None]:
    """Inside an Airflow task: re-raise terminal errors as ``AirflowFailException`` so no retry is spent.

    Terminal = :class:`diachron.schemas.errors.TerminalError` or :class:`diachron.ingest.sources.SourceError`;
    every other exception (transient ones included) propagates unchanged and Airflow retries the task.
    """
    try:
        yield
    except (TerminalError, SourceError) as exc:
        from airflow.sdk.exceptions import AirflowFailException

        raise AirflowFailException(f"terminal {type(exc).__name__}: {exc}") from exc


# --- 1. discover -------------------------------------------------------------------------------------------


def expand_sources(patterns: list[str]) -> list[str]:
    """Expand glob patterns (sorted matches); plain paths and ``sotu`` pass through.

    Raises:
        SourceError: a pattern matches nothing.
    """
    out: list[str] = []
    for pattern in patterns:
        if pattern == "sotu" or not glob.has_magic(pattern):
            out.append(pattern)
            continue
        matches = sorted(glob.glob(pattern, recursive=True))
        if not matches:
            raise SourceError(f"source pattern {pattern!r} matches no file", uri=pattern)
        out.extend(matches)
    return out


def discover(
    settings: Settings, *, run_key: str, data_interval: tuple[datetime | None, datetime | None] = (None, None)
) -> dict[str, Any]:
    """Stage the documents of ``settings.sources`` that are new or changed with respect to the store.

    A document is new or changed when its content hash is not among the stored versions of its series
    (``documents.content_sha256``); unchanged documents are skipped. Unreadable records go to the
    ``quarantine`` table (stage ``source``) with a run-independent id, so a nightly run does not repeat them.

    Args:
        settings: resolved settings (sources, store, window).
        run_key: id of the orchestrated run (the Airflow ``run_id``); names the staging folder.
        data_interval: the Airflow data interval ``[start, end)`` (UTC), recorded in the ``runs`` row.

    Returns:
        ``{"run_key", "settings", "staged", "documents", "unchanged", "outside_window", "rejected",
        "data_interval"}``: ``staged`` is the JSONL path of the documents to ingest, counts are documents.

    Raises:
        SourceError: a source is missing or matches nothing (terminal).
        ConfigError: a bad valid-time window (terminal).
    """
    from diachron.ingest.embedding import resolve_embedder
    from diachron.ingest.pipeline import stored_versions
    from diachron.ingest.store import Store
    from diachron.ingest.versioning import plan_versions

    docs, rejected, outside = _read_sources(settings)
    store = Store(settings.db_uri, dim=resolve_embedder(settings.embedder).dim)
    stored = stored_versions(
        store, docs, store.dead_runs(), settings.lineage
    )  # rows of killed runs are not stored
    todo = {(p.source.doc_id, p.content_sha256) for p in plan_versions(docs, stored, settings.lineage).todo}
    staged = _staging(settings, run_key) / "discovered.jsonl"
    kept = _write_jsonl(staged, (d for d in docs if _take(todo, d)))
    _quarantine_rejected(store, rejected)
    log.info(
        "discover %s: %d to ingest, %d unchanged, %d outside window, %d rejected",
        run_key,
        kept,
        len(docs) - kept,
        outside,
        len(rejected),
    )
    return {
        "run_key": run_key,
        "settings": asdict(settings),
        "staged": str(staged),
        "documents": kept,
        "unchanged": len(docs) - kept,
        "outside_window": outside,
        "rejected": len(rejected),
        "data_interval": [format_instant(t) for t in data_interval],
    }


def _read_sources(settings: Settings) -> tuple[list[SourceDocument], list[Rejected], int]:
    """The sources' documents inside the valid-time window, the rejected records, and how many lay outside.

    Raises:
        SourceError: a source is missing or matches nothing.
    """
    window = settings.window()
    docs: list[SourceDocument] = []
    rejected: list[Rejected] = []
    outside = 0
    for source in expand_sources(settings.sources):
        for item in load_source(source, sotu_years=None):
            if isinstance(item, Rejected):
                rejected.append(item)
            elif _in_window(item, window):
                docs.append(item)
            else:
                outside += 1
    return docs, rejected, outside


def _take(todo: set[tuple[str, str]], doc: SourceDocument) -> bool:
    """True the first time a (doc id, content hash) pair planned for ingest is seen."""
    key = (doc.doc_id, content_sha256(doc.text))
    if key in todo:
        todo.discard(key)
        return True
    return False


def _in_window(doc: SourceDocument, window: Interval | None) -> bool:
    """Valid time ``[valid_from, valid_until)`` (or the publication instant) overlaps the window."""
    if window is None:
        return True
    if doc.valid_from or doc.valid_until:
        return Interval(doc.valid_from, doc.valid_until).overlaps(window)
    return doc.published_at is not None and window.contains(doc.published_at)


def _staging(settings: Settings, run_key: str) -> Path:
    folder = Path(settings.staging_dir) / short_hash(run_key)
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def _instant_text(value: datetime | None, zone: str | None) -> str | None:
    """An instant written so that :mod:`diachron.ingest.sources` reads back the same instant and zone."""
    if value is None:
        return None
    if zone and zone[0] in "+-" and len(zone) == 6:
        sign = -1 if zone[0] == "-" else 1
        offset = timezone(sign * timedelta(hours=int(zone[1:3]), minutes=int(zone[4:6])))
        return value.astimezone(offset).isoformat()
    return format_instant(value)


def source_record(doc: SourceDocument) -> dict[str, Any]:
    """The JSONL record :func:`diachron.ingest.sources.load_source` reads back as ``doc`` (round trip)."""
    zone = doc.source_timezone
    known = {
        "doc_id": doc.doc_id,
        "title": doc.title,
        "text": doc.text,
        "source_uri": doc.source_uri,
        "series_id": doc.series_id,
        "version": doc.version,
        "supersedes": doc.supersedes,
        "relation": doc.relation,
        "published_at": _instant_text(doc.published_at, zone),
        "valid_from": _instant_text(doc.valid_from, zone),
        "valid_until": _instant_text(doc.valid_until, zone),
        "timezone": zone if zone and zone != "UTC" and zone[0] not in "+-" else None,
    }
    return {**doc.metadata, **{k: v for k, v in known.items() if v is not None}}


def _write_jsonl(path: Path, docs: Iterator[SourceDocument] | list[SourceDocument]) -> int:
    tmp = path.with_suffix(".tmp")
    n = 0
    with tmp.open("w", encoding="utf-8") as handle:
        for doc in docs:
            handle.write(json.dumps(source_record(doc), default=str, ensure_ascii=False) + "\n")
            n += 1
    tmp.replace(path)
    return n


def _quarantine_rejected(store: Any, rejected: list[Rejected]) -> None:
    from diachron.ingest.stages import quarantine_row
    from diachron.schemas.records import QuarantineRecord, arrow_schema

    rows = list(
        {
            q["quarantine_id"]: q
            for q in (
                quarantine_row("source", r.record_id, r.reason, r.payload, "discover", None) for r in rejected
            )
        }.values()
    )
    store.insert_new("quarantine", pa.Table.from_pylist(rows, schema=arrow_schema(QuarantineRecord)))


# --- 2. plan shards ----------------------------------------------------------------------------------------


def plan_shards(manifest: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Split the staged documents into at most ``max_shards`` shard files of about ``shard_docs`` documents.

    All versions of a series go to the same shard (the version planner derives one version's
    ``valid_until`` from the next); shards are balanced by document count, largest series first.

    Returns:
        One ``{"index", "path", "documents"}`` per non-empty shard; ``[]`` when nothing was discovered.
    """
    settings = Settings(**manifest["settings"])
    docs = [d for d in load_source(manifest["staged"]) if isinstance(d, SourceDocument)]
    if not docs:
        return []
    groups: dict[str, list[SourceDocument]] = {}
    for doc, series in zip(docs, infer_series(docs, config=settings.lineage), strict=True):
        groups.setdefault(series, []).append(doc)
    n = max(1, min(settings.max_shards, -(-len(docs) // settings.shard_docs), len(groups)))
    shards: list[list[SourceDocument]] = [[] for _ in range(n)]
    for group in sorted(groups.values(), key=len, reverse=True):
        min(shards, key=len).extend(group)
    folder = Path(manifest["staged"]).parent
    out = []
    for i, shard in enumerate(shards):
        path = folder / f"shard-{i:03d}.jsonl"
        out.append({"index": i, "path": str(path), "documents": _write_jsonl(path, shard)})
    return out


# --- 3. process one shard ----------------------------------------------------------------------------------


def process_shard(
    shard: Mapping[str, Any], manifest: Mapping[str, Any], *, attempt: int = 1
) -> dict[str, Any]:
    """Ingest one shard file with :func:`diachron.ingest.pipeline.run_ingest` (one Ray job; no optimize).

    Args:
        shard: one item of :func:`plan_shards`.
        manifest: the result of :func:`discover` (settings travel in it).
        attempt: 1-based attempt number (Airflow's ``try_number``), used by the fault injection only.

    Returns:
        ``{"index", "run_id", "documents_seen", "documents_written", "chunks_written", "quarantined",
        "seconds"}`` of the shard's ``runs`` row (a retry counts only what that attempt wrote).

    Raises:
        InjectedShardFault: when ``attempt <= fail_first_attempts`` (transient, after a partial write).
        WorkerLostError, StoreConflictError: transient, retry the task.
        EmbedderMismatchError, ConfigError, SourceError: terminal.
    """
    from diachron.ingest.pipeline import IngestConfig, run_ingest
    from diachron.ingest.stages import StageConfig

    settings = Settings(**manifest["settings"])
    config = IngestConfig(
        db_uri=settings.db_uri,
        stages=StageConfig(embedder=settings.embedder),
        sotu_years=None,
        ray_address=settings.ray_address,
        num_cpus=settings.num_cpus,
        optimize=False,
        lineage=settings.lineage,
    )
    inject = attempt <= settings.fail_first_attempts

    def progress(event: str, info: dict[str, Any]) -> None:
        log.info("shard %s %s %s", shard["index"], event, info)
        if inject and event == "committed" and info["table"] == "chunks":
            raise InjectedShardFault(
                f"injected fault in shard {shard['index']} on attempt {attempt} "
                f"after {info['inserted'] + info['replaced']} chunks were committed"
            )

    summary = run_ingest([shard["path"]], config, progress=progress)
    if inject:  # nothing was new, so no batch ran: still fail as asked
        raise InjectedShardFault(f"injected fault in shard {shard['index']} on attempt {attempt}")
    return {
        "index": shard["index"],
        "run_id": summary.run_id,
        "documents_seen": summary.documents_seen,
        "documents_written": summary.documents_written,
        "chunks_written": summary.chunks_written,
        "quarantined": summary.quarantined,
        "seconds": round(summary.seconds, 3),
    }


# --- 4. finalize -------------------------------------------------------------------------------------------


def finalize(
    manifest: Mapping[str, Any],
    shard_results: list[Mapping[str, Any]],
    *,
    dag_id: str,
    started_at: datetime | None = None,
) -> dict[str, Any]:
    """Compact the tables, rebuild their indexes, and write the orchestrated run's ``runs`` row.

    The row's ``run_id`` is ``dag-`` + a hash of ``dag_id`` and the run key, so re-running finalize writes
    nothing new; its ``config_json`` holds the DAG id, run key, data interval, window, reason and shard run
    ids.

    Returns:
        ``{"run_id", "documents_discovered", "documents_written", "chunks_written", "shards"}``.

    Raises:
        StoreConflictError: a commit failed (transient).
    """
    from diachron.ingest.embedding import resolve_embedder
    from diachron.ingest.store import Store
    from diachron.schemas.records import RunRecord, arrow_schema

    settings = Settings(**manifest["settings"])
    spec = resolve_embedder(settings.embedder)
    store = Store(settings.db_uri, dim=spec.dim)
    written = sum(r["documents_written"] for r in shard_results)
    chunks = sum(r["chunks_written"] for r in shard_results)
    if written or chunks:
        store.optimize()
    run_id = "dag-" + short_hash(dag_id, manifest["run_key"])
    row = _finalize_row(manifest, shard_results, run_id, dag_id, spec, started_at)
    store.insert_new(
        "runs", pa.Table.from_pylist([row], schema=arrow_schema(RunRecord)), now=row["finished_at"]
    )
    return {
        "run_id": run_id,
        "documents_discovered": manifest["documents"],
        "documents_written": written,
        "chunks_written": chunks,
        "shards": len(shard_results),
    }


def _finalize_row(
    manifest: Mapping[str, Any],
    shard_results: list[Mapping[str, Any]],
    run_id: str,
    dag_id: str,
    spec: Any,
    started_at: datetime | None,
) -> dict[str, Any]:
    """The orchestrated run's ``runs`` row (``finished_at`` now, UTC)."""
    settings = Settings(**manifest["settings"])
    config = {
        "dag_id": dag_id,
        "run_key": manifest["run_key"],
        "data_interval": manifest["data_interval"],
        "valid_window": [settings.valid_from, settings.valid_until],
        "reason": settings.reason,
        "shard_run_ids": [r["run_id"] for r in shard_results],
        "settings": manifest["settings"],
        "unchanged": manifest["unchanged"],
        "outside_window": manifest["outside_window"],
    }
    finished = datetime.now(UTC)
    return {
        "run_id": run_id,
        "started_at": started_at or finished,
        "finished_at": finished,
        "sources_json": json.dumps(settings.sources),
        "config_json": json.dumps(config, default=str),
        "embedder": spec.id,
        "embedding_dim": spec.dim,
        "documents_seen": manifest["documents"],
        "documents_written": sum(r["documents_written"] for r in shard_results),
        "chunks_written": sum(r["chunks_written"] for r in shard_results),
        "quarantined": manifest["rejected"] + sum(r["quarantined"] for r in shard_results),
        "status": "success",
    }
