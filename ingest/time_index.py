"""Build the time-partitioned vector index of a ``chunks`` table at ``optimize`` (issue 15).

Rows are put in time order (by the start of their earliest event interval; unknown time last) and cut
into segments of ``segment_rows``; segments, pairs of segments, … form a tree (:func:`~diachron.schemas.
time_index.tree_nodes`), so any window's in-time rows are covered by O(log n) nodes plus a few boundary
rows (the window search tree of Engels et al., ICML 2024). Each node of at least ``ann_min_rows`` rows gets
its own IVF partition (spherical k-means over the node's rows, ⌈√rows⌉ lists); its ``nprobe`` is the
smallest that reached ``target_recall`` recall@10 against exact search on sample queries at build time,
and that measured recall is written down for the reader's planner. Vectors are stored in time order
(the lists hold time positions, so every score the reader computes is exact), as int8 codes in the same
order (the reader's certified first pass, :mod:`diachron.retrieval.quantized`) and once more as int8 codes
per event interval in length-classed order (:mod:`diachron.ingest.classed_layout`: a narrow window's
candidates are then contiguous); the int8 copies are rewritten whole at every build.

Incremental: when rows were only appended since the last build, old rows keep their positions, new rows
are sorted and appended as new segments, and only the nodes that contain a new position are rebuilt
(a level's ANN partitions are reused where their rows did not change).
File layout: :mod:`diachron.schemas.time_index`.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import time
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from diachron.ingest.classed_layout import write_classed
from diachron.schemas import time_index as fmt
from diachron.schemas.time import OPEN_FUTURE, OPEN_PAST

__all__ = ["SEGMENT_ROWS", "ANN_MIN_ROWS", "build_time_index", "publish_time_index"]

log = logging.getLogger(__name__)

SEGMENT_ROWS = 4096
ANN_MIN_ROWS = 32_768
_TIME_COLUMNS = ["chunk_id", "intervals", "time_status", "valid_from", "valid_until", "recorded_at"]


def _micros(column: pa.ChunkedArray | pa.Array, open_value: int) -> np.ndarray:
    return pc.fill_null(pc.cast(column, pa.int64()), open_value).to_numpy().astype(np.int64, copy=False)


def _flat_intervals(data: pa.Table) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``(starts, ends, row, counts)``: every event interval (int64 µs, open sides ±2**61), its row offset,
    and the number of intervals per row."""
    intervals = data.column("intervals").combine_chunks()
    counts = pc.list_value_length(intervals).fill_null(0).to_numpy().astype(np.int64)
    flat = pc.list_flatten(intervals)
    starts, ends = _micros(flat.field("start"), OPEN_PAST), _micros(flat.field("end"), OPEN_FUTURE)
    return starts, ends, np.repeat(np.arange(len(counts)), counts), counts


def _row_times(data: pa.Table) -> dict[str, np.ndarray]:
    """Per row: the earliest interval's ``[first_start, first_end)``, ``known``, valid and recorded time."""
    starts, ends, row, counts = _flat_intervals(data)
    earliest = np.lexsort((ends, starts, row))  # by row, then start: the first of each row is its earliest
    first = np.concatenate([[0], np.cumsum(counts)[:-1]])
    known = counts > 0
    first_start = np.full(len(counts), OPEN_FUTURE, dtype=np.int64)
    first_end = np.full(len(counts), OPEN_PAST, dtype=np.int64)
    first_start[known] = starts[earliest[first[known]]]
    first_end[known] = ends[earliest[first[known]]]
    return {
        "first_start": first_start,
        "first_end": first_end,
        "known": known,
        "valid_from": _micros(data.column("valid_from"), OPEN_PAST),
        "valid_until": _micros(data.column("valid_until"), OPEN_FUTURE),
        "recorded": _micros(data.column("recorded_at"), OPEN_FUTURE),
    }


def _node_stats(times: dict[str, np.ndarray], order: np.ndarray, lo: np.ndarray) -> dict[str, np.ndarray]:
    """:data:`~diachron.schemas.time_index.NODE_STATS` of each node (nodes of one level start at ``lo``)."""
    t = {k: v[order] for k, v in times.items()}
    return {
        "max_first_start": np.maximum.reduceat(t["first_start"], lo),
        "min_first_end": np.minimum.reduceat(t["first_end"], lo),
        "all_known": np.minimum.reduceat(t["known"].astype(np.int8), lo),
        "max_recorded": np.maximum.reduceat(t["recorded"], lo),
        "max_valid_from": np.maximum.reduceat(t["valid_from"], lo),
        "min_valid_until": np.minimum.reduceat(t["valid_until"], lo),
    }


def _kmeans(x: np.ndarray, nlist: int, rng: np.random.Generator, iterations: int = 8) -> np.ndarray:
    """Spherical k-means centroids float32 ``(nlist, dim)`` of unit rows ``x`` (sampled, few iterations)."""
    sample = np.asarray(x[np.sort(rng.choice(len(x), min(len(x), 32 * nlist), replace=False))])
    centroids = sample[rng.choice(len(sample), nlist, replace=False)].copy()
    for _ in range(iterations):
        assign = np.argmax(sample @ centroids.T, axis=1)
        onehot = np.zeros((nlist, len(sample)), dtype=np.float32)
        onehot[assign, np.arange(len(sample))] = 1.0
        sums = onehot @ sample  # per-list sums by BLAS
        norms = np.linalg.norm(sums, axis=1, keepdims=True)
        empty = norms[:, 0] == 0
        centroids = sums / np.maximum(norms, 1e-12)
        centroids[empty] = sample[rng.choice(len(sample), int(empty.sum()))]  # re-seed empty lists
    return centroids.astype(np.float32)


def _assign(x: np.ndarray, centroids: np.ndarray, piece: int = 65_536) -> np.ndarray:
    return np.concatenate(
        [np.argmax(x[i : i + piece] @ centroids.T, axis=1) for i in range(0, len(x), piece)]
    )


def _ivf(
    vectors: np.ndarray, lo: int, hi: int, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """IVF partition of time positions ``[lo, hi)``: ``(centroids, list sizes, members grouped by list)``."""
    x = np.asarray(vectors[lo:hi])
    nlist = int(np.clip(np.ceil(np.sqrt(hi - lo)), 16, 4096))
    centroids = _kmeans(x, nlist, rng)
    assign = _assign(x, centroids)
    members = (np.argsort(assign, kind="stable") + lo).astype(np.int32)
    return centroids, np.bincount(assign, minlength=nlist), members


def _calibrate(
    vectors: np.ndarray,
    node: tuple[int, int],
    ivf: tuple[np.ndarray, np.ndarray, np.ndarray],
    rng: np.random.Generator,
    target: float,
    k: int = 10,
    n_queries: int = 16,
) -> tuple[int, float]:
    """Smallest ``nprobe`` whose mean recall@10 (exact search within the node as truth) reaches ``target``.

    Queries look like the data (a question's e_hypo is near the chunks it should find): a random row of
    the node plus Gaussian noise of the same norm, re-normalised. Returns ``(nprobe, measured recall)``;
    ``nprobe == nlist`` (an exact scan) when no smaller one reached the target.
    """
    lo, hi = node
    centroids, sizes, members = ivf
    x = np.asarray(vectors[lo:hi])
    starts = np.concatenate([[0], np.cumsum(sizes)])
    noise = rng.standard_normal((n_queries, x.shape[1])).astype(np.float32)
    qs = x[rng.choice(len(x), n_queries)] + noise / np.linalg.norm(noise, axis=1, keepdims=True)
    qs /= np.linalg.norm(qs, axis=1, keepdims=True)
    truth = np.argpartition(-(qs @ x.T), k, axis=1)[:, :k] + lo
    ranked = np.argsort(-(qs @ centroids.T), axis=1)
    nlist = len(centroids)
    for nprobe in [p for p in (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048) if p < nlist // 2]:
        recalls = []
        for q, lists, true in zip(qs, ranked[:, :nprobe], truth, strict=True):
            pos = np.concatenate([members[starts[j] : starts[j + 1]] for j in lists])
            got = pos[np.argpartition(-(np.asarray(vectors[pos]) @ q), min(k, len(pos) - 1))[:k]]
            recalls.append(len(set(true.tolist()) & set(got.tolist())) / k)
        if np.mean(recalls) >= target:
            return nprobe, float(np.mean(recalls))
    return nlist, 1.0


def _write_int8(directory: Path, vectors: np.ndarray, piece: int = 65_536) -> np.ndarray:
    """Write the int8 codes of the time-ordered ``vectors`` and their per-dimension scale
    (:func:`~diachron.schemas.time_index.quantize`); returns the codes (memory-mapped)."""
    max_abs = np.zeros(vectors.shape[1], dtype=np.float32)
    for lo in range(0, len(vectors), piece):
        np.maximum(max_abs, np.abs(vectors[lo : lo + piece]).max(axis=0), out=max_abs)
    scale = fmt.int8_scale(max_abs)
    np.save(directory / fmt.INT8_SCALE_FILE, scale)
    codes = np.lib.format.open_memmap(
        directory / fmt.VECTORS_INT8_FILE, mode="w+", dtype=np.int8, shape=vectors.shape
    )
    for lo in range(0, len(vectors), piece):
        codes[lo : lo + piece] = fmt.quantize(vectors[lo : lo + piece], scale)
    codes.flush()
    return codes


def _read_manifest(directory: Path) -> dict[str, Any] | None:
    try:
        manifest = json.loads((directory / fmt.MANIFEST).read_text())
    except (OSError, ValueError):
        return None
    return manifest if manifest.get("format") == fmt.FORMAT else None


def build_time_index(
    dataset: Any,
    directory: Path | str,
    *,
    segment_rows: int = SEGMENT_ROWS,
    ann_min_rows: int = ANN_MIN_ROWS,
    target_recall: float = 0.98,
    seed: int = 0,
) -> dict[str, Any]:
    """Write (or extend) the time index of a Lance ``chunks`` dataset in ``directory``; returns the manifest.

    Args:
        dataset: a Lance dataset (one version) with the ``chunks`` schema; vectors unit norm.
        directory: the index directory (``<db>/chunks.time_index``); replaced atomically.
        segment_rows: rows per level-0 segment.
        ann_min_rows: nodes with fewer rows get no IVF partition (the reader scans them exactly).
        target_recall: recall@10 each node's ``nprobe`` must reach on the build's sample queries.
        seed: seed of sampling and k-means (same data + seed → same index).
    """
    t0 = time.perf_counter()
    directory = Path(directory)
    rng = np.random.default_rng(seed)
    data = dataset.to_table(columns=_TIME_COLUMNS, batch_size=8192)
    n = data.num_rows
    if n == 0:
        shutil.rmtree(directory, ignore_errors=True)
        return {"format": fmt.FORMAT, "num_rows": 0}
    times = _row_times(data)
    reuse = _reusable(_read_manifest(directory), directory, data, n)
    n_old = reuse["num_rows"] if reuse else 0
    order = _time_order(times, reuse, n_old)
    tmp = _work_dir(directory)
    vectors, entries = _write_rows(dataset, data, directory, tmp, order, n_old)
    tree_rows = n if reuse else int(times["known"].sum())  # a full build: no unknown-time row in the tree
    level, lo, hi = fmt.tree_nodes(tree_rows, segment_rows)
    _write_nodes(tmp, times, order[: max(tree_rows, 1)], level, lo, hi)
    kept = min(n_old // segment_rows * segment_rows, n_old)  # positions whose segment did not change
    ann, levels = _build_ann(vectors, level, lo, hi, ann_min_rows, kept, reuse, rng, target_recall)
    _write_ann(tmp, ann)
    vectors.flush()
    manifest = {
        "format": fmt.FORMAT,
        "table_version": int(dataset.version),
        "num_rows": n,
        "dim": vectors.shape[1],
        "segment_rows": segment_rows,
        "ann_min_rows": ann_min_rows,
        "tree_rows": tree_rows,
        "target_recall": target_recall,
        "levels": levels,
        "probe_ids": _probe_ids(data),
        "incremental_from_rows": n_old,
        "classed_entries": entries,
        "build_seconds": round(time.perf_counter() - t0, 3),
    }
    _replace(directory, tmp, manifest)
    log.info(
        "time index: %d rows (%d reused), %d nodes, %.1f s", n, n_old, len(lo), manifest["build_seconds"]
    )
    return manifest


def _time_order(times: dict[str, np.ndarray], reuse: dict[str, Any] | None, n_old: int) -> np.ndarray:
    """Table rows in time order (int32): the previous build's order, then the new rows known time first, by
    their earliest start."""
    new_order = np.lexsort((times["first_start"][n_old:], ~times["known"][n_old:])) + n_old
    return (
        np.concatenate([reuse["order"], new_order]).astype(np.int32) if reuse else new_order.astype(np.int32)
    )


def _write_ann(tmp: Path, ann: dict[str, np.ndarray]) -> None:
    """The IVF partitions of :func:`_build_ann` to ``tmp``: centroids, members, then the rest in one file."""
    np.save(tmp / fmt.CENTROIDS_FILE, ann.pop("centroids"))
    np.save(tmp / fmt.MEMBERS_FILE, ann.pop("members"))
    np.savez(tmp / fmt.ANN_FILE, **ann)


def _probe_ids(data: pa.Table) -> dict[str, str]:
    """Up to 16 evenly spaced rows' ``chunk_id`` by row number: a later build checks they are unchanged."""
    n = data.num_rows
    probes = np.linspace(0, n - 1, min(n, 16)).astype(np.int64) if n else np.empty(0, dtype=np.int64)
    return {str(int(i)): data.column("chunk_id")[int(i)].as_py() for i in probes}


def _work_dir(directory: Path) -> Path:
    """An empty ``<directory>.tmp`` beside the index: the build is written there, then renamed into place."""
    tmp = directory.with_name(directory.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    return tmp


def _write_rows(
    dataset: Any, data: pa.Table, directory: Path, tmp: Path, order: np.ndarray, n_old: int
) -> tuple[np.ndarray, Any]:
    """The per-row files in ``tmp``: float32 vectors and the order, the int8 codes and the length-classed
    entries (the last two rewritten whole each build; the codes are a quarter of the vectors' bytes).
    Returns the vectors (memory-mapped) and what :func:`write_classed` returns."""
    vectors, position = _write_vectors(dataset, directory, tmp, order, n_old)
    np.save(tmp / fmt.ORDER_FILE, order)
    codes = _write_int8(tmp, vectors)
    return vectors, write_classed(tmp, *_flat_intervals(data)[:3], codes, position)


def _write_vectors(
    dataset: Any, directory: Path, tmp: Path, order: np.ndarray, n_old: int
) -> tuple[np.ndarray, np.ndarray]:
    """The float32 vectors in time order, written to ``tmp`` (the first ``n_old`` copied from the previous
    build in ``directory``, the rest read from ``dataset``); returns them (memory-mapped) and each table
    row's position in that order."""
    n = len(order)
    dim = dataset.schema.field("vector").type.list_size
    vectors = np.lib.format.open_memmap(tmp / fmt.VECTORS_FILE, mode="w+", dtype=np.float32, shape=(n, dim))
    if n_old:
        vectors[:n_old] = np.load(directory / fmt.VECTORS_FILE, mmap_mode="r")[:n_old]
    position = np.empty(n, dtype=np.int64)
    position[order] = np.arange(n)
    offset = n_old
    for batch in dataset.to_batches(columns=["vector"], batch_size=65_536, offset=n_old) if n > n_old else []:
        block = batch.column(0)
        vectors[position[offset : offset + len(block)]] = block.values.to_numpy().reshape(len(block), dim)
        offset += len(block)
    return vectors, position


def _write_nodes(
    tmp: Path,
    times: dict[str, np.ndarray],
    in_tree: np.ndarray,
    level: np.ndarray,
    lo: np.ndarray,
    hi: np.ndarray,
) -> None:
    """The tree nodes' bounds and time statistics (:data:`fmt.NODE_STATS`), level by level, to ``tmp``."""
    stats = {
        name: np.concatenate([_node_stats(times, in_tree, lo[level == lv])[name] for lv in np.unique(level)])
        for name in fmt.NODE_STATS
    }
    np.savez(tmp / fmt.NODES_FILE, level=level, lo=lo, hi=hi, **stats)


def _replace(directory: Path, tmp: Path, manifest: dict[str, Any]) -> None:
    """Write ``manifest`` into the finished build ``tmp`` and put it in place of ``directory`` (the old one
    moved aside, then removed)."""
    (tmp / fmt.MANIFEST).write_text(json.dumps(manifest, indent=1))
    old = directory.with_name(directory.name + ".old")
    shutil.rmtree(old, ignore_errors=True)
    if directory.exists():
        directory.rename(old)
    tmp.rename(directory)
    shutil.rmtree(old, ignore_errors=True)


def _reusable(
    previous: dict[str, Any] | None, directory: Path, data: pa.Table, n: int
) -> dict[str, Any] | None:
    """The previous build's order and ANN when the table only grew since (its probe rows are unchanged)."""
    if previous is None or not 0 < previous["num_rows"] <= n or n > 1.5 * previous["num_rows"]:
        return None  # nothing to extend, rows removed, or grown by half: rebuild (a compaction of the tree)
    ids = data.column("chunk_id")
    if any(ids[int(i)].as_py() != cid for i, cid in previous["probe_ids"].items()):
        return None
    try:
        with np.load(directory / fmt.ANN_FILE) as ann, np.load(directory / fmt.NODES_FILE) as nodes:
            old_ann = {k: ann[k] for k in ann.files}
            old_nodes = {k: nodes[k] for k in ("level", "lo", "hi")}
        old_ann["centroids"] = np.load(directory / fmt.CENTROIDS_FILE)
        old_ann["members"] = np.load(directory / fmt.MEMBERS_FILE)
        order = np.load(directory / fmt.ORDER_FILE)
    except (OSError, ValueError, KeyError):
        return None
    return {
        "num_rows": previous["num_rows"],
        "order": order,
        "ann": old_ann,
        "nodes": old_nodes,
        "levels": previous["levels"],
        "segment_rows": previous["segment_rows"],
    }


def _old_ivf(reuse: dict[str, Any] | None, lv: int, lo: int, hi: int) -> tuple[np.ndarray, ...] | None:
    """The previous build's IVF of node ``(lv, lo, hi)`` when that node existed with the same rows."""
    if reuse is None:
        return None
    nodes, ann = reuse["nodes"], reuse["ann"]
    match = np.flatnonzero((nodes["level"] == lv) & (nodes["lo"] == lo) & (nodes["hi"] == hi))
    if not len(match) or ann["node_lists"][match[0]] == ann["node_lists"][match[0] + 1]:
        return None
    a, b = ann["node_lists"][match[0]], ann["node_lists"][match[0] + 1]
    sizes = np.diff(ann["list_start"][a : b + 1])
    return ann["centroids"][a:b], sizes, ann["members"][ann["list_start"][a] : ann["list_start"][b]]


def _build_ann(
    vectors: np.ndarray,
    level: np.ndarray,
    lo: np.ndarray,
    hi: np.ndarray,
    ann_min_rows: int,
    kept: int,
    reuse: dict[str, Any] | None,
    rng: np.random.Generator,
    target: float,
) -> tuple[dict[str, np.ndarray], dict[str, dict[str, Any]]]:
    """IVF partitions of every node with ≥ ``ann_min_rows`` rows, and per level the calibrated ``nprobe``."""
    centroids, sizes, members, node_lists = [], [], [], [0]
    levels: dict[str, dict[str, Any]] = {}
    for i in range(len(level)):
        lv, a, b = int(level[i]), int(lo[i]), int(hi[i])
        ivf = None
        if b - a >= ann_min_rows and levels.get(str(lv), {}).get("ivf", True):
            ivf = (_old_ivf(reuse, lv, a, b) if b <= kept else None) or _ivf(vectors, a, b, rng)
            if str(lv) not in levels:  # calibrated on the level's first node
                old = (reuse or {}).get("levels", {}).get(str(lv))
                nprobe, recall = (
                    (old["nprobe"], old["recall_at_10"])
                    if old and b <= kept
                    else _calibrate(vectors, (a, b), ivf, rng, target)
                )
                levels[str(lv)] = {
                    "nprobe": int(nprobe),
                    "nlist": len(ivf[0]),
                    "recall_at_10": recall,
                    "ivf": int(nprobe) < len(ivf[0]),
                }  # no gain at nprobe == nlist: scan instead
            if not levels[str(lv)]["ivf"]:
                ivf = None
        if ivf is not None:
            centroids.append(ivf[0])
            sizes.append(ivf[1])
            members.append(ivf[2])
        node_lists.append(node_lists[-1] + (len(ivf[0]) if ivf is not None else 0))
    dim = vectors.shape[1]
    all_sizes = np.concatenate(sizes) if sizes else np.empty(0, dtype=np.int64)
    return {
        "centroids": np.concatenate(centroids) if centroids else np.empty((0, dim), dtype=np.float32),
        "node_lists": np.array(node_lists, dtype=np.int64),
        "list_start": np.concatenate([[0], np.cumsum(all_sizes)]).astype(np.int64),
        "members": np.concatenate(members) if members else np.empty(0, dtype=np.int32),
    }, levels


def publish_time_index(
    dataset: Any, table_uri: str, storage_options: dict[str, str] | None = None, **build: Any
) -> dict[str, Any]:
    """Build the time index of ``dataset`` (a table on object storage) and publish it beside the table.

    The build runs in a local work folder seeded from the last published version (so it extends it
    incrementally as :func:`build_time_index` does locally), is uploaded under
    ``<db>/chunks.time_index/v<table_version>/``, then the pointer ``latest.json`` is written (last: a reader
    never sees half a version); the local copy becomes the reader cache of that version
    (:mod:`diachron.schemas.index_cache`). Published versions older than the previous one are deleted.
    ``build`` is passed to :func:`build_time_index`. Returns the manifest. Raises ``OSError`` /
    ``pyarrow.ArrowException`` when the store cannot be written.
    """
    import pyarrow.fs as pafs
    from diachron.schemas.index_cache import cache_dir, download, drop_older, read_pointer

    previous = read_pointer(table_uri, storage_options)
    seed = download(table_uri, previous, storage_options) if previous else None
    root = cache_dir(table_uri)
    work = root / f"build.{os.getpid()}"
    shutil.rmtree(work, ignore_errors=True)
    if seed is not None:
        shutil.copytree(seed, work, copy_function=os.link)  # hard links: the build never writes in place
    manifest = build_time_index(dataset, work, **build)
    if not manifest["num_rows"]:
        return manifest
    version = int(manifest["table_version"])
    fs, prefix = fmt.filesystem(fmt.version_prefix(table_uri, version), storage_options)
    pafs.copy_files(str(work), prefix, source_filesystem=pafs.LocalFileSystem(), destination_filesystem=fs)
    pointer = {"format": fmt.FORMAT, "table_version": version, "num_rows": manifest["num_rows"]}
    _, base = fmt.filesystem(fmt.index_uri(table_uri), storage_options)
    with fs.open_output_stream(f"{base}/{fmt.POINTER}") as out:
        out.write(json.dumps(pointer).encode())
    keep = {f"v{version}"} | ({f"v{int(previous['table_version'])}"} if previous else set())
    for info in fs.get_file_info(pafs.FileSelector(base, allow_not_found=True)):
        if (
            info.type == pafs.FileType.Directory
            and info.base_name.startswith("v")
            and info.base_name not in keep
        ):
            fs.delete_dir(info.path)
    target = root / f"v{version}"
    if target.exists():
        shutil.rmtree(work, ignore_errors=True)
    else:
        work.rename(target)
    drop_older(root, target)
    log.info("time index v%d published beside %s", version, table_uri)
    return manifest
