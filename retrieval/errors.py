"""Errors of the retrieval package.

RetrievalError
├── StoreNotFoundError     — no diachron tables at the URI (ingest first)
└── EmbedderMismatchError  — the index was built by another embedder than the client's
"""

from __future__ import annotations

__all__ = ["EmbedderMismatchError", "RetrievalError", "StoreNotFoundError"]


class RetrievalError(Exception):
    """Base of retrieval errors."""


class StoreNotFoundError(RetrievalError):
    """The URI holds no ``chunks`` table: run ``diachron ingest`` first."""


class EmbedderMismatchError(RetrievalError):
    """The index was built with another embedder; query it with the same model (name/dim in the message)."""
