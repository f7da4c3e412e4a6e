"""The error tree (``diachron.schemas.errors``): one root, transient/terminal, attributes that survive
pickling, the old import paths, and real raises carrying the attributes a caller needs."""

from __future__ import annotations

import ast
import importlib
import pickle
from datetime import UTC, datetime
from pathlib import Path

import pytest
from diachron.schemas import errors as tree

import diachron

ROOT = Path(__file__).resolve().parents[1]
PRODUCT = {"schemas": "diachron.schemas", "temporal": "diachron.temporal", "ingest": "diachron.ingest"}
PRODUCT |= {"retrieval": "diachron.retrieval", "diachron": "diachron"}

#: one instance of every error with its attributes set (values are what a caller would read back)
SAMPLES = [
    (tree.ConfigError("timezone 'Mars/Base' is unknown", setting="timezone"), {"setting": "timezone"}),
    (tree.QueryInputError("the question is empty", field="question"), {"field": "question"}),
    (tree.LLMOutputError("not JSON: line 1", record_id="doc-7"), {"record_id": "doc-7"}),
    (tree.SourceError("source not found: 'x.jsonl'", uri="x.jsonl"), {"uri": "x.jsonl"}),
    (tree.DatabaseRefusedError("--db 'f' is a file", uri="f"), {"uri": "f"}),
    (tree.StoreNotFoundError("no diachron index at 'd'", uri="d"), {"uri": "d"}),
    (
        tree.EmbedderMismatchError("built with b, a", uri="db", expected=["b/1", "a/2"], found="c/3"),
        {"uri": "db", "expected": ["a/2", "b/1"], "found": "c/3"},
    ),
    (tree.ServiceError("503: busy", status=503, uri="http://h:1"), {"status": 503, "uri": "http://h:1"}),
    (tree.StoreConflictError("commit conflict"), {}),
    (tree.WorkerLostError("worker died"), {}),
]


@pytest.mark.parametrize(("error", "attributes"), SAMPLES, ids=[type(e).__name__ for e, _ in SAMPLES])
def test_every_error_pickles_with_its_attributes(error, attributes):
    back = pickle.loads(pickle.dumps(error))
    assert type(back) is type(error) and str(back) == str(error) and back.args == error.args
    assert {name: getattr(back, name) for name in attributes} == attributes
    assert back.transient == error.transient and back.message == str(error)


def test_errors_cross_processes_as_ray_moves_them():
    """Ray ships a task's exception with its bundled cloudpickle: class and attributes arrive intact."""
    from ray import cloudpickle

    for error, attributes in SAMPLES:
        back = cloudpickle.loads(cloudpickle.dumps(error))
        assert type(back) is type(error) and {name: getattr(back, name) for name in attributes} == attributes


def test_every_exported_error_is_under_the_one_root():
    for name in tree.__all__:
        cls = getattr(tree, name)
        assert issubclass(cls, tree.DiachronError), name
        assert cls.__module__ == "diachron.schemas.errors"


def test_transient_and_terminal():
    assert tree.StoreConflictError().transient and tree.WorkerLostError().transient
    for cls in (tree.ConfigError, tree.QueryInputError, tree.LLMOutputError, tree.SourceError):
        assert issubclass(cls, tree.TerminalError) and issubclass(cls, ValueError) and not cls().transient
    for cls in (tree.DatabaseRefusedError, tree.EmbedderMismatchError, tree.StoreNotFoundError):
        assert issubclass(cls, tree.TerminalError) and not cls().transient
    # a service error is transient when no answer came or the service failed (5xx), terminal on a 4xx
    assert [tree.ServiceError(status=s).transient for s in (None, 400, 422, 500, 503)] == [
        True,
        False,
        False,
        True,
        True,
    ]
    assert issubclass(tree.RetrievalError, tree.DiachronError)


def test_one_embedder_mismatch_error_for_both_sides():
    from diachron.ingest.errors import EmbedderMismatchError as ingest_side
    from diachron.retrieval.errors import EmbedderMismatchError as read_side

    assert ingest_side is read_side is diachron.EmbedderMismatchError
    assert issubclass(read_side, tree.TerminalIngestError) and issubclass(read_side, tree.RetrievalError)


@pytest.mark.parametrize(
    ("module", "name"),
    [
        ("diachron.ingest.errors", "ConfigError"),
        ("diachron.ingest.errors", "DatabaseRefusedError"),
        ("diachron.ingest.errors", "StoreConflictError"),
        ("diachron.ingest.errors", "TransientIngestError"),
        ("diachron.ingest.sources", "SourceError"),
        ("diachron.ingest.annotation.llm", "LLMOutputError"),
        ("diachron.retrieval.errors", "RetrievalError"),
        ("diachron.retrieval.errors", "StoreNotFoundError"),
        ("diachron.retrieval.remote", "ServiceError"),
        ("diachron.query", "QueryInputError"),
    ],
)
def test_old_import_paths_give_the_same_class(module, name):
    assert getattr(importlib.import_module(module), name) is getattr(tree, name) is getattr(diachron, name)


def _error_classes() -> list[tuple[str, str]]:
    """``(module, class)`` for every public class named ``*Error`` in the product code (an AST walk)."""
    found = []
    for folder, package in PRODUCT.items():
        for path in sorted((ROOT / folder).rglob("*.py")):
            parts = path.relative_to(ROOT / folder).with_suffix("").parts
            module = ".".join([package, *[p for p in parts if p != "__init__"]])
            for node in ast.parse(path.read_text()).body:
                if isinstance(node, ast.ClassDef) and node.name.endswith("Error") and node.name[0] != "_":
                    found.append((module, node.name))
    return found


def test_every_error_class_in_the_code_is_a_diachron_error():
    classes = _error_classes()
    assert ("diachron.retrieval.intent", "QuestionTooLongError") in classes  # the walk sees the code
    outside = [
        f"{module}.{name}"
        for module, name in classes
        if not issubclass(getattr(importlib.import_module(module), name), tree.DiachronError)
    ]
    assert outside == []


def test_a_missing_source_is_a_terminal_error_naming_it(tmp_path):
    from diachron.ingest.orchestration import expand_sources
    from diachron.ingest.sources import load_source

    missing = str(tmp_path / "nope.jsonl")
    with pytest.raises(diachron.SourceError) as caught:
        list(load_source(missing))
    assert caught.value.uri == missing and isinstance(caught.value, ValueError)
    pattern = str(tmp_path / "*.jsonl")
    with pytest.raises(diachron.TerminalError) as caught:
        expand_sources([pattern])
    assert caught.value.uri == pattern and str(caught.value) == f"source pattern {pattern!r} matches no file"


def test_a_refused_database_names_its_uri(tmp_path):
    from diachron.ingest.preflight import check_database

    afile = tmp_path / "a-file"
    afile.write_text("x")
    with pytest.raises(diachron.DatabaseRefusedError) as caught:
        check_database(str(afile), dim=384)
    assert caught.value.uri == str(afile) and "\n" not in str(caught.value)


def _store_built_by(uri: str, embedder_id: str):
    """A real LanceDB database with the diachron tables and one ``runs`` row naming ``embedder_id``."""
    from diachron.ingest.store import Store

    store = Store(uri, dim=384)
    store.table("chunks")
    when = datetime(2026, 1, 1, tzinfo=UTC)
    store.table("runs").add(
        [
            {
                "run_id": "r1",
                "started_at": when,
                "finished_at": when,
                "sources_json": "[]",
                "config_json": "{}",
                "embedder": embedder_id,
                "embedding_dim": 384,
                "documents_seen": 0,
                "documents_written": 0,
                "chunks_written": 0,
                "quarantined": 0,
                "status": "ok",
            }
        ]
    )
    return store


def test_an_embedder_mismatch_carries_uri_expected_found_on_both_sides(tmp_path):
    from diachron.ingest.embedding import Embedder
    from diachron.ingest.pipeline import _check_embedder

    uri = str(tmp_path / "db")
    store = _store_built_by(uri, "other-model/768")
    ours = Embedder(threads=1)  # the model loads lazily: nothing is embedded here
    with pytest.raises(diachron.RetrievalError) as read_side:
        diachron.connect(uri, embedder=ours)
    with pytest.raises(diachron.TerminalIngestError) as write_side:
        _check_embedder(store, ours.spec.id)
    for caught in (read_side.value, write_side.value):
        assert type(caught) is diachron.EmbedderMismatchError
        assert (caught.uri, caught.expected, caught.found) == (
            uri,
            ["other-model/768"],
            "all-MiniLM-L6-v2/384",
        )
        assert "\n" not in str(caught)
        back = pickle.loads(pickle.dumps(caught))
        assert (back.uri, back.expected, back.found) == (uri, ["other-model/768"], "all-MiniLM-L6-v2/384")
