"""Version planning: which source documents are unchanged, new, or new versions of stored ones.

DESIGN.md, "Lineage" and "Ids and idempotency": ``series_id`` groups versions, ``doc_id`` names one;
unchanged content (same ``content_sha256`` in the series) is skipped; a known ``doc_id`` arriving with
changed content becomes a new version ``<doc_id>@<sha12>`` that supersedes the series' latest version —
never an overwrite. A ``supersedes`` given as a version string is resolved within the series: among the
stored versions and the batch's own. Within a batch, a version with only an effective date is valid until
the next version's effective date; such a derived ``valid_until`` is marked in the document's metadata
(``valid_until_derived``) so retrieval can re-derive it when later versions arrive (rows are insert-only).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field, replace

from diachron.ingest.sources import SourceDocument
from diachron.schemas.ids import content_sha256, doc_version_id
from diachron.schemas.lineage import DERIVED_UNTIL_KEY

__all__ = ["PlannedDocument", "StoredVersion", "VersionPlan", "plan_versions"]


@dataclass(frozen=True, slots=True)
class StoredVersion:
    """What the planner needs of a stored document version."""

    doc_id: str
    series_id: str
    content_sha256: str
    version: str | None
    order_key: str  # recorded_at ISO, for "latest"


@dataclass(slots=True)
class PlannedDocument:
    """A source document with its final ids and lineage, ready for annotation."""

    source: SourceDocument
    doc_id: str
    series_id: str
    content_sha256: str
    supersedes: str | None
    relation: str | None


@dataclass(slots=True)
class VersionPlan:
    """``todo``: documents to process; ``unchanged``: doc ids already stored with the same content."""

    todo: list[PlannedDocument] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)


def plan_versions(documents: list[SourceDocument], stored: list[StoredVersion]) -> VersionPlan:
    """Assign ids and lineage to ``documents`` given the versions already ``stored``."""
    by_series: dict[str, list[StoredVersion]] = defaultdict(list)
    for row in stored:
        by_series[row.series_id].append(row)
    stored_ids = {row.doc_id for row in stored}
    plan = VersionPlan()
    seen: set[tuple[str, str]] = set()
    for doc in documents:
        series = doc.series_id or doc.doc_id
        sha = content_sha256(doc.text)
        versions = by_series[series]
        if any(v.content_sha256 == sha for v in versions) or (series, sha) in seen:
            plan.unchanged.append(doc.doc_id)
            continue
        seen.add((series, sha))
        doc_id, supersedes, relation = doc.doc_id, _resolve(doc.supersedes, versions), doc.relation
        if doc_id in stored_ids:
            latest = max((v for v in versions), key=lambda v: v.order_key, default=None)
            doc_id = doc_version_id(doc.doc_id, sha)
            supersedes = supersedes or (latest.doc_id if latest else doc.doc_id)
            relation = relation or "supersedes"
        plan.todo.append(PlannedDocument(doc, doc_id, series, sha, supersedes, relation))
    _resolve_in_batch(plan.todo)
    _derive_valid_until(plan.todo)
    return plan


def _resolve_in_batch(todo: list[PlannedDocument]) -> None:
    """A ``supersedes`` still naming a version string becomes the doc id of that version in the batch."""
    by_version = {(p.series_id, p.source.version): p.doc_id for p in todo if p.source.version is not None}
    ids = {p.doc_id for p in todo}
    for p in todo:
        if p.supersedes is not None and p.supersedes not in ids:
            p.supersedes = by_version.get((p.series_id, p.supersedes), p.supersedes)


def _resolve(reference: str | None, versions: list[StoredVersion]) -> str | None:
    """A ``supersedes`` value naming a version string becomes that version's ``doc_id``."""
    if reference is None:
        return None
    for v in versions:
        if v.version == reference:
            return v.doc_id
    return reference


def _derive_valid_until(todo: list[PlannedDocument]) -> None:
    """Within each series of the batch, v_n without ``valid_until`` is valid until v_{n+1}'s ``valid_from``."""
    series: dict[str, list[PlannedDocument]] = defaultdict(list)
    for item in todo:
        if item.source.valid_from is not None:
            series[item.series_id].append(item)
    versions_by_doc = {}
    for items in series.values():
        items.sort(key=lambda p: p.source.valid_from)  # type: ignore[arg-type, return-value]
        for item, nxt in zip(items, items[1:], strict=False):
            if item.source.valid_until is None and nxt.source.valid_from > item.source.valid_from:  # type: ignore[operator]
                versions_by_doc[id(item)] = nxt.source.valid_from
        for item in items:
            if id(item) in versions_by_doc:
                item.source = replace(item.source, valid_until=versions_by_doc[id(item)],
                                      metadata={**item.source.metadata, DERIVED_UNTIL_KEY: True})
