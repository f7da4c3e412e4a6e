"""SortedOverlaps against the definition of half-open overlap, evaluated by brute force (a second method)."""

import numpy as np
from diachron.retrieval.interval_index import OPEN_FUTURE, OPEN_PAST
from diachron.schemas.overlaps import SortedOverlaps


def _brute(starts, ends, qs, qe):
    return set(np.flatnonzero((starts < qe) & (ends > qs)).tolist())


def test_hand_worked_overlaps_are_half_open():
    # [0,10) [10,20) [5,6) open-past up to 3, open-future from 30, open both, a point interval [7,7)
    starts = np.array([0, 10, 5, OPEN_PAST, 30, OPEN_PAST, 7])
    ends = np.array([10, 20, 6, 3, OPEN_FUTURE, OPEN_FUTURE, 7])
    index = SortedOverlaps(starts, ends, OPEN_PAST, OPEN_FUTURE)
    assert sorted(index.overlapping(10, 11).tolist()) == [1, 5]  # [0,10) only touches 10
    assert sorted(index.overlapping(2, 6).tolist()) == [0, 2, 3, 5]
    assert sorted(index.overlapping(25, 31).tolist()) == [4, 5]
    assert sorted(index.overlapping(OPEN_PAST, 1).tolist()) == [0, 3, 5]
    assert index.overlapping(5, 5).tolist() == []  # an empty query overlaps nothing


def test_random_intervals_of_every_length_match_brute_force():
    rng = np.random.default_rng(7)
    n = 5000
    starts = rng.integers(-(10**15), 10**15, n)
    # lengths on a log scale, including exact powers of two and zero
    lengths = np.where(
        rng.random(n) < 0.1, 1 << rng.integers(0, 50, n), (10 ** rng.uniform(0, 15, n)).astype(np.int64)
    )
    lengths[:20] = 0
    ends = starts + lengths
    starts[rng.random(n) < 0.05] = OPEN_PAST
    ends[rng.random(n) < 0.05] = OPEN_FUTURE
    index = SortedOverlaps(starts, ends, OPEN_PAST, OPEN_FUTURE)
    for _ in range(300):
        qs = int(rng.integers(-(10**15), 10**15))
        qe = qs + int(10 ** rng.uniform(0, 15))
        if rng.random() < 0.1:
            qs = OPEN_PAST
        if rng.random() < 0.1:
            qe = OPEN_FUTURE
        got = index.overlapping(qs, qe)
        assert len(got) == len(set(got.tolist()))
        assert set(got.tolist()) == _brute(starts, ends, qs, qe)
        assert index.count_upper_bound(qs, qe) >= len(got)


def test_labels_are_returned_instead_of_positions():
    starts = np.array([0, 10, 5, OPEN_PAST])
    ends = np.array([10, 20, 6, 3])
    rows = np.array([4, 4, 9, 2], dtype=np.int32)  # the row each interval belongs to (row 4 has two)
    index = SortedOverlaps(starts, ends, OPEN_PAST, OPEN_FUTURE, labels=rows)
    assert sorted(index.overlapping(5, 15).tolist()) == [4, 4, 9]
    assert sorted(index.overlapping(OPEN_PAST, 1).tolist()) == [2, 4]
