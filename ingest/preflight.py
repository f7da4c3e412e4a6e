"""Checks of a ``--db`` before an ingest touches it (issue 13: refused up front, in one line).

:func:`check_database` runs at the start of :func:`diachron.ingest.pipeline.run_ingest`, before Ray starts
and before any table or directory is created. It refuses:

- a local path that is a file (or lies under one);
- a local directory (or the nearest existing parent of a new one) where this process cannot create a
  file — probed by creating and removing one, so a read-only mount counts and root on a ``chmod 555``
  directory does not;
- a LanceDB database whose tables are not diachron's: tables named like ours with another schema
  (other columns, types or embedding dimension), or only tables of another application.

Object-store URIs (``s3://`` …) get the schema checks (listing tables creates nothing); write access
there shows at the first commit.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

import pyarrow as pa
from diachron.ingest.errors import DatabaseRefusedError
from diachron.schemas.records import TABLES, arrow_schema

__all__ = ["check_database", "check_location"]

_OURS = set(TABLES)


def check_database(uri: str, *, dim: int, storage_options: dict[str, str] | None = None) -> None:
    """Refuse ``uri`` when an ingest into it would fail or damage someone else's data.

    Args:
        uri: the LanceDB URI (a local path, ``file://`` path, or an object-store URI).
        dim: the embedding dimension the run writes (``chunks.vector``).
        storage_options: object-store options, passed to LanceDB when listing an object store.

    Raises:
        DatabaseRefusedError: one line naming the problem and the fix (terminal: retrying cannot help).
    """
    if check_location(uri):
        _check_tables(uri, dim, storage_options)


def check_location(uri: str) -> bool:
    """The checks that need no LanceDB (a file, or not writable); cheap, safe before Ray starts.

    Returns:
        ``False`` for a local path that does not exist yet (nothing to compare), else ``True``.

    Raises:
        DatabaseRefusedError: ``uri`` is, or lies under, a file; or it is not writable.
    """
    local = _local_path(uri)
    return True if local is None else _check_local(uri, local)


def _local_path(uri: str) -> Path | None:
    if uri.startswith("file://"):
        return Path(uri[len("file://") :])
    return None if "://" in uri else Path(uri)


def _check_local(uri: str, path: Path) -> bool:
    """Raise for a file or an unwritable place; ``True`` when ``path`` is an existing directory."""
    if path.exists() and not path.is_dir():
        raise DatabaseRefusedError(
            f"--db {uri!r} is a file, not a database directory: give a directory (new or a diachron index)",
            uri=uri,
        )
    existing = path
    while not existing.exists():
        if existing.parent == existing:
            break
        existing = existing.parent
    if existing.exists() and not existing.is_dir():
        raise DatabaseRefusedError(
            f"--db {uri!r} lies under the file {str(existing)!r}: give a directory path",
            uri=uri,
        )
    problem = _write_probe(existing)
    if problem is not None:
        where = "" if existing == path else f" (its nearest existing parent {str(existing)!r})"
        raise DatabaseRefusedError(
            f"--db {uri!r}{where} is not writable: {problem}; give a writable directory",
            uri=uri,
        )
    return existing == path


def _write_probe(folder: Path) -> str | None:
    """``None`` when a file can be created (and removed) in ``folder``, else the OS error text."""
    try:
        handle, name = tempfile.mkstemp(prefix=".diachron-probe-", dir=folder)
    except OSError as exc:
        return exc.strerror or type(exc).__name__
    os.close(handle)
    os.unlink(name)
    return None


def _check_tables(uri: str, dim: int, storage_options: dict[str, str] | None) -> None:
    import lancedb

    db = lancedb.connect(uri, storage_options=storage_options or None)
    listed = db.list_tables()
    names = set(getattr(listed, "tables", listed))
    ours, others = sorted(names & _OURS), sorted(names - _OURS)
    if others and not ours:
        shown = ", ".join(others[:5]) + (" …" if len(others) > 5 else "")
        raise DatabaseRefusedError(
            f"--db {uri!r} is a LanceDB database of another application (tables: {shown}): "
            "use a new directory for diachron",
            uri=uri,
        )
    for name in ours:
        problem = _schema_problem(db.open_table(name).schema, arrow_schema(TABLES[name], dim=dim))
        if problem is not None:
            raise DatabaseRefusedError(
                f"--db {uri!r} is not a diachron index of this version: table {name!r} "
                f"{problem}; use a new directory (or the embedder that built it)",
                uri=uri,
            )


def _schema_problem(found: pa.Schema, expected: pa.Schema) -> str | None:
    """The first difference between a stored table's schema and ours (names and types), or ``None``."""
    have = {f.name: f.type for f in found}
    for f in expected:
        if f.name not in have:
            return f"has no column {f.name!r}"
        if not _same_type(have[f.name], f.type):
            return f"column {f.name!r} is {_describe(have[f.name])}, expected {_describe(f.type)}"
    extra = [n for n in have if n not in expected.names]
    return f"has unknown columns {extra[:5]}" if extra else None


def _same_type(a: pa.DataType, b: pa.DataType) -> bool:
    if pa.types.is_fixed_size_list(a) and pa.types.is_fixed_size_list(b):
        return a.list_size == b.list_size and a.value_type == b.value_type
    return a.equals(b) or str(a) == str(b)


def _describe(t: Any) -> str:
    if pa.types.is_fixed_size_list(t):
        return f"a vector of {t.list_size} {t.value_type}"
    text = str(t)
    return text if len(text) <= 80 else text[:77] + "..."
