"""Version planning: series from the data, and which documents are unchanged, new, or new versions.

docs/design.md, "Lineage" and "Ids and idempotency"; issue 13. ``series_id`` groups versions, ``doc_id`` names
one. Sources rarely carry a ``series_id``: they name the previous version in ``supersedes``, by its
``doc_id`` or by its ``version`` string (tzdb: ``"version": "2022f", "supersedes": "2022e"``). The planner

1. maps fields when asked (:class:`LineageConfig`: ``series_field="package"`` reads the series from the
   record's ``package``; ``version_field`` / ``supersedes_field`` likewise);
2. resolves each ``supersedes``: a ``doc_id`` (in the batch or stored) links to it; a version string links
   to the document with that ``version`` in the same *scope* — the same explicit series, else the same id
   prefix (``tzdb-release/…``, batch or stored), else (ids without a ``/``) the same source. Two
   candidates (a version listed twice) are told apart by the candidate's ``superseded_by`` metadata;
3. joins linked documents into chains (union-find) and gives each chain one series: the explicit or
   stored series of a member when there is one; else the id prefix all members share (``tzdb-release``),
   so a chain ingested in pieces still lands in one series; else the chain root's ``doc_id``. An
   inferred series is marked ``series_inferred`` in the document's metadata. A lone document keeps its
   ``doc_id`` as series unless it looks like a version (has ``version`` or ``supersedes``) and has an id
   prefix, then the prefix is its series;
4. skips unchanged content (same ``content_sha256`` in the series, or the same ``doc_id`` and content);
   a known ``doc_id`` with changed content — stored, or twice in one batch — becomes a new version
   ``<doc_id>@<sha12>`` superseding the series' latest, never an overwrite and never two rows with one id;
5. within a batch, a version with only an effective date is valid until the next version's effective
   date, marked ``valid_until_derived`` so retrieval re-derives it when later versions arrive.

A ``supersedes`` that resolves to nothing (or to two documents) becomes a :class:`Rejected` of stage
``lineage`` in :attr:`VersionPlan.issues`: a quarantine row with its reason; the document itself is still
written (its ``supersedes`` column null, the raw value kept in metadata ``supersedes_unresolved``).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from diachron.ingest.sources import Rejected, SourceDocument
from diachron.schemas.ids import content_sha256, doc_version_id
from diachron.schemas.lineage import DERIVED_UNTIL_KEY, SERIES_INFERRED_KEY, UNRESOLVED_KEY

__all__ = [
    "STORED_COLUMNS",
    "LineageConfig",
    "PlannedDocument",
    "StoredVersion",
    "VersionPlan",
    "id_prefix",
    "infer_series",
    "map_fields",
    "plan_versions",
    "select_stored",
]

#: columns of the ``documents`` table that :func:`select_stored` reads
STORED_COLUMNS = ["doc_id", "series_id", "content_sha256", "version", "recorded_at"]


@dataclass(frozen=True, slots=True)
class LineageConfig:
    """Which record fields carry the lineage (CLI ``--series-field``/``--version-field``, DAG params).

    Attributes:
        series_field: field naming the series (e.g. ``package``); ``None`` = ``series_id``, else inferred.
        version_field: field holding the version string; ``None`` = ``version``.
        supersedes_field: field naming the previous version; ``None`` = ``supersedes``.
    """

    series_field: str | None = None
    version_field: str | None = None
    supersedes_field: str | None = None


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
    """``todo``: documents to process; ``unchanged``: doc ids already stored (or in the batch) with the same
    content; ``issues``: lineage notes (stage ``lineage``) for documents that are still written."""

    todo: list[PlannedDocument] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    issues: list[Rejected] = field(default_factory=list)


def id_prefix(doc_id: str) -> str | None:
    """``doc_id`` before its last ``/`` (``tzdb-release/2022f`` → ``tzdb-release``), or ``None``."""
    head, sep, tail = doc_id.rpartition("/")
    return head if sep and head and tail else None


def _field(doc: SourceDocument, name: str) -> Any:
    return doc.metadata[name] if name in doc.metadata else getattr(doc, name, None)


def _text(value: Any) -> str | None:
    return None if value is None or value == "" or isinstance(value, dict | list) else str(value)


def map_fields(doc: SourceDocument, config: LineageConfig) -> SourceDocument:
    """``doc`` with ``series_id``/``version``/``supersedes`` read from the configured fields (when set)."""
    changes = {
        key: _text(_field(doc, name))
        for key, name in (
            ("series_id", config.series_field),
            ("version", config.version_field),
            ("supersedes", config.supersedes_field),
        )
        if name
    }
    return replace(doc, **changes) if changes else doc


def select_stored(
    documents: pa.Table | None, docs: Sequence[SourceDocument], config: LineageConfig | None = None
) -> list[StoredVersion]:
    """The stored versions the planner may need for ``docs``, chosen in Arrow (no SQL string).

    Args:
        documents: the ``documents`` table's :data:`STORED_COLUMNS` (``None`` or empty = nothing stored).
        docs: the batch, before :func:`map_fields`.
        config: field mapping.

    Returns:
        Rows whose ``series_id`` is a batch document's series (or id), whose ``doc_id`` is a batch id or a
        ``supersedes`` value, or whose id prefix is a batch document's prefix.
    """
    if documents is None or documents.num_rows == 0 or not docs:
        return []
    mapped = [map_fields(d, config or LineageConfig()) for d in docs]
    series = {d.series_id or d.doc_id for d in mapped} | {p for d in mapped if (p := id_prefix(d.doc_id))}
    ids = {d.doc_id for d in mapped} | {d.supersedes for d in mapped if d.supersedes}
    prefixes = sorted({p for d in mapped if (p := id_prefix(d.doc_id))})
    mask = pc.or_(
        pc.is_in(documents["series_id"], value_set=pa.array(sorted(series), pa.string())),
        pc.is_in(documents["doc_id"], value_set=pa.array(sorted(ids), pa.string())),
    )
    if prefixes:
        heads = pc.replace_substring_regex(documents["doc_id"], pattern=r"/[^/]*$", replacement="")
        has_slash = pc.match_substring(documents["doc_id"], "/")
        mask = pc.or_(mask, pc.and_(has_slash, pc.is_in(heads, value_set=pa.array(prefixes, pa.string()))))
    rows = documents.filter(mask).to_pylist()
    return [
        StoredVersion(
            r["doc_id"],
            r["series_id"],
            r["content_sha256"],
            r["version"],
            r["recorded_at"].isoformat() if r["recorded_at"] is not None else "",
        )
        for r in rows
    ]


class _Links:
    """Union-find over batch positions (``int``) and stored doc ids (``str``)."""

    def __init__(self) -> None:
        self.parent: dict[Any, Any] = {}

    def find(self, x: Any) -> Any:
        self.parent.setdefault(x, x)
        root = x
        while self.parent[root] != root:
            root = self.parent[root]
        while self.parent[x] != root:
            self.parent[x], x = root, self.parent[x]
        return root

    def union(self, a: Any, b: Any) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            self.parent[rb] = ra


@dataclass
class _Batch:
    """The batch and the stored versions, indexed for resolution."""

    docs: list[SourceDocument]
    stored: dict[str, StoredVersion]
    ids: dict[str, int] = field(default_factory=dict)
    by_version: dict[str, list[Any]] = field(default_factory=lambda: defaultdict(list))

    def __post_init__(self) -> None:
        for i, d in enumerate(self.docs):
            self.ids.setdefault(d.doc_id, i)
            if d.version is not None:
                self.by_version[d.version].append(i)
        for s in self.stored.values():
            if s.version is not None:
                self.by_version[s.version].append(s.doc_id)

    def in_scope(self, i: int, node: Any) -> bool:
        """Whether candidate ``node`` (batch position or stored id) is in document ``i``'s scope."""
        doc = self.docs[i]
        if isinstance(node, int):
            other = self.docs[node]
            if doc.series_id is not None:
                return other.series_id == doc.series_id
            prefix = id_prefix(doc.doc_id)
            return id_prefix(other.doc_id) == prefix if prefix else other.source_uri == doc.source_uri
        stored = self.stored[node]
        if doc.series_id is not None:
            return stored.series_id == doc.series_id
        prefix = id_prefix(doc.doc_id)
        return prefix is not None and (id_prefix(stored.doc_id) == prefix or stored.series_id == prefix)

    def superseded_by(self, node: Any) -> str | None:
        return _text(self.docs[node].metadata.get("superseded_by")) if isinstance(node, int) else None

    def node_id(self, node: Any) -> str:
        return self.docs[node].doc_id if isinstance(node, int) else node


def _resolve(batch: _Batch, i: int) -> tuple[Any | None, str | None]:
    """``(target node, problem)`` for document ``i``'s ``supersedes`` (both ``None`` when it has none)."""
    doc = batch.docs[i]
    ref = doc.supersedes
    if ref is None:
        return None, None
    if ref in batch.ids and batch.ids[ref] != i:
        return batch.ids[ref], None
    if ref in batch.stored and ref != doc.doc_id:
        return ref, None
    found = [
        n
        for n in batch.by_version.get(ref, ())
        if n != i and batch.node_id(n) != doc.doc_id and batch.in_scope(i, n)
    ]
    if (
        len(found) > 1
    ):  # a version listed twice: the one naming this document as successor, else the nearest line
        found = [n for n in found if batch.superseded_by(n) in (doc.version, doc.doc_id)] or found
    if len(found) > 1 and all(isinstance(n, int) for n in found):
        nearest = min(abs(n - i) for n in found)
        found = [n for n in found if abs(n - i) == nearest]
    if len(found) == 1:
        return found[0], None
    scope = (
        f"series {doc.series_id!r}"
        if doc.series_id
        else f"ids {id_prefix(doc.doc_id)!r}/…"
        if id_prefix(doc.doc_id)
        else f"source {doc.source_uri!r}"
    )
    if found:
        return None, (
            f"supersedes {ref!r} is ambiguous: {len(found)} documents have that version in {scope} "
            f"({', '.join(sorted(batch.node_id(n) for n in found)[:3])})"
        )
    return None, (
        f"supersedes {ref!r} resolves to no document: no doc_id {ref!r}, and no version {ref!r} in "
        f"{scope} (stored or in this batch); the document is written without a predecessor"
    )


def _chain_series(batch: _Batch, members: list[Any], targets: dict[int, Any]) -> tuple[str | None, bool]:
    """``(series, inferred)`` for one chain; ``None`` when members keep their own (explicit or default)."""
    explicit = sorted(
        {batch.docs[m].series_id for m in members if isinstance(m, int) and batch.docs[m].series_id}
        | {batch.stored[m].series_id for m in members if isinstance(m, str)}
    )
    if explicit:
        return explicit[0], True
    ids = [batch.node_id(m) for m in members]
    prefixes = {id_prefix(d) for d in ids}
    (only,) = prefixes if len(prefixes) == 1 else (None,)
    lone = len(members) == 1
    if only is not None and (
        not lone
        or batch.docs[members[0]].version is not None
        or batch.docs[members[0]].supersedes is not None
    ):
        return only, True
    if lone:
        return None, False
    roots = sorted(batch.node_id(m) for m in members if not (isinstance(m, int) and m in targets))
    return (roots or sorted(ids))[0], True


def _series(batch: _Batch) -> tuple[list[str], list[bool], dict[int, str], list[Rejected]]:
    """Per batch document: series, whether inferred, resolved predecessor ids, and lineage issues."""
    links, targets, issues = _Links(), {}, []
    for i, doc in enumerate(batch.docs):
        links.find(i)
        if doc.doc_id in batch.stored:
            links.union(i, doc.doc_id)  # a known id arriving again: a version of the stored document
        target, problem = _resolve(batch, i)
        if target is not None:
            targets[i] = target
            links.union(i, target)
        elif problem is not None:
            issues.append(
                Rejected(
                    doc.doc_id,
                    problem,
                    {"doc_id": doc.doc_id, "supersedes": doc.supersedes, "version": doc.version},
                    stage="lineage",
                )
            )
    chains: dict[Any, list[Any]] = defaultdict(list)
    for node in list(links.parent):
        chains[links.find(node)].append(node)
    series = [d.series_id or d.doc_id for d in batch.docs]
    inferred = [False] * len(batch.docs)
    for members in chains.values():
        name, guessed = _chain_series(batch, members, targets)
        for m in members:
            if isinstance(m, int) and name is not None and batch.docs[m].series_id is None:
                series[m], inferred[m] = name, guessed
    return series, inferred, {i: batch.node_id(t) for i, t in targets.items()}, issues


def infer_series(
    documents: Sequence[SourceDocument],
    stored: Sequence[StoredVersion] = (),
    config: LineageConfig | None = None,
) -> list[str]:
    """The series each document of ``documents`` gets (as :func:`plan_versions` assigns it), in order.

    For grouping before planning (e.g. sharding: all versions of a series in one shard).
    """
    docs = [map_fields(d, config or LineageConfig()) for d in documents]
    return _series(_Batch(docs, {s.doc_id: s for s in stored}))[0]


def plan_versions(
    documents: list[SourceDocument],
    stored: list[StoredVersion],
    config: LineageConfig | None = None,
    *,
    hashes: Sequence[str] | None = None,
) -> VersionPlan:
    """Assign series, ids and lineage to ``documents`` given the versions already ``stored``.

    Args:
        documents: the batch in source order.
        stored: stored versions (see :func:`select_stored`).
        config: field mapping (default: the standard field names).
        hashes: each document's ``content_sha256``, when computed elsewhere (the distributed pipeline plans
            on a projection without texts, :mod:`diachron.ingest.planning`); ``None`` = hash ``text``.

    Returns:
        A :class:`VersionPlan`. Every input document is in exactly one of ``todo`` / ``unchanged``.
    """
    docs = [map_fields(d, config or LineageConfig()) for d in documents]
    batch = _Batch(docs, {s.doc_id: s for s in stored})
    series, inferred, targets, issues = _series(batch)
    by_series: dict[str, list[StoredVersion]] = defaultdict(list)
    for row in stored:
        by_series[row.series_id].append(row)
    plan = VersionPlan(issues=issues)
    kept: dict[tuple[str, str], str] = {(v.series_id, v.content_sha256): v.doc_id for v in stored}
    alias: dict[str, str] = {}  # doc id of an unchanged document -> the stored or kept id with its content
    skipped: dict[str, str | None] = {}  # ... and that document's own predecessor
    taken: set[str] = set()
    for i, doc in enumerate(docs):
        sha = hashes[i] if hashes is not None else content_sha256(doc.text)
        versions = by_series[series[i]]
        stored_same = batch.stored.get(doc.doc_id)
        same = (
            stored_same.doc_id
            if stored_same is not None and stored_same.content_sha256 == sha
            else kept.get((series[i], sha))
        )
        if same is not None:
            plan.unchanged.append(doc.doc_id)
            alias.setdefault(doc.doc_id, same)
            skipped.setdefault(doc.doc_id, targets.get(i))
            continue
        doc_id, supersedes, relation = doc.doc_id, targets.get(i), doc.relation
        if doc_id in batch.stored or doc_id in taken:  # a known id with new content: a new version of it
            earlier = [p.doc_id for p in plan.todo if p.series_id == series[i]]
            latest = max(versions, key=lambda v: v.order_key).doc_id if versions else doc.doc_id
            doc_id = doc_version_id(doc.doc_id, sha)
            supersedes = supersedes or (earlier[-1] if earlier else latest)
            relation = relation or "supersedes"
        source = _noted(doc, inferred=inferred[i], unresolved=doc.supersedes if i not in targets else None)
        kept[(series[i], sha)] = doc_id
        taken.add(doc_id)
        plan.todo.append(PlannedDocument(source, doc_id, series[i], sha, supersedes, relation))
    _follow_aliases(plan.todo, alias, skipped, taken)
    _derive_valid_until(plan.todo)
    return plan


def _follow_aliases(
    todo: list[PlannedDocument], alias: dict[str, str], skipped: dict[str, str | None], taken: set[str]
) -> None:
    """A predecessor skipped as unchanged is the row that holds its content (``alias``; else its own
    predecessor, ``skipped``): point each planned document's ``supersedes`` at a row that exists."""
    for item in todo:
        for _ in range(len(alias)):
            if item.supersedes not in alias or item.supersedes in taken:
                break
            ref = item.supersedes
            item.supersedes = alias[ref] if alias[ref] != item.doc_id else skipped[ref]


def _noted(doc: SourceDocument, *, inferred: bool, unresolved: str | None) -> SourceDocument:
    notes: dict[str, Any] = {SERIES_INFERRED_KEY: True} if inferred else {}
    if unresolved:
        notes[UNRESOLVED_KEY] = unresolved
    return replace(doc, metadata={**doc.metadata, **notes}) if notes else doc


def _derive_valid_until(todo: Iterable[PlannedDocument]) -> None:
    """Within each series of the batch, v_n without ``valid_until`` is valid until v_{n+1}'s valid_from."""
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
                item.source = replace(
                    item.source,
                    valid_until=versions_by_doc[id(item)],
                    metadata={**item.source.metadata, DERIVED_UNTIL_KEY: True},
                )
