"""Errors of the retrieval package (re-exported from :mod:`diachron.schemas.errors`, which draws the tree).

RetrievalError
├── StoreNotFoundError     — no diachron index at the URI (ingest first)
├── EmbedderMismatchError  — the index was built by another embedder (also a ``TerminalIngestError``)
└── ServiceError           — a ``diachron serve`` refused or failed the request (``status``)
"""

from __future__ import annotations

from diachron.schemas.errors import EmbedderMismatchError, RetrievalError, ServiceError, StoreNotFoundError

__all__ = ["EmbedderMismatchError", "RetrievalError", "ServiceError", "StoreNotFoundError"]
