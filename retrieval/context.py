"""Chronological context: hits become citation cards ordered by publication time (TA-RAG §3.5)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from diachron.retrieval.search import Hit
from diachron.schemas.evidence import Evidence
from diachron.schemas.records import intervals_from_arrow

__all__ = ["build_evidence", "document_cards"]

_FAR_FUTURE = datetime.max.replace(tzinfo=None)


def document_cards(
    documents: Any, doc_ids: list[str], series_ids: list[str]
) -> tuple[dict[str, str], dict[str, str]]:
    """``(title by doc_id, superseded_by by doc_id)`` from the ``documents`` table, matched in Arrow."""
    if not doc_ids or documents.count_rows() == 0:
        return {}, {}
    data = documents.to_lance().to_table(columns=["doc_id", "series_id", "title", "supersedes"])
    data = data.filter(pc.is_in(data["series_id"], value_set=pa.array(sorted(set(series_ids)))))
    titles, superseded_by = {}, {}
    for row in data.to_pylist():
        titles[row["doc_id"]] = row["title"]
        if row["supersedes"] in doc_ids:
            superseded_by[row["supersedes"]] = row["doc_id"]
    return titles, superseded_by


def build_evidence(hits: list[Hit], documents: Any, *, chronological: bool = True) -> list[Evidence]:
    """Citation cards for ``hits``, in publication order (then document position) when ``chronological``."""
    rows = [h.row for h in hits]
    titles, superseded_by = document_cards(
        documents, [r["doc_id"] for r in rows], [r["series_id"] for r in rows]
    )
    cards = [
        Evidence(
            chunk_id=r["chunk_id"],
            doc_id=r["doc_id"],
            series_id=r["series_id"],
            title=titles.get(r["doc_id"], ""),
            text=r["text"],
            score=h.score,
            published_at=r["published_at"],
            intervals=tuple(intervals_from_arrow(r["intervals"])),
            time_source=r["time_source"],
            valid_from=r["valid_from"],
            valid_until=r["valid_until"],
            recorded_at=r["recorded_at"],
            superseded_by=superseded_by.get(r["doc_id"]),
            rank=n,
            interval_kinds=tuple(
                (iv.get("kind") or "event", iv.get("provenance")) for iv in r["intervals"] or ()
            ),
            temporal_fit=float(h.focus),
        )
        for n, (h, r) in enumerate(zip(hits, rows, strict=True), 1)
    ]
    if chronological:
        order = {id(c): r["seq"] for c, r in zip(cards, rows, strict=True)}
        cards.sort(
            key=lambda c: (
                c.published_at is None,
                c.published_at.replace(tzinfo=None) if c.published_at else _FAR_FUTURE,
                c.doc_id,
                order[id(c)],
            )
        )
    return cards
