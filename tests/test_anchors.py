"""e_hypo anchors (TA-RAG §3.3 as docs/design.md states it), counted by hand."""

from datetime import UTC, datetime, timedelta

import numpy as np
from diachron.retrieval.anchors import (
    PAPER_MAX_ANCHORS,
    anchor_granularity,
    anchors,
    hypothetical_embedding,
    phrase,
)
from diachron.schemas.time import Granularity, Interval


def t(*args: int) -> datetime:
    return datetime(*args, tzinfo=UTC)


def test_granularity_one_finer_than_the_span():
    assert anchor_granularity(timedelta(days=6 * 365)) is Granularity.YEAR
    assert anchor_granularity(timedelta(days=365)) is Granularity.MONTH
    assert anchor_granularity(timedelta(days=30)) is Granularity.DAY
    assert anchor_granularity(timedelta(days=30), "monthly") is Granularity.MONTH


def test_two_year_window_gets_24_monthly_anchors():
    found = anchors([Interval(t(2010, 9, 1), t(2012, 9, 1))], max_anchors=PAPER_MAX_ANCHORS)
    assert len(found) == 24
    assert found[0] == (t(2010, 9, 1), Granularity.MONTH) and found[-1] == (t(2012, 8, 1), Granularity.MONTH)
    assert phrase(found[0]) == "September 2010"


def test_twenty_year_window_gets_yearly_anchors_and_a_week_gets_days():
    twenty = anchors([Interval(t(1920, 1, 1), t(1941, 1, 1))], max_anchors=PAPER_MAX_ANCHORS)
    assert [a[0].year for a in twenty] == list(range(1920, 1941))
    week = anchors([Interval(t(2026, 5, 25), t(2026, 6, 1))])
    assert [phrase(a) for a in week][:2] == ["May 25, 2026", "May 26, 2026"] and len(week) == 7


def test_at_most_120_anchors_evenly_spaced():
    found = anchors([Interval(t(2000, 1, 1), t(2001, 1, 1))], policy="monthly")
    assert len(found) == 12
    many = anchors([Interval(t(1000, 1, 1), t(1500, 1, 1))], max_anchors=PAPER_MAX_ANCHORS)
    assert len(many) == 120 and many[0][0].year == 1000 and many[-1][0].year == 1499


def test_default_cap_is_12_evenly_spaced_and_keeps_a_year_whole():
    two_years = anchors([Interval(t(2010, 9, 1), t(2012, 9, 1))])
    # 24 months, 12 picks at round(linspace(0, 23, 12)) = 0, 2, 4, 6, 8, 10, 13, 15, 17, 19, 21, 23
    assert [(a[0].year, a[0].month) for a in two_years] == [
        (2010, 9),
        (2010, 11),
        (2011, 1),
        (2011, 3),
        (2011, 5),
        (2011, 7),
        (2011, 10),
        (2011, 12),
        (2012, 2),
        (2012, 4),
        (2012, 6),
        (2012, 8),
    ]
    assert len(anchors([Interval(t(2011, 1, 1), t(2012, 1, 1))])) == 12


def test_open_interval_is_bounded_by_the_index_extent():
    extent = Interval(t(2000, 1, 1), t(2013, 4, 1))
    found = anchors([Interval(t(2012, 1, 1), None)], extent=extent, max_anchors=PAPER_MAX_ANCHORS)
    assert found[0][0] == t(2012, 1, 1) and found[-1][0] == t(2013, 3, 1) and len(found) == 15


def test_e_hypo_is_the_renormalised_mean():
    def embed(texts):
        assert texts == ["In 2015, q", "In 2016, q"]
        return np.array([[1.0, 0.0], [0.0, 1.0]], dtype=np.float32)

    vector = hypothetical_embedding(
        embed, "q", [(t(2015, 1, 1), Granularity.YEAR), (t(2016, 1, 1), Granularity.YEAR)]
    )
    assert np.allclose(vector, [2**-0.5, 2**-0.5])
