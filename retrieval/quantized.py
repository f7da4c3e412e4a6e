"""Int8 first pass with a certified exact top-k (issue 15).

The time index keeps every vector twice: float32 and int8 codes (``code = round(x / scale)`` per dimension,
:func:`diachron.schemas.time_index.quantize`). A window's rows are first scored from the codes — a quarter
of the bytes, read by torch's int8 weight-only matrix product (``aten::_weight_int8pack_mm``, bfloat16
activations, the kernel LLM inference uses for int8 weights) — and the best of them are then re-scored
exactly from the float32 vectors.

**Certified.** Every estimate comes with a deterministic error bound, so the result is the exact top-k,
not an approximation: for unit query ``q`` and a row ``x`` with codes ``c``,
``|q·x − q·(scale ⊙ c)| ≤ ½ Σ_d |q_d| scale_d``; the query enters as two bfloat16 rows (high and low part,
relative error ≤ 2⁻¹⁶), products are summed in float32 and each output is rounded to bfloat16 (relative
error ≤ 2⁻⁸); every one of these terms is in the bound. :func:`certified_top`
re-scores the ``m`` best estimates exactly, then in one pass every row whose upper bound can still beat
the ``depth``-th exact score (each row at most once; at worst every row).

Without the torch kernel, or for a dimension it does not take (not a multiple of 16), the estimate is
computed in NumPy (exact up to float32 rounding; slower).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

__all__ = [
    "INT8_COST",
    "NUMPY_INT8_COST",
    "Int8Query",
    "certified_top",
    "estimate",
    "estimate_bound",
    "first_pass_cost",
    "prepare",
    "upper_bounds",
]

log = logging.getLogger(__name__)

#: cost of estimating one row from its int8 codes, in float32 rows scored contiguously (measured here:
#: 675k × 384 codes 13 ms with torch's kernel vs a float32 matrix-vector product 75 ms)
INT8_COST = 0.2
#: the same without the kernel (NumPy converts the codes to float32 first: slower than the float32 vectors)
NUMPY_INT8_COST = 2.0
PIECE = 65_536  # rows converted per step by the NumPy fallback
#: below this many rows the kernel runs on the calling thread (measured here after 0.15 s idle: 2,400 rows
#: 5.7 ms on torch's two threads, 0.4 ms on one — waking an idle vCPU's thread; 100k rows alike on both)
SINGLE_THREAD_ROWS = 65_536
#: the kernel takes dimensions that are a multiple of this only (others crash the process: seen with 7-24)
KERNEL_DIM_MULTIPLE = 16
FIRST_SHORTLIST = 64  # rows re-scored exactly at first (at least 4 × depth)
_OUT_ROUNDING = 2.0**-8  # relative error of a bfloat16 output
_SLACK = 1e-5  # float32 accumulation over ≤ 4096 dimensions, with margin


@dataclass(frozen=True, slots=True)
class Int8Query:
    """A query prepared for the int8 pass: ``rows`` = the scaled query (high and low bfloat16 parts, a torch
    tensor ``(2, dim)``) or ``None`` (NumPy), ``scaled`` float32 ``(dim,)`` and ``bound`` = the estimate's
    absolute error bound apart from output rounding."""

    rows: object | None
    scaled: np.ndarray
    bound: float
    out_rounding: float


def _kernel() -> Callable | None:
    try:
        import torch

        op = torch.ops.aten._weight_int8pack_mm
        probe = op(
            torch.ones((2, KERNEL_DIM_MULTIPLE), dtype=torch.bfloat16),
            torch.ones((3, KERNEL_DIM_MULTIPLE), dtype=torch.int8),
            torch.ones(3, dtype=torch.bfloat16),
        )
        if float(probe[1, 2]) != KERNEL_DIM_MULTIPLE:
            return None
        return op
    except Exception as exc:  # noqa: BLE001 - no torch, or a build without the CPU kernel: NumPy instead
        log.info("int8 kernel unavailable (%s): first pass in NumPy", exc)
        return None


_OP: Callable | None | bool = False  # False: not probed yet


def _op() -> Callable | None:
    global _OP  # noqa: PLW0603 - probed once per process
    if _OP is False:
        _OP = _kernel()
    return _OP  # type: ignore[return-value]


def _uses_kernel(dim: int) -> bool:
    return dim % KERNEL_DIM_MULTIPLE == 0 and _op() is not None


def first_pass_cost(dim: int) -> float:
    """Cost of one int8 estimate of ``dim`` dimensions with the backend this process has (:data:`INT8_COST`
    or :data:`NUMPY_INT8_COST`), in float32 rows scored contiguously."""
    return INT8_COST if _uses_kernel(dim) else NUMPY_INT8_COST


def prepare(query: np.ndarray, scale: np.ndarray) -> Int8Query:
    """The int8 form of unit ``query`` float32 ``(dim,)`` for codes of per-dimension ``scale``."""
    q = np.asarray(query, dtype=np.float64)
    scaled = (q * scale).astype(np.float32)
    quant_bound = 0.5 * float(np.abs(q) @ scale.astype(np.float64)) * (1 + 1e-6)
    if not _uses_kernel(len(scaled)):
        return Int8Query(None, scaled, quant_bound + _SLACK, 2.0**-20)
    import torch

    hi = torch.from_numpy(scaled).to(torch.bfloat16)
    lo = (torch.from_numpy(scaled) - hi.float()).to(torch.bfloat16)
    magnitude = 127 * float(np.abs(scaled).astype(np.float64).sum())  # ≥ Σ_d |scaled_d| |code_d|
    # the low part's own rounding (≤ 2^-16 of the query) and float32 accumulation of 2 × dim products
    split_bound = 2.0**-16 * magnitude
    accumulation = 2 * len(scaled) * 2.0**-24 * magnitude
    return Int8Query(
        torch.stack([hi, lo]), scaled, quant_bound + split_bound + accumulation + _SLACK, _OUT_ROUNDING
    )


_ONES: object | None = None  # per-row scales of the kernel (all 1: the scale is folded into the query)


def estimate(codes: np.ndarray, prepared: Int8Query) -> np.ndarray:
    """Estimated inner products float32 ``(rows,)`` of int8 ``codes`` ``(rows, dim)`` (C-contiguous; a slice
    of a memory-mapped file is read in place) with the prepared query."""
    if not len(codes):
        return np.empty(0, dtype=np.float32)
    if prepared.rows is None:  # in pieces: bounded memory (PIECE × dim × 4 bytes)
        return np.concatenate(
            [
                np.asarray(codes[i : i + PIECE], dtype=np.float32) @ prepared.scaled
                for i in range(0, len(codes), PIECE)
            ]
        )
    import torch

    global _ONES  # noqa: PLW0603 - grown, never shrunk; replaced whole (safe for concurrent readers)
    ones = _ONES
    if ones is None or len(ones) < len(codes):  # type: ignore[arg-type]
        ones = _ONES = torch.ones(max(len(codes), 1 << 20), dtype=torch.bfloat16)
    threads = torch.get_num_threads()
    single = len(codes) < SINGLE_THREAD_ROWS and threads > 1
    if (
        single
    ):  # a small product on the calling thread: waking the pool after idle costs more than the product
        torch.set_num_threads(1)
    try:
        out = _op()(prepared.rows, torch.from_numpy(np.ascontiguousarray(codes)), ones[: len(codes)])  # type: ignore[index,misc]
    finally:
        if single:
            torch.set_num_threads(threads)
    return (out[0].float() + out[1].float()).numpy()


def upper_bounds(est: np.ndarray, prepared: Int8Query) -> np.ndarray:
    """Upper bound float64 of the true inner product of each estimate (see module docstring)."""
    e = est.astype(np.float64)
    # each of the two outputs is rounded: |hi| + |lo| ≤ (|est| + bound) (1 + 2^-8)
    return e + prepared.bound + 2 * prepared.out_rounding * (np.abs(e) + prepared.bound)


def _largest(values: np.ndarray, m: int) -> tuple[np.ndarray, float | None]:
    """Indexes of the ``m`` largest ``values`` and the largest value outside them (``None``: none left)."""
    n = len(values)
    if m >= n:
        return np.arange(n), None
    if _op() is not None:  # torch's top-k: ≈ 7x NumPy's argpartition at 700k values
        import torch

        top = torch.from_numpy(values).topk(m + 1)
        return top.indices[:m].numpy(), float(top.values[m])
    pick = np.argpartition(-values, m)[: m + 1]
    pick = pick[np.argsort(-values[pick], kind="stable")]
    return pick[:m], float(values[pick[m]])


def certified_top(
    keys: np.ndarray | int,
    values: np.ndarray,
    exact: Callable[[np.ndarray], np.ndarray],
    depth: int,
    *,
    bound: Callable[[float], float] | None = None,
    distinct: bool = False,
) -> tuple[np.ndarray, np.ndarray]:
    """The exact ``depth`` best ``(keys, scores float32)``, best first, from bounded estimates of their
    scores.

    Args:
        keys: int64 ``(n,)`` item keys (row offsets or time positions; repeated keys when ``distinct``), or
            an int ``first``: item ``i`` has key ``first + i`` (a contiguous range of time positions).
        values: ``(n,)`` per item an upper bound of its score, or (with ``bound``) an estimate.
        exact: keys → exact float32 scores (called on the shortlist only); ``-inf`` drops an item (a row
            that fails the filter: never returned).
        depth: number of results (fewer when fewer items have a finite score).
        bound: non-decreasing; an item's score is at most ``bound(value)`` (``None``: ``values`` are upper
            bounds themselves). :func:`estimate_bound` gives it for int8 estimates.
        distinct: keys repeat (one entry per interval): each key is returned once.

    The ``m`` best values are scored exactly first; once ``depth`` exact scores are known, every item whose
    bound exceeds the ``depth``-th of them is scored too (one pass, :func:`_threshold`), and nothing else can
    beat it: two rounds, each item scored at most once. Fewer than ``depth`` finite scores among the first
    ``m``: ``m`` grows fourfold.
    """
    n = len(values)
    key = (
        (lambda i: keys[i])
        if isinstance(keys, np.ndarray)
        else (lambda i: np.asarray(i, dtype=np.int64) + keys)
    )
    if not n or depth <= 0:
        return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.float32)
    m = min(n, max(4 * depth, FIRST_SHORTLIST))
    upper = bound if bound is not None else float
    while True:
        pick, outside = _largest(values, m)
        chosen = np.unique(key(pick)) if distinct else key(pick)
        scores = np.asarray(exact(chosen), dtype=np.float32)
        if outside is None:
            break
        if int(np.isfinite(scores).sum()) >= depth:  # everything whose bound beats the depth-th exact score
            kth = float(np.partition(scores, -depth)[-depth])
            if upper(outside) <= kth:
                break
            more = values > _threshold(upper, kth, outside)
            more[pick] = False
            rest = key(np.flatnonzero(more))
            if distinct:
                rest = np.setdiff1d(np.unique(rest), chosen, assume_unique=True)
            chosen = np.concatenate([chosen, rest])
            scores = np.concatenate([scores, np.asarray(exact(rest), dtype=np.float32)])
            break
        m = min(n, 4 * m)
    order = np.argsort(-scores, kind="stable")[:depth]
    order = order[np.isfinite(scores[order])]
    return chosen[order].astype(np.int64), scores[order]


def _threshold(upper: Callable[[float], float], score: float, start: float) -> np.float32:
    """A float32 ``t`` with ``upper(v) <= score`` for every ``v <= t`` (``upper`` non-decreasing): found by
    bisection between a value known to pass and ``start`` (whose bound exceeds ``score``)."""
    lo = start - 1.0
    while upper(lo) > score:  # estimates lie in [-1, 1] up to their error: a few steps at most
        lo -= 2 * (start - lo)
    hi = start
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        if upper(mid) <= score:
            lo = mid
        else:
            hi = mid
    t = np.float32(lo)
    return t if float(t) <= lo else np.nextafter(t, np.float32(-np.inf))


def estimate_bound(prepared: Int8Query) -> Callable[[float], float]:
    """The non-decreasing upper bound of the true inner product given an int8 estimate (module docstring)."""
    return lambda e: float(upper_bounds(np.array([e]), prepared)[0])
