"""Write the length-classed copy of the time index's int8 codes (issue 15), beside the time-ordered ones.

A narrow window's candidates are scattered over the time order (a row sits at its earliest interval; a
year-long interval of a row placed years earlier overlaps the window too). Here every event interval gets
an *entry*: the entries are grouped as :class:`~diachron.schemas.overlaps.SortedOverlaps` groups
intervals (finite ones by length class ``k``, ``2**(k-1) <= end - start < 2**k``, sorted by start; open to
the past sorted by end; open to the future sorted by start; open on both sides), and each entry holds a
copy of its row's int8 codes. The entries overlapping a window are then, per group, one contiguous slice (of
which the finite classes keep those ending after the window starts), scored with contiguous reads (the
reader re-scores its shortlist exactly from the time-ordered float32 vectors). A row with ``m`` intervals
has ``m`` entries (on disk: ``(dim + 20)`` bytes per interval).

Layout: :mod:`diachron.schemas.time_index` (``CLASSED_*``); reader: :mod:`diachron.retrieval.classed`.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from diachron.schemas import time_index as fmt
from diachron.schemas.overlaps import SortedOverlaps

__all__ = ["write_classed"]

PIECE = 65_536  # entries copied per step (bounded memory: PIECE × dim bytes)


def write_classed(
    directory: Path,
    starts: np.ndarray,
    ends: np.ndarray,
    rows: np.ndarray,
    codes: np.ndarray,
    position: np.ndarray,
) -> int:
    """Write the classed entries of intervals ``[starts, ends)`` (int64 µs, open sides ±2**61) of row
    offsets ``rows`` into ``directory``; ``codes`` are the time-ordered int8 codes, ``position`` maps a row
    offset to its time position. Returns the number of entries."""
    overlaps = SortedOverlaps(starts, ends, fmt.OPEN_PAST, fmt.OPEN_FUTURE)
    groups = [(width, ids) for width, _, _, ids in overlaps.classes]
    groups += [
        (fmt.GROUP_PAST, overlaps.past_ids),
        (fmt.GROUP_FUTURE, overlaps.future_ids),
        (fmt.GROUP_ALWAYS, overlaps.always),
    ]
    groups = [(w, ids) for w, ids in groups if len(ids)]
    ids = np.concatenate([g for _, g in groups]) if groups else np.empty(0, dtype=np.int32)
    counts = np.array([len(g) for _, g in groups], dtype=np.int64)
    segments = (
        np.stack(
            [
                np.array([w for w, _ in groups], dtype=np.int64),
                np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.int64),
                counts,
            ],
            axis=1,
        )
        if groups
        else np.empty((0, 3), dtype=np.int64)
    )
    np.save(directory / fmt.CLASSED_SEGMENTS_FILE, segments)
    np.save(directory / fmt.CLASSED_START_FILE, starts[ids].astype(np.int64))
    np.save(directory / fmt.CLASSED_END_FILE, ends[ids].astype(np.int64))
    entry_rows = rows[ids].astype(np.int32)
    np.save(directory / fmt.CLASSED_ROW_FILE, entry_rows)
    out = np.lib.format.open_memmap(
        directory / fmt.CLASSED_CODES_FILE, mode="w+", dtype=np.int8, shape=(len(ids), codes.shape[1])
    )
    for lo in range(0, len(ids), PIECE):
        pos = position[entry_rows[lo : lo + PIECE]]
        order = np.argsort(pos, kind="stable")  # read the time-ordered file forwards
        block = np.empty((len(pos), codes.shape[1]), dtype=np.int8)
        block[order] = codes[pos[order]]
        out[lo : lo + len(pos)] = block
    out.flush()
    return len(ids)
