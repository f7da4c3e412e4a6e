"""The time index of a table on object storage, read through a local cache (issue 30): the reader's side.

The cache itself (where it lives, the published pointer, the download of one version, dropping older ones)
is :mod:`diachron.schemas.index_cache`, shared with the writer
(:func:`diachron.ingest.time_index.publish_time_index`); its names are re-exported here.

:func:`stamp` tells a long-lived reader that a newer index was published (it reads the pointer at most
once per :data:`STAMP_SECONDS`; :func:`latest_version` lists the table's versions as often); an index
older than the table is still used for the rows it covers, the caller scores the rest exactly.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

from diachron.schemas import time_index as fmt
from diachron.schemas.index_cache import cache_dir, download, drop_older, read_pointer

__all__ = [
    "STAMP_SECONDS",
    "cache_dir",
    "download",
    "drop_older",
    "fetch",
    "latest_version",
    "read_pointer",
    "stamp",
]

#: a reader re-reads the remote pointer at most this often (seconds); between reads its stamp is reused
STAMP_SECONDS = 1.0
_stamps: dict[str, tuple[float, Any]] = {}
_versions: dict[str, tuple[float, int]] = {}
_lock = threading.Lock()


def fetch(table_uri: str, storage_options: dict[str, str] | None = None) -> Path | None:
    """The local copy of the published index beside ``table_uri`` (downloaded when missing), or ``None``
    when none was published or the download failed (logged). The pointer read also refreshes
    :func:`stamp`."""
    pointer = read_pointer(table_uri, storage_options)
    _remember(table_uri, pointer)
    return None if pointer is None else download(table_uri, pointer, storage_options)


def stamp(table_uri: str, storage_options: dict[str, str] | None = None) -> Any:
    """Changes when a new index is published beside ``table_uri``: the pointer's table version (``None``
    without one); the pointer is read at most once per :data:`STAMP_SECONDS` per URI."""
    now = time.monotonic()
    with _lock:
        seen = _stamps.get(table_uri)
    if seen is not None and now - seen[0] < STAMP_SECONDS:
        return seen[1]
    return _remember(table_uri, read_pointer(table_uri, storage_options))


def _remember(table_uri: str, pointer: dict[str, Any] | None) -> Any:
    value = None if pointer is None else (int(pointer["table_version"]), int(pointer.get("num_rows", 0)))
    with _lock:
        _stamps[table_uri] = (time.monotonic(), value)
    return value


def latest_version(dataset: Any) -> int:
    """The latest version of a Lance ``dataset`` on storage: asked every call for a local table (a stat), at
    most once per :data:`STAMP_SECONDS` per URI on object storage (a listing costs a round trip per query)."""
    uri = str(dataset.uri)
    if not fmt.is_remote(uri):
        return int(dataset.latest_version)
    now = time.monotonic()
    with _lock:
        seen = _versions.get(uri)
    if seen is not None and now - seen[0] < STAMP_SECONDS:
        return seen[1]
    version = int(dataset.latest_version)
    with _lock:
        _versions[uri] = (now, version)
    return version
