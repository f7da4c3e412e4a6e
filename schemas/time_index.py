"""The on-disk contract of the time-partitioned vector index (issue 15), shared by its writer and reader.

Written by :mod:`diachron.ingest.time_index` at ``optimize``; read by :mod:`diachron.retrieval.partitioned`.
A directory beside the table (``<db>/chunks.lance`` → ``<db>/chunks.time_index/``, :func:`index_dir`)
holds, for the ``chunks`` rows ``[0, num_rows)`` of one table version:

* ``manifest.json`` — :data:`FORMAT`, ``table_version``, ``num_rows``, ``dim``, ``segment_rows``,
  ``ann_min_rows``, ``levels`` (per ANN level: ``nprobe``, ``nlist``, measured ``recall_at_10``), and
  ``probe_ids`` (a few ``chunk_id`` values with their offsets, to check the rows still line up);
* ``order.npy`` — int32 ``(num_rows,)``: time position → row offset (rows by hull start, unknown time last);
* ``vectors.npy`` — float32 ``(num_rows, dim)`` in time order (memory-mapped by the reader);
* ``vectors_int8.npy`` — the same rows as int8 codes (:func:`quantize`, scale ``int8_scale.npy`` float32
  ``(dim,)``: per dimension the largest absolute value over the rows ÷ 127), the reader's first pass;
* ``nodes.npz`` — the tree (:func:`tree_nodes`) and per-node statistics (:data:`NODE_STATS`);
* ``ann.npz`` — per ANN node an IVF partition of its rows: ``node_lists`` int64 ``(nodes + 1,)`` (lists
  of node ``i`` are ``node_lists[i]:node_lists[i + 1]``) and ``list_start`` int64 ``(lists + 1,)``;
  ``centroids.npy`` float32 ``(lists, dim)`` and ``members.npy`` int32 (time positions grouped by list),
  memory-mapped by the reader;
* the classed entries (:mod:`diachron.ingest.classed_layout`): ``classed_segments.npy`` int64 ``(groups, 3)``
  = ``(width, first entry, entries)`` per group (``width`` = ``2**k`` for the finite length class ``k``,
  else :data:`GROUP_PAST` / :data:`GROUP_FUTURE` / :data:`GROUP_ALWAYS`); per entry ``classed_start.npy`` /
  ``classed_end.npy`` int64, ``classed_row.npy`` int32 (row offset) and ``classed_int8.npy`` int8
  ``(entries, dim)`` (a copy of the row's int8 codes), all memory-mapped by the reader.

Time values are int64 µs since the epoch (UTC), open sides as ``±2**61``; intervals are half-open.

**On object storage** (``s3://…``, issue 30) the same files are objects under the table's URI, one prefix
per table version covered: ``<db>/chunks.time_index/v<table_version>/<file>``, and the pointer object
``<db>/chunks.time_index/latest.json`` (``{"format", "table_version", "num_rows"}``, written last, so a
reader never sees a half-written version). :func:`index_uri` gives the prefix, :func:`filesystem` the
pyarrow filesystem (the table's storage options over the ``AWS_*`` environment).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np
from diachron.schemas.time import OPEN_FUTURE, OPEN_PAST  # re-exported: defined once, in schemas.time

__all__ = [
    "ANN_FILE",
    "CENTROIDS_FILE",
    "CLASSED_END_FILE",
    "CLASSED_ROW_FILE",
    "CLASSED_SEGMENTS_FILE",
    "CLASSED_START_FILE",
    "CLASSED_CODES_FILE",
    "INT8_SCALE_FILE",
    "VECTORS_INT8_FILE",
    "int8_scale",
    "quantize",
    "GROUP_ALWAYS",
    "GROUP_FUTURE",
    "GROUP_PAST",
    "OPEN_FUTURE",
    "OPEN_PAST",
    "MEMBERS_FILE",
    "DIR_SUFFIX",
    "index_dir",
    "index_uri",
    "filesystem",
    "is_remote",
    "POINTER",
    "version_prefix",
    "FORMAT",
    "MANIFEST",
    "NODES_FILE",
    "NODE_STATS",
    "ORDER_FILE",
    "VECTORS_FILE",
    "tree_nodes",
]

FORMAT = "diachron-time-index/4"
DIR_SUFFIX = ".time_index"
MANIFEST = "manifest.json"
ORDER_FILE = "order.npy"
VECTORS_FILE = "vectors.npy"
VECTORS_INT8_FILE = "vectors_int8.npy"
INT8_SCALE_FILE = "int8_scale.npy"
NODES_FILE = "nodes.npz"
ANN_FILE = "ann.npz"
CENTROIDS_FILE = "centroids.npy"
MEMBERS_FILE = "members.npy"
CLASSED_SEGMENTS_FILE = "classed_segments.npy"
CLASSED_START_FILE = "classed_start.npy"
CLASSED_END_FILE = "classed_end.npy"
CLASSED_ROW_FILE = "classed_row.npy"
CLASSED_CODES_FILE = "classed_int8.npy"
POINTER = "latest.json"
#: ``width`` of the classed groups that are no finite length class: open to the past (sorted by end), open
#: to the future (sorted by start), open on both sides
GROUP_PAST, GROUP_FUTURE, GROUP_ALWAYS = 0, -1, -2

#: per-node statistics over the node's rows: a node is *inside* a filter when every row passes it
NODE_STATS = (
    "max_first_start",  # max over rows of the start of the row's earliest interval
    "min_first_end",  # min over rows of the end of that interval
    "all_known",  # 1 when every row has event time
    "max_recorded",  # max recorded_at (transaction time)
    "max_valid_from",  # max valid_from (open past = -2**61)
    "min_valid_until",  # min valid_until (open future = 2**61)
)


def is_remote(table_uri: str) -> bool:
    """True for object-store URIs (``s3://…``, ``gs://…``, ``az://…``); False for paths and ``file://``."""
    return "://" in table_uri and not table_uri.startswith("file://")


def index_dir(table_uri: str) -> Path | None:
    """The index directory of a local Lance table (``…/chunks.lance`` → ``…/chunks.time_index``); ``None``
    for object-store URIs (their index is objects under :func:`index_uri`, read through a local cache)."""
    if is_remote(table_uri):
        return None
    return Path(table_uri.removeprefix("file://")).with_suffix(DIR_SUFFIX)


def index_uri(table_uri: str) -> str:
    """The index prefix beside a table on object storage: ``s3://b/db/chunks.lance`` → ``s3://b/db/chunks.time_index``."""
    base = table_uri.rstrip("/")
    return (base[: -len(".lance")] if base.endswith(".lance") else base) + DIR_SUFFIX


def version_prefix(table_uri: str, table_version: int) -> str:
    """Where the index covering ``table_version`` lives: ``<index_uri>/v<table_version>``."""
    return f"{index_uri(table_uri)}/v{int(table_version)}"


def filesystem(uri: str, storage_options: dict[str, str] | None = None) -> tuple[Any, str]:
    """``(pyarrow filesystem, path)`` for an object-store ``uri``: ``s3://`` from Lance-style options
    (``aws_endpoint``, ``allow_http``, ``aws_access_key_id`` …) over the ``AWS_*`` environment (the same
    variables Lance reads); other schemes by pyarrow's own resolution. Raises ``ValueError`` for a scheme
    pyarrow cannot open."""
    import pyarrow.fs as pafs

    if not uri.startswith("s3://"):
        return pafs.FileSystem.from_uri(uri)
    env = {k.lower(): v for k, v in os.environ.items() if k.startswith("AWS_")}
    options = {**env, **(storage_options or {})}
    endpoint = options.get("aws_endpoint") or options.get("endpoint") or options.get("aws_endpoint_url")
    allow_http = str(options.get("allow_http") or options.get("aws_allow_http") or "").lower() == "true"
    fs = pafs.S3FileSystem(
        access_key=options.get("aws_access_key_id"),
        secret_key=options.get("aws_secret_access_key"),
        session_token=options.get("aws_session_token"),
        region=options.get("aws_region")
        or options.get("region")
        or options.get("aws_default_region")
        or "us-east-1",
        endpoint_override=endpoint.split("://", 1)[-1] if endpoint else None,
        scheme="http" if allow_http or (endpoint or "").startswith("http://") else "https",
    )
    return fs, uri.split("://", 1)[1]


def tree_nodes(num_rows: int, segment_rows: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The tree over time positions: ``(level, lo, hi)`` int64 arrays, one entry per node, level by level.

    Level 0 cuts ``[0, num_rows)`` into segments of ``segment_rows``; a level-``l`` node covers ``2**l``
    consecutive segments (aligned), the last one possibly short; the top level has one node. Any range of
    time positions is the union of at most two nodes per level plus a partial segment at each end.
    """
    segments = max(1, -(-num_rows // segment_rows))
    levels, los, his = [], [], []
    level, width = 0, 1
    while True:
        starts = np.arange(0, segments, width, dtype=np.int64)
        lo = starts * segment_rows
        hi = np.minimum((starts + width) * segment_rows, num_rows)
        levels.append(np.full(len(starts), level, dtype=np.int64))
        los.append(lo)
        his.append(hi)
        if len(starts) == 1:
            break
        level, width = level + 1, width * 2
    return np.concatenate(levels), np.concatenate(los), np.concatenate(his)


def int8_scale(max_abs: np.ndarray) -> np.ndarray:
    """Per-dimension scale float32 ``(dim,)`` from the largest absolute value per dimension: ``max_abs / 127``
    (a dimension that is zero everywhere gets scale 1)."""
    scale = np.asarray(max_abs, dtype=np.float64) / 127.0
    return np.where(scale > 0, scale, 1.0).astype(np.float32)


def quantize(block: np.ndarray, scale: np.ndarray) -> np.ndarray:
    """Int8 codes of float rows ``(rows, dim)``: ``round(x / scale)`` clipped to ``[-127, 127]``.

    For every ``|x| <= 127 * scale`` the reconstruction error ``|x - scale * code|`` is at most ``scale / 2``
    (+ float32 rounding); the reader's certified first pass (:mod:`diachron.retrieval.quantized`) relies
    on it.
    """
    codes = np.rint(np.asarray(block, dtype=np.float64) / scale.astype(np.float64))
    return np.clip(codes, -127, 127).astype(np.int8)
