"""``diachron.__all__`` names what the package exports, and each name resolves (like httpx's test)."""

from __future__ import annotations

import subprocess
import sys

from diachron.schemas import errors

import diachron

EXPECTED = {"Client", "RemoteClient", "connect", "annotate_text", "parse_question", "RepairError"}
EXPECTED |= set(errors.__all__)


def test_all_lists_the_public_api_and_every_name_resolves():
    assert set(diachron.__all__) == EXPECTED and diachron.__all__ == sorted(diachron.__all__)
    for name in diachron.__all__:
        member = getattr(diachron, name)
        assert member is not None and name in dir(diachron)
        if name in errors.__all__:
            assert member is getattr(errors, name)
    assert issubclass(diachron.RepairError, diachron.TerminalError)


def test_members_are_defined_where_the_lazy_table_says():
    assert diachron.Client.__module__ == "diachron.retrieval.client"
    assert diachron.RemoteClient.__module__ == "diachron.retrieval.remote"
    assert diachron.connect.__module__ == "diachron.retrieval.connection"
    from diachron import retrieval

    assert retrieval.connect is diachron.connect  # the subpackage exports the same function


def test_an_unknown_name_is_an_attribute_error():
    try:
        diachron.Nope  # noqa: B018
    except AttributeError as exc:
        assert "has no attribute 'Nope'" in str(exc)
    else:
        raise AssertionError("diachron.Nope resolved")


def test_import_diachron_stays_light():
    """The exports load lazily: importing the package pulls in neither LanceDB nor torch nor httpx."""
    code = "import sys, diachron; print(sorted(m for m in ('lancedb', 'torch', 'httpx') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout
    assert out.strip() == "[]"


def test_the_open_sides_are_defined_once():
    """``OPEN_PAST`` / ``OPEN_FUTURE`` are assigned in ``schemas/time.py`` only (the index modules import)."""
    import ast
    from pathlib import Path

    from diachron.retrieval import interval_index
    from diachron.schemas import time, time_index

    root = Path(__file__).resolve().parents[1]
    assigned = []
    for folder in ("schemas", "temporal", "ingest", "retrieval", "diachron", "bench"):
        for path in sorted((root / folder).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text())):
                targets = node.targets if isinstance(node, ast.Assign) else []
                names = {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
                if names & {"OPEN_PAST", "OPEN_FUTURE"}:
                    assigned.append(str(path.relative_to(root)))
    assert assigned == ["schemas/time.py"]
    assert (time.OPEN_PAST, time.OPEN_FUTURE) == (-(2**61), 2**61)
    assert time_index.OPEN_PAST is interval_index.OPEN_PAST is time.OPEN_PAST
