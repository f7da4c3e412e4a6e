"""The int8 first pass: its error bound holds, and the certified top-k is the exact top-k.

Truth by a second method: float64 inner products of the float32 vectors (NumPy), and a full sort.
"""

from __future__ import annotations

import numpy as np
import pytest
from diachron.retrieval import quantized
from diachron.retrieval.quantized import certified_top, estimate, estimate_bound, prepare, upper_bounds
from diachron.schemas.time_index import int8_scale, quantize


def _unit(x):
    return (x / np.linalg.norm(x, axis=-1, keepdims=True)).astype(np.float32)


def _data(kind, n=20_000, dim=384, seed=0):
    rng = np.random.default_rng(seed)
    if kind == "uniform":
        return _unit(rng.standard_normal((n, dim)))
    if kind == "clustered":  # tight clusters: many near-equal scores, the hard case for a shortlist
        centres = _unit(rng.standard_normal((20, dim)))
        return _unit(centres[rng.integers(0, 20, n)] + 0.05 * rng.standard_normal((n, dim)))
    x = rng.standard_normal((n, dim))  # "spiky": one dimension dominates some rows (wide per-dimension range)
    x[rng.random(n) < 0.01, 0] = 200.0
    return _unit(x)


@pytest.fixture(params=["torch", "numpy"])
def backend(request, monkeypatch):
    if request.param == "numpy":
        monkeypatch.setattr(quantized, "_OP", None)
    else:  # torch is a dependency: its int8 kernel is the path searches take, so its absence is a failure
        assert quantized._op() is not None, "torch's int8 kernel (aten::_weight_int8pack_mm) is missing"
    return request.param


@pytest.mark.parametrize("kind", ["uniform", "clustered", "spiky"])
def test_every_estimate_lies_within_its_bound(kind, backend):
    x = _data(kind)
    scale = int8_scale(np.abs(x).max(axis=0))
    codes = quantize(x, scale)
    rng = np.random.default_rng(1)
    for q in _unit(
        np.concatenate(
            [
                x[rng.integers(0, len(x), 4)] + 0.1 * rng.standard_normal((4, x.shape[1])),
                rng.standard_normal((4, x.shape[1])),
            ]
        )
    ):
        prepared = prepare(q, scale)
        est = estimate(codes, prepared)
        exact = x.astype(np.float64) @ q.astype(np.float64)
        upper = upper_bounds(est, prepared)
        assert (upper >= exact).all()
        # the bound is not vacuous: within a few hundredths (scores are cosines in [-1, 1])
        assert (upper - exact).max() < 0.05
        # and symmetric: the estimate is never further below than the bound either
        assert (est.astype(np.float64) - exact).min() >= -(upper - est).max()


@pytest.mark.parametrize("kind", ["uniform", "clustered", "spiky"])
def test_certified_top_is_the_exact_top_k(kind, backend):
    x = _data(kind, n=30_000)
    scale = int8_scale(np.abs(x).max(axis=0))
    codes = quantize(x, scale)
    rng = np.random.default_rng(2)
    calls = []

    def exact(keys):
        calls.append(len(keys))
        return x[keys] @ q

    for q in _unit(x[rng.integers(0, len(x), 6)] + 0.05 * rng.standard_normal((6, x.shape[1]))):
        rows = np.sort(rng.choice(len(x), 12_000, replace=False))
        prepared = prepare(q, scale)
        calls.clear()
        est = estimate(codes[rows], prepared)
        truth = rows[np.argsort(-(x[rows].astype(np.float64) @ q), kind="stable")[:10]]
        for got, scores in (
            certified_top(rows, upper_bounds(est, prepared), exact, 10),
            certified_top(rows, est, exact, 10, bound=estimate_bound(prepared)),
        ):
            assert set(got.tolist()) == set(truth.tolist())
            assert np.allclose(scores, x[got] @ q, atol=1e-6)
            assert list(scores) == sorted(scores, reverse=True)
        assert sum(calls) < 2 * len(rows)  # shortlists, not every row


def test_certified_top_returns_each_repeated_key_once():
    keys = np.array([5, 5, 7, 7, 7, 9, 11], dtype=np.int64)
    score = {5: 0.9, 7: 0.5, 9: 0.7, 11: 0.1}
    upper = np.array([score[k] + 0.01 for k in keys])
    got, scores = certified_top(
        keys, upper, lambda ks: np.array([score[int(k)] for k in ks], dtype=np.float32), 3, distinct=True
    )
    assert got.tolist() == [5, 9, 7]
    assert np.allclose(scores, [0.9, 0.7, 0.5])
    got, _ = certified_top(keys[:0], upper[:0], lambda ks: np.zeros(len(ks)), 3)
    assert got.tolist() == []


def test_a_dimension_the_kernel_does_not_take_is_estimated_in_numpy():
    x = _data("uniform", n=2_000, dim=10)  # not a multiple of 16: the kernel would crash the process
    scale = int8_scale(np.abs(x).max(axis=0))
    q = x[3]
    prepared = prepare(q, scale)
    assert prepared.rows is None and quantized.first_pass_cost(10) == quantized.NUMPY_INT8_COST
    est = estimate(quantize(x, scale), prepared)
    assert (upper_bounds(est, prepared) >= x.astype(np.float64) @ q).all()


@pytest.mark.parametrize("kind", ["uniform", "clustered"])
def test_certified_top_scores_each_row_once_in_two_rounds(kind):
    x = _data(kind, n=30_000)
    scale = int8_scale(np.abs(x).max(axis=0))
    rng = np.random.default_rng(5)
    q = _unit(x[7] + 0.05 * rng.standard_normal(x.shape[1]))
    prepared = prepare(q, scale)
    est = estimate(quantize(x, scale), prepared)
    scored: list[np.ndarray] = []

    def exact(keys):
        scored.append(np.asarray(keys))
        return x[keys] @ q

    got, _ = certified_top(np.arange(len(x)), est, exact, 10, bound=estimate_bound(prepared))
    truth = np.argsort(-(x.astype(np.float64) @ q), kind="stable")[:10]
    assert set(got.tolist()) == set(truth.tolist())
    every = np.concatenate(scored)
    assert len(scored) <= 2 and len(every) == len(np.unique(every))
    # the second round is the minimal one: every row whose bound beats the 10th exact score, and no other
    tenth = np.sort(x[got] @ q)[0]
    must = np.flatnonzero(upper_bounds(est, prepared) > tenth)
    assert set(must.tolist()) <= set(every.tolist())
    assert len(every) <= max(quantized.FIRST_SHORTLIST, len(must)) + quantized.FIRST_SHORTLIST


def test_certified_top_over_a_range_never_returns_a_row_the_filter_drops():
    x = _data("clustered", n=20_000)
    scale = int8_scale(np.abs(x).max(axis=0))
    q = x[11]
    prepared = prepare(q, scale)
    first = 1_000  # keys of a contiguous range: first + i
    est = estimate(quantize(x[first:], scale), prepared)
    passes = lambda keys: keys % 3 == 0  # noqa: E731 - the filter: a third of the rows

    def exact(keys):
        out = np.full(len(keys), -np.inf, dtype=np.float32)
        out[passes(keys)] = x[keys[passes(keys)]] @ q
        return out

    got, scores = certified_top(first, est, exact, 10, bound=estimate_bound(prepared))
    rows = np.arange(first, len(x))[passes(np.arange(first, len(x)))]
    truth = rows[np.argsort(-(x[rows].astype(np.float64) @ q), kind="stable")[:10]]
    assert got.tolist() == truth.tolist() and np.isfinite(scores).all()
    # fewer passing rows than asked for: all of them, nothing else
    got, _ = certified_top(first, est[:30], exact, 50, bound=estimate_bound(prepared))
    assert sorted(got.tolist()) == [k for k in range(first, first + 30) if k % 3 == 0]
