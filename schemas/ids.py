"""Content-derived, deterministic ids (docs/design.md, "Ids and idempotency")."""

from __future__ import annotations

import hashlib

__all__ = ["chunk_id", "content_sha256", "doc_version_id", "short_hash"]


def content_sha256(text: str) -> str:
    """SHA-256 hex digest of the UTF-8 text."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def short_hash(*parts: str, length: int = 16) -> str:
    """A stable hex id of ``length`` characters from the joined parts."""
    return hashlib.sha256("\x1f".join(parts).encode("utf-8")).hexdigest()[:length]


def doc_version_id(series_id: str, sha256: str) -> str:
    """Id of one document version: the series plus a prefix of its content hash.

    Unchanged content gives the same id (re-ingest is a no-op); changed content a new version id.
    """
    return f"{series_id}@{sha256[:12]}"


def chunk_id(doc_id: str, seq: int, text: str) -> str:
    """Id of a chunk: its document version, its position and its text."""
    return f"{short_hash(doc_id, str(seq), text)}"
