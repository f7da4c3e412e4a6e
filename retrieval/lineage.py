"""Lineage at query time: effective valid intervals, the version valid at t, conflicts, gaps, clarification.

Rows are insert-only, so a ``valid_until`` implied by a *later* version is never written back; it is
derived here from the versions stored (and recorded by ``as_of``, docs/design.md "Lineage"):

- a version starts at its ``valid_from``; a correction without one takes its target's start; otherwise
  the publication time starts it;
- it ends at its own ``valid_until`` when the source stated one (a ``valid_until`` that ingest derived from
  the batch is ignored: later versions may have arrived since), else at the next version's start;
- a correction replaces its target from the correction's start (the whole target when they start
  together); a ``coexists`` version ends nobody.

**Currentness** ("current / in effect / latest as of D", :meth:`Lineage.current` and :func:`latest_first`):
a version of a versioned series is current when it is valid during D; a document that is no version
(its series has one member) is current when it was published on or before D (and has not stated a
validity that ended before D) — the question is answered from what had been published by then, latest
first, and the answer says so in its ``assumptions``. A document with neither publication time nor
valid time is never current.

Intervals are half-open UTC ``[start, end)``. The documents table is read through Arrow; no user text is
put into a SQL string.
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from diachron.retrieval.anchors import anchor_granularity
from diachron.schemas.lineage import (
    DERIVED_UNTIL_KEY,
    Clarification,
    ConflictKind,
    ConflictSignal,
    GapSignal,
    VersionSpan,
)
from diachron.schemas.records import intervals_from_arrow
from diachron.schemas.time import Granularity, Interval, period, to_utc

__all__ = [
    "Lineage",
    "clarify",
    "conflicts",
    "derive_spans",
    "gaps",
    "latest_first",
    "load_lineage",
    "mentions_earlier_version",
    "version_at",
    "versions_during",
    "window_gaps",
]

_COLUMNS = [
    "doc_id",
    "series_id",
    "version",
    "supersedes",
    "relation",
    "valid_from",
    "valid_until",
    "published_at",
    "recorded_at",
    "metadata_json",
]
_EPOCH = datetime.min.replace(tzinfo=UTC)
_EARLIER = re.compile(
    r"\b(?:old|older|previous|prior|former|earlier|outdated|superseded)\s+"
    r"(?:\w+\s+)?(?:rule|rules|policy|policies|version|versions|release|regulation|terms|guideline|"
    r"guidelines|procedure|edition)\b",
    re.IGNORECASE,
)


def _start(
    row: Mapping[str, Any],
    starts: dict[str, datetime | None],
    by_id: Mapping[str, Mapping[str, Any]],
    depth: int = 0,
) -> datetime | None:
    if row["valid_from"] is not None:
        return to_utc(row["valid_from"])
    target = by_id.get(row["supersedes"] or "")
    if row["relation"] == "corrects" and target is not None and depth < len(by_id):
        return starts.get(target["doc_id"]) or _start(target, starts, by_id, depth + 1)
    return to_utc(row["published_at"]) if row["published_at"] is not None else None


def _explicit_until(row: Mapping[str, Any]) -> datetime | None:
    if row["valid_until"] is None:
        return None
    meta = json.loads(row.get("metadata_json") or "{}")
    return None if meta.get(DERIVED_UNTIL_KEY) else to_utc(row["valid_until"])


def _interval(start: datetime | None, end: datetime | None) -> Interval | None:
    if start is not None and end is not None and not start < end:
        return None
    return Interval(start, end, Granularity.INSTANT)


def derive_spans(rows: Sequence[Mapping[str, Any]]) -> list[VersionSpan]:
    """Effective valid intervals of the versions of ONE series.

    Args:
        rows: document rows with keys ``doc_id, series_id, version, supersedes, relation, valid_from,
            valid_until, published_at, recorded_at`` (aware UTC instants or ``None``) and optionally
            ``metadata_json`` (a ``valid_until`` marked derived there is recomputed).

    Returns:
        One :class:`VersionSpan` per row, in lineage order (by start, then ``recorded_at``); ``valid`` is
        ``None`` for a version wholly replaced by a correction.
    """
    by_id = {r["doc_id"]: r for r in rows}
    starts: dict[str, datetime | None] = {}
    for r in rows:
        starts[r["doc_id"]] = _start(r, starts, by_id)
    corrected_by = {
        r["supersedes"]: r["doc_id"] for r in rows if r["relation"] == "corrects" and r["supersedes"] in by_id
    }
    chain = sorted(
        (r for r in rows if r["relation"] != "coexists" and r["doc_id"] not in corrected_by),
        key=lambda r: (starts[r["doc_id"]] or _EPOCH, to_utc(r["recorded_at"])),
    )
    ends: dict[str, datetime | None] = {}
    successor: dict[str, str] = {}
    for i, r in enumerate(chain):
        own = starts[r["doc_id"]] or _EPOCH
        nxt = next((n for n in chain[i + 1 :] if (starts[n["doc_id"]] or _EPOCH) > own), None)
        if nxt is not None:
            successor[r["doc_id"]] = nxt["doc_id"]
        ends[r["doc_id"]] = _explicit_until(r) or (starts[nxt["doc_id"]] if nxt is not None else None)
    spans = []
    for r in rows:
        doc_id = r["doc_id"]
        start = starts[doc_id]
        if doc_id in corrected_by:
            fix = corrected_by[doc_id]
            end = starts[fix] if starts[fix] is not None and (start is None or starts[fix] > start) else start
            valid = _interval(start, end) if end is not None else None
        else:
            valid = _interval(start, ends.get(doc_id, _explicit_until(r)))
        spans.append(
            VersionSpan(
                doc_id=doc_id,
                series_id=r["series_id"],
                version=r["version"],
                valid=valid,
                recorded_at=to_utc(r["recorded_at"]),
                supersedes=r["supersedes"],
                relation=r["relation"],
                superseded_by=successor.get(corrected_by.get(doc_id, doc_id)),
                corrected_by=corrected_by.get(doc_id),
                published_at=to_utc(r["published_at"]) if r["published_at"] is not None else None,
            )
        )
    order = {r["doc_id"]: i for i, r in enumerate(chain)}
    spans.sort(
        key=lambda s: (s.valid.start or _EPOCH if s.valid else _EPOCH, order.get(s.doc_id, -1), s.recorded_at)
    )
    return spans


class Lineage:
    """The versions of each series known as of a transaction time (see :func:`load_lineage`).

    Attributes:
        series: ``{series_id: [VersionSpan, …]}`` in lineage order.
    """

    def __init__(self, series: dict[str, list[VersionSpan]]) -> None:
        self.series = series
        self._by_doc = {s.doc_id: s for spans in series.values() for s in spans}

    def span(self, doc_id: str) -> VersionSpan | None:
        """The version ``doc_id`` as known, or ``None`` when it was not recorded (as of)."""
        return self._by_doc.get(doc_id)

    def is_versioned(self, series_id: str) -> bool:
        """True when the series has two or more versions (only then does valid time pick among them)."""
        return len(self.series.get(series_id, ())) > 1

    def admits(self, doc_id: str, series_id: str, window: Interval) -> bool:
        """True unless ``doc_id`` is a version of a versioned series that is not valid during ``window``."""
        if not self.is_versioned(series_id):
            return True
        span = self._by_doc.get(doc_id)
        return span is not None and span in versions_during(self.series[series_id], window)

    def current(self, doc_id: str, series_id: str, window: Interval) -> bool:
        """Whether ``doc_id`` can answer "current during ``window``" (half-open UTC).

        A version of a versioned series: valid during ``window``. Any other document: its effective
        interval (from its ``valid_from``, else its publication time, to its stated ``valid_until``, else
        open) has a known start and overlaps ``window`` — so it was published before ``window`` ends.
        """
        if self.is_versioned(series_id):
            return self.admits(doc_id, series_id, window)
        span = self._by_doc.get(doc_id)
        return (
            span is not None
            and span.valid is not None
            and span.valid.start is not None
            and span.valid.overlaps(window)
        )


def load_lineage(
    documents: Any, *, series: Iterable[str] | None = None, as_of: datetime | None = None
) -> Lineage:
    """Read the versions of ``series`` (default: all) from the ``documents`` table, as of ``as_of``.

    Args:
        documents: a LanceDB table with the ``documents`` schema.
        series: series ids to load (matched in Arrow), or ``None`` for every series.
        as_of: transaction-time bound (aware): only rows with ``recorded_at <= as_of``.

    Returns:
        A :class:`Lineage` with the effective valid intervals of each series.
    """
    data = documents.to_lance().to_table(columns=_COLUMNS)
    if series is not None:
        data = data.filter(pc.is_in(data["series_id"], value_set=_strings(series)))
    if as_of is not None:
        data = data.filter(
            pc.less_equal(data["recorded_at"], pa.scalar(to_utc(as_of), type=data["recorded_at"].type))
        )
    grouped: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in data.to_pylist():
        grouped[row["series_id"]].append(row)
    return Lineage({sid: derive_spans(rows) for sid, rows in grouped.items()})


def _strings(values: Iterable[str]) -> pa.Array:
    return pa.array(sorted(set(values)), type=pa.string())


def versions_during(spans: Sequence[VersionSpan], window: Interval) -> list[VersionSpan]:
    """The versions whose effective interval overlaps ``window`` (half-open), in lineage order."""
    return [s for s in spans if s.valid is not None and s.valid.overlaps(window)]


def version_at(spans: Sequence[VersionSpan], t: datetime) -> VersionSpan | None:
    """The version valid at instant ``t`` (aware; naive = UTC), or ``None`` when none is.

    Raises:
        ValueError: when several versions are valid at ``t`` (an overlap: see :func:`conflicts`).
    """
    found = versions_during(spans, Interval.at(t))
    if len(found) > 1:
        raise ValueError(f"{len(found)} versions valid at {t.isoformat()}: {[s.doc_id for s in found]}")
    return found[0] if found else None


def conflicts(
    lineage: Lineage, doc_ids: Iterable[str], *, window: Interval | None = None
) -> list[ConflictSignal]:
    """Conflict signals over an evidence set.

    ``overlap``: two versions of one series (neither ``coexists``) are valid at once, one of them in the
    evidence, and their common interval meets ``window`` (when given). ``correction``: a correction and
    the version it corrects are both in the evidence.
    """
    present = set(doc_ids)
    out: list[ConflictSignal] = []
    for series_id in sorted({s.series_id for d in present if (s := lineage.span(d)) is not None}):
        spans = [s for s in lineage.series[series_id] if s.valid is not None and s.relation != "coexists"]
        for i, a in enumerate(spans):
            for b in spans[i + 1 :]:
                common = a.valid.intersection(b.valid)  # type: ignore[union-attr]
                if (
                    common
                    and (a.doc_id in present or b.doc_id in present)
                    and (window is None or common.overlaps(window))
                ):
                    out.append(ConflictSignal(ConflictKind.OVERLAP, series_id, (a.doc_id, b.doc_id), common))
        for s in lineage.series[series_id]:
            if s.corrected_by in present and s.doc_id in present:
                out.append(
                    ConflictSignal(ConflictKind.CORRECTION, series_id, (s.doc_id, s.corrected_by), s.valid)
                )
    return out


def gaps(
    window: Interval, covered: Iterable[Interval], *, granularity: Granularity | None = None
) -> list[GapSignal]:
    """Parts of a bounded ``window`` that no ``covered`` interval touches, as whole periods, merged.

    Args:
        window: the query window, half-open UTC; both sides must be bounded.
        covered: intervals of the evidence (half-open; open sides unbounded).
        granularity: period size; default one step finer than the window (years over 5 years, months
            over 2 months, else days).

    Returns:
        Maximal runs of empty periods, clipped to ``window``, oldest first.

    Raises:
        ValueError: when ``window`` is open.
    """
    if window.is_open:
        raise ValueError(f"gap detection needs a bounded window, got {window}")
    g = granularity or anchor_granularity(window.duration)  # type: ignore[arg-type]
    covered = list(covered)
    out: list[Interval] = []
    cursor = window.start
    while cursor < window.end:  # type: ignore[operator]
        p = period(cursor, g)
        if not any(c.overlaps(p) for c in covered):
            if out and out[-1].end == p.start:
                out[-1] = Interval(out[-1].start, p.end, g)
            else:
                out.append(p)
        cursor = p.end
    return [
        GapSignal(Interval(max(i.start, window.start), min(i.end, window.end), g))  # type: ignore[type-var]
        for i in out
    ]


def window_gaps(chunks: Any, where: str | None, window: Interval) -> list[GapSignal]:
    """Gaps of ``window`` among the chunks passing ``where`` (a typed filter's SQL, no user text)."""
    data = chunks.to_lance().to_table(columns=["intervals"], filter=where)
    covered = [i for v in data.column("intervals").to_pylist() for i in intervals_from_arrow(v)]
    return gaps(window, covered)


def latest_first(rows: Sequence[Mapping[str, Any]], lineage: Lineage, *, k: int) -> tuple[list[int], int]:
    """Pick a "current" answer from a similarity-ranked pool: the ``k`` rows published latest, newest first.

    Args:
        rows: chunk rows (``doc_id``, ``series_id``, ``published_at``) best-similarity first, each already
            admitted by :meth:`Lineage.current`.
        lineage: the lineage the rows were admitted with.
        k: how many to keep.

    Returns:
        ``(positions, unversioned)``: positions into ``rows`` in answer order (publication time descending,
        then similarity; unknown publication last), and how many distinct documents among them are no
        version of a versioned series (the answer's ``assumptions`` say how those were read).
    """

    def key(pos: int) -> tuple[bool, float, int]:
        published = rows[pos].get("published_at")
        return published is None, -to_utc(published).timestamp() if published is not None else 0.0, pos

    order = sorted(range(len(rows)), key=key)[:k]
    unversioned = {rows[p]["doc_id"] for p in order if not lineage.is_versioned(rows[p]["series_id"])}
    return order, len(unversioned)


def mentions_earlier_version(text: str) -> bool:
    """True when ``text`` refers to a non-current version without a date ("the old rule")."""
    return _EARLIER.search(text) is not None


def clarify(
    lineage: Lineage, series_ids: Iterable[str], reference_time: datetime
) -> tuple[list[Clarification], set[str]]:
    """For a question about "the old …": the versions of each series that ended before ``reference_time``.

    Returns:
        ``(clarifications, admitted doc ids)``: a :class:`Clarification` per series with two or more
        earlier versions (the answer would change with the pick); the admitted ids are all earlier
        versions of those series (the single earlier version when there is only one).
    """
    out, admitted = [], set()
    for series_id in dict.fromkeys(series_ids):
        old = [
            s
            for s in lineage.series.get(series_id, ())
            if s.valid is not None and s.valid.end is not None and s.valid.end <= to_utc(reference_time)
        ]
        admitted.update(s.doc_id for s in old)
        if len(old) > 1:
            out.append(Clarification(f"{len(old)} earlier versions of {series_id}", series_id, tuple(old)))
    return out, admitted
