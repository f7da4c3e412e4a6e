"""A time-ordered row layout for the ``chunks`` table (so a window's candidates form few contiguous runs).

Rows are ordered by the length class of their interval hull (⌊log2(days + 1)⌋: instants and days, weeks,
months, years, … open-ended last) and then by hull start; chunks of unknown time go last. Within one
class, a window's overlapping rows are one contiguous run, so a query reads ~a dozen runs, not
scattered rows. Pure function of an Arrow table; writing it is the store's job.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from diachron.retrieval.interval_index import OPEN_FUTURE, OPEN_PAST, to_micros

__all__ = ["time_sorted"]

_DAY_US = 86_400 * 1_000_000


def time_sorted(table: pa.Table) -> pa.Table:
    """``table`` reordered by (hull length class, ``event_start``); unknown-time rows last."""
    start = to_micros(table.column("event_start"), OPEN_PAST)
    end = to_micros(table.column("event_end"), OPEN_FUTURE)
    unknown = np.asarray(table.column("time_status").to_pylist()) != "known"
    open_side = (start == OPEN_PAST) | (end == OPEN_FUTURE)
    days = np.where(open_side, 0, end - start) // _DAY_US
    length_class = np.where(open_side, 64, np.floor(np.log2(days + 1)).astype(np.int64))
    order = np.lexsort((start, length_class, unknown))
    return table.take(pa.array(order))
