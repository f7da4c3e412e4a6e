"""Read side of the time-partitioned vector index: exact and approximate scoring of a window (issue 15).

:class:`TimePartitionedIndex` memory-maps what :mod:`diachron.ingest.time_index` wrote at ``optimize``
(layout: :mod:`diachron.schemas.time_index`): the vectors in time order, the tree of segments, each
large node's IVF partition and the length-classed entries (:attr:`TimePartitionedIndex.classed`,
:mod:`diachron.retrieval.classed`). For a filter it

* scores any set of candidate rows **exactly**: an int8 first pass over their hull or their long runs of
  consecutive positions (:mod:`diachron.retrieval.quantized`), the certified shortlist re-scored from the
  float32 vectors, scattered rows gathered and scored from the float32 vectors directly, and
* **covers** the candidates with tree nodes whose rows all pass the filter (at most two per level), plus
  boundary rows that are scored exactly; a covering node with an IVF partition is searched by probing its
  calibrated ``nprobe`` lists (the scores are exact; only rows in unprobed lists can be missed), a small
  one is scanned. The results are always in-window rows; the expected recall@10 is the lowest recall
  measured at build time among the levels probed.

Rows written after the build (offsets ``>= num_rows``) are not in the index; the caller scores them exactly.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from diachron.retrieval.classed import ClassedEntries
from diachron.retrieval.filters import TimeFilter
from diachron.retrieval.interval_index import OPEN_FUTURE, OPEN_PAST, SPARSE_HITS, bounds
from diachron.retrieval.mapped import load_mapped
from diachron.retrieval.quantized import (
    Int8Query,
    certified_top,
    estimate,
    estimate_bound,
    first_pass_cost,
    prepare,
    upper_bounds,
)
from diachron.schemas import time_index as fmt

__all__ = ["GATHER_COST", "Cover", "TimePartitionedIndex"]

log = logging.getLogger(__name__)

RUN_MIN = 256  # runs of at least this many consecutive positions get the int8 pass as slices
#: cost of scoring a gathered (scattered) float32 vector row, in rows read contiguously (measured at 1M, 384
#: dims)
GATHER_COST = 3.0


@dataclass(slots=True)
class Cover:
    """How the candidates of one filter split over the tree: ``nodes`` (inside, by id) + ``boundary``
    time positions (sorted int64), with the rows each part costs to score."""

    nodes: list[int] = field(default_factory=list)
    boundary: np.ndarray = field(default_factory=lambda: np.empty(0, dtype=np.int64))
    scored_rows: int = 0
    expected_recall: float = 1.0


class TimePartitionedIndex:
    """One build of the time index, opened read-only (see module docstring).

    Use :meth:`open`, which returns ``None`` when there is no index or it belongs to other rows.
    """

    def __init__(self, directory: Path, manifest: dict[str, Any]) -> None:
        self.directory = directory
        self.manifest = manifest
        self.num_rows = int(manifest["num_rows"])
        self.order = np.load(directory / fmt.ORDER_FILE).astype(np.int32, copy=False)  # position -> offset
        self.position = np.empty(self.num_rows, dtype=np.int32)  # offset -> position
        self.position[self.order] = np.arange(self.num_rows, dtype=np.int32)
        self.vectors = load_mapped(directory / fmt.VECTORS_FILE)
        self.codes = load_mapped(directory / fmt.VECTORS_INT8_FILE, "c")  # copy-on-write: never written
        self.scale = np.load(directory / fmt.INT8_SCALE_FILE)
        self.dim = len(self.scale)
        with np.load(directory / fmt.NODES_FILE) as nodes:
            self.nodes = {k: nodes[k] for k in nodes.files}
        with np.load(directory / fmt.ANN_FILE) as ann:
            self.node_lists, self.list_start = ann["node_lists"], ann["list_start"]
        self.centroids = load_mapped(directory / fmt.CENTROIDS_FILE)
        self.members = load_mapped(directory / fmt.MEMBERS_FILE)
        self.levels = {int(k): v for k, v in manifest["levels"].items()}
        level = self.nodes["level"]
        self.level_first = {int(lv): int(np.flatnonzero(level == lv)[0]) for lv in np.unique(level)}
        self.root = len(level) - 1
        self.has_ivf = bool(self.node_lists[-1])  # False: every node is scanned, a cover cannot save work
        self.classed = ClassedEntries(directory)
        first_pass_cost(self.dim)  # loads torch's int8 kernel now, not in the first query (≈ 1.5 s here)
        self.block_rows = int(manifest.get("segment_rows", 4096))
        self.blocks: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None  # set by attach_times

    def attach_times(self, starts: np.ndarray, ends: np.ndarray, first_interval: np.ndarray) -> None:
        """Per block of ``block_rows`` time positions, the earliest interval start, the latest interval end
        and whether it holds a row of unknown time (from the snapshot's intervals in CSR layout: the
        intervals of row ``r`` are ``first_interval[r]:first_interval[r + 1]``); :meth:`hull` reads them."""
        n = self.num_rows
        counts = np.diff(first_interval[: n + 1])
        known = counts > 0
        lo_start = np.full(n, OPEN_FUTURE, dtype=np.int64)
        hi_end = np.full(n, OPEN_PAST, dtype=np.int64)
        if known.any():
            at = first_interval[:n][known]
            stop = int(first_interval[n])
            lo_start[known] = np.minimum.reduceat(starts[:stop], at)
            hi_end[known] = np.maximum.reduceat(ends[:stop], at)
        cut = np.arange(0, n, self.block_rows)
        self.blocks = (
            np.minimum.reduceat(lo_start[self.order], cut),
            np.maximum.reduceat(hi_end[self.order], cut),
            np.maximum.reduceat(~known[self.order], cut),
        )

    def hull(self, time_filter: TimeFilter) -> tuple[int, int]:
        """``[lo, hi)`` time positions outside which no row passes ``time_filter``'s event clause
        (whole blocks, :meth:`attach_times`; every position without an event clause or blocks)."""
        if not time_filter.event or self.blocks is None:
            return 0, self.num_rows
        first_start, last_end, unknown = self.blocks
        ok = unknown.copy() if time_filter.admit_unknown else np.zeros(len(first_start), dtype=bool)
        for q in time_filter.event:
            start, end = bounds(q)
            ok |= (first_start < end) & (last_end > start)
        hit = np.flatnonzero(ok)
        if not len(hit):
            return 0, 0
        return int(hit[0]) * self.block_rows, min(int(hit[-1] + 1) * self.block_rows, self.num_rows)

    def hull_top(
        self, lo: int, hi: int, query: np.ndarray, depth: int, passes: Callable[[np.ndarray], np.ndarray]
    ) -> tuple[np.ndarray, np.ndarray]:
        """``(positions, cosine)`` of the ``depth`` best positions in ``[lo, hi)`` that ``passes`` (positions
        → bool), exact: one int8 pass over the range's contiguous codes, the certified shortlist checked
        against the filter and re-scored from the float32 vectors (a failing row's estimate only widens the
        shortlist)."""
        prepared = self.prepare(query)

        def rescore(pos: np.ndarray) -> np.ndarray:
            ok = passes(pos)
            out = np.full(len(pos), -np.inf, dtype=np.float32)
            out[ok] = self.exact_scores(pos[ok], query)
            return out

        return certified_top(
            lo, estimate(self.codes[lo:hi], prepared), rescore, depth, bound=estimate_bound(prepared)
        )

    @classmethod
    def open(cls, directory: Path, dataset: Any) -> TimePartitionedIndex | None:
        """The index in ``directory`` when it was built from rows that still sit at the same offsets."""
        try:
            manifest = json.loads((directory / fmt.MANIFEST).read_text())
        except (OSError, ValueError):
            return None
        if (
            manifest.get("format") != fmt.FORMAT
            or manifest["num_rows"] > dataset.count_rows()
            or not manifest["num_rows"]
        ):
            return None
        probes = [int(i) for i in manifest["probe_ids"]]
        ids = dataset.take(probes, columns=["chunk_id"]).column(0).to_pylist()
        if ids != [manifest["probe_ids"][str(i)] for i in probes]:
            log.warning("time index at %s belongs to other rows: ignored until the next optimize", directory)
            return None
        try:
            return cls(directory, manifest)
        except (OSError, ValueError, KeyError) as exc:
            log.warning("time index at %s unreadable (%s): ignored", directory, exc)
            return None

    @property
    def resident_bytes(self) -> int:
        """Bytes held in memory (the memory-mapped vectors, centroids and lists are page cache, not
        counted)."""
        return (
            self.order.nbytes
            + self.position.nbytes
            + sum(v.nbytes for v in self.nodes.values())
            + self.node_lists.nbytes
            + self.list_start.nbytes
            + self.classed.resident_bytes
        )

    def positions_of(self, rows: np.ndarray) -> np.ndarray:
        """Sorted int64 time positions of indexed row offsets (``rows < num_rows``): a sort when they are
        few, else a pass over every row."""
        if len(rows) * SPARSE_HITS < self.num_rows:
            return np.sort(self.position[rows]).astype(np.int64)
        mask = np.zeros(self.num_rows, dtype=bool)
        mask[self.position[rows]] = True
        return np.flatnonzero(mask)

    def inside(self, time_filter: TimeFilter) -> np.ndarray:
        """Bool per node: every row of the node passes ``time_filter`` (from the node statistics)."""
        s = self.nodes
        ok = np.ones(len(s["level"]), dtype=bool)
        if time_filter.event:
            any_q = np.zeros(len(ok), dtype=bool)
            for q in time_filter.event:
                start, end = bounds(q)
                any_q |= (s["max_first_start"] < end) & (s["min_first_end"] > start)
            ok &= any_q & (s["all_known"] == 1)
        if time_filter.valid:
            any_q = np.zeros(len(ok), dtype=bool)
            for q in time_filter.valid:
                start, end = bounds(q)
                any_q |= (s["max_valid_from"] < end) & (s["min_valid_until"] > start)
            ok &= any_q
        if time_filter.as_of is not None:
            ok &= s["max_recorded"] <= int(time_filter.as_of.timestamp() * 1_000_000)
        return ok

    def inside_rows(self, time_filter: TimeFilter) -> int:
        """Rows of the tree's leaves whose every row passes ``time_filter``: no cover takes more rows from
        inside nodes (a node is inside only when its leaves are), so every other candidate is a boundary
        row."""
        leaf = (self.nodes["level"] == 0) & self.inside(time_filter)
        return int((self.nodes["hi"][leaf] - self.nodes["lo"][leaf]).sum())

    def cover(self, positions: np.ndarray, time_filter: TimeFilter) -> Cover:
        """Split sorted candidate ``positions`` into inside nodes (at most two per level) and boundary
        rows."""
        inside = self.inside(time_filter)
        lo, hi, level = self.nodes["lo"], self.nodes["hi"], self.nodes["level"]
        cover = Cover()
        boundary, stack, recall = [], [self.root], 1.0
        while stack:
            node = stack.pop()
            a, b = np.searchsorted(positions, [lo[node], hi[node]])
            if a == b:
                continue
            if inside[node]:
                cover.nodes.append(node)
                probes = self._probes(node)
                if probes is None:
                    cover.scored_rows += int(hi[node] - lo[node])
                else:
                    nlist = len(probes)
                    cover.scored_rows += nlist + int(
                        (hi[node] - lo[node]) * self.levels[int(level[node])]["nprobe"] / max(nlist, 1)
                    )
                    recall = min(recall, float(self.levels[int(level[node])]["recall_at_10"]))
            elif level[node] == 0:
                boundary.append(positions[a:b])
            else:
                first = self.level_first[int(level[node]) - 1] + 2 * (
                    node - self.level_first[int(level[node])]
                )
                stack.extend(
                    c
                    for c in (first, first + 1)
                    if c < self.level_first[int(level[node])] and level[c] == level[node] - 1
                )
        boundary.append(positions[np.searchsorted(positions, hi[self.root]) :])  # past the tree: unknown time
        cover.boundary = np.sort(np.concatenate(boundary))
        cover.scored_rows += len(cover.boundary)
        cover.expected_recall = recall
        return cover

    def _probes(self, node: int) -> np.ndarray | None:
        """The node's list ids when it has an IVF partition, else ``None`` (scanned exactly)."""
        a, b = self.node_lists[node], self.node_lists[node + 1]
        return None if a == b else np.arange(a, b)

    def prepare(self, query: np.ndarray) -> Int8Query:
        """``query`` (float32 ``(dim,)``, unit norm) prepared for the int8 pass over this index's codes."""
        return prepare(query, self.scale)

    def exact_scores(self, positions: np.ndarray, query: np.ndarray) -> np.ndarray:
        """Exact cosine float32 of ``positions`` (any order) from the float32 vectors, read in time order."""
        order = np.argsort(positions, kind="stable")
        out = np.empty(len(positions), dtype=np.float32)
        out[order] = np.asarray(self.vectors[positions[order]]) @ query
        return out

    def exact(
        self, positions: np.ndarray, query: np.ndarray, depth: int, prepared: Int8Query | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """``(positions, cosine)`` of the ``depth`` best of sorted ``positions``, exact (certified int8 pass).

        When an int8 pass over their hull (first to last position: one contiguous read) costs less than
        gathering them (:func:`_costs`), the hull is estimated; else their long runs are, and the
        scattered rest is scored from the float32 vectors directly. The certified shortlist is re-scored
        exactly (:func:`~diachron.retrieval.quantized.certified_top`).
        """
        if not len(positions):
            return positions, np.empty(0, dtype=np.float32)
        prepared = self.prepare(query) if prepared is None else prepared
        first, last = int(positions[0]), int(positions[-1])
        rescore = lambda pos: self.exact_scores(pos, query)  # noqa: E731
        hull_cost, gather_cost = _costs(len(positions), last - first + 1, self.dim)
        if hull_cost < gather_cost:
            est = estimate(self.codes[first : last + 1], prepared)[positions - first]
            return certified_top(positions, est, rescore, depth, bound=estimate_bound(prepared))
        breaks = np.flatnonzero(np.diff(positions) != 1) + 1
        run_lo = np.concatenate([[0], breaks])
        run_hi = np.concatenate([breaks, [len(positions)]])
        lengths = run_hi - run_lo
        long = lengths >= RUN_MIN
        parts_pos, parts_upper = [], []
        for a, b in zip(run_lo[long], run_hi[long], strict=True):
            p0 = int(positions[a])
            parts_pos.append(positions[a:b])
            parts_upper.append(upper_bounds(estimate(self.codes[p0 : p0 + (b - a)], prepared), prepared))
        if (~long).any():
            short = positions[~np.repeat(long, lengths)]  # every position outside the long runs, in order
            parts_pos.append(short)
            parts_upper.append(self.exact_scores(short, query).astype(np.float64))  # exact: its own bound
        return certified_top(np.concatenate(parts_pos), np.concatenate(parts_upper), rescore, depth)

    def approximate(self, cover: Cover, query: np.ndarray, depth: int) -> tuple[np.ndarray, np.ndarray]:
        """``(positions, cosine)`` of the best ``depth`` over the cover: IVF probes in large inside nodes,
        exact scans of small ones and of the boundary rows. Every position returned passes the filter."""
        parts_pos, parts_score = [], []
        lo, hi, level = self.nodes["lo"], self.nodes["hi"], self.nodes["level"]
        prepared = self.prepare(query)
        for node in cover.nodes:
            lists = self._probes(node)
            if lists is None:
                pos, score = self.exact(np.arange(lo[node], hi[node]), query, depth, prepared)
            else:
                nprobe = min(int(self.levels[int(level[node])]["nprobe"]), len(lists))
                scores = np.asarray(self.centroids[lists[0] : lists[-1] + 1]) @ query
                chosen = (
                    lists[np.argpartition(-scores, nprobe - 1)[:nprobe]] if nprobe < len(lists) else lists
                )
                pos = np.sort(
                    np.concatenate(
                        [self.members[self.list_start[j] : self.list_start[j + 1]] for j in chosen]
                    )
                ).astype(np.int64)
                pos, score = self.exact(pos, query, depth, prepared)
            parts_pos.append(pos)
            parts_score.append(score)
        pos, score = self.exact(cover.boundary, query, depth, prepared)
        parts_pos.append(pos)
        parts_score.append(score)
        return _top(np.concatenate(parts_pos), np.concatenate(parts_score), depth)


def _costs(count: int, hull: int, dim: int) -> tuple[float, float]:
    """``(int8 pass over the hull, gathering the positions)`` for ``count`` positions spanning ``hull``."""
    return first_pass_cost(dim) * hull, GATHER_COST * count


def _top(positions: np.ndarray, scores: np.ndarray, depth: int) -> tuple[np.ndarray, np.ndarray]:
    if len(scores) > depth:
        keep = np.argpartition(-scores, depth)[:depth]
        positions, scores = positions[keep], scores[keep]
    order = np.argsort(-scores, kind="stable")
    return positions[order], scores[order].astype(np.float32)
