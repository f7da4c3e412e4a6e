"""Sources read by Ray workers: each shard parsed where it runs, its documents staged as Lance fragments.

The driver splits the sources into shards (:func:`diachron.ingest.sources.source_shards`: byte ranges,
row groups, runs of files; sizes and names only) and runs one Ray Data task per shard. A task reads and
validates its records (:func:`diachron.ingest.sources.read_shard`, the same parser as
:func:`~diachron.ingest.sources.load_source`), maps the lineage fields
(:func:`~diachron.ingest.versioning.map_fields`), hashes each text, and writes the documents to the run's
staged ``incoming`` table and each rejected record to its staged ``quarantine`` (a row with the reason);
it hands back fragment metadata and counts only. Every document carries ``seq`` (shard index × 2³² +
position in the shard), so the source order survives.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

import pyarrow as pa

__all__ = ["INCOMING_SCHEMA", "cluster_cpus", "parse_shard", "read_sources"]

TS = pa.timestamp("us", tz="UTC")
#: the staged ``incoming`` table: one row per source document, mapped lineage fields, text and its hash
INCOMING_SCHEMA = pa.schema(
    [
        ("seq", pa.int64()),
        ("doc_id", pa.string()),
        ("title", pa.string()),
        ("text", pa.string()),
        ("content_sha256", pa.string()),
        ("published_at", TS),
        ("source_timezone", pa.string()),
        ("series_id", pa.string()),
        ("version", pa.string()),
        ("supersedes", pa.string()),
        ("relation", pa.string()),
        ("valid_from", TS),
        ("valid_until", TS),
        ("source_uri", pa.string()),
        ("metadata_json", pa.string()),
        ("superseded_by", pa.string()),
    ]
)
_FLUSH_ROWS = 2048
_FLUSH_CHARS = 32 << 20


def _incoming_row(doc: Any, seq: int) -> dict[str, Any]:
    from diachron.schemas.ids import content_sha256

    superseded_by = doc.metadata.get("superseded_by")
    return {
        "seq": seq,
        "doc_id": doc.doc_id,
        "title": doc.title,
        "text": doc.text,
        "content_sha256": content_sha256(doc.text),
        "published_at": doc.published_at,
        "source_timezone": doc.source_timezone,
        "series_id": doc.series_id,
        "version": doc.version,
        "supersedes": doc.supersedes,
        "relation": doc.relation,
        "valid_from": doc.valid_from,
        "valid_until": doc.valid_until,
        "source_uri": doc.source_uri,
        "metadata_json": json.dumps(doc.metadata, default=str, sort_keys=True),
        "superseded_by": None
        if superseded_by in (None, "") or isinstance(superseded_by, dict | list)
        else str(superseded_by),
    }


def parse_shard(
    row: dict[str, Any], *, limits: Any, lineage: Any, staging: Any, run_id: str, started: datetime
) -> dict[str, Any]:
    """Ray Data ``map`` step (a worker): read one shard, stage its documents and its rejected records.

    Returns ``{"incoming", "quarantine"}`` (fragment metadata, JSON lists) and ``documents`` /
    ``rejected`` (counts).
    """
    from diachron.ingest.sources import Rejected, read_shard
    from diachron.ingest.stages import quarantine_row
    from diachron.ingest.versioning import map_fields
    from diachron.schemas.records import QuarantineRecord, arrow_schema

    base = int(row["index"]) << 32
    docs: list[dict[str, Any]] = []
    quarantine: dict[str, dict[str, Any]] = {}
    fragments: list[str] = []
    counts = {"documents": 0, "rejected": 0}
    chars = 0

    def flush() -> None:
        nonlocal chars
        if docs:
            fragments.extend(staging.write("incoming", pa.Table.from_pylist(docs, schema=INCOMING_SCHEMA)))
        docs.clear()
        chars = 0

    for k, item in enumerate(read_shard(json.loads(row["shard"]), limits=limits)):
        if isinstance(item, Rejected):
            counts["rejected"] += 1
            q = quarantine_row("source", item.record_id, item.reason, item.payload, run_id, started)
            quarantine.setdefault(q["quarantine_id"], q)
            continue
        counts["documents"] += 1
        docs.append(_incoming_row(map_fields(item, lineage), base + k))
        chars += len(item.text)
        if len(docs) >= _FLUSH_ROWS or chars >= _FLUSH_CHARS:
            flush()
    flush()
    staged_q = staging.write(
        "quarantine", pa.Table.from_pylist(list(quarantine.values()), schema=arrow_schema(QuarantineRecord))
    )
    return {"incoming": json.dumps(fragments), "quarantine": json.dumps(staged_q), **counts}


def read_sources(
    shards: list[dict[str, Any]], *, limits: Any, lineage: Any, staging: Any, run_id: str, started: datetime
) -> dict[str, Any]:
    """Parse ``shards`` in parallel Ray tasks (driver side: only fragment metadata and counts come back).

    Returns ``{"incoming": [...], "quarantine": [...], "documents": n, "rejected": m}``.
    """
    import ray
    import ray.data

    items = [{"index": i, "shard": json.dumps(s)} for i, s in enumerate(shards)]
    ds = ray.data.from_items(items, override_num_blocks=max(1, len(items)))
    ds = ds.map(
        parse_shard,
        fn_kwargs={
            "limits": limits,
            "lineage": lineage,
            "staging": staging,
            "run_id": run_id,
            "started": started,
        },
        num_cpus=0.1,
        compute=ray.data.TaskPoolStrategy(size=min(len(items), cluster_cpus())),
    )  # a concurrent
    # run's actors may hold most CPUs: a small slot, a few tasks at a time
    out: dict[str, Any] = {"incoming": [], "quarantine": [], "documents": 0, "rejected": 0}
    for part in ds.iter_rows():
        for name in ("incoming", "quarantine"):
            out[name] += json.loads(part[name])
        out["documents"] += part["documents"]
        out["rejected"] += part["rejected"]
    return out


def cluster_cpus() -> int:
    """CPUs of the Ray cluster this process is connected to (at least 1)."""
    import ray

    return max(1, int(ray.cluster_resources().get("CPU", 1)))
