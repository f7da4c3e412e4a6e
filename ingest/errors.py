"""Errors of the ingest package (re-exported from :mod:`diachron.schemas.errors`, which draws the whole tree).

    IngestError
    ├── TransientIngestError      — retrying the same work can succeed
    │   ├── StoreConflictError    — a LanceDB commit conflict or I/O hiccup
    │   └── WorkerLostError       — a Ray worker or node went away
    └── TerminalIngestError       — retrying cannot help
        ├── SourceError           — a source that cannot be read at all (also a ``ValueError``)
        ├── EmbedderMismatchError — the index was built by another embedder (also a ``RetrievalError``)
        └── DatabaseRefusedError  — the ``--db`` is a file, read-only, or another application's database

``ConfigError`` (a ``TerminalError``) is re-exported here too. Every error pickles with its attributes
(Ray moves them between processes) and says how to fix the problem.
"""

from __future__ import annotations

from diachron.schemas.errors import (
    ConfigError,
    DatabaseRefusedError,
    EmbedderMismatchError,
    IngestError,
    SourceError,
    StoreConflictError,
    TerminalIngestError,
    TransientIngestError,
    WorkerLostError,
)

__all__ = [
    "ConfigError",
    "DatabaseRefusedError",
    "EmbedderMismatchError",
    "IngestError",
    "SourceError",
    "StoreConflictError",
    "TerminalIngestError",
    "TransientIngestError",
    "WorkerLostError",
]
