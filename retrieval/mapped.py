"""Memory-mapped index files, mapped in full when opened (issue 15).

A search touches a few thousand rows of a narrow window or most of a wide one, anywhere in the time index's
files; the first touch of each page by a process costs a page fault (measured here at 1M rows: the
1-day window's p50 6.2 → 3.6 ms once the mappings were populated, and ≈ 2× when the pages had to be read
from disk). :func:`load_mapped` therefore asks the kernel to populate the whole mapping when the file is
opened (``MADV_POPULATE_READ``, Linux ≥ 5.14; elsewhere ``MADV_WILLNEED``, a read-ahead hint). The pages
stay file-backed page cache, shared between processes and reclaimable: they are not counted as memory the
searcher holds.

A file larger than :data:`POPULATE_SHARE` of the memory available now is not populated (the ``10m``
tier's 15 GB of float32 vectors do not fit this machine's page cache: populating them would read them all
from disk at open and evict what it read); its pages are read on first touch.
"""

from __future__ import annotations

import logging
import mmap
from pathlib import Path

import numpy as np

__all__ = ["load_mapped"]

log = logging.getLogger(__name__)

MADV_POPULATE_READ = getattr(mmap, "MADV_POPULATE_READ", 22)
#: a file is populated at open only when it is at most this share of ``MemAvailable``
POPULATE_SHARE = 0.5


def _available_bytes() -> int | None:
    """``MemAvailable`` from ``/proc/meminfo`` in bytes, ``None`` where there is none (not Linux)."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def load_mapped(path: Path, mode: str = "r") -> np.ndarray:
    """``np.load(path, mmap_mode=mode)`` with the mapping populated (module docstring); a kernel without
    ``MADV_POPULATE_READ`` gets a read-ahead hint instead; a file too large for memory neither."""
    array = np.load(path, mmap_mode=mode)
    mapping = getattr(array, "_mmap", None)
    available = _available_bytes()
    if available is not None and array.nbytes > POPULATE_SHARE * available:
        log.info("%s (%d MiB) left to fault in on use: larger than memory allows", path, array.nbytes >> 20)
        return array
    if isinstance(mapping, mmap.mmap) and array.size:
        try:
            mapping.madvise(MADV_POPULATE_READ)
        except OSError:
            try:
                mapping.madvise(mmap.MADV_WILLNEED)
            except (OSError, AttributeError):
                log.debug("no madvise for %s", path)
    return array
