"""The local cache of a time index published on object storage (issue 30): where it lives, the pointer, the
download of one version.

The writer (:func:`diachron.ingest.time_index.publish_time_index`) puts one build per covered table version
under ``<db>/chunks.time_index/v<version>/`` and then the pointer ``latest.json``
(:mod:`diachron.schemas.time_index`). A reader downloads the version the pointer names into a local
directory keyed by the index URI and that version, ``<cache>/time_index/<sha1 of the URI>/v<version>/``
(``<cache>`` = ``$DIACHRON_CACHE``, else ``$XDG_CACHE_HOME/diachron``, else ``~/.cache/diachron``), and
memory-maps it from there like a local index. Several processes on one machine share the cache: each
downloads into its own temporary directory and renames it into place (the first rename wins). Older
versions in the cache are removed once a newer one is complete (a process still mapping one keeps its
pages: unlinked files stay readable on POSIX).

Both sides use it: the writer seeds its build from the cache, the reader
(:mod:`diachron.retrieval.index_cache`, which adds the once-a-second freshness stamps) maps it.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import threading
import time
from pathlib import Path
from typing import Any

from diachron.schemas import time_index as fmt

__all__ = ["cache_dir", "download", "drop_older", "read_pointer"]

log = logging.getLogger(__name__)


def cache_dir(table_uri: str) -> Path:
    """The local cache directory of the index beside ``table_uri`` (one ``v<version>`` folder per build)."""
    base = os.environ.get("DIACHRON_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "diachron"
    )
    key = hashlib.sha1(fmt.index_uri(table_uri).encode()).hexdigest()[:16]
    return Path(base) / "time_index" / key


def read_pointer(table_uri: str, storage_options: dict[str, str] | None = None) -> dict[str, Any] | None:
    """The published pointer ``{"format", "table_version", "num_rows"}`` beside ``table_uri``, or ``None``
    when no index of this format was published (or the store cannot be read: searches stay exact)."""
    import pyarrow as pa

    try:
        fs, path = fmt.filesystem(fmt.index_uri(table_uri), storage_options)
        with fs.open_input_stream(f"{path}/{fmt.POINTER}") as f:
            pointer = json.loads(f.read())
    except (OSError, ValueError, pa.ArrowException):
        return None
    return pointer if pointer.get("format") == fmt.FORMAT else None


def download(
    table_uri: str, pointer: dict[str, Any], storage_options: dict[str, str] | None = None
) -> Path | None:
    """The local copy of the version ``pointer`` (from :func:`read_pointer`) names beside ``table_uri``,
    downloaded when missing; ``None`` when the download failed (logged: searches stay exact)."""
    root = cache_dir(table_uri)
    target = root / f"v{int(pointer['table_version'])}"
    if (target / fmt.MANIFEST).is_file():
        return target
    import pyarrow as pa
    import pyarrow.fs as pafs

    tmp = root / f".{target.name}.{os.getpid()}.{threading.get_ident()}.tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    t0 = time.perf_counter()
    try:
        fs, path = fmt.filesystem(fmt.version_prefix(table_uri, pointer["table_version"]), storage_options)
        tmp.mkdir(parents=True)
        pafs.copy_files(path, str(tmp), source_filesystem=fs, destination_filesystem=pafs.LocalFileSystem())
        if not (tmp / fmt.MANIFEST).is_file():
            raise OSError(
                f"no {fmt.MANIFEST} under {fmt.version_prefix(table_uri, pointer['table_version'])}"
            )
        try:
            tmp.rename(target)
        except OSError:  # another process put the same version in place first
            shutil.rmtree(tmp, ignore_errors=True)
    except (OSError, ValueError, pa.ArrowException) as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        log.warning("time index beside %s not downloaded (%s): searches stay exact", table_uri, exc)
        return None
    log.info(
        "time index v%s of %s cached in %.1f s", pointer["table_version"], table_uri, time.perf_counter() - t0
    )
    drop_older(root, target)
    return target


def drop_older(root: Path, keep: Path) -> None:
    """Remove the cached versions under ``root`` other than ``keep`` (``build.*`` work folders stay)."""
    for other in root.glob("v*"):
        if other != keep and other.is_dir():
            shutil.rmtree(other, ignore_errors=True)
