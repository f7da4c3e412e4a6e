"""The TimeQA development benchmark (issue 11): real Wikipedia passages, time-constrained questions.

Data: ``<shared>/data/timeqa_dev/`` (``corpus.jsonl`` passages, ``questions.jsonl``; README there). A
Wikipedia page is one document: its passages are joined in order, each section opened by a markdown
heading (``## Early career``), so stage 2 sees the page's own timeline (spans open and close across
passages, undated passages inherit their section's span). The page has no publication date. Chunks are
mapped back to the passages they overlap (by character offsets), and a method's chunk ranking becomes a
passage ranking (each chunk's passages in text order, first occurrence wins): recall@k is
``|gold ∩ top-k passages| / min(k, |gold|)``, as the dataset README defines it.

The ingested index is cached under ``bench/.cache/timeqa/`` (gitignored): ingest is idempotent, so a
re-run with unchanged code writes nothing; delete the folder after changing stage 2.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from diachron.schemas.time import Interval, parse_instant

__all__ = ["PageIndex", "TimeQAQuestion", "build_pages", "load_questions", "passage_ranking"]

_YEAR = re.compile(r"^(-?)(\d{1,4})(-.*)$")


def _instant(text: str | None) -> datetime | None:
    """An ISO instant whose year may be written with fewer than 4 digits ("633-04-01T00:00:00Z")."""
    if text is None:
        return None
    m = _YEAR.match(text)
    return parse_instant(m.group(2).zfill(4) + m.group(3) if m else text)


@dataclass(frozen=True, slots=True)
class TimeQAQuestion:
    """One question: text, window (half-open UTC, ``None`` when the question names no time), gold passages."""

    qid: str
    text: str
    window: Interval | None
    window_kind: str
    gold: frozenset[str]
    page: str


def load_questions(path: Path) -> list[TimeQAQuestion]:
    """The questions of a ``questions.jsonl`` file, in file order."""
    out = []
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        r = json.loads(line)
        w = r.get("window")
        window = Interval(_instant(w.get("start")), _instant(w.get("end"))) if w else None
        out.append(TimeQAQuestion(r["qid"], r["question"], window, r.get("window_kind") or "none",
                                  frozenset(r["gold_doc_ids"]), r["page"]))
    return out


@dataclass(frozen=True, slots=True)
class PageIndex:
    """Where each passage sits in its page document: ``{page doc_id: [(start, end, passage id), …]}``."""

    texts: dict[str, str]
    passages: dict[str, list[tuple[int, int, str]]]

    def chunk_passages(self, doc_id: str, chunk_text: str, cursor: int = 0) -> tuple[list[str], int]:
        """Passage ids overlapping a chunk's text (found at or after ``cursor``), and the chunk's end offset."""
        text = self.texts[doc_id]
        pos = text.find(chunk_text, cursor)
        if pos < 0:
            pos = text.find(chunk_text)
        if pos < 0:
            return [], cursor
        end = pos + len(chunk_text)
        return [pid for a, b, pid in self.passages[doc_id] if a < end and pos < b], end


def build_pages(corpus: Path, out: Path) -> PageIndex:
    """Write one JSONL document per page to ``out`` (``published_at`` null) and return the passage offsets."""
    pages: dict[str, list[dict[str, Any]]] = {}
    for line in Path(corpus).read_text(encoding="utf-8").splitlines():
        if line.strip():
            p = json.loads(line)
            pages.setdefault(p["page"], []).append(p)
    texts, where, rows = {}, {}, []
    for page, passages in pages.items():
        passages.sort(key=lambda p: p["passage_index"])
        parts, spans, pos, section = [], [], 0, None
        for p in passages:
            if p["section"] != section:
                section = p["section"]
                heading = f"## {section}\n\n"
                parts.append(heading)
                pos += len(heading)
            spans.append((pos, pos + len(p["text"]), p["doc_id"]))
            parts.append(p["text"] + "\n\n")
            pos += len(p["text"]) + 2
        doc_id = f"timeqa:{page}"
        texts[doc_id], where[doc_id] = "".join(parts), spans
        title = passages[0]["title"].split(" — ")[0]
        rows.append({"doc_id": doc_id, "title": title, "text": texts[doc_id], "published_at": None})
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return PageIndex(texts, where)


def chunk_passage_map(index: PageIndex, chunks: Iterable[dict[str, Any]]) -> dict[str, list[str]]:
    """``{chunk_id: [passage ids]}`` for chunk rows ``{chunk_id, doc_id, seq, text}``."""
    by_doc: dict[str, list[dict[str, Any]]] = {}
    for c in chunks:
        by_doc.setdefault(c["doc_id"], []).append(c)
    out: dict[str, list[str]] = {}
    for doc_id, rows in by_doc.items():
        cursor = 0
        for c in sorted(rows, key=lambda r: r["seq"]):
            out[c["chunk_id"]], cursor = index.chunk_passages(doc_id, c["text"], cursor)
    return out


def passage_ranking(chunk_ids: Sequence[str], passages_of: Callable[[str], list[str]], k: int) -> list[str]:
    """The first ``k`` distinct passages of a chunk ranking (each chunk's passages in text order)."""
    out: list[str] = []
    for cid in chunk_ids:
        for pid in passages_of(cid):
            if pid not in out:
                out.append(pid)
        if len(out) >= k:
            break
    return out[:k]
