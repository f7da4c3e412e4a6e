"""The package's layering (docs/design.md, "One namespace"), checked on the source: an AST walk of imports.

Layers, bottom to top: ``schemas`` → ``temporal`` → ``ingest`` / ``retrieval`` → the application layer
(``diachron.cli``, ``diachron.service``). A module may import only from its own layer or below;
``retrieval`` may import the write side only for the shared embedder. Also checked: nothing imports the
old top-level names (``schemas``, ``ingest``, ``retrieval``), and a built wheel installs only ``diachron``.
"""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FOLDERS = {
    "schemas": "schemas",
    "temporal": "temporal",
    "ingest": "ingest",
    "retrieval": "retrieval",
    "diachron": "app",
}
ALLOWED = {
    "schemas": {"schemas"},
    "temporal": {"schemas", "temporal"},
    "ingest": {"schemas", "temporal", "ingest"},
    "retrieval": {"schemas", "temporal", "retrieval"},
    "app": {"schemas", "temporal", "ingest", "retrieval", "app"},
}
RETRIEVAL_MAY_USE = {"diachron.ingest.embedding"}


def _layer(module: str) -> str | None:
    """``diachron.<sub>...`` → its layer; ``diachron`` itself and its own modules are the app layer."""
    parts = module.split(".")
    if parts[0] != "diachron":
        return None
    return {"schemas": "schemas", "temporal": "temporal", "ingest": "ingest", "retrieval": "retrieval"}.get(
        parts[1] if len(parts) > 1 else "", "app"
    )


def _imports(path: Path) -> list[tuple[int, str]]:
    tree = ast.parse(path.read_text(), filename=str(path))
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out.append((node.lineno, node.module))
    return out


def _sources() -> list[tuple[str, Path]]:
    return [(layer, p) for folder, layer in FOLDERS.items() for p in sorted((ROOT / folder).rglob("*.py"))]


def test_layers_import_only_downwards() -> None:
    violations = []
    for layer, path in _sources():
        for line, module in _imports(path):
            target = _layer(module)
            if target is None:
                continue
            if layer == "retrieval" and target == "ingest" and module in RETRIEVAL_MAY_USE:
                continue
            if target not in ALLOWED[layer]:
                violations.append(f"{path.relative_to(ROOT)}:{line} ({layer}) imports {module} ({target})")
    assert violations == []


def test_no_old_top_level_names() -> None:
    old = {"schemas", "ingest", "retrieval", "temporal"}
    offenders = [
        f"{p.relative_to(ROOT)}:{line} imports {m}"
        for folder in [*FOLDERS, "tests", "bench", "dags"]
        for p in sorted((ROOT / folder).rglob("*.py"))
        for line, m in _imports(p)
        if m.split(".")[0] in old
    ]
    assert offenders == []


def test_the_checker_catches_a_violation(tmp_path: Path) -> None:
    """The AST walk sees nested and aliased imports (so the rule test above can fail)."""
    bad = tmp_path / "m.py"
    bad.write_text(
        "def f():\n    import diachron.retrieval.client as c\n    from diachron.ingest import store\n"
    )
    assert [m for _, m in _imports(bad)] == ["diachron.retrieval.client", "diachron.ingest"]
    assert _layer("diachron.retrieval.client") == "retrieval" and _layer("diachron.cli") == "app"


@pytest.mark.integration
def test_wheel_installs_one_top_level_package(tmp_path: Path) -> None:
    """A wheel built from the tree holds ``diachron/…`` (and its dist-info) and no other top-level name.

    Built from a copy of the tracked files, so setuptools' ``build/`` never lands in the work tree.
    """
    src = tmp_path / "src"
    tracked = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, check=True, capture_output=True).stdout
    for name in filter(None, tracked.decode().split("\0")):
        if (ROOT / name).is_file():
            (src / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, src / name)
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(tmp_path),
            str(src),
        ],
        check=True,
        capture_output=True,
    )
    (wheel,) = tmp_path.glob("diachron_rag-*.whl")
    tops = {name.split("/")[0] for name in zipfile.ZipFile(wheel).namelist()}
    assert {t for t in tops if not t.endswith(".dist-info")} == {"diachron"}
    names = zipfile.ZipFile(wheel).namelist()
    for module in (
        "diachron/schemas/time.py",
        "diachron/temporal/tagger.py",
        "diachron/ingest/pipeline.py",
        "diachron/retrieval/client.py",
        "diachron/cli.py",
    ):
        assert module in names
