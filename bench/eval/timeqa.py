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

__all__ = [
    "SETTINGS",
    "PageIndex",
    "TimeQAQuestion",
    "build_pages",
    "build_passages",
    "half_of",
    "load_questions",
    "passage_ranking",
]

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
    now: datetime


def load_questions(path: Path) -> list[TimeQAQuestion]:
    """The questions of a ``questions.jsonl`` file, in file order."""
    out = []
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        r = json.loads(line)
        w = r.get("window")
        window = Interval(_instant(w.get("start")), _instant(w.get("end"))) if w else None
        out.append(
            TimeQAQuestion(
                r["qid"],
                r["question"],
                window,
                r.get("window_kind") or "none",
                frozenset(r["gold_doc_ids"]),
                r["page"],
                parse_instant(r["now"]),
            )
        )
    return out


@dataclass(frozen=True, slots=True)
class PageIndex:
    """Where each passage sits in its page document: ``{page doc_id: [(start, end, passage id), …]}``."""

    texts: dict[str, str]
    passages: dict[str, list[tuple[int, int, str]]]

    def chunk_passages(self, doc_id: str, chunk_text: str, cursor: int = 0) -> tuple[list[str], int]:
        """Passage ids overlapping a chunk's text (found at or after ``cursor``), and the chunk's end
        offset."""
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


def build_passages(corpus: Path, out: Path) -> PageIndex:
    """Write one JSONL document per *passage* to ``out`` (the passages-as-documents setting: no page, no
    section heading, ``published_at`` null — how pre-chunked data from another vector store arrives) and
    return the passage offsets (each document is its one passage)."""
    texts, where, rows = {}, {}, []
    for line in Path(corpus).read_text(encoding="utf-8").splitlines():
        if line.strip():
            p = json.loads(line)
            texts[p["doc_id"]], where[p["doc_id"]] = p["text"], [(0, len(p["text"]), p["doc_id"])]
            rows.append({"doc_id": p["doc_id"], "title": p["title"], "text": p["text"], "published_at": None})
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return PageIndex(texts, where)


#: setting name -> the document builder (``pages``: one document per page; ``passages``: one per passage).
SETTINGS: dict[str, Callable[[Path, Path], PageIndex]] = {"pages": build_pages, "passages": build_passages}


def half_of(page: str) -> str:
    """The fixed development half (``"A"`` or ``"B"``) of a TimeQA page: the low bit of the first byte of
    the SHA-256 of the page id (deterministic, independent of file order and of the questions)."""
    import hashlib

    return "AB"[hashlib.sha256(page.encode("utf-8")).digest()[0] & 1]


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


# --- the benchmark run -------------------------------------------------------------------------------

KS = (5, 10, 20)
#: name -> what it is, in report order.
TIMEQA_METHODS: dict[str, str] = {
    "diachron": (
        "validity spans + tiers (unknown time as a lower tier) + e_hypo, ranked by similarity + fit + "
        "document context"
    ),
    "diachron-strict": "the same with strict=True (known, overlapping time only)",
    "diachron-nodoc": "diachron without the document context in the re-ranking (context_weight=0)",
    "diachron-nolex": "diachron without the lexical (BM25) signal in the re-ranking (lexical_weight=0)",
    "paper": "TA-RAG's ranking: strict time filter + e_hypo, similarity only (temporal_weight=0)",
    "naive": "plain vector search of the raw question (no time filter, no e_hypo)",
    "bm25": "BM25 (bm25s) of the raw question",
}


@dataclass(frozen=True, slots=True)
class Retrieved:
    """One method's answer to one question: passages best first, each with its chunk's intervals."""

    passages: list[str]
    intervals: list[tuple[Interval, ...]]
    intent_intervals: tuple[Interval, ...] | None = None


def _from_chunks(
    ranked: list[tuple[str, tuple[Interval, ...]]], passages_of: dict[str, list[str]], k: int
) -> tuple[list[str], list[tuple[Interval, ...]]]:
    out, times = [], []
    for cid, ivs in ranked:
        for pid in passages_of.get(cid, []):
            if pid not in out:
                out.append(pid)
                times.append(ivs)
        if len(out) >= k:
            break
    return out[:k], times[:k]


def ingest_timeqa(
    shared: Path, cache: Path, setting: str = "pages", *, reuse: bool = False
) -> tuple[str, PageIndex, str]:
    """Build the documents of ``setting`` (:data:`SETTINGS`) and ingest them (idempotent): ``(db uri, index,
    note)``. ``pages`` lives in ``cache/db`` (as before), ``passages`` in ``cache/passages/db``; ``reuse``:
    skip the ingest when the folder already holds a ``chunks`` table."""
    from diachron.ingest.pipeline import IngestConfig, run_ingest

    folder = cache if setting == "pages" else cache / setting
    index = SETTINGS[setting](shared / "data" / "timeqa_dev" / "corpus.jsonl", folder / f"{setting}.jsonl")
    db = str(folder / "db")
    if reuse and (folder / "db" / "chunks.lance").is_dir():
        return db, index, f"{len(index.texts)} {setting}: reused {db} (no ingest)"
    s = run_ingest([str(folder / f"{setting}.jsonl")], IngestConfig(db_uri=db, num_cpus=2))
    return (
        db,
        index,
        (
            f"{len(index.texts)} {setting}: {s.documents_written} written, {s.chunks_written} chunks "
            f"written, {s.seconds:.0f} s"
        ),
    )


def run_timeqa(
    db: str,
    index: PageIndex,
    questions: Sequence[TimeQAQuestion],
    *,
    embedder: Any,
    temporal_weight: float = 0.1,
    methods: Sequence[str] = tuple(TIMEQA_METHODS),
    progress: Callable[[str, int], None] | None = None,
) -> dict[str, Any]:
    """Retrieve with every method of :data:`TIMEQA_METHODS`; returns ``{"retrieved", "chunks",
    "passages_of"}``.

    A method named ``diachron@W`` is diachron with ``temporal_weight=W`` (the weight ablation);
    ``diachron@field=value,…`` is diachron with those :class:`~diachron.retrieval.weights.RankingWeights`
    fields (``diachron@demotion=inf``: every demoted chunk after every admitted one).
    """
    from diachron.retrieval.baselines import BM25Searcher
    from diachron.retrieval.client import Client
    from diachron.schemas.records import intervals_from_arrow

    client = Client(db, embedder=embedder, temporal_weight=temporal_weight)
    paper = Client(db, embedder=embedder, temporal_weight=0.0)
    nodoc = Client(db, embedder=embedder, temporal_weight=temporal_weight, context_weight=0.0)
    nolex = Client(db, embedder=embedder, temporal_weight=temporal_weight, lexical_weight=0.0)
    weighted = {m: Client(db, embedder=embedder, weights=variant_weights(m)) for m in methods if "@" in m}
    chunks = (
        client.chunks.to_lance()
        .to_table(columns=["chunk_id", "doc_id", "seq", "text", "intervals", "time_status"])
        .to_pylist()
    )
    passages_of = chunk_passage_map(index, chunks)
    bm25 = BM25Searcher(client.chunks)
    depth = 2 * max(KS)

    def cards(result: Any) -> list[tuple[str, tuple[Interval, ...]]]:
        return [(e.chunk_id, e.intervals) for e in sorted(result.evidence, key=lambda e: e.rank)]

    out: dict[str, dict[str, Retrieved]] = {m: {} for m in methods}
    for n, q in enumerate(questions):
        for method in methods:
            intent = None
            if method == "bm25":
                ranked = [
                    (h.row["chunk_id"], tuple(intervals_from_arrow(h.row["intervals"])))
                    for h in bm25.search(q.text, k=depth)
                ]
            elif method == "naive":
                ranked = cards(client.naive_search(q.text, k=depth))
            else:
                c = {"paper": paper, "diachron-nodoc": nodoc, "diachron-nolex": nolex}.get(
                    method
                ) or weighted.get(method, client)
                result = c.search(q.text, k=depth, now=q.now, strict=method in ("diachron-strict", "paper"))
                ranked, intent = cards(result), tuple(result.intent.intervals)
            passages, times = _from_chunks(ranked, passages_of, max(KS))
            out[method][q.qid] = Retrieved(passages, times, intent)
        if progress:
            progress("timeqa", n + 1)
    return {"retrieved": out, "chunks": chunks, "passages_of": passages_of}


def variant_weights(method: str) -> Any:
    """The :class:`~diachron.retrieval.weights.RankingWeights` of a method ``diachron@W`` (temporal weight W)
    or ``diachron@field=value,…`` (e.g. ``diachron@demotion=0.05,temporal=0.2``; ``inf`` allowed)."""
    from diachron.retrieval.weights import DEFAULT_WEIGHTS

    spec = method.split("@", 1)[1]
    if "=" not in spec:
        return DEFAULT_WEIGHTS.override(temporal=float(spec))
    values = dict(part.split("=", 1) for part in spec.split(","))
    ints = {"rerank_factor", "rerank_min", "coverage_factor", "coverage_min", "current_factor", "current_min"}
    return DEFAULT_WEIGHTS.override(**{k: int(v) if k in ints else float(v) for k, v in values.items()})


def _gold_chunks(passages_of: dict[str, list[str]]) -> dict[str, list[str]]:
    by_passage: dict[str, list[str]] = {}
    for cid, pids in passages_of.items():
        for pid in pids:
            by_passage.setdefault(pid, []).append(cid)
    return by_passage


def removed_by_filter(
    q: TimeQAQuestion, chunk_rows: dict[str, dict[str, Any]], chunks_of: dict[str, list[str]]
) -> bool:
    """True when the (non-strict) filter rejects every chunk holding a gold passage: each has strong time
    (a stated event or state span, or a publication day: :data:`diachron.retrieval.filters.STRONG_KINDS`)
    and none of its spans overlaps the window. Weak-only chunks are demoted, not removed."""
    from diachron.retrieval.filters import STRONG_KINDS
    from diachron.schemas.records import intervals_from_arrow

    if q.window is None:
        return False
    for pid in q.gold:
        for cid in chunks_of.get(pid, []):
            raw = chunk_rows[cid]["intervals"] or []
            strong = any(
                (iv.get("provenance") is None and (iv.get("kind") or "event") in STRONG_KINDS)
                or iv.get("provenance") == "published"
                for iv in raw
            )
            if not strong or any(i.overlaps(q.window) for i in intervals_from_arrow(raw)):
                return False
    return True


def _unknown(
    q: TimeQAQuestion, chunk_rows: dict[str, dict[str, Any]], chunks_of: dict[str, list[str]]
) -> bool:
    return all(chunk_rows[c]["time_status"] != "known" for p in q.gold for c in chunks_of.get(p, []))


def score_timeqa(run: dict[str, Any], questions: Sequence[TimeQAQuestion]) -> tuple[Any, Any]:
    """``(per-question metrics frame, miss causes frame)``.

    Metrics per ``(method, qid, k)``: ``recall`` (|gold ∩ top-k| / min(k, |gold|)), ``hit`` (any gold in
    the top k), ``precision`` (share of the top-k passages whose chunk has a span overlapping the window;
    NaN without a window). Miss causes (diachron, k = 10): ``filter`` (the gold's chunks are known and
    outside the window), ``no time`` (the gold's chunks have unknown time), ``intent`` (the question's
    parsed intervals do not overlap its window), else ``ranking``.
    """
    import pandas as pd

    chunk_rows = {c["chunk_id"]: c for c in run["chunks"]}
    chunks_of = _gold_chunks(run["passages_of"])
    rows, misses = [], []
    for method, per_q in run["retrieved"].items():
        for q in questions:
            r = per_q[q.qid]
            for k in KS:
                top, times = r.passages[:k], r.intervals[:k]
                found = len(set(top) & q.gold)
                precision = (
                    sum(any(i.overlaps(q.window) for i in ivs) for ivs in times) / len(times)
                    if q.window is not None and times
                    else float("nan")
                )
                rows.append(
                    {
                        "method": method,
                        "qid": q.qid,
                        "half": half_of(q.page),
                        "kind": q.window_kind,
                        "k": k,
                        "recall": found / min(k, len(q.gold)),
                        "hit": float(found > 0),
                        "precision": precision,
                    }
                )
            if method == "diachron" and not set(r.passages[:10]) & q.gold:
                misses.append({"qid": q.qid, "cause": _cause(q, r, chunk_rows, chunks_of)})
    removed = [
        {"qid": q.qid, "kind": q.window_kind, "removed": removed_by_filter(q, chunk_rows, chunks_of)}
        for q in questions
    ]
    return pd.DataFrame(rows), (pd.DataFrame(misses), pd.DataFrame(removed))


def _cause(
    q: TimeQAQuestion, r: Retrieved, chunk_rows: dict[str, dict[str, Any]], chunks_of: dict[str, list[str]]
) -> str:
    if removed_by_filter(q, chunk_rows, chunks_of):
        return "filter"
    if _unknown(q, chunk_rows, chunks_of):
        return "no time"
    if q.window is not None and not any(i.overlaps(q.window) for i in (r.intent_intervals or ())):
        return "intent"
    return "ranking"


def render_timeqa(frame: Any, misses: Any, removed: Any, meta: dict[str, Any]) -> list[str]:
    """The TimeQA section of the report (markdown lines)."""

    def f(v: float) -> str:
        return "–" if v != v else f"{v:.3f}"

    means = frame.groupby(["method", "k"], sort=False)[["recall", "hit", "precision"]].mean()
    out = ["## TimeQA development set (real Wikipedia pages, time-constrained questions)", ""]
    out += [f"- {k}: {v}" for k, v in meta.items()]
    present = list(dict.fromkeys(frame["method"]))
    out += ["", "Methods:", ""] + [f"- `{m}`: {d}" for m, d in TIMEQA_METHODS.items() if m in present]
    out += [f"- `{m}`: diachron with RankingWeights({variant_weights(m)})" for m in present if "@" in m]
    out += ["", "| method | R@5 | R@10 | R@20 | hit@10 | in-window P@10 |", "|---|---|---|---|---|---|"]
    for m in present:
        out.append(
            f"| {m} | {f(means.loc[(m, 5), 'recall'])} | {f(means.loc[(m, 10), 'recall'])} | "
            f"{f(means.loc[(m, 20), 'recall'])} | {f(means.loc[(m, 10), 'hit'])} | "
            f"{f(means.loc[(m, 10), 'precision'])} |"
        )
    share = removed["removed"].mean()
    out += [
        "",
        f"Gold removed by the time filter (every chunk holding a gold passage has strong time outside "
        f"the window; weak-only chunks are demoted, not removed): {int(removed['removed'].sum())} of "
        f"{len(removed)} questions ({share:.1%}).",
        "",
    ]
    causes = misses["cause"].value_counts() if len(misses) else {}
    out += [
        f"diachron misses at k = 10: {len(misses)} questions — "
        + ", ".join(f"{c} {int(n)}" for c, n in dict(causes).items()),
        "",
    ]
    by_kind = frame[frame["k"] == 10].groupby(["kind", "method"], sort=False)[["recall", "precision"]].mean()
    counts = frame[(frame["k"] == 10) & (frame["method"] == "diachron")].groupby("kind").size()
    rem = removed.groupby("kind")["removed"].mean()
    out += [
        "By window kind (k = 10): recall (in-window precision)",
        "",
        "| window kind | n | gold removed | " + " | ".join(present) + " |",
        "|---|---|---|" + "---|" * len(present),
    ]
    for kind in counts.index:
        cells = [
            f"{f(by_kind.loc[(kind, m), 'recall'])} ({f(by_kind.loc[(kind, m), 'precision'])})"
            for m in present
        ]
        out.append(f"| {kind} | {int(counts[kind])} | {rem[kind]:.1%} | " + " | ".join(cells) + " |")
    return out + [""]


def render_halves(frames: dict[str, Any]) -> list[str]:
    """The generalization table (markdown lines): per setting (``{setting: per-question frame}``), method
    and development half, R@5 / R@10 / R@20 and in-window P@10, with B − A on recall@10."""

    def f(v: float) -> str:
        return "–" if v != v else f"{v:.3f}"

    out = [
        "| setting | method | half | n | R@5 | R@10 | R@20 | in-window P@10 | R@10 B − A |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for setting, frame in frames.items():
        means = frame.groupby(["method", "half", "k"], sort=False)[["recall", "precision"]].mean()
        sizes = frame[frame["k"] == 10].groupby(["method", "half"]).size()
        for m in dict.fromkeys(frame["method"]):
            gap = means.loc[(m, "B", 10), "recall"] - means.loc[(m, "A", 10), "recall"]
            for half in ("A", "B"):
                cells = [f(means.loc[(m, half, k), "recall"]) for k in KS]
                out.append(
                    f"| {setting} | {m} | {half} | {int(sizes[(m, half)])} | "
                    + " | ".join(cells)
                    + f" | {f(means.loc[(m, half, 10), 'precision'])} | {f(gap) if half == 'B' else ''} |"
                )
    return out + [""]
